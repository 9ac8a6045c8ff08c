"""The 2017 post-LN encoder-decoder: gradient checks of every tensor, the invariants of the
hand derivation, the paper's toy numbers, a short training run, and bad input."""
import json
import math
import re

import numpy as np
import pytest

from model import ModelInputError
from model import seq2seq as s2s
from model.attention import mha_forward
from model.config import Seq2SeqConfig
from model.gradcheck import numerical_grad, rel_error
from model.ops import cross_entropy_forward, cross_entropy_backward
from model.optim import decays

TOL = 1e-7


def tiny_cfg(**kw):
    base = dict(src_vocab_size=7, tgt_vocab_size=6, max_len=8, d_model=8, num_heads=2, d_ff=12,
                num_enc_layers=2, num_dec_layers=2)
    base.update(kw)
    if base.get("share_vocab"):
        base["tgt_vocab_size"] = base["src_vocab_size"]
    return Seq2SeqConfig(**base)


def setup(cfg, seed=0, B=2, S=5, T=4):
    rng = np.random.default_rng(seed)
    params = s2s.init_params(cfg, rng)
    for k in params:        # non-trivial biases and LayerNorm gains, so every path carries signal
        if not k.endswith("emb"):
            params[k] += 0.1 * rng.standard_normal(params[k].shape)
    src = rng.integers(0, cfg.src_vocab_size, (B, S))
    tgt_in = rng.integers(0, cfg.tgt_vocab_size, (B, T))
    tgt_out = rng.integers(0, cfg.tgt_vocab_size, (B, T))
    return rng, params, src, tgt_in, tgt_out


def loss_fn(params, src, tgt_in, tgt_out, cfg):
    logits, _ = s2s.forward(params, src, tgt_in, cfg)
    return cross_entropy_forward(logits, tgt_out, cfg.label_smoothing)[0]


def is_key_bias(name):
    return name.endswith(".bk")


# ----------------------------------------------------------------------------- config and names

def test_config_validation():
    assert Seq2SeqConfig(5, 6).emb_std == pytest.approx(32 ** -0.5)
    assert Seq2SeqConfig(5, 6, ln_eps=0.0).ln_eps == 0.0        # allowed: the hand derivation
    cfg = Seq2SeqConfig(5, 5, share_vocab=True)
    assert Seq2SeqConfig(**cfg.to_dict()) == cfg
    for kw, msg in [(dict(d_model=30), "divisible"), (dict(ln_eps=-1e-6), "ln_eps"),
                    (dict(label_smoothing=1.0), "label_smoothing"), (dict(share_vocab=True), "share_vocab"),
                    (dict(dtype="float16"), "dtype"), (dict(num_dec_layers=0), "num_dec_layers"),
                    (dict(emb_std=0.0), "emb_std"), (dict(tie_output=1), "tie_output")]:
        with pytest.raises(ModelInputError, match=msg):
            Seq2SeqConfig(5, 6, **kw)


def category(name):
    """Classify each name from its role, independently of optim's suffix rule."""
    if name in ("emb", "src_emb", "tgt_emb"):
        return "embedding"
    if re.fullmatch(r"(enc\d+|dec\d+\.self|dec\d+\.cross)\.w[qkvo]|(enc|dec)\d+\.ff[12]_w|out_w", name):
        return "matrix"
    if re.fullmatch(r"(enc\d+|dec\d+\.self|dec\d+\.cross)\.b[qkvo]|(enc|dec)\d+\.ff[12]_b|out_b", name):
        return "bias"
    if re.fullmatch(r"enc\d+\.ln[12]_[gb]|dec\d+\.ln[123]_[gb]", name):
        return "layernorm"
    raise AssertionError(f"{name} has no category")


@pytest.mark.parametrize("kw", [dict(), dict(tie_output=False), dict(share_vocab=True),
                                dict(share_vocab=True, tie_output=False)])
def test_param_names_shapes_and_decay(kw):
    cfg = tiny_cfg(**kw)
    params = s2s.init_params(cfg, np.random.default_rng(0))
    assert list(params) == s2s.param_names(cfg)
    assert ("out_w" in params) == (not cfg.tie_output)
    assert ("emb" in params) == cfg.share_vocab and ("src_emb" in params) != cfg.share_vocab
    assert "dec1.self.wq" in params and "dec1.cross.wv" in params and "dec1.ln3_g" in params
    assert "enc1.ff2_w" in params and "enc1.ln2_b" in params and "enc1.ln3_g" not in params
    for name, w in params.items():
        kind = category(name)
        assert decays(name) == (kind == "matrix"), name      # every name classified on purpose
        assert w.ndim == (2 if kind in ("matrix", "embedding") else 1), name
        assert w.dtype == np.float64


def test_sinusoidal_positions():
    PE = s2s.sinusoidal_positions(3, 4)
    np.testing.assert_allclose(PE[0], [0, 1, 0, 1])
    np.testing.assert_allclose(PE[1], [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)])
    PE5 = s2s.sinusoidal_positions(6, 5)                     # odd d: the last column is a sine
    np.testing.assert_allclose(PE5[:, 4], np.sin(np.arange(6) / 10000 ** (4 / 5)))
    assert s2s.sinusoidal_positions(2, 4, "float32").dtype == np.float32


# ----------------------------------------------------------------------------- gradient checks

@pytest.mark.parametrize("kw", [dict(),                                          # tied, 2 + 2 layers
                                dict(tie_output=False, num_enc_layers=1, num_dec_layers=1),
                                dict(share_vocab=True, num_enc_layers=1, num_dec_layers=1)])
def test_gradcheck_every_parameter(kw):
    cfg = tiny_cfg(**kw)
    _, params, src, tgt_in, tgt_out = setup(cfg)
    loss, grads = s2s.loss_and_grads(params, src, tgt_in, tgt_out, cfg)
    assert set(grads) == set(params)
    f = lambda: loss_fn(params, src, tgt_in, tgt_out, cfg)
    assert f() == loss
    for name in params:
        numeric = numerical_grad(f, params[name], h=1e-5)
        if is_key_bias(name):
            # Softmax ignores a constant added to a row of scores, and q.bk is such a constant:
            # the true gradient is exactly 0. Both sides are rounding noise, so rel_error cannot
            # apply (0 vs 3e-11 reads as 3e-3 against its 1e-8 floor); compare absolutely.
            assert np.abs(grads[name]).max() < 1e-14, name
            assert np.abs(numeric).max() < 1e-9, name
        else:
            assert np.linalg.norm(grads[name]) > 1e-6, name     # the check below means something
            assert rel_error(grads[name], numeric) <= TOL, (name, rel_error(grads[name], numeric))


def test_tied_table_gets_embedding_and_projection_gradients():
    cfg = tiny_cfg(num_enc_layers=1, num_dec_layers=1)
    _, params, src, _, tgt_out = setup(cfg)
    tgt_in = np.zeros_like(tgt_out)                          # only row 0 is looked up
    _, grads = s2s.loss_and_grads(params, src, tgt_in, tgt_out, cfg)
    assert np.all(np.abs(grads["tgt_emb"][1:]).sum(axis=1) > 0)   # the projection reaches every row
    logits, c = s2s.forward(params, src, tgt_in, cfg)
    _, c_ce = cross_entropy_forward(logits, tgt_out, cfg.label_smoothing)
    proj = np.einsum("btv,btd->vd", cross_entropy_backward(1.0, c_ce), c["dec"]["dec"]["out"]["H"])
    np.testing.assert_allclose(grads["tgt_emb"][1:], proj[1:], rtol=1e-12, atol=1e-15)
    assert not np.allclose(grads["tgt_emb"][0], proj[0])     # row 0 adds the embedding's share


def test_gradcheck_encoder_output_and_decoder_input():
    cfg = tiny_cfg()
    rng, params, _, tgt_in, tgt_out = setup(cfg)
    memory = rng.standard_normal((2, 5, cfg.d_model))

    def loss_from_memory():
        logits, _ = s2s.decode_forward(params, memory, tgt_in, cfg)
        return cross_entropy_forward(logits, tgt_out, cfg.label_smoothing)[0]

    logits, c = s2s.decode_forward(params, memory, tgt_in, cfg)
    _, c_ce = cross_entropy_forward(logits, tgt_out, cfg.label_smoothing)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dmemory = s2s.decode_backward(cross_entropy_backward(1.0, c_ce), c, params, grads)
    assert rel_error(dmemory, numerical_grad(loss_from_memory, memory)) <= TOL

    Y = rng.standard_normal((2, 4, cfg.d_model))            # the decoder's input, after embedding

    def loss_from_decoder_input():
        logits, _ = s2s.decoder_forward(Y, memory, params, cfg)
        return cross_entropy_forward(logits, tgt_out, cfg.label_smoothing)[0]

    logits, c = s2s.decoder_forward(Y, memory, params, cfg)
    _, c_ce = cross_entropy_forward(logits, tgt_out, cfg.label_smoothing)
    dY, dmem = s2s.decoder_backward(cross_entropy_backward(1.0, c_ce), c, params, grads)
    assert rel_error(dY, numerical_grad(loss_from_decoder_input, Y)) <= TOL
    assert rel_error(dmem, numerical_grad(loss_from_decoder_input, memory)) <= TOL

    X = rng.standard_normal((2, 5, cfg.d_model))            # the encoder's input
    G = rng.standard_normal((2, 5, cfg.d_model))            # any upstream gradient on memory
    mem, c = s2s.encoder_forward(X, params, cfg)
    dX = s2s.encoder_backward(G, c, params, grads)
    assert rel_error(dX, numerical_grad(lambda: float((s2s.encoder_forward(X, params, cfg)[0] * G).sum()), X)) <= TOL


def test_batch_is_the_mean_of_single_sequences():
    cfg = tiny_cfg(num_enc_layers=1, num_dec_layers=1)
    _, params, src, tgt_in, tgt_out = setup(cfg)
    loss, grads = s2s.loss_and_grads(params, src, tgt_in, tgt_out, cfg)
    singles = [s2s.loss_and_grads(params, src[b], tgt_in[b], tgt_out[b], cfg) for b in range(2)]
    assert loss == pytest.approx(np.mean([l for l, _ in singles]), rel=1e-13)
    for k in params:
        np.testing.assert_allclose(grads[k], (singles[0][1][k] + singles[1][1][k]) / 2, rtol=1e-10, atol=1e-15)


def test_float32_runs_in_float32():
    cfg = tiny_cfg(dtype="float32")
    _, params, src, tgt_in, tgt_out = setup(cfg)
    params = {k: v.astype(np.float32) for k, v in params.items()}
    logits, _ = s2s.forward(params, src, tgt_in, cfg)
    assert logits.dtype == np.float32
    _, grads = s2s.loss_and_grads(params, src, tgt_in, tgt_out, cfg)
    assert all(g.dtype == np.float32 for g in grads.values())


# ----------------------------------------------------------------------------- invariants

def test_attention_rows_mask_and_layer_norm_invariants():
    cfg = tiny_cfg(ln_eps=0.0)
    _, params, src, tgt_in, _ = setup(cfg)
    for k in params:                                         # LN rows exactly standardised: g = 1, b = 0
        if re.search(r"ln\d_g$", k):
            params[k] = np.ones_like(params[k])
        if re.search(r"ln\d_b$", k):
            params[k] = np.zeros_like(params[k])
    logits, c = s2s.forward(params, src, tgt_in, cfg, trace=True)
    t = s2s.flat_trace(c)
    T = tgt_in.shape[-1]
    future = ~np.tri(T, dtype=bool)
    for name, v in t.items():
        if name.endswith(".A") and (".att." in name or ".self." in name or ".cross." in name):
            np.testing.assert_allclose(v.sum(axis=-1), 1.0, rtol=0, atol=1e-14)
        if re.fullmatch(r"dec\d\.self\.A", name):
            assert np.all(v[..., future] == 0.0)             # exactly 0, not merely small
            assert np.all(v[..., ~future] > 0)
        if re.fullmatch(r"(enc\d\.Xn[12]|dec\d\.Yn[123])", name):
            np.testing.assert_allclose(v.mean(axis=-1), 0.0, atol=1e-14)
            np.testing.assert_allclose(v.var(axis=-1), 1.0, atol=1e-13)
    np.testing.assert_allclose(t["out.probs"].sum(-1), 1.0, atol=1e-14)
    np.testing.assert_array_equal(t["out.logits"], logits)
    # The trace recomputes attention with the same primitives; it must agree with mha_forward.
    for l in range(cfg.num_dec_layers):
        np.testing.assert_allclose(t[f"dec{l}.Y2"], t[f"dec{l}.Yn1"] + t[f"dec{l}.cross.out"], atol=1e-14)
        att, _ = mha_forward(t[f"dec{l}.Yn1"], t[f"enc{cfg.num_enc_layers - 1}.Xn2"], params,
                             f"dec{l}.cross.", cfg.num_heads)
        np.testing.assert_allclose(att, t[f"dec{l}.cross.out"], atol=1e-14)


def test_masked_positions_get_zero_gradient():
    """Loss on positions 0..t only: the decoder inputs after t get exactly 0 gradient, because
    every query that could see them is either masked from them or carries no gradient."""
    cfg = tiny_cfg()
    rng, params, _, _, _ = setup(cfg)
    memory = rng.standard_normal((2, 5, cfg.d_model))
    Y = rng.standard_normal((2, 4, cfg.d_model))
    logits, c = s2s.decoder_forward(Y, memory, params, cfg)
    for t in range(3):
        dlogits = rng.standard_normal(logits.shape)
        dlogits[:, t + 1:] = 0.0
        grads = {k: np.zeros_like(v) for k, v in params.items()}
        dY, _ = s2s.decoder_backward(dlogits, c, params, grads)
        assert np.all(dY[:, t + 1:] == 0.0)
        assert np.all(np.abs(dY[:, t]).sum(-1) > 0)
    # and forward: changing a later target token changes no earlier logit
    tgt = rng.integers(0, cfg.tgt_vocab_size, 4)
    a, _ = s2s.decode_forward(params, memory[0], tgt, cfg)
    tgt2 = tgt.copy()
    tgt2[2] = (tgt2[2] + 1) % cfg.tgt_vocab_size
    b, _ = s2s.decode_forward(params, memory[0], tgt2, cfg)
    np.testing.assert_array_equal(a[:2], b[:2])
    assert not np.allclose(a[2:], b[2:])


def test_logit_gradient_sums_to_zero_per_position():
    cfg = tiny_cfg()
    _, params, src, tgt_in, tgt_out = setup(cfg)
    logits, _ = s2s.forward(params, src, tgt_in, cfg)
    _, c_ce = cross_entropy_forward(logits, tgt_out, cfg.label_smoothing)
    dlogits = cross_entropy_backward(1.0, c_ce)
    np.testing.assert_allclose(dlogits.sum(axis=-1), 0.0, atol=1e-16)


def test_encoder_reaches_loss_only_through_cross_attention():
    cfg = tiny_cfg()
    _, params, src, tgt_in, tgt_out = setup(cfg)
    enc_names = [k for k in params if k.startswith("enc") or k == "src_emb"]
    _, grads = s2s.loss_and_grads(params, src, tgt_in, tgt_out, cfg)
    assert all(np.abs(grads[k]).sum() > 0 for k in enc_names if not is_key_bias(k))
    for l in range(cfg.num_dec_layers):                      # cut every value path
        params[f"dec{l}.cross.wv"][:] = 0.0
        params[f"dec{l}.cross.bv"][:] = 0.0
    memory, c_enc = s2s.encode_forward(params, src, cfg)
    logits, c_dec = s2s.decode_forward(params, memory, tgt_in, cfg)
    _, c_ce = cross_entropy_forward(logits, tgt_out, cfg.label_smoothing)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dmemory = s2s.decode_backward(cross_entropy_backward(1.0, c_ce), c_dec, params, grads)
    assert np.all(dmemory == 0.0)                             # keys alone move nothing: V = 0
    _, grads = s2s.loss_and_grads(params, src, tgt_in, tgt_out, cfg)
    assert all(np.all(grads[k] == 0.0) for k in enc_names)


def test_label_smoothed_loss_matches_direct_computation():
    cfg = tiny_cfg(label_smoothing=0.1)
    _, params, src, tgt_in, tgt_out = setup(cfg)
    loss, _ = s2s.loss_and_grads(params, src, tgt_in, tgt_out, cfg)
    logits, _ = s2s.forward(params, src, tgt_in, cfg)
    V, eps, total, n = cfg.tgt_vocab_size, 0.1, 0.0, 0
    for b in range(logits.shape[0]):
        for t in range(logits.shape[1]):
            z = logits[b, t]
            p = np.exp(z) / np.exp(z).sum()
            q = np.full(V, eps / V)
            q[tgt_out[b, t]] += 1 - eps
            total += -(q * np.log(p)).sum()
            n += 1
    assert loss == pytest.approx(total / n, rel=1e-12)
    plain = tiny_cfg(label_smoothing=0.0)
    loss0, _ = s2s.loss_and_grads(params, src, tgt_in, tgt_out, plain)
    P = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    assert loss0 == pytest.approx(-np.log(np.take_along_axis(P, tgt_out[..., None], -1)).mean(), rel=1e-12)


# ----------------------------------------------------------------------------- the paper's toy

def toy_cfg():
    return Seq2SeqConfig(src_vocab_size=4, tgt_vocab_size=4, d_model=4, num_heads=2, d_ff=8,
                         num_enc_layers=1, num_dec_layers=1, ln_eps=0.0, label_smoothing=0.1)


def test_toy_reproduces_the_hand_derivation():
    """The worked page's weights: both heads alike, W_O = I, W1 = [I | I], W2 = [I; I], eps = 0."""
    cfg = toy_cfg()
    params = s2s.init_params(cfg, np.random.default_rng(0))
    for k in params:
        if re.search(r"\.b[qkvo]$|ff[12]_b$|ln\d_b$|out_b", k):
            params[k][:] = 0.0
    head_qk = np.array([[1, 0], [0, 1], [1, 0], [0, 1]], float)
    head_v = np.array([[1, 0], [0, 1], [0, 0], [0, 0]], float)
    params["enc0.wq"] = np.hstack([head_qk, head_qk])
    params["enc0.wk"] = np.hstack([head_qk, head_qk])
    params["enc0.wv"] = np.hstack([head_v, head_v])
    params["enc0.wo"] = np.eye(4)
    params["enc0.ff1_w"] = np.hstack([np.eye(4), np.eye(4)])
    params["enc0.ff2_w"] = np.vstack([np.eye(4), np.eye(4)])
    X = np.array([[1, 0, 1, 0], [0, 1, 0, 1]], float)
    enc, c = s2s.encoder_forward(X, params, cfg, trace=True)
    t = c[0]["trace"]
    np.testing.assert_allclose(t["att"]["Qh"][0], [[2, 0], [0, 2]])
    np.testing.assert_allclose(t["att"]["S"][0], [[2 * 2 ** 0.5, 0], [0, 2 * 2 ** 0.5]])
    a = 1 / (1 + math.exp(-2 * 2 ** 0.5))                   # 0.944
    np.testing.assert_allclose(t["att"]["A"][1], [[a, 1 - a], [1 - a, a]])
    np.testing.assert_allclose(t["att"]["out"], [[a, 1 - a, a, 1 - a], [1 - a, a, 1 - a, a]])
    np.testing.assert_allclose(t["Xn1"], [[1, -1, 1, -1], [-1, 1, -1, 1]], atol=1e-12)
    np.testing.assert_allclose(t["ff"]["out"][0], [2, 0, 2, 0], atol=1e-12)
    np.testing.assert_allclose(enc, [[1, -1, 1, -1], [-1, 1, -1, 1]], atol=1e-12)

    # Cross-attention: queries from the decoder's DEC1, keys and values from ENC.
    wq = np.array([[1, 0], [0, -1], [0, 0], [0, 0]], float)
    params["dec0.cross.wq"] = np.hstack([wq, wq])
    params["dec0.cross.wk"] = params["dec0.cross.wv"] = np.hstack([head_v, head_v])
    params["dec0.cross.wo"] = np.eye(4)
    dec1 = np.array([[1, 1, -1, -1], [-1, -1, 1, 1]], float)
    t = s2s.attention_trace(dec1, enc, params, "dec0.cross.", cfg.num_heads)
    np.testing.assert_allclose(t["Qh"][0], [[1, -1], [-1, 1]], atol=1e-12)
    np.testing.assert_allclose(t["Kh"][0], [[1, -1], [-1, 1]], atol=1e-12)
    np.testing.assert_allclose(t["A"][0], [[a, 1 - a], [1 - a, a]])   # sigmoid(2 sqrt 2) again
    np.testing.assert_allclose(t["Oh"][0], [[2 * a - 1, 1 - 2 * a], [1 - 2 * a, 2 * a - 1]])  # 0.888
    np.testing.assert_allclose(mha_forward(dec1, enc, params, "dec0.cross.", 2)[0], t["out"])

    # Output layer tied to an identity target table, h = [1, 0, -1, 0], target `am` = 2.
    params["tgt_emb"] = np.eye(4)
    logits, _ = s2s.output_forward(np.array([[1.0, 0, -1, 0]]), params, cfg)
    np.testing.assert_allclose(logits, [[1, 0, -1, 0]])
    loss, c_ce = cross_entropy_forward(logits, np.array([2]), 0.1)
    assert loss == pytest.approx(2.5265, abs=1e-4)
    np.testing.assert_allclose(cross_entropy_backward(1.0, c_ce)[0], c_ce["P"][0] - [0.025, 0.025, 0.925, 0.025])


def test_toy_full_forward_exposes_every_intermediate():
    cfg = toy_cfg()
    params = s2s.init_params(cfg, np.random.default_rng(1))
    logits, c = s2s.forward(params, [1, 2], [0, 1], cfg, trace=True)
    t = s2s.flat_trace(c)
    for name in ["src.E", "src.PE", "src.X", "enc0.att.Qh", "enc0.att.Kh", "enc0.att.Vh", "enc0.att.S",
                 "enc0.att.A", "enc0.att.Oh", "enc0.X1", "enc0.Xn1", "enc0.ff.Z", "enc0.ff.A",
                 "enc0.ff.out", "enc0.X2", "enc0.Xn2", "tgt.X", "dec0.self.S_masked", "dec0.self.A",
                 "dec0.Y1", "dec0.Yn1", "dec0.cross.Qh", "dec0.cross.Kh", "dec0.cross.A", "dec0.Y2",
                 "dec0.Yn2", "dec0.ff.Z", "dec0.Y3", "dec0.Yn3", "out.logits", "out.probs"]:
        assert name in t, name
    assert t["enc0.att.Qh"].shape == (2, 2, 2)               # (heads, T, dk)
    assert np.isneginf(t["dec0.self.S_masked"][:, 0, 1]).all()
    np.testing.assert_allclose(t["src.X"], t["src.E"] * 2 + s2s.sinusoidal_positions(2, 4))
    np.testing.assert_allclose(t["dec0.cross.Kh"], s2s.attention_trace(
        t["dec0.Yn1"], t["enc0.Xn2"], params, "dec0.cross.", 2)["Kh"])
    _, c_plain = s2s.forward(params, [1, 2], [0, 1], cfg)
    assert "trace" not in c_plain["enc"]["enc"][0]           # without trace, caches hold only what backward reads


# ----------------------------------------------------------------------------- decoding and training

def test_greedy_decode_is_argmax_of_its_own_prefix():
    cfg = tiny_cfg()
    _, params, src, _, _ = setup(cfg, seed=3)
    bos, eos = 0, 1
    out = s2s.greedy_decode(params, src, cfg, bos, eos, max_len=6)
    assert out.ndim == 2 and out.shape[0] == 2 and 1 <= out.shape[1] <= 6
    for b in range(2):
        row = list(out[b])
        if eos in row:
            row = row[:row.index(eos) + 1]
        logits, _ = s2s.forward(params, src[b], [bos] + row[:-1], cfg)
        assert list(logits.argmax(-1)) == row
    single = s2s.greedy_decode(params, src[0], cfg, bos, eos, max_len=6)
    assert single.ndim == 1 and list(single) == row_of(out[0], eos)
    params["out_b"][:] = 0.0
    params["out_b"][eos] = 1e3                                # a model that can only stop
    np.testing.assert_array_equal(s2s.greedy_decode(params, src, cfg, bos, eos, 6), [[eos], [eos]])


def row_of(row, eos):
    row = list(row)
    return row[:row.index(eos) + 1] if eos in row else row


def test_reversal_task_trains(tmp_path):
    """A short run of the real task (the full run: benchmarks/seq2seq_task.py)."""
    from model import train_seq2seq as task
    r = task.train(steps=250, seed=0, out=tmp_path, eval_every=250, num_eval=200, progress=False)
    assert r["first_loss"] > 2.0 and r["final_loss"] < 0.8    # the label-smoothing floor is 0.537
    assert r["loss_floor"] == pytest.approx(0.537, abs=1e-3)
    assert r["val_exact_match"] >= 0.7 and r["val_token_acc"] >= 0.9    # greedy decoding, held out
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["step"] == 25 and rows[-1]["val_exact_match"] == r["val_exact_match"]
    assert json.loads((tmp_path / "config.json").read_text())["model"]["share_vocab"] is True


# ----------------------------------------------------------------------------- bad input

def test_bad_input():
    cfg = tiny_cfg()
    _, params, src, tgt_in, tgt_out = setup(cfg)
    bad = [
        (dict(src_ids=np.array([[0, 7, 1]])), "src_ids\\[0, 1\\] = 7 is out of range"),
        (dict(src_ids=np.array([-1, 2])), "out of range"),
        (dict(tgt_in_ids=np.array([[0, 6, 1, 2], [0, 1, 2, 3]])), "tgt_in_ids.*out of range"),
        (dict(tgt_out_ids=np.full((2, 4), 6)), "tgt_out_ids.*out of range"),
        (dict(src_ids=np.zeros((2, 9), int)), "length 9.*max_len = 8"),
        (dict(tgt_in_ids=np.zeros((2, 9), int), tgt_out_ids=np.zeros((2, 9), int)), "length 9"),
        (dict(src_ids=np.zeros((2, 0), int)), "length 0"),
        (dict(src_ids=np.zeros((2, 3))), "integers"),
        (dict(src_ids=np.zeros((1, 2, 3), int)), "integers of shape"),
        (dict(src_ids=np.zeros((3, 5), int)), "same B"),
        (dict(tgt_out_ids=np.zeros((2, 3), int)), "tgt_out_ids shape"),
    ]
    for change, msg in bad:
        args = dict(src_ids=src, tgt_in_ids=tgt_in, tgt_out_ids=tgt_out)
        args.update(change)
        with pytest.raises(ModelInputError, match=msg):
            s2s.loss_and_grads(params, cfg=cfg, **args)
    with pytest.raises(ModelInputError, match="memory"):
        s2s.decode_forward(params, np.zeros((2, 5, 3)), tgt_in, cfg)
    with pytest.raises(ModelInputError, match="memory"):
        s2s.decode_forward(params, np.zeros((5, 8)), tgt_in, cfg)
    with pytest.raises(ModelInputError, match="bos_id"):
        s2s.greedy_decode(params, src, cfg, 6, 1, 4)
    with pytest.raises(ModelInputError, match="max_len"):
        s2s.greedy_decode(params, src, cfg, 0, 1, 9)
    with pytest.raises(ModelInputError, match="max_len"):
        s2s.greedy_decode(params, src, cfg, 0, 1, 0)
