"""In the child that runs an example: the shapes each function of the documented package held
when its first call returned (site_builder/run/example_shapes.py says why and how they are checked).

Kept apart from the checking code because the example cache keys on this file
(example_runner.RECORDING): an edit here reruns every example, an edit there does not.
"""
from __future__ import annotations

import dataclasses
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from site_builder.base.code_paths import code_file

MAX_ENTRIES = 400        # recorded names per function: a dict of every parameter is about 100
MAX_STRING = 80          # longer strings (a text read from a file) are no prefix of a parameter name


def _entries(name, value, out, depth=0):
    """Flatten one value into out: arrays as ("a", shape), ints ("i", n), short strings
    ("s", text); dicts by key, tuples and short lists by index, dataclasses by field (and by
    each property that gives an int, such as a width computed from two fields)."""
    if len(out) >= MAX_ENTRIES:
        return
    if isinstance(value, np.ndarray):
        out[name] = ("a", tuple(int(n) for n in value.shape))
    elif isinstance(value, (bool, np.bool_)):
        return
    elif isinstance(value, (int, np.integer)):
        out[name] = ("i", int(value))
    elif isinstance(value, (float, np.floating)):
        out[name] = ("a", ())                  # a number: the shape () of a declared scalar
    elif isinstance(value, str):
        if len(value) <= MAX_STRING:
            out[name] = ("s", value)
    elif depth > 1:
        return
    elif isinstance(value, dict):
        for k, v in list(value.items())[:MAX_ENTRIES]:
            if isinstance(k, (str, int)):
                _entries(f"{name}[{k!r}]" if isinstance(k, int) else f'{name}["{k}"]', v, out, depth + 1)
    elif isinstance(value, (tuple, list)) and len(value) <= 16:
        for i, v in enumerate(value):
            _entries(f"{name}[{i}]", v, out, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            v = getattr(value, f.name, None)
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                out[f"{name}.{f.name}"] = ("i", int(v))
        for attr in dir(type(value)):                     # sorted, inherited ones too
            if isinstance(getattr(type(value), attr, None), property):
                try:
                    v = getattr(value, attr)
                except Exception:            # a property that needs more than the config
                    continue
                if isinstance(v, int) and not isinstance(v, bool):
                    out[f"{name}.{attr}"] = ("i", v)
        out[name] = ("c", type(value).__name__)


@contextmanager
def record_entered(entered: set):
    """While the block runs (an example module's import), add to `entered` every code object
    that returns (or raises out of its frame): the functions it ran, for its cache key
    (site_builder/gather/function_keys.py)."""
    def hook(frame, event, arg):
        if event == "return":
            entered.add(frame.f_code)
    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield entered
    finally:
        if sys.getprofile() is not hook:
            entered.add(None)
        sys.setprofile(previous)


@contextmanager
def record_shapes(root: Path, into: dict, package: str, entered: set = None):
    """While the block runs, fill `into` with {qualname: {name: entry}} for the first call of
    every function defined under root/`package`/ to return (entries as in `_entries`, the
    returned value as `return`, a returned tuple as `return[0]`, ...).

    A profile hook, not `sys.settrace`: the examples' own `trace_locals` replace the trace
    function while they run, and the functions they trace are the ones a page documents.
    Cost, measured on this repository's 203 examples run warm in one process: 9.3 s of CPU
    without it, 13.8 s with it (Python 3.11 runs every frame on its slower tracing path while
    a hook is set; a cold build spends about 35 s of CPU on examples, most of it starting
    processes). Cached results pay nothing.

    `entered`, if given, gets every code object that returned while the block ran (the
    functions it ran, for its cache key); None in it says a hook other than this one was
    left set, so the set is not complete."""
    package_dir = os.path.realpath(Path(root) / package) + os.sep
    done: set = set()

    def record(frame, arg):
        code = frame.f_code
        rel = code_file(code.co_filename)[len(package_dir):]
        module = f"{package}." + rel[:-3].replace(os.sep, ".") if rel.endswith(".py") else package
        module = module[:-len(".__init__")] if module.endswith(".__init__") else module
        names: dict = {}
        for name, value in list(frame.f_locals.items()):
            if name != "_":
                _entries(name, value, names)
        for name in code.co_names:         # the module constants it reads (MAX_LEN): sizes too
            value = frame.f_globals.get(name)
            if name.isupper() and isinstance(value, int) and not isinstance(value, bool):
                names.setdefault(name, ("i", value))
        if isinstance(arg, tuple):
            for i, v in enumerate(arg[:16]):
                _entries(f"return[{i}]", v, names)
        elif arg is not None:
            _entries("return", arg, names)
        into.setdefault(f"{module}.{code.co_qualname}", names)

    def hook(frame, event, arg):
        if event != "return":
            return
        code = frame.f_code
        if code in done:
            return
        done.add(code)
        if code_file(code.co_filename).startswith(package_dir):
            record(frame, arg)

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield into
    finally:
        if entered is not None:
            entered |= done
            if sys.getprofile() is not hook:     # the block set a profile hook of its own
                entered.add(None)
        sys.setprofile(previous)
