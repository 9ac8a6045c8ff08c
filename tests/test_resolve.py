"""Stage 3, the resolver: snippets inside a function to exact file lines, or a clear error."""
import textwrap
from pathlib import Path

import pytest

from site_builder.gather.resolve import ResolveError, resolve_function, resolve_snippet
from site_builder.gather.source_index import build_index

REPO = Path(__file__).resolve().parent.parent

CORE = '''\
def first(x):
    return x


def ffn(Xn, params, p):
    """Two layers."""
    Z = Xn @ params[p + "w1"]   +   params[p + "b1"]
    A = relu(Z)
    out = A @ params[p + "w2"]
    out = out + params[p + "b2"]
    return out, dict(
        Xn=Xn,
        A=A)


def relu(Z):
    return Z * (Z > 0)
'''


@pytest.fixture(scope="module")
def ix(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    for rel, text in {"pkg/__init__.py": "", "pkg/core.py": CORE, "tests/__init__.py": ""}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return build_index(root, packages=("pkg", "tests"))


def test_unique_snippet(ix):
    r = resolve_snippet(ix, "pkg.core.ffn", "relu(Z)")
    assert (r.file, r.start, r.end) == ("pkg/core.py", 8, 8)
    assert r.code == "    A = relu(Z)"


def test_whitespace_is_collapsed_on_both_sides(ix):
    r = resolve_snippet(ix, "pkg.core.ffn", 'params[p   + "w1"] + params[p + "b1"]')
    assert r.start == 7
    assert r.code == '    Z = Xn @ params[p + "w1"]   +   params[p + "b1"]'   # the file's own text


def test_multi_line_snippet(ix):
    r = resolve_snippet(ix, "pkg.core.ffn", 'return out, dict(\n    Xn=Xn,\nA=A)')
    assert (r.start, r.end) == (11, 13)
    assert r.code == "    return out, dict(\n        Xn=Xn,\n        A=A)"


def test_missing_snippet(ix):
    with pytest.raises(ResolveError) as info:
        resolve_snippet(ix, "pkg.core.ffn", "xyz")
    assert str(info.value).startswith("no line of pkg.core.ffn contains 'xyz'")


def test_missing_snippet_says_where_it_is_now(ix):
    with pytest.raises(ResolveError) as info:
        resolve_snippet(ix, "pkg.core.ffn", "Z * (Z > 0)")
    assert "pkg.core.relu (pkg/core.py:17)" in str(info.value)


def test_snippet_outside_the_function_range_does_not_match(ix):
    with pytest.raises(ResolveError):
        resolve_snippet(ix, "pkg.core.first", "relu(Z)")


def test_ambiguous_snippet(ix):
    with pytest.raises(ResolveError) as info:
        resolve_snippet(ix, "pkg.core.ffn", "out =")
    assert str(info.value) == ("'out =' matches 2 lines of pkg.core.ffn (lines 9, 10); "
                               "make the snippet longer so it matches one line")


def test_missing_function_did_you_mean(ix):
    with pytest.raises(ResolveError) as info:
        resolve_snippet(ix, "pkg.core.fnn", "relu(Z)")
    assert str(info.value) == "no function pkg.core.fnn; did you mean pkg.core.ffn?"


def test_missing_module(ix):
    with pytest.raises(ResolveError) as info:
        resolve_snippet(ix, "pkg.cor.ffn", "relu(Z)")
    assert "no module pkg.cor" in str(info.value)
    assert "did you mean pkg.core.ffn?" in str(info.value)
    with pytest.raises(ResolveError):
        resolve_function(ix, "nothing.at.all")


def test_empty_snippet_is_an_error(ix):
    with pytest.raises(ResolveError, match="empty snippet"):
        resolve_snippet(ix, "pkg.core.ffn", "  \n ")


def test_resolve_function(ix):
    r = resolve_function(ix, "pkg.core.relu")
    assert (r.file, r.start, r.end) == ("pkg/core.py", 16, 17)
    assert r.code == "def relu(Z):\n    return Z * (Z > 0)"


def test_real_repository_reference():
    real = build_index(REPO)
    r = resolve_snippet(real, "model.transformer.block_backward", "ffn_backward(")
    assert r.file == "model/transformer.py"
    assert "ffn_backward(" in r.code
    f = real.function("model.transformer.block_backward")
    assert f.start <= r.start <= r.end <= f.end
    assert r.code == "\n".join(real.files[r.file][r.start - 1:r.end])


CHECKS = '''\
import numpy as np
import pytest
from pkg.core import ffn


def test_ffn():
    out, cache = ffn(1, {}, "")
    A = cache["A"]
    np.testing.assert_allclose(
        out, 2)
    assert A == pytest.approx(1)
    with pytest.raises(ValueError):
        ffn(None, {}, "")
'''


@pytest.fixture(scope="module")
def tix(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    for rel, text in {"pkg/__init__.py": "", "pkg/core.py": CORE, "tests/__init__.py": "", "tests/test_core.py": CHECKS}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return build_index(root, packages=("pkg", "tests"))


@pytest.mark.parametrize("snippet", ["np.testing.assert_allclose(", "out, 2)", "assert A ==", 'ffn(None, {}, "")', None])
def test_a_tests_reference_on_an_assertion_passes(tix, snippet):
    from site_builder.gather.resolve import asserts_nothing
    r = resolve_snippet(tix, "tests.test_core.test_ffn", snippet) if snippet else resolve_function(tix, "tests.test_core.test_ffn")
    assert asserts_nothing(tix, r) is None


def test_a_tests_reference_on_a_setup_line_names_the_assertion_that_reads_it(tix):
    from site_builder.gather.resolve import asserts_nothing
    message, fix = asserts_nothing(tix, resolve_snippet(tix, "tests.test_core.test_ffn", "A"))
    assert message == "line 8 of tests.test_core.test_ffn asserts nothing (a tests reference must cite an assertion)"
    assert fix == "cite the assertion that checks it: line 11: 'assert A == pytest.approx(1)'"
    _, fix = asserts_nothing(tix, resolve_snippet(tix, "tests.test_core.test_ffn", "out, cache = ffn("))
    # line 9 reads `out`, line 11 reads `A`, computed from `cache` on line 8
    assert fix == "cite the assertion that checks it: line 9: 'np.testing.assert_allclose('; line 11: 'assert A == pytest.approx(1)'"


OPS = '''\
def row_sums(X):
    """The sum of each row, kept as a column."""
    return (X.reshape(-1, X.shape[-1]) @ ones(X.shape[-1])).reshape(*X.shape[:-1], 1)


def row_max(X):
    return X.max(axis=-1, keepdims=True)
'''


def test_a_function_renamed_since_the_commit_is_suggested_not_its_neighbour(tmp_path):
    """Issue 30: after renaming row_sums to sum_rows, "did you mean" named row_max, the
    closer spelling; the committed file says which function the old name became."""
    import os
    import subprocess
    from tests.fixture_project import GIT_ENV
    for rel, text in {"pkg/__init__.py": "", "pkg/ops.py": OPS, "tests/__init__.py": ""}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "--no-gpg-sign", "-m", "ops"]):
        subprocess.run(cmd, cwd=tmp_path, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)
    ops = tmp_path / "pkg/ops.py"
    ops.write_text(OPS.replace("def row_sums(", "def sum_rows("))
    with pytest.raises(ResolveError) as info:
        resolve_function(build_index(tmp_path, packages=("pkg", "tests")), "pkg.ops.row_sums")
    assert str(info.value) == "no function pkg.ops.row_sums; did you mean pkg.ops.sum_rows?"
    # A name the commit never had: the closest spelling, as before.
    ops.write_text(OPS.replace("def row_sums(", "def sum_rows(").replace("def row_max(", "def row_maxi("))
    with pytest.raises(ResolveError) as info:
        resolve_function(build_index(tmp_path, packages=("pkg", "tests")), "pkg.ops.row_maxx")
    assert str(info.value) == "no function pkg.ops.row_maxx; did you mean pkg.ops.row_maxi?"
