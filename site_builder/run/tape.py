"""Record a NumPy computation as a tape: a small data program that a replayer runs again on
new inputs (static/js/replay.js in the browser, `replay` below in Python).

`record(fn, inputs, constants)` calls the real function once with its inputs (and the
constant arrays it reads, e.g. the parameters) wrapped in `Traced`, an ndarray subclass that
computes exactly what NumPy computes and, beside each result, appends one operation to the
tape: its kind (a ufunc, a reduction, matmul, a reshape, an index, ...), the nodes it reads,
its Python constants, its result's shape, and the line of the project that performed it.
Arrays the function makes itself from no traced value (a causal mask, np.ones for a row sum)
become constants of the tape, by value.

Trade-offs, and why:

* **Tracing the real call, never a second model.** The tape is what the documented package did, op by
  op; an edit of the package changes the tape (the example that records it reads the
  package's files, so its cache key changes), and `check` below replays the tape on a second input
  and compares it with a fresh real call, so an operation the recorder did not see (a value
  that left the trace through a function it does not know) fails the recording, not the page.
* **Shapes are fixed per tape.** Every shape is recorded as it was, so a computation whose
  shapes depend on the input (a prompt's length T) is recorded once per case; the bundle
  holds one tape per case and the replayer picks it (`cases`).
* **Control flow on values is a guard.** `if bad.any():` on a traced value records the truth
  value it had; the replayer refuses an input that would take the other branch, rather
  than computing something the code would not.
* **Data, never code.** A tape is JSON (op names from a fixed list) and float64 constants;
  the replayer looks each op up in a table and evaluates nothing.
* **A Python number input is a float.** An input given as a Python float (a temperature the
  model checks with `isinstance(t, float)`) is traced as `TracedNumber`, a float that records
  its arithmetic with arrays and turns each comparison into a guard.
* **A random draw is a declared step.** The recorder cannot follow `int(rng.choice(...))`
  (its searchsorted and the int leave NumPy's dispatch), so `ChoiceRecorder` stands in for the
  generator: the tape ends at the distribution the draw is asked for, and the replayer draws as
  NumPy's `Generator.choice` does with the uniform the generator would give (`choice_step`).
* **In place.** `Y += b` and `np.exp(E, out=E)` rebind the array to the new node; a view
  taken before such an edit would read a stale node, which `check` would catch.

NumPy's array constructors (`asarray`, `ascontiguousarray`, `array`) do not dispatch on a
subclass, so while a recording runs they are wrapped to keep a traced array traced.
"""
import contextlib
import functools
import hashlib
import os
import sys
from dataclasses import dataclass, field

import numpy as np

UFUNCS = {"add", "subtract", "multiply", "divide", "true_divide", "exp", "log", "sqrt", "maximum", "minimum",
          "negative", "absolute", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
          "logical_or", "logical_and", "bitwise_or", "bitwise_and", "logical_not", "matmul", "power", "square",
          "reciprocal", "invert"}
SHAPE_ONLY = {"ndim", "shape", "size", "result_type", "iscomplexobj", "isrealobj"}
REDUCTIONS = {"add", "maximum", "minimum", "logical_or", "logical_and", "bitwise_or", "bitwise_and"}
_HERE = os.path.realpath(__file__)
RECORD_TIMEOUT = 180.0          # seconds for an example that records its tapes (16 cases, each checked)


class TapeError(ValueError):
    """The computation did something the recorder cannot record; str(e) says what and where."""


@dataclass
class Tape:
    """ops: [{op, args (node ids), ..., shape, line}]; node i is the result of ops[i].
    consts: {node: array}; inputs: {name: node}; outputs: [node]; lines: [(file, line)]."""
    ops: list = field(default_factory=list)
    consts: dict = field(default_factory=dict)
    inputs: dict = field(default_factory=dict)
    outputs: list = field(default_factory=list)
    lines: list = field(default_factory=list)


class Traced(np.ndarray):
    """An ndarray that knows which node of the tape being recorded holds its value."""
    node = None
    tape = None

    def __array_finalize__(self, obj):
        self.node = getattr(obj, "node", None) if obj is not None else None
        self.tape = getattr(obj, "tape", None) if obj is not None else None

    # -- ufuncs: element-wise, matmul and reductions
    def __array_ufunc__(self, ufunc, method, *args, out=None, **kw):
        tape = _tape_of(args, out)
        if ufunc.__name__ not in UFUNCS:
            raise TapeError(f"np.{ufunc.__name__} is not an operation the tape knows (at {_line()})")
        if ufunc.__name__ in _BOOLEAN and any(_plain(a).dtype != bool for a in args if isinstance(a, np.ndarray)):
            raise TapeError(f"np.{ufunc.__name__} on numbers (not booleans) is not an operation the tape knows (at {_line()})")
        # the operands' nodes first: an untraced operand written in place becomes a constant as it was
        if method == "__call__":
            op = dict(op=ufunc.__name__.replace("true_divide", "divide"), args=[tape.node_of(a) for a in args])
        elif method == "reduce" and ufunc.__name__ in REDUCTIONS:
            op = dict(op="reduce", ufunc=ufunc.__name__, args=[tape.node_of(args[0])],
                      axis=_axes(kw.get("axis", 0), args[0].ndim), keepdims=bool(kw.get("keepdims", False)))
        else:
            raise TapeError(f"np.{ufunc.__name__}.{method} is not an operation the tape knows (at {_line()})")
        plain = [_plain(a) for a in args]
        outs = tuple(_plain(o) for o in out) if out else None
        result = getattr(ufunc, method)(*plain, **({"out": outs} if outs else {}), **kw)
        if out:
            target = out[0]
            node = tape.add(op, np.asarray(result))
            if isinstance(target, Traced):
                target.node, target.tape = node, tape
                return target
            # an untraced array written in place: what the call returns is traced from here on (a
            # later read of the array itself would be a constant, which check() catches)
            return _as_traced(target, node, tape)
        return tape.wrap(result, op)

    def __array_function__(self, func, types, args, kwargs):
        tape = _tape_of(args, None) or _tape_of(tuple(kwargs.values()), None)
        name = func.__name__
        plain_args = [_plain(a) for a in args]
        plain_kw = {k: _plain(v) for k, v in kwargs.items()}
        result = func(*plain_args, **plain_kw)
        if name in SHAPE_ONLY:                 # what they tell is known when the tape is recorded
            return result
        if name == "where" and len(args) == 3:
            return tape.wrap(result, dict(op="where", args=[tape.node_of(a) for a in args]))
        if name in ("copy", "ascontiguousarray", "asarray"):
            return tape.wrap(result, dict(op="copy", args=[tape.node_of(args[0])]))
        if name == "swapaxes":
            return args[0].swapaxes(*args[1:], **kwargs)
        if name == "transpose":
            return args[0].transpose(*args[1:], **kwargs)
        if name == "reshape":
            return args[0].reshape(*args[1:], **kwargs)
        raise TapeError(f"np.{name} is not an operation the tape knows (at {_line()})")

    # -- views and copies, which NumPy makes without asking the subclass
    def reshape(self, *shape, **kw):
        result = self.view(np.ndarray).reshape(*shape, **kw)
        return self.tape.wrap(result, dict(op="reshape", args=[self.node]))

    def swapaxes(self, a, b):
        axes = list(range(self.ndim))
        axes[a], axes[b] = axes[b], axes[a]
        return self.transpose(axes)

    def transpose(self, *axes):
        axes = list(axes[0]) if len(axes) == 1 and isinstance(axes[0], (list, tuple)) else list(axes)
        axes = axes or list(range(self.ndim))[::-1]
        result = self.view(np.ndarray).transpose(axes)
        return self.tape.wrap(result, dict(op="transpose", args=[self.node], axes=[a % self.ndim for a in axes]))

    @property
    def T(self):
        return self.transpose()

    def astype(self, dtype, copy=True, **kw):
        result = self.view(np.ndarray).astype(dtype, copy=True, **kw)
        return self.tape.wrap(result, dict(op="copy", args=[self.node]))

    def copy(self, order="C"):
        return self.tape.wrap(self.view(np.ndarray).copy(order), dict(op="copy", args=[self.node]))

    def __getitem__(self, index):
        result = self.view(np.ndarray)[_plain_index(index)]
        return self.tape.wrap(result, self.tape.index_op(self, index))

    def __setitem__(self, index, value):
        raise TapeError(f"an assignment into a traced array is not an operation the tape knows (at {_line()})")

    # -- values that leave the trace: control flow is a guard, anything else is refused
    def __bool__(self):
        value = bool(self.view(np.ndarray))
        self.tape.add(dict(op="guard", args=[self.node], value=value), np.asarray(value))
        return value

    def _leave(self, what):
        raise TapeError(f"{what} of a traced value leaves the tape (at {_line()}); the replayer could not follow it")

    def __int__(self):
        self._leave("int()")

    def __float__(self):
        self._leave("float()")

    def __index__(self):
        self._leave("using it as an index")

    def item(self, *a):
        self._leave(".item()")

    def tolist(self):
        self._leave(".tolist()")

class TracedNumber(float):
    """A Python float input that stays traced: arithmetic with it is arithmetic on its 0-d
    traced array (`array`), each comparison is a guard (the replayer refuses an input that
    compares otherwise), and turning it into a plain number leaves the tape."""

    def __new__(cls, value, array):
        self = super().__new__(cls, value)
        self.array = array
        return self

    __hash__ = float.__hash__

    def __eq__(self, other):
        return bool(self.array == _plain(other))

    def __ne__(self, other):
        return bool(self.array != _plain(other))

    def __lt__(self, other):
        return bool(self.array < _plain(other))

    def __le__(self, other):
        return bool(self.array <= _plain(other))

    def __gt__(self, other):
        return bool(self.array > _plain(other))

    def __ge__(self, other):
        return bool(self.array >= _plain(other))

    def __neg__(self):
        return -self.array

    def __abs__(self):
        return abs(self.array)

    def __float__(self):
        raise TapeError(f"float() of a traced number leaves the tape (at {_line()}); the replayer could not follow it")

    def __int__(self):
        raise TapeError(f"int() of a traced number leaves the tape (at {_line()}); the replayer could not follow it")

    __round__ = __trunc__ = __floor__ = __ceil__ = __int__


def _number_op(op, reflected=False):
    if reflected:
        return lambda self, other: op(_plain_number(other), self.array)
    return lambda self, other: op(self.array, _plain_number(other))


def _plain_number(x):
    return x.array if isinstance(x, TracedNumber) else x


import operator as _operator  # noqa: E402
for _name in ("add", "sub", "mul", "truediv", "pow", "floordiv", "mod"):
    setattr(TracedNumber, f"__{_name}__", _number_op(getattr(_operator, _name)))
    setattr(TracedNumber, f"__r{_name}__", _number_op(getattr(_operator, _name), reflected=True))


class ChoiceRecorder:
    """Stands in for a NumPy Generator while a sampling step is recorded: `choice(n, p=p)` keeps
    the (traced) distribution it is asked to draw from in `p` and answers 0. The draw itself is
    the replayer's declared step, `choice_step`, given the uniform the real generator draws."""

    p = None

    def choice(self, n, p=None):
        if p is None:
            raise TapeError(f"choice without p is not a draw the tape knows (at {_line()})")
        self.p = p
        return 0


def choice_step(p, u) -> int:
    """NumPy's Generator.choice(len(p), p=p) given the uniform u = rng.random() it draws (numpy/
    random/_generator.pyx: cdf = p.cumsum(); cdf /= cdf[-1]; cdf.searchsorted(u, side='right')):
    static/js/replay-views.js `choice` is the same step, and the test holds it to NumPy's draws."""
    cdf = np.cumsum(np.asarray(p, dtype=np.float64))
    cdf /= cdf[-1]
    return int(np.searchsorted(cdf, u, side="right"))


class Recording:
    """The tape being recorded and the bookkeeping of its nodes."""

    def __init__(self, root):
        self.root = os.path.realpath(root) + os.sep
        self.tape = Tape()
        self._const_nodes = {}            # id(array) -> (node, array): one node per constant array

    def add(self, op, value) -> int:
        op["shape"] = list(np.shape(value))
        op["line"] = self._line_index()
        self.tape.ops.append(op)
        return len(self.tape.ops) - 1

    def wrap(self, result, op):
        node = self.add(op, result)
        out = np.asarray(result).view(Traced)
        out.node, out.tape = node, self
        return out

    def constant(self, value, name=None) -> int:
        """The node of an untraced array: one per array and value (an array changed in place
        since it was last read is a new constant, as it is now)."""
        arr = np.array(value, dtype=np.float64)
        known = self._const_nodes.get(id(value))
        if known is not None and known[1] is value and np.array_equal(known[2], arr, equal_nan=True):
            return known[0]
        node = self.add(dict(op="const", args=[], name=name), arr)
        self.tape.consts[node] = arr
        self._const_nodes[id(value)] = (node, value, arr)
        return node

    def node_of(self, value):
        """A node for an operand: its node if traced, else a constant (a Python number stays in the op)."""
        if isinstance(value, Traced):
            return value.node
        if isinstance(value, TracedNumber):
            return value.array.node
        if isinstance(value, (int, float, bool, np.number, np.bool_)) and not isinstance(value, np.ndarray):
            if np.isfinite(float(value)):
                return {"number": float(value)}
            return self.constant(np.float64(value))    # inf and nan travel as float64 bytes, not JSON
        return self.constant(value)

    def index_op(self, array, index):
        parts = index if isinstance(index, tuple) else (index,)
        if len(parts) == 1 and isinstance(parts[0], (np.ndarray, list)) and not isinstance(parts[0], slice):
            return dict(op="take", args=[array.node, self.node_of(np.asarray(parts[0]) if isinstance(parts[0], list) else parts[0])])
        axes, dim = [], 0
        for p in parts:
            if p is Ellipsis:
                left = array.ndim - dim - sum(1 for q in parts if q is not None and q is not Ellipsis and q is not p)
                axes += [["s", 0, array.shape[dim + k], 1] for k in range(left)]
                dim += left
            elif p is None:
                axes.append(["new"])
            elif isinstance(p, slice):
                start, stop, step = p.indices(array.shape[dim])
                axes.append(["s", start, stop, step])
                dim += 1
            elif isinstance(p, (int, np.integer)) and not isinstance(p, bool):
                axes.append(["i", int(p) % array.shape[dim]])
                dim += 1
            else:
                raise TapeError(f"an index {type(p).__name__} is not one the tape knows (at {_line()})")
        axes += [["s", 0, array.shape[k], 1] for k in range(dim, array.ndim)]
        return dict(op="slice", args=[array.node], axes=axes)

    def _line_index(self):
        where = _caller(self.root)
        if where not in self._lines:
            self._lines[where] = len(self.tape.lines)
            self.tape.lines.append(list(where))
        return self._lines[where]

    _lines = None


@functools.lru_cache(maxsize=1024)
def _real(filename):
    return os.path.realpath(filename)


def _caller(root):
    """(file relative to the root, line) of the innermost frame of the project that is running."""
    f = sys._getframe(2)
    while f is not None:
        path = _real(f.f_code.co_filename)
        if path != _HERE and path.startswith(root) and os.sep + "site_builder" + os.sep not in path[len(root) - 1:]:
            return path[len(root):].replace(os.sep, "/"), f.f_lineno
        f = f.f_back
    return "?", 0


def _line():
    f = sys._getframe(2)
    while f is not None and os.path.realpath(f.f_code.co_filename) == _HERE:
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f else "?"


def _tape_of(args, out):
    for a in tuple(args) + tuple(out or ()):
        if isinstance(a, Traced) and a.tape is not None:
            return a.tape
        if isinstance(a, (list, tuple)):
            t = _tape_of(a, None)
            if t is not None:
                return t
    return None


def _plain(a):
    if isinstance(a, Traced):
        return a.view(np.ndarray)
    if isinstance(a, TracedNumber):
        return float.__float__(a)
    if isinstance(a, (list, tuple)) and any(isinstance(x, Traced) for x in a):
        return type(a)(_plain(x) for x in a)
    return a


def _plain_index(index):
    if isinstance(index, tuple):
        return tuple(_plain(p) for p in index)
    return _plain(index)


def _axes(axis, ndim):
    if axis is None:
        return list(range(ndim))
    axis = axis if isinstance(axis, tuple) else (axis,)
    return sorted(a % ndim for a in axis)


@contextlib.contextmanager
def _constructors_keep_traces():
    """np.asarray & co. return a base ndarray for a subclass: while recording, they keep it traced."""
    originals = {name: getattr(np, name) for name in ("asarray", "ascontiguousarray", "array")}

    def keeping(name):
        original = originals[name]

        def constructor(a, *args, **kw):
            if isinstance(a, Traced):
                dtype = kw.get("dtype", args[0] if args else None)
                if dtype is None or np.dtype(dtype) == a.dtype:
                    return a if name != "array" or kw.get("copy", True) is False else a.copy()
                return a.astype(dtype)
            return original(a, *args, **kw)
        return constructor
    try:
        for name in originals:
            setattr(np, name, keeping(name))
        yield
    finally:
        for name, original in originals.items():
            setattr(np, name, original)


def record(root, fn, inputs: dict, constants: dict = None) -> Tape:
    """Call fn(**inputs, **constants) with every input and constant traced; the tape of what it
    computed, its outputs the arrays of what fn returns (a list, tuple or dict of them, flattened
    in order). constants: {name: array or {key: array}} (a dict of parameters keeps their names)."""
    rec = Recording(root)
    rec._lines = {}
    traced = {}
    for name, value in inputs.items():
        arr = np.asarray(value)
        node = rec.add(dict(op="input", args=[], name=name), arr)
        rec.tape.inputs[name] = node
        traced[name] = _as_traced(arr, node, rec)
        if type(value) is float:           # a Python number stays a float the model's checks accept
            traced[name] = TracedNumber(value, traced[name])
    for name, value in (constants or {}).items():
        if isinstance(value, dict):
            traced[name] = {k: _as_traced(v, rec.constant(v, f"{name}.{k}"), rec) for k, v in value.items()}
        else:
            traced[name] = _as_traced(value, rec.constant(value, name), rec)
    with _constructors_keep_traces():
        result = fn(**traced)
    # an output computed from no input (a mask of the case's shape) is a constant of the tape
    rec.tape.outputs = [x.node if isinstance(x, Traced) else rec.constant(x) for x in _leaves(result)]
    return prune(rec.tape)


def _as_traced(arr, node, rec):
    out = np.asarray(arr).view(Traced)
    out.node, out.tape = node, rec
    return out


def _leaves(result):
    if isinstance(result, dict):
        return [x for v in result.values() for x in _leaves(v)]
    if isinstance(result, (list, tuple)):
        return [x for v in result for x in _leaves(v)]
    return [result]


def prune(tape: Tape) -> Tape:
    """Only the ops the outputs and the guards read, renumbered in order."""
    keep = set(tape.outputs) | {i for i, op in enumerate(tape.ops) if op["op"] == "guard"}
    for i in range(len(tape.ops) - 1, -1, -1):
        if i in keep:
            keep.update(a for a in tape.ops[i]["args"] if isinstance(a, int))
    keep |= set(tape.inputs.values())
    new = {old: n for n, old in enumerate(sorted(keep))}
    ops = []
    for old in sorted(keep):
        op = dict(tape.ops[old])
        op["args"] = [new[a] if isinstance(a, int) else a for a in op["args"]]
        ops.append(op)
    return Tape(ops, {new[k]: v for k, v in tape.consts.items() if k in new},
                {k: new[v] for k, v in tape.inputs.items()}, [new[o] for o in tape.outputs], tape.lines)


# ------------------------------------------------------------------ the reference replayer

def replay(tape: Tape, inputs: dict) -> list:
    """Run the tape with NumPy on new inputs (the outputs, in order): the replayer the
    recording is checked with; static/js/replay.js is the same interpreter in JavaScript."""
    values = []
    for i, op in enumerate(tape.ops):
        a = [values[x] if isinstance(x, int) else x["number"] for x in op["args"]]
        kind = op["op"]
        if kind == "input":
            v = np.asarray(inputs[op["name"]], dtype=np.float64)
        elif kind == "const":
            v = tape.consts[i]
        elif kind == "reduce":
            v = getattr(np, _NUMPY_NAMES.get(op["ufunc"], op["ufunc"])).reduce(a[0], axis=tuple(op["axis"]), keepdims=op["keepdims"])
        elif kind == "reshape":
            v = a[0].reshape(op["shape"])
        elif kind == "transpose":
            v = a[0].transpose(op["axes"])
        elif kind == "copy":
            v = a[0]
        elif kind == "where":
            v = np.where(a[0] != 0, a[1], a[2])
        elif kind == "take":
            v = a[0][a[1].astype(np.intp)]
        elif kind == "slice":
            v = a[0][tuple(np.newaxis if s[0] == "new" else (s[1] if s[0] == "i" else slice(s[1], s[2] if s[2] >= 0 else None, s[3]))
                           for s in op["axes"])]
        elif kind == "guard":
            if bool(a[0]) != op["value"]:
                raise TapeError(f"this input takes a branch the recording did not (line {tape.lines[op['line']]})")
            v = a[0]
        else:
            fn = getattr(np, _NUMPY_NAMES.get(kind, kind))
            with np.errstate(all="ignore"):
                v = fn(*[(x != 0) if kind in _BOOLEAN and isinstance(x, np.ndarray) else x for x in a])
        v = np.asarray(v, dtype=np.float64)
        if list(v.shape) != op["shape"]:
            raise TapeError(f"op {i} ({kind}) made shape {v.shape}, the recording {tuple(op['shape'])}")
        values.append(v)
    return [values[o] for o in tape.outputs]


_NUMPY_NAMES = {"bitwise_or": "logical_or", "bitwise_and": "logical_and", "invert": "logical_not"}
_BOOLEAN = {"logical_or", "logical_and", "bitwise_or", "bitwise_and", "logical_not", "invert"}


def check(tape: Tape, inputs: dict, run_real) -> float:
    """Replay the tape on `inputs` and compare with run_real(**inputs), the real call: the
    largest relative difference; a TapeError if it is not tiny (a value left the trace)."""
    got = replay(tape, inputs)
    want = [np.asarray(x, dtype=np.float64) for x in _leaves(run_real(**inputs))]
    worst = 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            raise TapeError(f"the tape gives shape {g.shape}, the real call {w.shape}")
        finite = np.isfinite(w)
        if not np.array_equal(np.isfinite(g), finite) or not np.array_equal(g[~finite], w[~finite], equal_nan=True):
            raise TapeError("the tape and the real call disagree on which values are infinite")
        scale = np.maximum(np.abs(w[finite]), 1e-300)
        worst = max(worst, float((np.abs(g[finite] - w[finite]) / np.maximum(scale, 1.0)).max(initial=0.0)))
    if worst > 1e-12:
        raise TapeError(f"the tape replayed on a second input differs from the real call by {worst:.1e}: "
                        f"a value left the trace through a function the recorder does not see")
    return worst


# ------------------------------------------------------------------ the bundle the site ships

def bundle(tapes: dict, **meta) -> dict:
    """Several tapes (one per case, e.g. {T: tape}) as one plain dict: their ops, and every
    constant once (equal arrays are shared), as float64 bytes the writer packs."""
    blobs, order = {}, []
    out = dict(meta, cases={})
    for case, tape in tapes.items():
        ops = []
        for i, op in enumerate(tape.ops):
            op = {k: v for k, v in op.items() if v is not None}
            if op["op"] == "const":
                arr = tape.consts[i]
                key = hashlib.sha256(arr.tobytes() + str(arr.shape).encode()).hexdigest()
                if key not in blobs:
                    blobs[key] = len(order)
                    order.append(arr)
                op["c"] = blobs[key]
            ops.append(op)
        out["cases"][str(case)] = dict(ops=ops, inputs=tape.inputs, outputs=tape.outputs, lines=tape.lines)
    out["constants"] = order
    return out


# ------------------------------------------------------------------ slots: the result's wording, shared

class Slot:
    """Output `index` of a tape, standing where the real value stands when an example formats
    its result: formatted by a formatter of `slot_format`, it is the text `@@index name@@`, which
    the replayer (static/js/replay-views.js, view "slots") fills with the replayed value formatted
    the same way. So one function of the example builds both its own table and the replayed one."""

    def __init__(self, index):
        self.index = index


def slots(structure, start=0):
    """The structure fn returned (dicts, lists, arrays), its leaves Slot(0), Slot(1), ... in the
    order record() numbers the tape's outputs."""
    counter = iter(range(start, 1 << 30))

    def walk(x):
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(walk(v) for v in x)
        return Slot(next(counter))
    return walk(structure)


def slot_format(name, real):
    """A formatter that writes a Slot as its slot text and formats anything else with `real`.
    name: one of the replayer's formats (fmt_number, fmt_array, sci3, g)."""
    def fmt(value):
        return f"@@{value.index} {name}@@" if isinstance(value, Slot) else real(value)
    return fmt


def input_slot(name, fmt, value):
    """The declared input `name` where a result's wording shows it: its slot text if value is
    None (the replayed template), else the value formatted as the replayer formats it (fmt)."""
    return f"@@input:{name} {fmt}@@" if value is None else value
