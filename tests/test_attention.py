"""Multi-head attention: the result against a plain per-head loop, the causal mask forward and
backward, and that the cache holds exactly what mha_backward reads. Gradient checks against
central differences are in test_gradcheck.py."""
import numpy as np
import pytest

from model.attention import (split_heads, merge_heads, causal_mask, mha_forward, mha_backward,
                             attention_forward, attention_backward)
from model.config import ModelConfig
from model.ops import softmax_backward
from tests.conftest import KeyRecorder

D, H = 8, 2
NAMES = ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo")


def make_params(rng, p="a.", d=D, dtype="float64"):
    return {p + n: (rng.standard_normal((d, d)) * 0.5 if n.startswith("w") else rng.standard_normal(d) * 0.1).astype(dtype)
            for n in NAMES}


def reference_mha(Xq, Xkv, params, p, h, mask=None):
    """Head by head, written as plainly as possible."""
    Q = Xq @ params[p + "wq"] + params[p + "bq"]
    K = Xkv @ params[p + "wk"] + params[p + "bk"]
    V = Xkv @ params[p + "wv"] + params[p + "bv"]
    dk = Q.shape[-1] // h
    heads, weights = [], []
    for i in range(h):
        cols = slice(i * dk, (i + 1) * dk)
        S = Q[..., cols] @ np.swapaxes(K[..., cols], -1, -2) / np.sqrt(dk)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        E = np.exp(S - S.max(axis=-1, keepdims=True))
        A = E / E.sum(axis=-1, keepdims=True)
        heads.append(A @ V[..., cols])
        weights.append(A)
    O = np.concatenate(heads, axis=-1)
    return O @ params[p + "wo"] + params[p + "bo"], np.stack(weights, axis=-3)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_split_and_merge_heads_are_inverse_and_take_contiguous_columns(rng):
    X = rng.standard_normal((2, 5, 12))
    Xh = split_heads(X, 3)
    assert Xh.shape == (2, 3, 5, 4)
    for i in range(3):
        np.testing.assert_array_equal(Xh[:, i], X[..., 4 * i:4 * (i + 1)])
    np.testing.assert_array_equal(merge_heads(Xh), X)
    np.testing.assert_array_equal(merge_heads(split_heads(X[0], 3)), X[0])   # one sequence


def test_causal_mask():
    m = causal_mask(4)
    assert m.dtype == bool
    np.testing.assert_array_equal(m, np.tril(np.ones((4, 4), dtype=bool)))
    assert m[2, 2] and m[2, 0] and not m[2, 3]


@pytest.mark.parametrize("shape", [(5, D), (3, 5, D)])
def test_causal_self_attention_matches_per_head_loop(rng, shape):
    X = rng.standard_normal(shape)
    params = make_params(rng)
    out, c = mha_forward(X, X, params, "a.", H, causal_mask(shape[-2]))
    ref_out, ref_A = reference_mha(X, X, params, "a.", H, causal_mask(shape[-2]))
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(c["A"], ref_A, rtol=1e-12, atol=1e-15)


def test_cross_attention_matches_per_head_loop_with_tq_not_tk(rng):
    Xq, Xkv = rng.standard_normal((2, 3, D)), rng.standard_normal((2, 6, D))
    params = make_params(rng)
    out, c = mha_forward(Xq, Xkv, params, "a.", H)
    ref_out, ref_A = reference_mha(Xq, Xkv, params, "a.", H)
    assert out.shape == (2, 3, D) and c["A"].shape == (2, H, 3, 6)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(c["A"], ref_A, rtol=1e-12)


def test_any_mask_is_honoured(rng):
    Xq, Xkv = rng.standard_normal((4, D)), rng.standard_normal((6, D))
    mask = rng.random((4, 6)) < 0.5
    mask[:, 2] = True                             # every query sees at least one key
    params = make_params(rng)
    out, c = mha_forward(Xq, Xkv, params, "a.", H, mask)
    ref_out, _ = reference_mha(Xq, Xkv, params, "a.", H, mask)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-13)
    assert (c["A"][:, ~mask] == 0.0).all()


def test_attention_rows_sum_to_one_and_future_keys_get_exactly_zero(rng):
    cfg = ModelConfig(vocab_size=5, seq_len=6, emb_dim=D, num_heads=H)
    Xn = rng.standard_normal((2, 6, D))
    _, c = attention_forward(Xn, make_params(rng), "a.", cfg)
    A = c["A"]
    np.testing.assert_allclose(A.sum(axis=-1), 1.0, rtol=0, atol=1e-15)
    future = ~causal_mask(6)
    assert (A[..., future] == 0.0).all()         # exactly: exp(-inf) is 0
    assert (A[..., ~future] > 0).all()


def test_masked_scores_get_exactly_zero_gradient(rng):
    """dS = softmax_backward(dA, A) is 0 wherever A is 0, whatever flows in."""
    cfg = ModelConfig(vocab_size=5, seq_len=6, emb_dim=D, num_heads=H)
    _, c = attention_forward(rng.standard_normal((2, 6, D)), make_params(rng), "a.", cfg)
    dA = rng.standard_normal(c["A"].shape) * 1e3
    dS = softmax_backward(dA, c["A"])
    future = ~causal_mask(6)
    assert (dS[..., future] == 0.0).all()
    # Visible scores do get gradient, except in row 0: one visible key, weight 1 whatever its score.
    visible = ~future
    visible[0] = False
    assert (dS[..., visible] != 0.0).all()
    assert np.abs(dS[..., 0, :]).max() < 1e-12


def test_earlier_outputs_send_exactly_zero_gradient_to_later_inputs(rng):
    cfg = ModelConfig(vocab_size=5, seq_len=6, emb_dim=D, num_heads=H)
    params = make_params(rng)
    Xn = rng.standard_normal((2, 6, D))
    _, c = attention_forward(Xn, params, "a.", cfg)
    dAtt = rng.standard_normal((2, 6, D))
    dAtt[:, 3:] = 0.0                            # a loss on positions 0..2 only
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXn = attention_backward(dAtt, c, params, "a.", grads)
    assert (dXn[:, 3:] == 0.0).all()
    assert (np.abs(dXn[:, :3]) > 0).all()


def test_changing_a_later_input_leaves_earlier_outputs_bit_identical(rng):
    cfg = ModelConfig(vocab_size=5, seq_len=6, emb_dim=D, num_heads=H)
    params = make_params(rng)
    Xn = rng.standard_normal((2, 6, D))
    out, _ = attention_forward(Xn, params, "a.", cfg)
    Xn2 = Xn.copy()
    Xn2[:, 4] += 10.0
    out2, _ = attention_forward(Xn2, params, "a.", cfg)
    np.testing.assert_array_equal(out2[:, :4], out[:, :4])
    assert not np.allclose(out2[:, 4:], out[:, 4:])


@pytest.mark.parametrize("self_attention", [True, False])
def test_mha_cache_is_read_completely(rng, self_attention):
    params = make_params(rng)
    Xq = rng.standard_normal((2, 4, D))
    Xkv = Xq if self_attention else rng.standard_normal((2, 5, D))
    out, c = mha_forward(Xq, Xkv, params, "a.", H, causal_mask(4) if self_attention else None)
    rec = KeyRecorder(c)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXq, dXkv = mha_backward(np.ones_like(out), rec, params, "a.", grads)
    assert rec.read == set(c) == {"Xq", "Xkv", "Qh", "Kh", "Vh", "A", "O"}
    assert dXq.shape == Xq.shape and dXkv.shape == Xkv.shape
    assert all(np.abs(grads[k]).sum() > 0 for k in grads if k != "a.bk")   # every other gradient arrived


def test_float32_stays_float32(rng):
    params = make_params(rng, dtype="float32")
    X = rng.standard_normal((2, 4, D)).astype(np.float32)
    out, c = mha_forward(X, X, params, "a.", H, causal_mask(4))
    assert out.dtype == np.float32
    assert all(v.dtype == np.float32 for v in c.values())
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXq, dXkv = mha_backward(np.ones_like(out), c, params, "a.", grads)
    assert dXq.dtype == dXkv.dtype == np.float32
    assert all(g.dtype == np.float32 for g in grads.values())
