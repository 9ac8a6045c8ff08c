"""The classifier: linear, ReLU, linear, softmax cross-entropy; its parameters and gradients."""
import numpy as np

from mlp.ops import (linear_backward, linear_forward, relu_backward, relu_forward,
                     softmax_cross_entropy_backward, softmax_cross_entropy_forward)


def init_params(cfg, rng):
    """He-normal weights for the ReLU layer, a smaller draw for the output layer, zero biases."""
    D, H, C = cfg.n_in, cfg.n_hidden, cfg.n_classes
    p = {}
    p["w1"] = rng.standard_normal((D, H)) * np.sqrt(2.0 / D)
    p["b1"] = np.zeros(H)
    p["w2"] = rng.standard_normal((H, C)) * np.sqrt(1.0 / H)
    p["b2"] = np.zeros(C)
    return p


def forward(params, X):
    """The logits of a batch, and the caches the backward pass reads."""
    Z, c1 = linear_forward(X, params["w1"], params["b1"])
    A, positive = relu_forward(Z)
    logits, c2 = linear_forward(A, params["w2"], params["b2"])
    return logits, dict(c1=c1, positive=positive, c2=c2)


def loss_and_grads(params, X, y, cfg):
    """The mean cross-entropy of a batch and its gradient on every parameter."""
    if X.shape[1] != cfg.n_in:
        raise ValueError(f"X has {X.shape[1]} features per row; the config says n_in = {cfg.n_in}")
    logits, c = forward(params, X)
    loss, c_loss = softmax_cross_entropy_forward(logits, y)
    dlogits = softmax_cross_entropy_backward(c_loss)
    grads = {}
    dA, grads["w2"], grads["b2"] = linear_backward(dlogits, c["c2"], params["w2"])
    dZ = relu_backward(dA, c["positive"])
    _, grads["w1"], grads["b1"] = linear_backward(dZ, c["c1"], params["w1"])
    return loss, grads
