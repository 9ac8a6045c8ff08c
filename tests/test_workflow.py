"""The workflow that publishes the site (.github/workflows/site.yml) cannot run here, so it is
checked two ways: actionlint (the `actionlint` command of the test extra) finds nothing in it,
and its structure is what the README promises: the README's install command, `check` before
the build, the build cache restored and saved, a deploy to Pages on a push to main only, and
a pull request's site uploaded as an artifact.

actionlint reads the workflow as GitHub does: unknown keys, a step's `with:` inputs against
the action's own (for the popular actions), `${{ }}` expressions, `needs:`, job permissions.
The damaged copies below keep that honest: each must be refused, or a linter that checks
nothing (a wrong path, a missing binary) would pass.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.test_commands import readme_build_block

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "site.yml"
ACTIONLINT = shutil.which("actionlint")


def actionlint(path: Path) -> list:
    """actionlint's findings in one workflow file: [(line, message)]."""
    if ACTIONLINT is None:
        pytest.skip("actionlint is not installed (pip install -e '.[test]')")
    run = subprocess.run([ACTIONLINT, "-no-color", "-format", "{{json .}}", str(path)], capture_output=True,
                         text=True, cwd=ROOT, timeout=60, env={**os.environ, "NO_COLOR": "1"})
    assert run.returncode in (0, 1), f"actionlint failed to run: {run.stderr or run.stdout}"
    return [(e["line"], e["message"]) for e in json.loads(run.stdout or "[]")]


def workflow():
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))        # YAML 1.1 reads a bare `on` as true
    return data


def step_index(steps, uses=None, run=None):
    """The index of the one step that uses this action (any version) or runs this command."""
    found = [i for i, s in enumerate(steps)
             if (uses and s.get("uses", "").split("@")[0] == uses) or (run and s.get("run", "").strip() == run)]
    assert len(found) == 1, f"{uses or run}: {len(found)} steps, expected one"
    return found[0]


def jobs_using(data, action):
    return [name for name, job in data["jobs"].items()
            if any(s.get("uses", "").split("@")[0] == action for s in job.get("steps", []))]


def test_actionlint_finds_nothing():
    assert actionlint(WORKFLOW) == []


DAMAGE = {
    "a typo'd key": ("    runs-on: ubuntu-latest\n    timeout-minutes", "    runs_on: ubuntu-latest\n    timeout-minutes"),
    "an input the action does not have": ("          retention-days: 14", "          retention-day: 14"),
    "a job that needs no such job": ("    needs: build", "    needs: bulid"),
    "an expression on an unknown property": ("github.event_name == 'pull_request'\n        uses",
                                            "github.event_nme == 'pull_request'\n        uses"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_actionlint_refuses_a_damaged_copy(tmp_path, damage):
    old, new = DAMAGE[damage]
    text = WORKFLOW.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the workflow changed: update DAMAGE[{damage!r}]"
    broken = tmp_path / ".github" / "workflows" / "site.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(text.replace(old, new), encoding="utf-8")
    assert actionlint(broken), f"actionlint passed a workflow with {damage}"


def test_it_runs_on_a_push_to_main_and_on_pull_requests():
    on = workflow()["on"]
    assert on["push"]["branches"] == ["main"]
    assert "pull_request" in on


def test_the_build_installs_as_the_readme_says_then_checks_then_builds():
    steps = workflow()["jobs"]["build"]["steps"]
    install = readme_build_block().split("&&")[0].strip()          # `python3 -m pip install -e ".[site]"`
    at = {what: step_index(steps, run=what) for what in (install, "python3 build_site.py check", "python3 build_site.py")}
    assert at[install] < at["python3 build_site.py check"] < at["python3 build_site.py"]


def test_the_build_cache_is_restored_before_the_check_and_saved_after_the_build():
    steps = workflow()["jobs"]["build"]["steps"]
    restore, save = (steps[step_index(steps, uses=f"actions/cache/{what}")] for what in ("restore", "save"))
    assert restore["with"]["path"].rstrip("/") == save["with"]["path"].rstrip("/") == ".build_cache"
    # A key of its own for every run (a cache is never overwritten), and the newest cache of
    # the prefix restored: restore-keys is the key without the run's id.
    assert restore["with"]["key"] == save["with"]["key"]
    assert "github.run_id" in save["with"]["key"]
    assert save["with"]["key"].startswith(restore["with"]["restore-keys"])
    assert save.get("if") == "always()", "a failed check must still save what it ran"
    assert (steps.index(restore) < step_index(steps, run="python3 build_site.py check")
            < step_index(steps, run="python3 build_site.py") < steps.index(save))


def test_deploy_pages_runs_on_a_push_to_main_only():
    data = workflow()
    assert jobs_using(data, "actions/deploy-pages") == ["deploy"]
    deploy = data["jobs"]["deploy"]
    assert deploy["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert deploy["concurrency"] == {"group": "pages", "cancel-in-progress": False}
    assert data["permissions"] == {"contents": "read"}, "only the deploy job may write"
    steps = data["jobs"]["build"]["steps"]
    upload = steps[step_index(steps, uses="actions/upload-pages-artifact")]
    assert upload["if"] == "github.event_name == 'push'" and upload["with"]["path"].rstrip("/") == "site"
    assert steps.index(upload) > step_index(steps, run="python3 build_site.py")


def test_a_pull_request_uploads_the_site_as_an_artifact():
    data = workflow()
    steps = data["jobs"]["build"]["steps"]
    upload = steps[step_index(steps, uses="actions/upload-artifact")]
    assert upload["if"] == "github.event_name == 'pull_request'"
    assert upload["with"]["path"].rstrip("/") == "site"
    assert steps.index(upload) > step_index(steps, run="python3 build_site.py")
    assert "if" not in data["jobs"]["build"], "pull requests build in the same job as main"


NIGHTLY = ROOT / ".github" / "workflows" / "nightly.yml"


def test_the_nightly_run_lints_and_runs_the_randomised_tests_at_their_larger_size():
    """README's "The suite's two sizes" says the larger size runs nightly: a scheduled workflow
    runs exactly the three randomised test files with TBH_LARGE=1, installed as the README says."""
    assert actionlint(NIGHTLY) == []
    data = yaml.safe_load(NIGHTLY.read_text(encoding="utf-8"))
    on = data.pop(True, data.get("on"))
    assert on["schedule"] and "workflow_dispatch" in on
    steps = [s for job in data["jobs"].values() for s in job["steps"]]
    runs = [s for s in steps if "pytest" in s.get("run", "")]
    assert len(runs) == 1 and runs[0]["env"] == {"TBH_LARGE": "1"}
    named = set(runs[0]["run"].split())
    assert {"tests/test_differential.py", "tests/test_mutation.py", "tests/test_fuzz_content.py"} <= named
    assert any(s.get("run", "").strip() == 'python3 -m pip install -e ".[test]"' for s in steps)
