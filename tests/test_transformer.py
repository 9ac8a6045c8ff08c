"""The decoder-only language model: a hand-worked feed-forward example, causality, batching,
caches, input checks and float32. Gradient checks against central differences are in
test_gradcheck.py."""
import numpy as np
import pytest

import model.transformer as transformer
from model import ModelInputError
from model.config import ModelConfig
from model.ops import linear_backward, relu_backward
from model.transformer import (init_params, check_ids, forward, loss_and_grads, ffn_forward, ffn_backward,
                               block_forward, block_backward)
from tests.conftest import KeyRecorder
from tests.fixtures import (FFN_WORKED_XN, FFN_WORKED_W1, FFN_WORKED_B1, FFN_WORKED_W2, FFN_WORKED_B2,
                            FFN_WORKED_DOUT, ffn_worked_params)

def test_ffn_worked_example():
    Xn, W1, b1, W2, b2, dOut = (FFN_WORKED_XN, FFN_WORKED_W1, FFN_WORKED_B1,
                                FFN_WORKED_W2, FFN_WORKED_B2, FFN_WORKED_DOUT)
    params = ffn_worked_params()

    out, cache = ffn_forward(Xn, params, "b0.")
    Z = cache["Xn"] @ W1 + b1                          # the pre-activation, from the cache's input
    np.testing.assert_array_equal(Z, [[1.0, -0.5, -1.0]])
    np.testing.assert_array_equal(cache["A"], [[1.0, 0.0, 0.0]])       # ReLU keeps the first only
    np.testing.assert_array_equal(cache["positive"], [[True, False, False]])
    np.testing.assert_array_equal(out, [[1.0, 2.0]])   # A W2 + b2 = [2, 0] + [-1, 2]

    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXn = ffn_backward(dOut, cache, params, "b0.", grads)
    # The intermediates, computed the way ffn_backward computes them:
    dA, dW2, db2 = linear_backward(dOut, cache["A"], W2)
    dZ = relu_backward(dA, cache["positive"])
    np.testing.assert_array_equal(dA, [[2.0, 0.5, 0.5]])             # dOut W2^T
    np.testing.assert_array_equal(dZ, [[2.0, 0.0, 0.0]])             # blocked where Z <= 0
    np.testing.assert_array_equal(dXn, [[2.0, 0.0]])                 # dZ W1^T
    np.testing.assert_array_equal(grads["b0.ff2_w"], [[1.0, 0.5], [0.0, 0.0], [0.0, 0.0]])   # A^T dOut
    np.testing.assert_array_equal(grads["b0.ff2_b"], [1.0, 0.5])
    np.testing.assert_array_equal(grads["b0.ff1_w"], [[2.0, 0.0, 0.0], [-2.0, 0.0, 0.0]])    # Xn^T dZ
    np.testing.assert_array_equal(grads["b0.ff1_b"], [2.0, 0.0, 0.0])


# ---------------------------------------------------------------- shapes and parameters

CFG = ModelConfig(vocab_size=11, seq_len=8, emb_dim=16, num_heads=4, ff_dim=24, num_layers=2)


def batch(cfg, B, T, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, cfg.vocab_size, size=(B, T)), rng.integers(0, cfg.vocab_size, size=(B, T))


def test_init_params_names_shapes_and_values():
    params = init_params(CFG, np.random.default_rng(0))
    d, F, V = CFG.emb_dim, CFG.ff_dim, CFG.vocab_size
    expected = {"tok_emb": (V, d), "pos_emb": (CFG.seq_len, d), "lnf_g": (d,), "lnf_b": (d,),
                "head_w": (d, V), "head_b": (V,)}
    for l in range(CFG.num_layers):
        b = f"b{l}."
        expected.update({b + "ln1_g": (d,), b + "ln1_b": (d,), b + "ln2_g": (d,), b + "ln2_b": (d,),
                         b + "ff1_w": (d, F), b + "ff1_b": (F,), b + "ff2_w": (F, d), b + "ff2_b": (d,)})
        expected.update({b + "w" + w: (d, d) for w in "qkvo"})
        expected.update({b + "b" + w: (d,) for w in "qkvo"})
    assert {k: v.shape for k, v in params.items()} == expected
    assert all(v.dtype == np.float64 for v in params.values())
    assert all((params[k] == 1).all() for k in params if k.endswith("_g"))
    assert all((params[k] == 0).all() for k in params if k.endswith(("_b", ".bq", ".bk", ".bv", ".bo")))
    assert abs(params["tok_emb"].std() - CFG.emb_std) < 0.3 * CFG.emb_std
    # the same seed gives the same parameters
    again = init_params(CFG, np.random.default_rng(0))
    assert all(np.array_equal(params[k], again[k]) for k in params)


def test_forward_shapes_for_one_sequence_and_a_batch():
    params = init_params(CFG, np.random.default_rng(0))
    ids, _ = batch(CFG, 3, 5)
    logits, c = forward(params, ids, CFG)
    assert logits.shape == (3, 5, CFG.vocab_size) and logits.dtype == np.float64
    logits1, _ = forward(params, ids[1], CFG)
    assert logits1.shape == (5, CFG.vocab_size)
    np.testing.assert_allclose(logits1, logits[1], rtol=1e-12, atol=1e-13)
    logits_list, _ = forward(params, ids[1].tolist(), CFG)            # a list of ints is fine
    np.testing.assert_array_equal(logits_list, logits1)


def test_loss_at_initialisation_is_near_log_vocab():
    cfg = ModelConfig(vocab_size=50, seq_len=8, emb_dim=16, num_heads=2, ff_dim=32, num_layers=1)
    params = init_params(cfg, np.random.default_rng(0))
    params["head_w"] *= 0.01                  # near-uniform predictions
    ids, targets = batch(cfg, 4, 8)
    loss, _ = loss_and_grads(params, ids, targets, cfg)
    assert abs(loss - np.log(50)) < 0.01


# ---------------------------------------------------------------- batching

def test_batched_equals_per_sequence():
    params = init_params(CFG, np.random.default_rng(0))
    ids, targets = batch(CFG, 3, CFG.seq_len)
    runs = [loss_and_grads(params, x, y, CFG) for x, y in [(ids, targets), *zip(ids, targets)]]
    (loss, grads), per_sequence = runs[0], runs[1:]
    assert loss == pytest.approx(np.mean([l for l, _ in per_sequence]), abs=1e-12)
    for name in params:
        mean = np.mean([g[name] for _, g in per_sequence], axis=0)
        np.testing.assert_allclose(grads[name], mean, rtol=1e-12, atol=1e-12, err_msg=name)


def test_shorter_sequences_use_the_first_positions_only():
    params = init_params(CFG, np.random.default_rng(0))
    ids, targets = batch(CFG, 2, 5)
    _, grads = loss_and_grads(params, ids, targets, CFG)
    assert (grads["pos_emb"][5:] == 0).all() and (np.abs(grads["pos_emb"][:5]).sum(axis=-1) > 0).all()
    unused = np.setdiff1d(np.arange(CFG.vocab_size), ids)
    assert (grads["tok_emb"][unused] == 0).all()


# ---------------------------------------------------------------- causality

def test_changing_a_future_token_leaves_earlier_logits_bit_identical():
    params = init_params(CFG, np.random.default_rng(0))
    ids, _ = batch(CFG, 2, CFG.seq_len)
    logits, _ = forward(params, ids, CFG)
    changed = ids.copy()
    changed[:, 5] = (changed[:, 5] + 1) % CFG.vocab_size
    logits2, _ = forward(params, changed, CFG)
    np.testing.assert_array_equal(logits2[:, :5], logits[:, :5])
    assert not np.allclose(logits2[:, 5:], logits[:, 5:])


def test_earlier_losses_send_exactly_zero_gradient_to_later_positions(monkeypatch):
    """Keep only the loss on positions 0..3 (by zeroing dlogits after them): the gradient on every
    later position's embedding rows is then exactly 0, through every block."""
    params = init_params(CFG, np.random.default_rng(0))
    ids = np.array([[1, 2, 3, 4, 9, 9, 10, 10], [4, 3, 2, 1, 9, 10, 10, 9]])
    targets, _ = batch(CFG, 2, CFG.seq_len)
    real = transformer.cross_entropy_backward

    def earlier_only(dloss, c):
        dlogits = real(dloss, c)
        dlogits[..., 4:, :] = 0.0
        return dlogits

    monkeypatch.setattr(transformer, "cross_entropy_backward", earlier_only)
    _, grads = loss_and_grads(params, ids, targets, CFG)
    assert (grads["pos_emb"][4:] == 0.0).all()
    assert (grads["tok_emb"][[9, 10]] == 0.0).all()          # tokens seen only at positions 4..7
    assert (np.abs(grads["pos_emb"][:4]).sum(axis=-1) > 0).all()
    assert (np.abs(grads["tok_emb"][[1, 2, 3, 4]]).sum(axis=-1) > 0).all()


# ---------------------------------------------------------------- caches hold exactly what backward reads

class NestedKeyRecorder(KeyRecorder):
    """A KeyRecorder whose nested caches are wrapped too."""

    def __init__(self, c, recorders):
        super().__init__({k: wrap(v, recorders) for k, v in c.items()})
        recorders.append(self)


def wrap(value, recorders):
    if isinstance(value, dict):
        return NestedKeyRecorder(value, recorders)
    if isinstance(value, list):
        return [wrap(v, recorders) for v in value]
    return value


def assert_all_read(recorders):
    assert recorders
    for rec in recorders:
        assert rec.read == set(rec), f"never read: {set(rec) - rec.read}"


def test_ffn_and_block_caches_are_read_completely():
    params = init_params(CFG, np.random.default_rng(0))
    X = np.random.default_rng(1).standard_normal((2, 5, CFG.emb_dim))
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    recorders = []
    out, c = ffn_forward(X, params, "b0.")
    assert set(c) == {"Xn", "A", "positive"}
    ffn_backward(np.ones_like(out), wrap(c, recorders), params, "b0.", grads)
    assert_all_read(recorders)
    recorders = []
    Y, c = block_forward(X, params, 1, CFG)
    assert set(c) == {"ln1", "att", "ln2", "ff"}
    block_backward(np.ones_like(Y), wrap(c, recorders), params, 1, grads)
    assert len(recorders) == 5                  # the block's cache and its four sub-caches
    assert_all_read(recorders)


def test_model_cache_is_read_completely(monkeypatch):
    params = init_params(CFG, np.random.default_rng(0))
    ids, targets = batch(CFG, 2, 6)
    recorders = []
    real = transformer.forward

    def recording_forward(*args, **kwargs):
        logits, c = real(*args, **kwargs)
        return logits, wrap(c, recorders)

    monkeypatch.setattr(transformer, "forward", recording_forward)
    loss_and_grads(params, ids, targets, CFG)
    assert set(recorders[-1]) == {"emb", "blocks", "lnf", "Xf"}
    assert len(recorders) == 1 + 1 + 5 * CFG.num_layers       # model, lnf, 5 per block
    assert_all_read(recorders)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("bad, words", [
    (np.array([[1, 2, 11]]), ["ids[0, 2] = 11", "out of range", "vocab_size 11"]),
    (np.array([3, -1]), ["ids[1] = -1", "out of range", "[0, 10]"]),
    (np.zeros((1, 9), dtype=int), ["T = 9", "seq_len = 8", "last 8 ids"]),
    (np.zeros((1, 0), dtype=int), ["T = 0", "between 1 and"]),
    (np.array([[1.0, 2.0]]), ["must be integers", "float64"]),
    (np.zeros((1, 2, 3), dtype=int), ["shape (T,) or (B, T)", "(1, 2, 3)"]),
])
def test_bad_ids_are_refused_with_a_message_that_names_the_problem(bad, words):
    params = init_params(CFG, np.random.default_rng(0))
    with pytest.raises(ModelInputError) as err:
        forward(params, bad, CFG)
    for word in words:
        assert word in str(err.value)
    assert isinstance(err.value, ValueError)      # callers catching ValueError see it too


def test_bad_targets_are_refused():
    params = init_params(CFG, np.random.default_rng(0))
    ids, targets = batch(CFG, 2, 6)
    with pytest.raises(ModelInputError, match=r"targets shape \(2, 5\) must equal ids shape \(2, 6\)"):
        loss_and_grads(params, ids, targets[:, :5], CFG)
    with pytest.raises(ModelInputError, match=r"targets shape \(6, 2\) must equal ids shape \(2, 6\)"):
        loss_and_grads(params, ids, targets.reshape(6, 2), CFG)       # as many targets, wrong shape
    bad = targets.copy()
    bad[1, 3] = 99
    with pytest.raises(ModelInputError, match=r"targets\[1, 3\] = 99 is out of range"):
        loss_and_grads(params, ids, bad, CFG)
    with pytest.raises(ModelInputError, match="targets must be integers"):
        loss_and_grads(params, ids, targets.astype(float), CFG)


def test_check_ids_passes_good_ids_through():
    ids = check_ids([[0, 10, 3]], CFG)
    assert isinstance(ids, np.ndarray) and ids.tolist() == [[0, 10, 3]]


@pytest.mark.parametrize("kwargs, words", [
    (dict(emb_dim=30, num_heads=4), ["emb_dim (30) must be divisible by num_heads (4)", "try num_heads in", "[1, 2, 3, 5, 6, 10, 15, 30]"]),
    (dict(num_layers=0), ["num_layers must be a positive integer", "got 0"]),
    (dict(seq_len=4.0), ["seq_len must be a positive integer"]),
    (dict(dtype="float16"), ["dtype must be one of", "float16"]),
    (dict(ln_eps=0.0), ["ln_eps must be positive"]),
])
def test_bad_config_is_refused(kwargs, words):
    with pytest.raises(ModelInputError) as err:
        ModelConfig(vocab_size=11, **kwargs)
    for word in words:
        assert word in str(err.value)


# ---------------------------------------------------------------- float32

def test_float32_runs_in_float32():
    cfg = ModelConfig(vocab_size=11, seq_len=8, emb_dim=16, num_heads=4, ff_dim=24, num_layers=2, dtype="float32")
    params = init_params(cfg, np.random.default_rng(0))
    assert all(v.dtype == np.float32 for v in params.values())
    ids, targets = batch(cfg, 3, 8)
    logits, _ = forward(params, ids, cfg)
    assert logits.dtype == np.float32
    loss, grads = loss_and_grads(params, ids, targets, cfg)
    assert np.isfinite(loss)
    assert {k: g.dtype for k, g in grads.items()} == {k: np.dtype(np.float32) for k in params}
    # and agrees with float64 to float32 precision
    params64 = {k: v.astype(np.float64) for k, v in params.items()}
    loss64, grads64 = loss_and_grads(params64, ids, targets, CFG)
    assert loss == pytest.approx(loss64, rel=1e-5)
    np.testing.assert_allclose(grads["b0.wq"], grads64["b0.wq"], rtol=1e-3, atol=1e-6)
