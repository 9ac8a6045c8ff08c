"""The build's own work beside itself: calls started in forked children now, collected later.

site_builder/base/worker.py runs calls in children and waits for all of them; the build also
needs to go on with its own share while a child works (the machine has two cores and the
build is one process): highlighting the source files while the pages are gathered, half of
the pages while this process gathers the other half, the font subset while the links are
checked and the site is written. `start` forks the children at once (with worker.py's
children: silenced, killed when the builder dies, Ctrl-C left to the builder) and `wait`
collects their outcomes, in the order of the calls, so what is merged does not depend on
which child finished first; `share_out` cuts the work into shares of about equal cost, one
per process.

Trade-offs. A child's result comes back pickled, so only work whose result is small next
to its cost is worth a child (a page's view model: ~1 % of its time to pickle). Anything a
child fills in memory (the KaTeX and highlighting memos) is lost unless it is sent back:
`memo_snapshot`/`memo_additions` send back what a child added to the memos it was given.
A child that fails is not an error of the build: `wait` gives its Outcome, and the caller
does that share itself (the same code, so the same pages and the same problems).

The collector. A build makes a few million objects that live until it ends (the source
index, the content, the view models); each of the collector's full passes walked all of
them again and freed next to nothing (0.3 s of a 3 s build whose examples were cached, the
peak memory the same without them). `collector_paused` turns it off in the build's process
for the build, and on again after it and in every child forked meanwhile (a child's work,
an example or a training run, collects its own objects; the parent's are frozen there, as
`start` freezes them).
"""
import contextlib
import gc
import os
import selectors

from site_builder.base import worker
from site_builder.base.worker import Call, Outcome

TIMEOUT = 900.0                # seconds; a child of the build itself should take a few


class Started:
    """Children running `calls`; `wait()` -> their Outcomes in the order of the calls."""

    def __init__(self, calls):
        self.calls = list(calls)
        self.running, self.outcomes = {}, {}
        self.selector = selectors.DefaultSelector()
        # The builder's heap is shared with the children copy-on-write; a collection in a
        # child would walk (and so copy) all of it. Frozen, the collector leaves it alone.
        # (serve keeps its heap frozen between builds: then it stays so, serve settles it.)
        was_frozen = gc.get_freeze_count() > 0 or not self.calls
        if self.calls:
            gc.freeze()
        try:
            for call in self.calls:
                worker._start(call, self.running, self.selector)
        except BaseException:
            self.stop()
            raise
        finally:
            if not was_frozen:
                gc.unfreeze()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def wait(self):
        try:
            while self.running:
                self._collect(timeout=0.05)
                worker._enforce_deadlines(self.running)
        finally:
            self.stop()
        return [self.outcomes.get(c.name) or Outcome(c.name, "died", detail="stopped") for c in self.calls]

    def sending(self) -> bool:
        """Without waiting: has every child finished its work (it has begun to send its
        result, or has ended)? Then `wait` only reads what they send."""
        if self.selector is not None and self.running:
            self._collect(timeout=0)
        return all(child.data for child in self.running.values())

    def _collect(self, timeout):
        for key, _ in self.selector.select(timeout=timeout):
            child = self.running[key.fd]
            chunk = os.read(key.fd, 1 << 20)
            if chunk:
                child.data += chunk
            else:
                outcome = worker._finish(child, self.running, self.selector)
                self.outcomes[outcome.name] = outcome

    def stop(self):
        """Kill the children still running (an exception, Ctrl-C in the builder)."""
        if self.selector is None:
            return
        for child in list(self.running.values()):
            worker._kill(child)
            self.selector.unregister(child.fd)
            os.close(child.fd)
        self.running.clear()
        self.selector.close()
        self.selector = None


def start(named_fns, timeout=TIMEOUT):
    """{name: fn} -> Started: each fn() forked now, in a child of its own."""
    return Started([Call(name, fn, timeout) for name, fn in named_fns.items()])


def memo_snapshot(memos):
    """What the memos hold now (call in the parent before forking; the child inherits it)."""
    return [set(m) for m in memos]


def memo_additions(memos, snapshot):
    """In a child: what it added to each memo (dicts: items; sets: members) since snapshot."""
    return [({k: v for k, v in m.items() if k not in before} if isinstance(m, dict) else set(m) - before)
            for m, before in zip(memos, snapshot)]


def merge_memos(memos, additions):
    """In the parent: take a child's additions into the memos."""
    for m, added in zip(memos, additions):
        m.update(added)


_PAUSED = [False]       # the collector is off in this process by collector_paused


def _collect_in_child():
    """In a child forked while the collector was paused: the parent's objects (the young ones
    too, a paused collector leaves them all young) are frozen, as parallel.start freezes them,
    so the child's own collections never walk them (walked in every example's child, they made
    an uncached build take 70 s, against 27 to 41 s before the pause; frozen: 21 s), and the
    collector is on again for the child's own objects."""
    if _PAUSED[0]:
        _PAUSED[0] = False
        gc.freeze()
        gc.enable()


os.register_at_fork(after_in_child=_collect_in_child)


@contextlib.contextmanager
def collector_paused():
    """The garbage collector off in this process for the block, on again after it and in
    the children forked meanwhile (see the module's docstring). A collector already off is
    left as it is."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    _PAUSED[0] = True
    try:
        yield
    finally:
        _PAUSED[0] = False
        gc.enable()


def share_out(items, cost, n):
    """items in n shares of about equal cost (longest first, each to the lightest share),
    each share in the items' order; the same items always give the same shares."""
    shares, totals = [[] for _ in range(n)], [0] * n
    for item in sorted(items, key=lambda x: (-cost(x), items.index(x))):
        lightest = totals.index(min(totals))
        shares[lightest].append(item)
        totals[lightest] += cost(item)
    return [sorted(share, key=items.index) for share in shares if share]
