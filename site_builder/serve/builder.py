"""The builder: one child process that runs every build of a serve session.

It stays up between builds, so a rebuild finds everything the last one loaded (the
re-import of changed code is FreshBuild's, site_builder/serve/rebuild.py). It leads a process
group of its own, so a terminal's Ctrl-C reaches serve only, and stopping serve kills it and
everything under it (site_builder/serve/stopping.py).
"""
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from site_builder.serve.rebuild import BuildAbandoned, FreshBuild, problem_lines, settle_memory
from site_builder.serve.stopping import STOPPING, abandon_output, kill_descendants, log_line, park_if_stopping


class RemoteBuildFailed(Exception):
    """A build in the builder failed; `problems` are its lines (problem_lines reads them as they are)."""

    def __init__(self, problems):
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = list(problems)


class _BuilderDied(Exception):
    pass


class _BuilderStopped(Exception):
    """The builder was stopped from outside (worker.StopWatch) while we waited for its answer."""


class _Built:
    """What the builder reported for a good build: summary() and, with a deferred search
    index, finish(), which waits until the builder has indexed the new pages."""

    def __init__(self, summary, finish=None):
        self._summary, self.finish = summary, finish

    def summary(self):
        return self._summary


# The builder's entry point, run as `python -c BUILDER_BOOT root out cache_dir reply_fd serve_pid`.
BUILDER_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
                "from site_builder.serve.builder import builder_main; builder_main(sys.argv[1:])")


class BuilderProcess:
    """The real build (FreshBuild) in a child process that stays up between builds, so a
    rebuild finds everything the last one loaded; called like a build function (it is the
    `build` of the Rebuilder). Requests go to the builder's stdin, one JSON line each; its
    answers come back on a pipe of their own, so what the build prints reaches the terminal.

    The builder leads a process group of its own (a terminal's Ctrl-C reaches serve only),
    ignores SIGINT, and dies with serve (PR_SET_PDEATHSIG). A builder that dies is a failed
    build; the next build starts a new one. `pids` lists every builder started, whose
    half-written output abandon_output removes.

    `cancelled` (set by the Rebuilder from another thread) abandons the build in progress: the
    thread waiting for its answer notices within 0.1 s, kills the builder and every process
    under it as Ctrl-C does, undoes its half-done output (abandon_output) and raises
    BuildAbandoned; the next build starts a new builder. Only the waiting thread touches the
    process, so no signal can reach a pid that was already reaped and reused.

    A builder stopped from outside (`kill -STOP`; state T for worker.STOPPED_SECONDS, the test
    the build applies to its own children) would never answer: it is killed like an abandoned
    one, one line is logged, and the build runs again in a fresh builder (once; stopped again,
    the build fails with one line)."""

    def __init__(self, root, out, cache_dir=None, log=log_line):
        self.root, self.out, self.cache_dir, self.log = Path(root), Path(out), cache_dir, log
        self.cancelled = threading.Event()
        self.proc = None
        self.pids = []
        self._rfd = None
        self._buf = b""
        self._finish_pending = False

    def start(self):
        if STOPPING.is_set():
            raise _BuilderDied("serve is stopping")
        self.close()
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", BUILDER_BOOT, str(self.root), str(self.out),
                 str(self.cache_dir or ""), str(w), str(os.getpid())],
                cwd=str(self.root), stdin=subprocess.PIPE, pass_fds=(w,), start_new_session=True)
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
        self.pids.append(self.proc.pid)
        self._rfd, self._buf, self._finish_pending = r, b"", False

    def group(self) -> tuple:
        """The builder's process group, while the builder is running (not yet reaped, so its
        pid, which is also the group's id, cannot belong to anyone else)."""
        return (self.proc.pid,) if self.proc is not None and self.proc.returncode is None else ()

    def close(self):
        if self._rfd is not None:
            os.close(self._rfd)
            self._rfd = None
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def __call__(self, root, out):
        try:
            if self._finish_pending:                    # an unread "search index done" answer
                self._finish()
        except Exception:
            pass
        try:
            answer = self._build()
        except _BuilderStopped:
            self._kill_builder()
            self.log(f"{time.strftime('%H:%M:%S')} {self._stopped_text()}: killed; building again in a fresh one")
            try:
                answer = self._build()
            except _BuilderStopped:
                self._kill_builder()
                raise RemoteBuildFailed([f"site_builder/serve/builder.py: {self._stopped_text()} twice, and killed; "
                                         f"the next change starts a new one"]) from None
        if not answer.get("ok"):
            raise RemoteBuildFailed(answer.get("problems") or ["the build failed without naming a problem"])
        self._finish_pending = bool(answer.get("finish"))
        return _Built(answer.get("summary", "built"), self._finish if self._finish_pending else None)

    def _build(self) -> dict:
        """One build request and its answer; raises _BuilderStopped for a stopped builder."""
        try:
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            self.proc.stdin.write(b'{"build": true}\n')
            self.proc.stdin.flush()
            return self._answer(cancellable=True)
        except (_BuilderDied, OSError) as e:
            raise RemoteBuildFailed([self._died(e)]) from None

    @staticmethod
    def _stopped_text():
        from site_builder.base.worker import STOPPED_SECONDS
        return f"the build process was stopped from outside (state T for {STOPPED_SECONDS:g} s)"

    def _finish(self):
        self._finish_pending = False
        try:
            error = self._answer().get("finished")
        except (_BuilderDied, OSError) as e:
            raise RuntimeError(self._died(e)) from None
        except _BuilderStopped:
            self._kill_builder()
            raise RuntimeError(f"{self._stopped_text()} and killed; the next change starts a new one") from None
        if error:
            raise RuntimeError(error)

    def _died(self, e):
        """One line for a builder that is gone (and a new one next time)."""
        park_if_stopping()
        code = None
        if self.proc is not None:
            try:                # its pipe closes a moment before it can be reaped
                code = self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        self.close()
        how = (f"killed by signal {-code}" if code is not None and code < 0 else
               f"exit status {code}" if code is not None else f"{type(e).__name__}: {e}")
        return (f"site_builder/serve/builder.py: the build process stopped in the middle of a build ({how}); "
                f"the next change starts a new one")

    def _answer(self, cancellable=False) -> dict:
        """The builder's next answer. Waits in short steps (the main thread must get back to
        Python often, or a Ctrl-C delivered to another thread would wait for the build; and
        a build that is `cancelled` is abandoned within a step, one stopped from outside too)."""
        from site_builder.base.worker import StopWatch
        watch = StopWatch()
        while b"\n" not in self._buf:
            ready, _, _ = select.select([self._rfd], [], [], 0.1)
            if not ready:                              # an answer already sent is read first
                if cancellable and self.cancelled.is_set():
                    self._abandon_build()
                if self.proc.poll() is not None:
                    raise _BuilderDied("gone")
                if watch.stalled(self.proc.pid):       # not reaped (poll above): still our builder
                    raise _BuilderStopped()
                continue
            chunk = os.read(self._rfd, 1 << 16)
            if not chunk:
                raise _BuilderDied("gone")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def _abandon_build(self):
        """Kill the builder in the middle of its build and every process under it (frozen first,
        so none forks past the kill: kill_descendants, as on Ctrl-C), undo what it left half
        written, and raise BuildAbandoned. The next call starts a new builder."""
        self._kill_builder()
        raise BuildAbandoned()

    def _kill_builder(self):
        """Kill the builder (abandoned, or stopped from outside) and undo its half-done output."""
        park_if_stopping()
        pid = self.proc.pid
        if self.proc.poll() is None:                   # not reaped: the pid is still the builder's
            try:
                os.kill(pid, signal.SIGSTOP)           # it starts no worker from now on
            except OSError:
                pass
            kill_descendants(pid, groups=(pid,))       # its workers, and itself (its group)
        self.close()                                   # reap it
        park_if_stopping()                            # Ctrl-C meanwhile: the handler cleans up
        try:
            abandon_output(self.out, pid)
        except OSError:
            pass         # left for the next build: the writer removes a dead pid's folders itself



def builder_main(argv):
    """The builder process: a build per request line on stdin, the answers on the reply fd."""
    root, out, cache_dir, reply_fd, parent = argv
    from site_builder.base.worker import die_with_parent
    die_with_parent(int(parent))
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # serve handles Ctrl-C, and kills this process
    root, out = Path(root), Path(out)
    replies = os.fdopen(int(reply_fd), "w", encoding="utf-8", buffering=1)

    def answer(**fields):
        replies.write(json.dumps(fields) + "\n")
        replies.flush()

    build = FreshBuild(root, cache_dir or None)
    for _ in sys.stdin.buffer:
        try:
            result = build(root, out)
        except (Exception, SystemExit) as e:
            answer(ok=False, problems=problem_lines(e, root))
        else:
            finish, summary = getattr(result, "finish", None), getattr(result, "summary", None)
            answer(ok=True, summary=summary() if callable(summary) else "built", finish=callable(finish))
            if callable(finish):
                try:
                    finish()
                except Exception as e:
                    answer(finished=f"{type(e).__name__}: {e}")
                else:
                    answer(finished=None)
        settle_memory()
    sys.stdout.flush()
    os._exit(0)
