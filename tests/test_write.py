"""Writing the site: atomic swap, and never two writers on one output folder."""
import threading
import time

import pytest

from site_builder.write import write_site, output_lock, OutputLocked, MARKER, MANIFEST


def test_swap_replaces_the_whole_tree(tmp_path):
    out = tmp_path / "site"
    write_site({"a.html": b"1", "sub/b.html": b"2"}, out)
    write_site({"c.html": b"3"}, out)
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == sorted([MARKER, MANIFEST, "c.html"])
    assert (out / MANIFEST).read_text() == f"{MARKER}\nc.html\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".site.")] or all(
        p.name.endswith(".lock") for p in tmp_path.iterdir() if p.name.startswith(".site."))


def test_a_second_writer_waits_for_the_first(tmp_path):
    out, order = tmp_path / "site", []

    def second():
        with output_lock(out, wait_seconds=10):
            order.append("second")

    with output_lock(out):
        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        order.append("first done")
    t.join()
    assert order == ["first done", "second"]


def test_a_writer_that_waits_too_long_refuses_with_the_lock_named(tmp_path):
    out = tmp_path / "site"
    with output_lock(out):
        with pytest.raises(OutputLocked, match=r"\.site\.lock"):
            with output_lock(out, wait_seconds=0.2):
                pass
