"""Writing the site: atomic swap, and never two writers on one output folder."""
import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from site_builder.publish.write import write_site, output_lock, OutputLocked, OutputRefused, MARKER, MANIFEST
from tests.timing import wait_for


def test_swap_replaces_the_whole_tree(tmp_path):
    out = tmp_path / "site"
    write_site({"a.html": b"1", "sub/b.html": b"2"}, out)
    write_site({"c.html": b"3"}, out)
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == sorted([MARKER, MANIFEST, "c.html"])
    assert (out / MANIFEST).read_text() == f"{MARKER}\nc.html\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".site.")] or all(
        p.name.endswith(".lock") for p in tmp_path.iterdir() if p.name.startswith(".site."))


def test_a_second_writer_waits_for_the_first(tmp_path, capsys):
    out, order, printed = tmp_path / "site", [], []

    def second():
        with output_lock(out, wait_seconds=60):
            order.append("second")

    def says_it_waits():
        printed.append(capsys.readouterr().out)
        return "waiting for it to finish" in "".join(printed)

    with output_lock(out):
        t = threading.Thread(target=second)
        t.start()
        wait_for(says_it_waits, 60, "the second writer saying it waits")     # it is blocked on the lock now
        order.append("first done")
    t.join()
    assert order == ["first done", "second"]


def test_a_writer_that_waits_too_long_refuses_with_the_lock_named(tmp_path):
    out = tmp_path / "site"
    with output_lock(out):
        with pytest.raises(OutputLocked, match=r"\.site\.lock"):
            with output_lock(out, wait_seconds=0.2):
                pass



def test_a_symlink_to_the_output_takes_the_same_lock(tmp_path):
    out, link = tmp_path / "www", tmp_path / "wwwlink"
    out.mkdir()
    link.symlink_to(out)
    with output_lock(out):
        with pytest.raises(OutputLocked, match=r"\.www\.lock"):
            with output_lock(link, wait_seconds=0.2):
                pass


@pytest.mark.parametrize("kind", ["folder", "dangling symlink", "symlink to a file"])
def test_something_else_at_the_lock_path_is_one_line(tmp_path, kind):
    out, lock = tmp_path / "site", tmp_path / ".site.lock"
    if kind == "folder":
        lock.mkdir()
    elif kind == "dangling symlink":
        lock.symlink_to(tmp_path / "nowhere")
    else:
        (tmp_path / "elsewhere").write_text("keep me")
        lock.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutputRefused, match=r"\.site\.lock is a (folder|symlink), not the build's lock file; remove it"):
        with output_lock(out):
            pass
    assert not (tmp_path / "nowhere").exists()      # nothing created through the link
    assert kind != "symlink to a file" or (tmp_path / "elsewhere").read_text() == "keep me"

# --- write failures are the environment's: one line, exit 2, the last good site kept (issue 30) --

FAULT = """import builtins, errno, os, pathlib, sys
sys.path.insert(0, os.getcwd())
import build_site
real, failed = {target}, []
def failing(*args, **kwargs):          # the first matching call fails (the swap's undo then works)
    where = str(args[{which}])
    if {when} and not failed:
        failed.append(where)
        raise OSError(errno.{code}, os.strerror(errno.{code}), *([where] if {named} else []))
    return real(*args, **kwargs)
{target} = failing
sys.exit(build_site.main(sys.argv[1:]))
"""
# (what fails, the function, which argument is the path, when it fails, errno, whether the
# error names its file, what the line must name)
FAULTS = {
    "cache": ("os.replace", 1, "'cache' in where", "ENOSPC", True, "cache"),
    "lock": ("os.open", 0, "where.endswith('.site.lock')", "EROFS", True, ".site.lock"),
    "temporary folder": ("pathlib.Path.write_bytes", 0, "'.site.tmp-' in where", "EFBIG", False, ".site.tmp-"),
    "swap": ("os.rename", 1, "where.endswith('/site')", "EACCES", True, "site"),     # tmp -> site
    "swap aside": ("os.rename", 0, "where.endswith('/site')", "EROFS", True, "site"),  # site -> old
    "quota": ("pathlib.Path.write_bytes", 0, "'.site.tmp-' in where", "EDQUOT", False, ".site.tmp-"),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A small repository with a good site built."""
    from tests.conftest import mini_repo
    from tests.test_build_errors import EXAMPLE, PAGE, SITE
    root = mini_repo(tmp_path_factory.mktemp("faults"), SITE, PAGE, {"mini": EXAMPLE})
    good = subprocess.run([sys.executable, "build_site.py", "--cache-dir", "cache"], cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stderr
    return root


def _tree(folder):
    return sorted((p.relative_to(folder).as_posix(), p.read_bytes()) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("fault", FAULTS)
def test_a_write_the_environment_refuses_is_one_line_and_keeps_the_last_site(built, fault):
    target, which, when, code, named, names = FAULTS[fault]
    before = _tree(built / "site")
    script = FAULT.format(target=target, which=which, when=when, code=code, named=named)
    # A sentence more on the page: the build runs (not "up to date") and, from the warm cache,
    # renders that page again and writes its view model to the cache, as any edit's build does.
    # (A cold build per fault, with --clean, made the same writes and took 7 s more each.)
    with open(built / "content" / "pages" / "mini.md", "a", encoding="utf-8") as page:
        page.write(f"\nA sentence written before the {fault} fault.\n")
    proc = subprocess.run([sys.executable, "-c", script, "--cache-dir", "cache"], cwd=built,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot write "), proc.stderr
    assert names in lines[0] and os.strerror(getattr(errno, code)) in lines[0], lines
    assert ("--cache-dir" if fault == "cache" else "--out") in lines[0], lines
    assert "Traceback" not in proc.stderr + proc.stdout
    assert _tree(built / "site") == before
    assert sorted(p.name for p in built.glob(".site.*")) in ([], [".site.lock"])
    assert list((built / "cache").rglob("*.tmp")) == []


def test_check_page_with_a_full_cache_disk_is_one_line(tmp_path, monkeypatch, capsys):
    import argparse
    import build_site
    import site_builder.build.page_check
    cache = tmp_path / "cache"

    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(cache / "examples" / "ab.pickle"))
    monkeypatch.setattr(site_builder.build.page_check, "check_pages", full)
    args = argparse.Namespace(page=["attention"], cache_dir=cache, jobs=1, out=tmp_path / "site")
    assert build_site.check_pages_command(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: cannot write {cache}") and "--cache-dir" in err[0], err


def test_an_out_where_no_file_can_be_created_is_one_line():
    """/proc/x: creating the lock there is ENOENT though its folder exists; that is one line
    naming --out, not an internal error. (A path under a regular file is refused earlier,
    by check_output.)"""
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc on this system")
    out = Path("/proc/x")
    with pytest.raises(OutputRefused, match=r"^--out .*: cannot create .*; choose an --out in a folder you can write files to$"):
        with output_lock(out):
            pass
