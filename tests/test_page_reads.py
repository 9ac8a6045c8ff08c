"""A page is keyed on what it asked the source index (site_builder/render/pages/reads.py): the
answers it was given are asked again of the next index, and the page is reused only if all of
them are the same. On a two-function package in a temporary folder."""
import os
import subprocess
import sys

import pytest

from site_builder.base.cache import canonical
from site_builder.gather.resolve import resolve_snippet
from site_builder.gather.source_index import build_index
from site_builder.render.html import Renderer
from site_builder.render.pages.reads import Answers, ReadLog, RecordingIndex
from tests.conftest import ROOT

OPS = '''def double(x):
    """Twice x."""
    y = 2 * x
    return y


def halve(x):
    """Half of x."""
    return x / 2
'''


def package(root, ops=OPS):
    for folder in ("pkg", "tests"):
        (root / folder).mkdir(exist_ok=True)
        (root / folder / "__init__.py").write_text("")
    (root / "pkg" / "ops.py").write_text(ops)
    (root / "tests" / "test_ops.py").write_text(
        "from pkg.ops import double\n\n\ndef test_double():\n    assert double(1) == 2\n")
    return build_index(root, ["pkg", "tests"], "tests")


def page_reads(root, index):
    """What a page that cites `y = 2 * x`, lists double and asks who tests it reads."""
    log = ReadLog(Answers(index, root))
    seen = RecordingIndex(index, log)
    r = resolve_snippet(seen, "pkg.ops.double", "y = 2 * x")
    renderer = Renderer(root, seen, [])
    rows = renderer.listing(r.file, r.start, r.end)
    tests = seen.tested_by("pkg.ops.double")
    return log.reads, (r.start, [row["html"] for row in rows], [t.test for t in tests])


@pytest.mark.parametrize("edit, still", [
    (("return x / 2", "return x * 0.5"), True),                 # another function's body
    (('"""Half of x."""', '"""One half of x."""'), True),         # another function's docstring
    (("y = 2 * x", "y = x + x  # the same"), False),             # the line the page cites
    (('"""Twice x."""', '"""Two times x."""'), False),           # the listed function's docstring line
    (("def double(x):\n", "# moved\ndef double(x):\n"), False),   # its lines move
])
def test_a_page_is_reused_only_when_what_it_read_is_unchanged(tmp_path, edit, still):
    reads, shown = page_reads(tmp_path, package(tmp_path))
    assert ("call", "tested_by", ("pkg.ops.double",)) in reads and any(q[0] == "highlighted" for q in reads)
    old, new = edit
    assert OPS.count(old) == 1
    edited = package(tmp_path, OPS.replace(old, new))
    assert Answers(edited, tmp_path).still(reads) is still
    if still:      # reused means the page would show the same: gathering it again gives what it gave
        assert page_reads(tmp_path, edited)[1] == shown


def test_an_answer_that_raised_is_an_answer(tmp_path):
    index = package(tmp_path)
    log = ReadLog(Answers(index, tmp_path))
    with pytest.raises(KeyError):
        RecordingIndex(index, log).function("pkg.ops.triple")
    assert Answers(index, tmp_path).still(log.reads)
    grown = package(tmp_path, OPS + "\n\ndef triple(x):\n    return 3 * x\n")
    assert not Answers(grown, tmp_path).still(log.reads)       # now it is found


def test_canonical_text_is_the_same_in_processes_with_other_hash_seeds():
    """Sets are sorted: a forked child records what the next build (another seed) asks again."""
    code = ("from site_builder.base.cache import canonical; from site_builder.gather.source_index import build_index;"
            "from pathlib import Path; i = build_index(Path('.'));"
            "print(canonical([i.assertions(q) for q in i.functions if q.startswith('tests.test_optim.')]))")
    outs = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(outs) == 1 and "Assertion(" in outs.pop()
    assert canonical({"b", "a"}) == canonical(frozenset({"a", "b"}))


def test_a_file_differing_from_the_commit_regathers_only_the_pages_that_cite_it(tmp_path):
    """In a git checkout the first edit of a file used to change every page's key (the shared
    key held the uncommitted files); now whether a cited file is uncommitted is a page's read."""
    index = package(tmp_path)
    log = ReadLog(Answers(index, tmp_path))
    assert log.ask(("uncommitted", "pkg/ops.py")) is False       # a GitHub link is drawn
    reads = log.reads
    assert Answers(index, tmp_path, uncommitted={"tests/test_ops.py"}).still(reads)
    assert not Answers(index, tmp_path, uncommitted={"pkg/ops.py"}).still(reads)


def test_the_shared_page_key_does_not_hold_the_uncommitted_files():
    from types import SimpleNamespace
    from site_builder.build.example_plan import shared_page_key
    content = SimpleNamespace(pages={})
    index = SimpleNamespace(files={"pkg/ops.py": []})
    info = dict(commit="c" * 40, config=None, uncommitted=frozenset())
    clean = shared_page_key(ROOT, content, index, info, [])
    assert shared_page_key(ROOT, content, index, dict(info, uncommitted=frozenset({"pkg/ops.py"})), []) == clean
