"""Central differences for any scalar function of any tensor.

Used by the tests and by the site's gradient-check tables. h = 1e-5 in float64 leaves a
truncation error near h^2 ~ 1e-10 and a rounding error near 1e-16 / h ~ 1e-11, which is why
the tests compare at a relative error of 1e-7 by norm.
"""
import numpy as np


def numerical_grad(f, x, h=1e-5):
    """d f / d x by central differences, nudging x in place and restoring it."""
    grad = np.zeros_like(x, dtype=np.float64)
    flat, gflat = x.reshape(-1), grad.reshape(-1)   # views: writing flat writes x
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        up = f()
        flat[i] = old - h
        down = f()
        flat[i] = old
        gflat[i] = (up - down) / (2 * h)
    return grad


def rel_error(analytic, numeric, floor=1e-8):
    """||a - n|| / max(||a|| + ||n||, floor): by norm, so one tiny entry cannot dominate. A
    gradient that is exactly 0 (the key bias) has no scale of its own: it reads as ||n|| / floor,
    about 2e-3 for central-difference noise of 2e-11, so tests check such tensors by absolute norm."""
    a, n = np.asarray(analytic, np.float64), np.asarray(numeric, np.float64)
    return float(np.linalg.norm(a - n) / max(np.linalg.norm(a) + np.linalg.norm(n), floor))
