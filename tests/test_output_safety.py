"""Nothing is ever destroyed, and every failure is one line (issue 18).

The output folder is the builder's alone: `--out` never names the repository, a source folder
or a folder the builder did not make; a build deletes only what builds wrote, and the
temporary folders of killed builds are cleaned up. Content the format forbids is one
`file:line: what (fix)` problem, never a crash. The command-line runs use a copy of the
repository (never this one) and stop before building, except where a build is the point."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from site_builder.build import build
from site_builder.base.problems import BuildFailed
from site_builder.publish.write import (MANIFEST, MARKER, MARKER_TEXT, OutputRefused, check_output, output_lock,
                                remove_stale, write_site)
from tests.conftest import ROOT, mini_repo, shared_cache, with_project
from tests.test_build_errors import EXAMPLE, PAGE, SITE, only, problems_of

COPIED = ("model", "templates", "static", "data", "tests", "site_builder")


def run(repo, *args, timeout=300, cache=ROOT / ".build_cache"):
    return subprocess.run([sys.executable, "build_site.py", *args, "--cache-dir", str(cache)],
                          cwd=repo, capture_output=True, text=True, timeout=timeout)


def one_error_line(proc):
    """The run failed with exit status 2 and exactly one line, `error: ...`, and no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    return lines[0]


def snapshot(folder):
    """Every path under folder with its size: what a destroyed file would change."""
    return sorted((p.relative_to(folder).as_posix(), p.lstat().st_size) for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A copy of the repository (every folder copied, none linked) with a .git of its own."""
    root = mini_repo(tmp_path_factory.mktemp("safety"), SITE, PAGE, {"mini": EXAMPLE}, copy=COPIED)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def mini(tmp_path):
    return mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE})


def dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()                  # reaped: the pid names no process now
    return p.pid


# --- A. the output folder is the builder's alone ------------------------------------------------

@pytest.mark.parametrize("command", ["build", "check", "serve"])
def test_a_folder_the_builder_did_not_make_is_refused_and_kept(repo, tmp_path, command):
    mydocs = tmp_path / "mydocs"
    mydocs.mkdir()
    (mydocs / "important.txt").write_text("keep me")
    (mydocs / "CNAME").write_text("docs.example.org")
    line = one_error_line(run(repo, command, "--out", str(mydocs), "--port", "0", timeout=60))
    assert "did not make" in line and "choose an empty or new folder, or delete" in line
    assert "important.txt" in line
    assert (mydocs / "important.txt").read_text() == "keep me"
    assert (mydocs / "CNAME").read_text() == "docs.example.org"
    assert [p.name for p in tmp_path.iterdir()] == ["mydocs"], "no lock or temporary folder beside it"


@pytest.mark.parametrize("out, says", [
    (".", "is the repository itself"),
    ("..", "contains the repository"),
    ("content", "is the source folder"),
    ("model", "is the source folder"),
    ("tests", "is the source folder"),
    (".git", "is the source folder"),
    ("site_builder", "is the source folder"),
    ("content/new-site", "is inside the source folder"),
    ("static/site", "is inside the source folder"),
])
def test_the_repository_and_its_source_folders_are_refused(repo, out, says):
    before = snapshot(repo)
    parent = snapshot(repo.parent)
    line = one_error_line(run(repo, "--out", out, timeout=60))
    assert says in line and "choose" in line
    assert snapshot(repo) == before, "the repository changed"
    assert snapshot(repo.parent) == parent


def test_an_output_holding_a_source_folder_is_refused(tmp_path):
    fake_repo = tmp_path / "r"
    (fake_repo / "content").mkdir(parents=True)
    with pytest.raises(OutputRefused, match="contains the repository"):
        check_output(tmp_path, root=fake_repo)
    with pytest.raises(OutputRefused, match="is inside the source folder"):
        check_output(fake_repo / "content" / "site", root=fake_repo)
    check_output(fake_repo / "site", root=fake_repo)          # site/ beside the sources is fine


def test_a_file_and_a_folder_inside_an_output_are_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(OutputRefused, match="is a file, not a folder"):
        check_output(tmp_path / "notes.txt")
    write_site({"index.html": b"x"}, tmp_path / "site")
    with pytest.raises(OutputRefused, match="is inside .*the output folder of a build"):
        check_output(tmp_path / "site" / "sub")
    assert (tmp_path / "notes.txt").read_text() == "x"


def test_new_empty_marked_and_earlier_output_folders_are_accepted(tmp_path):
    check_output(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_output(tmp_path / "empty")
    write_site({"index.html": b"1"}, tmp_path / "marked")
    assert (tmp_path / "marked" / MARKER).read_bytes() == MARKER_TEXT
    check_output(tmp_path / "marked")
    # built before the marker existed: what every build writes is there
    legacy = tmp_path / "legacy"
    (legacy / "pagefind").mkdir(parents=True)
    (legacy / "index.html").write_text("old")
    (legacy / "references.json").write_text("{}")
    check_output(legacy)
    write_site({"index.html": b"new"}, legacy)
    assert (legacy / "index.html").read_bytes() == b"new" and (legacy / MARKER).is_file()
    assert not (legacy / "references.json").exists()


def test_the_marker_is_the_same_bytes_in_every_build(tmp_path):
    write_site({"a.html": b"1"}, tmp_path / "one")
    write_site({"b.html": b"2", "c/d.html": b"3"}, tmp_path / "two")
    assert (tmp_path / "one" / MARKER).read_bytes() == (tmp_path / "two" / MARKER).read_bytes() == MARKER_TEXT
    assert (tmp_path / "two" / MANIFEST).read_text() == f"{MARKER}\nb.html\nc/d.html\n"


def test_a_build_deletes_only_what_builds_wrote(tmp_path):
    out = tmp_path / "site"
    write_site({"index.html": b"1", "old.html": b"gone next time", "pagefind/a.pf": b"x"}, out)
    (out / "CNAME").write_text("docs.example.org")
    (out / "notes").mkdir()
    (out / "notes" / "todo.txt").write_text("mine")
    (out / "pagefind" / "b.pf").write_text("serve reindexed it")     # the bundle is the builder's
    write_site({"index.html": b"2", "pagefind/c.pf": b"y"}, out)
    assert (out / "CNAME").read_text() == "docs.example.org"
    assert (out / "notes" / "todo.txt").read_text() == "mine"
    assert not (out / "old.html").exists() and not (out / "pagefind" / "b.pf").exists()
    assert "CNAME" not in (out / MANIFEST).read_text().split()      # still the user's: kept again next time
    write_site({"index.html": b"3"}, out)
    assert (out / "CNAME").read_text() == "docs.example.org"


def test_a_build_that_would_overwrite_a_users_file_refuses(tmp_path):
    out = tmp_path / "site"
    write_site({"index.html": b"1"}, out)
    (out / "extra.html").write_text("the user's")
    with pytest.raises(OutputRefused, match=r"extra.html was not written by a build.*move it out"):
        write_site({"index.html": b"2", "extra.html": b"a new page"}, out)
    assert (out / "extra.html").read_text() == "the user's" and (out / "index.html").read_bytes() == b"1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_stale_temporary_folders_of_dead_processes_are_removed(tmp_path):
    out = tmp_path / "site"
    write_site({"index.html": b"1"}, out)
    dead = dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for name in (f".site.tmp-{dead}", f".site.old-{dead}", f".site.search-{dead}", f".site.tmp-{live.pid}"):
            (tmp_path / name / "sub").mkdir(parents=True)
            (tmp_path / name / "sub" / "x.html").write_text("x")
        (tmp_path / f".other.tmp-{dead}").mkdir()               # another output's: not ours to judge
        with output_lock(out):
            pass
        left = sorted(p.name for p in tmp_path.iterdir())
        assert left == sorted([".other.tmp-" + str(dead), ".site.lock", f".site.tmp-{live.pid}", "site"])
    finally:
        live.kill()
        live.wait()


def test_a_build_killed_between_its_renames_gets_its_last_site_back(tmp_path):
    out = tmp_path / "site"
    write_site({"index.html": b"last good"}, out)
    dead = dead_pid()
    os.rename(out, tmp_path / f".site.old-{dead}")             # killed here: no site/
    (tmp_path / f".site.tmp-{dead}").mkdir()
    with output_lock(out):
        pass
    assert (out / "index.html").read_bytes() == b"last good"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.lock", "site"]
    assert remove_stale(out) == []


def test_a_write_interrupted_part_way_leaves_no_temporary_folder(tmp_path):
    out = tmp_path / "site"
    write_site({"index.html": b"1"}, out)

    def interrupted(tmp):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_site({"index.html": b"2"}, out, after_write=interrupted)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]
    assert (out / "index.html").read_bytes() == b"1"


def test_the_writer_files_are_ignored_by_git():
    names = [".site.lock", ".site.tmp-123/index.html", ".site.old-9/x/y.html", ".site.search-77/a",
             ".site.search-old-77/a", ".docs.lock", "docs/.site.tmp-5/index.html"]
    proc = subprocess.run(["git", "check-ignore", "--no-index", *names], cwd=ROOT, capture_output=True, text=True)
    assert sorted(proc.stdout.split()) == sorted(names), proc.stdout + proc.stderr
    kept = subprocess.run(["git", "check-ignore", "--no-index", "content/site.yaml", ".gitignore"], cwd=ROOT,
                          capture_output=True, text=True)
    assert kept.stdout == ""


def test_a_real_build_writes_the_marker_and_passes_its_checks(repo, tmp_path):
    out, cache = tmp_path / "out" / "site", tmp_path / "cache"
    proc = run(repo, "--out", str(out), cache=cache)
    assert proc.returncode == 0, proc.stderr
    assert (out / MARKER).read_bytes() == MARKER_TEXT and (out / "pagefind").is_dir()
    assert sorted(p.name for p in out.parent.iterdir()) == [".site.lock", "site"]
    (out / "CNAME").write_text("docs.example.org")
    page = repo / "content" / "pages" / "mini.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text + "\nA sentence more: the next build writes the site again.\n", encoding="utf-8")
    try:        # an edit, not --no-cache: a real build (not the no-op path) that need not rerun everything
        again = run(repo, "--out", str(out), cache=cache)
    finally:
        page.write_text(text, encoding="utf-8")
    assert again.returncode == 0, again.stderr
    assert "A sentence more" in (out / "mini.html").read_text(encoding="utf-8")
    assert (out / "CNAME").read_text() == "docs.example.org"


# --- B, C. content the format forbids: one problem line each --------------------------------------

def test_a_page_named_index_is_refused(mini):
    (mini / "content/pages/index.md").write_text(PAGE.replace("id: mini", "id: other"))
    lines = problems_of(mini, site=SITE.replace("nav: [mini]", "nav: [mini, index]"))
    line = only(lines, "named 'index'")
    assert line.startswith("content/pages/index.md:1: ") and "overview page" in line and "rename" in line



@pytest.mark.parametrize("name, reason, instead", [
    ("Index", "overview page is index.html", "overview.md"),          # index.html on a case-insensitive disk
    ("404", "not-found page is 404.html", "overview.md"),
    ("._hidden", "lowercase ASCII letters, digits", "hidden.md"),
    ("Über Seite", "lowercase ASCII letters, digits", "uber-seite.md"),
])
def test_a_page_name_that_is_no_portable_url_is_refused(mini, name, reason, instead):
    (mini / f"content/pages/{name}.md").write_text(PAGE.replace("id: mini", "id: other"))
    lines = problems_of(mini, site=SITE.replace("nav: [mini]", f"nav: [mini, '{name}']"))
    line = only(lines, f"named '{name}'")
    assert line.startswith(f"content/pages/{name}.md:1: ") and reason in line and f"e.g. to {instead}" in line
    assert not [l for l in lines if "navigation lists" in l], lines     # one line, not also a nav one

def test_a_page_listed_twice_in_nav_is_refused_at_the_second_entry(mini):
    site = SITE.replace("nav: [mini]", "nav:\n  - mini\n  - mini\n")
    line = only(problems_of(mini, site=site), "twice")
    assert line.startswith("content/site.yaml:5: ") and "first at line 4" in line
    line = only(problems_of(mini, site=SITE.replace("nav: [mini]", "nav: [mini, mini]")), "twice")
    assert line.startswith("content/site.yaml:3: ")


def test_a_page_that_is_not_utf8_names_its_line(mini):
    (mini / "content/pages/mini.md").write_bytes(PAGE.replace("How far apart", "How f\xe9r apart").encode("latin-1"))
    lines = problems_of(mini)
    line = only(lines, "not UTF-8")
    assert line.startswith("content/pages/mini.md:7: ") and line.endswith("(save the file as UTF-8)")
    assert "byte 0xe9" in line and len(lines) == 1


def test_a_site_file_that_is_not_utf8_names_its_line_and_the_right_fix(mini):
    (mini / "content/site.yaml").write_bytes(with_project(SITE.replace("Attention", "Attenti\xf6n")).encode("latin-1"))
    with pytest.raises(BuildFailed) as e:
        build(mini, mini / "site", cache_dir=shared_cache())
    [line] = [str(p) for p in e.value.problems]
    assert line.startswith("content/site.yaml:5: ") and line.endswith("(save the file as UTF-8)")
    assert "create" not in line


def test_a_dangling_link_among_the_pages_is_one_problem(mini):
    (mini / "content/pages/x.md").symlink_to(mini / "nowhere.md")
    lines = problems_of(mini, site=SITE.replace("nav: [mini]", "nav: [mini, x]"))
    line = only(lines, "symbolic link")
    assert line.startswith("content/pages/x.md:1: ") and "does not exist" in line
    assert not any("internal error" in l for l in lines)


def test_a_dangling_link_on_the_command_line_is_not_an_internal_error(mini):
    (mini / "content/pages/x.md").symlink_to(mini / "nowhere.md")
    (mini / "content/site.yaml").write_text(with_project(SITE.replace("nav: [mini]", "nav: [mini, x]")))
    proc = run(mini, "check", "--no-cache", "--out", str(mini / "out"))
    assert proc.returncode == 1 and "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert any(l.startswith("content/pages/x.md:1: ") for l in proc.stderr.splitlines())


# --- D. arguments ---------------------------------------------------------------------------------

@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_serve_with_a_port_out_of_range_is_one_line(repo, port):
    line = one_error_line(run(repo, "serve", "--port", port, timeout=60))
    assert "--port" in line and "0 to 65535" in line


@pytest.mark.parametrize("jobs", ["0", "-2", "many"])
def test_a_worker_count_below_one_is_one_line(repo, jobs):
    line = one_error_line(run(repo, "--jobs", jobs, timeout=60))
    assert "--jobs" in line and "give 1 or more" in line


# ---------------------------------------------------------------- the cache folder is the builder's too
@pytest.mark.parametrize("where", [".", "content", "model", "..", "mine"])
def test_clean_never_deletes_a_folder_that_is_not_a_build_cache(tmp_path, where):
    """`--clean --cache-dir X` deletes X: X must be a cache (a found hostile test: `.` deleted
    the whole repository, `.git` included)."""
    from tests.conftest import mini_repo
    from tests.test_build_errors import SITE, PAGE, EXAMPLE
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE})
    (root / "mine").mkdir()
    (root / "mine" / "notes.txt").write_text("mine\n")
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    out = subprocess.run([sys.executable, "build_site.py", "--clean", "--cache-dir", where], cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.startswith("error: --cache-dir") and len(out.stderr.splitlines()) == 1
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before


def test_clean_deletes_a_build_cache(tmp_path):
    from site_builder.base.cache import BuildCache, check_cache_dir
    cache = BuildCache(tmp_path / "cache")
    cache.put("examples", "ab" * 32, 1)
    check_cache_dir(tmp_path / "cache", ROOT)          # a cache: accepted (and --clean may delete it)
    check_cache_dir(tmp_path / "new", ROOT)            # a new folder: accepted


def test_a_mount_point_is_refused_before_building(repo, tmp_path, monkeypatch):
    """A mount point cannot be renamed (EBUSY at the swap, after the whole build): refused first."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    real_ismount = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: os.path.realpath(p) == str(mount) or real_ismount(p))
    with pytest.raises(OutputRefused, match=r"mount point.*--out .*mnt/site"):
        check_output(mount, repo)
    check_output(mount / "site", repo)      # a folder inside it is fine


def test_a_read_only_place_is_refused_before_building(repo, tmp_path, monkeypatch):
    """A read-only mount (or folder) fails only at the lock, after the whole build: refused first,
    naming the folder that cannot be written (the nearest one that exists)."""
    locked = tmp_path / "ro"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: os.path.realpath(p) != str(locked) and real_access(p, mode, **kw))
    with pytest.raises(OutputRefused, match=r"--out .*ro/new/site cannot be written: .*ro is read-only"):
        check_output(locked / "new" / "site", repo)
    check_output(tmp_path / "elsewhere", repo)
