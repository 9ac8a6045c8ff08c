"""Every hand-written backward pass against central differences (model.gradcheck, h = 1e-5),
in float64, compared by norm: rel_error(analytic, numeric) <= 1e-7.

Each backward function is checked alone on f = sum(G * forward(x)) with a random upstream
gradient G, so that a bug is pinned to one function; test_every_tensor_passes then checks every
parameter of the whole model through loss_and_grads."""
import numpy as np
import pytest

from model.attention import causal_mask, mha_forward, mha_backward, attention_forward, attention_backward
from model.config import ModelConfig
from model.gradcheck import numerical_grad, rel_error
from tests.fixtures import GRADCHECK_TOL
from model.ops import (linear_forward, linear_backward, relu_forward, relu_backward, layer_norm_forward,
                       layer_norm_backward, softmax_forward, softmax_backward, cross_entropy_forward,
                       cross_entropy_backward, embedding_forward, embedding_backward)
from model.transformer import (init_params, forward, loss_and_grads, embed_forward, embed_backward,
                               ffn_forward, ffn_backward, block_forward, block_backward)

TOL = GRADCHECK_TOL
D, H = 8, 2
ATTENTION = ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo")


def assert_close(analytic, f, x, name=""):
    """analytic against central differences of f() in x, by norm."""
    numeric = numerical_grad(f, x)
    err = rel_error(analytic, numeric)
    assert err <= TOL, f"{name}: rel_error {err:.2e} > {TOL:.0e}"
    assert np.linalg.norm(analytic) > 1e-6, f"{name}: a vanishing gradient proves nothing"


def pairing(G):
    """f(out) = sum(G * out): its gradient on out is G, so backward(G) must be its gradient."""
    return lambda out: float((G * out).sum())


@pytest.fixture
def rng():
    return np.random.default_rng(2024)


# ---------------------------------------------------------------- the whole model

def test_every_tensor_passes():
    # emb_std = 1.0, not the default 0.02. At 0.02 the rows entering the first LayerNorm (token
    # plus position embedding) have a standard deviation near 0.025, LayerNorm's curvature there
    # is ~1/std, and a central difference with h = 1e-5 carries a truncation error ~(h/std)^2 ~
    # 2.5e-7 on the embedding gradients. Measured on this very config and seed at emb_std 0.02:
    # rel_error 1.6e-7 on pos_emb and 1.4e-7 on tok_emb, above the 1e-7 bar with a correct
    # backward pass (it is truncation: h = 3e-6 gives 1.5e-8, the h^2 ratio). At emb_std 1.0 the
    # worst tensor (key biases aside, see below) is at 5.5e-10.
    cfg = ModelConfig(vocab_size=7, seq_len=4, emb_dim=D, num_heads=H, ff_dim=12, num_layers=2, emb_std=1.0)
    params = init_params(cfg, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    for name in params:                       # nonzero biases, gains and shifts: no zero is special
        if name.endswith(("_b", "_g", ".bq", ".bk", ".bv", ".bo")):
            params[name] = params[name] + 0.1 * rng.standard_normal(params[name].shape)
    ids, targets = rng.integers(0, cfg.vocab_size, size=(2, 4)), rng.integers(0, cfg.vocab_size, size=(2, 4))
    loss, grads = loss_and_grads(params, ids, targets, cfg)
    assert set(grads) == set(params)

    def f():
        return cross_entropy_forward(forward(params, ids, cfg)[0], targets)[0]

    assert f() == loss
    for name in params:
        numeric = numerical_grad(f, params[name])
        if name.endswith(".bk"):              # analytically 0: see test_key_bias_gradient_is_zero
            assert np.linalg.norm(grads[name]) < 1e-14 and np.linalg.norm(numeric) < 1e-9, name
            continue
        err = rel_error(grads[name], numeric)
        assert err <= TOL, f"{name}: rel_error {err:.2e}"


def test_key_bias_gradient_is_zero(rng):
    """A key bias adds q . bk to every score of a query's row: the same shift for every key, which
    softmax ignores. So d loss / d bk is 0 analytically, the analytic gradient is 0 up to rounding,
    and the numerical one is rounding noise of the loss divided by 2h (one ulp of a loss near 2 is
    4.4e-16; over 2h = 2e-5 that is 2.2e-11). Neither an elementwise relative error (noise over
    noise, anything from 0 to 100%) nor rel_error with its default floor of 1e-8 (2.2e-11 / 1e-8 =
    2e-3) can compare them; the test compares norms against absolute bounds instead."""
    Xq, Xkv = rng.standard_normal((2, 3, D)), rng.standard_normal((2, 5, D))
    params = {"a." + n: rng.standard_normal((D, D) if n.startswith("w") else D) for n in ATTENTION}
    G = rng.standard_normal((2, 3, D))
    out, c = mha_forward(Xq, Xkv, params, "a.", H)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    mha_backward(G, c, params, "a.", grads)
    numeric = numerical_grad(lambda: pairing(G)(mha_forward(Xq, Xkv, params, "a.", H)[0]), params["a.bk"])
    scale = np.linalg.norm(grads["a.bq"])                           # its neighbour is not small
    assert scale > 1e-1
    assert np.linalg.norm(grads["a.bk"]) < 1e-14 * scale
    assert np.linalg.norm(numeric) < 1e-9 * scale
    # Compared by norm with a floor at the scale of the other gradients, they agree:
    assert rel_error(grads["a.bk"], numeric, floor=scale) < TOL


# ---------------------------------------------------------------- ops, one at a time

def test_linear_backward(rng):
    X, W, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    G = rng.standard_normal((2, 3, 5))
    dX, dW, db = linear_backward(G, X, W)
    f = lambda: pairing(G)(linear_forward(X, W, b)[0])
    assert_close(dX, f, X, "dX")
    assert_close(dW, f, W, "dW")
    assert_close(db, f, b, "db")


def test_relu_backward_away_from_zero(rng):
    Z = rng.standard_normal((3, 6))
    Z = np.sign(Z) * (0.1 + np.abs(Z))         # |Z| >= 0.1 >> h: no nudge crosses the kink
    G = rng.standard_normal((3, 6))
    _, positive = relu_forward(Z)
    assert_close(relu_backward(G, positive), lambda: pairing(G)(relu_forward(Z)[0]), Z, "dZ")


def test_layer_norm_backward(rng):
    X = rng.standard_normal((2, 3, 6)) * 2 + 1
    g, b = 1 + 0.3 * rng.standard_normal(6), rng.standard_normal(6)
    G = rng.standard_normal((2, 3, 6))
    _, c = layer_norm_forward(X, g, b, 1e-5)
    dX, dg, db = layer_norm_backward(G, c, g)
    f = lambda: pairing(G)(layer_norm_forward(X, g, b, 1e-5)[0])
    assert_close(dX, f, X, "dX")
    assert_close(dg, f, g, "dg")
    assert_close(db, f, b, "db")


def test_softmax_backward(rng):
    S = rng.standard_normal((2, 3, 5))
    G = rng.standard_normal((2, 3, 5))
    P, _ = softmax_forward(S)
    assert_close(softmax_backward(G, P), lambda: pairing(G)(softmax_forward(S)[0]), S, "dS")


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_backward(rng, smoothing):
    logits = rng.standard_normal((2, 3, 5)) * 2
    targets = rng.integers(0, 5, size=(2, 3))
    _, c = cross_entropy_forward(logits, targets, smoothing)
    f = lambda: 0.7 * cross_entropy_forward(logits, targets, smoothing)[0]
    assert_close(cross_entropy_backward(0.7, c), f, logits, "dlogits")


def test_embedding_backward_with_repeated_ids(rng):
    table = rng.standard_normal((5, 3))
    ids = np.array([[1, 4, 1, 1], [0, 4, 2, 1]])      # 1 three times in a row, 3 never
    G = rng.standard_normal((2, 4, 3))
    dtable = embedding_backward(G, ids, 5)
    assert_close(dtable, lambda: pairing(G)(embedding_forward(ids, table)[0]), table, "dtable")
    assert (dtable[3] == 0).all()


# ---------------------------------------------------------------- attention

def attention_params(rng, p="a."):
    return {p + n: rng.standard_normal((D, D)) * 0.5 if n.startswith("w") else rng.standard_normal(D) * 0.2
            for n in ATTENTION}


@pytest.mark.parametrize("kind", ["self", "cross"])
def test_mha_backward(rng, kind):
    """Self: causal, Tq = Tk, the same values fed as two arrays so dXq and dXkv are checked apart.
    Cross: no mask, Tq = 3 queries over Tk = 5 keys and values."""
    params = attention_params(rng)
    if kind == "self":
        Xq = rng.standard_normal((2, 4, D))
        Xkv, mask = Xq.copy(), causal_mask(4)
    else:
        Xq, Xkv, mask = rng.standard_normal((2, 3, D)), rng.standard_normal((2, 5, D)), None
    G = rng.standard_normal(Xq.shape)
    out, c = mha_forward(Xq, Xkv, params, "a.", H, mask)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXq, dXkv = mha_backward(G, c, params, "a.", grads)
    f = lambda: pairing(G)(mha_forward(Xq, Xkv, params, "a.", H, mask)[0])
    assert_close(dXq, f, Xq, "dXq")
    assert_close(dXkv, f, Xkv, "dXkv")
    for name in params:
        if not name.endswith("bk"):           # bk: test_key_bias_gradient_is_zero
            assert_close(grads[name], f, params[name], name)


def test_attention_backward(rng):
    cfg = ModelConfig(vocab_size=5, seq_len=4, emb_dim=D, num_heads=H)
    params = attention_params(rng, "b0.")
    Xn = rng.standard_normal((2, 4, D))
    G = rng.standard_normal((2, 4, D))
    _, c = attention_forward(Xn, params, "b0.", cfg)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXn = attention_backward(G, c, params, "b0.", grads)
    f = lambda: pairing(G)(attention_forward(Xn, params, "b0.", cfg)[0])
    assert_close(dXn, f, Xn, "dXn")                 # both paths: queries and keys/values
    for name in ("b0.wq", "b0.wk", "b0.wv", "b0.wo", "b0.bq", "b0.bv", "b0.bo"):
        assert_close(grads[name], f, params[name], name)


# ---------------------------------------------------------------- the language model's pieces

BLOCK_CFG = ModelConfig(vocab_size=6, seq_len=5, emb_dim=D, num_heads=H, ff_dim=12, num_layers=1, emb_std=1.0)


def block_params(rng):
    params = init_params(BLOCK_CFG, np.random.default_rng(3))
    for name in params:
        if name.endswith(("_b", "_g", ".bq", ".bk", ".bv", ".bo")):
            params[name] = params[name] + 0.2 * rng.standard_normal(params[name].shape)
    return params


def test_ffn_backward(rng):
    params = block_params(rng)
    Xn = rng.standard_normal((2, 4, D))
    G = rng.standard_normal((2, 4, D))
    _, c = ffn_forward(Xn, params, "b0.")
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXn = ffn_backward(G, c, params, "b0.", grads)
    f = lambda: pairing(G)(ffn_forward(Xn, params, "b0.")[0])
    assert_close(dXn, f, Xn, "dXn")
    for name in ("b0.ff1_w", "b0.ff1_b", "b0.ff2_w", "b0.ff2_b"):
        assert_close(grads[name], f, params[name], name)


def test_block_backward(rng):
    params = block_params(rng)
    X = rng.standard_normal((2, 4, D))
    G = rng.standard_normal((2, 4, D))
    _, c = block_forward(X, params, 0, BLOCK_CFG)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dX = block_backward(G, c, params, 0, grads)
    f = lambda: pairing(G)(block_forward(X, params, 0, BLOCK_CFG)[0])
    assert_close(dX, f, X, "dX")
    for name in params:
        if name.startswith("b0.") and not name.endswith(".bk"):
            assert_close(grads[name], f, params[name], name)


def test_embed_backward(rng):
    params = block_params(rng)
    ids = np.array([[1, 1, 4], [0, 1, 1]])          # T = 3 < seq_len = 5; id 1 four times
    G = rng.standard_normal((2, 3, D))
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    X, cache = embed_forward(ids, params)
    embed_backward(G, cache, grads)
    f = lambda: pairing(G)(embed_forward(ids, params)[0])
    assert_close(grads["tok_emb"], f, params["tok_emb"], "tok_emb")
    assert_close(grads["pos_emb"], f, params["pos_emb"], "pos_emb")
    assert (grads["pos_emb"][3:] == 0).all()
