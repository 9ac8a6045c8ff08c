"""Stage 2, the source index: a small synthetic repository written to a temporary folder (so
these tests do not depend on the real model's exact text), plus a few checks on the real one."""
import textwrap
from pathlib import Path

import pytest

from site_builder.gather.project import ProjectError
from site_builder.gather.source_index import build_index
from site_builder.gather.source_records import NotIndexed, SourceError

REPO = Path(__file__).resolve().parent.parent

FILES = {
    "model/__init__.py": '''
        """The package."""
        from model.core import helper as exported_helper
    ''',
    "model/core.py": '''
        """Core ops."""
        import numpy as np


        def helper(x):
            """Helper doc."""
            return np.zeros(3) + x


        def _private(x):
            return helper(x)


        def layer_forward(X, params, p):
            Z = X @ params[p + "w"]
            A, mask = relu_forward(Z)
            return A, dict(X=X, mask=mask)


        def relu_forward(Z):
            mask = Z > 0
            return Z * mask, mask


        def layer_backward(dA, c, params, p, grads):
            dZ = dA * c["mask"]
            dW, db = grads_pair(c["X"], dZ)
            grads[p + "w"] += dW
            grads[p + "b"] += db
            return dZ @ params[p + "w"].T


        def grads_pair(X, dZ):
            return X.T @ dZ, dZ.sum(0)


        def block_forward(X, params, l):
            p = f"b{l}."
            H, c_layer = layer_forward(X, params, p)
            Y = X + H
            return Y, dict(layer=c_layer)


        def block_backward(dY, c, params, l, grads):
            """Backward through one block."""
            p = f"b{l}."
            dX = layer_backward(dY, c["layer"], params, p, grads)
            return dY + dX


        def model_forward(X, params, n):
            c_blocks = []
            for l in range(n):
                X, c_block = block_forward(X, params, l)
                c_blocks.append(c_block)
            return X, {"blocks": c_blocks, "n": n}


        def model_backward(dY, c, params, grads):
            dX, grads["head_w"], grads["head_b"] = head_backward(dY, c["head"])
            for l in reversed(range(len(c["blocks"]))):
                dX = block_backward(dX, c["blocks"][l], params, l, grads)
            grads["emb"][:3] += dX.sum(0)
            return dX


        def head_backward(dY, c):
            return dY, dY, dY
    ''',
    "model/other.py": '''
        from .core import layer_backward as lb
        import model.core as core


        def other_backward(dY, c, params, grads):
            return lb(dY, c, params, "enc.", grads)


        def uses_module(x):
            return core.helper(x)


        def uses_reexport(x):
            from model import exported_helper
            return exported_helper(x)


        def shadowed(helper):
            return helper(1)


        if __name__ == "__main__":
            def hidden():
                pass
    ''',
    "model/agree.py": '''
        def inner_backward(dX, p, grads):
            grads[p + "g"] += dX


        def outer_backward(dX, l, grads):
            p = f"blk{l}."
            inner_backward(dX, p, grads)
    ''',
    "model/opt.py": '''
        import functools


        class Base:
            def reset(self):
                self.t = 0


        class Opt(Base):
            """Opt doc."""

            def __init__(self, lr):
                self.lr = lr
                self.reset()

            @staticmethod
            def rule(x):
                return x

            def step(self, w):
                return self.rule(w) * self.lr


        class _Hidden:
            def visible(self):
                pass


        def run(w):
            opt = Opt(0.1)
            return opt.step(w)


        @functools.lru_cache(maxsize=None)
        def decorated(x):
            return x


        def main():
            run(1)
    ''',
    "model/rec.py": '''
        from dataclasses import dataclass


        def rec_backward(dX, p, grads, n):
            grads[p + "r"] += dX
            if n:
                rec_backward(dX, p, grads, n - 1)


        def start_backward(dX, grads):
            rec_backward(dX, "top.", grads, 3)


        def ping(n):
            return pong(n - 1) if n else 0


        def pong(n):
            return ping(n)


        @dataclass
        class Cfg:
            n: int = 1

            def __post_init__(self):
                validate(self.n)


        def validate(n):
            return n


        def make():
            return Cfg(2)
    ''',
    "tests/conftest.py": '''
        import pytest
        from model.core import helper


        @pytest.fixture
        def data():
            return helper(1)
    ''',
    "tests/test_core.py": '''
        import pytest
        from model.core import block_backward, relu_forward, helper
        from model import other


        def _make(x):
            return block_backward(x, {}, {}, 0, {})


        def test_direct():
            helper(2)


        def test_through_helper():
            _make(1)


        def test_fixture(data):
            assert data is not None


        @pytest.mark.parametrize("fn", [relu_forward])
        def test_param(fn):
            fn(1)


        def test_module_attr():
            other.uses_module(1)


        def test_lambda():
            check(lambda: helper(4))


        class TestGroup:
            def test_method(self):
                helper(3)
    ''',
}


# The project block that names the folders build_index reads (site_builder/gather/project.py).
SITE = "title: t\nnav: []\nproject:\n  package: model\n  tests: tests\n"


def write_repo(root: Path, files: dict) -> Path:
    for rel, text in {"content/site.yaml": SITE, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def line_of(index, file, needle, nth=0):
    hits = [i + 1 for i, text in enumerate(index.files[file]) if needle in text]
    return hits[nth]


@pytest.fixture(scope="module")
def ix(tmp_path_factory):
    return build_index(write_repo(tmp_path_factory.mktemp("repo"), FILES))


# -- functions -------------------------------------------------------------------------

def test_functions_in_file_then_line_order(ix):
    names = list(ix.functions)
    assert names[:3] == ["model.agree.inner_backward", "model.agree.outer_backward", "model.core.helper"]
    files = [ix.functions[q].file for q in names]
    assert files == sorted(files)
    assert list(ix.files)[0] == "model/__init__.py"
    assert ix.files["model/core.py"][0] == '"""Core ops."""'


def test_function_info_fields(ix):
    f = ix.function("model.core.helper")
    assert (f.module, f.name, f.file, f.kind, f.is_public) == ("model.core", "helper", "model/core.py", "function", True)
    assert f.start == line_of(ix, "model/core.py", "def helper(")
    assert f.end == line_of(ix, "model/core.py", "return np.zeros(3) + x")
    assert f.doc == "Helper doc."
    assert ix.function("model.core._private").is_public is False
    assert ix.function("model.core.layer_forward").doc is None


def test_decorators_are_excluded_from_start(ix):
    f = ix.function("model.opt.decorated")
    assert f.start == line_of(ix, "model/opt.py", "def decorated(")
    assert f.first_line == line_of(ix, "model/opt.py", "@functools.lru_cache")


def test_methods_and_tests(ix):
    step = ix.function("model.opt.Opt.step")
    assert (step.kind, step.class_name, step.is_public) == ("method", "model.opt.Opt", True)
    assert ix.function("model.opt._Hidden.visible").is_public is False
    assert ix.function("model.opt.Opt.__init__").is_public is False
    assert ix.function("tests.test_core.test_direct").kind == "test"
    assert ix.function("tests.test_core.TestGroup.test_method").kind == "test"
    assert ix.function("tests.test_core._make").kind == "function"
    assert ix.function("tests.conftest.data").kind == "function"
    assert "model.other.hidden" not in ix.functions      # inside `if __name__ == "__main__":`


def test_public_functions(ix):
    public = ix.public_functions()
    assert "model.core.helper" in public and "model.opt.Opt.step" in public and "model.opt.main" in public
    assert "model.core._private" not in public
    assert "model.opt._Hidden.visible" not in public
    assert not any(q.startswith("tests.") for q in public)
    assert public == [q for q in ix.functions if q in public]


def test_unknown_function_suggests_close_names(ix):
    with pytest.raises(KeyError) as info:
        ix.function("model.core.helpr")
    assert str(info.value) == "no function model.core.helpr; did you mean model.core.helper?"
    with pytest.raises(NotIndexed) as info:
        ix.function("model.cor.helper")
    assert "no module model.cor" in str(info.value) and "model.core.helper" in str(info.value)
    # a name like none of the module's is not "close" for sharing the module's prefix
    with pytest.raises(KeyError) as info:
        ix.function("model.core.zzz")
    assert str(info.value) == "no function model.core.zzz"


def test_function_at(ix):
    line = line_of(ix, "model/core.py", "dW, db = grads_pair")
    assert ix.function_at("model/core.py", line).qualname == "model.core.layer_backward"
    assert ix.function_at("model/core.py", 1) is None


# -- calls -----------------------------------------------------------------------------

def test_call_resolution(ix):
    callees = lambda q: [c.callee for c in ix.function(q).calls]
    assert callees("model.core.helper") == ["np.zeros"]                          # unresolved: as written
    assert callees("model.other.other_backward") == ["model.core.layer_backward"]  # relative import with as
    assert callees("model.other.uses_module") == ["model.core.helper"]           # import x.y as m; m.f()
    assert callees("model.other.uses_reexport") == ["model.core.helper"]         # local import, re-export
    assert callees("model.other.shadowed") == ["helper"]                         # a parameter shadows
    assert callees("model.opt.run") == ["model.opt.Opt.__init__", "model.opt.Opt.step"]
    assert callees("model.opt.Opt.__init__") == ["model.opt.Base.reset"]         # self.method via a base
    assert callees("model.opt.Opt.step") == ["model.opt.Opt.rule"]
    call = ix.function("model.core.block_backward").calls[0]
    assert call.text == 'layer_backward(dY, c["layer"], params, p, grads)'
    assert call.line == line_of(ix, "model/core.py", "dX = layer_backward(")


def test_called_by_and_calls(ix):
    line = line_of(ix, "model/core.py", "dX = block_backward(")
    assert ix.called_by("model.core.block_backward") == [
        ("model.core.model_backward", line), ("tests.test_core._make", line_of(ix, "tests/test_core.py", "return block_backward"))]
    for caller, ln in ix.called_by("model.core.layer_backward"):
        assert caller in ("model.core.block_backward", "model.other.other_backward")
    assert ix.calls("model.core.model_backward") == ["model.core.head_backward", "model.core.block_backward"]
    assert ix.calls("model.core.helper") == []


def test_tested_by(ix):
    links = {l.test: l for l in ix.tested_by("model.core.helper")}
    assert links["tests.test_core.test_direct"].direct
    assert links["tests.test_core.test_direct"].path == ("tests.test_core.test_direct", "model.core.helper")
    assert links["tests.test_core.TestGroup.test_method"].direct
    assert links["tests.test_core.test_fixture"].path == (
        "tests.test_core.test_fixture", "tests.conftest.data", "model.core.helper")
    assert links["tests.test_core.test_module_attr"].path == (
        "tests.test_core.test_module_attr", "model.other.uses_module", "model.core.helper")
    assert "tests.conftest.data" not in links           # helpers are part of chains, not tests
    assert links["tests.test_core.test_lambda"].direct   # a call inside a lambda belongs to the test

    (link,) = ix.tested_by("model.core.grads_pair")
    assert not link.direct
    assert link.path == ("tests.test_core.test_through_helper", "tests.test_core._make", "model.core.block_backward",
                         "model.core.layer_backward", "model.core.grads_pair")
    assert [l.test for l in ix.tested_by("model.core.relu_forward")] == ["tests.test_core.test_param"]
    assert ix.tested_by("model.opt.run") == []
    all_links = ix.tested_by("model.core.helper")
    assert all_links == sorted(all_links, key=lambda l: (not l.direct, len(l.path), l.test))


def test_index_is_deterministic(tmp_path):
    root = write_repo(tmp_path, FILES)
    a, b = build_index(root), build_index(root)
    assert list(a.functions.items()) == list(b.functions.items())
    assert [a.tested_by(q) for q in a.functions] == [b.tested_by(q) for q in b.functions]


def test_syntax_error_names_file_and_line(tmp_path):
    write_repo(tmp_path, {"model/__init__.py": "", "model/bad.py": "x = 1\n\ndef f(:\n    pass\n", "tests/t.py": ""})
    with pytest.raises(SourceError) as info:
        build_index(tmp_path)
    assert (info.value.file, info.value.line) == ("model/bad.py", 3)
    assert str(info.value).startswith("model/bad.py:3: ")


def test_missing_package_is_an_error(tmp_path):
    """A folder that is not there is a problem naming the setting that names it; named by the
    caller, one naming the folder and the settings."""
    write_repo(tmp_path, {"model/__init__.py": ""})
    with pytest.raises(ProjectError) as info:
        build_index(tmp_path)
    assert [(p.file, p.line) for p in info.value.problems] == [("content/site.yaml", 5)]
    assert "project.tests names tests/, which is not a folder" in str(info.value.problems[0])
    with pytest.raises(SourceError, match="no folder tests/") as info:
        build_index(tmp_path, packages=("model", "tests"))
    assert "content/site.yaml" in info.value.fix
    assert list(build_index(tmp_path, packages=("model",)).files) == ["model/__init__.py"]


# -- caches ----------------------------------------------------------------------------

def test_cache_reads(ix):
    reads = ix.cache_reads("model.core.model_backward")
    assert [(r.key, r.passed_to) for r in reads] == [
        ("head", "model.core.head_backward"), ("blocks", "len"), ("blocks", "model.core.block_backward")]
    assert reads[2].line == line_of(ix, "model/core.py", "dX = block_backward(")
    reads = ix.cache_reads("model.core.layer_backward")
    assert [(r.key, r.passed_to) for r in reads] == [("mask", None), ("X", "model.core.grads_pair")]


def test_cache_builds(ix):
    b = ix.cache_builds("model.core.layer_forward")
    assert b.keys == ("X", "mask")
    assert b.line == line_of(ix, "model/core.py", "return A, dict(X=X, mask=mask)")
    assert ix.cache_builds("model.core.model_forward").key_vars == (("blocks", "c_blocks"), ("n", "n"))
    assert ix.cache_builds("model.core.helper") is None


def test_cache_assignments(ix):
    (a,) = ix.cache_assignments("model.core.block_forward")
    assert (a.var, a.producer, a.key, a.in_list) == ("c_layer", "model.core.layer_forward", "layer", False)
    assert a.line == line_of(ix, "model/core.py", "H, c_layer = layer_forward")
    (a,) = ix.cache_assignments("model.core.model_forward")
    assert (a.var, a.producer, a.key, a.in_list) == ("c_block", "model.core.block_forward", "blocks", True)
    # the second target of `out, cache = x_forward(...)` is a cache whatever its name
    (a,) = ix.cache_assignments("model.core.layer_forward")
    assert (a.var, a.producer, a.key) == ("mask", "model.core.relu_forward", "mask")


# -- gradient writes -------------------------------------------------------------------

def test_grads_written_resolves_a_prefix_all_callers_agree_on(ix):
    assert [w.key for w in ix.grads_written("model.agree.inner_backward")] == ["blk{l}.g"]


def test_grads_written_keeps_a_prefix_callers_disagree_on(ix):
    writes = ix.grads_written("model.core.layer_backward")
    assert [w.key for w in writes] == ["{p}w", "{p}b"]
    assert writes[0].line == line_of(ix, "model/core.py", 'grads[p + "w"] += dW')


def test_grads_written_tuple_targets_and_slices(ix):
    assert [w.key for w in ix.grads_written("model.core.model_backward")] == ["head_w", "head_b", "emb"]


def test_grads_filled_binds_the_prefix_at_the_call_site(ix):
    line = line_of(ix, "model/core.py", "dX = layer_backward(")
    assert ix.grads_filled("model.core.block_backward", line) == ["b{l}.w", "b{l}.b"]
    line = line_of(ix, "model/core.py", "dX = block_backward(")
    assert ix.grads_filled("model.core.model_backward", line) == ["b{l}.w", "b{l}.b"]
    line = line_of(ix, "model/other.py", "return lb(")
    assert ix.grads_filled("model.other.other_backward", line) == ["enc.w", "enc.b"]
    line = line_of(ix, "model/core.py", "head_backward(dY")
    assert ix.grads_filled("model.core.model_backward", line) == ["head_w", "head_b"]
    assert ix.grads_filled("model.core.model_backward", 1) == []


# -- flow ------------------------------------------------------------------------------

def test_flow_steps(ix):
    steps = ix.flow_steps("model.core.block_backward")       # docstring and `p = f"b{l}."` skipped
    assert [(s.kind, s.callee) for s in steps] == [("call", "model.core.layer_backward"), ("add", None)]
    assert steps[0].grads == ("b{l}.w", "b{l}.b")
    assert steps[0].text == 'dX = layer_backward(dY, c["layer"], params, p, grads)'
    assert steps[1].text == "return dY + dX"

    steps = ix.flow_steps("model.core.layer_backward")
    assert [(s.kind, s.callee) for s in steps] == [("other", None), ("call", "model.core.grads_pair"), ("other", None)]
    # `grads[p + "w"] += dW` uses what the grads_pair step produced: folded into it
    assert steps[1].grads == ("{p}w", "{p}b")
    assert steps[1].grad_lines == (line_of(ix, "model/core.py", 'grads[p + "w"] += dW'),
                                   line_of(ix, "model/core.py", 'grads[p + "b"] += db'))

    steps = ix.flow_steps("model.core.model_backward")
    loop = line_of(ix, "model/core.py", "for l in reversed")
    assert [s.within for s in steps] == [(), (loop,), (), ()]
    assert steps[2].grads == ("emb",) and steps[2].kind == "other"   # not foldable: dX comes from the loop


# -- the real repository ---------------------------------------------------------------

@pytest.fixture(scope="module")
def real():
    return build_index(REPO)


def test_real_block_backward_is_called_by_loss_and_grads(real):
    assert "model.transformer.loss_and_grads" in [c for c, _ in real.called_by("model.transformer.block_backward")]
    f = real.function("model.transformer.block_backward")
    assert real.files[f.file][f.start - 1].lstrip().startswith("def block_backward(")


def test_real_block_backward_fills_the_ffn_gradients(real):
    from site_builder.gather.resolve import resolve_snippet
    line = resolve_snippet(real, "model.transformer.block_backward", "ffn_backward(").start
    assert set(real.grads_filled("model.transformer.block_backward", line)) >= {
        "b{l}.ff1_w", "b{l}.ff1_b", "b{l}.ff2_w", "b{l}.ff2_b"}


def test_real_ffn_backward_is_reached_by_a_test(real):
    links = real.tested_by("model.transformer.ffn_backward")
    if not links:
        pytest.skip("no test reaches ffn_backward yet")
    for link in links:
        assert link.path[0] == link.test and link.path[-1] == "model.transformer.ffn_backward"
        assert link.direct == (len(link.path) == 2)


def test_recursion_terminates_and_resolves(ix):
    assert [w.key for w in ix.grads_written("model.rec.rec_backward")] == ["top.r"]
    line = line_of(ix, "model/rec.py", 'rec_backward(dX, "top."')
    assert ix.grads_filled("model.rec.start_backward", line) == ["top.r"]
    assert ix.calls("model.rec.ping") == ["model.rec.pong"]
    assert [s.kind for s in ix.flow_steps("model.rec.pong")] == ["call"]


def test_calling_a_dataclass_runs_post_init(ix):
    assert ix.calls("model.rec.make") == ["model.rec.Cfg.__post_init__"]
    assert ix.calls("model.rec.Cfg.__post_init__") == ["model.rec.validate"]


def test_the_small_repositories_tests_folder_gives_every_function_the_same_tests(real, tmp_path):
    """conftest.reaching_tests, the tests folder the small repositories link, leaves out the
    files that test only the builder: every function of the package is tested by the same tests,
    through the same chains, and the same files could not run."""
    from site_builder.gather.source_index import unimportable_test_imports
    from tests.conftest import PROJECT, reaching_tests
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in PROJECT.folders:
        (repo / name).symlink_to(REPO / name)
    (repo / "content").symlink_to(REPO / "content")
    (repo / PROJECT.tests).unlink()
    (repo / PROJECT.tests).symlink_to(reaching_tests(tmp_path))
    small = build_index(repo)
    assert len(small.modules) < len(real.modules)
    package = [q for q, f in real.functions.items() if f.module.split(".")[0] == PROJECT.package]
    assert package and all(small.tested_by(q) == real.tested_by(q) for q in package)
    assert small.test_modules_reaching_the_package() == real.test_modules_reaching_the_package()
    assert unimportable_test_imports(small) == unimportable_test_imports(real)
