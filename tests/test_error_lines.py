"""Issue 18, "every failure is one line": failures that used to print `internal error: ...` or
a line without a line number, each as the problem line it should be,
`file:line: what is wrong (how to fix it)`.

The model-edit and training cases run `build_site.py check` on a copy of the project
(tests/fixture_project.py: the real builder and model, four cheap pages) whose model/ the
test edits; the link cases build a one-page repository in this process."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from site_builder.build import build
from site_builder.base.problems import BuildFailed
from tests.conftest import mini_repo, shared_cache
from tests.fixture_project import make_fixture_project
from tests.test_build_errors import EXAMPLE, PAGE, SITE

PROBLEM = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+): \S")


def check(root: Path):
    """(exit status, problem lines) of `python3 build_site.py check` in root."""
    run = subprocess.run([sys.executable, "build_site.py", "check", "--out", str(root / "site")], cwd=root,
                         capture_output=True, text=True, timeout=300)
    lines = [l for l in run.stderr.splitlines() if l and not l.startswith(("warning:", "build failed:"))]
    return run.returncode, lines


def assert_problem_lines(root: Path, lines):
    """Each line is a problem naming a file of the project and a line it has."""
    assert not [l for l in lines if "internal error" in l], lines
    for l in lines:
        m = PROBLEM.match(l)
        assert m, f"not a problem line: {l}"
        path = root / m["file"]
        assert path.is_file(), l
        assert 1 <= int(m["line"]) <= len(path.read_text(encoding="utf-8").splitlines()), l


def hits(lines, *needles):
    found = [l for l in lines if all(n in l for n in needles)]
    assert found, f"no problem mentions {needles}: {lines}"
    return found


def line_number(path: Path, text: str) -> int:
    return next(i for i, l in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in l)


@pytest.fixture
def project(tmp_path):
    return make_fixture_project(tmp_path / "project")


def delete_line(path: Path, text: str) -> int:
    """Delete the one line of path that contains text; returns its number."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    [n] = [i for i, l in enumerate(lines) if text in l]
    path.write_text("".join(lines[:n] + lines[n + 1:]), encoding="utf-8")
    return n + 1


# -- 1. a model edit that makes the build's own runs raise ---------------------------------

INIT_REF = '[[model.transformer.init_params | p[b + "b" + w] = np.zeros(d, dt)]]'


@pytest.mark.parametrize("deleted, raised", [
    # init_params no longer makes the attention biases: the probe's trace of loss_and_grads raises
    ('p[b + "b" + w] = np.zeros(d, dt)', ("KeyError", "model/attention.py:")),
    # init_params itself raises, in the probe's setup and for the landing page's parameter count
    ("d, F, V, dt = cfg.emb_dim", ("NameError", "model/transformer.py:")),
])
def test_a_model_edit_that_makes_the_probes_raise_is_problem_lines(project, deleted, raised):
    """It printed one `internal error: TraceError ... KeyError`, naming no content file and
    hiding every reference the edit broke."""
    loss = project / "content/pages/loss.md"
    loss.write_text(loss.read_text(encoding="utf-8") + f"\nThe biases start at zero: {INIT_REF}.\n", encoding="utf-8")
    ref_line = line_number(loss, INIT_REF)
    delete_line(project / "model/transformer.py", deleted)
    status, lines = check(project)
    assert status == 1
    assert_problem_lines(project, lines)
    # one line for the error, at the model's line, for every probe and example it stopped and
    # every page line that needed them (collapse_causes); no page line proposes another fix
    error, where = raised
    [line] = hits(lines, error, "it stopped", "line(s) that follow from it are not listed")
    assert line.startswith(where) and "the first asked for at content/pages/" in line, line
    assert not [l for l in lines if ("shape probe model" in l or "nothing checks" in l) and l != line], lines
    # and the build went on: a reference the edit broke is reported too
    if "KeyError" in raised:
        hits(lines, f"content/pages/loss.md:{ref_line}:", "no line of model.transformer.init_params contains")


def test_a_diverging_training_run_is_one_problem_line(project):
    """It printed `internal error: TrainingDiverged: ... the last good checkpoint /tmp/... is
    untouched; try a lower --lr`: a temporary path that no longer exists, and an option
    build_site.py does not take."""
    (project / "content/examples/runreader.py").write_text(
        "from content.hooks import trained_run\n"
        "from site_builder.run.examples import ExampleResult, table\n\n\n"
        "def final_loss():\n"
        "    run = trained_run()\n"
        "    return ExampleResult([table(['loss'], [[run.metrics[-1]['train_loss']]])], 'the run')\n")
    loss = project / "content/pages/loss.md"
    text = loss.read_text(encoding="utf-8")
    at = text.index("    examples:\n") + len("    examples:\n")
    loss.write_text(text[:at] + "      - title: The run\n        run: runreader:final_loss\n" + text[at:], encoding="utf-8")
    config = project / "model/config.py"
    config.write_text(config.read_text(encoding="utf-8").replace("    lr: float = 1e-2\n", "    lr: float = 1e6\n"))
    lr_line = line_number(config, "lr: float = 1e6")
    status, lines = check(project)
    assert status == 1
    assert_problem_lines(project, lines)
    [line] = hits(lines, "diverged at step")
    assert line.startswith(f"content/pages/loss.md:{line_number(loss, 'run: runreader:final_loss')}:")
    assert f"model/config.py:{lr_line}" in line and "lower lr" in line
    assert "--lr" not in line and "/tmp" not in line and "checkpoint" not in line


def test_the_diverged_message_names_the_step_and_the_setting(tmp_path):
    """The same, one level down and on the real corpus: the recipe's own message (content/hooks.py)."""
    from model.config import TrainConfig
    from model.train import TrainingDiverged
    from content.hooks import run_training
    from tests.conftest import ROOT
    with pytest.raises(TrainingDiverged) as e:
        run_training(ROOT, TrainConfig(steps=50, lr=1e6))
    message = str(e.value)
    assert re.match(r"diverged at step \d+ \(", message), message
    assert f"model/config.py:{line_number(ROOT / 'model/config.py', 'lr: float =')}" in message
    assert "--lr" not in message and "/tmp" not in message


# -- 2. broken links: a line number, and every href of the Markdown ---------------------------

BODY_LINKS = """The body, with a [link](mini.html#mini).

A [gone](gone.html) page.

Raw HTML, unquoted: <a href=nope.html>nope</a>.
"""


def test_a_broken_link_names_the_content_line_that_made_it(tmp_path):
    """Broken-link problems named the content file with no line; and an unquoted href in the
    Markdown was never checked (the scan was a regular expression for double quotes)."""
    page = PAGE.replace("The body, with a [link](mini.html#mini).\n", BODY_LINKS)
    page = page.replace("    what: How far apart two gradients are.",
                        "    what: How far apart two gradients are, see [[model.gradcheck.rel_error]] and [there](mini.html#nowhere).")
    root = mini_repo(tmp_path, SITE, page, {"mini": EXAMPLE})
    with pytest.raises(BuildFailed) as e:
        build(root, root / "site", strict=True, cache_dir=shared_cache())
    lines = [str(p) for p in e.value.problems if "broken link" in p.message]
    source = root / "content/pages/mini.md"
    assert hits(lines, "'gone.html'")[0].startswith(f"content/pages/mini.md:{line_number(source, '[gone](gone.html)')}:")
    assert hits(lines, "'nope.html'")[0].startswith(f"content/pages/mini.md:{line_number(source, 'href=nope.html')}:")
    assert hits(lines, "#nowhere")[0].startswith(f"content/pages/mini.md:{line_number(source, 'what: How far')}:")
    assert all(PROBLEM.match(l) for l in lines), lines


def test_deleting_the_def_line_of_the_call_maps_root_is_problem_lines(project):
    """Found by tests/test_mutation.py with MUTATION_LINES=400: the landing page's call map
    asked the index for model.transformer.loss_and_grads and printed `internal error:
    NotIndexed`."""
    delete_line(project / "model/transformer.py", "def loss_and_grads(")
    status, lines = check(project)
    assert status == 1
    assert_problem_lines(project, lines)
    hits(lines, "content/pages/", "no function model.transformer.loss_and_grads")
    hits(lines, "shape probe model.transformer.loss_and_grads raised LookupError")


def test_a_package_the_build_needs_missing_from_this_python_is_one_error_line(tmp_path):
    """The machine's python3 outside the venv (the site extra never installed) printed
    `internal error: ModuleNotFoundError: No module named 'rcssmin'`. It is the environment's:
    one error line naming the package, this Python and the install command, exit 2."""
    shadow = tmp_path / "shadow" / "rcssmin"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'rcssmin'\", name='rcssmin')\n")
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, str(root / "build_site.py"), "check", "--out", str(tmp_path / "site"),
                          "--cache-dir", str(tmp_path / "cache")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(shadow.parent)})
    lines = [l for l in run.stderr.splitlines() if l]
    assert run.returncode == 2 and len(lines) == 1, run.stderr
    assert lines[0].startswith("error: the package 'rcssmin' is not installed in " + sys.executable), lines[0]
    assert 'pip install -e ".[site]"' in lines[0] and "internal error" not in lines[0]
