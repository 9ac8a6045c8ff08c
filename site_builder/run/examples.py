"""Stage 4: run the content's examples and turn their arrays into display blocks.

An example is a plain Python function in `content/examples/<module>.py` that calls the real
package (usually through `trace_locals`, which records each line's locals) and returns an
`ExampleResult`: a list of blocks (a step table, a matrix, a gradient-check table, a
stepper) plus a provenance label saying which function, config and seed produced it. The
helpers here only format; every number comes from the documented code.

Examples are imported from their file path, so content needs no package structure. An
example that raises becomes a Problem naming the example and the package's line that raised.
"""
import ast
import collections
import importlib.util
import inspect
import sys
from functools import lru_cache
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from site_builder.base.cache import digest
from site_builder.run.qualnames import resolve_qualname

DECIMALS = 4
# From 2**53 on a float holds no fraction, and 4 decimals of 1e161 are 165 digits of which 17 are
# its own: such a number is printed f"{x:.4e}" (static/js/replay-views.js fmtNumber follows).
FIXED_BELOW = 2.0 ** 53


@dataclass
class ExampleResult:
    blocks: list
    source: str = ""                      # where the numbers came from: function, config, seed
    data: dict = field(default_factory=dict)   # raw values, for tests and interactive widgets
    # filled by the runner, not the example: {qualname: {name: entry}} of each function of the package's
    # first call in this run (site_builder/run/example_shapes.py)
    shapes: dict = field(default_factory=dict)
    # filled by the runner: the kinds of training run it read (the kinds of the hook training_runs)
    runs: tuple = ()


def fmt_number(x):
    x = float(x)
    if x == 0:
        return "0.0000"                   # also turns -0.0 into 0
    if abs(x) >= FIXED_BELOW:
        return f"{x:.{DECIMALS}e}"
    return f"{x:.{DECIMALS}f}"


def fmt_array(a):
    """A value as the page prints it: 4 decimals, nested brackets like NumPy."""
    a = np.asarray(a)
    if a.ndim == 0:
        return fmt_number(a)
    return "[" + ", ".join(fmt_array(x) for x in a) + "]"


def fmt_plain(a):
    """Like fmt_array, but a boolean array (a mask) as True / False: what steps_table prints."""
    a = np.asarray(a)
    if a.dtype != bool:
        return fmt_array(a)
    return str(bool(a)) if a.ndim == 0 else "[" + ", ".join(fmt_plain(x) for x in a) + "]"


def config_fields(cfg) -> dict:
    """{field: value} of a config: its to_dict() if it has one, else its dataclass fields."""
    return cfg.to_dict() if hasattr(cfg, "to_dict") else asdict(cfg)


def config_label(cfg):
    """`Config(field=value, ...)`, as a provenance label names the config an example ran at."""
    fields = ", ".join(f"{k}={v}" for k, v in config_fields(cfg).items() if k != "dtype")
    return f"{type(cfg).__name__}({fields})"


def step_of(trace, name):
    """The last step that bound or changed `name`, or None if it is an argument never reassigned."""
    found = None
    for step in trace.steps:
        if name in step.changed:
            found = step
    return found


def value_of(trace, name):
    """A local's final value; 'return' and 'return[i]' name the returned value."""
    if name == "return":
        return trace.result
    if name.startswith("return["):
        return trace.result[int(name[7:-1])]
    for step in reversed(trace.steps):
        if name in step.locals:
            return step.locals[name]
    if name in trace.arguments:
        return trace.arguments[name]
    raise KeyError(f"{trace.function} has no local named '{name}'")


def nth_change(trace, name, n=1):
    """The n-th step (1-based) that bound or changed `name`: for code that works in place
    (`Xhat = np.multiply(Xc, s, out=Xc)` changes Xc; a score matrix masked, then scaled, changes twice)."""
    found = [s for s in trace.steps if name in s.changed]
    if not 0 < n <= len(found):
        raise KeyError(f"{trace.function} changes '{name}' {len(found)} time(s), not {n}")
    return found[n - 1]


def value_at(trace, name, n=None):
    """`name`'s value: its final value (n None), as passed in (n = 0), or after the n-th line
    that changed it; 'return' and 'return[i]' name the returned value."""
    if n is None or name.startswith("return"):
        return value_of(trace, name)
    if n == 0:
        return trace.arguments[name]
    return nth_change(trace, name, n).locals[name]


def code_line(trace, name, n=None):
    """(line, code) of the statement that produced `name` (its n-th change, if n is given);
    arguments (and n = 0) point at the def line."""
    if name.startswith("return"):
        last = trace.steps[-1]
        return last.line, last.code
    step = step_of(trace, name) if n is None else (None if n == 0 else nth_change(trace, name, n))
    if step is None:                      # an argument: point at the def line
        lines, start = _traced_source(trace)
        return start, lines[0].strip()
    return step.line, step.code


def steps_table(trace, rows):
    """A step table: one row per (label, local name), with the line that computed it and its
    value. A row may also be (label, name, n), to show `value_at(trace, name, n)` (the argument
    as passed for n = 0, the n-th change for code that works in place), or a row made by
    `step_row` (any step, any value text)."""
    out, shapes = [], {}
    for row in rows:
        if isinstance(row, dict):
            out.append(row)
            continue
        label, name, n = (tuple(row) + (None,))[:3]
        n = None if n == "return" else n
        line, code = code_line(trace, name, n)
        value = value_at(trace, name, n)
        if isinstance(value, np.ndarray):
            shapes[name] = tuple(int(x) for x in value.shape)     # the page checks declared shapes on it
        out.append(dict(label=label, name=name, line=line, code=code, value=fmt_plain(value)))
    return dict(kind="steps", file=trace.file, function=trace.function, rows=out, shapes=shapes)


def backward_inputs(result):
    """A backward's inputs after its forward returned `result`, `(outputs..., cache)`: a
    gradient of ones for each output, then the cache (`x_backward(*backward_inputs(r))`)."""
    *outputs, cache = result
    return [np.ones_like(y) for y in outputs] + [cache]


def step_row(step, label, value):
    """A steps_table row for one traced step (`for step in trace.steps`) and a value already
    formatted (a row of a larger array, a sentence)."""
    return dict(label=label, name="", line=step.line, code=step.code, value=value)


def matrix(name, array, caption=""):
    a = np.atleast_2d(np.asarray(array, dtype=float))
    return dict(kind="matrix", name=name, caption=caption, shape=str(tuple(np.shape(array))),
                rows=[[fmt_number(x) for x in row] for row in a])


def gradcheck_table(rows):
    """rows: (name, analytic, numeric). The gap is the largest absolute difference."""
    out = []
    for name, analytic, numeric in rows:
        gap = float(np.max(np.abs(np.asarray(analytic) - np.asarray(numeric))))
        out.append(dict(name=name, analytic=_rows(analytic), numeric=_rows(numeric), gap=f"{gap:.1e}"))
    return dict(kind="gradcheck", rows=out)


def table(headers, rows, caption=""):
    """A generic table; cells are strings (format numbers with fmt_number / fmt_array)."""
    return dict(kind="table", headers=list(headers), rows=[[str(c) for c in r] for r in rows], caption=caption)


def figure(svg, caption=""):
    """An SVG drawn by site_builder.render.plots from computed values."""
    return dict(kind="svg", svg=svg, caption=caption)


def _rows(a):
    a = np.asarray(a)
    return [fmt_array(r) for r in a] if a.ndim == 2 else [fmt_array(a)]


def _traced_source(trace):
    """(lines, first line) of the traced function: a function its example entered, whose text
    and first line are in the example's key already (site_builder/gather/inputs.py quiet_source)."""
    from site_builder.gather.inputs import quiet_source
    with quiet_source():
        return inspect.getsourcelines(resolve_qualname(trace.function))


def _statement(trace, step):
    """The syntax tree of the statement a step ran (all its lines)."""
    import textwrap
    lines, start = _traced_source(trace)
    text = "".join(lines[step.line - start:max(step.end_line, step.line) - start + 1])
    return ast.parse(textwrap.dedent(text)).body[0]


def _value_before(trace, k, name):
    """`name`'s value just before step k ran (its latest snapshot, else the argument)."""
    for step in reversed(trace.steps[:k]):
        if name in step.locals:
            return step.locals[name]
    return trace.arguments.get(name)


def line_input(trace, step, after):
    """(name, value) of what the statement of `step` reads that has the shape of `after`: the
    array the line turns into its result (same shape and dtype: a boolean mask is not it), e.g.
    Xkv for `K, _ = linear_forward(Xkv, ...)`.
    None when it reads none (`O = merge_heads(A @ Vh)` reads per-head arrays). A `return` that
    passes a local on unchanged reads what made that local. Two such arrays are an add or a
    mix: the step must name its terms."""
    k = trace.steps.index(step)
    tree = _statement(trace, step)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    read = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    after = np.asarray(after)
    shape = after.shape
    found = {}
    for name in dict.fromkeys(read):
        value = _value_before(trace, k, name)
        if name not in bound and isinstance(value, np.ndarray) and value.shape == shape and value.dtype == after.dtype:
            found[name] = value
    if isinstance(tree, ast.Return) and len(found) == 1:
        (name, value), = found.items()
        made = step_of(trace, name)
        if made is not None and np.array_equal(value, after):
            return line_input(trace, made, after)
    if len(found) > 1:
        raise ValueError(f"{trace.function}, line {step.line} reads {', '.join(found)}, each shaped like its "
                         f"result: give the step its terms, e.g. (label, name, {tuple(found)[:2]!r})")
    return next(iter(found.items()), None)


def stepper(trace, row, steps, note="", number=fmt_number):
    """A step-through of one row: steps are (label, name, terms) or (label, name, terms, says),
    where terms names the two arrays an add sums (or None) and `says` is one sentence on what
    the line does. Each step shows the row before and after its line. "Before" is what the line
    reads (`line_input`): at an add the stream being added to (the first term), and never the
    previous step's result unless the line reads it. `number` formats each number (a
    recording's slot_format, for a replayed stepper: site_builder/run/tape.py)."""
    def row_of(value):
        r = np.asarray(value)[row]
        return [number(r[j]) for j in range(len(r))]      # indexed, not iterated: a traced row stays traced
    out = []
    for label, name, terms, *says in steps:
        line, code = code_line(trace, name)
        after = np.asarray(value_of(trace, name))
        made = trace.steps[-1] if name.startswith("return") else step_of(trace, name)
        if terms:
            before = (terms[0], value_of(trace, terms[0]))
        else:
            before = line_input(trace, made, after) if made is not None else None
        step = dict(label=label, name=name, line=line, code=code, after=row_of(after),
                    before=row_of(before[1]) if before else None,
                    before_name=before[0] if before else None)
        if says:
            step["says"] = says[0]
        if terms:
            step["terms"] = [dict(name=t, row=row_of(value_of(trace, t))) for t in terms]
        out.append(step)
    return dict(kind="stepper", file=trace.file, function=trace.function, row=row, steps=out, note=note)


def load_example(root: Path, ref: str):
    """'block:ffn_forward_worked' -> the function in content/examples/block.py (a ref that
    names arguments, 'block:f(row=2)', names the same function: site_builder/gather/playground.py)."""
    module_name, _, func_name = ref.partition(":")
    func_name = func_name.partition("(")[0]
    path = root / "content" / "examples" / f"{module_name}.py"
    if not path.exists():
        raise LookupError(f"no example module content/examples/{module_name}.py")
    key = f"content_examples_{module_name}"
    module = sys.modules.get(key)
    if module is None or getattr(module, "__file__", None) != str(path):
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]            # half-built: a second lookup must import it again
            raise
    if not hasattr(module, func_name):
        raise LookupError(f"content/examples/{module_name}.py has no function '{func_name}'")
    return getattr(module, func_name)


@lru_cache(maxsize=4096)
def module_file(root: Path, dotted: str):
    """'pkg.ops' -> root/pkg/ops.py (or a package's __init__.py), if it is in one of the
    repository's packages: a folder at its root holding an __init__.py (the documented package,
    its tests, the builder). Found on disk, not in the project block: this module is imported by
    every example, so what it imports is an input of every example's result."""
    if not (root / dotted.split(".")[0] / "__init__.py").is_file():
        return None
    base = root.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


# File digest -> the names it imports. The build loads and saves it with its cache, so an
# unchanged file is not parsed again to compute example keys (parsing was most of their cost).
IMPORTS_MEMO: dict = {}


@lru_cache(maxsize=1024)
def _imports(path: Path, stamp) -> tuple:
    """The dotted names a file imports (stamp: its mtime and size, so an edit re-reads it)."""
    try:
        data = path.read_bytes()
    except OSError:
        return ()
    key = digest(data)
    if key not in IMPORTS_MEMO:
        IMPORTS_MEMO[key] = _parse_imports(data)
    return IMPORTS_MEMO[key]


def _parse_imports(data: bytes) -> tuple:
    try:
        tree = ast.parse(data.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxError, ValueError):
        return ()
    names = []
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return tuple(names)


# What holds statements: an import is a statement, and no expression holds one.
_BODIES = (ast.stmt, ast.excepthandler, ast.match_case)


def _statements(tree):
    """ast.walk's nodes (breadth first, in the same order) that are statements, visiting no
    expression: a third of the time of walking every node."""
    todo = collections.deque([tree])
    while todo:
        node = todo.popleft()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                todo.extend(v for v in value if isinstance(v, _BODIES))
        yield node


def _stamp(path: Path):
    st = path.stat()
    return st.st_mtime_ns, st.st_size


def dependency_files(root: Path, path: Path) -> list:
    """The file and every repository module it imports, transitively, sorted."""
    seen, todo = set(), [path]
    while todo:
        p = todo.pop()
        if p in seen or not p.exists():
            continue
        seen.add(p)
        for name in _imports(p, _stamp(p)):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):      # importing pkg.ops also runs pkg/__init__.py
                f = module_file(root, ".".join(parts[:i]))
                if f and f not in seen:
                    todo.append(f)
    return sorted(seen)
