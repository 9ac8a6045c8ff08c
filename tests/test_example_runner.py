"""Everything an example can do wrong is one problem line naming it, the build goes on and
collects the others, and no example process outlives its build (issue 18)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from site_builder.build import build
from site_builder.base.problems import BuildFailed
from tests.conftest import mini_repo
from tests.test_build_errors import SITE, PAGE
from tests.timing import wait_for, within

BAD = """import os
import sys
import numpy as np
from site_builder.run.examples import ExampleResult, table


def good():
    return ExampleResult([table(["x"], [[1]])], "hand-picked")


def spins():
    while True:
        pass


def exits():
    sys.exit(0)


def hard_exit():
    os._exit(3)


def interrupts():
    raise KeyboardInterrupt


def wrong_type():
    return 42


def wrong_block():
    return ExampleResult([{"kind": "poem"}], "x")


def huge():
    return ExampleResult([table(["x"], [["y" * (80 * 2**20)]])], "x")


def cli_main():
    from model.train import main
    main(["--steps", "0", "--out", "/nonexistent/dir"])


def spins_marked():
    open(os.path.join(os.environ["EXAMPLE_MARKS"], str(os.getpid())), "w").close()   # says it runs, by pid
    spins()
"""


def page(*runs, timeout=None):
    extra = f", timeout: {timeout}" if timeout else ""
    lines = "".join(f'      - {{title: Example {i}, run: "{r}"{extra}}}\n' for i, r in enumerate(runs))
    return PAGE.replace('      - {title: One comparison, run: "mini:compare"}\n', lines)


def problems_of(root, tmp_path, **kw):
    with pytest.raises(BuildFailed) as e:
        build(root, root / "site", cache_dir=tmp_path / "cache", **kw)
    return [str(p) for p in e.value.problems]


def test_every_way_an_example_can_fail_is_one_line_and_the_build_goes_on(tmp_path):
    runs = ["bad:good", "bad:exits", "bad:hard_exit", "bad:interrupts", "bad:wrong_type", "bad:wrong_block",
            "bad:huge", "bad:cli_main"]
    root = mini_repo(tmp_path, SITE, page(*runs), {"bad": BAD})
    lines = problems_of(root, tmp_path, jobs=2)
    assert len(lines) == len(runs) - 1, lines
    text = "\n".join(lines)
    for expected in ("example bad:exits called sys.exit(0) at content/examples/bad.py:17",
                     "example bad:hard_exit ended the process with exit status 3",
                     "example bad:interrupts raised KeyboardInterrupt at content/examples/bad.py:25",
                     "example bad:wrong_type returned an int, not an ExampleResult",
                     "example bad:wrong_block returned block 0 of kind 'poem'",
                     "example bad:huge returned",
                     "example bad:cli_main called sys.exit(2) at"):
        assert expected in text, (expected, lines)
    assert all(line.startswith("content/pages/mini.md:") and "\n" not in line for line in lines)


def test_a_stuck_example_is_stopped_at_its_time_limit_naming_the_line(tmp_path):
    root = mini_repo(tmp_path, SITE, page("bad:spins", "bad:good", timeout=1), {"bad": BAD})
    start = time.monotonic()
    lines = problems_of(root, tmp_path, jobs=1)
    assert time.monotonic() - start < within(30)
    assert len(lines) == 1
    assert "example bad:spins was stopped after 1 s while executing content/examples/bad.py:12" in lines[0]
    assert "timeout: SECONDS" in lines[0]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_no_example_process_outlives_its_build(tmp_path, how):
    root = mini_repo(tmp_path, SITE, page("bad:spins_marked", timeout=600), {"bad": BAD})
    marks = tmp_path / "marks"
    marks.mkdir()
    build_proc = subprocess.Popen([sys.executable, "build_site.py", "--cache-dir", str(tmp_path / "cache")],
                                  cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, "EXAMPLE_MARKS": str(marks)})
    def running_or_ended():
        if build_proc.poll() is not None:
            pytest.fail(f"the build ended ({build_proc.returncode}) first: {build_proc.stderr.read()}", pytrace=False)
        return list(marks.iterdir())
    marked = wait_for(running_or_ended, 300, "the example running in a worker")
    workers = [int(p.name) for p in marked]
    build_proc.send_signal(how)
    build_proc.wait(timeout=within(10))
    wait_for(lambda: not any(alive(w) for w in workers), within(5),
             f"example processes {workers} gone with the build")
    if how != signal.SIGKILL:
        assert build_proc.returncode == 128 + how
        assert len(build_proc.stderr.read().strip().splitlines()) == 1


def test_config_label_names_a_plain_dataclass_config():
    """A config class of another package need not define to_dict: its dataclass fields are read."""
    from dataclasses import dataclass
    from site_builder.run.examples import config_label

    @dataclass(frozen=True)
    class PlainConfig:
        width: int = 3
        rate: float = 0.5
    assert config_label(PlainConfig(width=4)) == "PlainConfig(width=4, rate=0.5)"
