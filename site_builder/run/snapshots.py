"""What a traced frame held, and which statement a line belongs to: the tracers' raw material.

site_builder/run/trace.py records one step per statement with a snapshot of the frame's locals;
this module makes the snapshots and tells the statements apart.

* **Statements from the AST**, not from line events: :func:`statement_spans` maps every line
  of a file to the first and last line of the innermost statement covering it (a compound
  statement's header only), so a statement written over several lines is one step.
* **Snapshots copy, one level deep** (``"values"``): arrays are copied, dicts of arrays one
  level deep, lists shallowly; anything else is kept by reference, so deeper structures are
  shared between steps. ``"shapes"`` copies no array: arrays become :class:`Shape`, a tuple
  that compares equal to the plain shape and pickles as one.
* **Change detection by identity and content** (:class:`Fingerprint`): a name changed when it
  was rebound, or is the same array, dict or list whose content changed in place; in
  ``"shapes"`` mode only a change of shape, of a dict's keys or of its values' identity is seen.
"""
from __future__ import annotations

import ast
import linecache

import numpy as np

from site_builder.gather.inputs import quiet_source

__all__ = ["Shape", "statement_spans", "line_text", "copy_value", "shape_value", "copy_return",
           "arrays_equal", "Fingerprint"]


class Shape(tuple):
    """The shape of an array recorded in ``snapshot="shapes"`` mode. A ``tuple`` subclass:
    ``Shape((16, 32)) == (16, 32)``; it only exists to tell a recorded shape apart from a
    local that happens to be a tuple of ints."""

    __slots__ = ()

    def __repr__(self):
        return f"Shape({tuple(self)!r})"

    def __reduce__(self):
        return (Shape, (tuple(self),))


# ------------------------------------------------------------------ statements and lines

_STATEMENT_SPANS: dict[str, tuple[list, dict[int, tuple[int, int]]]] = {}


def statement_spans(filename: str, checked: set | None = None) -> dict[int, tuple[int, int]]:
    """{line: (first, last) line of the innermost statement that covers it}. For compound
    statements (for, if, with, ...) only the header counts, not the body. ``checked``: files
    already re-validated against the disk in this run (``linecache.checkcache`` once per file
    per trace, so an edited file is re-read by the next build in the same process)."""
    with quiet_source():        # lines of the functions traced, which their examples are keyed on
        if checked is not None and filename not in checked:
            checked.add(filename)
            linecache.checkcache(filename)
        lines = linecache.getlines(filename)
    cached = _STATEMENT_SPANS.get(filename)
    if cached is not None and cached[0] is lines:
        return cached[1]
    spans: dict[int, tuple[int, int]] = {}
    source = "".join(lines)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        tree = None

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                first = child.lineno
                body = getattr(child, "body", None)
                if isinstance(body, list) and body and isinstance(body[0], ast.AST):
                    last = max(first, body[0].lineno - 1)
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        last = first
                else:
                    last = child.end_lineno or first
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    decorators = child.decorator_list
                    first = min([first] + [d.lineno for d in decorators])
                    last = max(last, child.lineno)
                for ln in range(first, last + 1):
                    spans[ln] = (first, last)     # later (inner) statements override
            visit(child)

    if tree is not None:
        visit(tree)
    _STATEMENT_SPANS[filename] = (lines, spans)
    return spans


def line_text(filename: str, line: int) -> str:
    """A line of a function that ran (a traced step's, a raising frame's): its text and first
    line are in its example's key already (site_builder/gather/inputs.py quiet_source)."""
    with quiet_source():
        return linecache.getline(filename, line).strip()


# ------------------------------------------------------------------------- snapshots

def _is_array(v) -> bool:
    return isinstance(v, (np.ndarray, np.generic))


def copy_value(v):
    """Snapshot of one value in "values" mode."""
    if isinstance(v, np.ndarray):
        return np.array(v, copy=True)
    if isinstance(v, dict):
        if any(isinstance(x, np.ndarray) for x in v.values()):
            return {k: (np.array(x, copy=True) if isinstance(x, np.ndarray) else x)
                    for k, x in v.items()}
        return dict(v)
    if isinstance(v, list):
        return list(v)
    return v


def shape_value(v):
    """Snapshot of one value in "shapes" mode."""
    if _is_array(v):
        return Shape(np.shape(v))
    if isinstance(v, dict):          # a new dict even without arrays: keys are a snapshot too
        return {k: (Shape(np.shape(x)) if _is_array(x) else x) for k, x in v.items()}
    return v


def copy_return(v, mode):
    one = copy_value if mode == "values" else shape_value
    if isinstance(v, tuple) and not isinstance(v, Shape):
        return tuple(one(x) for x in v)
    return one(v)


def arrays_equal(a, b) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.view(np.ndarray), b.view(np.ndarray)    # bookkeeping: never an op of a recording (run/tape.py)
    try:
        return bool(np.array_equal(a, b, equal_nan=True))
    except TypeError:
        return bool(np.array_equal(a, b))


class Fingerprint:
    """What a name was bound to after the previous step, to detect changes."""
    __slots__ = ("ref", "content")

    def __init__(self, value, snap, mode):
        self.ref = value
        if mode == "values":
            if isinstance(value, np.ndarray):
                self.content = snap                       # the copy made for the snapshot
            elif isinstance(value, dict):
                self.content = {k: (x, snap.get(k) if isinstance(snap, dict) else None)
                                for k, x in value.items()}
            elif isinstance(value, list):
                self.content = tuple(value)
            else:
                self.content = None
        else:
            if _is_array(value):
                self.content = np.shape(value)
            elif isinstance(value, dict):
                self.content = {k: (x, np.shape(x) if _is_array(x) else None)
                                for k, x in value.items()}
            elif isinstance(value, list):
                self.content = tuple(value)
            else:
                self.content = None

    def changed(self, value, mode) -> bool:
        if value is not self.ref:
            return True
        c = self.content
        if isinstance(value, np.ndarray):
            if mode == "values":
                return not arrays_equal(c, value)
            return c != value.shape
        if isinstance(value, dict):
            if c.keys() != value.keys():
                return True
            for k, x in value.items():
                old, copied = c[k]
                if x is not old:
                    return True
                if isinstance(x, np.ndarray):
                    if mode == "values":
                        if copied is None or not arrays_equal(copied, x):
                            return True
                    elif copied != x.shape:
                        return True
            return False
        if isinstance(value, list):
            return len(c) != len(value) or any(a is not b for a, b in zip(c, value))
        return False
