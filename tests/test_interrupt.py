"""Ctrl-C (and SIGTERM) stop `build_site.py serve`, `build` and `check` within 2 s at any
moment: during a cold first build (an empty cache), while idle, during a rebuild after an
edit. Each prints one line, exits 130 (143 for SIGTERM), leaves no process behind (checked by
PID, and by command line: every worker is a fork whose command line names the temporary
output folder) and publishes nothing half-written.

Ctrl-C is sent as a terminal sends it, to the whole process group (each command runs in a
session of its own), so workers that react to it badly would show. Every wait is for an
observable state (a line printed, a file written by an example, a child process existing),
never a sleep or a count of processes at one instant (tests/timing.py); the only fixed number
is the 2 s deadline itself, stretched by the machine's load.
"""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from site_builder.serve.stopping import abandon_output, site_clause
from tests.conftest import ROOT, mini_repo
from tests.test_build_errors import SITE, PAGE
from tests.timing import wait_for, within

DEADLINE = 2.0           # the requirement: Ctrl-C to exit, and to the last worker gone (quiet machine;
                         # asserted as within(DEADLINE), stretched by the load: tests/timing.py)
FAST = """from site_builder.run.examples import ExampleResult, table


def compare():
    return ExampleResult([table(["x"], [[1]])], "fast")
"""
# An example that says it started (a file named after its pid) and then takes its time.
SLOW = """import os
import time
from pathlib import Path


def compare():
    Path(os.environ["INTERRUPT_MARKS"], str(os.getpid())).write_text("running")
    time.sleep(300)
"""


def _stat(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()
    return fields[0].decode(), int(fields[1])           # state, parent pid


def running(pid) -> bool:
    """Exists and is not a zombie (a zombie runs nothing; its parent or init reaps it)."""
    st = _stat(pid)
    return st is not None and st[0] not in "ZX"


def tree(pid) -> list:
    """The running descendants of pid."""
    kids = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st and st[0] not in "ZX":
                kids.setdefault(st[1], []).append(int(name))
    found, todo = [], list(kids.get(pid, []))
    while todo:
        p = todo.pop()
        found.append(p)
        todo += kids.get(p, [])
    return found


def naming(text) -> list:
    """Running processes whose command line contains `text`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and running(int(name)):
            found.append(int(name))
    return found


class Command:
    """`python3 build_site.py ...` in a session of its own; output (stdout and stderr) read by a thread."""

    def __init__(self, root, args, tag, env=None):
        self.tag = tag
        self.proc = subprocess.Popen([sys.executable, "-u", str(Path(root) / "build_site.py"), *args], cwd=root,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True, env={**os.environ, **(env or {})})
        self.lines = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stdout.readline, "")),
                                       daemon=True)
        self.reader.start()

    def text(self):
        return "".join(self.lines)

    def interrupt(self, sig=signal.SIGINT, group=True):
        """Send sig (to the process group, as a terminal does, or to the process); returns
        (exit status, seconds to exit, the lines printed after the signal, every process that
        was under it then)."""
        before = tree(self.proc.pid)
        printed = len(self.lines)
        deadline = within(DEADLINE)
        t0 = time.monotonic()
        (os.killpg if group else os.kill)(self.proc.pid, sig)
        try:
            status = self.proc.wait(deadline)
        except subprocess.TimeoutExpired:
            status = None
        took = time.monotonic() - t0
        if status is None:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(5)
        gone = t0 + deadline
        while time.monotonic() < gone and ([p for p in before if running(p)] or naming(self.tag)):
            time.sleep(0.01)
        left = sorted(set(p for p in before if running(p)) | set(naming(self.tag)))
        assert status is not None, f"still running {deadline:.1f} s after {sig.name}: {self.text()!r}"
        assert not left, f"still running {deadline:.1f} s after {sig.name}: {left}"
        return status, took, self.lines[printed:], before

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        for p in naming(self.tag):
            os.kill(p, signal.SIGKILL)


@pytest.fixture
def command():
    started = []

    def start(*args, **kwargs):
        started.append(Command(*args, **kwargs))
        return started[-1]
    yield start
    for c in started:
        c.stop()


def one_line(lines, *expected):
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    for text in expected:
        assert text in lines[0], lines
    return lines[0]


def leftovers(out: Path):
    """What a killed writer could leave beside the output: its temporary folders."""
    return sorted(p.name for p in out.parent.glob(f".{out.name}.*") if not p.name.endswith(".lock"))


# --- the real site, cold: an empty cache, so the examples run in workers ---------------------

def test_ctrl_c_during_the_cold_first_build_of_serve(tmp_path, command):
    out = tmp_path / "site"
    cmd = command(ROOT, ["serve", "--port", "0", "--out", str(out), "--cache-dir", str(tmp_path / "cache")],
                  tag=str(out))
    # serve -> the builder -> a worker running an example: the build is well under way. The
    # workers seen here are kept: each example is short, so a later count could miss them.
    workers = wait_for(lambda: [p for p in tree(cmd.proc.pid) if p in naming(str(out))
                                and (_stat(p) or (0, cmd.proc.pid))[1] != cmd.proc.pid],
                       120, "a worker forked by the builder", cmd)
    status, took, lines, before = cmd.interrupt()
    assert status == 130, (status, lines)
    assert not [p for p in workers if running(p)], workers
    one_line(lines, "stopped; the build in progress was abandoned: no site was written to")
    assert not out.exists() and leftovers(out) == []
    print(f"serve, cold first build: exit {took:.3f} s after Ctrl-C, {len(before)} processes under it")


@pytest.mark.parametrize("what", ["build", "check"])
def test_ctrl_c_during_a_cold_build_or_check(tmp_path, command, what):
    out = tmp_path / "site"
    cmd = command(ROOT, [what, "--out", str(out), "--cache-dir", str(tmp_path / "cache")], tag=str(out))
    wait_for(lambda: [p for p in tree(cmd.proc.pid) if p in naming(str(out))], 120, "a worker forked by the build",
             cmd)
    status, took, lines, before = cmd.interrupt()
    assert status == 130, (status, lines)
    one_line(lines, f"interrupted; no site was written to {out}")
    assert not out.exists() and leftovers(out) == []
    print(f"{what}, cold: exit {took:.3f} s after Ctrl-C")


# --- a small repository: a good site first, then an edit makes its example slow ----------------

@pytest.fixture
def mini(tmp_path):
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": FAST}, copy=("model", "site_builder", "tests"))
    marks = tmp_path / "marks"
    marks.mkdir()
    return root, tmp_path / "site", marks


@pytest.mark.parametrize("sig, group", [(signal.SIGINT, True), (signal.SIGTERM, False)],
                         ids=["ctrl-c", "sigterm"])
def test_stopping_serve_during_a_rebuild_after_an_edit(mini, command, sig, group):
    root, out, marks = mini
    cmd = command(root, ["serve", "--port", "0", "--out", str(out)], tag=str(out),
                  env={"INTERRUPT_MARKS": str(marks)})
    wait_for(lambda: any(line.startswith("serving ") for line in cmd.lines), 120, "serving", cmd)
    page = (out / "mini.html").read_bytes()
    (root / "content" / "examples" / "mini.py").write_text(SLOW)
    started = wait_for(lambda: list(marks.iterdir()), 120, "the edited example running in a worker", cmd)
    worker = int(started[0].name)
    assert running(worker) and worker in tree(cmd.proc.pid)
    status, took, lines, before = cmd.interrupt(sig, group)
    assert status == 128 + sig, (status, lines)
    assert worker in before and not running(worker)
    one_line(lines, f"stopped; the build in progress was abandoned: the last good site in {out} is untouched")
    assert (out / "mini.html").read_bytes() == page and leftovers(out) == []
    print(f"serve, rebuild, {sig.name}: exit {took:.3f} s")


def test_serve_killed_outright_leaves_no_process(mini, command):
    """SIGKILL runs no handler: the builder dies with serve (PR_SET_PDEATHSIG), and its workers
    with the builder (site_builder/base/worker.py asks for the same)."""
    root, out, marks = mini
    cmd = command(root, ["serve", "--port", "0", "--out", str(out)], tag=str(out),
                  env={"INTERRUPT_MARKS": str(marks)})
    wait_for(lambda: any(line.startswith("serving ") for line in cmd.lines), 120, "serving", cmd)
    (root / "content" / "examples" / "mini.py").write_text(SLOW)
    worker = int(wait_for(lambda: list(marks.iterdir()), 120, "the edited example running in a worker", cmd)[0].name)
    under = tree(cmd.proc.pid)
    assert worker in under
    deadline = within(DEADLINE)
    t0 = time.monotonic()
    os.kill(cmd.proc.pid, signal.SIGKILL)
    cmd.proc.wait(deadline)
    while time.monotonic() - t0 < deadline and ([p for p in under if running(p)] or naming(str(out))):
        time.sleep(0.01)
    assert not [p for p in under if running(p)] and not naming(str(out))
    print(f"serve, SIGKILL: every process under it gone {time.monotonic() - t0:.3f} s after")


def test_a_builder_that_dies_is_one_failure_line_and_the_next_edit_builds(mini, command):
    root, out, marks = mini
    cmd = command(root, ["serve", "--port", "0", "--out", str(out)], tag=str(out),
                  env={"INTERRUPT_MARKS": str(marks)})
    wait_for(lambda: any(line.startswith("serving ") for line in cmd.lines), 120, "serving", cmd)
    (root / "content" / "examples" / "mini.py").write_text(SLOW)
    wait_for(lambda: list(marks.iterdir()), 120, "the edited example running in a worker", cmd)
    builder = [p for p in tree(cmd.proc.pid) if (_stat(p) or (0, 0))[1] == cmd.proc.pid]
    assert len(builder) == 1
    printed = len(cmd.lines)
    os.kill(builder[0], signal.SIGKILL)                  # as the out-of-memory killer would
    failed = wait_for(lambda: [line for line in cmd.lines[printed:] if "build failed" in line], 120,
                      "the failed build's line", cmd)
    # its problem line, as `build` prints problems, then the failed build's line
    problem, summary = cmd.lines[printed:]
    assert "Traceback" not in cmd.text(), cmd.lines[printed:]
    assert problem.startswith("site_builder/serve/builder.py: the build process stopped in the middle of a build (killed by")
    assert summary == failed[0] and "1 problem" in summary and "still serving the last good site" in summary
    (root / "content" / "examples" / "mini.py").write_text(FAST.replace('"fast"', '"fast again"'))
    wait_for(lambda: [line for line in cmd.lines[printed + 2:] if " built " in line], 120, "a new build", cmd)
    assert "fast again" in (out / "mini.html").read_text()
    status, took, lines, before = cmd.interrupt()
    assert status == 130 and len(lines) == 1


def test_ctrl_c_while_serve_is_idle(mini, command):
    root, out, marks = mini
    cmd = command(root, ["serve", "--port", "0", "--out", str(out)], tag=str(out))
    wait_for(lambda: any(line.startswith("serving ") for line in cmd.lines), 120, "serving", cmd)
    builder = wait_for(lambda: tree(cmd.proc.pid), 60, "the builder process", cmd)
    status, took, lines, before = cmd.interrupt()
    assert status == 130 and set(builder) <= set(before)
    assert one_line(lines, "stopped").strip() == "stopped"
    assert (out / "mini.html").is_file()
    print(f"serve, idle: exit {took:.3f} s")


def test_ctrl_c_during_a_build_keeps_the_last_good_site(mini, command):
    root, out, marks = mini
    first = subprocess.run([sys.executable, str(root / "build_site.py"), "--out", str(out)], cwd=root,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    page = (out / "mini.html").read_bytes()
    (root / "content" / "examples" / "mini.py").write_text(SLOW)
    cmd = command(root, ["--out", str(out)], tag=str(out), env={"INTERRUPT_MARKS": str(marks)})
    worker = int(wait_for(lambda: list(marks.iterdir()), 120, "the example running in a worker", cmd)[0].name)
    status, took, lines, before = cmd.interrupt()
    assert status == 130 and worker in before
    one_line(lines, f"interrupted; the last good site in {out} is untouched")
    assert (out / "mini.html").read_bytes() == page and leftovers(out) == []
    print(f"build, warm: exit {took:.3f} s")


# --- what a build killed halfway leaves, put right ----------------------------------------------

def _site(folder, text):
    folder.mkdir(parents=True)
    (folder / "index.html").write_text(text)
    (folder / "pagefind").mkdir()
    (folder / "pagefind" / "pagefind.js").write_text(text)


def test_abandon_output_undoes_each_stage_of_a_write(tmp_path):
    out = tmp_path / "site"
    aside = lambda kind: tmp_path / f".site.{kind}-4242"

    # Killed while writing the new tree: the old site stays, the new tree goes.
    _site(out, "old")
    _site(aside("tmp"), "half")
    assert abandon_output(out, 4242) == "untouched"
    assert (out / "index.html").read_text() == "old" and not aside("tmp").exists()

    # Killed between the two renames: the old site is put back.
    out.rename(aside("old"))
    _site(aside("tmp"), "new")
    assert abandon_output(out, 4242) == "untouched"
    assert (out / "index.html").read_text() == "old" and not aside("old").exists() and not aside("tmp").exists()

    # Killed after the swap, while deleting the old site: the new site is whole and stays.
    out.rename(aside("old"))
    _site(out, "new")
    assert abandon_output(out, 4242) == "complete"
    assert (out / "index.html").read_text() == "new" and not aside("old").exists()
    assert "already complete and stays" in site_clause(out, ["complete"])

    # Killed between the renames of a search bundle: the bundle is put back.
    (out / "pagefind").rename(aside("search-old"))
    _site(aside("search"), "fresh")
    assert abandon_output(out, 4242) == "untouched"
    assert (out / "pagefind" / "pagefind.js").read_text() == "new"
    assert not aside("search-old").exists() and not aside("search").exists()

    # Another process's folders are not touched; with no site at all, there is nothing to undo.
    _site(tmp_path / ".site.tmp-777", "other")
    assert abandon_output(tmp_path / "none", 4242) == "none"
    assert (tmp_path / ".site.tmp-777").is_dir()
    assert site_clause(tmp_path / "none", ["none"]) == f"no site was written to {tmp_path / 'none'}"


# --- a second signal while the first is being handled (issue 30, item 4) ----------------------

SECOND_SIGNAL = """import os, signal, sys, time
sys.path.insert(0, {root!r})
import build_site
build_site._stop_on_interrupt({out!r})
{arrange}
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(10)
"""
# The second SIGTERM arrives while the handler imports what it needs (a finder sees the import)...
DURING_IMPORT = """import importlib.abc
class SecondSignal(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "site_builder.serve.stopping":
            os.kill(os.getpid(), signal.SIGTERM)
        return None
sys.meta_path.insert(0, SecondSignal())"""
# ... or while it cleans up.
DURING_CLEANUP = """import site_builder.serve.stopping as stopping
clean_up = stopping.abandon
def abandon(out):
    os.kill(os.getpid(), signal.SIGTERM)
    return clean_up(out)
stopping.abandon = abandon"""


@pytest.mark.parametrize("arrange", [DURING_IMPORT, DURING_CLEANUP], ids=["during-import", "during-cleanup"])
def test_a_second_sigterm_during_the_first_is_one_line(tmp_path, arrange):
    out = tmp_path / "site"
    script = SECOND_SIGNAL.format(root=str(ROOT), out=str(out), arrange=arrange)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 143, (proc.returncode, proc.stderr)
    one_line(proc.stderr.strip().splitlines(), f"terminated; no site was written to {out}")
    assert "internal error" not in proc.stderr
