"""The page "One training step of the 2017 transformer" (seq2seq-step): every number of its tables
against a direct call of the model, the invariants of the hand derivation, and the page's sections.

The example module quotes the derivation's typed numbers (HAND) and hand-sets the toy's weights;
these tests recompute each step with model functions and plain NumPy formulas, and compare."""
import json
import math
import re
import sys

import numpy as np
import pytest

from model import seq2seq as s2s
from model.attention import causal_mask, merge_heads, mha_forward, split_heads
from model.transformer import ffn_backward
from model.ops import (cross_entropy_forward, cross_entropy_backward, layer_norm_forward, layer_norm_backward,
                       smoothed_targets)
from model.optim import AdamW, noam_lr
from site_builder.run.examples import load_example, fmt_array, fmt_number
from site_builder.render.plots import SUBSCRIPT, SUPERSCRIPT
from tests.conftest import ROOT

SLUG = "seq2seq-step"
CONCEPTS = ["toy", "embed", "enc-attention", "add-norm", "ffn", "masked", "cross", "output", "logit-grad",
            "paths", "adam"]
HEADINGS = ["What is it?", "Why does the model need it?", "Mathematics", "What does each symbol mean?",
            "Tiny numerical example", "Tensor shapes", "Actual implementation", "Code and math connection",
            "Where is it used?"]


def example(name):
    return load_example(ROOT, f"seq2seq_step:{name}")()


@pytest.fixture(scope="module")
def mod():
    """The example module: its quoted hand values, toy config and hand-set weights."""
    return sys.modules[load_example(ROOT, "seq2seq_step:toy_params").__module__]


@pytest.fixture(scope="module")
def runs(mod):
    """Both runs, computed here with direct calls: the derivation's rounded inputs, and the ids."""
    cfg, params = mod.toy_cfg(), mod.toy_params()
    X, Y = mod.hand("X"), mod.hand("Y")
    memory, c_enc = s2s.encoder_forward(X, params, cfg, trace=True)
    logits_h, c_dec = s2s.decoder_forward(Y, memory, params, cfg, trace=True)
    hand = s2s.flat_trace(dict(enc=dict(emb=dict(trace=dict(X=X)), enc=c_enc),
                               dec=dict(emb=dict(trace=dict(X=Y)), dec=c_dec)))
    logits_e, c = s2s.forward(params, mod.SRC_IDS, mod.TGT_IN, cfg, trace=True)
    return dict(hand=hand, exact=s2s.flat_trace(c), logits_hand=logits_h, logits_exact=logits_e,
                cfg=cfg, params=params)


def softmax_rows(S):
    E = np.exp(S - S.max(-1, keepdims=True))
    return E / E.sum(-1, keepdims=True)


def layer_norm_rows(X):
    """LayerNorm with gamma 1, beta 0, epsilon 0: the derivation's plain formula."""
    mu = X.mean(-1, keepdims=True)
    return (X - mu) / np.sqrt(((X - mu) ** 2).mean(-1, keepdims=True))


def cells(block, column):
    i = block["headers"].index(column)
    return {r[1]: r[i] for r in block["rows"]}           # keyed by the Code column


def check_two_runs(block, expected_hand, expected_exact):
    """Every listed code row shows the direct values, in both runs."""
    h = cells(block, "This code, from the derivation's inputs")
    e = cells(block, "This code, exact inputs")
    for code, value in expected_hand.items():
        assert h[code] == fmt_array(value), code
    for code, value in expected_exact.items():
        assert e[code] == fmt_array(value), code


# ---------------------------------------------------------------- 0. the toy

def test_toy_config_and_weights(mod):
    cfg, p = mod.toy_cfg(), mod.toy_params()
    assert cfg.head_dim == cfg.d_model // cfg.num_heads
    assert (cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.num_enc_layers, cfg.num_dec_layers) == (4, 2, 8, 1, 1)
    assert cfg.ln_eps == 0.0 and cfg.tie_output is False and mod.TGT_VOCAB[mod.AM] == "am"
    X = mod.hand("X")
    np.testing.assert_array_equal(split_heads(X @ p["enc0.wq"], cfg.num_heads)[0], X @ mod.hand("enc_wqk_head1"))
    np.testing.assert_array_equal(split_heads(X @ p["enc0.wq"], cfg.num_heads)[1], X @ mod.hand("enc_wqk_head1"))
    assert list(p) == s2s.param_names(cfg)
    res = example("toy_weights")
    mats = {b["name"]: b for b in res.blocks if b["kind"] == "matrix"}
    for name, b in mats.items():
        key = re.fullmatch(r'params\["(.+)"\]', name).group(1)
        assert b["rows"] == [[fmt_number(x) for x in row] for row in np.atleast_2d(p[key])], name
        assert b["shape"] == str(p[key].shape)


# ---------------------------------------------------------------- 1. embeddings and positions

def test_embedding_and_positions(mod, runs):
    cfg, t = runs["cfg"], runs["exact"]
    d, S = cfg.d_model, len(mod.SRC_IDS)
    pos, two_i = np.arange(S)[:, None], np.arange(0, d, 2)
    PE = t["src.PE"]
    np.testing.assert_allclose(PE[:, 0::2], np.sin(pos / 10000 ** (two_i / d)), rtol=0, atol=1e-15)
    np.testing.assert_allclose(PE[:, 1::2], np.cos(pos / 10000 ** (two_i / d)), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(t["src.X"], runs["params"]["src_emb"][mod.SRC_IDS] * math.sqrt(d) + PE)
    assert np.array_equal(mod.hand("X"), t["src.Es"])     # the derivation's X: the scaled embeddings, PE dropped
    assert np.array_equal(mod.hand("Y"), t["tgt.Es"])
    np.testing.assert_array_equal(t["src.X"][0], np.ones(d))   # the exact sum embed(je) + PE_0
    res = example("embed_inputs")
    first, second = res.blocks
    code = cells(first, "This code")
    assert code["src.PE[1]"] == fmt_array(PE[1]) and code["src.Es[0]"] == fmt_array(t["src.Es"][0])
    assert code['c["scale"]'] == fmt_number(math.sqrt(d))
    assert cells(second, "This code")["src.X"] == fmt_array(t["src.X"])
    assert cells(second, "This code")["np.abs(src.X - X).max()"] == fmt_number(np.abs(t["src.X"] - mod.hand("X")).max())
    assert cells(second, "This code")["np.array_equal(X, src.Es)"] == "yes"


# ---------------------------------------------------------------- 2. encoder self-attention

def test_encoder_attention(mod, runs):
    cfg, p = runs["cfg"], runs["params"]
    dk = cfg.head_dim
    expected = {}
    for name in ("hand", "exact"):
        t = runs[name]
        X = t["enc0.X"]
        Q, K, V = X @ p["enc0.wq"], X @ p["enc0.wk"], X @ p["enc0.wv"]
        Q1, K1, V1 = Q[:, :dk], K[:, :dk], V[:, :dk]          # head 1: the first d_k columns
        S1 = Q1 @ K1.T / math.sqrt(dk)
        A1 = softmax_rows(S1)
        np.testing.assert_allclose(t["enc0.att.S"][0], S1, rtol=1e-14)
        np.testing.assert_allclose(t["enc0.att.A"][0], A1, rtol=1e-14)
        np.testing.assert_allclose(t["enc0.att.A"].sum(-1), 1.0, rtol=0, atol=1e-15)
        np.testing.assert_allclose(t["enc0.att.Oh"][0], A1 @ V1, rtol=1e-14)
        out, _ = mha_forward(X, X, p, "enc0.", cfg.num_heads)
        np.testing.assert_allclose(t["enc0.att.out"], out, rtol=1e-14)
        np.testing.assert_allclose(out, np.hstack([A1 @ V1, A1 @ V1]) @ p["enc0.wo"], rtol=1e-14)
        expected[name] = {"enc0.att.Qh[0]": Q1, "enc0.att.Kh[0]": K1, "enc0.att.Vh[0]": V1,
                          "enc0.att.QK[0]": Q1 @ K1.T, "enc0.att.S[0]": S1, "enc0.att.A[0]": A1,
                          "enc0.att.Oh[0]": A1 @ V1, "enc0.att.out": out,
                          "np.exp(enc0.att.S[0, 0, 0])": np.exp(S1[0, 0])}
    a = 1 / (1 + math.exp(-2 * math.sqrt(2)))              # the derivation's 0.944 is sigmoid(2 sqrt 2)
    np.testing.assert_allclose(runs["hand"]["enc0.att.A"][0], [[a, 1 - a], [1 - a, a]], rtol=1e-14)
    res = example("encoder_attention")
    check_two_runs(res.blocks[0], expected["hand"], expected["exact"])
    assert cells(res.blocks[1], "This code")["math.sqrt(Qh.shape[-1])"] == fmt_number(math.sqrt(dk))


# ---------------------------------------------------------------- 3. add & norm

def test_add_norm(mod, runs):
    for name in ("hand", "exact"):
        t = runs[name]
        X1 = t["enc0.X"] + t["enc0.att.out"]
        np.testing.assert_array_equal(t["enc0.X1"], X1)
        mu = X1.mean(-1)
        var = ((X1 - mu[:, None]) ** 2).mean(-1)
        np.testing.assert_allclose(t["enc0.Xn1"], (X1 - mu[:, None]) / np.sqrt(var[:, None]), rtol=1e-13)
        np.testing.assert_allclose(t["enc0.Xn1"].mean(-1), 0.0, atol=1e-14)
        np.testing.assert_allclose(t["enc0.Xn1"].var(-1), 1.0, rtol=1e-14)
        block = example("add_norm").blocks[0]
        col = "This code, from the derivation's inputs" if name == "hand" else "This code, exact inputs"
        c = cells(block, col)
        assert c["mu[0]"] == fmt_number(mu[0]) and c["var[0]"] == fmt_number(var[0])
        assert c["1 / s[0]"] == fmt_number(math.sqrt(var[0])) and c["enc0.Xn1"] == fmt_array(t["enc0.Xn1"])
    np.testing.assert_allclose(runs["hand"]["enc0.Xn1"], mod.hand("LN1"), rtol=0, atol=1e-15)


# ---------------------------------------------------------------- 4. feed-forward

def test_feed_forward(mod, runs):
    p = runs["params"]
    expected = {}
    for name in ("hand", "exact"):
        t = runs[name]
        Z = t["enc0.Xn1"] @ p["enc0.ff1_w"] + p["enc0.ff1_b"]
        ff = np.maximum(0, Z) @ p["enc0.ff2_w"] + p["enc0.ff2_b"]
        np.testing.assert_allclose(t["enc0.ff.out"], ff, rtol=1e-14)
        np.testing.assert_allclose(t["enc0.Xn2"], layer_norm_rows(t["enc0.Xn1"] + ff), rtol=1e-13, atol=1e-15)
        expected[name] = {"enc0.ff.Z[0]": Z[0], "enc0.ff.A[0]": np.maximum(0, Z[0]), "enc0.ff.out[0]": ff[0],
                          "enc0.Xn2": t["enc0.Xn2"]}
    np.testing.assert_allclose(runs["hand"]["enc0.Xn2"], mod.hand("ENC"), rtol=0, atol=1e-15)
    check_two_runs(example("feed_forward").blocks[0], expected["hand"], expected["exact"])


# ---------------------------------------------------------------- 5. masked self-attention

def test_masked_attention(mod, runs):
    for name in ("hand", "exact"):
        t = runs[name]
        T = t["dec0.Y"].shape[0]
        np.testing.assert_array_equal(t["dec0.self.mask"], np.tril(np.ones((T, T), dtype=bool)))
        assert np.all(np.isneginf(t["dec0.self.S_masked"][:, ~causal_mask(T)]))
        assert np.all(t["dec0.self.A"][:, ~causal_mask(T)] == 0.0)          # exactly 0, not merely small
        np.testing.assert_allclose(t["dec0.self.A"][:, 1], 0.5, rtol=0, atol=0)   # W_Q = 0: uniform over s <= t
        np.testing.assert_allclose(t["dec0.Yn1"], layer_norm_rows(t["dec0.Y"] + t["dec0.self.out"]), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(runs["hand"]["dec0.Yn1"], mod.hand("DEC1"), rtol=0, atol=1e-15)
    block = example("masked_attention").blocks[0]
    check_two_runs(block, {"dec0.self.A[0, 1]": [0.5, 0.5], "dec0.Yn1": runs["hand"]["dec0.Yn1"]},
                   {"dec0.Yn1": runs["exact"]["dec0.Yn1"]})


# ---------------------------------------------------------------- 6. cross-attention and h

def test_cross_attention(mod, runs):
    cfg, p = runs["cfg"], runs["params"]
    dk = cfg.head_dim
    expected = {}
    for name in ("hand", "exact"):
        t = runs[name]
        Q1 = (t["dec0.Yn1"] @ p["dec0.cross.wq"])[:, :dk]       # queries from the decoder
        K1 = (t["enc0.Xn2"] @ p["dec0.cross.wk"])[:, :dk]       # keys and values from the encoder's memory
        V1 = (t["enc0.Xn2"] @ p["dec0.cross.wv"])[:, :dk]
        A1 = softmax_rows(Q1 @ K1.T / math.sqrt(dk))
        np.testing.assert_allclose(t["dec0.cross.A"][0], A1, rtol=1e-14)
        out, _ = mha_forward(t["dec0.Yn1"], t["enc0.Xn2"], p, "dec0.cross.", cfg.num_heads)
        np.testing.assert_allclose(t["dec0.cross.out"], out, rtol=1e-14)
        np.testing.assert_allclose(t["dec0.Yn2"], layer_norm_rows(t["dec0.Yn1"] + out), rtol=1e-13, atol=1e-15)
        expected[name] = {"dec0.cross.Qh[0]": Q1, "dec0.cross.Kh[0]": K1, "dec0.cross.Vh[0]": V1,
                          "dec0.cross.A[0]": A1, "dec0.cross.Oh[0]": A1 @ V1, "dec0.cross.out": out}
    a = 1 / (1 + math.exp(-2 * math.sqrt(2)))
    np.testing.assert_allclose(runs["hand"]["dec0.cross.Oh"][0], [[2 * a - 1, 1 - 2 * a], [1 - 2 * a, 2 * a - 1]], rtol=1e-14)
    check_two_runs(example("cross_attention").blocks[0], expected["hand"], expected["exact"])


def test_stated_h_is_not_a_layer_norm_output(mod, runs):
    h = mod.hand("h")
    assert h.var() == 0.5                                    # the variance of the asserted h
    ln_h, _ = layer_norm_forward(h[None], np.ones(4), np.zeros(4), 0.0)
    assert not np.allclose(ln_h[0], h)
    for name in ("hand", "exact"):
        H = runs[name]["dec0.Yn3"]
        again, _ = layer_norm_forward(H, np.ones(4), np.zeros(4), 0.0)
        np.testing.assert_allclose(again, H, rtol=1e-13, atol=1e-15)   # LayerNorm(LayerNorm(x)) = LayerNorm(x)
        np.testing.assert_allclose(H.var(-1), 1.0, rtol=1e-14)
    res = example("decoder_output")
    check_two_runs(res.blocks[0], {"dec0.Yn3[1]": runs["hand"]["dec0.Yn3"][1]}, {"dec0.Yn3[1]": runs["exact"]["dec0.Yn3"][1]})
    stated = cells(res.blocks[1], "This code")
    assert stated["var"] == fmt_number(0.5) and stated["layer_norm_forward(h, ...)"] == fmt_array(ln_h[0])
    assert stated["np.allclose(LayerNorm(h), h)"] == "no"


# ---------------------------------------------------------------- 7. output and loss

def test_output_and_loss_from_stated_h(mod, runs):
    cfg, p = runs["cfg"], runs["params"]
    h = mod.hand("h")
    z = h @ p["out_w"] + p["out_b"]
    logits, _ = s2s.output_forward(h[None], p, cfg)
    np.testing.assert_array_equal(logits[0], z)
    P = np.exp(z) / np.exp(z).sum()
    q = np.full(4, cfg.label_smoothing / 4)
    q[mod.AM] += 1 - cfg.label_smoothing
    np.testing.assert_allclose(smoothed_targets(np.array([mod.AM]), 4, cfg.label_smoothing)[0], q, rtol=1e-15)
    loss, c = cross_entropy_forward(logits, np.array([mod.AM]), cfg.label_smoothing)
    assert loss == pytest.approx(-(q * np.log(P)).sum(), rel=1e-14)
    plain, _ = cross_entropy_forward(logits, np.array([mod.AM]), 0.0)
    assert plain == pytest.approx(-np.log(P[mod.AM]), rel=1e-14)
    np.testing.assert_allclose(c["P"][0], P, rtol=1e-14)
    code = cells(example("output_and_loss").blocks[0], "This code")
    assert code['c["P"][0]'] == fmt_array(P) and code["cross_entropy_forward(logits, [am], 0.1)"] == fmt_number(loss)
    assert code["cross_entropy_forward(logits, [am], 0.0)"] == fmt_number(plain)
    assert code['c["q"][0]'] == fmt_array(q) and code["logp[0]"] == fmt_array(np.log(P))


def test_loss_is_the_mean_over_positions(mod, runs):
    cfg, p = runs["cfg"], runs["params"]
    loss, _ = s2s.loss_and_grads(p, mod.SRC_IDS, mod.TGT_IN, mod.TGT_OUT, cfg)
    per = [cross_entropy_forward(runs["logits_exact"][t:t + 1], mod.TGT_OUT[t:t + 1], cfg.label_smoothing)[0]
           for t in range(len(mod.TGT_OUT))]
    assert loss == pytest.approx(np.mean(per), rel=1e-14)
    res = example("output_and_loss")
    other = cells(res.blocks[1], "Exact inputs")
    assert other["loss_and_grads(params, src, tgt_in, tgt_out, cfg)"] == fmt_number(loss)
    assert other["cross_entropy_forward(logits[1:2], ...)"] == fmt_number(per[mod.SCORED])
    assert cells(res.blocks[1], "From the derivation's inputs")["out.H[1]"] == fmt_array(runs["hand"]["dec0.Yn3"][1])
    # tied, the output layer would be the target table, which is not the derivation's W_out = I
    tied, _ = s2s.output_forward(mod.hand("h")[None], p, mod.toy_cfg(tie_output=True))
    np.testing.assert_allclose(tied[0], mod.hand("h") @ p["tgt_emb"].T)
    assert cells(res.blocks[2], "z from the stated h")["output_forward(h, params, tie_output=True)"] == fmt_array(tied[0])


# ---------------------------------------------------------------- 8. backward at the logits

def test_logit_gradient(mod, runs):
    cfg, p = runs["cfg"], runs["params"]
    h = mod.hand("h")[None]
    logits, c_out = s2s.output_forward(h, p, cfg)
    _, c = cross_entropy_forward(logits, np.array([mod.AM]), cfg.label_smoothing)
    dz = cross_entropy_backward(1.0, c)
    np.testing.assert_allclose(dz, c["P"] - c["q"], rtol=1e-15)
    assert abs(dz.sum()) < 1e-15                                             # the logit gradient sums to 0
    grads = {k: np.zeros_like(v) for k, v in p.items()}
    dH = s2s.output_backward(dz, c_out, p, grads)
    np.testing.assert_allclose(grads["out_w"], np.outer(h[0], dz[0]), rtol=1e-15)
    np.testing.assert_allclose(dH, dz @ p["out_w"].T, rtol=1e-15)
    # the rounding of p moves the third digit: exactly 0.5094..., the derivation's 0.510
    assert round(float(dz[0, 0]), 4) == 0.5094 and mod.hand_text("dz").startswith("[0.510,")
    code = cells(example("logit_gradient").blocks[0], "This code")
    assert code["cross_entropy_backward(1.0, c)[0]"] == fmt_array(dz[0])
    assert code['grads["out_w"][0, 0]'] == fmt_number(grads["out_w"][0, 0]) and code["dH[0]"] == fmt_array(dH[0])
    # over N positions each row is (p - q) / N
    _, c2 = cross_entropy_forward(runs["logits_exact"], mod.TGT_OUT, cfg.label_smoothing)
    d2 = cross_entropy_backward(1.0, c2)
    np.testing.assert_allclose(d2, (c2["P"] - c2["q"]) / mod.TGT_OUT.size, rtol=1e-15)
    np.testing.assert_allclose(d2.sum(-1), 0.0, atol=1e-16)
    assert cells(example("logit_gradient").blocks[1], "Value")["cross_entropy_backward(1.0, c)"] == fmt_array(d2)


# ---------------------------------------------------------------- 9. gradient paths

def test_masked_positions_get_zero_gradient(mod, runs):
    cfg, p = runs["cfg"], runs["params"]
    memory, _ = s2s.encode_forward(p, mod.SRC_IDS, cfg)
    Y = runs["exact"]["tgt.X"]
    logits, c = s2s.decoder_forward(Y, memory, p, cfg)
    dlogits = np.zeros_like(logits)
    dlogits[0] = cross_entropy_backward(1.0, cross_entropy_forward(logits[:1], mod.TGT_OUT[:1], 0.1)[1])[0]
    grads = {k: np.zeros_like(v) for k, v in p.items()}
    dY, _ = s2s.decoder_backward(dlogits, c, p, grads)
    assert np.all(dY[1] == 0.0) and np.abs(dY[0]).sum() > 0   # no gradient reaches the later position
    data = example("gradient_paths").data
    for name in ("hand", "exact"):
        assert np.all(data[name]["A_hidden"] == 0.0) and np.all(data[name]["dS_hidden"] == 0.0)
        assert np.all(data[name]["dY1"] == 0.0)
    np.testing.assert_array_equal(data["exact"]["dY0"], dY[0])


def test_encoder_reaches_the_loss_only_through_cross_attention(mod, runs):
    cfg, p = runs["cfg"], {k: v.copy() for k, v in runs["params"].items()}
    _, grads = s2s.loss_and_grads(p, mod.SRC_IDS, mod.TGT_IN, mod.TGT_OUT, cfg)
    assert np.abs(grads["src_emb"]).sum() > 0 and np.abs(grads["enc0.wq"]).sum() > 0
    memory, c_enc = s2s.encode_forward(p, mod.SRC_IDS, cfg)
    logits, c_dec = s2s.decode_forward(p, memory, mod.TGT_IN, cfg)
    _, c_ce = cross_entropy_forward(logits, mod.TGT_OUT, cfg.label_smoothing)
    dmemory = s2s.decode_backward(cross_entropy_backward(1.0, c_ce), c_dec, p, {k: np.zeros_like(v) for k, v in p.items()})
    assert np.abs(dmemory).sum() > 0
    data = example("gradient_paths").data
    np.testing.assert_allclose(data["exact"]["dmemory"], dmemory, rtol=1e-14)
    p["dec0.cross.wv"][:] = 0.0
    p["dec0.cross.bv"][:] = 0.0
    _, cut = s2s.loss_and_grads(p, mod.SRC_IDS, mod.TGT_IN, mod.TGT_OUT, cfg)
    assert all(np.all(cut[k] == 0.0) for k in cut if k.startswith("enc") or k == "src_emb")
    for name in ("hand", "exact"):
        assert np.all(data[name]["dmemory_cut"] == 0.0) and data[name]["enc_norm_cut"] == 0.0
        assert data[name]["enc_norm"] > 0


# ---------------------------------------------------------------- 10. Adam

def test_adam_step(mod):
    beta1, beta2, eps = 0.9, 0.98, 1e-9
    data = example("adam_step").data
    r = mod.stated_h_step()
    g = float(r["grads"]["out_w"][0, 0])
    assert data["g"] == g
    assert data["m"] == pytest.approx((1 - beta1) * g, rel=1e-15)
    assert data["v"] == pytest.approx((1 - beta2) * g * g, rel=1e-15)
    assert data["m"] / data["c1"] == pytest.approx(g, rel=1e-14)
    assert data["v"] / data["c2"] == pytest.approx(g * g, rel=1e-14)
    assert data["direction"] == pytest.approx(g / (abs(g) + eps), rel=1e-15)
    assert data["lr1"] == 512 ** -0.5 * 4000 ** -1.5 and data["lr4000"] == 512 ** -0.5 * 4000 ** -0.5
    assert data["w1"] == pytest.approx(1 - data["lr1"] * data["direction"], rel=1e-15)
    assert data["w4000"] == pytest.approx(1 - data["lr4000"] * data["direction"], rel=1e-15)
    assert data["dir4000"] == pytest.approx(data["direction"], rel=1e-12) and data["opt_t"] == 4000
    # the same step with AdamW called directly, on the output layer alone
    params = {"out_w": np.eye(4), "out_b": np.zeros(4)}
    AdamW(params, lr=noam_lr(1, 512), betas=(beta1, beta2), eps=eps).step(
        params, {"out_w": r["grads"]["out_w"], "out_b": r["grads"]["out_b"]})
    assert params["out_w"][0, 0] == data["w1"]


def test_adam_table_shows_the_general_bias_correction_and_the_step_it_ran(mod):
    """The corrections divide by 1 - β^t; the table writes that form, and the t it is evaluated
    at is the optimizer's own counter after the call, not a typed 1."""
    result = example("adam_step")
    t = result.data["t"]
    opt = AdamW({"w": np.zeros(1)}, lr=0.0)
    opt.step({"w": np.zeros(1)}, {"w": np.ones(1)}, 0.0)
    assert t == opt.t
    rows = {row[1]: row for row in result.blocks[0]["rows"]}
    assert rows["opt.t"][3] == str(t)
    sub, sup = str(t).translate(SUBSCRIPT), str(t).translate(SUPERSCRIPT)
    assert rows["m / c1"][0].startswith("m̂ₜ = mₜ / (1 - β₁ᵗ)") and rows["m / c1"][0].endswith(f"at t = {t}: m̂{sub}")
    assert rows["v / c2"][0].startswith("v̂ₜ = vₜ / (1 - β₂ᵗ)") and rows["v / c2"][0].endswith(f"at t = {t}: v̂{sub}")
    assert rows["c1, c2"][0].endswith(f"1 - β₁{sup}, 1 - β₂{sup}")
    beta1, beta2 = mod.ADAM_KW["betas"]
    assert result.data["c1"] == pytest.approx(1 - beta1 ** t) and result.data["c2"] == pytest.approx(1 - beta2 ** t)


def test_noam_lr_at_the_derivation_s_steps():
    assert noam_lr(1, 512) == pytest.approx(512 ** -0.5 * 4000 ** -1.5, rel=1e-15)
    assert noam_lr(4000, 512) == pytest.approx(512 ** -0.5 * 4000 ** -0.5, rel=1e-15)


# ---------------------------------------------------------------- every table

ALL = ["toy_weights", "embed_inputs", "encoder_attention", "add_norm", "feed_forward", "masked_attention",
       "cross_attention", "decoder_output", "output_and_loss", "logit_gradient", "gradient_paths", "adam_step"]


def test_every_step_row_shows_its_shape_and_the_quoted_hand_value(mod):
    quoted = {v for _, v in mod.HAND.values()}
    for name in ALL:
        for block in example(name).blocks:
            if block["kind"] != "table" or "Shape" not in block["headers"]:
                continue
            hand_col = next((h for h in block["headers"] if h.startswith(("Hand value", "What the derivation"))), None)
            for row in block["rows"]:
                shape = row[block["headers"].index("Shape")]
                assert shape == "scalar" or re.fullmatch(r"\(\d+,\)|\(\d+(, \d+)+\)", shape), (name, row)
                if hand_col == "Hand value (derivation)":
                    text = row[block["headers"].index(hand_col)]
                    assert text in quoted or text == "not given" or all(x in quoted for x in text.split(", ")), (name, row)


def test_two_run_rows_have_the_shape_of_their_values():
    for name in ("encoder_attention", "add_norm", "feed_forward", "masked_attention", "cross_attention",
                 "decoder_output"):
        res = example(name)
        block = res.blocks[0]
        for row in block["rows"]:
            key, vh, ve = res.data["values"][row[1]]
            assert vh.shape == ve.shape
            assert row[-1] == ("scalar" if vh.shape == () else str(vh.shape)), (name, row)


def evaluate(code, t):
    """Evaluate a table's Code cell (a flat_trace expression) on a directly computed trace;
    None if the cell is not such an expression."""
    names = re.compile("|".join(re.escape(k) for k in sorted(t, key=len, reverse=True)) + r"(?!\w)")
    expr = names.sub(lambda m: f'T["{m.group(0)}"]', code)
    if expr == code:
        return None
    try:
        return eval(expr, {"np": np, "T": t})
    except SyntaxError:
        return None


def test_every_flat_trace_row_equals_the_direct_run(runs):
    """Each row whose Code is an expression of flat_trace names, recomputed from the runs of this
    file (direct calls of encoder_forward / decoder_forward and forward), shows the same text."""
    checked = 0
    for name in ("encoder_attention", "add_norm", "feed_forward", "masked_attention", "cross_attention",
                 "decoder_output"):
        block = example(name).blocks[0]
        for row in block["rows"]:
            for run, col in (("hand", "This code, from the derivation's inputs"), ("exact", "This code, exact inputs")):
                value = evaluate(row[1], runs[run])
                if value is None:
                    continue
                assert row[block["headers"].index(col)] == fmt_array(value), (name, run, row[1])
                checked += 1
    first = example("embed_inputs").blocks[0]
    for row in first["rows"]:
        value = evaluate(row[1], runs["exact"])
        if value is not None:
            assert row[first["headers"].index("This code")] == fmt_array(value), row[1]
            checked += 1
    assert checked >= 100


def test_hand_values_parse_and_match_their_rounding(mod):
    """Each quoted hand value agrees with the exact one to the digits the derivation kept, where
    the derivation did not drop a term (X, Y and h are the known exceptions, and the page says so)."""
    close = {"enc_A1": ("encoder_attention", "enc0.att.A[0]"), "cross_O1": ("cross_attention", "dec0.cross.Oh[0]"),
             "LN1": ("add_norm", "enc0.Xn1"), "ENC": ("feed_forward", "enc0.Xn2"),
             "DEC1": ("masked_attention", "dec0.Yn1")}
    for key, (name, code) in close.items():
        _, vh, _ = example(name).data["values"][code]
        np.testing.assert_allclose(vh, mod.hand(key), rtol=0, atol=5e-4)
    for key, (section, text) in mod.HAND.items():
        json.loads(text)                                     # every quoted value is plain JSON
        assert section.endswith("?")


# ---------------------------------------------------------------- the page

@pytest.mark.parametrize("concept", CONCEPTS)
def test_every_concept_has_every_section(site_page, concept):
    html = site_page(SLUG)
    start = html.index(f'<section class="concept" id="{SLUG}-{concept}"')
    section = html[start:html.index("</section>", start)]
    for heading in HEADINGS:
        assert heading in section, f"{concept} lacks '{heading}'"
    assert 'class="equation"' in section and "katex" in section


def test_page_labels_hand_values_and_hand_picked_weights(site_page):
    html = site_page(SLUG)
    for needle in ["Hand value (derivation)", "This code, from the derivation&#39;s inputs", "This code, exact inputs",
                   "Hand-picked inputs", "Note · measured", "tie_output=False"]:
        assert needle in html, needle


def test_the_page_states_the_runs_own_tie_flag_and_output_weight(site_page, mod):
    """Whether the toy's output layer is tied is read from the config the examples run, and the
    output weight named is the one matrix the run's output_backward fills."""
    import html as html_lib
    cfg, r = mod.toy_cfg(), mod.stated_h_step()
    weight = [k for k, g in r["grads"].items() if g.ndim == 2 and g.any()]
    assert weight == ["out_w" if not cfg.tie_output else s2s.tgt_table(cfg)]
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", site_page(SLUG)))
    assert f"sets tie_output to {cfg.tie_output}" in text
    adam = html_lib.unescape(re.sub(r"<[^>]+>", "", site_page(SLUG).split('id="seq2seq-step-adam"')[1]))
    assert f"moves the output weight {weight[0]}" in adam
    # the shapes block names the default's arrays, and says so with both values of the switch
    default = type(cfg).__dataclass_fields__["tie_output"].default
    assert default != cfg.tie_output
    assert f"(tie_output = {default}); seq2seq_step:toy_sizes runs tie_output = {cfg.tie_output}" in adam


# ---------------------------------------------------------------- the backward pass, recorded

def backward_example(name):
    return load_example(ROOT, f"seq2seq_backward:{name}")()


@pytest.fixture(scope="module")
def direct(mod, runs):
    """The exact run's backward pass by direct calls, layer by layer: what the recorded tables show."""
    cfg, p = runs["cfg"], runs["params"]
    logits, c = s2s.forward(p, mod.SRC_IDS, mod.TGT_IN, cfg)
    _, c_ce = cross_entropy_forward(logits, mod.TGT_OUT, cfg.label_smoothing)
    grads = {k: np.zeros_like(v) for k, v in p.items()}
    layer = c["dec"]["dec"]["layers"][0]
    dH = s2s.output_backward(cross_entropy_backward(1.0, c_ce), c["dec"]["dec"]["out"], p, grads)
    dY3, dg3, db3 = layer_norm_backward(dH, layer["ln3"], p["dec0.ln3_g"])
    return dict(c=c, layer=layer, grads=grads, dH=dH, dY3=dY3, dg3=dg3, db3=db3, params=p)


def assert_checks_pass(result):
    """Every row of the example's gradient-check table agrees with central differences."""
    block = next(b for b in result.blocks if b["kind"] == "gradcheck")
    assert block["rows"] and all(float(r["gap"]) < 1e-8 for r in block["rows"]), block["rows"]


def test_ln3_backward(direct):
    result = backward_example("ln3_backward")
    _, dX = result.data["values"]["dX"]
    np.testing.assert_array_equal(dX, direct["dY3"])
    dH, Xhat, s = direct["dH"], direct["layer"]["ln3"]["Xhat"], direct["layer"]["ln3"]["s"]
    np.testing.assert_allclose(direct["dY3"], s * (dH - dH.mean(-1, keepdims=True) - Xhat * (dH * Xhat).mean(-1, keepdims=True)), rtol=1e-12)
    np.testing.assert_allclose(direct["dg3"], (dH * Xhat).sum(0), rtol=1e-13)
    np.testing.assert_allclose(direct["db3"], dH.sum(0), rtol=1e-13)
    assert np.abs(direct["dY3"].sum(-1)).max() < 1e-15 and np.abs((direct["dY3"] * Xhat).sum(-1)).max() < 1e-15
    assert_checks_pass(result)


def test_ffn_backward(direct):
    result = backward_example("ffn_backward_step")
    layer, p = direct["layer"], direct["params"]
    dA = direct["dY3"] @ p["dec0.ff2_w"].T
    dW2 = result.data["values"]["dW2"][1]
    np.testing.assert_allclose(dW2, layer["ff"]["A"].T @ direct["dY3"], rtol=1e-13)
    dZ = result.data["values"]["dZ"][1]
    np.testing.assert_array_equal(dZ, dA * layer["ff"]["positive"])
    assert np.all(dZ[~layer["ff"]["positive"]] == 0.0) and np.abs(dA[~layer["ff"]["positive"]]).sum() > 0
    dW1, dXn = result.data["values"]["dW1"][1], result.data["values"]["dXn"][1]
    np.testing.assert_allclose(dW1, layer["ff"]["Xn"].T @ dZ, rtol=1e-13)
    np.testing.assert_allclose(result.data["values"]["dYn2 (in decoder_layer_backward)"][1], direct["dY3"] + dXn, rtol=1e-15)
    dead = ~layer["ff"]["positive"].any(0)                 # units shut in every row: no weight gradient at all
    assert result.data["closed"]["exact"] == int((~layer["ff"]["positive"]).sum())
    assert dead.any() and np.all(dW1[:, dead] == 0.0) and np.all(dW2[dead] == 0.0)
    assert int(dead.sum()) * len(dZ) == result.data["closed"]["exact"]          # the same units in both rows
    hand_gate = result.data["gate"]["hand"]
    np.testing.assert_array_equal(hand_gate[0], ~hand_gate[1])                   # each row opens what the other shuts
    assert_checks_pass(result)


def cross_direct(direct):
    """Cross-attention's backward by direct calls: dY2 from the second LayerNorm, then each formula."""
    layer, p = direct["layer"], direct["params"]
    dXn = ffn_backward(direct["dY3"], layer["ff"], p, "dec0.", {k: np.zeros_like(x) for k, x in p.items()})
    dY2, _, _ = layer_norm_backward(direct["dY3"] + dXn, layer["ln2"], p["dec0.ln2_g"])
    return dY2, layer["cross"]


def test_cross_backward(direct):
    result = backward_example("cross_backward")
    v = lambda code: result.data["values"][code][1]
    p = direct["params"]
    dY2, c = cross_direct(direct)
    np.testing.assert_array_equal(v("dY2 (in decoder_layer_backward)"), dY2)
    A, Qh, Kh, Vh = c["A"], c["Qh"], c["Kh"], c["Vh"]
    dOh = split_heads(dY2 @ p["dec0.cross.wo"].T, A.shape[0])
    np.testing.assert_allclose(v("dVh[0]"), A[0].T @ dOh[0], rtol=1e-13, atol=1e-16)
    dA = dOh @ Vh.swapaxes(-1, -2)
    np.testing.assert_allclose(v("dA[0]"), dA[0], rtol=1e-13, atol=1e-16)
    dS = A * (dA - (dA * A).sum(-1, keepdims=True))
    np.testing.assert_allclose(v("softmax_backward(dA, A)[0]"), dS[0], rtol=1e-12, atol=1e-17)
    for i in range(A.shape[1]):                      # the Jacobian row by row: diag(a) - a a^T
        a = A[0, i]
        np.testing.assert_allclose((np.diag(a) - np.outer(a, a)) @ dA[0, i], dS[0, i], rtol=1e-12, atol=1e-17)
    dk = math.sqrt(Qh.shape[-1])
    np.testing.assert_allclose(v("dQh[0]"), dS[0] @ Kh[0] / dk, rtol=1e-12, atol=1e-17)
    np.testing.assert_allclose(v("dKh[0]"), dS[0].T @ Qh[0] / dk, rtol=1e-12, atol=1e-17)
    np.testing.assert_allclose(v("dWq"), c["Xq"].T @ merge_heads(dS @ Kh / dk), rtol=1e-12, atol=1e-17)
    assert np.abs(v("dbk")).max() < 1e-16
    np.testing.assert_allclose(v("dYn1 (in decoder_layer_backward)"), dY2 + v("dXq"), rtol=1e-15)
    jac = result.blocks[1]
    for row in jac["rows"]:
        assert row[4] == row[5], row                 # J dA, from central differences, shows softmax_backward's digits
    assert_checks_pass(result)


def test_masked_self_attention_backward(direct, mod):
    result = backward_example("masked_backward")
    v = lambda code, run=1: result.data["values"][code][run]
    p, c = direct["params"], direct["layer"]["self"]
    T = c["A"].shape[-1]
    hidden = ~causal_mask(T)
    assert np.all(c["A"][:, hidden] == 0.0)
    assert np.abs(v("dA[0]")[hidden]).max() > 0                # the weight's gradient is not 0 there ...
    for run in ("hand", "exact"):
        assert np.all(result.data["hidden_dS"][run] == 0.0)     # ... the score's is, exactly, in every head
    assert np.all(v("dKh[0]") == 0.0) and np.all(v("dWk") == 0.0) and np.all(p["dec0.self.wq"] == 0.0)
    _, grads = s2s.loss_and_grads(p, mod.SRC_IDS, mod.TGT_IN, mod.TGT_OUT, mod.toy_cfg())
    np.testing.assert_allclose(v("return[0] of decoder_layer_backward"), grads["tgt_emb"][mod.TGT_IN] / math.sqrt(p["tgt_emb"].shape[1]), rtol=1e-13)
    assert_checks_pass(result)


def test_embedding_backward(mod):
    result = backward_example("embed_backward_step")
    cfg, p = mod.toy_cfg(), mod.toy_params()
    _, grads = s2s.loss_and_grads(p, mod.SRC_IDS, mod.TGT_IN, mod.TGT_OUT, cfg)
    dY = result.data["values"]["dX (argument, target)"][1]
    np.testing.assert_array_equal(result.data["values"]["dE (target)"][1], dY * math.sqrt(cfg.d_model))
    expected = np.zeros_like(p["tgt_emb"])
    np.add.at(expected, mod.TGT_IN, dY * math.sqrt(cfg.d_model))
    np.testing.assert_allclose(grads["tgt_emb"], expected, rtol=1e-14)
    unused = np.setdiff1d(np.arange(cfg.tgt_vocab_size), mod.TGT_IN)
    assert np.all(grads["tgt_emb"][unused] == 0.0) and np.abs(grads["src_emb"]).sum() > 0
    np.testing.assert_array_equal(result.data["values"]['grads["src_emb"]'][1], grads["src_emb"])
    assert_checks_pass(result)


def test_one_pattern_on_every_linear_layer(mod):
    result = backward_example("one_pattern")
    p = mod.toy_params()
    weights = {k for k, v in p.items() if v.ndim == 2 and not k.endswith("_emb")}
    assert set(result.data["gaps"]) == weights and result.data["count"] == len(weights)
    assert result.data["worst_dW"] == 0.0 and result.data["worst_dX"] == 0.0
    assert result.data["worst_numeric"] < 1e-8


def test_sizes_against_the_paper(mod):
    result = backward_example("sizes")
    base, toy = result.data["base"], result.data["toy"]
    # the paper's Table 3, base row: N = 6, d_model = 512, d_ff = 2048, h = 8, d_k = d_v = 64
    assert (base.d_model, base.num_heads, base.d_ff, base.num_enc_layers, base.num_dec_layers) == (512, 8, 2048, 6, 6)
    assert base.head_dim == base.d_model // base.num_heads == 64
    assert toy == mod.toy_cfg() and result.data["agree"]
    rows = {r[1]: r for r in result.blocks[0]["rows"]}
    assert rows["cfg.d_model"][2:5] == [str(toy.d_model), "512", mod.hand_text("base_d_model")]
    assert result.data["width_ratio"] == base.d_model // toy.d_model


def test_step_summary(mod):
    result = backward_example("step_summary")
    cfg, p = mod.toy_cfg(), mod.toy_params()
    loss, grads = s2s.loss_and_grads(p, mod.SRC_IDS, mod.TGT_IN, mod.TGT_OUT, cfg)
    assert result.data["loss"] == loss and result.data["after"] < loss
    assert result.data["largest"] == max(grads, key=lambda k: np.abs(grads[k]).max())
    lr = result.data["lr"]
    assert lr == noam_lr(1, cfg.d_model, mod.WARMUP)
    params = {k: v.copy() for k, v in p.items()}
    AdamW(params, lr=lr, **mod.ADAM_KW).step(params, grads, lr)
    for k in p:                                  # step 1: every entry with a real gradient moves by lr, whatever its size
        move, g = np.abs(params[k] - p[k]), np.abs(grads[k])
        np.testing.assert_allclose(move, lr * g / (g + AdamW(p, lr=lr, **mod.ADAM_KW).eps), rtol=1e-7, atol=1e-15)
        np.testing.assert_allclose(move[g > 1e-6], lr, rtol=1e-3)
        assert result.data["moved"][k] == move.max()
    assert result.data["still"] == [k for k in p if not np.any(params[k] != p[k])]
    assert result.data["still"] == ["dec0.self.wk", "dec0.self.bk"]      # what the page's note names in words
    assert result.data["max_move"] == pytest.approx(lr, rel=1e-3)


BACKWARD = ["ln3-back", "ffn-back", "cross-back", "masked-back", "embed-back", "pattern", "flow", "sizes", "summary"]


@pytest.mark.parametrize("concept", BACKWARD)
def test_backward_sections_have_equations_linked_to_code(site_page, concept):
    html = site_page(SLUG)
    section = html[html.index(f'<section class="concept" id="{SLUG}-{concept}"'):]
    section = section[:section.index("</section>")]
    assert 'class="equation"' in section and "Code and math connection" in section
    if concept.endswith("-back"):                      # each step's gradient is checked against central differences
        assert 'class="gradcheck cards"' in section and "This code, exact inputs" in section


def test_the_step_map_draws_forward_and_backward_and_links_to_this_page(site_page):
    """The map of loss_and_grads (links: page) has a forward and a backward column, the backward
    one down to both embed_backward calls (calls whose result is not kept) and reached through
    the call inside `return loss, backward(...)`. Its boxes link to this page's sections; a box
    no section explains (the input checks, the encoder's last residual sum) links to its line,
    never to another page."""
    html = site_page(SLUG)
    section = html[html.index(f'<section class="concept" id="{SLUG}-flow"'):]
    svg = section[section.index("<svg"):section.index("</svg>")]
    assert '<text class="arch-col" x="12.0" y="16">forward</text>' in svg and ">backward</text>" in svg
    assert svg.count(">embed_backward</text>") == 2 and svg.count(">output_backward</text>") == 1
    boxes = re.findall(r'<a class="arch-node" href="([^"]+)"><title>([^<]*)</title>', svg)
    on_page = [h for h, _ in boxes if h.startswith(f"{SLUG}.html#{SLUG}-")]
    to_lines = [t for h, t in boxes if h not in on_page]
    assert all(h in on_page or h.startswith("source/model/seq2seq.py.html#L") for h, _ in boxes), boxes
    assert all(re.search(r"= check_\w+\(|return dX1 \+ dXq \+ dXkv", t) for t in to_lines), to_lines
    targets = {h.split("#")[1].split("--")[0] for h in on_page}
    assert targets >= {f"{SLUG}-{c}" for c in ("embed", "enc-attention", "add-norm", "ffn", "masked", "cross", "output",
                                               "logit-grad", "ln3-back", "ffn-back", "cross-back", "masked-back",
                                               "embed-back", "paths")}, targets


def test_backward_quotes_are_marked(site_page):
    html = site_page(SLUG)
    back = html[html.index(f'id="{SLUG}-ln3-back"'):]
    assert back.count('<q class="quoted" data-source="derivation">') >= 4
    assert '<q class="quoted" data-source="vaswani2017">' in back
