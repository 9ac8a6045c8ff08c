"""Names and places of code: the dotted name of a function, the object a dotted name names,
the functions of a package, a file's path relative to the repository.

The tracers (site_builder/run/trace.py) name every call they record this way, and the stages
that run code (the shape probes, the parameter table, the examples) resolve the names an
author writes (``pkg.ops.relu_forward``) with it.

Trade-offs:
* **Names from the code object's file, not from ``__module__``.** A code object carries no
  module name: its qualname is the file's path under the repository with dots
  (``pkg/ops.py`` -> ``pkg.ops``), which is what an imported function's ``__module__`` is for
  every module of the documented package.
* **Only imported modules are listed** by :func:`module_functions`: a run can only reach code
  whose module it imported, and importing more to list it would run more.
"""
from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from types import CodeType, FunctionType, MethodType

REPO_ROOT = Path(__file__).resolve().parents[2]

__all__ = ["REPO_ROOT", "repo_relative", "repo_file", "unwrap", "qualname_of", "code_qualname",
           "resolve_qualname", "module_functions"]


def repo_relative(filename: str) -> str:
    """``pkg/layers.py`` for a file inside the repository, else the absolute path. A
    code object's file name that is not absolute (a compiled extension's
    ``numpy/random/_generator.pyx``, ``<frozen ...>``) is not a file of the repository, whatever
    the working directory: it is returned as it is."""
    if not Path(filename).is_absolute():
        return filename
    path = Path(filename).resolve()
    try:
        return path.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def repo_file(filename: str):
    """The repository-relative path of a code object's file, or None if it is not one."""
    rel = repo_relative(filename)
    return None if rel.startswith("/") or not Path(filename).is_absolute() else rel


def unwrap(fn) -> FunctionType:
    if isinstance(fn, (classmethod, staticmethod)):
        fn = fn.__func__
    if isinstance(fn, MethodType):
        fn = fn.__func__
    fn = inspect.unwrap(fn)
    if isinstance(fn, MethodType):
        fn = fn.__func__
    if not isinstance(getattr(fn, "__code__", None), CodeType):
        raise TypeError(f"cannot trace {fn!r}: it is not a Python function")
    return fn


def qualname_of(fn) -> str:
    """``"pkg.optim.Adam.step"`` for a function, bound method or code object."""
    if isinstance(fn, CodeType):
        return code_qualname(fn)
    fn = unwrap(fn)
    return f"{fn.__module__}.{fn.__qualname__}"


def _module_name_for_file(filename: str) -> str:
    rel = repo_relative(filename)
    if rel.startswith("/"):
        return Path(filename).stem
    parts = rel[:-3].split("/") if rel.endswith(".py") else rel.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def code_qualname(code: CodeType) -> str:
    name = getattr(code, "co_qualname", code.co_name)
    return f"{_module_name_for_file(code.co_filename)}.{name}"


def resolve_qualname(qualname: str):
    """Import and return the object named by ``"package.module.Class.method"``: the longest
    importable module prefix, then attributes."""
    parts = qualname.split(".")
    for i in range(len(parts) - 1, 0, -1):
        modname = ".".join(parts[:i])
        try:
            obj = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            if e.name and modname.startswith(e.name):
                continue      # this prefix is not a module; try a shorter one
            raise
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            raise LookupError(f"{qualname}: module {modname} has no {'.'.join(parts[i:])}") from None
        return obj
    raise LookupError(f"{qualname}: no importable module in that name")


def module_functions(prefix: str) -> dict[CodeType, str]:
    """Every function and method defined in the already-imported modules ``prefix`` and
    ``prefix.*`` (nested functions included), as ``{code object: qualname}``. Only imported
    modules are listed: a run can only reach code whose module it imported."""
    found: dict[CodeType, str] = {}

    def add_code(code: CodeType, qual: str, modname: str):
        if code in found:
            return
        found[code] = qual
        for const in code.co_consts:
            if isinstance(const, CodeType) and not const.co_name.startswith("<"):
                inner = getattr(const, "co_qualname", None)
                add_code(const, f"{modname}.{inner}" if inner
                         else f"{qual}.<locals>.{const.co_name}", modname)

    def add_function(fn, modname):
        try:
            fn = unwrap(fn)
        except TypeError:
            return
        if fn.__module__ == modname:
            add_code(fn.__code__, f"{fn.__module__}.{fn.__qualname__}", modname)

    for modname, module in sorted(sys.modules.items()):
        if module is None or not (modname == prefix or modname.startswith(prefix + ".")):
            continue
        for obj in list(vars(module).values()):
            if isinstance(obj, type) and obj.__module__ == modname:
                for member in vars(obj).values():
                    if isinstance(member, property):
                        for acc in (member.fget, member.fset, member.fdel):
                            if acc is not None:
                                add_function(acc, modname)
                    elif callable(member) or isinstance(member, (classmethod, staticmethod)):
                        add_function(member, modname)
            elif isinstance(obj, FunctionType):
                add_function(obj, modname)
    return found
