"""The parameter table, from ``init_params`` and the decay rule.

Every row of a page's "Parameters" table (name, the line that creates it, shape, symbolic
shape, scalar count, how it starts, whether it decays) is read from the code here. What the
table must know of the project comes from its project block (site_builder/gather/project.py):
which ``init_params`` builds a config's parameters (``configs[].init_params``), the decay rule
(``decays``), the groups of the landing page's counts (``param_groups``) and the prefixes of
per-block names (``block_prefix``).

* ``init_params(cfg, rng)`` is run under :func:`site_builder.run.trace.trace_calls` (shapes
  only), together with the helper functions nested in it. The dict that is returned is
  found among the locals by its keys; a parameter's **line** is the first statement of
  ``init_params``'s own frame after which its key is in that dict. If the key was really
  added inside a nested helper, ``source_line`` and ``source_function`` point there, and that
  is the statement whose code is inspected.
* The **shape** is the returned array's; the **symbolic shape** comes from a second,
  untraced call at a probe config where every dimension has its own size
  (:func:`site_builder.run.shapes.probe_config`), mapped back with
  :func:`site_builder.run.shapes.symbolize`.
* The **init** is decided from the value first ("ones", "zeros": exact, whatever the code
  says), then from the callee names in the expression that produced this key ("Xavier
  uniform" for ``xavier_uniform``, "normal, std 0.02" for ``standard_normal``/``normal``,
  the std evaluated from the expression, e.g. ``* cfg.init_std``), else "unknown". When a
  statement assigns several keys (``p[a], p[b] = xavier_uniform(...), np.zeros(F)``) the
  targets are paired with their values through the AST, the subscript being evaluated in the
  step's locals, so each key is judged by its own expression.
* **decays** is the project's ``decays(name)``: the same question its optimizer asks; None
  (the table says "n/a") when the project names no decay rule.

Per-block names (with the prefix ``block{l}.``: ``block0.w``, ``block1.w``) are grouped into one
row per pattern (``block{l}.w``) with "per block" counts, but only when every member agrees on
line, shape, init and decay; otherwise each keeps its own row, so grouping can never hide a
difference. Without ``block_prefix`` every parameter is a row of its own. Groups for
:func:`count_by_group` come from ``param_groups``; a name no group claims is counted under
"other", so the groups always sum to :func:`total_count`.

Trade-off: tracing ``init_params`` costs a few milliseconds and draws the same random
numbers as a plain call (the trace only watches), so the table matches the code exactly;
the price is that the creating line is found by watching keys appear, so an
``init_params`` that builds its dict in a function outside its own module would only be
located at the calling line (with its init judged from the value, or "unknown").
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import linecache
import re
from dataclasses import dataclass
from types import CodeType

import numpy as np

from site_builder.gather.project import resolve
from site_builder.run.shapes import check_distinct, probe_config, symbolize
from site_builder.gather.shape_syntax import format_shape
from site_builder.run.qualnames import REPO_ROOT, qualname_of, repo_relative, unwrap
from site_builder.run.trace import trace_calls

__all__ = ["ParamRow", "param_rows", "total_count", "count_by_group", "block_pattern", "init_for", "NoInitParams"]


@dataclass(frozen=True)
class ParamRow:
    """One row of the parameter table: one parameter, or one per-block pattern.

    ``pattern``: ``"block{l}.w"`` (or the name itself); ``names``: the parameters it stands for;
    ``per_block``; ``line``/``file``/``code``: the statement of ``init_params``'s own frame
    after which the (first) name exists; ``source_line``/``source_function``/``source_code``/
    ``source_file``: where the key is really assigned (the same statement unless a helper
    nested in ``init_params`` did it);
    ``shape``/``shape_str``: at the config; ``symbolic``: ``"(d, F)"``; ``count``: scalars of
    one parameter (so "per block" for a pattern); ``symbolic_count``: ``"d × F"``; ``init``:
    "ones", "zeros", "Xavier uniform", "normal, std 0.02" or "unknown"; ``decays``: from
    the project's decay rule (None without one); ``ambiguous``: axes of the shape that match no single symbol."""
    pattern: str
    names: tuple
    per_block: bool
    line: int
    file: str
    code: str
    shape: tuple
    shape_str: str
    symbolic: str
    count: int
    symbolic_count: str
    init: str
    decays: bool | None
    source_line: int
    source_function: str
    source_code: str
    source_file: str = ""
    ambiguous: tuple = ()

    @property
    def total(self) -> int:
        """Scalars over every name of the row."""
        return self.count * len(self.names)


@functools.lru_cache(maxsize=16)
def _block_regex(prefixes: tuple) -> re.Pattern | None:
    """One regex for the per-block prefixes (`block{l}.` -> `block(?P<l>\\d+)\\.`): the prefix, the
    block index and the rest of the name; None without prefixes."""
    if not prefixes:
        return None
    alternatives = []
    for i, prefix in enumerate(prefixes):
        before, _, after = prefix.partition("{l}")
        alternatives.append(f"(?P<pre{i}>{re.escape(before)})(?P<l{i}>\\d+)(?P<post{i}>{re.escape(after)})")
    return re.compile(f"^(?:{'|'.join(alternatives)})(?P<rest>.+)$")


def _block_parts(name: str, prefixes):
    """(the name's prefix as a pattern, `block{l}.`, and the rest), or None for a name of no block."""
    regex = _block_regex(tuple(prefixes))
    m = regex.match(name) if regex else None
    if not m:
        return None
    i = next(i for i in range(len(prefixes)) if m[f"l{i}"] is not None)
    return f"{m[f'pre{i}']}{{l}}{m[f'post{i}']}", m["rest"]


def block_pattern(name: str, prefixes=()) -> tuple[str, bool]:
    """With the prefix `block{l}.`: ``"block1.w"`` -> ``("block{l}.w", True)``; ``"norm_g"`` -> ``("norm_g", False)``."""
    parts = _block_parts(name, prefixes)
    return (parts[0] + parts[1], True) if parts else (name, False)


# --------------------------------------------------------------------------- the project's rules

class NoInitParams(LookupError):
    """The project block names no init_params for a config (or no config at all)."""


def init_for(cfg, project):
    """The init_params(cfg, rng) of cfg's class: its `configs[].init_params`. NoInitParams, naming
    the setting, for no config, or a class the project block does not list or lists without one."""
    if cfg is None:
        raise NoInitParams(f"{project.where('configs')}: project.configs names no config class, so there is no "
                           "config to build the parameters of (add one with its init_params)")
    spec = project.config_spec(f"{type(cfg).__module__}.{type(cfg).__qualname__}") or \
        project.config_spec(type(cfg).__name__)
    if spec is None or not spec.init_params:
        raise NoInitParams(f"{project.where('configs')}: project.configs names no init_params for {type(cfg).__name__}"
                          " (add `init_params: pkg.module.init_params` to its entry)")
    return resolve(spec.init_params, project, f"configs[{project.configs.index(spec)}].init_params")


def _decay_rule(project):
    """decays(name) -> bool from the `decays` setting, or None without it."""
    return resolve(project.decays, project, "decays") if project.decays else None


def _nested_codes(code: CodeType, qual: str, out: dict, depth=0, depths=None):
    out[code] = qual
    if depths is not None:
        depths[code] = depth
    for const in code.co_consts:
        if isinstance(const, CodeType) and not const.co_name.startswith("<"):
            inner = getattr(const, "co_qualname", None)
            module = qual.rsplit(".", len(getattr(code, "co_qualname", code.co_name).split(".")))[0]
            name = f"{module}.{inner}" if inner else f"{qual}.<locals>.{const.co_name}"
            _nested_codes(const, name, out, depth + 1, depths)
    return out


def _statements(filename: str) -> dict[int, ast.stmt]:
    """{first line: statement} for one file, read fresh (one parse per param_rows call)."""
    linecache.checkcache(filename)
    table: dict[int, ast.stmt] = {}
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return table
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            table.setdefault(node.lineno, node)   # an inner statement on the same line (if x: y)
    return table                                 # must not replace the outer one


def _callees(node) -> list[str]:
    names = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            if isinstance(f, ast.Name):
                names.append(f.id)
            elif isinstance(f, ast.Attribute):
                names.append(f.attr)
    return names


def _eval(node, namespace):
    try:
        code = compile(ast.Expression(body=node), "<param>", "eval")
        return eval(code, {"__builtins__": {}}, namespace)   # the package's code: names and + only
    except Exception:
        return _EVAL_FAILED


_EVAL_FAILED = object()


def _key_values(stmt, dict_name: str, namespace) -> dict:
    """{key: value expression} for the keys a statement puts into ``dict_name``, where the
    AST pairs them up; {} when it cannot."""
    out = {}

    def subscript_key(target):
        if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                and target.value.id == dict_name):
            key = _eval(target.slice, namespace)
            return None if key is _EVAL_FAILED else key
        return None

    if isinstance(stmt, ast.Assign):
        value = stmt.value
        for target in stmt.targets:
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
                    and len(target.elts) == len(value.elts):
                for t, v in zip(target.elts, value.elts):
                    key = subscript_key(t)
                    if key is not None:
                        out[key] = v
            else:
                key = subscript_key(target)
                if key is not None:
                    out[key] = value
                elif isinstance(target, ast.Name) and target.id == dict_name \
                        and isinstance(value, ast.Dict):
                    for k, v in zip(value.keys, value.values):
                        if k is None:
                            continue
                        key = _eval(k, namespace)
                        if key is not _EVAL_FAILED:
                            out[key] = v
    return out


def _std_of(expr, namespace, cfg):
    """The std of a normal draw in expr: the other factor of ``standard_normal(...) * s``,
    or the scale of ``normal(loc, scale, size)``; else None."""
    for sub in ast.walk(expr):
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Mult):
            for this, other in ((sub.left, sub.right), (sub.right, sub.left)):
                if "standard_normal" in _callees(this):
                    v = _eval(other, namespace)
                    if isinstance(v, (int, float, np.floating, np.integer)):
                        return float(v)
        if isinstance(sub, ast.Call) and isinstance(sub.func, (ast.Attribute, ast.Name)) \
                and (getattr(sub.func, "attr", None) or getattr(sub.func, "id", None)) == "normal":
            arg = sub.args[1] if len(sub.args) > 1 else next(
                (k.value for k in sub.keywords if k.arg == "scale"), None)
            if arg is not None:
                v = _eval(arg, namespace)
                if isinstance(v, (int, float, np.floating, np.integer)):
                    return float(v)
    return None


def _init_kind(value: np.ndarray, callees: list[str], std) -> str:
    if value.size and np.all(value == 1):
        return "ones"
    if value.size and np.all(value == 0):
        return "zeros"
    if "xavier_uniform" in callees:
        return "Xavier uniform"
    if "standard_normal" in callees or "normal" in callees:
        return f"normal, std {std:g}" if std is not None else "normal"
    return "unknown"


def _dict_name(trace, keys) -> str | None:
    """The local of the frame that holds the dict being returned (found by its keys)."""
    final = trace.final_locals()
    for name, value in final.items():
        if isinstance(value, dict) and list(value.keys()) == keys:
            return name
    for name, value in final.items():
        if isinstance(value, dict) and set(value.keys()) == set(keys):
            return name
    return None


def _first_appearance(trace, name, wanted: set) -> dict:
    """{key: step} for keys of ``wanted`` that appear in local ``name`` during this trace."""
    start = trace.arguments.get(name)
    seen = set(start) if isinstance(start, dict) else set()
    found = {}
    for step in trace.steps:
        value = step.locals.get(name)
        if not isinstance(value, dict):
            continue
        for key in value:
            if key in wanted and key not in seen and key not in found:
                found[key] = step
        seen |= set(value)
    return found


# ------------------------------------------------------------------------------ rows

def _raw_rows(cfg, init, seed, decays):
    fn = unwrap(init)
    codes = _nested_codes(fn.__code__, qualname_of(fn), {})
    own = fn.__code__
    result, traces = trace_calls(init, codes, cfg, np.random.default_rng(seed), snapshot="shapes")
    if not isinstance(result, dict):
        raise TypeError(f"{qualname_of(fn)} returned {type(result).__name__}, not a dict of arrays")
    keys = list(result)
    init_qual = codes[own]
    outer = traces[init_qual][0]
    holder = _dict_name(outer, keys)
    if holder is None:
        raise LookupError(f"no local of {init_qual} holds the dict it returns")

    outer_steps = _first_appearance(outer, holder, set(keys))
    # Where each key was really assigned: the innermost traced call (latest to start) that saw it appear.
    source: dict[str, tuple] = {}
    for qual, ts in traces.items():
        for t in ts:
            if t is outer:
                continue
            for key, step in _first_appearance(t, holder, set(keys)).items():
                if key not in source or t.call_index > source[key][0]:
                    source[key] = (t.call_index, qual, t, step)

    from site_builder.gather.project import load_project
    project = load_project(REPO_ROOT)
    pcfg, at_default, at_probe, _legend = probe_config(cfg, project.axes_for(cfg), project.probe_sizes)
    check_distinct(at_probe, "parameter probe")
    probe_params = init(pcfg, np.random.default_rng(seed))

    rows = []
    filename = own.co_filename
    parsed: dict[str, dict[int, ast.stmt]] = {}
    files = {q: c.co_filename for c, q in codes.items()}
    for key in keys:
        if key not in outer_steps:
            raise LookupError(f"{init_qual}: could not find the line that creates {key!r}")
        ostep = outer_steps[key]
        if key in source:
            _, squal, _trace, sstep = source[key]
            sfile = files.get(squal, filename)
        else:
            squal, sstep, sfile = init_qual, ostep, filename
        namespace = dict(sstep.locals)
        if sfile not in parsed:
            parsed[sfile] = _statements(sfile)
        stmt = parsed[sfile].get(sstep.line)
        expr = _key_values(stmt, holder, namespace).get(key) if stmt is not None else None
        node = expr if expr is not None else stmt
        callees = _callees(node) if node is not None else []
        value = np.asarray(result[key])
        std = _std_of(node, namespace, cfg) if node is not None else None
        shape = tuple(int(n) for n in value.shape)
        if key in probe_params:
            pshape = tuple(int(n) for n in np.shape(probe_params[key]))
            symbolic, ambiguous, _ = symbolize(pshape, shape, at_default, at_probe)
        else:
            symbolic, ambiguous = format_shape(shape), tuple(range(len(shape)))
        axes = [a.strip() for a in symbolic.strip("()").split(",") if a.strip()]
        rows.append(ParamRow(
            pattern=key, names=(key,), per_block=False, line=ostep.line,
            file=repo_relative(filename), code=ostep.code, shape=shape,
            shape_str=format_shape(shape), symbolic=symbolic, count=int(value.size),
            symbolic_count=" × ".join(axes) if axes else "1",
            init=_init_kind(value, callees, std), decays=bool(decays(key)) if decays else None,
            source_line=sstep.line, source_function=squal, source_code=sstep.code,
            source_file=repo_relative(sfile), ambiguous=ambiguous))
    return rows


def _group(rows: list[ParamRow], prefixes) -> list[ParamRow]:
    by_pattern: dict[str, list[ParamRow]] = {}
    order: list[str] = []
    for row in rows:
        pattern, per_block = block_pattern(row.pattern, prefixes)
        key = pattern if per_block else row.pattern
        if key not in by_pattern:
            by_pattern[key] = []
            order.append(key)
        by_pattern[key].append(row)
    out = []
    for key in order:
        members = by_pattern[key]
        first = members[0]
        same = all((m.line, m.shape, m.symbolic, m.init, m.decays, m.source_line)
                   == (first.line, first.shape, first.symbolic, first.init, first.decays,
                       first.source_line) for m in members)
        if key != first.pattern and same:
            out.append(dataclasses.replace(first, pattern=key, per_block=True,
                                           names=tuple(m.pattern for m in members)))
        else:
            out.extend(members)
    return out


def param_rows(cfg, project, init=None, *, grouped: bool = True, seed: int = 0) -> list[ParamRow]:
    """The parameter table of ``init(cfg, rng)`` (default: the init_params the project names for
    cfg's class, :func:`init_for`). ``grouped``: one row per per-block pattern (``block{l}.w``)
    instead of one per parameter. Rows are in the order ``init`` creates the parameters."""
    init = init or init_for(cfg, project)
    rows = _raw_rows(cfg, init, seed, _decay_rule(project))
    return _group(rows, project.block_prefixes) if grouped else rows


def total_count(cfg, project, init=None) -> int:
    """Number of scalars in every parameter of ``init(cfg, rng)``."""
    init = init or init_for(cfg, project)
    return int(sum(np.asarray(v).size for v in init(cfg, np.random.default_rng(0)).values()))


def count_by_group(cfg, project, init=None, quiet: bool = True) -> dict[str, int] | None:
    """{group label: scalars over every block}, in ``param_groups`` order, groups with no
    parameter left out; names no group claims go to "other" (all of them, without groups).
    Sums to :func:`total_count`.

    With ``quiet`` (what the build's landing page asks for) a package whose ``init_params``
    raises gives ``{}`` instead of the exception: the build runs the same function for the
    shape probes and the parameter tables, and reports the failure there, with the content
    line that asked and the line that raised; and a config the project names no
    ``init_params`` for gives None (the landing page then shows no table)."""
    try:
        init = init or init_for(cfg, project)
    except NoInitParams:
        if not quiet:
            raise
        return None
    except Exception:        # importing init_params raised: the package is broken, reported where it runs
        if not quiet:
            raise
        return {}
    try:
        params = init(cfg, np.random.default_rng(0))
        if not isinstance(params, dict):
            raise TypeError(f"init_params returned {type(params).__name__}, not a dict of arrays")
    except Exception:
        if not quiet:
            raise
        return {}
    counts = {label: 0 for _, label, _ in project.param_groups}
    counts["other"] = 0
    for name, value in params.items():
        parts = _block_parts(name, project.block_prefixes)
        per_block, rest = (True, parts[1]) if parts else (False, name)
        for regex, label, group_per_block in project.param_groups:
            if group_per_block == per_block and re.search(regex, rest):
                counts[label] += int(np.asarray(value).size)
                break
        else:
            counts["other"] += int(np.asarray(value).size)
    return {k: v for k, v in counts.items() if v}
