"""Central differences, for the tests and for the pages' gradient-check tables. It imports
nothing but NumPy, so that examples can use it (they never import a test module: those
import pytest)."""
import numpy as np


def numerical_grad(f, x, h=1e-6):
    """d f / d x by central differences, nudging x in place and restoring it."""
    grad = np.zeros_like(x, dtype=np.float64)
    flat, gflat = x.reshape(-1), grad.reshape(-1)       # views: writing flat writes x
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        up = f()
        flat[i] = old - h
        down = f()
        flat[i] = old
        gflat[i] = (up - down) / (2 * h)
    return grad


def rel_error(analytic, numeric):
    """||a - n|| / (||a|| + ||n||): by norm, so one tiny entry cannot dominate."""
    a, n = np.asarray(analytic, np.float64), np.asarray(numeric, np.float64)
    return float(np.linalg.norm(a - n) / max(np.linalg.norm(a) + np.linalg.norm(n), 1e-12))
