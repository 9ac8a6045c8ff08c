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


def row_sums(X):
    """X.sum(axis=-1, keepdims=True) as one matrix-vector product: NumPy sums short rows one by one,
    which for rows of 16 to 128 entries is several times slower than BLAS."""
    return (X.reshape(-1, X.shape[-1]) @ np.ones(X.shape[-1], X.dtype)).reshape(*X.shape[:-1], 1)


def row_max(X):
    """X.max(axis=-1, keepdims=True). NumPy reduces a contiguous row at a time, which for short rows
    (16 keys of attention) is mostly overhead; for them, one transposed copy turns the row maxima
    into element-wise maxima across whole rows, about 5x faster. Long rows reduce fast as they are."""
    X2 = X.reshape(-1, X.shape[-1])
    m = np.ascontiguousarray(X2.T).max(axis=0) if X2.shape[1] <= 32 else X2.max(axis=1)
    return m.reshape(*X.shape[:-1], 1)


def column_sums(X):
    """Sum over every leading axis, (..., n) -> (n,), as one vector-matrix product 1^T X."""
    X2 = X.reshape(-1, X.shape[-1])
    return np.ones(X2.shape[0], X.dtype) @ X2


def linear_forward(X, W, b):
    """Y = X W + b. The matmul runs on 2-D rows: (B, T, d) @ (d, F) is slower than (B*T, d) @ (d, F)."""
    Y = X.reshape(-1, X.shape[-1]) @ W
    Y += b                                    # in place: adding b makes no second (N, F) array
    return Y.reshape(*X.shape[:-1], W.shape[1]), X


def linear_backward(dY, X, W):
    """Returns dX = dY W^T, dW = X^T dY, db = 1^T dY (sums over every leading axis)."""
    dY2 = dY.reshape(-1, dY.shape[-1])        # (N, out)
    X2 = X.reshape(-1, X.shape[-1])           # (N, in)
    dX = (dY2 @ W.T).reshape(X.shape)
    return dX, X2.T @ dY2, column_sums(dY2)


def relu_forward(Z):
    # Backward needs only where Z was positive: a boolean mask is 8x smaller than Z.
    positive = Z > 0
    return Z * positive, positive


def relu_backward(dA, positive):
    """ReLU passes the gradient where Z > 0 and blocks it elsewhere, including at Z = 0."""
    return dA * positive


def layer_norm_forward(X, g, b, eps):
    """Normalise each row over the last axis (biased variance, eps inside the root), then scale and shift."""
    d = X.shape[-1]
    mu = row_sums(X) / d
    Xc = X - mu
    var = row_sums(Xc * Xc) / d
    s = 1.0 / np.sqrt(var + eps)              # (..., 1): one over the standard deviation, per row
    Xhat = np.multiply(Xc, s, out=Xc)         # in place: Xc is not needed again
    Y = Xhat * g
    Y += b
    return Y, dict(Xhat=Xhat, s=s)


def layer_norm_backward(dY, c, g):
    """The three-term formula: dX = s * (dXhat - mean(dXhat) - Xhat * mean(dXhat * Xhat))."""
    Xhat, s = c["Xhat"], c["s"]
    d = dY.shape[-1]
    dg = column_sums(dY * Xhat)
    db = column_sums(dY)
    dXhat = dY * g
    mean_dXhat = row_sums(dXhat) / d
    mean_dXhat_Xhat = row_sums(dXhat * Xhat) / d
    dX = dXhat                                # dXhat is not needed again: dX is built in place over it
    dX -= mean_dXhat
    dX -= Xhat * mean_dXhat_Xhat
    dX *= s
    return dX, dg, db


def softmax_forward(S):
    """Softmax over the last axis. Subtracting the row maximum changes nothing but avoids overflow."""
    E = S - row_max(S)
    np.exp(E, out=E)                          # in place: one (..., n) array in all
    E /= row_sums(E)
    return E, E


def softmax_backward(dP, P):
    """The softmax Jacobian applied row by row: dS = P * (dP - sum(dP * P))."""
    dS = dP - row_sums(dP * P)
    dS *= P
    return dS


def smoothed_targets(targets, V, label_smoothing, dtype="float64"):
    """q = (1 - eps) * onehot(target) + eps / V, one row per position."""
    q = np.full((*targets.shape, V), label_smoothing / V, dtype=dtype)
    np.put_along_axis(q, targets[..., None], 1.0 - label_smoothing + label_smoothing / V, axis=-1)
    return q


def cross_entropy_forward(logits, targets, label_smoothing=0.0):
    """Mean over every position of -sum_k q_k log p_k, with p = softmax(logits)."""
    logp = logits - row_max(logits)
    P = np.exp(logp)
    total = row_sums(P)
    logp -= np.log(total)                     # log-softmax
    P /= total                                # softmax, from the same exponentials
    n = targets.size
    if label_smoothing:
        q = smoothed_targets(targets, logits.shape[-1], label_smoothing, logits.dtype)
        loss = -(q * logp).sum() / n
    else:
        q = None
        loss = -np.take_along_axis(logp, targets[..., None], axis=-1).sum() / n
    return float(loss), dict(P=P, targets=targets, q=q)


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
    d = dout.shape[-1]
    # np.bincount over flat (row, column) indices is that scatter-add, 3-4x faster than np.add.at.
    flat = (ids.reshape(-1, 1).astype(np.intp) * d + np.arange(d)).reshape(-1)
    dtable = np.bincount(flat, weights=dout.reshape(-1), minlength=num_rows * d)   # sums in float64
    return dtable.reshape(num_rows, d).astype(dout.dtype, copy=False)
