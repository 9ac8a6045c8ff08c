"""Shapes from an example's own run: what every function of the documented package held when
its first call returned, recorded while the example ran, and the check of a concept's
declared letter shapes against them.

Why this exists: the shape probes (site_builder/run/shapes.py) reach only what their entry
points call. A function that takes a parameter dict, a path or an rng (a training step, a
sampling loop, a data split) is documented with an example instead, and that example already
runs it. So the example runner records, in the child that runs the example, the shapes of
each package function's arguments and locals and what it returned (first call per function,
wherever it happens in the call tree). Nothing runs twice.

Trade-offs, and why:

* **A profile hook, not a line tracer** (site_builder/run/shape_recorder.py). `sys.setprofile`
  sees every call and return but no lines: the snapshot is taken once, when the first call
  of a function returns (its final locals, like the probes' "latest value"). It is independent of `sys.settrace`, which
  the examples' own `trace_locals` use, so both run at once. Measured cost: see
  `record_shapes`.
* **Every package function, not only the documented ones.** What is recorded depends only on
  the example's code and the package (the inputs the example cache already keys on), never on
  which page asks: so the cache stays honest without the content in its key, and a symbol's
  `code: starts (inside get_batch)` can name a callee's local.
* **Letters at the example's sizes, from the project's axes.** The probes give letters by
  running twice at distinct sizes; an example runs once. So each letter of a declared shape
  gets its size, in order, from: a scalar symbol row of the concept (`B` with
  `code: opts.batch_size`), the config the function ran with (or the example's
  `data["config"]`), each of its fields that the project's `configs[].axes` gives a letter
  (not the letters of a call's lengths, `lengths`, which a config field only bounds), the
  example's `data["lengths"]`, and otherwise the first row that uses it alone on an axis.
  Then every row is compared axis by axis: `(T, B)` against a traced `(B, T)` fails when
  the example's B and T differ, and so does `(B, T)` against `(B, T, d)`. A letter only the
  row itself sizes checks nothing: that is why the config's letters come from the project,
  not from a list of one package's names. Where two letters have the same size in the
  example a swap cannot be seen: the probes, with their distinct sizes, are the stronger
  check where they reach.
* **Codes are small expressions**, evaluated on the recorded shapes, not run: a name,
  `d["key"]`, `params[p + "bk"]` (with a recorded string `p`), `X[t]` (one axis less),
  `len(x)`, `x.shape[-1]`, `cfg.field`, `a @ b`, `NAME (inside FUNC)`, and `a, b` for
  several. A call of anything else (`causal_mask(T)`) is not redone: such a row is words.
* **The probe first** (site_builder/render/pages/symbol_rows.py): where a probe reaches the function, its shapes
  (at sizes where every letter differs) decide an expression too; the examples decide the
  rest. A declared shape of the function's own names that neither checks is a `check`
  problem; a row about a callee's or caller's arrays gets its ✓ when one of them agrees.
"""
from __future__ import annotations

import ast
import dataclasses
import re

import numpy as np

REDUCTIONS = ("max", "min", "sum", "mean", "argmax", "argmin")


# ---------------------------------------------------------------------- in the parent

class Unknown(Exception):
    """A code expression the recorded shapes cannot tell."""


def evaluate(code: str, names: dict, calls: dict) -> list:
    """The entries a symbol's `code` stands for: [("a", shape) | ("i", n) | ...], one per
    comma-separated part. Raises Unknown for what the recording cannot tell."""
    text = code.strip()
    m = re.fullmatch(r"(.+?)\s*\(inside\s+([\w.]+)\)", text)
    if m:
        callee = next((q for q in calls if q == m.group(2) or q.endswith("." + m.group(2))), None)
        if callee is None:
            raise Unknown(f"the example never calls {m.group(2)}")
        return evaluate(m.group(1), calls[callee], calls)
    out = []
    for part in _top_level_parts(text):
        if part in names:                     # return[0], c["att"]["A"]: recorded as written
            out.append(names[part])
            continue
        try:
            tree = ast.parse(part, mode="eval").body
        except SyntaxError:
            raise Unknown(f"'{part}' is not an expression of the function's names") from None
        out.append(_value(tree, names))
    return out


def _top_level_parts(text):
    """`a, b[1, 2], f(x, y)` -> ["a", "b[1, 2]", "f(x, y)"]."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _key(node, names):
    """A subscript's key: a str (a dict key) or an int (an index)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    if isinstance(node, ast.Name):
        kind, value = names.get(node.id, ("?", None))
        if kind in ("s", "i"):
            return value
        return 0                      # an index the code loops over (`t`, `i`): any row
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _key(node.left, names), _key(node.right, names)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    if isinstance(node, ast.JoinedStr):           # f"layer{l}.w", with l recorded
        text = ""
        for v in node.values:
            if isinstance(v, ast.Constant):
                text += str(v.value)
            elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and v.value.id in names \
                    and names[v.value.id][0] in ("i", "s"):
                text += str(names[v.value.id][1])
            else:
                raise Unknown(f"cannot tell the key {ast.unparse(node)}")
        return text
    raise Unknown(f"cannot tell the key {ast.unparse(node)}")


def _value(node, names):
    exact = ast.unparse(node)
    if exact in names:
        return names[exact]
    if isinstance(node, ast.Name):
        raise Unknown(f"'{node.id}' is not an array the function held")
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        kind, shape = _value(node.value.value, names)           # x.shape[-1]: a size
        key = _key(node.slice, names)
        if kind == "a" and isinstance(key, int) and -len(shape) <= key < len(shape):
            return ("i", shape[key])
        raise Unknown(f"cannot tell '{exact}'")
    if isinstance(node, ast.Subscript):
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(index) == 1 and not _is_basic(index[0]):
            key = _key(index[0], names)
            if isinstance(key, str):
                flat = f'{ast.unparse(node.value)}["{key}"]'
                if flat in names:
                    return names[flat]
                raise Unknown(f"{ast.unparse(node.value)} held no entry \"{key}\"")
        kind, shape = _value(node.value, names)
        if kind == "a":
            return ("a", _indexed(shape, index, names, exact))
        raise Unknown(f"'{exact}' indexes no array")
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return ("a", ())
    if isinstance(node, ast.Attribute):
        if node.attr in ("size", "ndim"):
            kind, _ = _value(node.value, names)
            if kind == "a":
                return ("a", ())
        if node.attr == "T":
            kind, shape = _value(node.value, names)
            if kind == "a":
                return ("a", tuple(reversed(shape)))
        raise Unknown(f"'{exact}' was not recorded")
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.MatMult)):
        left, right = _value(node.left, names), _value(node.right, names)
        if left[0] == right[0] == "a":
            return ("a", _result_shape(left[1], right[1], isinstance(node.op, ast.MatMult), exact))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in REDUCTIONS:
        kind, shape = _value(node.func.value, names)
        options = {k.arg: k.value for k in node.keywords}
        axis, keep = options.get("axis"), options.get("keepdims")
        try:
            axis = None if axis is None else int(ast.literal_eval(axis))
            keep = bool(ast.literal_eval(keep)) if keep is not None else False
        except ValueError:
            raise Unknown(f"cannot tell the axis of '{exact}'") from None
        if kind == "a":
            if axis is None:
                return ("a", (1,) * len(shape) if keep else ())
            axis %= len(shape)
            return ("a", shape[:axis] + ((1,) if keep else ()) + shape[axis + 1:])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
        kind, shape = _value(node.args[0], names)
        if kind == "a" and shape:
            return ("i", shape[0])
    raise Unknown(f"'{exact}' is not an array the function held")


def _is_basic(node):
    """An index that keeps NumPy's basic indexing: `:`, `None`, `...`, a number."""
    return (isinstance(node, ast.Slice) or (isinstance(node, ast.Constant) and (node.value is None or node.value is Ellipsis
            or isinstance(node.value, int))) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant)))


def _indexed(shape, index, names, what):
    """The shape of x[index] for basic indexing: a number or a loop variable drops an axis,
    `:` keeps it, `None` adds a 1, `...` stands for the axes not named."""
    fill = len(shape) - sum(1 for i in index if not (isinstance(i, ast.Constant) and i.value in (None, Ellipsis)))
    out, axis = [], 0
    for i in index:
        if isinstance(i, ast.Constant) and i.value is Ellipsis:
            out += shape[axis:axis + fill]
            axis += fill
        elif isinstance(i, ast.Constant) and i.value is None:
            out.append(1)
        elif isinstance(i, ast.Slice):
            lower, upper = _bound(i.lower, names), _bound(i.upper, names)
            if i.step or lower is False or upper is False:
                raise Unknown(f"'{what}' slices a part whose length the recording does not tell")
            out.append(len(range(*slice(lower, upper).indices(shape[axis]))))
            axis += 1
        else:
            axis += 1                      # one position: 0, t, i
        if axis > len(shape):
            raise Unknown(f"'{what}' has more indices than {_fmt(shape)} has axes")
    return tuple(out) + tuple(shape[axis:])


def _bound(node, names):
    """A slice bound: None (left out), an int (a number, or a recorded int such as
    `cfg.width`), or False when the recording cannot tell it (`i*dk`, with i a loop index)."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _bound(node.operand, names)
        return False if inner is None or inner is False else -inner
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        left, right = _bound(node.left, names), _bound(node.right, names)
        if left is None or left is False or right is None or right is False:
            return False
        return {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right}[type(node.op)]
    kind, value = names.get(ast.unparse(node), ("?", None))
    return value if kind == "i" else False


def _result_shape(a, b, matmul, what):
    """NumPy's result shape of a @ b (matmul) or a + b (broadcast); Unknown if they do not fit."""
    if matmul:
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            raise Unknown(f"'{what}' does not multiply ({_fmt(a)} @ {_fmt(b)})")
        return _result_shape(a[:-2], b[:-2], False, what) + (a[-2], b[-1])
    out = []
    for x, y in zip(reversed((1,) * (len(b) - len(a)) + tuple(a)), reversed((1,) * (len(a) - len(b)) + tuple(b))):
        if x != y and 1 not in (x, y):
            raise Unknown(f"'{what}' does not broadcast ({_fmt(a)} and {_fmt(b)})")
        out.append(max(x, y))
    return tuple(reversed(out))


def names_own(code: str, locals_) -> bool:
    """Does `code` speak of the function's own names only (its arguments and locals, what it
    returned, or a callee's `NAME (inside FUNCTION)`)? Only such a row can be checked against
    the function's run; a row in words ("not named in the code") or about another function's
    arrays is the author's explanation."""
    if re.fullmatch(r"(.+?)\s*\(inside\s+[\w.]+\)", code.strip()):
        return True
    for part in _top_level_parts(code):
        if re.fullmatch(r"return(\[\d+\])*(\[\"\w+\"\])*", part):
            continue
        try:
            tree = ast.parse(part, mode="eval")
        except SyntaxError:
            return False
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        if any(not (isinstance(c.func, ast.Name) and c.func.id == "len")
               and not (isinstance(c.func, ast.Attribute) and c.func.attr in REDUCTIONS) for c in calls):
            return False          # causal_mask(T), params[table_name(cfg)]: a call the recording cannot redo
        called = {id(c.func) for c in calls}
        used = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called]
        if not used or any(n not in locals_ for n in used):
            return False
    return True


def declared_shapes(text: str) -> list | None:
    """`'(B, T)'` -> [("B", "T")]; `'(d, F) and (F,)'` -> [("d", "F"), ("F",)]; None for a
    shape in words (`scalar`, `same as θ`)."""
    from site_builder.gather.shape_syntax import parse_shape
    pieces = [p.strip() for p in re.split(r"\s+and\s+|\s*;\s*", text.strip())]
    if not pieces or not all(re.fullmatch(r"\([^()]*\)", p) for p in pieces):
        return None
    return [parse_shape(p) for p in pieces]


def _axis_names(axis):
    return re.findall(r"[A-Za-z_]\w*", axis)


def _axis_value(axis, sizes):
    """The size of one declared axis (`T`, `4`, `N - n_val`, `d/h`), or None if a letter in
    it has no size."""
    if axis.isdigit():
        return int(axis)
    if not re.fullmatch(r"[\w\s+\-*/]+", axis) or any(n not in sizes for n in _axis_names(axis)):
        return None
    expr = re.sub(r"[A-Za-z_]\w*", lambda m: str(sizes[m.group(0)][0]), axis).replace("/", "//")
    return eval(expr, {"__builtins__": {}}, {})      # digits and + - * // only, checked above


@dataclasses.dataclass
class Row:
    """One symbol row to check: where it is, its code, its declared shape text."""
    line: int
    code: str
    declared: str
    tex_name: str = ""


def config_sizes(names: dict, data: dict, project) -> dict:
    """{letter: (size, where)} of the config sizes the example ran at: the fields the
    project's `configs[].axes` gives a letter, from a config the function held (its `cfg`),
    else from the example's data["config"]; plus data["lengths"]. The letters of a call's
    lengths (`project.lengths`) are never a config field's size."""
    from site_builder.run.shapes import sizes_of
    out = {}
    for name, (kind, value) in names.items():
        spec = project.config_spec(value) if kind == "c" else None
        for fname, letter in (spec.axes.items() if spec else ()):
            entry = names.get(f"{name}.{fname}")
            if letter not in project.lengths and entry and letter not in out:
                out[letter] = (entry[1], f"{name}.{fname}")
        if out:
            break                   # the first documented config it held (an optimizer's fields name no size)
    config = data.get("config") if isinstance(data, dict) else None
    if config is not None and dataclasses.is_dataclass(config):
        for letter, (field, n) in sizes_of(config, project.axes_for(config)).items():
            if letter not in project.lengths:
                out.setdefault(letter, (n, f"the example's config.{field}"))
    lengths = data.get("lengths") if isinstance(data, dict) else None
    for letter, n in (lengths.items() if isinstance(lengths, dict) else ()):
        if isinstance(n, (int, np.integer)):
            out.setdefault(letter, (int(n), "the example's data['lengths']"))
    return out


def check_rows(rows: list, names: dict, calls: dict, data: dict, function: str, sizes: dict | None = None,
               project=None):
    """Check each Row against one recording of a function ({name: entry}): an example's (its
    letters' sizes from the `project`'s axes, `config_sizes`), or the probe's (`from_probe`,
    with `sizes` its letters); `function` names that run in the messages ("the example
    batches:first_batch's run of pkg.data.get_batch"). Returns ({line: message} for rows
    that disagree, {lines checked}, {line: why not} for rows with a shape that this
    recording could not check)."""
    if sizes is None and project is None:
        raise TypeError("check_rows needs the letters' sizes or the project whose configs give them")
    sizes = dict(sizes) if sizes is not None else config_sizes(names, data, project)
    evaluated = {}
    unknown = {}
    for row in rows:
        try:
            evaluated[row.line] = evaluate(row.code, names, calls)
        except Unknown as e:
            unknown[row.line] = str(e)
    # letters of scalar rows: `B` with code opts.batch_size
    for row in rows:
        got = evaluated.get(row.line)
        if row.tex_name and re.fullmatch(r"[A-Za-z]\w*", row.tex_name) and got and len(got) == 1 \
                and got[0][0] == "i" and row.tex_name not in sizes:
            sizes[row.tex_name] = (got[0][1], f"'{row.code}'")
    # the module constants the function read (MAX_LEN)
    for recorded in [names] + list(calls.values()):
        for name, (kind, value) in recorded.items():
            if kind == "i" and name.isupper():
                sizes.setdefault(name, (value, f"{name} in the code"))
    # the rest: the first row that uses a letter alone on an axis
    plans = []
    for row in rows:
        shapes = declared_shapes(row.declared)
        got = evaluated.get(row.line)
        if shapes is None or got is None:
            continue
        if len(shapes) == 1 and len(got) > 1:
            shapes = shapes * len(got)
        if len(shapes) != len(got) or any(kind != "a" for kind, _ in got):
            plans.append((row, shapes, got))
            continue
        for want, (_, shape) in zip(shapes, got):
            if len(want) == len(shape):
                for axis, n in zip(want, shape):
                    if re.fullmatch(r"[A-Za-z]\w*", axis) and axis not in sizes:
                        sizes[axis] = (n, f"'{row.code}' at line {row.line}")
        plans.append((row, shapes, got))
    wrong, checked = {}, set()
    for row, shapes, got in plans:
        if len(shapes) != len(got):
            unknown[row.line] = f"it declares {len(shapes)} shapes for {len(got)} names"
            continue
        if any(kind != "a" for kind, _ in got):
            what = ", ".join(format_entry(e) for e in got)
            wrong[row.line] = (f"declared {row.declared} for '{row.code}', but in {function} "
                               f"it is {what}")
            continue
        problems, complete = [], True
        for want, (_, shape) in zip(shapes, got):
            if len(want) != len(shape):
                problems.append(f"{_fmt(shape)} has {len(shape)} axes, not {len(want)}")
                continue
            for i, (axis, n) in enumerate(zip(want, shape)):
                size = _axis_value(axis, sizes)
                if size is None:
                    complete = False
                elif size != n:
                    whence = "; ".join(f"{x} = {sizes[x][0]} from {sizes[x][1]}" for x in _axis_names(axis) if x in sizes)
                    problems.append(f"axis {i} is {n}, not {axis}" + (f" ({whence})" if whence else ""))
        if problems:
            wrong[row.line] = (f"declared {row.declared} for '{row.code}', but {function} "
                               f"gives {' and '.join(_fmt(s) for _, s in got)}: " + "; ".join(problems))
        elif complete:
            checked.add(row.line)
        else:
            unknown[row.line] = "a letter of it has no size in the example's run"
    return wrong, checked, unknown


def _fmt(shape):
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def format_entry(entry):
    kind, value = entry
    return {"a": lambda: f"an array {_fmt(value)}", "i": lambda: f"the int {value}",
            "s": lambda: f"the text {value!r}", "c": lambda: f"a {value}"}[kind]()


# Names a NumPy package gives what is no array; so is any name ending in cfg or config.
NOT_ARRAYS = {"params", "grads", "rng", "generator", "seed",
              "path", "out_dir", "run_dir", "checkpoint", "opt", "optimizer", "state", "text", "prompt"}
CONFIG_NAME = re.compile(r"\w*(cfg|config)")


def array_params(source_lines: list) -> tuple[list, list]:
    """(parameters without a default that take an array, those that take something else) of
    the function whose source lines these are. An annotation decides where there is one
    (`np.ndarray` is an array; `dict`, `Path`, `str`, a config class, `Generator` are not);
    else the name (params, rng, path, a name ending in cfg or config, ... are not arrays)."""
    import textwrap
    tree = ast.parse(textwrap.dedent("\n".join(source_lines)))
    fn = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    args = fn.args.posonlyargs + fn.args.args
    required = args[:len(args) - len(fn.args.defaults)]
    required += [a for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is None]
    arrays, others = [], []
    for a in required:
        if a.arg in ("self", "cls"):
            continue
        note = ast.unparse(a.annotation) if a.annotation is not None else ""
        if "ndarray" in note or "ArrayLike" in note:
            arrays.append(a.arg)
        elif note or a.arg in NOT_ARRAYS or CONFIG_NAME.fullmatch(a.arg):
            others.append(a.arg)
        else:
            arrays.append(a.arg)
    return arrays, others


def from_probe(table: dict, sizes: dict | None = None) -> tuple[dict, dict]:
    """The probe's shapes ({qualname: {name: ShapeInfo}}) as a recording at the probe's
    sizes, where every letter has its own size, and those sizes: ({qualname: {name: entry}},
    {letter: (size, where)}). `sizes` defaults to the table's own (`ShapeTable.probe_sizes`).
    Axes the probe could not name are left out."""
    from site_builder.gather.shape_syntax import parse_shape
    sizes = getattr(table, "probe_sizes", {}) if sizes is None else sizes
    calls = {}
    for qualname, infos in table.items():
        names = {}
        for name, info in infos.items():
            axes = parse_shape(info.symbolic)
            if info.ambiguous or not all(a.isdigit() or a in sizes for a in axes):
                continue
            names[name] = ("a", tuple(int(a) if a.isdigit() else sizes[a] for a in axes))
        calls[qualname] = names
    return calls, {sym: (n, "the probe's sizes") for sym, n in sizes.items()}


# ------------------------------------------------- a shapes block sized from an example's run

def run_letters(names: dict, data: dict, project, scalar_rows=()) -> dict:
    """{letter: (what it stands for, size)} an example's recording of one function ({name:
    entry}) gives letters to: the concept's scalar symbol rows (`B` with `code: batch_size`,
    evaluated on the recording), then the config sizes (`config_sizes`: the config the function
    held, the example's data["config"] and data["lengths"]). scalar_rows: (letter, code) pairs."""
    out = {}
    for letter, code in scalar_rows:
        try:
            got = evaluate(code, names, {})
        except Unknown:
            continue
        if len(got) == 1 and got[0][0] == "i" and letter not in out:
            out[letter] = (code, got[0][1])
    words = getattr(project, "lengths", {}) or {}
    for letter, (n, where) in config_sizes(names, data, project).items():
        meaning = words.get(letter, letter) if "lengths" in where else where.rpartition(".")[2]
        out.setdefault(letter, (meaning, n))
    return out


def run_shape_infos(names: dict, letters: dict, function: str, ref: str) -> dict:
    """{name: ShapeInfo} of every array an example's run of `function` held, each axis named by
    the one letter of `letters` of its size. One run cannot tell a coincidence from a letter
    (the probes run twice for that): an axis whose size two letters share, or none, is printed
    as the number, and the first is `ambiguous`."""
    from site_builder.gather.shape_syntax import format_shape
    from site_builder.run.shapes import ShapeInfo
    by_size = {}
    for letter, (_, n) in letters.items():
        by_size.setdefault(n, []).append(letter)
    out = {}
    for name, (kind, shape) in names.items():
        if kind != "a":
            continue
        axes, ambiguous, legend = [], [], []
        for i, n in enumerate(shape):
            found = by_size.get(n, [])
            if len(found) == 1:
                axes.append(found[0])
                entry = (found[0], letters[found[0]][0], n)
                if entry not in legend:
                    legend.append(entry)
            else:
                axes.append(str(n))
                if found:
                    ambiguous.append(i)
        out[name] = ShapeInfo(format_shape(axes), tuple(shape), format_shape(shape), name=name, function=function,
                              ambiguous=tuple(ambiguous), probe=f"the example {ref}", legend=tuple(legend))
    return out
