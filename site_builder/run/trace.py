"""Record what each line of a real function does, by running it under ``sys.settrace``.

The site never types a value or a shape: it runs the documented package's own functions and
reads their local variables as they go. This module is the one place that knows how; the
snapshots it takes and the statements it tells apart are site_builder/run/snapshots.py's, the
names it gives code site_builder/run/qualnames.py's.

* :func:`trace_locals` runs one function and returns a :class:`Trace`: one :class:`Step`
  per executed statement of that function's own frame (not of the functions it calls),
  with a snapshot of the frame's locals *after* the statement ran and the names it bound
  or changed.
* :func:`trace_calls` runs an entry point and traces every call of a set of target
  functions wherever they happen in the call tree, one :class:`Trace` per call. With
  ``snapshot="shapes"`` it records only array shapes, which is what shape inference needs.
* :func:`call_tree` runs an entry point and records only who called whom: for each call of
  a function of a package, its nearest caller of that package and the caller's line, as a
  tree of :class:`CallSite` (calls from one line of one caller merged, and counted). No
  locals are read and no line events are asked for, so it costs little more than the run.

Trade-offs, and why:

* **``sys.settrace`` rather than rewriting or re-executing the source.** The traced code
  is the real function object, with its real globals, defaults and closures; nothing is
  copied, compiled or patched, so what the page shows is what ``pytest`` ran. The price is
  speed: every line of a traced frame calls back into Python, and every new frame anywhere
  (NumPy's Python-level helpers included) costs one call of the global trace function.
  Frames that are not traced return ``None`` from it and so pay nothing per line. This is
  fine for one example or one probe run; it is not meant for a training loop.
* **Statements, not raw line events.** CPython reports a "line" event whenever the line
  number changes, so one statement written over several lines (a dict literal on two lines)
  produces several events and even jumps back to its first line to store the result. A step
  here is one execution of one *statement*: consecutive events inside the same statement
  merge, ``Step.line`` is the statement's first line and ``Step.end_line`` its last. A
  ``for`` header is its own statement, so a loop gives one step per iteration for the
  header and for each body statement (plus one last header step when the iterator is
  exhausted). Statement spans come from the AST of the function's file.
* **Snapshots copy, one level deep.** Arrays are copied (``np.array(copy=True)``), dicts
  whose values are arrays are copied one level deep (new dict, copied arrays), lists are
  copied shallowly; every other value is kept as is (by reference). Deeper structures (a
  list of cache dicts) are therefore shared between steps. ``snapshot="shapes"`` copies
  no array: arrays become ``Shape`` (a ``tuple`` subclass, so it compares equal to
  the plain shape tuple and pickles as one), and every dict becomes a new dict with its
  arrays replaced by their ``Shape`` (so its keys are a snapshot too).
* **Change detection by identity and content.** A name is in ``Step.changed`` when it was
  newly bound, rebound to another object, or is the same array/dict/list whose content
  changed in place (``grads[k] += dW`` changes ``grads``; ``m *= b1`` changes ``m``).
  Arrays are compared with :func:`numpy.array_equal` (NaN equal to NaN). In ``"shapes"``
  mode nothing is copied, so in-place changes of content are not seen: only new bindings,
  rebindings and changes of shape or of a dict's keys or values' identity.
* **Recursion.** :func:`trace_locals` follows only the outermost frame of the function's
  code object; :func:`trace_calls` gives every call of a target, recursive or not, its own
  trace. A generator keeps one trace across its resumptions.
* **Failures are loud.** If the function raises, :class:`TraceError` names the function
  and the ``file:line`` of the deepest line of the repository that raised (from the
  traceback), keeps the original exception as ``__cause__``, and carries the partial trace.
* **The previous trace function is always restored** (``sys.gettrace()`` is saved and put
  back in a ``finally``), so debuggers and coverage tools keep working afterwards; while a
  trace runs they are suspended, since CPython has one trace function per thread.
"""
from __future__ import annotations

import dis
import importlib
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType
from typing import Any, Callable, Iterable

from site_builder.run.qualnames import (REPO_ROOT, code_qualname, module_functions, qualname_of, repo_file,
                                        repo_relative, resolve_qualname, unwrap)
from site_builder.run.snapshots import (Fingerprint, Shape, copy_return, copy_value, line_text, shape_value,
                                        statement_spans)

# The tracer's own files: their frames are never the line that raised.
_OWN_FILES = {str(Path(__file__).resolve().with_name(name)) for name in ("trace.py", "qualnames.py", "snapshots.py")}

# Shape is the type of every array a "shapes" trace records: part of what a trace returns.
__all__ = ["Step", "Trace", "TraceError", "Shape", "CallSite", "trace_locals", "trace_calls", "call_tree",
           "raising_location"]


class TraceError(RuntimeError):
    """The traced function raised. ``__cause__`` is the original exception; ``trace`` is
    the partial :class:`Trace` up to the failure (``None`` if nothing was recorded);
    ``file`` and ``line`` locate the deepest repository line in the traceback."""

    def __init__(self, message, trace=None, file=None, line=None):
        super().__init__(message)
        self.trace = trace
        self.file = file
        self.line = line


@dataclass
class Step:
    """One execution of one statement of the traced frame.

    ``line``/``end_line``: the statement's first and last line; ``code``: the text of line
    ``line``, stripped; ``locals``: snapshot after the statement ran; ``changed``: names
    newly bound or changed by it, in the frame's order; ``is_return``: the function returned
    during this statement (the last step of a completed trace), with ``return_value``
    (snapshotted like the locals)."""
    line: int
    code: str
    locals: dict
    changed: tuple[str, ...]
    return_value: Any = None
    is_return: bool = False
    end_line: int = 0


@dataclass
class Trace:
    """Everything one call of ``function`` did. ``function``: module + qualname;
    ``file``: repo-relative path (posix), absolute if outside the repository; ``result``:
    the value returned (the object itself with ``snapshot="values"``, shapes with
    ``"shapes"``); ``exception``: ``"TypeName: message"`` if this call raised (only seen in
    :func:`trace_calls`, when a caller caught it), else ``None``; ``arguments``: snapshot of
    the locals at the call (the arguments), before the first step. Arguments are not in the
    first step's ``changed``. ``call_index``: in :func:`trace_calls`, the order in which the
    traced calls started (a callee starts after its caller); 0 in :func:`trace_locals`."""
    function: str
    file: str
    steps: list[Step] = field(default_factory=list)
    result: Any = None
    exception: str | None = None
    arguments: dict = field(default_factory=dict)
    call_index: int = 0

    def lines(self) -> list[int]:
        """The first line of each step, in order (repeats for loops)."""
        return [s.line for s in self.steps]

    def steps_at(self, line: int) -> list[Step]:
        """Every step whose statement spans ``line``."""
        return [s for s in self.steps if s.line <= line <= max(s.line, s.end_line)]

    def final_locals(self) -> dict:
        """Locals after the last step ({} if there were no steps)."""
        return self.steps[-1].locals if self.steps else {}


@dataclass
class CallSite:
    """One line of a caller that calls ``function``, in a run :func:`call_tree` recorded.
    ``line``: the caller's line (0 for a call with no recorded caller); ``calls``: how many
    calls of ``function`` that line made in the whole run (a line in a loop, or in a function
    called several times, makes more than one); ``children``: the call sites inside
    ``function``, merged over all those calls, in the order they were first reached."""
    function: str
    line: int = 0
    calls: int = 0
    children: list["CallSite"] = field(default_factory=list)

    def child(self, function: str, line: int) -> "CallSite":
        """The child for ``function`` called at ``line`` (made the first time it is asked for)."""
        for c in self.children:
            if c.function == function and c.line == line:
                return c
        made = CallSite(function, line)
        self.children.append(made)
        return made

    def walk(self):
        """This site and every site under it, depth first, in call order."""
        yield self
        for c in self.children:
            yield from c.walk()


# -------------------------------------------------------------------------- recording

_RETURN_OPS = {dis.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap}
_YIELD_OPS = {dis.opmap[n] for n in ("YIELD_VALUE",) if n in dis.opmap}
_GEN_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class _Recorder:
    """Records the steps of one frame."""

    def __init__(self, code: CodeType, qualname: str, mode: str, checked: set | None = None):
        self.code = code
        self.mode = mode
        self.filename = code.co_filename
        self.spans = statement_spans(self.filename, checked)
        self.trace = Trace(function=qualname, file=repo_relative(self.filename))
        self.pending: tuple[int, int] | None = None     # (first, last) of the running statement
        self.prints: dict[str, Fingerprint] = {}
        self.raising: Any = False
        self.done = False
        self.is_generator = bool(code.co_flags & _GEN_FLAGS)

    def start(self, frame):
        """At the call: remember the arguments, so the first step reports only what it bound."""
        snap_one = copy_value if self.mode == "values" else shape_value
        for name, value in dict(frame.f_locals).items():
            try:
                snap = snap_one(value)
                self.prints[name] = Fingerprint(value, snap, self.mode)
            except Exception:
                snap = value
            self.trace.arguments[name] = snap

    def _span(self, line):
        return self.spans.get(line, (line, line))

    def _flush(self, frame, *, is_return=False, return_value=None):
        if self.pending is None:
            return
        first, last = self.pending
        self.pending = None
        mode = self.mode
        snap_one = copy_value if mode == "values" else shape_value
        snapshot, changed, prints = {}, [], {}
        for name, value in dict(frame.f_locals).items():
            try:
                snap = snap_one(value)
            except Exception:                  # an exotic object: keep it as is
                snap = value
            snapshot[name] = snap
            old = self.prints.get(name)
            try:
                if old is None or old.changed(value, mode):
                    changed.append(name)
                prints[name] = Fingerprint(value, snap, mode)
            except Exception:
                changed.append(name)
                prints[name] = Fingerprint(None, None, "shapes")
        self.prints = prints
        self.trace.steps.append(Step(
            line=first, code=line_text(self.filename, first), locals=snapshot,
            changed=tuple(changed),
            return_value=copy_return(return_value, mode) if is_return else None,
            is_return=is_return, end_line=last))

    def local(self, frame, event, arg):
        if self.done:
            return None
        if event == "line":
            self.raising = False
            span = self._span(frame.f_lineno)
            if span != self.pending:
                self._flush(frame)
                self.pending = span
        elif event == "exception":
            self.raising = arg[1] if isinstance(arg, tuple) and len(arg) > 1 else True
        elif event == "return":
            if self.raising is not False:         # the exception propagates out of the frame
                self._flush(frame)
                exc, self.raising = self.raising, False
                self.done = True
                self.trace.exception = (f"{type(exc).__name__}: {exc}"
                                        if isinstance(exc, BaseException) else "exception")
                return None
            if self.is_generator and self._is_yield(frame):
                return self.local             # a yield: the frame will resume
            if self.pending is None:
                self.pending = self._span(frame.f_lineno)
            self._flush(frame, is_return=True, return_value=arg)
            self.trace.result = arg if self.mode == "values" else copy_return(arg, "shapes")
            self.done = True
            return None
        return self.local

    @staticmethod
    def _is_yield(frame) -> bool:
        try:
            op = frame.f_code.co_code[frame.f_lasti]
        except (IndexError, TypeError):
            return False
        return op in _YIELD_OPS or op not in _RETURN_OPS


def _check_mode(snapshot: str):
    if snapshot not in ("values", "shapes"):
        raise ValueError(f'snapshot must be "values" or "shapes", got {snapshot!r}')


def _traceback_frames(exc: BaseException) -> list:
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def raising_location(exc: BaseException, prefer: str | None = None):
    """``(file, line, code)`` of the line that raised ``exc``: the deepest frame of its
    traceback in a file under ``prefer`` (repository-relative, such as the documented
    package's folder ``pkg/``), else the deepest frame in the repository (the tracer's own
    frames left out), else ``None``. A TraceError already knows its place: that is returned
    (with the line's text)."""
    if isinstance(exc, TraceError) and exc.file:
        absolute = exc.file if exc.file.startswith("/") else str(REPO_ROOT / exc.file)
        return exc.file, exc.line, line_text(absolute, exc.line)
    preferred = inside = None
    for fcode, lineno in _traceback_frames(exc):
        if str(Path(fcode.co_filename).resolve()) in _OWN_FILES:
            continue
        rel = repo_file(fcode.co_filename)
        if rel is None:
            continue
        inside = (rel, lineno, line_text(fcode.co_filename, lineno))
        if prefer and rel.startswith(prefer):
            preferred = inside
    return preferred or inside


def _run_traced(global_trace, call, qualname: str, code: CodeType | None, partial=lambda: None):
    """call() with `global_trace` as the trace function, the previous one restored after; an
    exception becomes the TraceError of _raise_trace_error (`partial()`: what was recorded)."""
    previous = sys.gettrace()
    sys.settrace(global_trace)
    try:
        return call()
    except Exception as exc:
        sys.settrace(previous)
        _raise_trace_error(qualname, code, exc, partial())
    finally:
        sys.settrace(previous)


def _raise_trace_error(qualname: str, code: CodeType | None, exc: BaseException, trace):
    """Turn exc into a TraceError naming the function and the deepest repository line."""
    deepest = own = None
    for fcode, lineno in _traceback_frames(exc):
        path = str(Path(fcode.co_filename).resolve())
        if path in _OWN_FILES:
            continue
        rel = repo_relative(fcode.co_filename)
        if repo_file(fcode.co_filename) is not None:
            deepest = (rel, lineno, fcode.co_filename)
        if code is not None and fcode is code and own is None:
            own = (rel, lineno, fcode.co_filename)
    where = deepest or own
    msg = f"{qualname} raised {type(exc).__name__}"
    if where:
        msg += f" at {where[0]}:{where[1]} ({line_text(where[2], where[1])})"
    if own and where and own[:2] != where[:2]:
        msg += f", reached from {own[0]}:{own[1]}"
    msg += f": {exc}"
    err = TraceError(msg, trace=trace, file=where[0] if where else None,
                     line=where[1] if where else None)
    raise err from exc


def trace_locals(fn: Callable, *args, snapshot: str = "values", **kwargs) -> Trace:
    """Run ``fn(*args, **kwargs)`` and record each statement of ``fn``'s own frame.

    Returns a :class:`Trace` whose ``result`` is what ``fn`` returned. Only the outermost
    frame of ``fn``'s code object is traced (calls it makes, recursive calls included, run
    untraced). ``snapshot="shapes"`` records array shapes instead of copies. If ``fn``
    raises, raises :class:`TraceError` (``__cause__`` is the original exception).
    ``snapshot`` is keyword-only and is not passed on to ``fn``."""
    _check_mode(snapshot)
    target = unwrap(fn)
    code = target.__code__
    qualname = qualname_of(target)
    recorder = _Recorder(code, qualname, snapshot, set())
    state = {"frame": None}

    def global_trace(frame, event, arg):
        if event != "call" or frame.f_code is not code:
            return None
        if state["frame"] is None:
            state["frame"] = frame
        elif state["frame"] is not frame:
            return None                       # a recursive call: not traced
        recorder.start(frame)
        return recorder.local

    result = _run_traced(global_trace, lambda: fn(*args, **kwargs), qualname, code,
                         lambda: recorder.trace if recorder.trace.steps else None)
    recorder.trace.result = result if snapshot == "values" else copy_return(result, "shapes")
    return recorder.trace


def _target_codes(targets) -> dict[CodeType, str]:
    if isinstance(targets, (str, CodeType)) or callable(targets) or not isinstance(targets, Iterable):
        targets = [targets]
    codes: dict[CodeType, str] = {}
    if isinstance(targets, dict) and all(isinstance(k, CodeType) for k in targets):
        return dict(targets)
    for t in targets:
        if isinstance(t, CodeType):
            codes[t] = code_qualname(t)
            continue
        obj = resolve_qualname(t) if isinstance(t, str) else t
        fn = unwrap(obj)
        codes[fn.__code__] = t if isinstance(t, str) else qualname_of(fn)
    return codes


def trace_calls(entry: Callable, targets, *args, snapshot: str = "values",
                limit: int | None = None, **kwargs) -> tuple[Any, dict[str, list[Trace]]]:
    """Run ``entry(*args, **kwargs)`` and trace every call of the ``targets`` wherever it
    happens in the call tree, each call its own :class:`Trace` (same per-statement
    semantics as :func:`trace_locals`).

    ``targets``: qualnames (``"pkg.ops.relu_forward"``), function objects, code objects,
    or a ``{code: qualname}`` dict such as ``module_functions`` returns. ``limit``: trace
    at most this many calls per target (``limit=1`` for "first call only": the other calls
    then run at full speed). Returns ``(result, {qualname: [Trace, ...]})`` with the calls in
    the order they started; functions never called are absent. If ``entry`` raises,
    raises :class:`TraceError`. ``snapshot`` and ``limit`` are keyword-only and are not passed
    on to ``entry``."""
    _check_mode(snapshot)
    codes = _target_codes(targets)
    traces: dict[str, list[Trace]] = {}
    counts: dict[CodeType, int] = {}
    live: dict[Any, _Recorder] = {}       # frame -> recorder, for generators that resume
    started = [0]
    checked: set = set()

    def global_trace(frame, event, arg):
        if event != "call":
            return None
        code = frame.f_code
        qualname = codes.get(code)
        if qualname is None:
            return None
        rec = live.get(frame)
        if rec is not None:                   # a generator resuming
            return None if rec.done else rec.local
        n = counts.get(code, 0)
        if limit is not None and n >= limit:
            return None
        counts[code] = n + 1
        rec = _Recorder(code, qualname, snapshot, checked)
        if rec.is_generator:
            live[frame] = rec
        rec.trace.call_index = started[0]
        started[0] += 1
        traces.setdefault(qualname, []).append(rec.trace)
        rec.start(frame)
        return rec.local

    try:
        entry_code = unwrap(entry).__code__
        entry_name = qualname_of(entry)
    except TypeError:
        entry_code, entry_name = None, repr(entry)
    try:
        result = _run_traced(global_trace, lambda: entry(*args, **kwargs), entry_name, entry_code,
                             lambda: traces or None)
    finally:
        live.clear()
    return result, traces


def call_tree(entry: Callable, *args, package: str | None = None, **kwargs) -> tuple[Any, CallSite]:
    """Run ``entry(*args, **kwargs)`` and record every call of a function of ``package``
    (default: the package ``entry`` is defined in; see ``module_functions``) with its nearest
    caller of ``package`` and that caller's line at the moment of the call. Frames of other
    code between them (a generator expression, NumPy) are looked through: ``split_rows``
    called from a generator expression on line 43 of ``layer_forward`` is a call from that
    line. Returns ``(result, root)``: ``root`` is the :class:`CallSite` of ``entry`` (line 0,
    ``calls`` 1), whose children are the calls it made (for an ``entry`` outside ``package``,
    the calls no recorded frame encloses). If ``entry`` raises, raises :class:`TraceError`.
    ``package`` is keyword-only and not passed on."""
    entry_name = qualname_of(entry)
    package = package or entry_name.partition(".")[0]
    importlib.import_module(package)
    codes = module_functions(package)
    root = CallSite(entry_name, 0, 1)
    live: dict = {}                         # running frame -> its CallSite

    def on_return(frame, event, arg):
        if event == "return" and not (frame.f_code.co_flags & _GEN_FLAGS and _Recorder._is_yield(frame)):
            live.pop(frame, None)
        return on_return

    def global_trace(frame, event, arg):
        if event != "call":
            return None
        qualname = codes.get(frame.f_code)
        if qualname is None:
            return None
        if frame in live:                   # a generator resuming: not a new call
            return on_return
        caller = frame.f_back
        while caller is not None and caller not in live:
            caller = caller.f_back
        parent = live[caller] if caller is not None else root
        site = parent.child(qualname, caller.f_lineno if caller is not None else 0)
        site.calls += 1
        live[frame] = site
        frame.f_trace_lines = False         # only the return is needed, not every line
        return on_return

    try:
        entry_code = unwrap(entry).__code__
    except TypeError:
        entry_code = None
    try:
        result = _run_traced(global_trace, lambda: entry(*args, **kwargs), entry_name, entry_code)
    finally:
        live.clear()
    if [c.function for c in root.children] == [entry_name]:
        return result, root.children[0]      # entry is a function of package: its own site
    return result, root
