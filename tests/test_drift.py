"""The site follows the code: moved lines move the citations, a deleted cited line fails the
build (naming the content file and the function), and a failed build leaves the last good
site byte for byte. Runs the real command line on a copy of the repository."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

COPIED = ("model", "site_builder", "content", "templates", "static", "tests", "data", "build_site.py", "pyproject.toml")
DELETED = 'grads[p + "ln2_g"] += dg'


def run(repo, *args):
    return subprocess.run([sys.executable, "build_site.py", *args, "--cache-dir", str(ROOT / ".build_cache")],
                          cwd=repo, capture_output=True, text=True, timeout=600)


def tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    dst = tmp_path_factory.mktemp("drift") / "repo"
    dst.mkdir()
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dst / name)
    # The block page alone: the drift is about its references, and the other pages' examples
    # (the training run among them) would only make every rebuild slower.
    for page in (dst / "content" / "pages").glob("*.md"):
        if page.stem != "block":
            page.unlink()
    site = (dst / "content" / "site.yaml").read_text()
    start = site.index("nav:")
    end = site.index("papers:")
    (dst / "content" / "site.yaml").write_text(site[:start] + "nav:\n  - block\n" + site[end:])
    return dst


def test_drift(repo):
    first = run(repo, "--out", "site")
    assert first.returncode == 0, first.stderr
    again = run(repo, "--out", "site2")
    assert again.returncode == 0, again.stderr
    assert tree(repo / "site") == tree(repo / "site2"), "two builds of the same sources differ"
    before = json.loads((repo / "site/references.json").read_text())["references"]

    # 1. Insert lines above ffn_forward: every reference still quotes its code, and the lines moved.
    path = repo / "model/transformer.py"
    lines = path.read_text().split("\n")
    at = next(i for i, l in enumerate(lines) if l.startswith("def ffn_forward"))
    path.write_text("\n".join(lines[:at] + ["# drift test", "# two more lines", ""] + lines[at:]))
    moved = run(repo, "--out", "site")
    assert moved.returncode == 0, moved.stderr
    after = json.loads((repo / "site/references.json").read_text())["references"]
    assert len(after) == len(before)
    for old, new in zip(before, after):
        if new["start"] is None:            # an example or a computed value: cites a content file, not lines
            assert new == old
            continue
        text = (repo / new["file"]).read_text().split("\n")
        assert "\n".join(text[new["start"] - 1:new["end"]]) == new["code"]
        assert new["code"] == old["code"]
        if new["file"] == "model/transformer.py" and old["start"] > at:
            assert new["start"] == old["start"] + 3
    good = tree(repo / "site")

    # 2. Delete a cited line: check and build fail, name the content file and the function,
    #    and the last good site is untouched.
    path.write_text("\n".join(l for l in path.read_text().split("\n") if DELETED not in l))
    check = run(repo, "check", "--out", "site")
    assert check.returncode == 1
    assert "content/pages/block.md:" in check.stderr and "model.transformer.block_backward" in check.stderr
    assert "Traceback" not in check.stderr
    build = run(repo, "--out", "site")
    assert build.returncode == 1 and "untouched" in build.stderr
    assert tree(repo / "site") == good
