"""Stopping serve or a build at once: every process under this one, and the output of a build
that was cut short.

Ctrl-C (or SIGTERM) stops serve at once, at any moment, even in the middle of a build: the
builder is a process of its own (site_builder/serve/builder.py; its own process group, so a
terminal's Ctrl-C reaches only serve, and no worker prints a traceback), and stopping kills it
and every process under it (frozen with SIGSTOP first, so none can fork past the kill), undoes
a half-done swap of the output folder (`abandon_output`), prints one line and exits 130 (143
for SIGTERM). A build in a thread of this process, as before, could not be stopped: a thread
cannot be killed, so Ctrl-C waited for it (the process pool it used then finished its whole
queue: 10 s and more of a cold build), and a cleanup racing a live thread could not know what
it had written. Killing a process freezes the output folder in a state `abandon_output` can
read. `build_site.py build` and `check` stop the same way (`abandon`).

STOPPING is set once serve (or a build) is stopping: from then on nothing more is logged or
started, by any module of serve.
"""
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

# Set once serve (or a build) is stopping: from then on nothing more is logged or started.
STOPPING = threading.Event()


def log_line(line):
    if not STOPPING.is_set():
        print(line, flush=True)


def park_if_stopping():
    """A thread that finds the builder killed because serve is stopping waits for the exit, silently."""
    if STOPPING.is_set():
        threading.Event().wait()


def _processes():
    """{pid: (parent pid, process group, state)} of every process, from /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()      # after "pid (comm) "
        table[int(name)] = (int(fields[1]), int(fields[2]), fields[0].decode())
    return table


def descendants(pid: int, groups=()) -> list:
    """The live processes under `pid` (children, theirs, ...) and in the process groups
    `groups`, parents before children. Zombies are dead already and not listed."""
    table = _processes()
    kids = {}
    for p, (ppid, _, _) in table.items():
        kids.setdefault(ppid, []).append(p)
    found, todo = [], list(kids.get(pid, []))
    todo += [p for p, (_, pgid, _) in table.items() if pgid in groups and p != pid]
    while todo:
        p = todo.pop(0)
        if p in found or p == pid or table.get(p, (0, 0, "Z"))[2] in "ZX":
            continue
        found.append(p)
        todo += kids.get(p, [])
    return found


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:][:1] not in (b"Z", b"X")


def kill_descendants(pid=None, groups=(), wait=1.5) -> list:
    """SIGKILL every process under `pid` (default: this one) and in `groups`. Each is stopped
    (SIGSTOP) first and the tree walked again until no new process appears, so none can fork a
    child that escapes; then all are killed, and we wait (up to `wait` s) until they are gone.
    Returns their pids."""
    pid = os.getpid() if pid is None else pid
    stopped = []
    for _ in range(50):
        new = [p for p in descendants(pid, groups) if p not in stopped]
        if not new:
            break
        for p in new:
            try:
                os.kill(p, signal.SIGSTOP)
            except OSError:
                pass
        stopped += new
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass
    for p in stopped:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + wait
    while True:
        for p in stopped:                                # reap our own children
            try:
                os.waitpid(p, os.WNOHANG)
            except OSError:
                pass
        if not any(alive(p) for p in stopped) or time.monotonic() > deadline:
            return stopped
        time.sleep(0.01)


def abandon_output(out, pid: int) -> str:
    """Undo what process `pid`, killed while building `out`, left half done, by the names
    site_builder/publish/write.py and build/write_step.py refresh_search write under (`.<out>.tmp-<pid>`, `.old-`,
    `.search-`, `.search-old-`). Returns "untouched" (out is the last good site, as before),
    "none" (there is no site) or "complete" (the new site was already in place, whole)."""
    outcome = "untouched"
    for target in sorted({Path(os.path.abspath(out)), Path(os.path.realpath(out))}):
        def aside(kind, target=target):
            return target.parent / f".{target.name}.{kind}-{pid}"
        old, stale = aside("old"), aside("search-old")
        if os.path.lexists(old):
            if os.path.lexists(target):     # swapped: the new site is whole; old may be half deleted
                shutil.rmtree(old, ignore_errors=True)
                outcome = "complete"
            else:                           # between the two renames: put the last good site back
                os.rename(old, target)
        if os.path.lexists(stale):          # the search bundle, likewise
            bundle = target / "pagefind"
            if target.is_dir() and not os.path.lexists(bundle):
                os.rename(stale, bundle)
            else:
                shutil.rmtree(stale, ignore_errors=True)
        for kind in ("tmp", "search"):
            shutil.rmtree(aside(kind), ignore_errors=True)
    return "none" if not os.path.isdir(out) else outcome


def site_clause(out, outcomes) -> str:
    """What became of the output, for the one line printed on stopping."""
    if not os.path.isdir(out):
        return f"no site was written to {out}"
    if "complete" in outcomes:
        return f"the new site in {out} was already complete and stays"
    return f"the last good site in {out} is untouched"


def abandon(out, writers=(), groups=()) -> str:
    """Stop a build of `out` now: kill every process under this one (and in `groups`), undo
    the half-done output of each writer pid (default: this process), and return the clause
    saying what is in `out`. For the Ctrl-C handlers of `build_site.py` and `serve`."""
    STOPPING.set()
    kill_descendants(groups=groups)
    outcomes = []
    for pid in (writers or (os.getpid(),)):
        try:
            outcomes.append(abandon_output(out, pid))
        except OSError:
            outcomes.append("untouched")
    return site_clause(out, outcomes)


def say(line):
    """Print one line to stderr from a signal handler: straight to the file descriptor (the
    interrupted code may hold the lock of sys.stderr), on a line of its own on a terminal."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    prefix = "\n" if os.isatty(2) else ""
    try:
        os.write(2, (prefix + line + "\n").encode(errors="replace"))
    except OSError:
        pass
