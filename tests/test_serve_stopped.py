"""Under `serve`, a builder stopped from outside (`kill -STOP`) is noticed by the same test the
build applies to its own children (site_builder.base.worker.StopWatch): it is killed, one line is
logged, and the build runs again in a fresh builder; stopped a second time, the build fails
with one line. Was: serve waited for an answer that never came, silently, until the next edit
or a SIGCONT."""
import os
import signal
import threading
import time

import pytest

from site_builder.base import worker
from site_builder.serve.builder import BuilderProcess, RemoteBuildFailed
from tests.conftest import mini_repo
from tests.test_build_errors import PAGE, SITE
from tests.test_interrupt import FAST, running
from tests.timing import within


@pytest.fixture
def builder(tmp_path):
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": FAST})
    logs = []
    made = BuilderProcess(root, tmp_path / "site", str(tmp_path / "cache"), log=logs.append)
    made.logs = logs
    built = made(root, made.out)                    # the cold first build, and its search index
    if built.finish:
        built.finish()
    yield made
    made.close()


def build_within(builder, seconds):
    """builder(...) and its search index in a thread: its result or exception, or a failure
    after `seconds` (a builder that hangs must fail the test, not hang it). The index in the
    same thread: a builder dies with the thread that started it (PR_SET_PDEATHSIG)."""
    got = {}

    def run():
        try:
            built = builder(builder.root, builder.out)
            if built.finish:
                built.finish()
            got["result"] = built
        except BaseException as e:
            got["error"] = e
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert got, f"no answer from the builder in {seconds} s"
    if "error" in got:
        raise got["error"]
    return got["result"]


def stop(pid):
    os.kill(pid, signal.SIGSTOP)
    while worker.process_state(pid) != "T":
        time.sleep(0.01)


def test_a_stopped_builder_is_killed_and_the_build_runs_in_a_fresh_one(builder):
    first = builder.proc.pid
    stop(first)
    built = build_within(builder, within(10 * worker.STOPPED_SECONDS + 15))      # a fresh builder's build
    assert built.summary().startswith("built"), built.summary()
    assert not running(first) and builder.proc.pid != first
    [line] = builder.logs
    assert "the build process was stopped from outside (state T" in line and "fresh one" in line


def test_a_builder_stopped_twice_fails_the_build_in_one_line(builder):
    done = threading.Event()

    def stop_every_builder():          # as a tester who stops each new builder as it appears
        while not done.is_set():
            for pid in list(builder.pids):
                if running(pid) and worker.process_state(pid) != "T":
                    os.kill(pid, signal.SIGSTOP)
            time.sleep(0.02)
    stopper = threading.Thread(target=stop_every_builder, daemon=True)
    stopper.start()
    try:
        with pytest.raises(RemoteBuildFailed) as failed:
            build_within(builder, within(20 * worker.STOPPED_SECONDS + 15))
    finally:
        done.set()
        stopper.join()
    [problem] = failed.value.problems
    assert problem.startswith("site_builder/serve/builder.py: the build process was stopped from outside") and "twice" in problem
    assert len(builder.pids) == 2 and not any(running(pid) for pid in builder.pids)
    assert len(builder.logs) == 1
