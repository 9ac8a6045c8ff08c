"""The written form of a shape: ``(T, d)``, ``(d,)``, ``()``.

Only text: reading, writing and validating a declared shape needs no run of the code, so the
content loader (site_builder/gather/content.py) checks an author's shapes at load time, and the
run stage (site_builder/run/shapes.py) compares them with what the code gives.
"""
import re
from typing import Iterable


def format_shape(items: Iterable) -> str:
    """``(T, d)``, ``(d,)``, ``()``."""
    items = [str(x) for x in items]
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


def parse_shape(text: str) -> tuple[str, ...]:
    """``"(T, d)"``, ``"(T,d)"`` -> ``("T", "d")``; ``"(d,)"``, ``"(d)"``, ``"d"`` -> ``("d",)``;
    ``"()"`` -> ``()``. Whitespace inside an axis is dropped (``"d / h"`` -> ``"d/h"``)."""
    t = text.strip()
    if t.startswith("(") and t.endswith(")"):
        t = t[1:-1]
    return tuple(re.sub(r"\s+", "", x) for x in t.split(",") if x.strip())


def malformed_shape(text: str) -> tuple[str, str] | None:
    """(what is wrong, the fix) for a declared shape whose tuples do not parse, else None.
    Only the tuples are read: words around them are the author's (`(d,) per head`), and a
    parenthesis right after a name is a call in an axis (`ceil(d/2)`). `(d,)` is the one
    tuple a comma may end; `(T,, d)` and `(T, d,)` would be read as `(T, d)` without a word."""
    depth, start, tuples = 0, 0, []
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            if depth == 0:
                return f"the ')' at character {i + 1} closes no '('", "remove it, or add the '(' it closes"
            depth -= 1
            if depth == 0 and not (start and (text[start - 1].isalnum() or text[start - 1] == "_")):
                tuples.append(text[start:i + 1])
    if depth:
        return f"the '(' at character {start + 1} is never closed", "close it with ')'"
    for tup in tuples:
        axes, depth, axis = [], 0, ""
        for ch in tup[1:-1]:
            depth += (ch == "(") - (ch == ")")
            if ch == "," and depth == 0:
                axes.append(axis.strip())
                axis = ""
            else:
                axis += ch
        axes.append(axis.strip())
        named = [a for a in axes if a]
        if axes == [""] or axes[-1:] == [""] and len(axes) == 2 and named:      # () and (d,)
            continue
        if "" in axes:
            what = "ends in a comma, which only a one-axis shape does" if named and axes.index("") == len(axes) - 1 \
                else "has an empty axis"
            return f"{tup} {what}", f"write {format_shape(named)}" if named else "write () for a scalar"
    return None
