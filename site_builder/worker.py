"""Run calls in forked children, each under a time limit, and never leave one behind.

Examples are user code: they may loop forever, call `sys.exit`, `os._exit`, raise
`KeyboardInterrupt`, be killed for memory, or return something huge. None of that may hang
the build, end it, or take its problem list with it. So every call runs in a child of its
own, forked from the builder (which has already imported NumPy and the model, so a fork
costs milliseconds), and reports back through a pipe.

Why one child per call rather than a pool: a pool reuses a process, so the second call in
it sees what the first left in memory (an `lru_cache` filled, a module imported) and would
not read, and so not record, the files the first one read (site_builder/inputs.py). And a
pool cannot stop one stuck task; here a child past its deadline is asked where it is
(SIGUSR1: it writes the line it is executing), then killed.

No child outlives the builder: each asks the kernel to kill it when its parent dies
(PR_SET_PDEATHSIG, Linux), and the parent kills every child it still has when it stops for
any reason, Ctrl-C included.
"""
import ctypes
import os
import pickle
import selectors
import signal
import struct
import sys
import time
import traceback
from dataclasses import dataclass, field

PR_SET_PDEATHSIG = 1
GRACE_SECONDS = 1.0            # after asking a stuck child where it is, before killing it
MAX_RESULT_BYTES = 64 * 1024 * 1024


@dataclass
class Call:
    """fn() in a child; `where(frames)` picks the line to blame from a stack of (file, line)."""
    name: str
    fn: object
    timeout: float
    where: object = None


@dataclass
class Outcome:
    name: str
    status: str                 # "ok", "error" (it raised), "timeout", "died", "too big", "unpicklable"
    value: object = None
    detail: str = ""
    seconds: float = 0.0


@dataclass
class _Child:
    call: Call
    pid: int
    fd: int
    started: float
    data: bytearray = field(default_factory=bytearray)
    asked: float = 0.0


def die_with_parent(parent: int):
    """Have the kernel kill this process when its parent dies (Linux), so that no child of a
    build outlives it, even one killed with SIGKILL."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:           # the parent died before prctl took effect
        os._exit(1)


def _silence():
    """A call's prints and warnings (NumPy's RuntimeWarning on a NaN) must not break the
    build's one-line-per-problem output: the child's stdout and stderr go nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def _send(fd, message):
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) > MAX_RESULT_BYTES:
        data = pickle.dumps(("too big", len(data)), protocol=pickle.HIGHEST_PROTOCOL)
    data = struct.pack("<Q", len(data)) + data
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _child(call: Call, fd: int, parent: int):
    """In the child: run the call, send ("ok", value) or what went wrong, and exit."""
    die_with_parent(parent)
    _silence()
    signal.signal(signal.SIGINT, signal.SIG_IGN)        # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def where_now(signum, frame):
        frames = [(f.f_code.co_filename, lineno) for f, lineno in traceback.walk_stack(frame)][::-1]
        _send(fd, ("timeout", call.where(frames) if call.where else ""))
        os._exit(0)
    signal.signal(signal.SIGUSR1, where_now)
    status = 0
    try:
        try:
            message = ("ok", call.fn())
        except BaseException as e:        # SystemExit, KeyboardInterrupt: the call's, not ours
            frames = [(f.filename, f.lineno) for f in traceback.extract_tb(e.__traceback__)]
            where = call.where(frames) if call.where else ""
            message = ("error", f"{type(e).__name__}: {e}" + (f" at {where}" if where else ""))
        try:
            _send(fd, message)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as e:
            _send(fd, ("unpicklable", f"{type(e).__name__}: {e}"))
    except BaseException:
        status = 1
    finally:
        os._exit(status)


def run_calls(calls, jobs: int, on_done=None, more=None):
    """Run `calls` in at most `jobs` children at once, in order. on_done(outcome) is called
    as each finishes; more() may return further calls to queue (e.g. the ones that waited
    for a result). Returns every Outcome in completion order. A KeyboardInterrupt (or any
    exception) in the parent kills every running child before it propagates."""
    queue, running, outcomes = list(calls), {}, []
    selector = selectors.DefaultSelector()
    try:
        while queue or running:
            while queue and len(running) < max(1, jobs):
                _start(queue.pop(0), running, selector)
            for key, _ in selector.select(timeout=0.05):
                child = running[key.fd]
                chunk = os.read(key.fd, 1 << 20)
                if chunk:
                    child.data += chunk
                else:
                    outcomes.append(_finish(child, running, selector))
                    if queue:      # the freed core first: on_done (storing a result) can wait
                        _start(queue.pop(0), running, selector)
                    if on_done:
                        on_done(outcomes[-1])
                    if more:
                        queue.extend(more())
            _enforce_deadlines(running)
    finally:
        for child in list(running.values()):
            _kill(child)
            selector.unregister(child.fd)
            os.close(child.fd)
        selector.close()
    return outcomes


def _start(call, running, selector):
    read, write = os.pipe()
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:                                   # the child
        os.close(read)
        _child(call, write, parent)
    os.close(write)
    running[read] = _Child(call, pid, read, time.monotonic())
    selector.register(read, selectors.EVENT_READ)


def _enforce_deadlines(running):
    now = time.monotonic()
    for child in running.values():
        if not child.asked and now - child.started > child.call.timeout:
            child.asked = now
            _signal(child.pid, signal.SIGUSR1)
        elif child.asked and now - child.asked > GRACE_SECONDS:
            _signal(child.pid, signal.SIGKILL)


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _kill(child):
    _signal(child.pid, signal.SIGKILL)
    try:
        os.waitpid(child.pid, 0)
    except ChildProcessError:
        pass


def _finish(child, running, selector) -> Outcome:
    selector.unregister(child.fd)
    os.close(child.fd)
    del running[child.fd]
    _, status = os.waitpid(child.pid, 0)
    seconds = time.monotonic() - child.started
    name = child.call.name
    message = None
    if len(child.data) >= 8:
        size = struct.unpack("<Q", child.data[:8])[0]
        if len(child.data) >= 8 + size:
            try:
                message = pickle.loads(bytes(child.data[8:8 + size]))
            except Exception as e:          # a value that pickles but does not unpickle
                message = ("unpicklable", f"{type(e).__name__}: {e}")
    if child.asked:
        where = message[1] if message and message[0] == "timeout" else ""
        return Outcome(name, "timeout", detail=where, seconds=seconds)
    if message is None:
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            how = f"was killed by signal {signal.Signals(sig).name}" + (" (out of memory?)" if sig == signal.SIGKILL else "")
        else:
            how = f"ended the process with exit status {os.WEXITSTATUS(status)} (os._exit?)"
        return Outcome(name, "died", detail=how, seconds=seconds)
    kind, value = message
    if kind == "ok":
        return Outcome(name, "ok", value=value, seconds=seconds)
    if kind == "too big":
        return Outcome(name, "too big", detail=f"{value / 2**20:.0f} MiB", seconds=seconds)
    return Outcome(name, kind, detail=str(value), seconds=seconds)
