"""Every message names the builder's command as README.md gives it (`python3`, which is what
a fresh venv and a system without `python` both have), from one place: site_builder.COMMAND."""
import re
import subprocess
import sys
from pathlib import Path

from site_builder import COMMAND

ROOT = Path(__file__).resolve().parent.parent
# What a reader sees or runs: messages, --help, pages, the shipped scripts, the guides.
READ_BY_PEOPLE = ["build_site.py", "README.md", "content", "site_builder", "model", "templates",
                  "static/js", "benchmarks", "tools"]


def readme_build_block():
    """The README's build command, the ```bash block after "Build the site" (as .ci/run reads it)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"^Build the site.*?^```bash\n(.*?)^```", text, re.S | re.M).group(1)


def readme_build_command():
    return re.search(r"\S+ build_site\.py", readme_build_block()).group(0)


def test_the_command_is_the_readmes():
    assert COMMAND == readme_build_command()


def test_the_load_script_runs_the_readmes_test_command():
    """benchmarks/suite_under_load.py reads the test command out of README.md, as .ci/run reads
    the build command: the block after "Run the tests", which installs and then runs pytest."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("suite_under_load", ROOT / "benchmarks" / "suite_under_load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"^Run the tests.*?^```bash\n(.*?)^```", text, re.S | re.M).group(1).strip()
    assert module.readme_test_command() == block
    assert block.startswith("python3 -m pip install") and block.endswith("python3 -m pytest")


def build_site(*args):
    """A child process: importing build_site here would change this process's sys.path and
    environment for every later in-process build of the session."""
    return subprocess.run([sys.executable, str(ROOT / "build_site.py"), *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)


def test_help_and_a_usage_error_name_the_command():
    help_text = build_site("--help").stdout
    assert help_text.startswith(f"usage: {COMMAND} ")
    assert f"  {COMMAND} check [--out DIR]" in help_text
    refused = build_site("--no-such-option")
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith(f"(see {COMMAND} --help)")


def test_nothing_people_read_says_python_without_the_3():
    bare = re.compile(r"(?<![\w/.-])python (build_site\.py|-m )")
    found = []
    for top in READ_BY_PEOPLE:
        path = ROOT / top
        for f in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in {".py", ".md", ".html", ".js", ".yaml"}):
            if "vendor" in f.parts:
                continue
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                if bare.search(line):
                    found.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
