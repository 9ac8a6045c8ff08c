"""The README's test command as a newcomer runs it: a fresh clone, a fresh virtual environment.

    python3 benchmarks/suite_fresh.py                        # the whole suite, once
    python3 benchmarks/suite_fresh.py -- tests/test_ops.py   # some files (appended to the command)

Why. The README states how long its test command takes on a quiet 2-core machine, measured
where nothing is warm: no build cache, no bytecode, no installed package of the project. A run
in a working checkout is minutes faster (its `.build_cache` holds the training runs), so it
cannot stand for the figure.

What it does. It clones this checkout's HEAD into a temporary folder (so the build cache and
the output are empty), makes a virtual environment there with `python3 -m venv`, and runs the
README's test command (read out of README.md as benchmarks/suite_under_load.py reads it) with
CI=true in that environment, as .ci/run does. It prints the install's and the tests' wall times
and the CPU time the whole machine spent meanwhile (/proc/stat: every process, Chromium and
the builds the tests start included), and the last line of pytest's summary; it exits with
the test command's status. The run's output is kept in the folder it names.

The machine's CPU time is the figure to compare between runs: the suite keeps both cores busy
(a run at 10:14 left them idle 68 s of 615), so its wall time is about that CPU time halved,
and the same tests took from 1,195 to 1,510 s of it on one day (2026-12-07).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_under_load import ROOT, readme_test_command  # noqa: E402


def busy_seconds() -> float:
    """CPU seconds the machine has spent busy since boot (/proc/stat: all but idle and iowait)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("extra", nargs="*", help="appended to the test command (after --)")
    args = parser.parse_args(argv)
    setup, _, tests = readme_test_command().rpartition("&&")
    folder = Path(tempfile.mkdtemp(prefix="suite-fresh-"))
    clone, venv, log = folder / "clone", folder / "venv", folder / "pytest.log"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = dict(os.environ, CI="true", VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHONHOME", None)
    t0 = time.monotonic()
    subprocess.run(setup.strip(), shell=True, cwd=clone, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t1, cpu0 = time.monotonic(), busy_seconds()
    with open(log, "w") as out:
        status = subprocess.run(" ".join([tests.strip(), *args.extra]), shell=True, cwd=clone, env=env,
                                stdout=out, stderr=subprocess.STDOUT).returncode
    t2, cpu1 = time.monotonic(), busy_seconds()
    lines = log.read_text(errors="replace").strip().splitlines()
    minutes = lambda s: f"{int(s // 60)}:{s % 60:05.2f}"
    print(f"install {t1 - t0:.0f} s; tests {minutes(t2 - t1)} ({t2 - t1:.1f} s), the machine's CPU {cpu1 - cpu0:.0f} s; "
          f"exit {status}; {lines[-1] if lines else 'no output'}; log: {log}")
    return status


if __name__ == "__main__":
    sys.exit(main())
