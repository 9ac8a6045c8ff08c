"""GitHub permalinks cite the commit the site was built from, and only for files that equal it.

A file with uncommitted changes has other lines on GitHub at that commit, so its links are left
out and its source page says why (site_builder/gather/fingerprint.py uncommitted_files)."""
import os
import subprocess
from pathlib import Path

from site_builder.gather.fingerprint import head_commit, uncommitted_files
from site_builder.render.html import make_environment
from tests.fixture_project import GIT_ENV

ROOT = Path(__file__).resolve().parent.parent


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


def test_uncommitted_files_lists_every_path_that_differs_from_head(tmp_path):
    for name in ("clean.py", "edited.py", "deleted.py", "old name.py", "staged.py"):
        (tmp_path / name).write_text(f"# {name}\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "--no-gpg-sign", "-m", "one")
    assert uncommitted_files(tmp_path) == frozenset()
    (tmp_path / "edited.py").write_text("# changed\n")
    (tmp_path / "deleted.py").unlink()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "new.py").write_text("# new\n")
    git(tmp_path, "mv", "old name.py", "new name.py")
    (tmp_path / "staged.py").write_text("# staged\n")
    git(tmp_path, "add", "staged.py")
    assert uncommitted_files(tmp_path) == {"edited.py", "deleted.py", "sub/new.py", "new name.py", "old name.py", "staged.py"}
    (tmp_path / "edited.py").write_text("# edited.py\n")          # reverted by hand: equal to HEAD again
    assert "edited.py" not in uncommitted_files(tmp_path)
    assert head_commit(tmp_path)


def test_outside_a_checkout_nothing_is_uncommitted(tmp_path):
    assert head_commit(tmp_path) is None
    assert uncommitted_files(tmp_path) == frozenset()


def test_a_missing_permalink_says_why_instead_of_linking(tmp_path):
    macros = make_environment(ROOT, None).get_template("partials/macros.html").module
    assert str(macros.github_link("https://github.com/o/r/blob/abc/model/ops.py#L3", "GitHub")) == \
        '<a href="https://github.com/o/r/blob/abc/model/ops.py#L3">GitHub</a>'
    missing = str(macros.github_link(None, "GitHub"))
    assert "<a" not in missing and "not on GitHub yet" in missing and "not committed" in missing


def test_a_project_inside_another_repository_has_no_commit_of_its_own(tmp_path):
    (tmp_path / "proj" / "model").mkdir(parents=True)
    (tmp_path / "proj" / "model" / "ops.py").write_text("# ops\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "--no-gpg-sign", "-m", "outer")
    (tmp_path / "proj" / "model" / "ops.py").write_text("# changed\n")
    assert head_commit(tmp_path) and head_commit(tmp_path / "proj") is None     # links then say "branch", not the outer commit


def test_outside_a_checkout_a_link_says_it_points_at_the_branch(tmp_path):
    macros = make_environment(ROOT, None).get_template("partials/macros.html")
    link = str(macros.make_module({"github_branch": "main"}).github_link(
        "https://github.com/o/r/blob/main/model/ops.py#L3", "GitHub"))
    assert link.startswith('<a href="https://github.com/o/r/blob/main/model/ops.py#L3" title="')
    assert ">GitHub (branch main)</a>" in link and "which may have moved on" in link and "not made in a git checkout" in link
    in_a_checkout = str(macros.make_module({"github_branch": None}).github_link("https://x.invalid/blob/abc/f.py", "GitHub"))
    assert in_a_checkout == '<a href="https://x.invalid/blob/abc/f.py">GitHub</a>'


def test_a_concept_page_built_outside_a_checkout_says_its_links_name_the_branch(tmp_path):
    """A tarball of the repository: no commit, so every GitHub link of a concept page names
    the branch and says it may have moved on, as the source pages do."""
    import re
    from site_builder.build import build
    from tests.conftest import mini_repo, shared_cache
    from tests.test_build_errors import EXAMPLE, PAGE, SITE
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE})
    assert head_commit(root) is None
    build(root, root / "site", cache_dir=shared_cache())
    html = (root / "site" / "mini.html").read_text()
    links = re.findall(r'<a href="https://example\.invalid/repo/blob/([^/"]+)/[^"]*"( title="[^"]*")?>([^<]*)</a>', html)
    assert links and all(branch == "main" and title and text.endswith("(branch main)") for branch, title, text in links)
    assert "no commit to cite, so the GitHub links point at the branch main, which may have moved on" in html


def test_editing_a_cited_file_in_a_checkout_drops_its_links_and_committing_brings_them_back(tmp_path):
    """Whether a cited file differs from the commit is the page's own read of the build (not a
    part of every page's key), so the cached page must still follow it: edited, its GitHub
    links go; committed, they come back with the new commit."""
    import re
    from site_builder.build import build
    from tests.conftest import mini_repo, shared_cache
    from tests.test_build_errors import EXAMPLE, PAGE, SITE
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE}, copy=("model",))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-gpg-sign", "-m", "one")
    cache = tmp_path / "cache"

    def links_to_gradcheck():
        build(root, root / "site", cache_dir=cache)
        html = (root / "site" / "mini.html").read_text()
        return re.findall(r'href="https://example\.invalid/repo/blob/([0-9a-f]{40})/model/gradcheck\.py#L', html)
    first = links_to_gradcheck()
    assert first and set(first) == {head_commit(root)}
    with open(root / "model" / "gradcheck.py", "a") as f:
        f.write("\n# an edit below every cited line\n")
    assert links_to_gradcheck() == []
    git(root, "commit", "-q", "--no-gpg-sign", "-am", "two")
    again = links_to_gradcheck()
    assert again and set(again) == {head_commit(root)} != set(first)
