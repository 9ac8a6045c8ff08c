#!/usr/bin/env python3
"""Rewrite content/pages/*.md in the shorter forms the builder accepts (issue 17), changing
nothing a page shows:

- a reference's `function:` is dropped where it is the concept's own function;
- a reference's (or a shapes block's `at:`) snippet that quotes the line assigning a local
  becomes that local's name, where the name resolves to exactly the same lines;
- a symbol's `code:` is dropped where it is what the TeX's names default to.

Each edit is made on the line the YAML loader reports for that key, and only when the line
holds exactly the text expected, so comments, quoting and layout elsewhere stay as they are.
Re-runnable and idempotent: a second run finds nothing to change (it prints 0 edits), so it
can be run again after other edits to the pages are merged.

    python3 tools/shorten_refs.py [--check]     # --check: change nothing, exit 1 if edits are due

Verify with a build before and after: the pages must be byte-identical
(`python3 build_site.py --out /tmp/a`, run this, `python3 build_site.py --out /tmp/b`,
`diff -r /tmp/a /tmp/b`).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from site_builder.gather.content import concepts, load_content  # noqa: E402
from site_builder.render.pages.symbol_rows import split_top_level, tex_name  # noqa: E402
from site_builder.gather.resolve import ResolveError, resolve_snippet  # noqa: E402
from site_builder.gather.source_index import build_index  # noqa: E402

SCALAR = r"""('(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|[^,}\n#'"][^,}\n#]*)"""


def _scalar_value(text):
    import yaml
    return yaml.safe_load(text)


def _edit(lines, line_no, key, expected, replacement):
    """On line `line_no` (1-based), replace `key: <scalar equal to expected>` (and the comma
    joining it to the mapping when replacement is None). True if the line was changed."""
    i = line_no - 1
    text = lines[i]
    for m in re.finditer(rf"(?P<lead>,\s*)?\b{key}:\s*{SCALAR}(?P<trail>\s*,\s*)?", text):
        try:
            value = _scalar_value(m.group(2).strip())
        except Exception:
            continue
        if str(value) != str(expected):
            continue
        if replacement is not None:
            new = text[:m.start(2)] + replacement + text[m.end(2):]
        elif m.group("lead") and m.group("trail"):
            new = text[:m.start()] + ", " + text[m.end():]
        elif m.group("lead"):
            new = text[:m.start()] + text[m.end():]
        elif m.group("trail"):
            new = text[:m.start()] + text[m.end():]
        else:
            return False          # the key alone on its line: leave it
        lines[i] = new
        return True
    return False


def _same(index, qualname, snippet, name):
    try:
        a = resolve_snippet(index, qualname, snippet)
        b = resolve_snippet(index, qualname, name)
    except (ResolveError, KeyError):
        return False
    return (a.file, a.start, a.end) == (b.file, b.start, b.end)


def _assigned_name(index, qualname, snippet):
    """The local whose assigning line `snippet` quotes (resolving the same lines), or None."""
    text = str(snippet)
    if "\n" in text or text.strip().isidentifier():
        return None
    m = re.match(r"\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?:\+|-|\*|/|@)?=(?!=)", text)
    if not m:
        return None
    try:
        places = index.assignments(qualname)
    except KeyError:
        return None
    for name in (n.strip() for n in m.group(1).split(",")):
        if name != "_" and len(places.get(name, [])) == 1 and _same(index, qualname, text, name):
            return name
    return None


def shorten(root: Path, write: bool = True) -> list:
    problems: list = []
    content = load_content(root, problems)
    index = build_index(root)
    edits = []
    for page in content.pages.values():
        path = root / page.file
        lines = path.read_text(encoding="utf-8").split("\n")
        before = list(lines)
        for c in concepts(page):
            fn = str(c.get("function"))
            locals_ = index.local_names(fn) if fn in index.functions else []
            for item in c.get("math") or []:
                for ref in item.get("refs") or []:
                    ref_fn = str(ref.get("function", fn))
                    name = _assigned_name(index, ref_fn, ref.get("snippet"))
                    if name and _edit(lines, ref.line_of("snippet"), "snippet", ref["snippet"], name):
                        edits.append(f"{page.file}:{ref.line_of('snippet')}: snippet -> {name}")
                    if "function" in ref and ref_fn == fn and \
                            _edit(lines, ref.line_of("function"), "function", fn, None):
                        edits.append(f"{page.file}:{ref.line_of('function')}: function (the concept's)")
            for block in c.get("shapes") or []:
                block_fn = str(block.get("function", fn))
                name = _assigned_name(index, block_fn, block.get("at")) if block.get("at") else None
                if name and _edit(lines, block.line_of("at"), "at", block["at"], name):
                    edits.append(f"{page.file}:{block.line_of('at')}: at -> {name}")
            for s in c.get("symbols") or []:
                if "code" not in s:
                    continue
                names = [tex_name(p) for p in split_top_level(str(s["tex"]))]
                if names and all(n in locals_ for n in names) and str(s["code"]) == ", ".join(names) and \
                        _edit(lines, s.line_of("code"), "code", s["code"], None):
                    edits.append(f"{page.file}:{s.line_of('code')}: code (the TeX's name)")
        if write and lines != before:
            path.write_text("\n".join(lines), encoding="utf-8")
    return edits


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if edits are due")
    args = parser.parse_args(argv)
    edits = shorten(ROOT, write=not args.check)
    for e in edits:
        print(e)
    print(f"{len(edits)} edit(s){' due' if args.check else ''}")
    return 1 if args.check and edits else 0


if __name__ == "__main__":
    sys.exit(main())
