"""The encoder-decoder page: its sections, its examples against direct calls of model.seq2seq,
and the equations no other test checks (the page cites these lines as `tests` references)."""
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from model import seq2seq as s2s
from model import train_seq2seq as task
from model.attention import mha_forward, causal_mask
from model.gradcheck import numerical_grad
from model.ops import (layer_norm_forward, cross_entropy_forward, cross_entropy_backward, embedding_backward)
from model.transformer import ffn_forward
from site_builder.run.examples import load_example, fmt_number, fmt_array, value_of
from site_builder.run.trace import trace_locals
from tests.conftest import ROOT, assert_sections

CONCEPTS = ["seq2seq-embed", "seq2seq-encoder-layer", "seq2seq-encoder-backward", "seq2seq-decoder-layer",
            "seq2seq-cross-attention", "seq2seq-decoder-backward", "seq2seq-memory-gradient", "seq2seq-output",
            "seq2seq-model", "seq2seq-greedy", "seq2seq-reversal"]
HEADINGS = ["What is it?", "Why does the model need it?", "Mathematics", "What does each symbol mean?",
            "Actual implementation", "Code and math connection", "Where is it used?"]

EX = load_example(ROOT, "seq2seq:tiny_params").__globals__      # the example module's names
TINY, SRC, TGT_IN, TGT_OUT = EX["TINY"], EX["SRC"], EX["TGT_IN"], EX["TGT_OUT"]


def example(name, *args, **kw):
    return load_example(ROOT, f"seq2seq:{name}")(*args, **kw)


def params():
    return s2s.init_params(TINY, np.random.default_rng(EX["SEED"]))


def cells(a):
    return [[fmt_number(x) for x in row] for row in np.atleast_2d(a)]


# ----------------------------------------------------------------------------- the page

@pytest.mark.parametrize("concept", CONCEPTS)
def test_every_concept_has_every_section(site_page, concept):
    assert_sections(site_page("seq2seq"), concept, HEADINGS)


def test_page_level_content(site_page):
    html = site_page("seq2seq")
    for needle in ["Note · measured", "Hand-picked inputs", "Two shares, one sum", "Cut the value path",
                   "A real run", "The weights, as heatmaps", "<svg", "Tensor shapes"]:
        assert needle in html, needle


# ----------------------------------------------------------------------------- equations the page cites

def test_embedding_is_scaled_rows_plus_positions():
    p = params()
    X, _ = s2s.embed_forward(SRC, p, "src_emb", TINY)
    table, PE = p["src_emb"], s2s.sinusoidal_positions(len(SRC), TINY.d_model)
    np.testing.assert_array_equal(X, table[SRC] * np.sqrt(TINY.d_model) + PE)


def test_embed_backward_scatters_the_scaled_gradient():
    p = params()
    _, c = s2s.embed_forward(np.array([3, 4, 3]), p, "src_emb", TINY)     # id 3 twice: its row sums both
    dX = np.random.default_rng(1).standard_normal((3, TINY.d_model))
    grads = {k: np.zeros_like(v) for k, v in p.items()}
    s2s.embed_backward(dX, c, grads)
    want = np.zeros_like(p["src_emb"])
    want[3] = (dX[0] + dX[2]) * np.sqrt(TINY.d_model)
    want[4] = dX[1] * np.sqrt(TINY.d_model)
    np.testing.assert_allclose(grads["src_emb"], want, rtol=0, atol=1e-15)
    assert np.array_equal(embedding_backward(dX * np.sqrt(TINY.d_model), c["ids"], 6), grads["src_emb"])


def test_encoder_layer_is_post_ln():
    p = params()
    X = EX["embedded_source"](p)
    out, _ = s2s.encoder_layer_forward(X, p, 0, TINY)
    X1 = X + mha_forward(X, X, p, "enc0.", TINY.num_heads)[0]
    Xn1 = layer_norm_forward(X1, p["enc0.ln1_g"], p["enc0.ln1_b"], TINY.ln_eps)[0]
    X2 = Xn1 + ffn_forward(Xn1, p, "enc0.")[0]
    want = layer_norm_forward(X2, p["enc0.ln2_g"], p["enc0.ln2_b"], TINY.ln_eps)[0]
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-14)


def test_decoder_layer_is_post_ln():
    p = params()
    Y, memory = EX["decoder_input"](p), EX["tiny_memory"](p)
    out, _ = s2s.decoder_layer_forward(Y, memory, p, 0, TINY)
    ln = lambda Z, k: layer_norm_forward(Z, p[f"dec0.{k}_g"], p[f"dec0.{k}_b"], TINY.ln_eps)[0]
    Y1 = Y + mha_forward(Y, Y, p, "dec0.self.", TINY.num_heads, causal_mask(len(TGT_IN)))[0]
    Yn1 = ln(Y1, "ln1")
    Yn2 = ln(Yn1 + mha_forward(Yn1, memory, p, "dec0.cross.", TINY.num_heads)[0], "ln2")
    want = ln(Yn2 + ffn_forward(Yn2, p, "dec0.")[0], "ln3")
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-14)


def test_cross_attention_example_equals_a_direct_call():
    r = example("cross_attention_steps")
    p = params()
    d = trace_locals(s2s.decoder_layer_forward, EX["decoder_input"](p), EX["tiny_memory"](p), p, 0, TINY)
    Yn1, memory = value_of(d, "Yn1"), value_of(d, "memory")
    t = trace_locals(mha_forward, Yn1, memory, p, "dec0.cross.", TINY.num_heads)
    np.testing.assert_allclose(value_of(t, "Q"), Yn1 @ p["dec0.cross.wq"] + p["dec0.cross.bq"], atol=1e-14)
    np.testing.assert_allclose(value_of(t, "V"), memory @ p["dec0.cross.wv"] + p["dec0.cross.bv"], atol=1e-14)
    rows = r.blocks[0]["rows"]
    assert rows[0]["value"] == fmt_array(Yn1) and rows[1]["value"] == fmt_array(memory)
    assert rows[-1]["value"] == fmt_array(value_of(d, "cross"))          # what the layer added to its stream
    assert np.array_equal(r.data["out"], value_of(d, "cross"))
    assert value_of(t, "A").shape == (TINY.num_heads, len(TGT_IN), len(SRC))


def test_memory_gradient_is_the_sum_of_layer_shares():
    r = example("memory_gradient_shares")
    shares, total = r.data["shares"], r.data["total"]
    assert r.data["layers"] == [1, 0]                                    # last layer first
    np.testing.assert_allclose(shares[0] + shares[1], total, rtol=0, atol=1e-15)
    assert not np.allclose(shares[0], shares[1])
    p = params()
    memory = EX["tiny_memory"](p)
    logits, c = s2s.decode_forward(p, memory, TGT_IN, TINY)
    _, c_ce = cross_entropy_forward(logits, TGT_OUT, TINY.label_smoothing)
    grads = {k: np.zeros_like(v) for k, v in p.items()}
    direct = s2s.decode_backward(cross_entropy_backward(1.0, c_ce), c, p, grads)
    np.testing.assert_array_equal(direct, total)
    gaps = [float(row["gap"]) for row in r.blocks[-1]["rows"]]
    assert gaps[-1] < 1e-8 and min(gaps[:-1]) > 1e-3           # the sum agrees, neither share alone


def test_output_layer_is_tied():
    p = params()
    H = np.random.default_rng(2).standard_normal((len(TGT_IN), TINY.d_model))
    logits, _ = s2s.output_forward(H, p, TINY)
    np.testing.assert_allclose(logits, H @ p["tgt_emb"].T + p["out_b"], rtol=0, atol=1e-14)
    assert "out_w" not in p and "out_w" not in s2s.param_names(TINY)


def test_task_example_equals_a_direct_call():
    r = example("task_examples")
    src, lengths = task.sample_sources(4, np.random.default_rng(EX["SEED"]))
    tgt_in, tgt_out = task.make_targets(src, lengths)
    for b in range(4):
        assert task.decode_text(tgt_out[b]) == task.decode_text(src[b])[::-1]
        assert np.array_equal(tgt_in[b, 1:], tgt_out[b, :-1])
    assert [row[0] for row in r.blocks[1]["rows"]] == [task.decode_text(s) for s in src]
    assert [row[3] for row in r.blocks[1]["rows"]] == [str(t.tolist()) for t in tgt_out]
    assert r.blocks[0]["rows"][1] == ["BOS", str(task.BOS)]


# ----------------------------------------------------------------------------- examples = direct calls

def test_embed_example_equals_a_direct_call():
    r = example("embed_steps")
    X, _ = s2s.embed_forward(SRC, params(), "src_emb", TINY)
    assert r.blocks[0]["rows"][-1]["value"] == fmt_array(X)
    assert r.blocks[0]["rows"][0]["value"] == str(SRC.tolist())


def test_scale_example_equals_a_direct_call():
    r = example("embed_scale")
    cfg = EX["task_config"]()
    p = s2s.init_params(cfg, np.random.default_rng(EX["SEED"]))
    E = p["emb"]
    assert r.data["E"] == pytest.approx(float(np.sqrt(np.mean(E * E))), rel=1e-12)
    assert r.data["Es"] == pytest.approx(r.data["E"] * np.sqrt(cfg.d_model), rel=1e-12)
    PE = s2s.sinusoidal_positions(cfg.src_vocab_size, cfg.d_model)
    assert r.data["PE"] == pytest.approx(float(np.sqrt(np.mean(PE * PE))), rel=1e-12)


def test_encoder_backward_example_equals_a_direct_call():
    r = example("encoder_layer_backward_gradcheck")
    p = params()
    X = EX["embedded_source"](p)
    _, c = s2s.encoder_layer_forward(X, p, 0, TINY)
    grads = {k: np.zeros_like(v) for k, v in p.items()}
    dX = s2s.encoder_layer_backward(EX["G_HAND"], c, p, 0, grads)
    np.testing.assert_array_equal(r.data["dX"], dX)
    np.testing.assert_allclose(r.data["dX1"] + r.data["dXq"] + r.data["dXkv"], dX, rtol=0, atol=1e-15)
    assert r.blocks[3]["rows"] == cells(dX)
    assert all(float(row["gap"]) < 1e-8 for row in r.blocks[-1]["rows"])


def test_cut_value_path_example_equals_a_direct_call():
    r = example("memory_only_through_cross_attention")
    p = params()
    for l in range(TINY.num_dec_layers):
        p[f"dec{l}.cross.wv"][:] = 0.0
        p[f"dec{l}.cross.bv"][:] = 0.0
    _, grads = s2s.loss_and_grads(p, SRC, TGT_IN, TGT_OUT, TINY)
    enc = [k for k in p if k.startswith("enc") or k == "src_emb"]
    assert all(np.all(grads[k] == 0.0) for k in enc)
    assert np.all(r.data[True]["dmemory"] == 0.0) and r.data[True]["zero"] == len(enc)
    assert r.data[False]["enc"] > 0 and np.abs(r.data[False]["dmemory"]).max() > 0


def test_tied_shares_example_equals_a_direct_call():
    r = example("tied_output_shares")
    _, grads = s2s.loss_and_grads(params(), SRC, TGT_IN, TGT_OUT, TINY)
    np.testing.assert_array_equal(r.data["total"], grads["tgt_emb"])
    unread = [v for v in range(TINY.tgt_vocab_size) if v not in TGT_IN]
    np.testing.assert_allclose(r.data["share"][unread], grads["tgt_emb"][unread], rtol=0, atol=1e-16)


def test_loss_example_equals_a_direct_call():
    r = example("loss_and_grads_gradcheck")
    loss, grads = s2s.loss_and_grads(params(), SRC, TGT_IN, TGT_OUT, TINY)
    assert r.data["loss"] == loss
    assert r.blocks[0]["rows"][1]["value"] == fmt_number(loss)
    assert all(float(row["gap"]) < 1e-8 for row in r.blocks[1]["rows"])


def test_parameter_table_equals_init_params():
    r = example("parameter_table")
    p = s2s.init_params(EX["task_config"](), np.random.default_rng(0))
    assert r.data["total"] == sum(v.size for v in p.values()) and r.data["count"] == len(p)


def test_greedy_example_equals_a_direct_call():
    r = example("greedy_steps")
    out = s2s.greedy_decode(params(), SRC, TINY, EX["GREEDY_BOS"], EX["GREEDY_EOS"], TINY.max_len)
    assert np.array_equal(r.data["result"], out)
    assert [row[2] for row in r.data["rows"]] == [str([int(i)]) for i in out]


def test_weights_example():
    r = example("cross_attention_weights")
    _, c = s2s.forward(params(), SRC, TGT_IN, TINY, trace=True)
    for l, A in enumerate(r.data["A"]):
        np.testing.assert_array_equal(A, c["dec"]["dec"]["layers"][l]["cross"]["A"])
        assert A.min() > 0 and np.allclose(A.sum(-1), 1)


def test_reversal_run_equals_a_direct_call_of_train():
    """A short run through the example's own code against train() called here (the page's run is
    longer and cached by the build)."""
    kw = dict(steps=20, eval_every=20, num_eval=20, log_every=10)
    r = example("reversal_run", **kw)
    with tempfile.TemporaryDirectory() as out:
        direct = task.train(seed=EX["SEED"], out=out, progress=False, **kw)
        rows = [json.loads(x) for x in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    assert r.data["losses"] == [(m["step"], m["loss"]) for m in rows if "loss" in m]
    assert r.data["exact"] == direct["val_exact_match"] and r.data["final"] == direct["final_loss"]
    assert r.data["floor"] == task.smoothing_floor(task.VOCAB, direct["cfg"].label_smoothing)


def test_page_shows_the_cached_run(site_page):
    html = site_page("seq2seq")
    assert fmt_number(task.smoothing_floor(task.VOCAB, 0.1)) in html
    assert "Held-out exact match" in html
