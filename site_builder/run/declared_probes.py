"""Shapes of the functions no probe entry point reaches, from the probes concepts declare.

A concept may declare its function's inputs as shapes (``probe: {Z: '(T, F)'}``, content/README.md):
the function is then run twice like a probe (site_builder/run/shapes.py), on seeded normal
arrays of those shapes at the documented config's sizes and at the probe sizes, and what it
held is named by letter the same way.

Trade-offs: only arrays, numbers and a seeded generator can be made from a declaration, so a
function that takes a parameter dict or a config is documented by an example instead (its run records
the shapes, site_builder/run/example_shapes.py); and the letters are the documented config's
only (the project's ``configs[].axes`` of the landing config), the ones a page's legend uses.
"""
from __future__ import annotations

import inspect
import re
import warnings

import numpy as np

from site_builder.gather.shape_syntax import parse_shape
from site_builder.run.qualnames import resolve_qualname
from site_builder.run.shapes import ProbeError, ProbeSetup, error_and_place, infer_from_runs, run_once, probe_config

__all__ = ["declared_setup", "infer_declared"]


def declared_setup(fn, inputs: dict, project, config) -> ProbeSetup:
    """The arguments for a probe a concept declares (``probe: {Z: '(T, F)'}``): each named
    parameter of ``fn`` gets an array of that shape (seeded normal draws) at the default and
    at the probe sizes of the documented ``config``'s letters; an axis may also be a number,
    and a value that is not in brackets is passed as the number it is (``eps: 1e-5``). A
    parameter with a default may be left out; any other is a ProbeError naming it."""
    _, at_default, at_probe, legend = probe_config(config, project.axes_for(config), project.probe_sizes)
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
            word = str(text).strip()
            if word == "generator":                           # a seeded random generator of its own
                out[name] = np.random.default_rng(0)
                continue
            if word in sizes:                                 # a letter: its size in this run
                out[name] = int(sizes[word])
                continue
            integers = word.startswith("(") and word.endswith(" ints")
            if integers:                                      # whole numbers 0 and 1: ids below any size
                text = word[:-len(" ints")]
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
            out[name] = rng.integers(0, 2, tuple(axes)) if integers else rng.standard_normal(tuple(axes))
        return out
    return ProbeSetup((), (), at_default, at_probe, legend, args(at_default), args(at_probe))


def infer_declared(declared: dict, project, config) -> tuple[dict, dict]:
    """Shapes from the probes concepts declare: ``declared`` is {qualname: {param: shape}},
    sized by the documented ``config``. Returns ({qualname: {name: ShapeInfo}} for every
    function those calls reach, {qualname: error} for each declared probe that could not run)."""
    table, errors = {}, {}
    for qualname, inputs in sorted(declared.items()):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                entry = resolve_qualname(qualname)
                setup = declared_setup(entry, inputs, project, config)
                scope = qualname.split(".")[0]
                default_run = run_once(entry, scope, (), setup.default_kwargs)
                probe_run = run_once(entry, scope, (), setup.probe_kwargs)
        except Exception as e:
            error, where = error_and_place(e, project.package + "/")
            at = f" at {where[0]}:{where[1]}" if where else ""
            errors[qualname] = " ".join(f"{error}{at}".split())
            continue
        for q, infos in infer_from_runs(f"declared on {qualname}", setup, default_run, probe_run).items():
            table.setdefault(q, infos)
    return table, errors
