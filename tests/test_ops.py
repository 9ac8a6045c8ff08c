"""The primitives of model/ops.py: values, invariants, and that each cache holds exactly what
its backward reads. Gradient checks against central differences are in test_gradcheck.py."""
import numpy as np
import pytest

from model.ops import (xavier_uniform, linear_forward, linear_backward, relu_forward, relu_backward,
                       layer_norm_forward, layer_norm_backward, softmax_forward, softmax_backward,
                       smoothed_targets, cross_entropy_forward, cross_entropy_backward,
                       embedding_forward, embedding_backward)
from tests.conftest import KeyRecorder


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ---------------------------------------------------------------- linear

def test_xavier_uniform_bound_shape_dtype(rng):
    W = xavier_uniform(30, 50, rng, "float32")
    a = np.sqrt(6.0 / 80)
    assert W.shape == (30, 50) and W.dtype == np.float32
    assert np.abs(W).max() <= a
    assert np.abs(W).max() > 0.9 * a          # fills the interval, not a narrower one
    assert abs(W.std() - a / np.sqrt(3)) < 0.05 * a


def test_linear_forward_values_and_leading_axes(rng):
    X = rng.standard_normal((2, 3, 4))
    W, b = rng.standard_normal((4, 5)), rng.standard_normal(5)
    Y, cache = linear_forward(X, W, b)
    assert Y.shape == (2, 3, 5)
    expected = np.einsum("btd,df->btf", X, W) + b
    np.testing.assert_allclose(Y, expected, rtol=1e-13, atol=1e-13)
    assert cache is X                          # the cache is the input itself: no copy
    # The same rows as one (6, 4) matrix give the same answer.
    np.testing.assert_allclose(linear_forward(X.reshape(6, 4), W, b)[0].reshape(2, 3, 5), Y, rtol=1e-14)


def test_linear_backward_sums_parameter_grads_over_leading_axes(rng):
    X = rng.standard_normal((2, 3, 4))
    W = rng.standard_normal((4, 5))
    dY = rng.standard_normal((2, 3, 5))
    dX, dW, db = linear_backward(dY, X, W)
    assert dX.shape == X.shape and dW.shape == W.shape and db.shape == (5,)
    np.testing.assert_allclose(dX, dY @ W.T, rtol=1e-13)
    np.testing.assert_allclose(dW, np.einsum("btd,btf->df", X, dY), rtol=1e-13)
    np.testing.assert_allclose(db, dY.sum(axis=(0, 1)), rtol=1e-13)


# ---------------------------------------------------------------- relu

def test_relu_forward_and_mask():
    Z = np.array([[-2.0, 0.0, 3.0], [1e-300, -1e-300, 5.0]])
    A, positive = relu_forward(Z)
    np.testing.assert_array_equal(A, [[0, 0, 3], [1e-300, 0, 5]])
    assert positive.dtype == bool               # the cache is the mask, not Z
    np.testing.assert_array_equal(positive, [[False, False, True], [True, False, True]])


def test_relu_backward_blocks_at_zero_and_below():
    Z = np.array([-1.0, 0.0, 2.0])
    _, positive = relu_forward(Z)
    dZ = relu_backward(np.array([5.0, 6.0, 7.0]), positive)
    np.testing.assert_array_equal(dZ, [0.0, 0.0, 7.0])


# ---------------------------------------------------------------- layer norm

def test_layer_norm_rows_are_standardised_before_gain_and_shift(rng):
    X = rng.standard_normal((3, 5, 16)) * 4.0 + 7.0
    g, b = rng.standard_normal(16), rng.standard_normal(16)
    # With eps far below every row variance, Xhat rows have mean 0 and variance 1 to 1e-12.
    Y, c = layer_norm_forward(X, g, b, eps=1e-15)
    Xhat = c["Xhat"]
    assert np.abs(Xhat.mean(axis=-1)).max() < 1e-12
    assert np.abs(Xhat.var(axis=-1) - 1.0).max() < 1e-12
    np.testing.assert_allclose(Y, Xhat * g + b, rtol=1e-14, atol=1e-14)
    # With the default eps the variance is var / (var + eps): eps sits inside the root.
    eps = 1e-5
    _, c = layer_norm_forward(X, g, b, eps)
    var = X.var(axis=-1)
    assert np.abs(c["Xhat"].mean(axis=-1)).max() < 1e-12
    assert np.abs(c["Xhat"].var(axis=-1) - var / (var + eps)).max() < 1e-12
    np.testing.assert_allclose(c["s"][..., 0], 1.0 / np.sqrt(var + eps), rtol=1e-12)
    assert c["s"].shape == (3, 5, 1)


def test_layer_norm_backward_reduces_over_all_leading_axes(rng):
    X = rng.standard_normal((2, 3, 6))
    g, b = rng.standard_normal(6), rng.standard_normal(6)
    dY = rng.standard_normal((2, 3, 6))
    _, c = layer_norm_forward(X, g, b, 1e-5)
    dX, dg, db = layer_norm_backward(dY, c, g)
    assert dX.shape == X.shape and dg.shape == (6,) and db.shape == (6,)
    np.testing.assert_allclose(db, dY.sum(axis=(0, 1)), rtol=1e-13)
    np.testing.assert_allclose(dg, (dY * c["Xhat"]).sum(axis=(0, 1)), rtol=1e-13)
    # dX is orthogonal to the all-ones row: shifting a row changes nothing.
    assert np.abs(dX.sum(axis=-1)).max() < 1e-13
    # With eps negligible, scaling a row changes nothing either, so dX is orthogonal to X - mean.
    _, c = layer_norm_forward(X, g, b, 1e-15)
    dX, _, _ = layer_norm_backward(dY, c, g)
    assert np.abs((dX * c["Xhat"]).sum(axis=-1)).max() < 1e-12


# ---------------------------------------------------------------- softmax

def test_softmax_rows_sum_to_one_and_survive_large_inputs(rng):
    S = rng.standard_normal((2, 3, 7)) * 5
    P, cache = softmax_forward(S)
    assert cache is P
    np.testing.assert_allclose(P.sum(axis=-1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(softmax_forward(S + 1000.0)[0], P, rtol=1e-12)   # no overflow
    big = np.array([1000.0, 999.0, -1000.0])
    P_big = softmax_forward(big)[0]
    assert np.isfinite(P_big).all()
    np.testing.assert_allclose(P_big[:2], [1 / (1 + np.exp(-1)), np.exp(-1) / (1 + np.exp(-1))], rtol=1e-14)


def test_softmax_of_minus_infinity_is_exactly_zero_and_gets_no_gradient(rng):
    S = rng.standard_normal((4, 4))
    S[np.triu_indices(4, 1)] = -np.inf
    P, _ = softmax_forward(S)
    assert (P[np.triu_indices(4, 1)] == 0.0).all()
    dS = softmax_backward(rng.standard_normal((4, 4)), P)
    assert (dS[np.triu_indices(4, 1)] == 0.0).all()
    # softmax ignores a shift of a row, so every row of dS sums to 0.
    assert np.abs(dS.sum(axis=-1)).max() < 1e-15


# ---------------------------------------------------------------- cross-entropy

def test_cross_entropy_value(rng):
    logits = rng.standard_normal((2, 3, 5))
    targets = rng.integers(0, 5, size=(2, 3))
    loss, _ = cross_entropy_forward(logits, targets)
    logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    expected = -np.mean(np.take_along_axis(logp, targets[..., None], axis=-1))
    assert isinstance(loss, float)
    assert loss == pytest.approx(expected, rel=1e-14)
    # Uniform logits give log V.
    assert cross_entropy_forward(np.zeros((4, 5)), np.arange(4))[0] == pytest.approx(np.log(5), rel=1e-15)


def test_cross_entropy_with_label_smoothing(rng):
    logits = rng.standard_normal((6, 5))
    targets = rng.integers(0, 5, size=6)
    eps = 0.1
    q = smoothed_targets(targets, 5, eps)
    np.testing.assert_allclose(q.sum(axis=-1), 1.0, rtol=1e-15)
    assert q[0, targets[0]] == pytest.approx(1 - eps + eps / 5)
    assert np.sort(q[0])[0] == pytest.approx(eps / 5)
    loss, c = cross_entropy_forward(logits, targets, eps)
    logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    assert loss == pytest.approx(-(q * logp).sum(axis=-1).mean(), rel=1e-14)
    np.testing.assert_allclose(cross_entropy_backward(1.0, c), (np.exp(logp) - q) / 6, atol=1e-16)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_gradient_sums_to_zero_per_position(rng, smoothing):
    logits = rng.standard_normal((3, 4, 9)) * 3
    targets = rng.integers(0, 9, size=(3, 4))
    _, c = cross_entropy_forward(logits, targets, smoothing)
    dlogits = cross_entropy_backward(1.0, c)
    assert dlogits.shape == logits.shape
    # Each row is (p - q) / N with both p and q summing to 1: zero up to rounding of p.
    assert np.abs(dlogits.sum(axis=-1)).max() < 1e-15
    # and the gradient points the right way: negative only on the target (without smoothing)
    if not smoothing:
        on_target = np.take_along_axis(dlogits, targets[..., None], axis=-1)
        assert (on_target < 0).all()
        assert (dlogits >= 0).sum() == dlogits.size - targets.size


def test_cross_entropy_backward_scales_with_dloss(rng):
    logits = rng.standard_normal((4, 5))
    _, c = cross_entropy_forward(logits, np.array([0, 1, 2, 3]))
    np.testing.assert_allclose(cross_entropy_backward(2.5, c), 2.5 * cross_entropy_backward(1.0, c), rtol=1e-15)


# ---------------------------------------------------------------- embedding

def test_embedding_forward_and_repeated_ids_sum(rng):
    table = rng.standard_normal((5, 3))
    ids = np.array([[1, 4, 1], [0, 1, 4]])
    out, cache = embedding_forward(ids, table)
    np.testing.assert_array_equal(out, table[ids])
    assert cache is ids
    dout = rng.standard_normal((2, 3, 3))
    dtable = embedding_backward(dout, ids, 5)
    np.testing.assert_allclose(dtable[1], dout[0, 0] + dout[0, 2] + dout[1, 1], rtol=1e-15)
    np.testing.assert_allclose(dtable[4], dout[0, 1] + dout[1, 2], rtol=1e-15)
    np.testing.assert_array_equal(dtable[[2, 3]], 0.0)        # unused rows get nothing


# ---------------------------------------------------------------- caches hold exactly what backward reads

def test_layer_norm_cache_is_read_completely(rng):
    X, g, b = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(4)
    _, c = layer_norm_forward(X, g, b, 1e-5)
    rec = KeyRecorder(c)
    layer_norm_backward(rng.standard_normal((3, 4)), rec, g)   # would raise KeyError if it needed more
    assert rec.read == set(c) == {"Xhat", "s"}


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_cache_is_read_completely(rng, smoothing):
    _, c = cross_entropy_forward(rng.standard_normal((3, 4)), np.array([0, 3, 1]), smoothing)
    rec = KeyRecorder(c)
    cross_entropy_backward(1.0, rec)
    assert rec.read == set(c) == {"P", "targets", "q"}
    assert (c["q"] is None) == (smoothing == 0.0)   # no smoothing: q is not materialised


def test_array_caches_are_the_smallest_thing_backward_needs(rng):
    X = rng.standard_normal((3, 4))
    assert linear_forward(X, rng.standard_normal((4, 2)), np.zeros(2))[1] is X
    assert relu_forward(X)[1].dtype == bool
    P, cache = softmax_forward(X)
    assert cache is P
    ids = np.array([0, 2])
    assert embedding_forward(ids, X)[1] is ids
