"""Hand-picked inputs that tests check and pages show, importable without pytest.

The site's examples (content/examples/) run these through the real model, and the tests
assert what they give, so a page and its test show the same numbers. Nothing here needs the
test extra: the README's build command installs only the site's.
"""
import numpy as np

# ---------------------------------------------------------------- the worked feed-forward example
# d = 2 features widen to F = 3 and narrow back to 2. The site traces these numbers.
FFN_WORKED_XN = np.array([[1.0, -1.0]])             # one row in
FFN_WORKED_W1 = np.array([[1.0, 0.0, 0.0],          # (d, F)
                          [0.0, 1.0, 1.0]])
FFN_WORKED_B1 = np.array([0.0, 0.5, 0.0])           # (F,)
FFN_WORKED_W2 = np.array([[2.0, 0.0],               # (F, d)
                          [0.0, 1.0],
                          [0.5, 0.0]])
FFN_WORKED_B2 = np.array([-1.0, 2.0])               # (d,)
FFN_WORKED_DOUT = np.array([[1.0, 0.5]])            # the gradient arriving at the output


def ffn_worked_params():
    """The hand-picked weights as the "b0." block of a parameter dict (fresh copies)."""
    return {"b0.ff1_w": FFN_WORKED_W1.copy(), "b0.ff1_b": FFN_WORKED_B1.copy(),
            "b0.ff2_w": FFN_WORKED_W2.copy(), "b0.ff2_b": FFN_WORKED_B2.copy()}


# ---------------------------------------------------------------- the worked LayerNorm example
# Two rows of d = 4 features, and a scale and shift that are not the ones and zeros init_params
# starts from, so that both steps of the last line are visible.
LN_X = np.array([[2.0, -1.0, 0.5, 3.5],
                 [0.3, 0.1, -0.2, 0.6]])
LN_G = np.array([1.5, 0.5, -1.0, 2.0])
LN_B = np.array([0.1, 0.0, -0.2, 0.3])
LN_DY = np.array([[0.2, -0.5, 0.1, 0.4],       # hand-picked, not computed from a loss
                  [-0.3, 0.2, 0.6, -0.1]])


# ---------------------------------------------------------------- gradient checks
# The largest relative error a gradient check accepts (central differences, h = 1e-5, float64).
GRADCHECK_TOL = 1e-7
