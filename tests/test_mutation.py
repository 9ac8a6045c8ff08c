"""Mutation test of the builder's error reporting (issue 18): delete one line of the model at a
time and run `check`. Whatever a deletion breaks, the build must either pass or fail with
problem lines that each name a file of the project and a line that file has; never an
`internal error`, a traceback, another exit status, or a hang.

The lines are sampled with a fixed seed from model/transformer.py, model/attention.py and
model/ops.py, among the non-blank lines whose deletion still parses (ast.parse). Each check
runs as `python3 build_site.py check` in a copy of the fixture project
(tests/fixture_project.py: the real builder and model, 64 KB of corpus) cut to the two of its
pages that cite the mutated files most (embeddings, loss: the transformer's embedding and
the cross-entropy of ops.py, with shapes blocks the probes fill), whose build cache was warmed
by one build and one check first; two copies run side by side. Every model edit reruns every example that
imports the model, so the pages kept decide the time: about 2.5 s of CPU per check.

    python3 -m pytest tests/test_mutation.py -s                     # 16 lines (30 took about 50 s on 2 cores)
    TBH_LARGE=1 python3 -m pytest tests/test_mutation.py -s         # 400 lines (every candidate if fewer)
    MUTATION_LINES=N ...                                            # N lines
    MUTATION_SEED=7 ...                                             # another sample

`-s` prints the figures: lines deleted, runs that passed, runs that failed cleanly (and how
many of those only with the problems the unmutated project has), and the time taken.
"""
import ast
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.fixture_project import _site_yaml, make_fixture_project
from tests.sizes import size

FILES = ("model/transformer.py", "model/attention.py", "model/ops.py")
LINES = size("MUTATION_LINES", 6, 400)     # the suite's size (it must stay under 10 min); TBH_LARGE=1
SEED = int(os.environ.get("MUTATION_SEED", "0"))
PARALLEL = 2
PAGES = ("embeddings", "loss")
TIMEOUT = 240                    # seconds for one check: past it, the build hangs
PROBLEM = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+): \S")


def candidates(root: Path):
    """(file, line number, text) of every non-blank line whose deletion still parses."""
    out = []
    for rel in FILES:
        lines = (root / rel).read_text(encoding="utf-8").splitlines(keepends=True)
        for i, text in enumerate(lines):
            if not text.strip():
                continue
            try:
                ast.parse("".join(lines[:i] + lines[i + 1:]))
            except SyntaxError:
                continue
            out.append((rel, i + 1, text.strip()))
    return out


def check(root: Path):
    """(exit status, stderr, seconds) of one check; a run past TIMEOUT is killed and reported."""
    t0 = time.perf_counter()
    try:
        run = subprocess.run([sys.executable, "build_site.py", "check", "--jobs", "1", "--out", str(root / "site")],
                             cwd=root, capture_output=True, text=True, timeout=TIMEOUT)
        return run.returncode, run.stderr, time.perf_counter() - t0
    except subprocess.TimeoutExpired as e:
        return None, f"hung: no answer after {TIMEOUT} s; stderr so far: {e.stderr!r}", time.perf_counter() - t0


def what_is_wrong(root: Path, status, stderr):
    """Why one run's output breaks the rule, or None if it keeps it (checked against the tree
    as it is while the line is deleted: that is what the lines must name)."""
    if status not in (0, 1):
        return f"exit status {status}: {stderr[-2000:]}"
    if "internal error" in stderr or "Traceback" in stderr:
        return stderr[-2000:]
    for line in stderr.splitlines():
        if not line or line.startswith(("warning: ", "build failed: ")):
            continue
        m = PROBLEM.match(line)
        if not m:
            return f"not a problem line: {line}"
        path = root / m["file"]
        if not path.is_file():
            return f"names a file that does not exist: {line}"
        if not 1 <= int(m["line"]) <= len(path.read_text(encoding="utf-8").splitlines()):
            return f"names a line its file does not have: {line}"
    if status == 1 and not any(PROBLEM.match(l) for l in stderr.splitlines()):
        return f"failed without a problem line: {stderr[-2000:]}"
    return None


def problem_kinds(stderr):
    """The problem lines without their line numbers: what a run reported, comparable with the
    unmutated run's (a deleted line moves every line number below it)."""
    return {re.sub(r":\d+", ":N", l) for l in stderr.splitlines() if PROBLEM.match(l)}


def test_deleting_any_line_of_the_model_gives_problem_lines_or_a_pass(tmp_path):
    t0 = time.perf_counter()
    first = make_fixture_project(tmp_path / "p0")
    (first / "content" / "site.yaml").write_text(_site_yaml(PAGES), encoding="utf-8")
    for page in (first / "content" / "pages").glob("*.md"):
        if page.stem not in PAGES:
            page.unlink()
    # A plain build first: `check` fails on this cut-down project (strict: links to the pages
    # cut), and a failed build saves no render memo (highlighted files, math, imports), so
    # without it every check would highlight and parse everything again (2.8 s of CPU a check
    # instead of 2.3). Into a folder of its own: site/ stays as the checks alone leave it.
    warm = subprocess.run([sys.executable, "build_site.py", "--jobs", "1", "--out", str(first / "warm")],
                          cwd=first, capture_output=True, text=True, timeout=TIMEOUT)
    assert warm.returncode == 0, warm.stderr
    status, stderr, _ = check(first)                     # warms the build cache
    assert what_is_wrong(first, status, stderr) is None, stderr
    baseline = problem_kinds(stderr)
    copies = [first] + [tmp_path / f"p{i}" for i in range(1, PARALLEL)]
    for copy in copies[1:]:
        shutil.copytree(first, copy, symlinks=True)
    pool = candidates(first)
    sample = random.Random(SEED).sample(pool, min(LINES, len(pool)))
    results, bad = [], []
    lock = threading.Lock()

    def work(root, share):
        for rel, n, text in share:
            path = root / rel
            original = path.read_text(encoding="utf-8")
            lines = original.splitlines(keepends=True)
            path.write_text("".join(lines[:n - 1] + lines[n:]), encoding="utf-8")
            try:
                status, err, seconds = check(root)
                wrong = what_is_wrong(root, status, err)
            finally:
                path.write_text(original, encoding="utf-8")
            with lock:
                results.append((rel, n, status, seconds, problem_kinds(err) <= baseline))
                if wrong:
                    bad.append(f"{rel}:{n} deleted ({text}): {wrong}")

    threads = [threading.Thread(target=work, args=(root, sample[i::PARALLEL])) for i, root in enumerate(copies)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    passed = sum(1 for r in results if r[2] == 0)
    failed = sum(1 for r in results if r[2] == 1)
    only_baseline = sum(1 for r in results if r[2] == 1 and r[4])
    print(f"\nmutation test: {len(sample)} lines deleted (of {len(pool)} candidates, seed {SEED}): "
          f"{passed} passed, {failed} failed cleanly ({only_baseline} of them with only the unmutated "
          f"project's problems), {len(bad)} broke the rule; {time.perf_counter() - t0:.1f} s "
          f"(slowest check {max((r[3] for r in results), default=0):.1f} s)")
    assert len(results) == len(sample)
    assert not bad, "\n".join(bad)
