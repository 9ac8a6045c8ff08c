"""The primitives both models are built from, each a forward/backward pair.

Every `x_forward` returns `(out, cache)`; every `x_backward(dout, cache, ...)` returns the
gradient on the input (and on its parameters, if it has any). A cache holds only what the
backward pass reads. Inputs may have any number of leading axes, `(..., d)`; parameter
gradients sum over all of them, so one sequence `(T, d)` and a batch `(B, T, d)` share code.
"""
import numpy as np


def xavier_uniform(fan_in, fan_out, rng, dtype="float64"):
    """Glorot & Bengio (2010): U(-a, a) with a = sqrt(6 / (fan_in + fan_out))."""
    a = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-a, a, size=(fan_in, fan_out)).astype(dtype)


def linear_forward(X, W, b):
    """Y = X W + b. The matmul runs on 2-D rows: (B, T, d) @ (d, F) is slower than (B*T, d) @ (d, F)."""
    Y = X.reshape(-1, X.shape[-1]) @ W + b
    return Y.reshape(*X.shape[:-1], W.shape[1]), X


def linear_backward(dY, X, W):
    """Returns dX = dY W^T, dW = X^T dY, db = 1^T dY (sums over every leading axis)."""
    dY2 = dY.reshape(-1, dY.shape[-1])        # (N, out)
    X2 = X.reshape(-1, X.shape[-1])           # (N, in)
    dX = (dY2 @ W.T).reshape(X.shape)
    return dX, X2.T @ dY2, dY2.sum(axis=0)


def relu_forward(Z):
    # Backward needs only where Z was positive: a boolean mask is 8x smaller than Z.
    positive = Z > 0
    return Z * positive, positive


def relu_backward(dA, positive):
    """ReLU passes the gradient where Z > 0 and blocks it elsewhere, including at Z = 0."""
    return dA * positive


def layer_norm_forward(X, g, b, eps):
    """Normalise each row over the last axis (biased variance, eps inside the root), then scale and shift."""
    mu = X.mean(axis=-1, keepdims=True)
    Xc = X - mu
    var = (Xc * Xc).mean(axis=-1, keepdims=True)
    s = 1.0 / np.sqrt(var + eps)              # (..., 1): one over the standard deviation, per row
    Xhat = Xc * s
    return Xhat * g + b, dict(Xhat=Xhat, s=s)


def layer_norm_backward(dY, c, g):
    """The three-term formula: dX = s * (dXhat - mean(dXhat) - Xhat * mean(dXhat * Xhat))."""
    Xhat, s = c["Xhat"], c["s"]
    lead = tuple(range(dY.ndim - 1))
    dg = (dY * Xhat).sum(axis=lead)
    db = dY.sum(axis=lead)
    dXhat = dY * g
    dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True)
              - Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True))
    return dX, dg, db


def softmax_forward(S):
    """Softmax over the last axis. Subtracting the row maximum changes nothing but avoids overflow."""
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    P = E / E.sum(axis=-1, keepdims=True)
    return P, P


def softmax_backward(dP, P):
    """The softmax Jacobian applied row by row: dS = P * (dP - sum(dP * P))."""
    return P * (dP - (dP * P).sum(axis=-1, keepdims=True))


def smoothed_targets(targets, V, label_smoothing, dtype="float64"):
    """q = (1 - eps) * onehot(target) + eps / V, one row per position."""
    q = np.full((*targets.shape, V), label_smoothing / V, dtype=dtype)
    np.put_along_axis(q, targets[..., None], 1.0 - label_smoothing + label_smoothing / V, axis=-1)
    return q


def cross_entropy_forward(logits, targets, label_smoothing=0.0):
    """Mean over every position of -sum_k q_k log p_k, with p = softmax(logits)."""
    Z = logits - logits.max(axis=-1, keepdims=True)
    logp = Z - np.log(np.exp(Z).sum(axis=-1, keepdims=True))
    n = targets.size
    if label_smoothing:
        q = smoothed_targets(targets, logits.shape[-1], label_smoothing, logits.dtype)
        loss = -(q * logp).sum() / n
    else:
        q = None
        loss = -np.take_along_axis(logp, targets[..., None], axis=-1).sum() / n
    return float(loss), dict(P=np.exp(logp), targets=targets, q=q)


def cross_entropy_backward(dloss, c):
    """d loss / d logits = (p - q) / N: softmax and log cancel to this one subtraction."""
    P, targets, q = c["P"], c["targets"], c["q"]
    if q is None:
        dlogits = P.copy()
        np.put_along_axis(dlogits, targets[..., None],
                          np.take_along_axis(P, targets[..., None], axis=-1) - 1.0, axis=-1)
    else:
        dlogits = P - q
    return dlogits * (dloss / targets.size)


def embedding_forward(ids, table):
    """Row lookup: out[..., t, :] = table[ids[..., t]]."""
    return table[ids], ids


def embedding_backward(dout, ids, num_rows):
    """A scatter-add: a row used twice receives the sum of both gradients."""
    dtable = np.zeros((num_rows, dout.shape[-1]), dtype=dout.dtype)
    np.add.at(dtable, ids.reshape(-1), dout.reshape(-1, dout.shape[-1]))
    return dtable
