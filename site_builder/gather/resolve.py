"""Stage 3 of the site build: resolve references from content to exact source lines.

One job: turn "the line of `dense_forward` that contains `relu_forward(Z)`" into
`pkg/layers.py:72` and the exact text of that line, or fail loudly. Content never
types a line number (the one rule of the site); this is where the number comes from.

Trade-offs, and why:

- **A snippet is searched inside one function, not the whole file.** Authors think in
  functions, a short snippet is unique far more often inside one function than in a file,
  and a snippet that moves to another function is a change the page should notice.
- **Exactly one match or an error.** Zero matches means the code changed under the page;
  several means the reference is ambiguous and could silently point at the wrong line later.
  Both are build errors that name the function, quote the snippet and, when they can, say
  where the text is now (another function, a near-miss line) or which lines it matched.
  The content loader prefixes its own `file:line`, so the author sees both ends.
- **Whitespace is forgiving, everything else is exact.** Runs of whitespace collapse on both
  sides (indentation, alignment, a wrapped argument list copied onto one line cannot break
  a reference), but characters are compared literally: no fuzzy matching, because a fuzzy
  match is precisely how documentation drifts from code.
- **Multi-line snippets** (lines separated by `\\n`) match consecutive source lines, each
  snippet line contained in its source line; blank snippet lines at either end are ignored.
- **A bare local name is the line that assigns it.** `snippet: positive` cites
  `positive = Z > 0` (the whole statement, if it spans lines): the shortest reference that
  cannot drift. A name assigned on several lines is an error naming them; a name the
  function does not assign (`softmax_forward`) is matched as text, as before.
- **A `tests` reference lands on an assertion** (`asserts_nothing`): an `assert`, an
  `assert*` call, `pytest.approx`, or a `with pytest.raises(...)` block, or a line inside one.
  A setup line (the call whose result a later line checks) tests nothing by itself; the
  message names the assertions after it that read what it binds, so the author can cite one.
- **The code shown is the file's own text** (`Resolved.code`: the lines joined by `\\n`,
  indentation kept), so a page quotes exactly what the repository has at the built commit.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from site_builder.gather.source_index import SourceIndex

__all__ = ["Resolved", "ResolveError", "resolve_snippet", "resolve_function", "asserts_nothing",
           "checking_assertions"]


@dataclass(frozen=True)
class Resolved:
    file: str          # repo-relative posix path, "pkg/layers.py"
    start: int         # first line, 1-based
    end: int           # last line, inclusive
    code: str          # the exact text of lines start..end, joined by "\n"
    function: str = "" # the qualname the reference named


class ResolveError(Exception):
    """A reference that does not resolve to exactly one place. `message` says why and how to fix."""

    def __init__(self, message: str, fix: str = "", no_function: bool = False):
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.no_function = no_function      # the function named is not there (not a snippet's fault)

    def __str__(self):
        return self.message


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _lookup(index: SourceIndex, qualname: str):
    try:
        return index.function(qualname)
    except KeyError as e:
        raise ResolveError(str(e) if type(e) is not KeyError else f"no function {qualname}",
                           getattr(e, "fix", ""), no_function=True) from None


def resolve_function(index: SourceIndex, qualname: str) -> Resolved:
    """The whole function: its `def` line to its last line."""
    f = _lookup(index, qualname)
    lines = index.files[f.file]
    return Resolved(f.file, f.start, f.end, "\n".join(lines[f.start - 1:f.end]), qualname)


def _matches(lines: list, first: int, last: int, wanted: list) -> list:
    """Start lines (1-based) in first..last where the collapsed snippet lines match
    consecutive source lines."""
    collapsed = {n: _collapse(lines[n - 1]) for n in range(first, last + 1)}
    out = []
    for n in range(first, last - len(wanted) + 2):
        if all(w in collapsed[n + j] for j, w in enumerate(wanted)):
            out.append(n)
    return out


def _snippet_lines(snippet: str) -> list:
    wanted = [_collapse(s) for s in str(snippet).split("\n")]
    while wanted and not wanted[0]:
        wanted.pop(0)
    while wanted and not wanted[-1]:
        wanted.pop()
    return wanted


def _hint(index: SourceIndex, qualname: str, f, wanted: list) -> str:
    """Where the text is now, if anywhere: another function, else the closest line."""
    elsewhere = []
    for g in index.functions.values():
        if g.qualname == qualname:
            continue
        for n in _matches(index.files[g.file], g.start, g.end, wanted):
            elsewhere.append(f"{g.qualname} ({g.file}:{n})")
    if elsewhere:
        shown = ", ".join(elsewhere[:3]) + (f" and {len(elsewhere) - 3} more" if len(elsewhere) > 3 else "")
        return f"; it is in {shown}"
    lines = index.files[f.file]
    candidates = {n: _collapse(lines[n - 1]) for n in range(f.start, f.end + 1)}
    best, best_ratio = None, 0.0
    for n, text in candidates.items():
        if not text:
            continue
        ratio = difflib.SequenceMatcher(None, wanted[0], text).ratio()
        if ratio > best_ratio:
            best, best_ratio = n, ratio
    if best is not None and best_ratio >= 0.6:
        return f"; closest is line {best}: {lines[best - 1].strip()!r}"
    return ""


def resolve_snippet(index: SourceIndex, qualname: str, snippet: str) -> Resolved:
    """The one place inside `qualname` whose lines contain `snippet` (whitespace collapsed)."""
    f = _lookup(index, qualname)
    name = str(snippet).strip()
    if name.isidentifier() and hasattr(index, "assignments"):
        places = index.assignments(f.qualname).get(name, [])
        if len(places) > 1:
            raise ResolveError(f"'{name}' is assigned on {len(places)} lines of {qualname} "
                               f"(lines {', '.join(str(a) for a, _ in places)}); quote text of the line you mean")
        if places:
            start, end = places[0]
            lines = index.files[f.file]
            return Resolved(f.file, start, end, "\n".join(lines[start - 1:end]), qualname)
    wanted = _snippet_lines(snippet)
    if not wanted:
        raise ResolveError(f"empty snippet for {qualname}; give text from one of its lines, "
                           f"or leave the snippet out to cite the whole function")
    lines = index.files[f.file]
    found = _matches(lines, f.start, f.end, wanted)
    shown = repr(str(snippet).strip("\n"))
    if not found:
        what = "no line" if len(wanted) == 1 else f"no {len(wanted)} consecutive lines"
        verb = "contains" if len(wanted) == 1 else "contain"
        raise ResolveError(f"{what} of {qualname} {verb} {shown}{_hint(index, qualname, f, wanted)}")
    if len(found) > 1:
        unit = "lines" if len(wanted) == 1 else "places"
        raise ResolveError(f"{shown} matches {len(found)} {unit} of {qualname} "
                           f"(lines {', '.join(str(n) for n in found)}); "
                           f"make the snippet longer so it matches one line")
    start = found[0]
    end = start + len(wanted) - 1
    return Resolved(f.file, start, end, "\n".join(lines[start - 1:end]), qualname)


def asserts_nothing(index: SourceIndex, r: Resolved):
    """None when lines r.start..r.end of the test r.function hold or lie inside an assertion;
    else (message, fix), the fix naming the assertions that check what those lines compute."""
    if any(a.start <= r.end and r.start <= a.end for a in index.assertions(r.function)):
        return None
    lines = index.files[index.function(r.function).file]
    shown = "; ".join(f"line {a.start}: {lines[a.start - 1].strip()!r}" for a in checking_assertions(index, r)[:3])
    where = f"line {r.start}" if r.start == r.end else f"lines {r.start}-{r.end}"
    return (f"{where} of {r.function} asserts nothing (a tests reference must cite an assertion)",
            f"cite the assertion that checks it: {shown}" if shown else "cite an assert line of the test that checks it")


def checking_assertions(index: SourceIndex, r: Resolved) -> list:
    """The assertions after lines r.start..r.end of the test r.function that read what those
    lines bind, or what later statements compute from it; else those that read a name the
    lines use. In code order."""
    lines = index.files[index.function(r.function).file]
    places = sorted((a, b, name) for name, spans in index.assignments(r.function).items() for a, b in spans)
    bound = {name for a, b, name in places if a <= r.end and r.start <= b}
    for a, b, name in places:                 # and what later statements compute from it
        if a > r.end and bound & set(re.findall(r"[A-Za-z_]\w*", "\n".join(lines[a - 1:b]))):
            bound.add(name)
    used = set(re.findall(r"[A-Za-z_]\w*", r.code))
    later = [a for a in index.assertions(r.function) if a.start > r.end]
    return [a for a in later if a.reads & bound] or [a for a in later if a.reads & used]
