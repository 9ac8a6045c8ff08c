"""The README's test command, several times in a row, with the machine loaded by clean builds.

    python3 benchmarks/suite_under_load.py                   # 3 runs beside 2 build loops
    python3 benchmarks/suite_under_load.py --runs 1 --loops 1 -- tests/test_serve.py

Why. A test that waits a fixed time, or counts processes at one instant, passes on a quiet
machine and fails on a busy one: a CI runner shared with other jobs. The suite's timing rule
(README, "The suite on a loaded machine") is checked by running it where every wait takes
longer than usual.

What it does. It reads the test command out of README.md (the first ```bash block after the
line "Run the tests", as .ci/run reads the build command), runs its setup (what comes before
its last `&&`: the install) once, so the loops' interpreter can build, clones this checkout's HEAD once
per build loop into a temporary folder (so the loops share neither the checkout's build cache
nor its output lock), and in each clone runs `python3 build_site.py --no-cache --out ...` over
and over: every example and both training runs, each build on the builder's own worker pool.
Beside them it runs the test command `--runs` times in a row in this checkout (arguments after
`--` are appended to it, to load-test some files), sampling /proc/loadavg every 10 s. It
prints one line per run (exit status, wall time, the 1-minute load average's minimum, median
and maximum while it ran, the clean builds that finished beside it) and exits 1 if any run
failed; each run's output is kept in the folder it names.

The loops stop when the last run ends. A run's own processes are part of the load, so the
load average it reports is the suite's plus the loops'.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_test_command(readme: Path = ROOT / "README.md") -> str:
    """The first ```bash block after the line starting "Run the tests"."""
    text = readme.read_text(encoding="utf-8")
    m = re.search(r"^Run the tests.*?^```bash[ \t]*\n(.*?)^```", text, re.S | re.M)
    if not m:
        sys.exit("error: README.md has no ```bash block after the line 'Run the tests'")
    return m.group(1).strip()


class BuildLoop(threading.Thread):
    """`build_site.py --no-cache` again and again in a clone of HEAD, until stopped."""

    def __init__(self, clone: Path, out: Path):
        super().__init__(daemon=True)
        self.clone, self.out = clone, out
        self.finished, self.failed = 0, 0
        self.stopping = threading.Event()
        self.process = None

    def run(self):
        while not self.stopping.is_set():
            self.process = subprocess.Popen([sys.executable, "build_site.py", "--no-cache", "--out", str(self.out)],
                                            cwd=self.clone, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            status = self.process.wait()
            if not self.stopping.is_set():
                self.finished += 1
                self.failed += status != 0

    def stop(self):
        self.stopping.set()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait()


class LoadSampler(threading.Thread):
    """The 1-minute load average every `every` seconds."""

    def __init__(self, every=10.0):
        super().__init__(daemon=True)
        self.every, self.samples = every, []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def summary(self) -> str:
        if not self.samples:
            return "load not sampled"
        return (f"load {min(self.samples):.1f} / {statistics.median(self.samples):.1f} / "
                f"{max(self.samples):.1f} (min / median / max of {len(self.samples)} samples)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of the test command in a row (default 3)")
    parser.add_argument("--loops", type=int, default=2, help="clean-build loops beside them (default 2)")
    parser.add_argument("--logs", type=Path, default=None, help="folder for each run's output (default: a new temporary one)")
    parser.add_argument("extra", nargs="*", help="appended to the test command (after --)")
    args = parser.parse_args(argv)
    command = readme_test_command() + "".join(f" {a}" for a in args.extra)
    logs = args.logs or Path(tempfile.mkdtemp(prefix="suite-under-load-"))
    logs.mkdir(parents=True, exist_ok=True)
    # The loops run builds with this interpreter: its packages come from the command's setup
    # (everything before its last `&&`), so that runs once first, or the first run's loops
    # would fail at import, a second apart, and load nothing.
    setup = command.rsplit("&&", 1)[0].strip() if "&&" in command else ""
    if setup:
        started = time.monotonic()
        done = subprocess.run(["bash", "-c", setup], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode:
            sys.exit(f"error: the test command's setup failed ({setup}):\n{done.stderr.strip()[-2000:]}")
        print(f"setup: {setup} ({time.monotonic() - started:.0f} s, before the loops start)", flush=True)
    work = Path(tempfile.mkdtemp(prefix="suite-under-load-clones-"))
    loops = []
    for n in range(args.loops):
        clone = work / f"clone{n}"
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
        loops.append(BuildLoop(clone, work / f"site{n}"))
    print(f"test command: {command}\n{args.loops} clean-build loop(s) in {work}; output of each run in {logs}", flush=True)
    for loop in loops:
        loop.start()
    failures = 0
    try:
        for run in range(1, args.runs + 1):
            sampler = LoadSampler()
            sampler.start()
            built = sum(l.finished for l in loops)
            started = time.monotonic()
            with open(logs / f"run{run}.log", "w") as log:
                status = subprocess.run(["bash", "-c", command], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
            seconds = time.monotonic() - started
            sampler.stopping.set()
            tail = (logs / f"run{run}.log").read_text(errors="replace").strip().splitlines()[-1:]
            failures += status != 0
            minutes, secs = divmod(round(seconds), 60)
            print(f"run {run}: exit {status} in {minutes}:{secs:02d}, {sampler.summary()}, "
                  f"{sum(l.finished for l in loops) - built} clean build(s) finished beside it; "
                  f"{tail[0] if tail else '(no output)'}", flush=True)
    finally:
        for loop in loops:
            loop.stop()
        subprocess.run(["rm", "-rf", str(work)])
    broken = sum(l.failed for l in loops)
    if broken:
        print(f"note: {broken} of the clean builds beside the runs failed (they are load, not a check)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
