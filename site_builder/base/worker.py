"""Run calls in forked children, each under a time limit, and never leave one behind.

Examples are user code: they may loop forever, call `sys.exit`, `os._exit`, raise
`KeyboardInterrupt`, be killed for memory, or return something huge. None of that may hang
the build, end it, or take its problem list with it. So every call runs in a child of its
own, forked from the builder (which has already imported NumPy and the documented package, so a fork
costs milliseconds), and reports back through a pipe.

Why one child per call rather than a pool: a pool reuses a process, so the second call in
it sees what the first left in memory (an `lru_cache` filled, a module imported) and would
not read, and so not record, the files the first one read (site_builder/gather/inputs.py). And a
pool cannot stop one stuck task; here a child past its deadline is asked where it is
(SIGUSR1: it writes the line it is executing), then killed.

A child stopped from outside (SIGSTOP; state `T` in /proc/PID/stat) would make no progress
until its deadline, minutes away. One seen stopped for STOPPED_SECONDS is killed and its
Outcome is "stopped": `run_calls` runs the call again in a fresh child (once), and the
build's own children (site_builder/base/parallel.py) have their share done by the builder, as for
any failed child. Only the stopped state is taken as a stall: a child that merely makes no
progress may be waiting for its parent to read its result, or be an example sleeping on
purpose (its deadline is for that); a traced child (state `t`, a debugger) is left alone.

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
STOPPED_SECONDS = 0.5          # seen stopped this long (not just between Ctrl-Z and fg): killed
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
    status: str                 # "ok", "error" (it raised), "timeout", "died", "stopped", "too big", "unpicklable"
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
    watch: "StopWatch" = field(default_factory=lambda: StopWatch())
    stopped: bool = False         # killed for being stopped


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
    for a result). A call whose child was stopped from outside runs once more in a fresh
    child. Returns every Outcome in completion order. A KeyboardInterrupt (or any
    exception) in the parent kills every running child before it propagates."""
    queue, running, outcomes, rerun = list(calls), {}, [], set()
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
                    outcome = _finish(child, running, selector)
                    if outcome.status == "stopped" and outcome.name not in rerun:
                        rerun.add(outcome.name)
                        queue.insert(0, child.call)
                        continue
                    outcomes.append(outcome)
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
        if child.stopped:
            continue
        if child.watch.stalled(child.pid):
            child.stopped = True
            _signal(child.pid, signal.SIGKILL)
            continue
        if not child.asked and now - child.started > child.call.timeout:
            child.asked = now
            _signal(child.pid, signal.SIGUSR1)
        elif child.asked and now - child.asked > GRACE_SECONDS:
            _signal(child.pid, signal.SIGKILL)


def process_state(pid):
    """The process state letter of /proc/PID/stat (after the name, which may hold ')'), or
    "" where there is no /proc (not Linux) or the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0].decode()
    except (OSError, IndexError):
        return ""


class StopWatch:
    """Whether a process was stopped from outside and left so: seen in state `T` on every look
    for STOPPED_SECONDS (a Ctrl-Z and fg in between is not a stall). The one test of "is this
    child stopped" for everything that waits on a child: the forked calls here, Pagefind
    (site_builder/publish/search.py), serve's builder and the play process. Call `stalled` at each
    step of the wait loop (0.1 s or so)."""

    def __init__(self, seconds=None):
        self.seconds = STOPPED_SECONDS if seconds is None else seconds
        self.since = 0.0            # when it was first seen stopped (0: running)

    def stalled(self, pid) -> bool:
        if process_state(pid) != "T":
            self.since = 0.0
            return False
        now = time.monotonic()
        if not self.since:
            self.since = now
        return now - self.since >= self.seconds


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
    if child.stopped:
        return Outcome(name, "stopped", detail=f"was stopped (state T) for {STOPPED_SECONDS:g} s and killed",
                       seconds=seconds)
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
