"""Declarative examples: a step table or a gradient-check table from a few lines of content,
no Python (content/README.md, "Declarative examples").

    examples:
      - title: Through the feed-forward network, backwards
        steps: [{Arrives: dOut}, {Through ReLU: dZ}, dXn]
        inputs: {Xn: FFN_WORKED_XN, params: ffn_worked_params, p: b0., dOut: FFN_WORKED_DOUT,
                 grads: {zeros_like: params}}

The content loader (site_builder/gather/content.py, with gather/declared.py) turns such an entry into an ordinary
example ref, `declared:steps(function=..., inputs=..., rows=...)`, so it is requested, run in a
child, cached, recorded (its shapes check symbol rows and size a `run:` shapes block) and
rendered exactly like a hand-written example; the functions here only build the call and hand
the trace to the same helpers (`steps_table`, `gradcheck_table`) a hand-written one uses.

Trade-offs, and why:

* **Inputs by name, never code.** A value is a number, a text, a list (an array), a name of
  the project's fixtures module (`fixtures:`, default the tests folder's fixtures.py; a
  function there is called), a dotted name of the package (`pkg.config.Cfg.eps`: a field's
  default), or `{zeros_like: NAME}`. A name in capitals that names nothing is an error rather
  than a text, so a typo is caught.
* **The pair convention of the package** (`x_forward(...) -> (out, cache)`,
  `x_backward(dout, cache, ...)`): for a `_backward` function the cache, its second parameter,
  is made by running the `_forward` of the same module on the same inputs. A gradient check
  compares what the backward returns, in order, with central differences (the project's
  `numerical_grad`) of `sum(forward(...)[0] * dout)` by the forward's array inputs, in order,
  and every entry a `{zeros_like: ...}` dict received. Anything else needs a Python example.
* **Every input is copied for every call**: the package's functions may work in place.
"""
from __future__ import annotations

import copy
import importlib
import inspect
import re
import sys
from pathlib import Path

import numpy as np

from site_builder.base.problems import did_you_mean
from site_builder.gather.declared import KINDS, DeclaredError, step_rows
from site_builder.run.examples import ExampleResult, gradcheck_table, steps_table
from site_builder.run.qualnames import resolve_qualname
from site_builder.run.trace import trace_locals



def load_declared(root, ref):
    """The function that runs the declarative example `ref` names (`declared:steps(...)`), bound to root."""
    import functools
    kind = ref.partition(":")[2].partition("(")[0]
    if kind not in KINDS:
        raise LookupError(f"no declarative example kind '{kind}'")
    return functools.partial(globals()[kind], root)


# ------------------------------------------------------------------ in the child

def steps(root, function, inputs, rows):
    """A traced step table of `function` on `inputs` (for a backward, its cache from the forward)."""
    call = _Call(root, function, inputs)
    t = trace_locals(call.fn, **call.arguments(call.fn))
    declared = step_rows(rows)
    _check_steps(t, declared, function.rpartition(".")[2])
    return ExampleResult([steps_table(t, [r[:2] if r[2] is None else r for r in declared])], call.source())


def _check_steps(trace, rows, short):
    """Every step names a local the traced call had (or its n-th change, or what it returned):
    a typo is one line naming it, a close spelling and the names the steps may give."""
    changes = {}
    for step in trace.steps:
        for name in step.changed:
            changes[name] = changes.get(name, 0) + 1
    names = list(trace.arguments) + [n for n in changes if n not in trace.arguments]
    results = [f"return[{i}]" for i in range(len(trace.result))] if isinstance(trace.result, tuple) else []
    allowed = names + ["return"] + results
    for label, name, n in rows:
        if name not in allowed:
            close = did_you_mean(name, allowed)
            raise DeclaredError(f"step '{label}' names '{name}', no local of {short}",
                                (close + " " if close else "") + f"a step may name {', '.join(allowed)}")
        if n is not None and not name.startswith("return") and not (
                n == 0 and name in trace.arguments or 0 < n <= changes.get(name, 0)):
            raise DeclaredError(f"step '{label}' asks for change {n} of '{name}', which {short} changes "
                                f"{changes.get(name, 0)} time(s)",
                                (f"write [{name}, N] with N from 1 to {changes[name]}" if changes.get(name)
                                 else f"write {name} alone (it never changes)")
                                + (f", or [{name}, 0] for its value as passed" if name in trace.arguments else ""))


def gradcheck(root, function, inputs):
    """Analytic gradients of a backward function against central differences of its forward."""
    from site_builder.gather.project import load_project
    call = _Call(root, function, inputs)
    if call.forward is None:
        raise DeclaredError(f"a gradient check needs a _backward function with its _forward beside it, not {function}")
    numerical = load_project(root).numerical_grad
    if not numerical:
        raise DeclaredError("the project names no numerical_grad (content/site.yaml, project: numerical_grad: DOTTED)")
    numerical_grad = resolve_qualname(numerical)
    _note_sources(root, [numerical_grad])
    base = call.values()                             # what the central differences perturb
    bwd = call.arguments(call.fn)
    returned = call.fn(**bwd)
    returned = returned if isinstance(returned, tuple) else (returned,)
    fparams = list(inspect.signature(call.forward).parameters)
    arrays = [n for n in fparams if isinstance(base.get(n), np.ndarray) and base[n].dtype.kind == "f"]
    kept = [(n, r) for n, r in zip(arrays, returned) if r is not None]
    if len(returned) != len(arrays):
        raise DeclaredError(f"{call.name} returns {len(returned)} value(s) and {call.forward_name} takes "
                            f"{len(arrays)} array(s) ({', '.join(arrays) or 'none'}): a declarative gradient check "
                            f"pairs them in order")
    dout = bwd[next(iter(inspect.signature(call.fn).parameters))]

    def loss():
        return float((call.forward(**{n: copy.deepcopy(base[n]) for n in fparams if n in base})[0] * dout).sum())
    rows = [(f"d{n}", r, numerical_grad(loss, base[n])) for n, r in kept]
    for pname, source in call.zeros_like.items():
        filled = bwd[pname]
        for key in filled:
            if np.any(filled[key]):
                rows.append((f'{pname}["{key}"]', filled[key], numerical_grad(loss, base[source][key])))
    return ExampleResult([gradcheck_table(rows)], call.source() + "; numerical: central differences of "
                         f"sum({call.forward_name}(...)[0] * {next(iter(inspect.signature(call.fn).parameters))})")


def _note_sources(root, objects):
    """Read the source files of these objects and what they import: the example's recorded
    inputs (site_builder/gather/inputs.py) then hold them, though the builder may have imported
    them before the child started (an import seen then is not seen opened)."""
    from site_builder.run.examples import dependency_files
    for obj in objects:
        try:
            path = inspect.getsourcefile(obj) if obj is not None else None
        except TypeError:
            path = None
        for f in dependency_files(Path(root), Path(path)) if path else ():
            f.read_bytes()


class _Call:
    """A function of the package and the declared inputs of its call, resolved in the child."""

    def __init__(self, root, function, inputs):
        from site_builder.gather.project import load_project
        self.root, self.name, self.inputs = Path(root), function, dict(inputs)
        project = load_project(self.root)
        self.fixtures_name = project.fixtures
        self.fixtures = importlib.import_module(project.fixtures) if project.fixtures else None
        self.fn = resolve_qualname(function)
        module, _, short = function.rpartition(".")
        self.forward, self.forward_name = None, ""
        if short.endswith("_backward"):
            self.forward_name = short[:-len("_backward")] + "_forward"
            try:
                self.forward = resolve_qualname(f"{module}.{self.forward_name}")
            except (ImportError, AttributeError):
                self.forward = None
        _note_sources(self.root, [sys.modules[__name__], self.fn, self.forward, self.fixtures])
        self.zeros_like = {k: v["zeros_like"] for k, v in self.inputs.items() if isinstance(v, dict)}
        self._check_names()
        self._base = {k: self._resolve(k, v) for k, v in self.inputs.items() if k not in self.zeros_like}

    def _called(self):
        """[(short name, function)] of what the inputs feed: the function, and the forward that
        makes its cache (when the inputs do not give the cache)."""
        out = [(self.name.rpartition(".")[2], self.fn)]
        if self.forward is not None:
            out.append((self.forward_name, self.forward))
        return out

    def _allowed(self) -> str:
        """What the inputs may name, by function: "relu_backward's dA, positive; relu_forward's Z"."""
        return "; ".join(f"{short}'s {', '.join(inspect.signature(fn).parameters)}" for short, fn in self._called())

    def _check_names(self):
        """An input that names no parameter first (a typo names it, with a close spelling), then
        a parameter no input gives."""
        allowed = self._all_params()
        for key in self.inputs:
            if key not in allowed:
                close = did_you_mean(str(key), sorted(allowed))
                raise DeclaredError(f"'{key}' in the inputs is no parameter of "
                                    + " or ".join(short for short, _ in self._called()),
                                    (close + " " if close else "") + f"the inputs may name {self._allowed()}")
        cached = set(self._cache_params()) & set(self.inputs)
        for short, fn in self._called()[:1] if cached else self._called():
            for name in self.fn_params(fn):
                if name not in self.inputs and not (fn is self.fn and name in self._cache_params()):
                    raise DeclaredError(f"the inputs give no '{name}' of {short}",
                                        f"add '{name}: ...' to the inputs ({self._allowed()})")

    def fn_params(self, fn):
        """The parameters of fn that have no default."""
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def _cache_params(self):
        """The backward's second parameter, its cache, made by the forward (when not given)."""
        names = list(inspect.signature(self.fn).parameters)
        return names[1:2] if self.forward is not None else []

    def _all_params(self):
        out = set(inspect.signature(self.fn).parameters)
        return out | set(inspect.signature(self.forward).parameters) if self.forward is not None else out

    def _resolve(self, name, value):
        if isinstance(value, list):
            return np.array(value, dtype=float)
        if not isinstance(value, str):
            return value
        if self.fixtures is not None and value.isidentifier() and hasattr(self.fixtures, value):
            return getattr(self.fixtures, value)
        if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", value):
            try:
                return resolve_qualname(value)
            except (ImportError, AttributeError):
                pass
        known = [n for n in dir(self.fixtures) if not n.startswith("_")] if self.fixtures is not None else []
        close = did_you_mean(value, known) if value.isidentifier() else ""
        if re.fullmatch(r"[A-Z][A-Z0-9_]*", value) or close:     # a capital name, or a near-miss of one
            where = f"{self.fixtures_name.replace('.', '/')}.py" if self.fixtures_name else "the project's fixtures"
            raise DeclaredError(f"'{name}: {value}' names nothing in {where}",
                                close or "write a name the fixtures module defines, a number, or a list")
        return value

    def values(self):
        """A fresh copy of every input (a fixture function called), zeros_like dicts filled."""
        out = {k: v() if callable(v) and not isinstance(v, np.ndarray) else copy.deepcopy(v) for k, v in self._base.items()}
        for k, source in self.zeros_like.items():
            like = out.get(source)
            if like is None:
                raise DeclaredError(f"'{k}: {{zeros_like: {source}}}' names no input")
            out[k] = {n: np.zeros_like(a) for n, a in like.items()} if isinstance(like, dict) else np.zeros_like(like)
        return out

    def arguments(self, fn, values=None):
        """fn's keyword arguments from the inputs; a backward's cache from its forward's run."""
        values = self.values() if values is None else values
        params = inspect.signature(fn).parameters
        args = {k: v for k, v in values.items() if k in params}
        for name in self._cache_params() if fn is self.fn else ():
            if name not in args:
                fresh = self.values()
                fargs = {k: v for k, v in fresh.items() if k in inspect.signature(self.forward).parameters}
                args[name] = self.forward(**fargs)[1]
        return args

    def source(self) -> str:
        """The provenance label: the call, each input named as the content gave it."""
        def said(k, v):
            if isinstance(v, dict):
                return f"{k} = zeros like {v['zeros_like']}"
            if isinstance(v, str) and self.fixtures is not None and hasattr(self.fixtures, v):
                return f"{k} = {v}()" if callable(getattr(self.fixtures, v)) and not isinstance(getattr(self.fixtures, v), np.ndarray) else f"{k} = {v}"
            return f"{k} = {v!r}" if isinstance(v, str) and not re.fullmatch(r"[\w.]+\.[A-Za-z_]\w*", v) else f"{k} = {v}"
        used = [v for v in self.inputs.values() if isinstance(v, str) and self.fixtures is not None and hasattr(self.fixtures, v)]
        where = f", hand-picked in {self.fixtures_name.replace('.', '/')}.py" if used else ""
        via = f" (its cache from {self.forward_name})" if self.forward is not None and not set(self._cache_params()) & set(self.inputs) else ""
        return f"{self.name.rpartition('.')[2]}{via} with " + ", ".join(said(k, v) for k, v in self.inputs.items()) + where
