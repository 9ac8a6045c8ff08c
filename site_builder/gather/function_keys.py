"""What an example's result depends on in a source file: the functions its run entered, and the
file's module-level code, rather than the whole file.

An example is keyed on the inputs its run read (site_builder/gather/inputs.py). For a Python file
of the project's code folders that the run only imported and called into (never read as text),
the part of the key that file gives is its *outline* (`Outline`), not its bytes:

* the **module-level code**: every statement outside a function body, with each function's
  body replaced by its docstring (so the name, the signature, the defaults, the decorators
  and the docstring of every function stay in: `inspect.signature` and `__doc__` read them
  without entering it), as a syntax tree without positions. Constants, imports, class
  bodies, dataclass fields and their defaults are all here; so is the list of functions, so
  adding, deleting or renaming a function changes it (and reruns every example that imports
  the file: a new name can shadow an old one). Consecutive undecorated functions whose
  defaults call nothing are taken in name order, so moving one among the others leaves it
  unchanged; a decorator can register in order, so a decorated one stays where it is.
* the **text and first line of each function entered** (a top-level function, or a method,
  with everything nested in it: a lambda or comprehension inside counts as its function).
  The text, comments included, because a traced step shows its line's text; the first line
  because a traced step shows its line number. A moved function therefore reruns the
  examples that entered it, and so does an edit that shifts the functions below it; an
  edit that keeps the line count reruns only the examples that reached that function.
  (A result could carry relocatable line numbers instead; not done: the blocks of an
  example are free-form, and a line number in a caption would be missed.)
* the **functions module-level code may call at import time** (`import_time`): every
  function whose name module-level code of the example's files mentions (a call, a
  decorator, a default, a class base), every dunder method (a dataclass's generated
  `__init__` calls `__post_init__`), and what their bodies mention, transitively, by name.
  The package was imported before the example's child forked, so those calls were not seen
  entering; a name is an over-approximation, which only ever reruns more.

Which functions a run entered comes from the profile hook the example already runs under
(site_builder/run/shape_recorder.py); the code objects are mapped to the function whose lines
hold their first line. Anything not covered falls back to the whole file's bytes: a file the run
read as text (a source index, `inspect.getsource`), a file that does not parse, a run whose
entered set is unknown (a shape probe, an example module loaded before the child started). A
training run's key reads every package file for its syntax tree, so a run's reader is keyed on
those trees as well (site_builder/gather/inputs.py `syntax_tree_read`), not on their bytes.
"""
from __future__ import annotations

import ast
import bisect
import re
import textwrap
from dataclasses import dataclass

from site_builder.base.cache import digest

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Module-level statements whose bodies are still module level (a def under `if`, `try`, `with`).
_BLOCKS = (ast.If, ast.Try, ast.With, ast.For, ast.While) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


@dataclass(frozen=True)
class Outline:
    skeleton: str          # digest of the module-level code, positions left out
    defs: dict             # def path ("f", "Class.method") -> digest of its first line and text
    starts: tuple          # sorted first lines of the defs, for `paths_at`
    spans: tuple           # (first, last, path) in the order of starts
    names: frozenset       # every name module-level code mentions (imports left out)
    texts: dict            # def path -> its source text (what it mentions is read only when asked)
    short: dict            # def path -> its bare name


def _names(nodes) -> set:
    out = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                out.add(n.id)
            elif isinstance(n, ast.Attribute):
                out.add(n.attr)
    return out


def _is_main_guard(node) -> bool:
    t = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(t, ast.Compare) and isinstance(t.left, ast.Name)
            and t.left.id == "__name__" and len(t.comparators) == 1 and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value == "__main__")


def _movable(node) -> bool:
    """A def that can trade places with its neighbours without changing what the module does."""
    if not isinstance(node, DEFS):
        return False
    defaults = node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
    return (not node.decorator_list
            and not any(isinstance(n, ast.Call) for d in defaults for n in ast.walk(d)))


def _in_name_order(body: list) -> list:
    """body with each run of consecutive movable defs sorted by name (a run with a repeated name
    keeps its order: the later definition wins)."""
    out, run = [], []

    def flush():
        names = [n.name for n in run]
        out.extend(sorted(run, key=lambda n: n.name) if len(set(names)) == len(names) else run)
        run.clear()
    for node in body:
        if _movable(node):
            run.append(node)
        else:
            flush()
            out.append(node)
    flush()
    return out


# Source digest -> its Outline, for the process (serve, the tests build many times).
MEMO: dict = {}


def outline_of(data: bytes):
    """The Outline of a Python source, or None if it does not parse."""
    key = digest(data)
    if key not in MEMO:
        MEMO[key] = _outline(data)
    return MEMO[key]


def _outline(data: bytes):
    try:
        text = data.decode("utf-8")
        tree = ast.parse(text)
    except (UnicodeDecodeError, SyntaxError, ValueError):
        return None
    lines = text.splitlines(keepends=True)
    defs, spans, texts, short, module_level = {}, [], {}, {}, []

    def visit(body, prefix):
        for node in body:
            if isinstance(node, DEFS):
                path = prefix + node.name
                n = 1
                while path in defs:
                    n += 1
                    path = f"{prefix}{node.name}#{n}"
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                texts[path] = "".join(lines[first - 1:node.end_lineno])
                defs[path] = digest(first, texts[path])
                spans.append((first, node.end_lineno, path))
                short[path] = node.name
                module_level.extend(node.decorator_list + node.args.defaults
                                    + [d for d in node.args.kw_defaults if d is not None])
                doc = ast.get_docstring(node, clean=False)
                node.body = [ast.Expr(ast.Constant(doc))] if doc is not None else [ast.Pass()]
            elif isinstance(node, ast.ClassDef):
                module_level.extend(node.decorator_list + node.bases + [k.value for k in node.keywords])
                visit(node.body, prefix + node.name + ".")
                node.body = _in_name_order(node.body)
            elif _is_main_guard(node):
                pass                     # `if __name__ == "__main__":` never runs on import (kept in the skeleton)
            elif isinstance(node, _BLOCKS):
                module_level.extend(getattr(node, f) for f in ("test", "iter", "target") if getattr(node, f, None))
                module_level.extend(getattr(node, "items", []))
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []), prefix)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body, prefix)
            elif not isinstance(node, (ast.Import, ast.ImportFrom)):
                module_level.append(node)
    visit(tree.body, "")
    tree.body = _in_name_order(tree.body)
    spans.sort()
    return Outline(skeleton=digest(ast.dump(tree, include_attributes=False)), defs=defs,
                   starts=tuple(s[0] for s in spans), spans=tuple(spans), names=frozenset(_names(module_level)),
                   texts=texts, short=short)


def paths_at(o: Outline, first_lines) -> set:
    """The def paths whose lines hold each of `first_lines` (code objects' first lines); a line
    outside every def (the module's own code, a class body) is the skeleton's."""
    out = set()
    for line in first_lines:
        i = bisect.bisect_right(o.starts, line) - 1
        while i >= 0:                    # nested spans sort after their parent: walk back to the enclosing one
            first, last, path = o.spans[i]
            if first <= line <= last:
                out.add(path)
                break
            i -= 1
    return out


def import_time(outlines: dict, extra_names=frozenset()) -> dict:
    """{file: def paths} that module-level code of these files (and `extra_names`, the names
    other files' module-level code mentions) may call: named there, dunders, and what their
    bodies name, transitively."""
    names = set(extra_names).union(*(o.names for o in outlines.values()))
    chosen = {rel: set() for rel in outlines}
    while True:
        added = set()
        for rel, o in outlines.items():
            for path, name in o.short.items():
                if path not in chosen[rel] and (name in names or (name.startswith("__") and name.endswith("__"))):
                    chosen[rel].add(path)
                    added |= _mentions(o.texts[path])
        if not added - names:
            return chosen
        names |= added


def _mentions(text: str) -> set:
    """The names a def's text mentions (dedented: a method is indented)."""
    try:
        return _names([ast.parse(textwrap.dedent(text))])
    except SyntaxError:          # a method whose first line is a decorator continuation: be wide
        return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def key_part(o: Outline, paths) -> str:
    """What the file gives an example's key: its skeleton and the entered defs (a def no longer
    there gives None, so a deletion or a rename is a change)."""
    return digest(o.skeleton, [(p, o.defs.get(p)) for p in sorted(paths)])
