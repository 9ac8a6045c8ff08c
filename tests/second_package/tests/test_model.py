"""The classifier as a whole: its parameters, its gradients against central differences,
its input check and its training step."""
import numpy as np
import pytest

from mlp.config import MLPConfig
from mlp.model import forward, init_params, loss_and_grads
from mlp.train import decays, make_blobs, train_step
from tests.gradcheck import numerical_grad, rel_error

CFG = MLPConfig()


def setup():
    rng = np.random.default_rng(0)
    return (init_params(CFG, rng),) + make_blobs(CFG, rng)


def test_init_params_names_shapes_and_values():
    params = init_params(CFG, np.random.default_rng(0))
    D, H, C = CFG.n_in, CFG.n_hidden, CFG.n_classes
    assert {k: v.shape for k, v in params.items()} == {"w1": (D, H), "b1": (H,), "w2": (H, C), "b2": (C,)}
    assert not params["b1"].any() and not params["b2"].any()
    assert sum(v.size for v in params.values()) == D * H + H + H * C + C


def test_forward_is_linear_relu_linear():
    params, X, _ = setup()
    logits, _ = forward(params, X)
    W1, b1, W2, b2 = (params[k] for k in ("w1", "b1", "w2", "b2"))
    np.testing.assert_allclose(logits, np.maximum(X @ W1 + b1, 0) @ W2 + b2, rtol=1e-13)


def test_every_gradient_matches_central_differences():
    params, X, y = setup()
    _, grads = loss_and_grads(params, X, y, CFG)
    f = lambda: float(loss_and_grads(params, X, y, CFG)[0])
    for name in params:
        assert rel_error(grads[name], numerical_grad(f, params[name])) < 1e-6, name


def test_a_batch_of_the_wrong_width_is_refused():
    params, X, y = setup()
    with pytest.raises(ValueError, match="features per row"):
        loss_and_grads(params, X[:, :-1], y, CFG)


def test_train_step_lowers_the_loss():
    params, X, y = setup()
    losses = [train_step(params, X, y, CFG) for _ in range(20)]
    assert losses[-1] < 0.5 * losses[0]


def test_make_blobs_cycles_through_the_classes():
    X, y = make_blobs(CFG, np.random.default_rng(0))
    assert X.shape == (CFG.batch, CFG.n_in)
    np.testing.assert_array_equal(y, np.arange(CFG.batch) % CFG.n_classes)


def test_only_weight_matrices_decay():
    assert [name for name in init_params(CFG, np.random.default_rng(0)) if decays(name)] == ["w1", "w2"]
