"""The layers, each a forward/backward pair on a batch of rows `(B, n)`.

A forward returns `(out, cache)`, the cache holding only what its backward reads; a backward
returns the gradient on its input, and on its parameters if it has any.
"""
import numpy as np


def linear_forward(X, W, b):
    """Y = X W + b, one row per example."""
    Y = X @ W + b
    return Y, X


def linear_backward(dY, X, W):
    """The gradients on the input, the weights and the bias of linear_forward."""
    dX = dY @ W.T
    dW = X.T @ dY
    db = dY.sum(axis=0)
    return dX, dW, db


def relu_forward(Z):
    """max(Z, 0); the cache is where Z was positive."""
    positive = Z > 0
    A = Z * positive
    return A, positive


def relu_backward(dA, positive):
    """The gradient passes where Z was positive and is 0 elsewhere."""
    dZ = dA * positive
    return dZ


def softmax_cross_entropy_forward(logits, y):
    """The mean over the batch of -log softmax(logits)[y]."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    E = np.exp(shifted)
    P = E / E.sum(axis=1, keepdims=True)
    picked = P[np.arange(len(y)), y]
    loss = -np.log(picked).mean()
    return loss, dict(P=P, y=y)


def softmax_cross_entropy_backward(c):
    """dloss/dlogits = (P - onehot(y)) / B."""
    B = len(c["y"])
    dlogits = c["P"].copy()
    dlogits[np.arange(B), c["y"]] -= 1.0
    dlogits /= B
    return dlogits
