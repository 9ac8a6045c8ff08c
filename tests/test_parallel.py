"""The build's own children (site_builder/base/parallel.py): outcomes in the order of the calls
whatever finishes first, a failing child is an outcome (the build then does that share
itself), memo additions come back, and no child outlives `stop`. Plus the share-out the
pages and the renders are split by, and the collector paused for a build."""
import gc
import os
import signal
import time

import pytest

from site_builder.base import parallel, worker
from site_builder.base.parallel import share_out
from tests.timing import wait_for, within


def test_outcomes_come_back_in_call_order_and_a_failed_child_is_an_outcome():
    def slow():
        time.sleep(0.3)
        return "slow"

    def raises():
        raise ValueError("no")

    children = parallel.start({"slow": slow, "fast": lambda: "fast", "raises": raises,
                               "exits": lambda: os._exit(3)})
    outcomes = children.wait()
    assert [o.name for o in outcomes] == ["slow", "fast", "raises", "exits"]
    assert [o.status for o in outcomes] == ["ok", "ok", "error", "died"]
    assert [o.value for o in outcomes[:2]] == ["slow", "fast"]
    assert "ValueError: no" in outcomes[2].detail


def test_a_child_sends_back_only_what_it_added_to_the_memos():
    memo, names = {"old": 1}, {"a"}
    snapshot = parallel.memo_snapshot([memo, names])

    def work():
        memo["new"] = 2
        names.add("b")
        return parallel.memo_additions([memo, names], snapshot)
    [outcome] = parallel.start({"work": work}).wait()
    assert outcome.value == [{"new": 2}, {"b"}]
    assert memo == {"old": 1}             # the child's memory is its own until merged
    parallel.merge_memos([memo, names], outcome.value)
    assert memo == {"old": 1, "new": 2} and names == {"a", "b"}


def test_stop_kills_a_child_that_is_still_running():
    with parallel.start({"sleeps": lambda: time.sleep(60)}) as children:
        [pid] = [child.pid for child in children.running.values()]
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive


def test_sending_tells_a_child_still_working_from_one_done_without_waiting():
    with parallel.start({"sleeps": lambda: time.sleep(60)}) as children:
        t0 = time.monotonic()
        assert not children.sending()
        assert time.monotonic() - t0 < within(1)
    done = parallel.start({"big": lambda: "x" * (1 << 20)})     # more than a pipe holds: sent in parts
    wait_for(done.sending, 60, "the child sending its outcome", interval=0.005)
    [outcome] = done.wait()
    assert outcome.status == "ok" and outcome.value == "x" * (1 << 20)


def test_share_out_balances_by_cost_and_keeps_each_share_in_order():
    costs = {"a": 5, "b": 1, "c": 4, "d": 2, "e": 2}
    shares = share_out(list(costs), costs.get, 2)
    assert sorted(x for share in shares for x in share) == sorted(costs)
    assert all(share == sorted(share) for share in shares)           # the items' own order
    totals = [sum(costs[x] for x in share) for share in shares]
    assert max(totals) - min(totals) <= min(costs.values())
    assert share_out(list(costs), costs.get, 2) == shares              # the same items, the same shares
    assert share_out(["x"], lambda _: 1, 2) == [["x"]]                 # no empty share



def _render(value, stop_in_child_of=None):
    """A render; with stop_in_child_of=PID, one a child of PID runs stops there (SIGSTOP, as
    a tester's `kill -STOP`), while PID itself runs it plainly."""
    def render():
        if stop_in_child_of is not None and os.getpid() != stop_in_child_of:
            os.kill(os.getpid(), signal.SIGSTOP)
        return value
    return render


def test_a_stopped_child_is_killed_soon_and_its_share_done_here_with_the_same_output():
    from types import SimpleNamespace
    from site_builder.build.render_step import render_shares
    renderer, pages = SimpleNamespace(code_memo={}), [(f"page{i}.txt", f"bytes {i}".encode(), 1 + i % 2) for i in range(6)]
    normal = render_shares({p: (_render(v), None, cost) for p, v, cost in pages}, renderer, None, background=True)
    todo = {p: (_render(v, stop_in_child_of=os.getpid()), None, cost) for p, v, cost in pages}
    started = time.monotonic()
    stalled = render_shares(todo, renderer, None, background=True)
    assert time.monotonic() - started < within(10 * worker.STOPPED_SECONDS + 5)     # not parallel.TIMEOUT
    assert list(stalled.items()) == list(normal.items())


def test_a_stopped_child_is_an_outcome_of_its_own_and_leaves_no_process():
    with parallel.start({"stops": _render("x", stop_in_child_of=os.getpid())}) as children:
        [pid] = [child.pid for child in children.running.values()]
        [outcome] = children.wait()
    assert outcome.status == "stopped" and "state T" in outcome.detail
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_an_example_whose_child_was_stopped_runs_again_in_a_fresh_child(tmp_path):
    marker = tmp_path / "stopped once"

    def example():
        if not marker.exists():
            marker.write_text("")
            os.kill(os.getpid(), signal.SIGSTOP)
        return "result"
    started = time.monotonic()
    [outcome] = worker.run_calls([worker.Call("ex", example, timeout=60.0)], 1)
    assert time.monotonic() - started < within(10 * worker.STOPPED_SECONDS + 5)     # not its 60 s deadline
    assert (outcome.status, outcome.value) == ("ok", "result") and marker.exists()
def test_the_collector_is_paused_for_the_block_and_collects_in_its_children():
    assert gc.isenabled()
    with parallel.collector_paused():
        assert not gc.isenabled()
        # forked by worker.py, as the examples are, not by parallel.start (which freezes itself)
        [outcome] = worker.run_calls([worker.Call("child", lambda: (gc.isenabled(), gc.get_freeze_count() > 0), 60)], 1)
        assert (outcome.status, outcome.value) == ("ok", (True, True))
        assert not gc.isenabled()          # the fork did not turn it on here
    assert gc.isenabled()
    gc.disable()
    try:                                   # a collector already off is left off
        with parallel.collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
