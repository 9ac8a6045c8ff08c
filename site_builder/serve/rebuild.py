"""Rebuilding: one build at a time, the project's code re-imported when it changed, a build the
tree outran abandoned, and the watcher whose changes ask for the builds.

Trade-offs, and why:
- The builds run in one process that stays up for as long as serve runs (the builder,
  site_builder/serve/builder.py). That keeps rebuilds fast (NumPy, Jinja2, the JavaScript
  engine for KaTeX, the source index and the memos stay loaded between builds), at a price:
  Python caches imported modules, so after a `.py` file under the project's folders (the
  project block's package, tests and input folders), `site_builder/` or `content/` (the
  examples) changes, the builder drops those modules from `sys.modules` before the next build
  (`FreshBuild`), so the site documents and runs the code as it is now, and no module holds a
  class from an older import of another. The serve package itself is never reloaded: edit it,
  restart. Changes during a build schedule exactly one more build after it. If the builder
  dies, the build is reported as failed and the next change starts a new one.
- A stuck example never blocks the next rebuild. A build still running ABANDON_AFTER (2 s)
  after it began, with a change waiting (arrived at any time during it), is abandoned: the
  builder and everything under it are killed as on Ctrl-C, its half-done output is undone
  (`abandon_output`, so nothing half-written is published), one line says so, and a new
  builder builds the new tree at once. Younger builds are left to finish: a warm one-page
  rebuild takes 0.3 to 0.7 s, while a new builder pays the interpreter, NumPy, the KaTeX
  engine and the source index again (measured on the real site, 2 loaded cores: 2.05 s for
  a fresh builder's build of an unchanged tree against 0.7 s for the warm one), so quick
  successive saves are cheaper queued. A build past 2 s has outlived a whole fresh build: it
  is running many examples (an edit to the package: 6 s) or is stuck (up to its 60 s time
  limit), on a tree that is already out of date; the examples it finished are cached, so
  abandoning it costs about the restart. The grace period is per build, not per change: a
  save 0.5 s into a build that then hangs abandons it at 2 s, not at 60.
- The search index comes last. A rebuild goes live (and the page reloads) with the previous
  Pagefind bundle, then Pagefind indexes the new pages and that bundle is swapped in
  (`build(defer_search=True)`, the result's `finish`): Pagefind was a third of a one-page
  rebuild, and a search that is a second out of date is harmless while previewing.
  `build_site.py build` never defers: its site always goes out with its own index.
- The watcher watches the builder's folders and the project's (the project block's); an edit
  to the block that names other folders moves the watch to them at once.
- Quiet: one line per build, and before the line of a failed one its problems, one a line,
  as `build` prints them (the overlay alone left a terminal user guessing).
"""
import gc
import importlib
import os
import re
import sys
import threading
import time
import traceback
from pathlib import Path

from site_builder import COMMAND
from site_builder.gather.project import project_folders
from site_builder.serve.paths import inside
from site_builder.serve.reload import code_fingerprint, code_dirs
from site_builder.serve.stopping import STOPPING, log_line

# The builder's own folders serve watches; the project's come from its block (watched_dirs).
BUILDER_DIRS = ("content", "templates", "static", "site_builder")
# Never dropped by _forget_modules: the packages that hold the running server (and this module).
SERVE_KEEPS = ("site_builder", "site_builder.serve")


def watched_dirs(root: Path) -> tuple:
    """Every folder a change in which means a rebuild: the builder's and the project's."""
    return BUILDER_DIRS + tuple(d for d in project_folders(root) if d not in BUILDER_DIRS)


def problem_lines(exc, root=None):
    """The overlay lines for a failed build: each Problem of a BuildFailed, or one line for a crash."""
    problems = getattr(exc, "problems", None)      # site_builder.base.problems.BuildFailed (duck-typed:
    if isinstance(problems, (list, tuple)):        # the module may have been re-imported)
        return [str(p) for p in problems] or [f"the build failed without naming a problem: {exc}"]
    file, line = "site_builder", 0
    if isinstance(exc, SyntaxError) and exc.filename:
        file, line = exc.filename, exc.lineno or 0
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in frames if root and inside(os.path.realpath(f.filename), os.path.realpath(root))]
        if ours or frames:
            file, line = (ours or frames)[-1].filename, (ours or frames)[-1].lineno
    if root:
        try:
            file = Path(file).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            pass
    where = f"{file}:{line}" if line else file
    return [f"{where}: internal error: {type(exc).__name__}: {exc} "
            f"(an exception rather than a reported problem; `{COMMAND} --debug` shows the traceback)"]


def _forget_modules(root: Path):
    """Drop the project's modules and the builder's from sys.modules, but the serve package's
    own (which runs this) and the site_builder package."""
    dirs = [os.path.realpath(root / d) for d in code_dirs(root)]
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if name in SERVE_KEEPS or name.startswith("site_builder.serve.") or not f:
            continue
        if any(inside(os.path.realpath(f), d) for d in dirs):
            del sys.modules[name]
    importlib.invalidate_caches()


class FreshBuild:
    """The real build, `site_builder.build.build(root, out, strict=False)`, with the project's
    modules re-imported first whenever a .py file under one of reload.code_dirs changed."""

    def __init__(self, root: Path, cache_dir=None):
        self.root = Path(root)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._seen = code_fingerprint(self.root)

    def __call__(self, root, out):
        now = code_fingerprint(self.root)
        if now != self._seen:
            _forget_modules(self.root)
            self._seen = now
        build = importlib.import_module("site_builder.build").build
        return build(Path(root), Path(out), strict=False, defer_search=True, cache_dir=self.cache_dir)


def settle_memory():
    """After a build, off the critical path: collect the last build's garbage, then freeze what
    is left (the source index, the memos) so the collector skips it during the next build.
    Measured on a one-page rebuild: median 0.30 s without, 0.20 s with."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


# A change that arrives while a build runs waits for it (one more build after it, as before) only
# while that build is younger than this; a build older than this, or one that reaches this age
# with a change waiting, is abandoned and the new tree is built at once (see the module docstring).
ABANDON_AFTER = 2.0


class BuildAbandoned(Exception):
    """A build stopped on purpose because the tree changed under it (Rebuilder.request): not a
    failure, nothing to report on the pages; the next build follows at once."""


class Rebuilder:
    """Runs `build(root, out)` one at a time and records the outcome in `state`.

    run_once() builds now (waiting for a running build first); request() asks the background
    thread (start()) for a build: requests that arrive while a build runs are merged into one
    more build after it. A build function with a `cancelled` attribute (a threading.Event:
    BuilderProcess) can also be abandoned: when changes have arrived during a build that has
    run for `abandon_after` seconds, the event is set, the build raises BuildAbandoned, one line
    is logged and the next build starts. The event is set only while that build runs and is
    cleared when it returns, so it never reaches the next one.
    """

    def __init__(self, build, root, out, state, log=log_line, abandon_after=ABANDON_AFTER):
        self.build, self.root, self.out, self.state, self.log = build, Path(root), Path(out), state, log
        self.abandon_after = abandon_after
        self.builds = 0              # builds that finished, good or failed
        self.abandoned = 0           # builds abandoned for a newer tree
        self.running = False         # a build (or its search index) is under way
        self._build_lock = threading.Lock()
        self._cond = threading.Condition()
        self._pending = False
        self._changed = set()
        self._stopping = False
        self._thread = None
        self._serial = 0             # counts build calls; a timer names the build it was set for
        self._started = None         # when the build call in progress began (monotonic), else None
        self._arrived = []           # changes requested since it began
        self._waiting = False        # whether any request came since it began
        self._abandon_for = None     # the changes it was abandoned for, once it is
        self._timed = 0              # the build a grace-period timer is already set for

    def run_once(self, reason="") -> bool:
        with self._build_lock:
            self.running = True
            try:
                return self._run(reason)
            finally:
                self.running = False

    def _run(self, reason):
        cancelled = getattr(self.build, "cancelled", None)
        with self._cond:
            self._serial += 1
            self._started, self._arrived, self._waiting, self._abandon_for = time.monotonic(), [], False, None
        try:
            result = self.build(self.root, self.out)
        except BuildAbandoned:
            self.abandoned += 1
            with self._cond:
                what = self._names(self._abandon_for or self._arrived) or "the sources"
            self.log(f"{time.strftime('%H:%M:%S')} build abandoned: {what} changed; rebuilding")
            return False
        except (Exception, SystemExit) as e:
            self.builds += 1
            lines = problem_lines(e, self.root)
            self.state.failed(lines)
            serving = ("still serving the last good site" if self.out.is_dir() else "no site to serve yet")
            ok, what = False, (f"build failed: {len(lines)} problem{'s' if len(lines) != 1 else ''}; "
                               f"{serving}, with the problems shown on every page")
        else:
            self.builds += 1
            self.state.succeeded()
            summary = getattr(result, "summary", None)
            ok, what = True, (summary() if callable(summary) else "built")
        finally:
            with self._cond:
                self._started = None
                if cancelled is not None:
                    cancelled.clear()
        for line in ([] if ok else lines):   # as `build` prints them: file:line: what (fix), one a line
            self.log(line)
        self.log(f"{time.strftime('%H:%M:%S')} {reason}{what}")
        finish = getattr(result, "finish", None) if ok else None
        if callable(finish):     # the page has reloaded; now the search index catches up
            try:
                finish()
            except Exception as e:
                self.log(f"{time.strftime('%H:%M:%S')} search index not updated ({type(e).__name__}: {e}); "
                         "search shows the previous build")
        settle_memory()
        return ok

    def request(self, changed=()):
        with self._cond:
            self._pending = True
            self._changed.update(changed)
            self._cond.notify()
            if self._started is not None:
                self._arrived.extend(changed)
                self._waiting = True
                age = time.monotonic() - self._started
                if age >= self.abandon_after:
                    self._abandon(self._serial)
                elif self._timed != self._serial and getattr(self.build, "cancelled", None) is not None:
                    # A grace period: the build may still finish (no builder restart); if it
                    # has not by the time it is abandon_after old, it is abandoned then.
                    timer = threading.Timer(self.abandon_after - age + 0.01, self._grace_over, (self._serial,))
                    timer.daemon = True
                    try:
                        timer.start()
                        self._timed = self._serial
                    except RuntimeError:     # no thread to be had: the next change decides instead
                        pass

    def site_missing(self):
        """The output folder is gone (`rm -rf site` while serving): build it again, unless a
        build is under way or asked for, or the last one failed (its problems are on show, and
        building again on every request would loop)."""
        if self.running or self.state.snapshot()["problems"]:
            return
        with self._cond:
            if self._pending:
                return
        self.request((str(self.out),))

    def _grace_over(self, serial):
        try:
            with self._cond:
                self._abandon(serial)
        except Exception:        # never a traceback from a timer thread; the build just goes on
            pass

    def _abandon(self, serial):
        """(Holding _cond.) Ask build `serial` to stop, if it is still the one running, has
        changes waiting and is old enough; the build raises BuildAbandoned."""
        cancelled = getattr(self.build, "cancelled", None)
        if (cancelled is None or serial != self._serial or self._started is None or not self._waiting
                or self._abandon_for is not None or self._stopping or STOPPING.is_set()):
            return
        if time.monotonic() - self._started < self.abandon_after:
            return
        self._abandon_for = sorted(set(self._arrived))
        cancelled.set()

    def start(self):
        self._thread = threading.Thread(target=self._loop, name="serve-rebuild", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, wait=0.0):
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread is not None and wait:
            self._thread.join(wait)

    def _loop(self):
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping or STOPPING.is_set():
                    return
                changed, self._pending, self._changed = sorted(self._changed), False, set()
                self.running = True          # not idle from here (run_once says so again)
            self.run_once(self._describe(changed))

    def idle(self) -> bool:
        """No build running and none asked for (a test waits for this rather than sleeping)."""
        with self._cond:
            return not self._pending and not self.running

    def _names(self, changed):
        """'content/x.md' or 'content/x.md and 2 more', paths shown relative to the root."""
        if not changed:
            return ""
        try:
            first = Path(changed[0]).resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            first = str(changed[0])
        return first + (f" and {len(changed) - 1} more" if len(changed) > 1 else "")

    def _describe(self, changed):
        return f"{self._names(changed)} changed: " if changed else ""



# How often (ms) the watch wakes with no change: its first wake-up sets Watcher.ready.
READY_POLL_MS = 200
EXTRA_IGNORED = (r"^4913$", r"^#.*#$", r"\.tmp$", r"\.bak$", r"\.orig$", r"\.kate-swp$")


class Watcher:
    """Calls on_change(paths) for changes under root's watched_dirs (or `dirs`), ignoring
    __pycache__, editor temp files and the output folder (with the writer's temporary and lock
    files beside it). Without `dirs`, a change that makes the project block name other folders
    moves the watch to them."""

    def __init__(self, root, out, on_change, dirs=None, log=log_line):
        import watchfiles
        self._watchfiles = watchfiles
        self.root = Path(root).resolve()
        self.out = os.path.realpath(out)
        self.on_change = on_change
        self.log = log
        self._dirs = dirs
        self.paths = self.current_paths()
        self._stop = threading.Event()
        # Set once the watch is up (or has failed, its warning logged): watchfiles says nothing
        # when it is, so a change made before then could go unseen. serve prints its
        # "serving ... (watching ...)" line only after it; tests wait on it, never a sleep.
        self.ready = threading.Event()
        self._thread = None
        base = watchfiles.DefaultFilter
        self._filter = base(ignore_dirs=tuple(base.ignore_dirs) + (".build_cache",),
                            ignore_entity_patterns=tuple(base.ignore_entity_patterns) + EXTRA_IGNORED)
        name = re.escape(os.path.basename(self.out))
        self._writer_files = re.compile(rf"^\.{name}\.(tmp-\d+|old-\d+|lock)$")

    def current_paths(self) -> list:
        """The folders to watch now: `dirs`, or the builder's and the project block's."""
        dirs = self._dirs if self._dirs is not None else watched_dirs(self.root)
        return [self.root / d for d in dirs if (self.root / d).is_dir()]

    def moved(self) -> bool:
        """Whether the folders to watch changed (the project block names others); if so, they
        are the ones watched from now on."""
        now = self.current_paths()
        if now == self.paths:
            return False
        self.paths = now
        self.log(f"watching {', '.join(p.name + '/' for p in now)} now")
        return True

    def wanted(self, change, path: str) -> bool:
        if not self._filter(change, path):
            return False
        real = os.path.realpath(path)
        if inside(real, self.out) or inside(os.path.abspath(path), self.out):
            return False
        parent = os.path.dirname(self.out)
        rel = os.path.relpath(os.path.abspath(path), parent)
        return not self._writer_files.match(rel.split(os.sep)[0])

    def lasting(self, changes):
        """The changed paths, less files that came and went within the batch (an editor's or
        `sed -i`'s temporary file, written and renamed over the real one)."""
        added = {path for change, path in changes if change == self._watchfiles.Change.added}
        return sorted({path for _, path in changes if path not in added or os.path.lexists(path)})

    def start(self):
        if not self.paths:
            return None
        self._thread = threading.Thread(target=self._run, name="serve-watch", daemon=True)
        self._thread.start()
        return self._thread

    def _run(self):
        try:
            while not self._stop.is_set():
                # A timeout yields an empty batch: the first says the watch is set up.
                for changes in self._watchfiles.watch(*self.paths, watch_filter=self.wanted, stop_event=self._stop,
                                                      debounce=1600, step=50, raise_interrupt=False,
                                                      rust_timeout=READY_POLL_MS, yield_on_timeout=True):
                    self.ready.set()
                    if not changes:
                        continue
                    paths = self.lasting(changes)
                    if paths:
                        self.on_change(paths)
                    if self.moved():
                        break            # watch the folders the project block names now
                else:
                    return               # stopped
        except Exception as e:   # the server keeps running; only rebuild-on-change is lost
            self.log(f"warning: stopped watching for changes: {type(e).__name__}: {e}")
        finally:
            self.ready.set()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
