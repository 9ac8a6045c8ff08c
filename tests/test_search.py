"""site_builder.publish.search: Pagefind indexes the built site, deterministically, and a missing
binary is a warning, not a broken build."""
import gzip
import json
import re
import shutil
import time
from pathlib import Path

import pytest

from site_builder import COMMAND
from site_builder.publish import search
from site_builder.base import worker
from tests.timing import within

ROOT = Path(__file__).resolve().parent.parent


def tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_build_ships_an_index(built_site):
    bundle = built_site / "pagefind"
    assert (bundle / "pagefind.js").is_file() and (bundle / "pagefind-entry.json").is_file()
    assert not (bundle / "pagefind-ui.js").exists(), "the prebuilt UIs are not shipped"
    html = (built_site / "block.html").read_text()
    assert '<code class="fn-name" data-pagefind-weight="10">block_backward</code>' in html
    assert 'data-pagefind-meta="fn-block_backward:block-backward"' in html


def fragments(bundle):
    """{url: the text Pagefind indexed} from a bundle's fragment files (gzip, then a
    signature, then JSON)."""
    found = {}
    for f in (bundle / "fragment").glob("*.pf_fragment"):
        raw = gzip.decompress(f.read_bytes())
        page = json.loads(raw[raw.index(b"{"):])
        found[page["url"]] = page["content"]
    return found


def test_source_pages_are_indexed_without_their_line_numbers(built_site):
    texts = fragments(built_site / "pagefind")
    sources = {url: text for url, text in texts.items() if url.startswith("/source/")}
    assert "/source/model/ops.py.html" in sources
    # the first line of ops.py's docstring is indexed, with no "1." before it
    first = (ROOT / "model" / "ops.py").read_text().splitlines()[0].strip('"')
    for url, text in sources.items():
        # with line numbers, a blank line read "2. 3." between two lines of code
        assert not re.search(r"(?:^|\s)\d+\. \d+\. ", text), url
    assert first in sources["/source/model/ops.py.html"]
    assert "1. " + first[:20] not in sources["/source/model/ops.py.html"]


def test_button_labels_are_not_indexed(built_site):
    assert 'class="copy-link"' in (built_site / "block.html").read_text()
    for url, text in fragments(built_site / "pagefind").items():
        assert "Copy link" not in text, url


def test_indexing_is_deterministic(built_site, tmp_path):
    pytest.importorskip("pagefind_bin")
    copies = []
    for name in ("a", "b"):
        dst = tmp_path / name / "site"
        shutil.copytree(built_site, dst, ignore=shutil.ignore_patterns("pagefind"))
        search.index_site(dst)
        copies.append(tree(dst / "pagefind"))
    assert copies[0] == copies[1] == tree(built_site / "pagefind")


def test_a_missing_binary_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(search, "pagefind_executable",
                        lambda: (_ for _ in ()).throw(search.SearchUnavailable("no pagefind")))
    with pytest.raises(search.SearchUnavailable):
        search.index_site(tmp_path)
    problems = []
    from site_builder.build.write_step import search_index
    search_index(tmp_path, problems)
    assert problems and problems[0].warning


def test_a_failing_binary_fails_the_build(monkeypatch, tmp_path):
    from site_builder.build.write_step import search_index
    from site_builder.base.problems import BuildFailed
    monkeypatch.setattr(search, "pagefind_executable", lambda: shutil.which("false"))
    with pytest.raises(BuildFailed):
        search_index(tmp_path, [])


def test_a_deferred_index_goes_live_with_the_old_bundle_then_catches_up(built_site, tmp_path):
    """serve's rebuild: the new pages go out with the previous bundle; finish() indexes them."""
    pytest.importorskip("pagefind_bin")
    from site_builder.build.write_step import carry_search_bundle, refresh_search
    out = tmp_path / "site"
    shutil.copytree(built_site, out)
    before = tree(out / "pagefind")
    page = out / "tokens.html"
    page.write_text(page.read_text().replace("<main", "<main data-x='1'", 1).replace(
        "</main>", "<p>zyxwvutsrq is a word no page had.</p></main>", 1))
    new = tmp_path / "next"
    new.mkdir()
    carry_search_bundle(out, new)
    assert tree(new / "pagefind") == before
    assert refresh_search(out) == []
    after = tree(out / "pagefind")
    assert after != before and (out / "pagefind" / "pagefind.js").is_file()
    assert not list(tmp_path.glob(".site.search*")), "no temporary bundle is left behind"


def _pagefind_that_stops(tmp_path, times):
    """A pagefind that stops itself (SIGSTOP, as a tester's `kill -STOP`) on its first `times`
    runs, then runs the real binary."""
    real = search.pagefind_executable()
    script = tmp_path / "pagefind"
    script.write_text(f'#!/bin/sh\nn=$(ls "{tmp_path}" | grep -c "^ran-")\ntouch "{tmp_path}/ran-$n"\n'
                      f'if [ "$n" -lt {times} ]; then kill -STOP $$; fi\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    return script


def test_a_stopped_pagefind_is_killed_and_run_again(built_site, tmp_path, monkeypatch):
    pytest.importorskip("pagefind_bin")
    monkeypatch.setattr(search, "pagefind_executable", lambda script=_pagefind_that_stops(tmp_path, 1): script)
    dst = tmp_path / "site"
    shutil.copytree(built_site, dst, ignore=shutil.ignore_patterns("pagefind"))
    started = time.monotonic()
    search.index_site(dst)
    assert time.monotonic() - started < within(10 * worker.STOPPED_SECONDS + 5)      # not TIMEOUT_SECONDS
    assert len(list(tmp_path.glob("ran-*"))) == 2
    assert tree(dst / "pagefind") == tree(built_site / "pagefind")


def test_a_pagefind_stopped_twice_fails_the_build_in_one_honest_line(built_site, tmp_path, monkeypatch):
    pytest.importorskip("pagefind_bin")
    from site_builder.build.write_step import search_index
    from site_builder.base.problems import BuildFailed
    monkeypatch.setattr(search, "pagefind_executable", lambda script=_pagefind_that_stops(tmp_path, 2): script)
    folder = tmp_path / ".site.tmp-123"
    folder.mkdir()
    started = time.monotonic()
    with pytest.raises(BuildFailed) as failed:
        search_index(folder, [])
    assert time.monotonic() - started < within(20 * worker.STOPPED_SECONDS + 5)
    [line] = [str(p) for p in failed.value.problems]
    assert "stopped from outside" in line and "twice" in line and "\n" not in line
    assert str(folder) not in line and COMMAND in line


def test_a_slow_pagefind_names_no_temporary_folder(tmp_path, monkeypatch):
    from site_builder.build.write_step import search_index
    from site_builder.base.problems import BuildFailed
    slow = tmp_path / "pagefind"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    monkeypatch.setattr(search, "pagefind_executable", lambda: slow)
    monkeypatch.setattr(search, "TIMEOUT_SECONDS", 0.3)
    folder = tmp_path / ".site.tmp-123"
    folder.mkdir()
    with pytest.raises(BuildFailed) as failed:
        search_index(folder, [])
    [line] = [str(p) for p in failed.value.problems]
    assert "took over 0.3 s" in line and str(folder) not in line and COMMAND in line
