"""Tensor shapes at the real config, with symbols, from running the code.

A page says "Xn (T, d) (16, 32)". Neither half is typed by an author: this module runs the
model's own entry points under :func:`site_builder.run.trace.trace_calls` (shapes only, first
call of every function of ``model/``), and

* reads the **concrete** shape of every array local (and every array in a dict local, and
  every returned array) at the **default** config, which is what the site documents;
* runs the same entry point again at a **probe** config where every dimension has its own
  size (``T=6, h=5, dk=8, d=40, F=47, V=13, L=3``; ``S=9`` and ``M=17`` for the
  encoder-decoder; ``n=11`` new tokens for generation), and maps each axis of the probe shape back to the one symbol of that
  size, which gives the **symbolic** shape ``(T, d)``.

Trade-offs, and why:

* **Probing instead of symbolic execution.** Running the real code twice is exact for
  whatever the code does (reshapes, broadcasting, ``keepdims``) and needs no model of NumPy.
  Its weak spot is an axis whose size is a *combination* of symbols (``T + n``, ``B * T``)
  or a coincidence. Coincidences are made impossible by construction: the probe sizes are
  checked to be pairwise distinct and different from the small numbers code uses on its own
  (0, 1, 2). Combinations match no symbol, so they come out as the number at the default
  config and the axis is reported in ``ShapeInfo.ambiguous``. An axis with the same size in
  both runs (the ``1`` of ``keepdims``) is a constant: it is printed as the number and is
  not ambiguous. Each inferred symbol is also checked against the default run (the symbol's
  default size must equal the concrete axis), so a wrong guess cannot pass silently.
* **First call per function.** A function called many times (``linear_forward``) is shown
  with the shapes of its first call. Pages that need another call's shapes show the caller's
  locals instead, which are also inferred.
* **Probes are a registry.** :data:`PROBES` maps a name to an entry point and a builder
  that returns the arguments at both configs and the size of every symbol at both. The
  language model's ``loss_and_grads`` is always there; the encoder-decoder's
  ``loss_and_grads`` and ``model.generate.generate`` are used when their modules exist
  (checked with :func:`importlib.util.find_spec`) and skipped silently otherwise. When
  several probes reach the same function, the first probe in the registry wins in
  :func:`infer_shapes`; :func:`infer_shapes_by_probe` keeps them apart.
* **Symbols come from the config's field names** (``emb_dim`` is ``d``), so a renamed field
  shows up as a missing symbol instead of a wrong number. :data:`SYMBOLS` is the legend of
  the language model: the page prints "T = seq_len = 16. d = emb_dim = 32." from
  :func:`legend_text`.
* **Nothing is cached here, everything is plain data.** Results are frozen dataclasses of
  strings, ints and tuples: deterministic for a given source tree and picklable, so the
  build cache can store them.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from site_builder.gather.shape_syntax import format_shape, parse_shape
from site_builder.run.trace import Shape, module_functions, raising_location, resolve_qualname, trace_calls

__all__ = ["ShapeInfo", "Probe", "ProbeSetup", "ProbeError", "ProbeFailure", "ShapeTable", "PROBES", "SYMBOLS",
           "PROBE_SIZES", "INCIDENTAL_SIZES", "LM_FIELDS", "SEQ2SEQ_FIELDS",
           "register_probe", "available_probes", "probe_config", "fields_for", "symbolize",
           "check_distinct",
           "run_probe", "infer_shapes", "infer_shapes_by_probe", "check_declared",
           "legend_text", "switches_apart"]

# --------------------------------------------------------------------------- symbols

#: Legend of the language model: symbol -> the ModelConfig field (or property) it stands for.
SYMBOLS = {"T": "seq_len", "d": "emb_dim", "F": "ff_dim", "V": "vocab_size",
           "h": "num_heads", "dk": "head_dim", "L": "num_layers"}

#: Sizes of the probe run. Pairwise distinct, none in INCIDENTAL_SIZES, d = h * dk.
PROBE_SIZES = {"T": 6, "S": 9, "h": 5, "dk": 8, "d": 40, "F": 47, "V": 13, "L": 3,
               "M": 17, "n": 11}

#: Sizes code produces on its own (keepdims axes, pairs): no symbol may have them at the probe.
INCIDENTAL_SIZES = frozenset({0, 1, 2})

#: Config field -> symbol, for the language model (T is the sequence length = seq_len).
LM_FIELDS = {"seq_len": "T", "emb_dim": "d", "d_model": "d", "num_heads": "h",
             "n_heads": "h", "ff_dim": "F", "d_ff": "F", "vocab_size": "V",
             "num_layers": "L", "n_layers": "L"}

#: Config field -> symbol, for the encoder-decoder (S and T are the lengths of the two
#: sequences a call receives; a maximum length in the config is M).
SEQ2SEQ_FIELDS = {"seq_len": "M", "max_len": "M", "max_seq_len": "M", "emb_dim": "d",
                  "d_model": "d", "num_heads": "h", "n_heads": "h", "ff_dim": "F",
                  "d_ff": "F", "vocab_size": "V", "src_vocab_size": "V",
                  "tgt_vocab_size": "V", "num_layers": "L", "n_layers": "L",
                  "num_enc_layers": "L", "num_dec_layers": "L",
                  "num_encoder_layers": "L", "num_decoder_layers": "L"}

_HEAD_DIM_ATTRS = ("head_dim", "d_k", "dk")


class ProbeError(RuntimeError):
    """A probe cannot be built or run (sizes collide, an argument cannot be filled)."""


@dataclass(frozen=True)
class ProbeFailure:
    """A probe whose setup or run raised (the model code is broken, or the probe does not fit
    it): which probe, its entry point, the error, and the line that raised (``file`` and
    ``line`` repository-relative, ``None`` when no line of the repository was on the stack).
    Plain data, so the build cache can keep it with the shapes."""
    probe: str
    entry: str
    error: str                  # "KeyError: 'b0.bq'"
    file: str | None = None
    line: int | None = None
    code: str = ""              # the text of that line

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""

    def describe(self) -> str:
        """``the shape probe model.transformer.loss_and_grads raised KeyError: 'b0.bq' at
        model/attention.py:40 (Q, _ = linear_forward(...))``"""
        at = f" at {self.where}" + (f" ({self.code})" if self.code else "") if self.file else ""
        return f"the shape probe {self.entry} raised {self.error}{at}"


class ShapeTable(dict):
    """{qualname: {name: ShapeInfo}}, plus ``failures``: the probes that raised. A probe that
    raises does not stop the others, nor the build: the pages that need its shapes report it
    with their own file and line (site_builder/render/pages.py)."""

    def __init__(self, *args, failures=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.failures = list(failures)


@dataclass(frozen=True)
class ShapeInfo:
    """The shape of one array of one function.

    ``symbolic``: ``"(T, d)"``, ``"(d,)"`` or ``"()"``; ``concrete``: the shape at the
    default config; ``concrete_str``: ``"(16, 32)"``. ``name``: the local's name, ``x["key"]``
    for an array in a dict local, ``return`` / ``return[0]`` / ``return[1]["Xhat"]`` for what
    the function returned; ``function``: qualname; ``line``: the line that last bound or
    changed it in the probe run (``None`` for an argument never rebound, or a return value);
    ``ambiguous``: axes whose size matched no symbol (or several) although it differs between
    the two runs: they are printed as the default number; ``probe``: which probe produced it;
    ``legend``: ``(symbol, meaning, size at default)`` for each symbol used, in order."""
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
    """What a probe builder returns: the entry's positional (and keyword) arguments at the
    default and at the probe config, and each symbol's size at both; ``legend`` maps each
    symbol to what it stands for (a config field, or words such as "source length")."""
    default_args: tuple
    probe_args: tuple
    symbols_at_default: dict
    symbols_at_probe: dict
    legend: dict = field(default_factory=dict)
    default_kwargs: dict = field(default_factory=dict)
    probe_kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Probe:
    """A registered probe: ``entry`` is the qualname of the function to run; ``build(vocab_size)``
    returns a :class:`ProbeSetup`, or ``None`` to be skipped (its module does not exist);
    ``scope``: the package whose functions are traced."""
    name: str
    entry: str
    build: Callable[[int], ProbeSetup | None]
    scope: str = "model"


PROBES: dict[str, Probe] = {}


def register_probe(probe: Probe) -> Probe:
    """Add (or replace) a probe; probes run in the order they were first registered."""
    PROBES[probe.name] = probe
    return probe


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# ------------------------------------------------------------------- probe configs

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


def _head_dim(cfg):
    for attr in _HEAD_DIM_ATTRS:
        value = getattr(cfg, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return attr, value
    return None, None


def fields_for(cfg) -> dict[str, str]:
    """The field table for a config: the encoder-decoder's if it has a field only the
    encoder-decoder has (``max_len``, ``src_vocab_size``, ...), else the language model's."""
    names = {f.name for f in dataclasses.fields(cfg)} if dataclasses.is_dataclass(cfg) else set()
    return SEQ2SEQ_FIELDS if names & (set(SEQ2SEQ_FIELDS) - set(LM_FIELDS)) else LM_FIELDS


def probe_config(cfg, fields: dict[str, str] | None = None, sizes: dict[str, int] = PROBE_SIZES):
    """The probe version of the dataclass config ``cfg``: every field named in ``fields`` set
    to the probe size of its symbol. Returns ``(probe_cfg, symbols_at_default,
    symbols_at_probe, legend)``; the head width ``dk`` is read back from the config's
    ``head_dim`` (or ``d_k``), never computed here. ``fields`` defaults to
    :func:`fields_for` ``(cfg)``."""
    if fields is None:
        fields = fields_for(cfg)
    if not dataclasses.is_dataclass(cfg):
        raise ProbeError(f"probe_config needs a dataclass config, got {type(cfg).__name__}")
    changes, at_default, legend = {}, {}, {}
    names = {f.name for f in dataclasses.fields(cfg)}
    for fname, sym in fields.items():
        if fname in names:
            changes[fname] = sizes[sym]
            at_default[sym] = getattr(cfg, fname)
            legend.setdefault(sym, fname)
    try:
        pcfg = dataclasses.replace(cfg, **changes)
    except Exception as e:
        raise ProbeError(f"cannot build the probe {type(cfg).__name__}({changes}): {e}") from e
    at_probe = {sym: getattr(pcfg, fname) for fname, sym in fields.items() if fname in names}
    attr, dk = _head_dim(cfg)
    if attr is not None and attr not in names:           # a property, e.g. head_dim
        at_default["dk"] = dk
        at_probe["dk"] = _head_dim(pcfg)[1]
        legend["dk"] = attr
    return pcfg, at_default, at_probe, legend


def _config_with_vocab(cls, vocab_size: int, fields: dict[str, str]):
    """Instantiate a config dataclass, filling required vocabulary fields with vocab_size."""
    kwargs = {}
    for f in dataclasses.fields(cls):
        required = (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        if required:
            if fields.get(f.name) == "V":
                kwargs[f.name] = vocab_size
            else:
                raise ProbeError(f"{cls.__name__}.{f.name} is required and the probe does not "
                                 f"know what to pass for it; extend the field table in shapes.py")
    return cls(**kwargs)


def _ids(rng, V, *shape):
    return rng.integers(0, V, size=shape)


# --------------------------------------------------------------------------- builders

def _build_lm(vocab_size: int = 65) -> ProbeSetup:
    """loss_and_grads(params, ids, targets, cfg) on one sequence of length seq_len."""
    from model.config import ModelConfig
    from model.transformer import init_params

    cfg = ModelConfig(vocab_size=vocab_size)
    pcfg, at_default, at_probe, legend = probe_config(cfg, LM_FIELDS)

    def args(c):
        rng = np.random.default_rng(0)
        params = init_params(c, rng)
        ids = _ids(rng, c.vocab_size, c.seq_len)
        return (params, ids, np.roll(ids, -1), c)

    return ProbeSetup(args(cfg), args(pcfg), at_default, at_probe, legend)


def _build_seq2seq(vocab_size: int = 65) -> ProbeSetup | None:
    """model.seq2seq.loss_and_grads(params, src_ids, tgt_in_ids, tgt_out_ids, cfg) with
    model.config.Seq2SeqConfig; S = source length, T = target length."""
    if not _module_exists("model.seq2seq"):
        return None
    seq2seq = importlib.import_module("model.seq2seq")
    config = importlib.import_module("model.config")
    cls = getattr(config, "Seq2SeqConfig", None)
    if cls is None:
        raise ProbeError("model/seq2seq.py exists but model.config has no Seq2SeqConfig")
    cfg = _config_with_vocab(cls, vocab_size, SEQ2SEQ_FIELDS)
    pcfg, at_default, at_probe, legend = probe_config(cfg, SEQ2SEQ_FIELDS)
    # One pair of sequences at the default config: as long as the config allows, at most 16.
    longest = at_default.get("M", 16)
    at_default["S"] = at_default["T"] = min(longest, 16)
    at_probe["S"], at_probe["T"] = PROBE_SIZES["S"], PROBE_SIZES["T"]
    if "M" in at_probe and at_probe["M"] < max(at_probe["S"], at_probe["T"]):
        raise ProbeError("the probe's maximum length is shorter than its sequences")
    legend = {"S": "source length", "T": "target length", **legend}

    def args(c, S, T):
        rng = np.random.default_rng(0)
        params = seq2seq.init_params(c, rng)
        V = at_probe["V"] if c is pcfg else at_default["V"]
        return (params, _ids(rng, V, S), _ids(rng, V, T), _ids(rng, V, T), c)

    return ProbeSetup(args(cfg, at_default["S"], at_default["T"]),
                      args(pcfg, at_probe["S"], at_probe["T"]), at_default, at_probe, legend)


_GEN_IDS = ("ids", "prompt_ids", "prompt", "context", "idx", "tokens", "start_ids")
_GEN_COUNT = ("num_new", "n_new", "max_new_tokens", "num_tokens", "new_tokens", "steps",
              "length", "n")


def _build_generate(vocab_size: int = 65) -> ProbeSetup | None:
    """model.generate.generate, arguments filled by parameter name: params, cfg, an id prompt
    of length seq_len, n new tokens (symbol n), temperature 1, no top-k, rng or seed."""
    if not _module_exists("model.generate"):
        return None
    gen = importlib.import_module("model.generate")
    fn = getattr(gen, "generate", None)
    if fn is None:
        raise ProbeError("model/generate.py exists but defines no generate()")
    from model.config import ModelConfig
    from model.transformer import init_params

    cfg = ModelConfig(vocab_size=vocab_size)
    pcfg, at_default, at_probe, legend = probe_config(cfg, LM_FIELDS)
    at_default["n"] = at_probe["n"] = PROBE_SIZES["n"]
    legend["n"] = "new tokens"
    sig = inspect.signature(fn)

    def args(c):
        rng = np.random.default_rng(0)
        params = init_params(c, rng)
        pos, kw = [], {}
        for p in sig.parameters.values():
            name = p.name
            if name == "params":
                value = params
            elif name in ("cfg", "config", "model_cfg"):
                value = c
            elif name in _GEN_IDS:
                if p.annotation is str or p.annotation == "str":
                    raise ProbeError(f"generate() takes a text prompt ({name}); the probe needs ids")
                value = _ids(rng, c.vocab_size, c.seq_len)
            elif name in ("rng", "generator"):
                value = np.random.default_rng(0)
            elif name == "seed":
                value = 0
            elif name in _GEN_COUNT:
                value = PROBE_SIZES["n"]
            elif name == "temperature":
                value = 1.0
            elif name in ("top_k", "top_p"):
                value = None
            elif p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            else:
                raise ProbeError(f"the generate probe cannot fill the parameter {name!r} of "
                                 f"model.generate.generate{sig}; extend _build_generate in shapes.py")
            if p.kind is p.KEYWORD_ONLY:
                kw[name] = value
            else:
                pos.append(value)
        return tuple(pos), kw

    (dargs, dkw), (pargs, pkw) = args(cfg), args(pcfg)
    return ProbeSetup(dargs, pargs, at_default, at_probe, legend, dkw, pkw)


register_probe(Probe("lm", "model.transformer.loss_and_grads", _build_lm))
register_probe(Probe("seq2seq", "model.seq2seq.loss_and_grads", _build_seq2seq))
register_probe(Probe("generate", "model.generate.generate", _build_generate))


def available_probes(vocab_size: int = 65) -> dict[str, ProbeSetup]:
    """{name: setup} of every registered probe whose module exists, in registry order."""
    out = {}
    for name, probe in PROBES.items():
        setup = probe.build(vocab_size)
        if setup is not None:
            out[name] = setup
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


def _run_once(entry, scope, args, kwargs):
    codes = module_functions(scope)
    _, traces = trace_calls(entry, codes, *args, snapshot="shapes", limit=1, **kwargs)
    return {q: _shapes_of_trace(ts[0]) for q, ts in traces.items()}


def run_probe(name: str, vocab_size: int = 65) -> dict[str, dict[str, ShapeInfo]] | None:
    """Run one registered probe at both configs; ``None`` if it is skipped."""
    probe = PROBES[name]
    setup = probe.build(vocab_size)
    if setup is None:
        return None
    check_distinct(setup.symbols_at_probe, f"probe {name!r}")
    entry = resolve_qualname(probe.entry)
    default_run = _run_once(entry, probe.scope, setup.default_args, setup.default_kwargs)
    probe_run = _run_once(entry, probe.scope, setup.probe_args, setup.probe_kwargs)
    return _infer(name, setup, default_run, probe_run)


def symbolize(probe_shape: tuple, concrete: tuple, symbols_at_default: dict,
              symbols_at_probe: dict) -> tuple[str, tuple[int, ...], list[str]]:
    """Map each axis of ``probe_shape`` to the one symbol of that size at the probe, if that
    symbol's default size is the ``concrete`` axis. Returns ``(symbolic, ambiguous axes,
    symbols used in order)``; unmatched axes are printed as the concrete number and are
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
            if p != c:                         # depends on the config, but on no one symbol
                ambiguous.append(i)
    return format_shape(axes), tuple(ambiguous), used


def _infer(probe_name, setup: ProbeSetup, default_run, probe_run):
    sd, sp = setup.symbols_at_default, setup.symbols_at_probe
    result: dict[str, dict[str, ShapeInfo]] = {}
    for qualname, names in probe_run.items():
        defaults = default_run.get(qualname, {})
        infos = {}
        for name, (pshape, line) in names.items():
            if name not in defaults:
                continue                       # only bound in one run (a branch, b2.* keys)
            cshape = defaults[name][0]
            symbolic, ambiguous, used = symbolize(pshape, cshape, sd, sp)
            legend = tuple((s, str(setup.legend.get(s, s)), int(sd[s])) for s in used)
            infos[name] = ShapeInfo(symbolic=symbolic, concrete=tuple(cshape),
                                    concrete_str=format_shape(cshape), name=name,
                                    function=qualname, line=line, ambiguous=ambiguous,
                                    probe=probe_name, legend=legend)
        result[qualname] = infos
    return result


def probe_failure(name: str, exc: BaseException) -> ProbeFailure:
    """What to report for probe ``name`` whose setup or run raised ``exc``: the error of the
    model (a TraceError's cause) and the line of model/ that raised it."""
    cause = exc.__cause__ if exc.__cause__ is not None and not isinstance(exc, ProbeError) else exc
    where = raising_location(exc) or raising_location(cause)
    error = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
    # A line of the builder (the probe could not find its entry point) is no line to fix.
    file, line, code = where if where and where[0].startswith("model/") else (None, None, "")
    return ProbeFailure(probe=name, entry=PROBES[name].entry, error=" ".join(error.split()),
                        file=file, line=line, code=code)


def infer_shapes_by_probe(vocab_size: int = 65, probes: Iterable[str] | None = None,
                          failures: list | None = None) -> dict[str, dict[str, dict[str, ShapeInfo]]]:
    """{probe name: {qualname: {name: ShapeInfo}}} for each probe that is not skipped. With a
    ``failures`` list, a probe that raises is appended to it as a :class:`ProbeFailure` and
    the others still run; without one, the exception propagates."""
    out = {}
    for name in (PROBES if probes is None else probes):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                # shapes only: a broken model's NaNs and overflows are not this run's to print
                warnings.simplefilter("ignore")
                res = run_probe(name, vocab_size)
        except Exception as e:       # the model's code raised (or the probe does not fit it)
            if failures is None:
                raise
            failures.append(probe_failure(name, e))
            continue
        if res is not None:
            out[name] = res
    return out


def infer_shapes(vocab_size: int = 65, probes: Iterable[str] | None = None) -> ShapeTable:
    """{qualname: {name: ShapeInfo}} over every probe (registry order; for a function that
    several probes reach, the first probe's shapes are kept, and a later probe adds the names
    the first did not record). Never raises for a probe that
    fails: the result's ``failures`` lists them."""
    failures: list = []
    merged = ShapeTable()
    for per_probe in infer_shapes_by_probe(vocab_size, probes, failures).values():
        for qualname, infos in per_probe.items():
            # a name only a later probe records (q, built only with label smoothing) is kept too
            own = merged.setdefault(qualname, dict(infos))
            for name, info in infos.items():
                own.setdefault(name, info)
    merged.failures = failures
    return merged


# ------------------------------------------------------------------- for the pages

def check_declared(declared: str, info: ShapeInfo) -> str | None:
    """None if an author's declared shape agrees with the inferred one, else a message like
    ``declared (T, d) but the code gives (T, F) for Z in model.transformer.ffn_forward``."""
    want, got = parse_shape(declared), parse_shape(info.symbolic)
    if want == got:
        return None
    msg = (f"declared {format_shape(want)} but the code gives {info.symbolic} "
           f"for {info.name or '?'} in {info.function or '?'}")
    if info.concrete:
        msg += f" (with the default config {info.concrete_str})"
    if info.ambiguous:
        msg += (f"; axes {list(info.ambiguous)} match no single symbol, "
                "so they are shown as numbers")
    return msg


def legend_text(infos: Iterable[ShapeInfo]) -> str:
    """``"T = seq_len = 16. d = emb_dim = 32."`` for the symbols the shapes use, in order
    of first use."""
    seen, parts = set(), []
    for info in infos:
        for sym, meaning, size in info.legend:
            if (sym, meaning, size) not in seen:        # a symbol two fields share is listed once per field
                seen.add((sym, meaning, size))
                parts.append(f"{sym} = {meaning} = {size}." if meaning != sym else f"{sym} = {size}.")
    return " ".join(parts)


def sizes_of(config, lengths=None) -> dict[str, tuple[str, int]]:
    """symbol -> (what it stands for, size) at `config` (a config dataclass), plus the
    sequence lengths an example ran with ({"S": 2, "T": 2}). A symbol two fields share
    (the encoder-decoder's V: src_vocab_size and tgt_vocab_size) takes the first field's
    size; `at_config` tells a row which one it means."""
    out = {}
    words = {"S": "source length", "T": "target length"}
    for sym, n in (lengths or {}).items():
        out[sym] = (words.get(sym, sym), int(n))
    for f in dataclasses.fields(config):
        sym = fields_for(config).get(f.name)
        value = getattr(config, f.name)
        if sym and sym not in out and isinstance(value, int) and not isinstance(value, bool):
            out[sym] = (f.name, value)
    attr, dk = _head_dim(config)
    if dk is not None:
        out.setdefault("dk", (attr, dk))
    return out


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
    symbol `sizes` lacks (or was printed as a number at the default config)."""
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


# ------------------------------------------------------- probes declared on a concept

def declared_setup(fn, inputs: dict, vocab_size: int = 65) -> ProbeSetup:
    """The arguments for a probe a concept declares (``probe: {Z: '(T, F)'}``): each named
    parameter of ``fn`` gets an array of that shape (seeded normal draws) at the default and
    at the probe sizes of the language model's symbols; an axis may also be a number, and a
    value that is not in brackets is passed as the number it is (``eps: 1e-5``). A
    parameter with a default may be left out; any other is a ProbeError naming it."""
    from model.config import ModelConfig
    _, at_default, at_probe, legend = probe_config(ModelConfig(vocab_size=vocab_size), LM_FIELDS)
    params = inspect.signature(fn).parameters
    for name in inputs:
        if name not in params:
            raise ProbeError(f"{fn.__qualname__} has no parameter {name!r} (its parameters: {', '.join(params)})")
    missing = [p.name for p in params.values() if p.name not in inputs and p.default is inspect.Parameter.empty
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if missing:
        raise ProbeError(f"the probe gives no {', '.join(repr(m) for m in missing)}: declare a shape for every "
                         f"parameter of {fn.__qualname__} that has no default")

    def args(sizes):
        rng = np.random.default_rng(0)
        out = {}
        for name, text in inputs.items():
            if not str(text).strip().startswith("("):        # a number: passed as it is
                try:
                    out[name] = int(text) if re.fullmatch(r"-?\d+", str(text).strip()) else float(text)
                except ValueError:
                    raise ProbeError(f"{name!r}: {text!r} is neither a shape like '(T, d)' nor a number") from None
                continue
            axes = []
            for axis in parse_shape(str(text)):
                if axis.isdigit():
                    axes.append(int(axis))
                elif axis in sizes:
                    axes.append(int(sizes[axis]))
                else:
                    raise ProbeError(f"unknown axis {axis!r} in the shape {text!r} of {name!r}; "
                                     f"use a number or one of {', '.join(sizes)}")
            out[name] = rng.standard_normal(tuple(axes))
        return out
    return ProbeSetup((), (), at_default, at_probe, legend, args(at_default), args(at_probe))


def infer_declared(declared: dict, vocab_size: int = 65) -> tuple[dict, dict]:
    """Shapes from the probes concepts declare: ``declared`` is {qualname: {param: shape}}.
    Returns ({qualname: {name: ShapeInfo}} for every function those calls reach,
    {qualname: error} for each declared probe that could not run)."""
    table, errors = {}, {}
    for qualname, inputs in sorted(declared.items()):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                entry = resolve_qualname(qualname)
                setup = declared_setup(entry, inputs, vocab_size)
                scope = qualname.split(".")[0]
                default_run = _run_once(entry, scope, (), setup.default_kwargs)
                probe_run = _run_once(entry, scope, (), setup.probe_kwargs)
        except Exception as e:
            cause = e.__cause__ if e.__cause__ is not None and not isinstance(e, ProbeError) else e
            where = raising_location(e) or raising_location(cause)
            at = f" at {where[0]}:{where[1]}" if where and where[0].startswith("model/") else ""
            errors[qualname] = " ".join(f"{type(cause).__name__}: {cause}{at}".split())
            continue
        for q, infos in _infer(f"declared on {qualname}", setup, default_run, probe_run).items():
            table.setdefault(q, infos)
    return table, errors
