"""Under `serve`, a stuck example never blocks the next rebuild (site_builder/serve/rebuild.py:
Rebuilder; builder.py: BuilderProcess.cancelled). A change that arrives while a build has run for
ABANDON_AFTER seconds (or that is waiting when it reaches that age) abandons it: the builder
and its workers are killed, nothing half-written is published, one line is logged, and a new
builder builds the new tree at once. A build that finishes within the grace period is not
disturbed: the change waits for it, as before.

The first tests drive the Rebuilder with a fake build in this process; the last runs the real
`python3 build_site.py serve` on a small copy of the repository (tests/test_interrupt.py's
helpers), with an example that spins forever under `timeout: 600`. Every wait is for an
observable state (a line printed, a file an example wrote, a process existing or gone, a
grace-period timer ended), never a sleep (tests/timing.py).
"""
import json
import re
import threading
import time
import urllib.request

import pytest

from site_builder.serve.rebuild import ABANDON_AFTER, BuildAbandoned, Rebuilder
from site_builder.serve.site_http import SiteState
from tests.conftest import mini_repo
from tests.test_build_errors import PAGE, SITE
from tests.test_interrupt import FAST, _stat, running, tree, command  # noqa: F401 (a fixture)
from tests.timing import wait_for

pytestmark = pytest.mark.usefixtures("quick_settle")      # see tests/conftest.py


class Summary:
    def __init__(self, text):
        self.text = text

    def summary(self):
        return self.text


class CancellableBuild:
    """A build that takes `plan[i]` seconds (None: forever) unless cancelled, as BuilderProcess
    is: `cancelled` set while it runs makes it raise BuildAbandoned."""

    def __init__(self, *plan):
        self.plan = list(plan)
        self.cancelled = threading.Event()
        self.started = []
        self.finished = 0

    def __call__(self, root, out):
        self.started.append(time.monotonic())
        seconds = self.plan.pop(0) if self.plan else 0.0
        if self.cancelled.wait(600 if seconds is None else seconds):
            raise BuildAbandoned()
        self.finished += 1
        return Summary(f"built {self.finished}")


def wait_until(condition, what="the rebuilder's state"):
    return wait_for(condition, 60, what)


@pytest.fixture
def rebuilder(tmp_path):
    made = []

    def make(build, abandon_after=0.5):
        logs = []
        r = Rebuilder(build, tmp_path, tmp_path / "site", SiteState(), log=logs.append, abandon_after=abandon_after)
        r.logs = logs
        r.start()
        made.append(r)
        return r
    yield make
    for r in made:
        r.stop(wait=2)


def test_the_grace_period_is_two_seconds():
    assert 1.0 <= ABANDON_AFTER <= 2.0


def grace_timers():
    return [t for t in threading.enumerate() if isinstance(t, threading.Timer)]


def test_a_change_during_a_young_build_that_finishes_waits_for_it(rebuilder, tmp_path):
    build = CancellableBuild(0.2, 0.0)
    r = rebuilder(build, abandon_after=2.0)             # far beyond a stall of the test thread
    r.request([str(tmp_path / "content/a.md")])
    wait_until(lambda: build.started, "the first build")
    r.request([str(tmp_path / "content/b.md")])       # 0.0x s into a 0.2 s build: it is queued
    assert grace_timers(), "a grace-period timer is set for the young build"
    wait_until(lambda: r.builds == 2, "the queued build")
    wait_until(lambda: not grace_timers(), "the grace period's end")   # it ran: nothing is abandoned
    assert r.abandoned == 0 and build.finished == 2 and r.builds == 2, r.logs
    assert not build.cancelled.is_set()
    assert not any("abandoned" in line for line in r.logs), r.logs


def test_a_change_during_an_old_build_abandons_it_at_once(rebuilder, tmp_path):
    build = CancellableBuild(None, 0.0)
    r = rebuilder(build, abandon_after=0.3)
    r.request([str(tmp_path / "content/a.md")])
    wait_until(lambda: build.started and time.monotonic() - build.started[0] > 0.4)
    t0 = time.monotonic()
    r.request([str(tmp_path / "content/examples/x.py")])
    wait_until(lambda: r.builds == 1)
    assert time.monotonic() - t0 < 60.0      # at once, not after the hang (600 s; slack for a loaded machine)
    assert r.abandoned == 1 and build.finished == 1 and not build.cancelled.is_set()
    abandoned = [line for line in r.logs if "abandoned" in line]
    assert len(abandoned) == 1 and abandoned[0].endswith("build abandoned: content/examples/x.py changed; rebuilding")
    assert "content/examples/x.py changed: built 1" in r.logs[-1], r.logs
    assert r.state.snapshot()["problems"] == [] and r.state.generation == 1    # abandoned is no failure


def test_a_change_waiting_when_the_grace_period_ends_abandons_a_build_that_hangs(rebuilder, tmp_path):
    build = CancellableBuild(None, 0.0)
    r = rebuilder(build, abandon_after=0.6)
    r.request([str(tmp_path / "content/a.md")])
    wait_until(lambda: build.started)
    r.request([str(tmp_path / "content/b.md")])       # young: it waits ...
    r.request([str(tmp_path / "content/c.md")])
    wait_until(lambda: r.abandoned == 1)              # ... until the build is 0.6 s old
    took = time.monotonic() - build.started[0]
    assert 0.6 <= took < 60.0, took        # abandoned at the grace period, not at the hang's end (600 s)
    wait_until(lambda: r.builds == 1)
    assert [line for line in r.logs if "abandoned" in line][0].endswith(
        "build abandoned: content/b.md and 1 more changed; rebuilding"), r.logs
    assert len(build.started) == 2


def test_a_build_without_a_cancelled_event_is_never_abandoned(rebuilder, tmp_path):
    release = threading.Event()
    calls = []

    def build(root, out):
        calls.append(1)
        release.wait(10)
        return Summary("ok")
    r = rebuilder(build, abandon_after=0.1)
    r.request(["a"])
    wait_until(lambda: calls, "the build")
    started = time.monotonic()
    wait_until(lambda: time.monotonic() - started > 0.2, "the grace period's end")
    r.request(["b"])         # past the grace period: request() decides to abandon, or not, at once
    release.set()
    wait_until(lambda: r.builds == 2)
    assert r.abandoned == 0


# --- the real command ---------------------------------------------------------------------------

# The example writes a file named after its pid (so the test knows the process) and spins.
SPIN = """import os
from pathlib import Path


def compare():
    Path(os.environ["INTERRUPT_MARKS"], str(os.getpid())).write_text("spinning")
    while True:
        pass
"""
GOOD_AGAIN = FAST.replace('"fast"', '"good again"')


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read().decode()


def test_a_stuck_example_never_blocks_the_next_rebuild(tmp_path, command):
    page = PAGE.replace('run: "mini:compare"}', 'run: "mini:compare", timeout: 600}')
    assert page != PAGE
    # Copies, not links, of every watched folder: an edit elsewhere in the working tree must
    # not start a build here.
    root = mini_repo(tmp_path, SITE, page, {"mini": FAST}, copy=("model", "site_builder", "tests", "templates", "static"))
    out, marks = tmp_path / "site", tmp_path / "marks"
    marks.mkdir()
    cmd = command(root, ["serve", "--port", "0", "--out", str(out), "--cache-dir", str(tmp_path / "cache")],
                  tag=str(out), env={"INTERRUPT_MARKS": str(marks)})
    serving = wait_for(lambda: [line for line in cmd.lines if line.startswith("serving ")], 120, "serving", cmd)
    url = re.search(r" at (http://\S+/) ", serving[0]).group(1)
    assert "fast" in (out / "mini.html").read_text()

    (root / "content" / "examples" / "mini.py").write_text(SPIN)
    worker = int(wait_for(lambda: list(marks.iterdir()), 120, "the spinning example running in a worker", cmd)[0].name)
    builder = [p for p in tree(cmd.proc.pid) if (_stat(p) or (0, 0))[1] == cmd.proc.pid]
    assert running(worker) and worker in tree(cmd.proc.pid) and len(builder) == 1
    printed = len(cmd.lines)

    t0 = time.monotonic()
    (root / "content" / "examples" / "mini.py").write_text(GOOD_AGAIN)        # the author reverts
    built = wait_for(lambda: [line for line in cmd.lines[printed:] if " built " in line], 120,
                     "the site rebuilt with the good example (not after the example's 600 s limit)", cmd)
    took = time.monotonic() - t0
    after = cmd.lines[printed:]
    abandoned = [line for line in after if "build abandoned" in line]
    assert len(abandoned) == 1 and abandoned[0].rstrip().endswith(
        "build abandoned: content/examples/mini.py changed; rebuilding"), after
    assert after.index(abandoned[0]) < after.index(built[0]) and "content/examples/mini.py changed: built" in built[0]
    assert not [line for line in after if "failed" in line or "problem" in line], after
    assert "good again" in (out / "mini.html").read_text()

    # The spinning worker and the builder that ran it are gone; a new builder serves the next build.
    assert not running(worker) and not running(builder[0])
    assert worker not in tree(cmd.proc.pid)
    # serve keeps serving the new site, with no problem listed.
    status, body = get(url + "mini.html")
    assert status == 200 and "good again" in body
    assert json.loads(get(url + "__errors")[1])["problems"] == []
    assert not [p for p in tree(cmd.proc.pid) if p == builder[0]]

    status, _, lines, _ = cmd.interrupt()
    assert status == 130 and len(lines) == 1 and lines[0].startswith("stopped"), lines
    assert "Traceback" not in cmd.text(), cmd.text()
    print(f"serve: revert to rebuilt site {took:.2f} s (watcher debounce, abandon, new builder, build)")
