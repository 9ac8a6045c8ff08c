"""The Loss page: its sections, its examples against direct calls of model.ops, and the
equations no other test checks (cited by the page as `tests` references)."""
import numpy as np
import pytest

from model.ops import cross_entropy_forward, cross_entropy_backward, smoothed_targets
from model.train_seq2seq import smoothing_floor
from model.transformer import forward, init_params, loss_and_grads
from site_builder.run.examples import load_example, fmt_number, fmt_array
from tests.conftest import ROOT

CONCEPTS = ("loss-forward", "loss-backward", "loss-smoothing")
HEADINGS = ("What is it?", "Mathematics", "Tiny numerical example", "Tensor shapes", "Actual implementation",
            "Code and math connection", "Where is it used?")


def example(name):
    return load_example(ROOT, f"loss:{name}")


@pytest.fixture(scope="module")
def ex():
    return load_example(ROOT, "loss:tiny_logits").__globals__


# ---------------------------------------------------------------- equations the page cites

def test_cache_holds_the_softmax(rng=np.random.default_rng(5)):
    logits = rng.standard_normal((2, 3, 7)) * 3
    _, c = cross_entropy_forward(logits, rng.integers(0, 7, size=(2, 3)))
    expected = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(c["P"], expected, rtol=1e-14)
    np.testing.assert_allclose(c["P"].sum(axis=-1), 1.0, rtol=1e-15)


def test_large_logits_give_the_shifted_loss(rng=np.random.default_rng(6)):
    logits = rng.standard_normal((4, 6))
    targets = rng.integers(0, 6, size=4)
    small, _ = cross_entropy_forward(logits, targets)
    big, c = cross_entropy_forward(logits + 1000.0, targets)      # exp(1000) overflows float64
    assert big == pytest.approx(small, rel=1e-12)
    assert np.isfinite(c["P"]).all()


def test_two_copies_halve_each_position(rng=np.random.default_rng(7)):
    logits = rng.standard_normal((5, 6))
    targets = rng.integers(0, 6, size=5)
    loss1, c1 = cross_entropy_forward(logits, targets)
    loss2, c2 = cross_entropy_forward(np.stack([logits, logits]), np.stack([targets, targets]))
    d1, d2 = cross_entropy_backward(1.0, c1), cross_entropy_backward(1.0, c2)
    assert loss2 == pytest.approx(loss1, rel=1e-15)
    np.testing.assert_allclose(d2[0], d1 / 2, rtol=1e-15)
    np.testing.assert_allclose(d2[1], d1 / 2, rtol=1e-15)


def test_smoothing_shifts_the_gradient_by_a_constant(rng=np.random.default_rng(8)):
    V, N, eps = 6, 5, 0.1
    logits = rng.standard_normal((N, V)) * 2
    targets = rng.integers(0, V, size=N)
    d0 = cross_entropy_backward(1.0, cross_entropy_forward(logits, targets)[1])
    d1 = cross_entropy_backward(1.0, cross_entropy_forward(logits, targets, eps)[1])
    onehot = np.eye(V)[targets]
    shift = (onehot - smoothed_targets(targets, V, eps)) / N     # eps - eps/V at the target, -eps/V elsewhere
    np.testing.assert_allclose(d1 - d0, shift, atol=1e-16)
    np.testing.assert_allclose(shift[onehot == 1], (eps - eps / V) / N, rtol=1e-14)


def test_smoothed_minimum_is_the_entropy_of_q():
    V, eps = 7, 0.1
    targets = np.array([2, 0, 6])
    q = smoothed_targets(targets, V, eps)
    at_q, c = cross_entropy_forward(np.log(q), targets, eps)       # logits log q: softmax gives q back
    assert at_q == pytest.approx(smoothing_floor(V, eps), rel=1e-13)
    assert np.abs(cross_entropy_backward(1.0, c)).max() < 1e-15
    # and it is a minimum: any other logits give a larger smoothed loss
    rng = np.random.default_rng(9)
    for _ in range(5):
        other = cross_entropy_forward(np.log(q) + 0.1 * rng.standard_normal(q.shape), targets, eps)[0]
        assert other > at_q


# ---------------------------------------------------------------- the page

def test_page_has_its_sections(site_page):
    html = site_page("loss")
    for cid in CONCEPTS:
        assert f'id="{cid}"' in html
        for h in ("what", "math", "example", "shapes", "code", "connection", "used"):
            assert f'id="{cid}--{h}"' in html, (cid, h)
    for heading in HEADINGS:
        assert html.count(heading) >= len(CONCEPTS), heading


# ---------------------------------------------------------------- the examples equal direct calls

def test_forward_example_is_the_real_loss(ex):
    r = example("forward_steps")()
    logits = forward(init_params(ex["TINY"], np.random.default_rng(ex["SEED"])), ex["IDS"], ex["TINY"])[0]
    loss, c = cross_entropy_forward(logits, ex["TARGETS"])
    assert r.data["loss"] == loss
    np.testing.assert_array_equal(r.data["P"], c["P"])
    rows = {row["label"]: row for row in r.blocks[0]["rows"]}
    assert rows["Mean of -log p at the targets"]["value"] == fmt_number(loss)
    assert rows["Softmax"]["value"] == fmt_array(c["P"])
    assert rows["Softmax"]["code"].startswith("P /= total")
    per_position = r.blocks[1]["rows"]
    np.testing.assert_allclose(np.mean([float(row[3]) for row in per_position]), loss, atol=1e-4)


def test_uniform_and_large_logits(ex):
    r = example("uniform_is_log_v")()
    assert r.data["uniform"] == pytest.approx(np.log(ex["TINY"].vocab_size), rel=1e-15)
    r = example("large_logits")()
    assert r.data["big"] == pytest.approx(r.data["small"], rel=1e-12)
    assert np.isnan(r.data["textbook_big"])
    assert r.blocks[0]["rows"][1][1] == r.blocks[0]["rows"][0][1]


def test_backward_examples_are_the_real_gradient(ex):
    logits = example("tiny_logits")()
    _, c = cross_entropy_forward(logits, ex["TARGETS"])
    d = cross_entropy_backward(1.0, c)
    r = example("backward_steps")()
    np.testing.assert_array_equal(r.data["dlogits"], d)
    assert r.blocks[0]["rows"][-1]["value"] == fmt_array(d)
    assert np.abs(r.data["row_sums"]).max() < 1e-15
    for row, i in zip(r.blocks[1]["rows"], range(len(ex["TARGETS"]))):
        assert row[2] == fmt_number(d[i, ex["TARGETS"][i]])
    g = example("backward_gradcheck")()
    np.testing.assert_array_equal(g.data["analytic"], d)
    np.testing.assert_allclose(g.data["numeric"], d, atol=1e-9)


def test_mean_example(ex):
    r = example("mean_over_positions")()
    assert r.data["loss1"] == pytest.approx(r.data["loss2"], rel=1e-15)
    np.testing.assert_allclose(r.data["d2"][0], r.data["d1"] / 2, rtol=1e-15)
    params = init_params(ex["TINY"], np.random.default_rng(ex["SEED"]))
    _, grads = loss_and_grads(params, ex["IDS"], ex["TARGETS"], ex["TINY"])
    for k in grads:
        np.testing.assert_array_equal(r.data["g1"][k], grads[k])
        np.testing.assert_allclose(r.data["g2"][k], grads[k], rtol=1e-12, atol=1e-15)


def test_smoothing_examples(ex):
    V, eps, targets = ex["TINY"].vocab_size, ex["EPS"], ex["TARGETS"]
    r = example("smoothing_targets")()
    np.testing.assert_array_equal(r.data["q"], smoothed_targets(targets, V, eps))
    assert r.blocks[0]["rows"][-1]["value"] == fmt_array(smoothed_targets(targets, V, eps))
    r = example("smoothing_compared")()
    logits = example("tiny_logits")()
    assert r.data["loss1"] == cross_entropy_forward(logits, targets, eps)[0]
    np.testing.assert_array_equal(r.data["d1"], cross_entropy_backward(1.0, cross_entropy_forward(logits, targets, eps)[1]))
    r = example("smoothing_curve")()
    assert r.data["at_q"] == pytest.approx(r.data["floor"], rel=1e-13)
    assert r.data["best"] >= r.data["at_q"] - 1e-15           # the sampled curve never goes below the floor
    assert r.blocks[0]["kind"] == "svg"
    unsmoothed = r.data["series"][0][2]
    assert all(a > b for a, b in zip(unsmoothed, unsmoothed[1:]))   # without smoothing: always falling
