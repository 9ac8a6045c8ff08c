"""A small project built by the real site builder, for tests that build it many times
(tests/test_differential.py, tests/test_mutation.py).

`make_fixture_project(dest)` copies the builder and everything it reads (build_site.py,
site_builder/, templates/, static/, pyproject.toml, and what the project block of
content/site.yaml names: the package, the modules of its tests folder that the pages cite or
the examples import, the hooks file), and writes a `content/` with four of the real pages
whose examples are cheap, and a prefix of the corpus:

- tokens      its examples read data/shakespeare.txt directly (the vocabulary, batches) and
              import model.train (hence tqdm)
- embeddings  reads the corpus too (its vocabulary size), and cites tests/test_ops.py
- loss        cites functions of tests/test_ops.py and tests/test_page_loss.py; the fixture
              adds two examples of its own to it (FIXTURE_EXAMPLES, content/examples/fixture.py):
              the corpus's character count, and a constant of tests/test_gradcheck.py, which
              imports pytest (as the real block and gradcheck examples did until they moved to
              tests/fixtures.py): an example that needs a package only the tests install
- positions   the sinusoidal positions of the encoder-decoder (imports model.train_seq2seq)

None of them reads the training runs of content/hooks.py (those train a model),
and their examples take 0.5 s in all (the gradcheck page's alone take 1.6 s).
`data/shakespeare.txt` is cut to its first CORPUS_BYTES at a line end: model/data.py's
DEFAULT_CORPUS resolves relative to model/, so the copy reads the copy's corpus.

The copy is a git repository with one commit whose author, committer and dates are fixed, so
`git rev-parse HEAD` (which the pages cite) gives the same commit for every fixture made from
the same sources, and stays the same while a test edits the working tree (edits are never
committed; .gitignore keeps site/ and .build_cache/ out of `git status`).

Measured on the 2-core machine: a cold build takes 2.2 s (2.5 s of CPU; 4 s of wall time while
other jobs load the machine), a `--no-cache` build the same, a no-op rebuild 0.1 s.

`make_repo_copy(dest)` is the same for the whole repository (all pages, the whole corpus).
`copy_builder(dest)` (the builder alone, no package) and `git_commit(dest)` are shared with
tests/second_project.py, which puts a package of its own beside the builder.
`seed_build_cache(dest)` gives a copy the repository's example results and training runs, so
its first build reruns only what the copy changed (seconds) instead of every example and
both training runs (a minute on 2 cores).
"""
import os
import shutil
import subprocess
from pathlib import Path

from site_builder.gather.project import load_project

ROOT = Path(__file__).resolve().parent.parent
# The folders and files the project block names (content/site.yaml): the copy has them all.
PROJECT = load_project(ROOT)

PAGES = ("tokens", "embeddings", "loss", "positions")
CORPUS_BYTES = 64 * 1024
BUILDER_DIRS = ("site_builder", "templates", "static")     # the builder: what any project copy needs
BUILDER_FILES = ("build_site.py", "pyproject.toml")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*~", "*.swp")
GIT_ENV = dict(GIT_AUTHOR_NAME="fixture", GIT_AUTHOR_EMAIL="fixture@example.invalid",
               GIT_COMMITTER_NAME="fixture", GIT_COMMITTER_EMAIL="fixture@example.invalid",
               GIT_AUTHOR_DATE="2000-01-01T00:00:00+0000", GIT_COMMITTER_DATE="2000-01-01T00:00:00+0000",
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
FIXTURE_MODULE = '''"""Examples of the fixture project only (tests/fixture_project.py)."""
from model.data import DEFAULT_CORPUS, load_corpus
from site_builder.run.examples import ExampleResult, table


def corpus_characters():
    """Reads the corpus directly: its size in characters."""
    text = load_corpus(DEFAULT_CORPUS)
    return ExampleResult([table(["characters", "distinct"], [[len(text), len(set(text))]])], "data/shakespeare.txt")


def gradcheck_tolerance():
    """Imports a test module, and so pytest (as the real block and gradcheck examples did)."""
    import tests.test_gradcheck as checks
    return ExampleResult([table(["tolerance"], [[getattr(checks, "TOL", "?")]])], "tests/test_gradcheck.py")
'''
# Inserted after the first `examples:` key of the loss page.
FIXTURE_EXAMPLES = """\
      - title: Characters in the corpus
        run: fixture:corpus_characters
      - title: The gradient check's tolerance
        run: fixture:gradcheck_tolerance
"""
GITIGNORE = "/site/\n/.build_cache/\n/.site.*\n__pycache__/\n"


def _site_yaml(pages):
    """The real site.yaml with `nav` cut down to `pages` (in the real order)."""
    lines = (ROOT / "content" / "site.yaml").read_text(encoding="utf-8").splitlines(keepends=True)
    out, in_nav = [], False
    for line in lines:
        if line.startswith("nav:"):
            in_nav = True
            out.append("nav:\n")
            continue
        if in_nav and line.startswith("  - "):
            if line[4:].strip() in pages:
                out.append(line)
            continue
        in_nav = False
        out.append(line)
    return "".join(out)


def _example_modules(page_text):
    import re
    shown = re.findall(r"(?:run|config):\s*\"?([A-Za-z_][A-Za-z_0-9]*):", page_text)
    computed = re.findall(r"\{\{\s*([A-Za-z_][A-Za-z_0-9]*):\w+", page_text)    # {{module:function.key}} in prose
    return sorted(set(shown + computed))


def _test_modules(texts):
    """The tests/ modules that `texts` (pages, example modules) name, and what those import from
    tests/, transitively; with tests/__init__.py and tests/conftest.py."""
    import re
    wanted, todo = {"__init__", "conftest"}, []
    for text in texts:
        todo += re.findall(r"\btests\.([A-Za-z_][A-Za-z_0-9]*)", text)
    while todo:
        name = todo.pop()
        path = ROOT / "tests" / f"{name}.py"
        if name in wanted or not path.is_file():
            continue
        wanted.add(name)
        todo += re.findall(r"\btests\.([A-Za-z_][A-Za-z_0-9]*)", path.read_text(encoding="utf-8"))
    return sorted(wanted)


def new_folder(dest) -> Path:
    """`dest` as a Path, created if missing; it must be empty."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    return dest


def copy_builder(dest: Path):
    """The builder with its templates and static files, and no package or content, into
    `dest`: tests/second_project.py puts a package of its own beside it."""
    for d in BUILDER_DIRS:
        shutil.copytree(ROOT / d, dest / d, ignore=IGNORE, symlinks=True)
    for f in BUILDER_FILES:
        shutil.copy2(ROOT / f, dest / f)


def _copy_common(dest: Path, test_modules=None):
    copy_builder(dest)
    shutil.copytree(ROOT / PROJECT.package, dest / PROJECT.package, ignore=IGNORE, symlinks=True)
    (dest / PROJECT.tests).mkdir()
    for p in sorted((ROOT / PROJECT.tests).glob("*.py")):     # pages cite test functions; examples import some
        if test_modules is None or p.stem in test_modules:
            shutil.copy2(p, dest / PROJECT.tests / p.name)
    for folder in PROJECT.inputs:          # the copy's input files are the callers' to put there
        (dest / folder).mkdir()


def git_commit(dest: Path):
    """One commit with fixed names and dates: the same sources give the same commit id."""
    (dest / ".gitignore").write_text(GITIGNORE)
    env = {**os.environ, **GIT_ENV}
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A", "."],
                ["git", "commit", "-q", "--no-gpg-sign", "-m", "fixture"]):
        subprocess.run(cmd, cwd=dest, env=env, check=True, capture_output=True)


def make_fixture_project(dest: Path, all_tests: bool = False) -> Path:
    """Create the fixture project in `dest` (created if missing; must be empty) and return it.

    tests/ gets the test modules the pages cite or the examples import (and what those import
    from tests/), or every tests/*.py with all_tests=True. The source index reads all of
    tests/: with every test file a rebuild spends about a second more indexing them."""
    dest = new_folder(dest)
    sources = [(ROOT / "content" / "pages" / f"{slug}.md").read_text(encoding="utf-8") for slug in PAGES]
    modules = sorted({m for text in sources for m in _example_modules(text)})
    sources += [(ROOT / "content" / "examples" / f"{m}.py").read_text(encoding="utf-8") for m in modules]
    _copy_common(dest, None if all_tests else _test_modules(sources + [FIXTURE_MODULE]))
    corpus = (ROOT / "data" / "shakespeare.txt").read_bytes()[:CORPUS_BYTES]
    (dest / "data" / "shakespeare.txt").write_bytes(corpus[:corpus.rindex(b"\n") + 1])
    content = dest / "content"
    (content / "pages").mkdir(parents=True)
    (content / "examples").mkdir()
    (content / "site.yaml").write_text(_site_yaml(PAGES), encoding="utf-8")
    if PROJECT.hooks:
        shutil.copy2(ROOT / PROJECT.hooks, dest / PROJECT.hooks)
    for slug in PAGES:
        shutil.copy2(ROOT / "content" / "pages" / f"{slug}.md", content / "pages" / f"{slug}.md")
    for m in modules:
        shutil.copy2(ROOT / "content" / "examples" / f"{m}.py", content / "examples" / f"{m}.py")
    (content / "examples" / "fixture.py").write_text(FIXTURE_MODULE, encoding="utf-8")
    loss = content / "pages" / "loss.md"
    text = loss.read_text(encoding="utf-8")
    at = text.index("    examples:\n") + len("    examples:\n")
    loss.write_text(text[:at] + FIXTURE_EXAMPLES + text[at:], encoding="utf-8")
    git_commit(dest)
    return dest


# The kinds of cache entry keyed on contents and repository-relative paths only (sources,
# configs, library versions): an entry made in one folder is valid in a copy of the same tree.
# Not copied: pages, html and search (keyed on the commit the pages cite, which a copy's fixed
# commit changes), jinja (keyed on absolute template paths) and stamps (on the output folder).
PORTABLE_CACHE_KINDS = ("examples", "example-inputs", "training", "shapes", "memo", "font")


def seed_build_cache(dest: Path, source: Path = ROOT / ".build_cache") -> Path:
    """Copy the portable kinds of `source` (a build cache, by default the repository's) into
    `dest`/.build_cache, which must not exist yet. A real copy, not links: the copy's builds
    write to it. An entry that depended on where it was made would show as an incremental
    build that differs from a --no-cache one (tests/test_differential.py)."""
    from site_builder.base.cache import CACHE_MARKER
    cache = Path(dest) / ".build_cache"
    cache.mkdir()
    for name in (CACHE_MARKER,) + PORTABLE_CACHE_KINDS:
        if (source / name).is_dir():
            shutil.copytree(source / name, cache / name, ignore=shutil.ignore_patterns("*.tmp"))
        elif (source / name).is_file():
            shutil.copy2(source / name, cache / name)
    return cache


def make_repo_copy(dest: Path) -> Path:
    """A copy of the whole working tree the builder reads (every page, the whole corpus), as
    a git repository with one fixed commit like make_fixture_project's."""
    dest = new_folder(dest)
    _copy_common(dest)
    shutil.copytree(ROOT / "content", dest / "content", ignore=IGNORE)
    shutil.copy2(ROOT / "data" / "shakespeare.txt", dest / "data" / "shakespeare.txt")
    git_commit(dest)
    return dest


if __name__ == "__main__":      # python3 tests/fixture_project.py DEST: make one to look at
    import sys
    print(make_fixture_project(Path(sys.argv[1])))
