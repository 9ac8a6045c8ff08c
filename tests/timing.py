"""Waiting in tests: for a state, never for a fixed time.

A test that sleeps and then asserts, or that counts the processes alive at one instant, passes
on a quiet machine and fails on a loaded one (issue 30: a cold-build test saw one process
under `serve` at load 6-8). So every wait here polls for something the code under test makes
observable (a line printed, a file written, a counter, a process existing or gone) and fails
only after a deadline far longer than the wait ever takes.

Some tests assert a bound in seconds because the bound is the requirement (Ctrl-C exits
within 2 s). Such a bound holds on a quiet machine; `within(seconds)` stretches it by how many
runnable processes share each core now (the 1-minute load average over the core count, never
below 1), so a test fails for a slow program, not for a busy machine. The figure each test
prints is the measured time, unstretched.
"""
import os
import time

import pytest


def load_factor() -> float:
    """Runnable processes per core (1-minute load average / cores), at least 1."""
    try:
        load = os.getloadavg()[0]
    except OSError:                       # no load average on this platform
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


def within(seconds: float) -> float:
    """A bound of `seconds` on a quiet machine, stretched by the load factor."""
    return seconds * load_factor()


def wait_for(condition, timeout, what, proc=None, interval=0.02):
    """condition()'s first true value, polled until `timeout` seconds; else the test fails
    naming `what`. With `proc` (an object with .proc, a Popen, and .text(), its output so far),
    a command that ends first fails at once, with its output."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if proc is not None and proc.proc.poll() is not None:
            pytest.fail(f"the command ended (status {proc.proc.returncode}) before {what}: {proc.text()!r}",
                        pytrace=False)
        time.sleep(interval)
    pytest.fail(f"not within {timeout} s: {what}; output so far: {proc.text() if proc else ''!r}", pytrace=False)
