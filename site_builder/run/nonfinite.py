"""Where an example's shown values hold inf or NaN: a `check` problem unless the example says
it shows them (`shows_nonfinite: true`, content/README.md).

Why on the shown blocks and not on the arrays: the blocks are what the reader sees, and they
are already text (site_builder/run/examples.py formats every value), so one look covers every
helper and every hand-made table alike. Only the value cells are read (a step table's
`value`, a matrix's cells, a gradient check's columns, a table's cells, a stepper's rows),
never the code, labels or captions: `np.where(mask, S, -np.inf)` is code, not a value.

Trade-off: a table cell whose text is the word "inf" or "nan" on its own is read as a value.
"""
import re

NONFINITE = re.compile(r"(?<![\w.])-?(?:inf|nan)(?![\w])", re.IGNORECASE)


def _cells(block):
    """(where, text) of every value cell of one display block."""
    kind = block.get("kind")
    if kind == "steps":
        for row in block.get("rows") or []:
            yield f"the step table's row '{row.get('label') or row.get('name')}'", str(row.get("value", ""))
    elif kind in ("matrix", "table"):
        name = f"the matrix {block.get('name')}" if kind == "matrix" else "the table"
        for i, row in enumerate(block.get("rows") or []):
            label = f"'{row[0]}'" if kind == "table" and row else str(i)
            for cell in row:
                yield f"{name}'s row {label}", str(cell)
    elif kind == "gradcheck":
        for row in block.get("rows") or []:
            for column in ("analytic", "numeric"):
                for cell in row.get(column) or []:
                    yield f"the gradient check's {column} {row.get('name')}", str(cell)
            yield f"the gradient check's gap of {row.get('name')}", str(row.get("gap", ""))
    elif kind == "stepper":
        for step in block.get("steps") or []:
            for cell in (step.get("after") or []) + (step.get("before") or []) + \
                    [x for t in step.get("terms") or [] for x in t.get("row") or []]:
                yield f"the stepper's step '{step.get('label')}'", str(cell)


def nonfinite_shown(blocks):
    """'nan in the table's row 'constant row'' for the first non-finite value the blocks show, or None."""
    for block in blocks:
        for where, text in _cells(block):
            m = NONFINITE.search(text)
            if m:
                return f"{m.group(0)} in {where}"
    return None
