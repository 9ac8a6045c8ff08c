"""Each layer of mlp.ops against its equation, and each backward against central differences."""
import numpy as np

from mlp.ops import (linear_backward, linear_forward, relu_backward, relu_forward,
                     softmax_cross_entropy_backward, softmax_cross_entropy_forward)
from tests.gradcheck import numerical_grad, rel_error

TOL = 1e-7
RNG = np.random.default_rng(1)
X, W, B = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 3)), RNG.standard_normal(3)
DY = RNG.standard_normal((5, 3))
LOGITS, Y = RNG.standard_normal((5, 3)), np.array([0, 2, 1, 1, 0])


def test_linear_forward_is_x_w_plus_b():
    Yl, cache = linear_forward(X, W, B)
    np.testing.assert_allclose(Yl, np.einsum("nd,dh->nh", X, W) + B, rtol=1e-13)
    assert cache is X


def test_linear_backward_matches_central_differences():
    dX, dW, db = linear_backward(DY, X, W)
    f = lambda: float((linear_forward(X, W, B)[0] * DY).sum())
    for name, analytic, x in (("dX", dX, X), ("dW", dW, W), ("db", db, B)):
        assert rel_error(analytic, numerical_grad(f, x)) < TOL, name


def test_linear_backward_sums_the_bias_gradient_over_the_batch():
    _, _, db = linear_backward(DY, X, W)
    np.testing.assert_allclose(db, DY.sum(axis=0), rtol=1e-13)


def test_relu_keeps_the_positive_part():
    Z = np.array([[-1.5, 0.0, 2.0], [0.5, -0.1, 3.0]])
    A, positive = relu_forward(Z)
    np.testing.assert_array_equal(A, np.maximum(Z, 0))
    np.testing.assert_array_equal(relu_backward(np.ones_like(Z), positive), Z > 0)


def test_relu_backward_matches_central_differences():
    Z = RNG.standard_normal((5, 3))               # no entry within h of the kink
    dZ = relu_backward(DY, relu_forward(Z)[1])
    f = lambda: float((relu_forward(Z)[0] * DY).sum())
    assert rel_error(dZ, numerical_grad(f, Z)) < TOL


def test_softmax_rows_sum_to_one_and_the_loss_is_the_mean_negative_log_likelihood():
    loss, c = softmax_cross_entropy_forward(LOGITS, Y)
    np.testing.assert_allclose(c["P"].sum(axis=1), 1.0, rtol=1e-14)
    log_p = LOGITS - np.log(np.exp(LOGITS).sum(axis=1, keepdims=True))
    assert abs(loss - (-log_p[np.arange(5), Y].mean())) < 1e-14


def test_softmax_cross_entropy_backward_matches_central_differences():
    _, c = softmax_cross_entropy_forward(LOGITS, Y)
    dlogits = softmax_cross_entropy_backward(c)
    f = lambda: float(softmax_cross_entropy_forward(LOGITS, Y)[0])
    assert rel_error(dlogits, numerical_grad(f, LOGITS)) < TOL
    np.testing.assert_allclose(dlogits.sum(axis=1), 0.0, atol=1e-15)
