"""What kind of value each parameter of a function takes, read from the code, for `new-concept`.

A parameter is an array (with its number of axes when a caller shows it), a scalar (with a
value a caller or its default gives; a probability when it is compared with a random draw or
used as `1 - p`), a generator, or unknown. The evidence, strongest first:

- its annotation (`float`, `np.ndarray`, `np.random.Generator`) and its default (`eps=1e-5`);
- how the function uses it: `rng.random(...)` is a generator, `X.shape`, `X[...]`, `X @ W`,
  `X.reshape` an array, `np.arange(n)` or an index `[-k]` an integer, `draw < p` a probability;
- how its callers pass it, in the package and its tests: a number (`1e-5`), a config field
  (`cfg.FIELD`, valued at the documented config), `np.random.default_rng(0)`, an array
  constructor whose shape gives the axes (`np.ones(6)`, `rng.standard_normal((4, 6))`), or a
  constant of a fixtures module (its value is read, and the example reuses it).

Trade-offs: this reads syntax, runs nothing of the function, and follows a caller's local
one assignment back; two kinds of evidence that disagree, or none, leave the parameter
unknown, and the scaffold then writes a TODO that `check` names rather than a guess it would
accept (issue 26: a scalar scaffolded as an array passed `check` and showed inf).
"""
from __future__ import annotations

import ast
import importlib
import textwrap
from dataclasses import dataclass, field

RNG_METHODS = {"random", "standard_normal", "normal", "uniform", "integers", "choice", "permutation",
               "shuffle", "binomial", "exponential", "poisson", "bernoulli", "rand", "randn"}
ARRAY_ATTRS = {"shape", "ndim", "reshape", "T", "sum", "mean", "max", "min", "dtype", "astype", "copy", "size"}
MAKERS_BY_SHAPE = {"zeros", "ones", "empty", "full", "standard_normal", "random", "rand", "uniform", "normal",
                   "integers"}


@dataclass
class Kind:
    """A parameter's kind: 'array', 'scalar', 'generator' or 'unknown', and what shows it."""
    kind: str = "unknown"
    ndim: int | None = None              # an array's axes, where a caller shows them
    integer: bool = False                 # a scalar or array of whole numbers
    probability: bool = False             # a scalar in [0, 1]
    value: object = None                  # a scalar's value as a caller or the default gives it
    has_default: bool = False
    fixture: str | None = None            # "module:NAME", a fixtures constant a caller passes
    why: list = field(default_factory=list)

    def say(self) -> str:
        if self.kind == "array":
            return f"an array{f' of {self.ndim} axes' if self.ndim else ''}"
        if self.kind == "scalar":
            return "a probability" if self.probability else ("a whole number" if self.integer else "a number")
        return {"generator": "a random generator", "unknown": "unknown"}[self.kind]


def _name(node) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _number(node):
    """The number a literal is (`1e-5`, `-2`), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _number(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    return None


def _is_draw(node) -> bool:
    """`rng.random(...)`, `np.random.default_rng(0).uniform(...)`: a random draw."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in RNG_METHODS
               for n in ast.walk(node))


def _tree(source_lines) -> ast.FunctionDef:
    tree = ast.parse(textwrap.dedent("\n".join(source_lines)))
    return next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _from_signature(fn: ast.FunctionDef) -> dict:
    kinds = {}
    args = fn.args.posonlyargs + fn.args.args
    defaults = dict(zip([a.arg for a in args][len(args) - len(fn.args.defaults):], fn.args.defaults))
    defaults.update({a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None})
    for a in args + fn.args.kwonlyargs:
        k = Kind()
        note = ast.unparse(a.annotation) if a.annotation is not None else ""
        if note in ("float", "int"):
            k.kind, k.integer = "scalar", note == "int"
            k.why.append(f"annotated {note}")
        elif "ndarray" in note or "ArrayLike" in note:
            k.kind = "array"
            k.why.append(f"annotated {note}")
        elif "Generator" in note:
            k.kind = "generator"
            k.why.append(f"annotated {note}")
        if a.arg in defaults:
            k.has_default = True
            v = _number(defaults[a.arg])
            if v is not None and k.kind in ("unknown", "scalar"):
                k.kind, k.value, k.integer = "scalar", v, isinstance(v, int)
                k.why.append(f"its default is {v!r}")
        kinds[a.arg] = k
    return kinds


def _from_body(fn: ast.FunctionDef, kinds: dict) -> dict:
    """{name: set of kinds the body's uses of it show}."""
    seen = {name: set() for name in kinds}

    def mark(node, what):
        name = _name(node)
        if name in seen:
            seen[name].add(what)

    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute):
            if node.attr in RNG_METHODS and isinstance(node.value, ast.Name):
                mark(node.value, "generator")
            elif node.attr in ARRAY_ATTRS:
                mark(node.value, "array")
        elif isinstance(node, ast.Subscript):
            keyed = any(isinstance(n, (ast.JoinedStr, ast.Constant)) and isinstance(getattr(n, "value", ""), str)
                        for n in ast.walk(node.slice))
            mark(node.value, "mapping" if keyed else "array")      # params[p + "w"]: a dict, not an array
            index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for i in index:
                mark(i.operand if isinstance(i, ast.UnaryOp) else i, "integer")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            mark(node.left, "array")
            mark(node.right, "array")
        elif isinstance(node, ast.Call):
            callee = ast.unparse(node.func)
            if callee in ("np.arange", "range", "np.eye") and node.args:
                mark(node.args[0], "integer")
            if callee in ("len",) and node.args:
                mark(node.args[0], "array")
        elif isinstance(node, ast.Compare):
            sides = [node.left] + node.comparators
            if any(_is_draw(s) for s in sides):
                for s in sides:
                    mark(s, "probability")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and _number(node.left) == 1:
            mark(node.right, "one-minus")
    return seen


def _call_args(call: ast.Call, params: list) -> dict:
    """{parameter: the argument expression} of one call."""
    out = {p: a for p, a in zip(params, call.args) if not isinstance(a, ast.Starred)}
    out.update({k.arg: k.value for k in call.keywords if k.arg in params})
    return out


def _assigned(caller: ast.FunctionDef, name: str, before: int):
    """The expression a caller's last `name = ...` (or `a, name = x, y`) before a line binds."""
    found = None
    for node in ast.walk(caller):
        if not isinstance(node, ast.Assign) or node.lineno >= before:
            continue
        for target in node.targets:
            if _name(target) == name:
                found = node.value
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                for t, v in zip(target.elts, node.value.elts):
                    if _name(t) == name:
                        found = v
    return found


def _fixture_value(module: str, name: str):
    try:
        return getattr(importlib.import_module(module), name)
    except Exception:
        return None


def _argument_kind(node, caller, line, config, fixtures: dict, depth=0) -> Kind | None:
    """The kind an argument expression shows, following a local name back once."""
    import numpy as np
    v = _number(node)
    if v is not None:
        return Kind("scalar", value=v, integer=isinstance(v, int), why=[f"a caller passes {v!r}"])
    text = ast.unparse(node)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and config is not None \
            and node.value.id.endswith(("cfg", "config")):
        value = getattr(config, node.attr, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return Kind("scalar", value=value, integer=isinstance(value, int), why=[f"a caller passes {text}"])
    if isinstance(node, ast.Call):
        callee = ast.unparse(node.func)
        if callee.endswith("default_rng") or callee.endswith("Generator"):
            return Kind("generator", why=[f"a caller passes {text}"])
        short = callee.split(".")[-1]
        if short in ("linspace", "arange"):
            return Kind("array", ndim=1, why=[f"a caller passes {text}"])
        if short.endswith("_like") and node.args and _name(node.args[0]):
            return None
        if short == "reshape":
            return Kind("array", ndim=len(node.args) if len(node.args) != 1 else None, why=[f"a caller passes {text}"])
        if short == "array" and node.args:
            try:
                value = np.asarray(ast.literal_eval(node.args[0]))
                return Kind("array", ndim=value.ndim, integer=value.dtype.kind in "iu", why=[f"a caller passes {text}"])
            except (ValueError, SyntaxError):
                return None
        if short in MAKERS_BY_SHAPE:
            shape = next((k.value for k in node.keywords if k.arg in ("size", "shape")), None)
            if shape is None and node.args:
                shape = node.args[-1] if short in ("uniform", "normal", "integers") and len(node.args) == 3 else node.args[0]
                if short in ("uniform", "normal", "integers") and len(node.args) < 3:
                    shape = None
            if short == "random" and not node.args and shape is None:
                return Kind("scalar", why=[f"a caller passes {text}"])
            if shape is None:
                return None
            ndim = len(shape.elts) if isinstance(shape, ast.Tuple) else 1
            return Kind("array", ndim=ndim, integer=short == "integers", why=[f"a caller passes {text}"])
    name = _name(node)
    if name in fixtures:
        value = _fixture_value(*fixtures[name])
        if value is not None:
            k = _value_kind(value, f"a caller passes the fixture {name}")
            if k is not None:
                k.fixture = ":".join(fixtures[name])
                return k
    if name and depth == 0:
        bound = _assigned(caller, name, line)
        if bound is not None:
            return _argument_kind(bound, caller, line, config, fixtures, depth + 1)
        if name in ("rng", "generator"):
            return None
    return None


def _value_kind(value, why) -> Kind | None:
    import numpy as np
    if isinstance(value, np.ndarray):
        return Kind("array", ndim=value.ndim, integer=value.dtype.kind in "iu", why=[why])
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Kind("scalar", value=value, integer=isinstance(value, int), why=[why])
    return None


def _fixture_names(tree: ast.Module) -> dict:
    """{local name: (module, name)} for `from <...>fixtures import NAME` of a caller's file."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[-1] == "fixtures":
            for a in node.names:
                out[a.asname or a.name] = (node.module, a.name)
    return out


def _from_callers(index, qualname, params, config) -> dict:
    """{parameter: [Kind, ...]} from each direct call of `qualname` in the package and tests."""
    found = {p: [] for p in params}
    trees = {}
    short = qualname.rsplit(".", 1)[-1]
    for caller, line in index.called_by(qualname):
        f = index.function(caller)
        if f.file not in trees:
            trees[f.file] = ast.parse("\n".join(index.files[f.file]))
        module = trees[f.file]
        fixtures = _fixture_names(module)
        caller_def = next((n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and n.lineno == f.start and n.name == f.name), None)
        if caller_def is None:
            continue
        for call in ast.walk(caller_def):
            if not (isinstance(call, ast.Call) and call.lineno <= line <= (call.end_lineno or line)
                    and ast.unparse(call.func).split(".")[-1] == short):
                continue
            for p, arg in _call_args(call, params).items():
                k = _argument_kind(arg, caller_def, call.lineno, config, fixtures)
                if k is not None:
                    found[p].append(k)
    return found


def parameter_kinds(index, qualname: str, config=None) -> dict:
    """{parameter: Kind} for every parameter of `qualname` but self."""
    f = index.function(qualname)
    fn = _tree(index.files[f.file][f.first_line - 1:f.end])
    kinds = _from_signature(fn)
    kinds.pop("self", None)
    uses = _from_body(fn, kinds)
    callers = _from_callers(index, qualname, list(kinds), config)
    for name, k in kinds.items():
        use = uses.get(name, set())
        if "generator" in use and k.kind in ("unknown", "generator"):
            k.kind = "generator"
            k.why.append(f"the function calls {name}.<a random draw>")
        if "probability" in use and k.kind in ("unknown", "scalar"):
            k.kind, k.probability = "scalar", True
            k.why.append("it is compared with a random draw")
        if "mapping" in use and k.kind == "unknown":
            k.kind = "mapping"
            k.why.append("the function reads it by string keys")
        if "array" in use and k.kind == "unknown":
            k.kind = "array"
            k.why.append("the function indexes it or reads its shape")
        if "integer" in use and k.kind in ("unknown", "scalar"):
            k.integer = True
        for c in callers[name]:
            if k.kind == "unknown":
                k.kind = c.kind
            if c.kind != k.kind:
                k.why.append(f"but {c.why[0]}")
                k.kind = "conflict"
                break
            k.why += c.why
            if c.kind == "array":
                k.ndim = k.ndim or c.ndim
                k.integer = k.integer or c.integer
                k.fixture = k.fixture or c.fixture
            elif c.kind == "scalar" and k.value is None:
                k.value, k.fixture = c.value, k.fixture or c.fixture
                k.integer = k.integer or c.integer
        if k.kind == "scalar" and "one-minus" in use and not k.probability and (k.value is None or 0 <= k.value <= 1):
            k.probability = True
        if k.kind in ("conflict", "mapping"):
            k.kind = "unknown"          # a mapping (a parameter dict): no probe can build it
        if k.kind == "scalar" and k.integer and isinstance(k.value, float):
            k.integer = False
    return kinds
