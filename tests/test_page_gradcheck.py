"""The Gradient checking page: its sections, its examples against direct calls of model.gradcheck and
the model, and the equations no other test checks (cited by the page as `tests` references)."""
import numpy as np
import pytest

from model.gradcheck import numerical_grad, rel_error
from model.transformer import loss_and_grads
from site_builder.run.examples import load_example
from tests.conftest import ROOT, assert_anchored_sections
from tests.test_gradcheck import TOL

CONCEPTS = ("gradcheck-central", "gradcheck-rel-error", "gradcheck-model")
WITH_SHAPES = ("gradcheck-central", "gradcheck-model")       # rel_error returns one number


def example(name):
    return load_example(ROOT, f"gradcheck:{name}")


# ---------------------------------------------------------------- equations the page cites

def test_central_difference_of_a_cubic_is_off_by_h_squared():
    # ((x + h)^3 - (x - h)^3) / 2h = 3 x^2 + h^2 exactly: the truncation term h^2 f''' / 6 with f''' = 6.
    x = np.array([0.5, -1.0, 2.0])
    h = 1e-3                                  # large enough that h^2 stands far above rounding
    numeric = numerical_grad(lambda: float((x ** 3).sum()), x, h)
    np.testing.assert_allclose(numeric - 3 * x ** 2, h ** 2, rtol=1e-4)
    np.testing.assert_array_equal(x, [0.5, -1.0, 2.0])     # x is restored


def test_truncation_error_scales_as_h_squared_at_small_emb_std():
    setup, loss_fn = example("setup"), example("loss_fn")
    cfg, params, ids, targets = setup(0.02)
    _, grads = loss_and_grads(params, ids, targets, cfg)
    f = loss_fn(cfg, params, ids, targets)
    errs = [rel_error(grads["tok_emb"], numerical_grad(f, params["tok_emb"], h)) for h in (1e-5, 3e-6)]
    ratio = errs[0] / errs[1]                 # (1e-5 / 3e-6)^2 = 11.1 if truncation dominates
    assert 8 < ratio < 14
    assert errs[0] > TOL                      # a correct backward pass fails the bar at emb_std 0.02
    cfg, params, ids, targets = setup(1.0)
    _, grads = loss_and_grads(params, ids, targets, cfg)
    f = loss_fn(cfg, params, ids, targets)
    assert rel_error(grads["tok_emb"], numerical_grad(f, params["tok_emb"])) < TOL / 100


def test_rel_error_is_between_0_and_1():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((3, 4))
    assert rel_error(a, a) == 0.0
    assert rel_error(a, -a) == 1.0
    for _ in range(20):
        assert 0.0 <= rel_error(rng.standard_normal(5), rng.standard_normal(5)) <= 1.0
    n = np.array([1e-11, -2e-11, 0.0])          # rounding noise against an exact 0
    assert rel_error(np.zeros(3), n) == pytest.approx(np.linalg.norm(n) / 1e-8, rel=1e-12)
    assert rel_error(np.zeros(3), n, floor=1.0) < 1e-10


# ---------------------------------------------------------------- the page

def test_page_has_its_sections(site_page):
    assert_anchored_sections(site_page("gradcheck"), CONCEPTS, WITH_SHAPES)


# ---------------------------------------------------------------- the examples equal direct calls

SAMPLE = ("tok_emb", "b0.bk", "b1.wq", "b1.ln2_g", "head_b")     # checked directly; the rest by the example


@pytest.fixture(scope="module")
def direct():
    """The check of test_every_tensor_passes, run here directly on a sample of tensors."""
    cfg, params, ids, targets = example("setup")(1.0)
    loss, grads = loss_and_grads(params, ids, targets, cfg)
    f = example("loss_fn")(cfg, params, ids, targets)
    return loss, grads, {name: numerical_grad(f, params[name]) for name in SAMPLE}


def test_whole_model_table(direct):
    loss, grads, numeric = direct
    r = example("whole_model_table")()
    assert r.data["loss"] == loss
    assert list(r.data["rows"]) == list(grads)                  # every parameter, in order
    for name, row in r.data["rows"].items():
        assert row["verdict"] == ("both 0 by norm" if name.endswith(".bk") else "passes"), name
        assert row["rel_error"] <= TOL or name.endswith(".bk")
    for name in SAMPLE:
        row = r.data["rows"][name]
        assert row["rel_error"] == rel_error(grads[name], numeric[name])
        assert row["gap"] == np.abs(grads[name] - numeric[name]).max()
    rows = r.blocks[0]["rows"]
    assert [row[0] for row in rows] == list(grads)


def test_central_walk(direct):
    loss, grads, numeric = direct
    r = example("central_walk")()
    np.testing.assert_array_equal(r.data["numeric"], numeric["head_b"])
    np.testing.assert_array_equal(r.data["analytic"], grads["head_b"])
    assert len(r.data["rows"]) == grads["head_b"].size


def test_relative_error_examples(direct):
    loss, grads, numeric = direct
    r = example("elementwise_vs_norm")()
    for name in SAMPLE:
        assert r.data[name][1] == rel_error(grads[name], numeric[name])
    flagged = [n for n, (worst, by_norm) in r.data.items() if worst > TOL and not n.endswith(".bk")]
    assert all(r.data[n][1] <= TOL for n in flagged)            # elementwise alarms on passing tensors
    r = example("key_bias")()
    assert r.data["after"] == pytest.approx(r.data["before"], abs=1e-14)
    assert float(r.data["rows"][0][3]) > TOL                    # the default floor reads noise as error
    assert all(float(row[4]) < TOL for row in r.data["rows"])   # a floor at the neighbour's scale does not


def test_emb_std_and_h_examples():
    r = example("emb_std_compare")()
    small, big = r.data[0.02], r.data[1.0]
    assert small["row_std"] < 0.05 < 1.0 < big["row_std"]
    assert small["errs"]["tok_emb"][1e-5] > TOL > big["errs"]["tok_emb"][1e-5]
    r = example("error_vs_h")()
    errs_small, errs_big = r.data["errs"][0.02], r.data["errs"][1.0]
    assert r.data["series"][0][2] == [float(np.log10(e)) for e in errs_small]
    # truncation on the right of the V: from h = 1e-2 down the error falls for the first few steps
    assert errs_small[0] > errs_small[1] > errs_small[2]
    # rounding on the left: the smallest h is far worse than the best one
    assert errs_big[-1] > 100 * min(errs_big)
    r = example("cost")()
    assert r.data["small"] < 2000 < 10 * r.data["small"] < r.data["big"]
