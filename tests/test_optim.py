"""AdamW, the decay rule, gradient clipping and the learning-rate schedules."""
import math

import numpy as np
import pytest

from model.config import ModelConfig
from model.optim import AdamW, decays, clip_grad_norm, noam_lr, warmup_cosine_lr
from model.transformer import init_params, loss_and_grads

DECAYED_KINDS = ("wq", "wk", "wv", "wo", "ff1_w", "ff2_w")


def test_decay_rule_covers_every_parameter_exactly_once():
    cfg = ModelConfig(vocab_size=9, num_layers=3)
    names = set(init_params(cfg, np.random.default_rng(0)))
    expected_decayed = {f"b{l}.{k}" for l in range(3) for k in DECAYED_KINDS} | {"head_w"}
    expected_kept = ({f"b{l}.{k}" for l in range(3)
                      for k in ("bq", "bk", "bv", "bo", "ff1_b", "ff2_b", "ln1_g", "ln1_b", "ln2_g", "ln2_b")}
                     | {"head_b", "lnf_g", "lnf_b", "tok_emb", "pos_emb"})
    decayed = {n for n in names if decays(n)}
    kept = {n for n in names if not decays(n)}
    assert decayed == expected_decayed
    assert kept == expected_kept
    assert decayed | kept == names and not decayed & kept
    assert len(names) == 3 * 16 + 6
    # Embeddings are looked up, not multiplied: decay would fade rare characters' rows (optim.py).
    assert not decays("tok_emb") and not decays("pos_emb")


def test_adamw_one_step_by_hand():
    lr, (b1, b2), eps, wd = 0.1, (0.9, 0.999), 1e-8, 0.01
    params = {"b0.wq": np.array([0.5]), "b0.bq": np.array([0.5])}
    grads = {"b0.wq": np.array([0.2]), "b0.bq": np.array([0.2])}
    opt = AdamW(params, lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    opt.step(params, grads)
    m, v = (1 - b1) * 0.2, (1 - b2) * 0.2 ** 2           # 0.02 and 4e-5
    m_hat, v_hat = m / (1 - b1), v / (1 - b2)              # 0.2 and 0.04: the bias corrections undo the start at 0
    adam = m_hat / (math.sqrt(v_hat) + eps)                # ~1: the first step has size lr in every coordinate
    assert params["b0.bq"][0] == pytest.approx(0.5 - lr * adam, rel=1e-15, abs=1e-15)
    assert params["b0.wq"][0] == pytest.approx(0.5 - lr * (adam + wd * 0.5), rel=1e-15, abs=1e-15)
    assert opt.t == 1
    np.testing.assert_allclose(opt.m["b0.wq"], [m], rtol=1e-15)
    np.testing.assert_allclose(opt.v["b0.wq"], [v], rtol=1e-15)


def test_adamw_second_step_uses_bias_corrections_of_step_two():
    lr, (b1, b2), eps = 0.05, (0.9, 0.99), 1e-8
    params = {"x.bq": np.array([1.0])}
    opt = AdamW(params, lr=lr, betas=(b1, b2), eps=eps)
    w = 1.0
    m = v = 0.0
    for t, g in enumerate([0.3, -0.1], start=1):
        opt.step(params, {"x.bq": np.array([g])})
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        w -= lr * (m / (1 - b1 ** t)) / (math.sqrt(v / (1 - b2 ** t)) + eps)
    assert params["x.bq"][0] == pytest.approx(w, rel=1e-14)


def test_weight_decay_only_on_decayed_names():
    cfg = ModelConfig(vocab_size=9, num_layers=1)
    params = init_params(cfg, np.random.default_rng(0))
    for k in params:                                     # no zero entries, so any decay would show
        params[k] = params[k] + 0.5
    before = {k: v.copy() for k, v in params.items()}
    zero = {k: np.zeros_like(v) for k, v in params.items()}
    lr, wd = 0.1, 0.2
    AdamW(params, lr=lr, weight_decay=wd).step(params, zero)   # Adam term 0/(0+eps) = 0: decay alone
    for k in params:
        if decays(k):
            np.testing.assert_allclose(params[k], before[k] * (1 - lr * wd), rtol=1e-15, err_msg=k)
        else:
            np.testing.assert_array_equal(params[k], before[k], err_msg=k)


def test_adamw_lr_override_and_state_round_trip():
    params = {"w.bq": np.array([1.0, -1.0])}
    opt = AdamW(params, lr=1.0)
    opt.step(params, {"w.bq": np.array([1.0, -1.0])}, lr=0.01)
    np.testing.assert_allclose(params["w.bq"], [0.99, -0.99], rtol=1e-6)
    again = AdamW(params)
    again.load_state_dict(opt.state_dict())
    assert again.t == 1 and np.array_equal(again.m["w.bq"], opt.m["w.bq"])
    assert again.m["w.bq"] is not opt.m["w.bq"]           # a copy, not shared state


def test_clip_grad_norm_scales_to_exactly_max_norm_when_above():
    grads = {"a": np.array([3.0, 0.0]), "b": np.array([[4.0]])}     # global norm 5
    total = clip_grad_norm(grads, 1.0)
    assert total == 5.0
    after = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    assert after == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(grads["a"], [0.6, 0.0], rtol=1e-12)
    np.testing.assert_allclose(grads["b"], [[0.8]], rtol=1e-12)


def test_clip_grad_norm_leaves_small_gradients_unchanged():
    grads = {"a": np.array([0.3, 0.0]), "b": np.array([[0.4]])}     # global norm 0.5
    before = {k: v.copy() for k, v in grads.items()}
    assert clip_grad_norm(grads, 1.0) == pytest.approx(0.5, rel=1e-15)
    for k in grads:
        np.testing.assert_array_equal(grads[k], before[k])


def test_noam_lr():
    assert noam_lr(1, 512) == pytest.approx(1.747e-7, rel=1e-3)
    assert noam_lr(4000, 512) == pytest.approx(6.99e-4, rel=1e-3)
    assert noam_lr(4000, 512) > noam_lr(3999, 512) and noam_lr(4000, 512) > noam_lr(4001, 512)   # the peak
    assert noam_lr(16000, 512) == pytest.approx(noam_lr(4000, 512) / 2, rel=1e-12)  # then t^-0.5


def test_warmup_cosine_lr_endpoints():
    kw = dict(max_lr=1e-2, min_lr=1e-3, warmup_steps=10, total_steps=110)
    assert warmup_cosine_lr(1, **kw) == pytest.approx(1e-3)            # 1/10 of the way up
    assert warmup_cosine_lr(10, **kw) == pytest.approx(1e-2)           # the peak ends warm-up
    assert warmup_cosine_lr(60, **kw) == pytest.approx(5.5e-3)         # halfway down the cosine
    assert warmup_cosine_lr(110, **kw) == pytest.approx(1e-3)          # min_lr at the end
    assert warmup_cosine_lr(500, **kw) == pytest.approx(1e-3)          # and after it
    lrs = [warmup_cosine_lr(s, **kw) for s in range(10, 111)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))                   # never rises after warm-up


def test_a_few_adamw_steps_fit_one_batch():
    cfg = ModelConfig(vocab_size=8, seq_len=6, emb_dim=16, num_heads=2, ff_dim=32, num_layers=1)
    params = init_params(cfg, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 8, size=(4, 6))
    targets = np.roll(ids, -1, axis=1)
    opt = AdamW(params, lr=1e-2, weight_decay=0.01)
    losses = []
    for _ in range(30):
        loss, grads = loss_and_grads(params, ids, targets, cfg)
        clip_grad_norm(grads, 1.0)
        opt.step(params, grads)
        losses.append(loss)
    assert losses[-1] < 0.5 * losses[0]
