"""Tensor shapes at the documented config, with letters, from running the code.

A page says "Xn (T, d) (16, 32)". Neither half is typed by an author: this module runs the
documented package's own entry points under :func:`site_builder.run.trace.trace_calls` (shapes
only, first call of every function of the package), and

* reads the **concrete** shape of every array local (and every array in a dict local, and
  every returned array) at the **default** config, which is what the site documents;
* runs the same entry point again at a **probe** config where every axis letter has its own
  size (the project's ``probe_sizes``), and maps each axis of the probe shape back to the one
  letter of that size, which gives the **symbolic** shape ``(T, d)``.

Trade-offs, and why:

* **Probing instead of symbolic execution.** Running the real code twice is exact for
  whatever the code does (reshapes, broadcasting, ``keepdims``) and needs no simulation of NumPy.
  Its weak spot is an axis whose size is a *combination* of letters (``T + n``, ``B * T``)
  or a coincidence. Coincidences are made impossible by construction: the probe sizes are
  checked to be pairwise distinct and different from the small numbers code uses on its own
  (0, 1, 2). Combinations match no letter, so they come out as the number at the default
  config and the axis is reported in ``ShapeInfo.ambiguous``. An axis with the same size in
  both runs (the ``1`` of ``keepdims``) is a constant: it is printed as the number and is
  not ambiguous. Each inferred letter is also checked against the default run (the letter's
  default size must equal the concrete axis), so a wrong guess cannot pass silently.
* **First call per function.** A function called many times (a linear layer) is shown
  with the shapes of its first call. Pages that need another call's shapes show the caller's
  locals instead, which are also inferred.
* **The project names the probes; the builder runs them.** What must be code (the arguments
  of a call: parameters from an init function, ids, a prompt) is the hooks module's
  ``probes(config)`` (site_builder/gather/project.py), which lists each probe's entry point,
  its config and a function that makes the call's arguments at a config. What is generic is
  here: the probe config (each field the project's ``configs[].axes`` gives a letter set to
  that letter's probe size), the two runs, the mapping back to letters, the distinct-size
  checks and the failure messages. Without the hook nothing is probed (a concept's own
  ``probe:`` still is); a probe whose entry's module is not there is skipped. When several
  probes reach the same function, the first wins in :func:`infer_shapes`;
  :func:`infer_shapes_by_probe` keeps them apart.
* **Letters come from the config's field names, as the project maps them** (``width: d``),
  so a renamed field shows up as a missing letter instead of a wrong number, and the page
  prints "d = width = 32." from :func:`legend_text`.
* **Nothing is cached here, everything is plain data.** Results are frozen dataclasses of
  strings, ints and tuples: deterministic for a given source tree and picklable, so the
  build cache can store them.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from site_builder.gather.project import hook
from site_builder.gather.shape_syntax import format_shape, parse_shape
from site_builder.run.qualnames import module_functions, resolve_qualname
from site_builder.run.snapshots import Shape
from site_builder.run.trace import raising_location, trace_calls

__all__ = ["ShapeInfo", "Probe", "ProbeSetup", "ProbeError", "ProbeFailure", "ShapeTable", "INCIDENTAL_SIZES",
           "project_probes", "probe_setup", "available_probes", "probe_config", "symbolize", "check_distinct",
           "run_probe", "infer_shapes", "infer_shapes_by_probe", "check_declared", "declared_letters",
           "example_input_shape", "legend_text", "sizes_of", "sized_for_name", "at_config", "switches_apart"]

#: Sizes code produces on its own (keepdims axes, pairs): no letter may have them at the probe.
INCIDENTAL_SIZES = frozenset({0, 1, 2})

#: The keys of one probe the hook returns; the first three are required.
PROBE_KEYS = ("name", "entry", "config", "args", "lengths")


class ProbeError(RuntimeError):
    """A probe cannot be built or run (sizes collide, an argument cannot be filled)."""


@dataclass(frozen=True)
class ProbeFailure:
    """A probe whose setup or run raised (the package's code is broken, or the probe does not
    fit it): which probe, its entry point, the error, and the line that raised (``file`` and
    ``line`` repository-relative, ``None`` when no line of the package was on the stack).
    Plain data, so the build cache can keep it with the shapes."""
    probe: str
    entry: str
    error: str                  # "KeyError: 'w2'"
    file: str | None = None
    line: int | None = None
    code: str = ""              # the text of that line

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""

    def describe(self) -> str:
        """``the shape probe pkg.net.loss raised KeyError: 'w2' at pkg/layers.py:40
        (h = x @ params["w2"])``"""
        at = f" at {self.where}" + (f" ({self.code})" if self.code else "") if self.file else ""
        return f"the shape probe {self.entry} raised {self.error}{at}"


class ShapeTable(dict):
    """{qualname: {name: ShapeInfo}}, plus ``failures``: the probes that raised; ``order``: the
    probes' names in the order they ran (the first one's shapes of a function win);
    ``probe_sizes``: each letter's size in the probe runs. A probe that raises does not stop the
    others, nor the build: the pages that need its shapes report it with their own file and
    line (site_builder/render/pages/shape_blocks.py)."""

    def __init__(self, *args, failures=(), order=(), probe_sizes=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.failures = list(failures)
        self.order = tuple(order)
        self.probe_sizes = dict(probe_sizes or {})

    def with_declared(self, table: dict, errors: dict) -> "ShapeTable":
        """A copy with the functions of `table` (the probes concepts declare) that no probe
        reaches, and ``declared_errors``: {qualname: why its declared probe could not run}."""
        merged = ShapeTable(self, failures=self.failures, order=self.order, probe_sizes=self.probe_sizes)
        for qualname, infos in table.items():
            merged.setdefault(qualname, infos)
        merged.declared_errors = errors
        return merged


@dataclass(frozen=True)
class ShapeInfo:
    """The shape of one array of one function.

    ``symbolic``: ``"(T, d)"``, ``"(d,)"`` or ``"()"``; ``concrete``: the shape at the
    default config; ``concrete_str``: ``"(16, 32)"``. ``name``: the local's name, ``x["key"]``
    for an array in a dict local, ``return`` / ``return[0]`` / ``return[1]["Xhat"]`` for what
    the function returned; ``function``: qualname; ``line``: the line that last bound or
    changed it in the probe run (``None`` for an argument never rebound, or a return value);
    ``ambiguous``: axes whose size matched no letter (or several) although it differs between
    the two runs: they are printed as the default number; ``probe``: which probe produced it;
    ``legend``: ``(letter, meaning, size at default)`` for each letter used, in order."""
    symbolic: str
    concrete: tuple
    concrete_str: str
    name: str = ""
    function: str = ""
    line: int | None = None
    ambiguous: tuple = ()
    probe: str = ""
    legend: tuple = ()


@dataclass(frozen=True)
class ProbeSetup:
    """A probe ready to run: the entry's positional (and keyword) arguments at the default
    and at the probe config, and each letter's size at both; ``legend`` maps each letter to
    what it stands for (a config field, or words such as "source length")."""
    default_args: tuple
    probe_args: tuple
    symbols_at_default: dict
    symbols_at_probe: dict
    legend: dict = field(default_factory=dict)
    default_kwargs: dict = field(default_factory=dict)
    probe_kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Probe:
    """One probe the hooks name: ``entry`` is the dotted name of the function to run;
    ``config`` the config of its default run; ``args(config, sizes)`` the call's positional
    arguments (a tuple) or keyword arguments (a dict) at a config, ``sizes`` being each
    letter's size in that run; ``lengths`` the letters of a call's lengths, which no config
    field sizes (the project's ``lengths`` says what each is): {letter: size in the default
    run, or None for the probe size in both runs}."""
    name: str
    entry: str
    config: Any
    args: Callable
    lengths: dict = field(default_factory=dict)


# ------------------------------------------------------------------- the project's probes

def project_probes(root, project, config) -> list[Probe]:
    """The probes the hooks module's ``probes(config)`` returns ([] without that hook), for
    the documented ``config``. A malformed answer is a ProbeError naming the hook."""
    make = hook(root, project, "probes")
    if make is None:
        return []
    made = make(config)
    where = f"{project.hooks}: probes()"
    if not isinstance(made, (list, tuple)):
        raise ProbeError(f"{where} returned {type(made).__name__}, not a list of probes")
    out = []
    for i, entry in enumerate(made):
        if not isinstance(entry, dict) or not {"name", "entry", "config", "args"} <= set(entry) \
                or not set(entry) <= set(PROBE_KEYS) or not callable(entry["args"]):
            raise ProbeError(f"{where}: probe {i} is not a dict of name, entry, config, args(config, sizes) "
                             f"and optionally lengths (it has {', '.join(map(str, entry)) if isinstance(entry, dict) else type(entry).__name__})")
        out.append(Probe(str(entry["name"]), str(entry["entry"]), entry["config"], entry["args"],
                         dict(entry.get("lengths") or {})))
    return out


def _module_missing(entry: str) -> bool:
    """True when the module of ``entry`` (``pkg.mod`` of ``pkg.mod.fn``) is not there: a probe
    of code not written yet is skipped. A name that is no module (``pkg.mod.Class`` of a
    method) is not missing: resolving the entry says what is wrong with it."""
    try:
        return importlib.util.find_spec(entry.rpartition(".")[0]) is None
    except (ImportError, ValueError):
        return False


def check_distinct(sizes: dict[str, int], what: str = "probe") -> None:
    """Raise ProbeError unless the sizes are pairwise distinct and none is incidental."""
    seen: dict[int, str] = {}
    problems = []
    for sym, size in sizes.items():
        if size in INCIDENTAL_SIZES:
            problems.append(f"{sym} = {size} is a size code uses on its own "
                            f"({sorted(INCIDENTAL_SIZES)})")
        if size in seen:
            problems.append(f"{seen[size]} and {sym} are both {size}")
        seen.setdefault(size, sym)
    if problems:
        raise ProbeError(f"{what} sizes must be pairwise distinct: " + "; ".join(problems))


def _is_size(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def probe_config(cfg, axes: dict, sizes: dict):
    """The probe version of the dataclass config ``cfg``: every field ``axes`` ({field:
    letter}) names set to the probe size (``sizes``) of its letter. Returns ``(probe_cfg,
    letters_at_default, letters_at_probe, legend)``. An axis that is no field (a property
    such as a head width computed from two fields) is read back from both configs, never
    computed here. Where several fields share a letter, the legend names the first and the
    sizes are the last's (the project keeps them equal in the configs it probes)."""
    if not dataclasses.is_dataclass(cfg):
        raise ProbeError(f"probe_config needs a dataclass config, got {type(cfg).__name__}")
    names = {f.name for f in dataclasses.fields(cfg)}
    changes, legend = {}, {}
    for fname, sym in axes.items():
        if fname in names:
            if sym not in sizes:
                raise ProbeError(f"{type(cfg).__name__}.{fname} has the letter {sym}, which has no probe size: "
                                 f"add {sym} to project.probe_sizes")
            changes[fname] = sizes[sym]
    try:
        pcfg = dataclasses.replace(cfg, **changes)
    except Exception as e:
        raise ProbeError(f"cannot build the probe {type(cfg).__name__}({changes}): {e}") from e
    at_default, at_probe = {}, {}
    for fname, sym in axes.items():
        if fname in names or (_is_size(getattr(cfg, fname, None)) and _is_size(getattr(pcfg, fname, None))):
            at_default[sym] = getattr(cfg, fname)
            at_probe[sym] = getattr(pcfg, fname)
            legend.setdefault(sym, fname)
    return pcfg, at_default, at_probe, legend


def _call_arguments(made, probe: Probe) -> tuple[tuple, dict]:
    if isinstance(made, dict):
        return (), dict(made)
    if isinstance(made, tuple):
        return made, {}
    raise ProbeError(f"the arguments of the probe {probe.name!r} are {type(made).__name__}, "
                     "not a tuple (positional) or a dict (keyword)")


def probe_setup(probe: Probe, project) -> ProbeSetup | None:
    """The probe's arguments and letters at its default and its probe config; None when its
    entry's module is not there (skipped)."""
    if _module_missing(probe.entry):
        return None
    sizes = project.probe_sizes
    pcfg, at_default, at_probe, legend = probe_config(probe.config, project.axes_for(probe.config), sizes)
    words = {}
    for sym, default in probe.lengths.items():
        if sym not in sizes:
            raise ProbeError(f"the probe {probe.name!r} has the length {sym}, which has no probe size: "
                             f"add {sym} to project.probe_sizes ({project.where('probe_sizes')})")
        at_default[sym] = sizes[sym] if default is None else int(default)
        at_probe[sym] = sizes[sym]
        words[sym] = project.lengths.get(sym, sym)
    (dargs, dkw), (pargs, pkw) = (_call_arguments(probe.args(probe.config, dict(at_default)), probe),
                                  _call_arguments(probe.args(pcfg, dict(at_probe)), probe))
    return ProbeSetup(dargs, pargs, at_default, at_probe, {**words, **legend}, dkw, pkw)


def available_probes(probes: Iterable[Probe], project) -> dict[str, ProbeSetup]:
    """{name: setup} of every probe whose module exists, in order."""
    out = {}
    for probe in probes:
        setup = probe_setup(probe, project)
        if setup is not None:
            out[probe.name] = setup
    return out


# ------------------------------------------------------------------------ running

def _flatten(name: str, value, out: dict, line):
    if isinstance(value, Shape):
        out[name] = (tuple(int(n) for n in value), line)
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, Shape):
                key = f'"{k}"' if isinstance(k, str) else repr(k)
                out[f"{name}[{key}]"] = (tuple(int(n) for n in v), line)


def _shapes_of_trace(trace) -> dict[str, tuple[tuple, int | None]]:
    """{name: (shape, line of last change)} for one shapes-mode Trace."""
    last_line: dict[str, int] = {}
    latest: dict[str, Any] = dict(trace.arguments)
    for step in trace.steps:
        for name in step.changed:
            last_line[name] = step.line
        latest.update(step.locals)
    out: dict[str, tuple] = {}
    for name, value in latest.items():
        if name == "_":
            continue
        _flatten(name, value, out, last_line.get(name))
    result = trace.result
    if trace.exception is None and trace.steps and trace.steps[-1].is_return:
        if isinstance(result, tuple) and not isinstance(result, Shape):
            for i, v in enumerate(result):
                _flatten(f"return[{i}]", v, out, None)
        else:
            _flatten("return", result, out, None)
    return out


def run_once(entry, scope, args, kwargs):
    """{qualname: {name: (shape, line)}} of the first call of every function of the package
    `scope` that entry(*args, **kwargs) reaches."""
    codes = module_functions(scope)
    _, traces = trace_calls(entry, codes, *args, snapshot="shapes", limit=1, **kwargs)
    return {q: _shapes_of_trace(ts[0]) for q, ts in traces.items()}


def run_probe(probe: Probe, project) -> dict[str, dict[str, ShapeInfo]] | None:
    """Run one probe at both configs; ``None`` if it is skipped."""
    setup = probe_setup(probe, project)
    if setup is None:
        return None
    check_distinct(setup.symbols_at_probe, f"probe {probe.name!r}")
    entry = resolve_qualname(probe.entry)
    default_run = run_once(entry, project.package, setup.default_args, setup.default_kwargs)
    probe_run = run_once(entry, project.package, setup.probe_args, setup.probe_kwargs)
    return infer_from_runs(probe.name, setup, default_run, probe_run)


def symbolize(probe_shape: tuple, concrete: tuple, symbols_at_default: dict,
              symbols_at_probe: dict) -> tuple[str, tuple[int, ...], list[str]]:
    """Map each axis of ``probe_shape`` to the one letter of that size at the probe, if that
    letter's default size is the ``concrete`` axis. Returns ``(symbolic, ambiguous axes,
    letters used in order)``; unmatched axes are printed as the concrete number and are
    ambiguous unless they have the same size in both runs (a constant such as keepdims' 1)."""
    by_size: dict[int, list[str]] = {}
    for sym, size in symbols_at_probe.items():
        by_size.setdefault(size, []).append(sym)
    if len(probe_shape) != len(concrete):
        return format_shape(concrete), tuple(range(len(concrete))), []
    axes, ambiguous, used = [], [], []
    for i, (p, c) in enumerate(zip(probe_shape, concrete)):
        matches = by_size.get(p, [])
        if len(matches) == 1 and symbols_at_default.get(matches[0]) == c:
            axes.append(matches[0])
            if matches[0] not in used:
                used.append(matches[0])
        else:
            axes.append(str(c))
            if p != c:                         # depends on the config, but on no one letter
                ambiguous.append(i)
    return format_shape(axes), tuple(ambiguous), used


def infer_from_runs(probe_name, setup: ProbeSetup, default_run, probe_run):
    """{qualname: {name: ShapeInfo}} from the default and the probe run of one probe."""
    sd, sp = setup.symbols_at_default, setup.symbols_at_probe
    result: dict[str, dict[str, ShapeInfo]] = {}
    for qualname, names in probe_run.items():
        defaults = default_run.get(qualname, {})
        infos = {}
        for name, (pshape, line) in names.items():
            if name not in defaults:
                continue                       # only bound in one run (a branch, a key per layer)
            cshape = defaults[name][0]
            symbolic, ambiguous, used = symbolize(pshape, cshape, sd, sp)
            legend = tuple((s, str(setup.legend.get(s, s)), int(sd[s])) for s in used)
            infos[name] = ShapeInfo(symbolic=symbolic, concrete=tuple(cshape),
                                    concrete_str=format_shape(cshape), name=name,
                                    function=qualname, line=line, ambiguous=ambiguous,
                                    probe=probe_name, legend=legend)
        result[qualname] = infos
    return result


def error_and_place(exc: BaseException, folder: str):
    """("TypeName: message", (file, line, code) of the line under `folder` that raised, or
    None): the package's error (a TraceError's cause), and its line."""
    cause = exc.__cause__ if exc.__cause__ is not None and not isinstance(exc, ProbeError) else exc
    where = raising_location(exc, folder) or raising_location(cause, folder)
    error = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
    # A line of the builder (the probe could not find its entry point) is no line to fix.
    return " ".join(error.split()), where if where and where[0].startswith(folder) else None


def probe_failure(probe: Probe, exc: BaseException, package: str) -> ProbeFailure:
    """What to report for ``probe`` whose setup or run raised ``exc``: the package's error
    and the line of the package that raised it."""
    error, where = error_and_place(exc, package + "/")
    file, line, code = where or (None, None, "")
    return ProbeFailure(probe=probe.name, entry=probe.entry, error=error, file=file, line=line, code=code)


def _hook_failure(project, exc: BaseException) -> ProbeFailure:
    """The hooks' probes() raised, or returned what is no list of probes."""
    error, where = error_and_place(exc, project.hooks)
    file, line, code = where or (project.hooks, 1, "")
    return ProbeFailure(probe="probes", entry=f"{project.hooks}: probes()", error=error, file=file, line=line, code=code)


def _probes_or_failure(root, project, config, failures) -> list[Probe]:
    try:
        return project_probes(root, project, config)
    except Exception as e:
        if failures is None:
            raise
        failures.append(_hook_failure(project, e))
        return []


def _run_all(probes, project, names, failures) -> dict:
    out = {}
    for probe in probes:
        if names is not None and probe.name not in names:
            continue
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                # shapes only: a broken package's NaNs and overflows are not this run's to print
                warnings.simplefilter("ignore")
                res = run_probe(probe, project)
        except Exception as e:       # the package's code raised (or the probe does not fit it)
            if failures is None:
                raise
            failures.append(probe_failure(probe, e, project.package))
            continue
        if res is not None:
            out[probe.name] = res
    return out


def infer_shapes_by_probe(root, project, config, names: Iterable[str] | None = None,
                          failures: list | None = None) -> dict[str, dict[str, dict[str, ShapeInfo]]]:
    """{probe name: {qualname: {name: ShapeInfo}}} for each probe of the project (at the
    documented ``config``) that is not skipped; ``names`` picks some. With a ``failures`` list,
    a probe that raises is appended to it as a :class:`ProbeFailure` and the others still run;
    without one, the exception propagates."""
    names = None if names is None else set(names)
    return _run_all(_probes_or_failure(root, project, config, failures), project, names, failures)


def infer_shapes(root, project, config, names: Iterable[str] | None = None) -> ShapeTable:
    """{qualname: {name: ShapeInfo}} over every probe (in the hook's order; for a function that
    several probes reach, the first probe's shapes are kept, and a later probe adds the names
    the first did not record). Never raises for a probe that fails: the result's ``failures``
    lists them."""
    failures: list = []
    probes = _probes_or_failure(root, project, config, failures)
    merged = ShapeTable(order=[p.name for p in probes], probe_sizes=project.probe_sizes)
    for per_probe in _run_all(probes, project, None if names is None else set(names), failures).values():
        for qualname, infos in per_probe.items():
            # a name only a later probe records (built only with one option on) is kept too
            own = merged.setdefault(qualname, dict(infos))
            for name, info in infos.items():
                own.setdefault(name, info)
    merged.failures = failures
    return merged


# ------------------------------------------------------------------- for the pages

def check_declared(declared: str, info: ShapeInfo) -> str | None:
    """None if an author's declared shape agrees with the inferred one, else a message like
    ``declared (T, d) but the code gives (T, F) for Z in pkg.layers.ffn_forward``."""
    want, got = parse_shape(declared), parse_shape(info.symbolic)
    if want == got:
        return None
    msg = (f"declared {format_shape(want)} but the code gives {info.symbolic} "
           f"for {info.name or '?'} in {info.function or '?'}")
    if info.concrete:
        msg += f" (its shape at the default config: {info.concrete_str})"
    if info.ambiguous:
        msg += (f"; axes {list(info.ambiguous)} match no single symbol, "
                "so they are shown as numbers")
    return msg


def declared_letters(project) -> list[str]:
    """The axis letters a concept's `probe:` may use: the landing config's, in order."""
    spec = project.config
    return list(dict.fromkeys(spec.axes.values())) if spec else []


def example_input_shape(project) -> str | None:
    """A two-axis input shape in the landing config's first two letters (``(T, d)``), for a
    probe to start from; None if it has fewer than two."""
    letters = declared_letters(project)
    return format_shape(letters[:2]) if len(letters) >= 2 else None


def legend_text(infos: Iterable[ShapeInfo]) -> str:
    """``"B = batch size = 5. d = width = 32."`` for the letters the shapes use, in order
    of first use."""
    seen, parts = set(), []
    for info in infos:
        for sym, meaning, size in info.legend:
            if (sym, meaning, size) not in seen:        # a letter two fields share is listed once per field
                seen.add((sym, meaning, size))
                parts.append(f"{sym} = {meaning} = {size}." if meaning != sym else f"{sym} = {size}.")
    return " ".join(parts)


def sizes_of(config, axes: dict, lengths=None, words=None) -> dict[str, tuple[str, int]]:
    """letter -> (what it stands for, size) at `config` (a config dataclass, its fields'
    letters `axes`), plus the sequence lengths an example ran with ({"S": 2, "T": 2}), each
    named by `words` (the project's `lengths`). A letter two fields share takes the first
    field's size; `sized_for_name` tells a row which one it means."""
    out = {}
    words = words or {}
    for sym, n in (lengths or {}).items():
        out[sym] = (words.get(sym, sym), int(n))
    fields = [f.name for f in dataclasses.fields(config)]
    for name in fields + [a for a in axes if a not in fields]:      # fields first, then properties
        sym, value = axes.get(name), getattr(config, name, None)
        if sym and sym not in out and _is_size(value):
            out[sym] = (name, value)
    return out


def sized_for_name(sizes: dict, config, spec, name: str) -> dict:
    """`sizes` (from :func:`sizes_of`) for the array called `name`: where several fields
    share a letter, the field the config spec's `axes_by_name` picks for that name sizes it."""
    table = dict(sizes)
    for fname, sym in (spec.letters_for_name(name) if spec else {}).items():
        if _is_size(getattr(config, fname, None)):
            table[sym] = (fname, getattr(config, fname))
    return table


def switches_apart(config) -> list[tuple[str, bool, bool]]:
    """(field, default, value) of each on/off field of the dataclass `config` that is not at
    its class default. The probes run at the default, so a shapes block sized at an example's
    config shows the default's names: where a switch differs (an untied output layer has a
    weight of its own), the example's own names can differ, and the page says so."""
    return [(f.name, f.default, getattr(config, f.name)) for f in dataclasses.fields(config)
            if isinstance(f.default, bool) and getattr(config, f.name) != f.default]


def at_config(info: ShapeInfo, sizes: dict[str, tuple[str, int]]):
    """(concrete shape string, legend) of `info` at other sizes than the probe's default:
    each axis of the symbolic shape evaluated with `sizes`; None where an axis names a
    letter `sizes` lacks (or was printed as a number at the default config)."""
    axes, legend = [], []
    for axis in parse_shape(info.symbolic):
        if info.ambiguous or not re.fullmatch(r"[A-Za-z_]\w*(?:\s*[-+*/]\s*(?:[A-Za-z_]\w*|\d+))*", axis):
            return None
        names = re.findall(r"[A-Za-z_]\w*", axis)
        if any(n not in sizes for n in names):
            return None
        expr = re.sub(r"[A-Za-z_]\w*", lambda m: str(sizes[m.group(0)][1]), axis).replace("/", "//")
        axes.append(eval(expr, {"__builtins__": {}}, {}))     # digits and + - * // only, checked above
        legend += [(n, sizes[n][0], sizes[n][1]) for n in names]
    return "(" + ", ".join(map(str, axes)) + ("," if len(axes) == 1 else "") + ")", tuple(legend)
