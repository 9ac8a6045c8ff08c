"""The Full Model page: its sections are built, the equations it states hold, and every number its
examples print is what a direct call of the model gives."""
import sys

import numpy as np
import pytest

from model import ModelInputError
from model.config import ModelConfig
from model.ops import layer_norm_forward, linear_backward, linear_forward, relu_backward, relu_forward, xavier_uniform
from model.optim import decays
from model.transformer import block_forward, embed_forward, forward, init_params, loss_and_grads
from site_builder.run.examples import fmt_array, load_example
from site_builder.run.trace import trace_calls
from tests.conftest import ROOT, concept_section as section

CONCEPTS = ["model-forward", "model-backward", "model-linear", "model-relu", "model-init", "model-check-ids"]
HEADINGS = ["What is it?", "Why does the model need it?", "Mathematics", "What does each symbol mean?",
            "Tiny numerical example", "Actual implementation", "Code and math connection", "Where is it used?"]
CFG = ModelConfig(vocab_size=11, seq_len=8, emb_dim=16, num_heads=4, ff_dim=24, num_layers=3)


def example(name):
    return load_example(ROOT, f"model:{name}")()


def module():
    load_example(ROOT, "model:batch")
    return sys.modules["content_examples_model"]


# ---------------------------------------------------------------- the equations of the page

def test_forward_is_embeddings_blocks_layernorm_head():
    params = init_params(CFG, np.random.default_rng(0))
    ids = np.random.default_rng(1).integers(0, CFG.vocab_size, size=(2, 7))
    logits, c = forward(params, ids, CFG)
    X, _ = embed_forward(ids, params)
    for l in range(CFG.num_layers):
        X, _ = block_forward(X, params, l, CFG)
    Xf, _ = layer_norm_forward(X, params["lnf_g"], params["lnf_b"], CFG.ln_eps)
    np.testing.assert_array_equal(c["Xf"], Xf)
    np.testing.assert_allclose(logits, Xf @ params["head_w"] + params["head_b"], rtol=1e-13, atol=1e-15)


def test_backward_runs_the_last_block_first():
    cfg = CFG
    params = init_params(cfg, np.random.default_rng(0))
    ids = np.random.default_rng(2).integers(0, cfg.vocab_size, size=(2, 5))
    targets = np.roll(ids, -1, axis=1)
    targets_ = ["model.transformer.block_backward", "model.transformer.embed_backward"]
    _, traces = trace_calls(loss_and_grads, targets_, params, ids, targets, cfg)
    blocks = traces["model.transformer.block_backward"]
    order = [t.arguments["l"] for t in sorted(blocks, key=lambda t: t.call_index)]
    assert order == list(reversed(range(cfg.num_layers)))
    every = sorted((t.call_index, q) for q, ts in traces.items() for t in ts)
    calls = [q for _, q in every]
    assert calls[-1] == "model.transformer.embed_backward"


def test_parameter_count_formula():
    cfg = ModelConfig(vocab_size=13, seq_len=6, emb_dim=10, num_heads=2, ff_dim=7, num_layers=3)
    V, Tm, d, F, L = cfg.vocab_size, cfg.seq_len, cfg.emb_dim, cfg.ff_dim, cfg.num_layers
    total = sum(v.size for v in init_params(cfg, np.random.default_rng(0)).values())
    assert total == V * d + Tm * d + L * (4 * d * d + 4 * d + 4 * d + 2 * d * F + F + d) + 2 * d + d * V + V


# ---------------------------------------------------------------- the built page

@pytest.mark.parametrize("sid", CONCEPTS)
def test_page_has_each_concept_with_its_headings(site_page, sid):
    part = section(site_page("model"), sid)
    for heading in HEADINGS:
        assert heading in part, f"{sid} lacks '{heading}'"


def test_page_has_shapes_and_the_backward_flow(site_page):
    html = site_page("model")
    for sid in ("model-forward", "model-backward", "model-linear", "model-relu", "model-check-ids"):
        assert "Tensor shapes" in section(html, sid), sid
    assert "(16, 84)" in section(html, "model-forward")          # logits at the default config
    backward = section(html, "model-backward")
    assert "Gradient flow, in the order of" in backward
    assert backward.index("block_backward") < backward.index("embed_backward")


# ---------------------------------------------------------------- the examples against direct calls

def test_forward_example_matches_a_direct_call():
    m = module()
    x, _ = m.batch()
    logits, c = forward(m.tiny_params(), x, m.tiny_config())
    r = example("forward_steps")
    np.testing.assert_array_equal(r.data["logits"], logits)
    np.testing.assert_array_equal(r.data["Xf"], c["Xf"])
    rows = r.blocks[0]["rows"]
    assert [row["label"].split(":")[0] for row in rows] == ["Embeddings", "Block l = 0", "Block l = 1",
                                                           "Final LayerNorm", "Head"]
    assert rows[3]["value"] == fmt_array(c["Xf"][-1])
    top = r.blocks[1]["rows"]
    assert top[0][1] == m.show_char(m.tokenizer().chars[int(np.argmax(logits[-1]))])


def test_backward_example_runs_the_blocks_in_reverse():
    m = module()
    x, y = m.batch()
    loss, grads = loss_and_grads(m.tiny_params(), x, y, m.tiny_config())
    r = example("backward_order")
    assert r.data["order"] == [1, 0]
    assert r.data["loss"] == loss
    for k in grads:
        np.testing.assert_array_equal(r.data["grads"][k], grads[k])
    labels = [row["label"] for row in r.blocks[0]["rows"]]
    assert labels == ["Loss", "Head", "Final LayerNorm", "Block l = 1", "Block l = 0", "Embeddings"]


def test_model_gradient_check_is_tight():
    r = example("model_gradcheck")
    assert all(gap < 1e-7 for gap in r.data["gaps"].values()), r.data["gaps"]


def test_init_stats_match_init_params():
    m = module()
    cfg = m.default_config()
    p = init_params(cfg, np.random.default_rng(m.SEED))
    r = example("init_stats")
    assert all(r.data["within"].values()) and set(r.data["within"]) >= {"head_w", "b0.wq", "b0.ff1_w"}
    rows = {row[0]: row for row in r.data["rows"]}
    assert set(rows) == {k for k in p if not (k.startswith("b") and not k.startswith("b0."))}
    for name, row in rows.items():
        assert row[1] == str(p[name].shape) and row[2] == f"{p[name].size:,}"
        assert row[7] == ("yes" if decays(name) else "no")
        assert row[5] == f"{np.abs(p[name]).max():.4f}"
    assert rows["lnf_g"][3] == "ones" and rows["b0.bq"][3] == "zeros"


def test_xavier_draw_is_the_real_one():
    m = module()
    cfg = m.default_config()
    W = xavier_uniform(cfg.emb_dim, cfg.vocab_size, np.random.default_rng(m.SEED))
    r = example("xavier_draw")
    np.testing.assert_array_equal(r.data["W"], W)
    assert r.data["a"] == np.sqrt(6.0 / (cfg.emb_dim + cfg.vocab_size))
    assert np.abs(W).max() <= r.data["a"]


def test_param_count_matches_init_params():
    m = module()
    cfg = m.default_config()
    total = sum(v.size for v in init_params(cfg, np.random.default_rng(0)).values())
    r = example("param_count")
    assert r.data["total"] == total and r.data["unclaimed"] == []
    last = r.blocks[0]["rows"][-1]
    assert last[0] == "Total" and last[3] == last[4] == f"{total:,}"
    assert all(row[3] == row[4] for row in r.blocks[0]["rows"])


def test_check_ids_messages_are_the_real_ones():
    m = module()
    cfg = m.default_config()
    params = init_params(cfg, np.random.default_rng(0))
    r = example("check_ids_messages")
    with pytest.raises(ModelInputError) as e:
        forward(params, np.array([5, -1]), cfg)
    assert str(e.value) in r.data["messages"]
    with pytest.raises(ModelInputError) as e:
        forward(params, np.zeros((1, cfg.seq_len + 1), int), cfg)
    assert str(e.value) in r.data["messages"]
    assert "(no error)" not in r.data["messages"]
    assert r.data["silent"] is True


def test_linear_examples_match_direct_calls():
    m = module()
    Y, _ = linear_forward(m.LIN_X, m.LIN_W, m.LIN_B)
    np.testing.assert_array_equal(example("linear_forward_worked").data["Y"], Y)
    dX, dW, db = linear_backward(m.LIN_G, m.LIN_X, m.LIN_W)
    r = example("linear_backward_worked")
    np.testing.assert_array_equal(r.data["dX"], m.LIN_G @ m.LIN_W.T)
    np.testing.assert_array_equal(r.data["dW"], m.LIN_X.T @ m.LIN_G)
    np.testing.assert_array_equal(r.data["db"], m.LIN_G.sum(axis=0))
    np.testing.assert_array_equal(r.data["dW"], dW)
    rows = {row["label"]: row["value"] for row in r.blocks[0]["rows"]}
    assert rows["dW = X^T G"] == fmt_array(dW)


def test_relu_example_matches_direct_calls():
    m = module()
    A, positive = relu_forward(m.RELU_Z)
    r = example("relu_worked")
    np.testing.assert_array_equal(r.data["A"], A)
    np.testing.assert_array_equal(r.data["dZ"], relu_backward(m.RELU_DA, positive))
    assert r.data["dZ"][0, list(m.RELU_Z[0]).index(0.0)] == 0.0       # blocked at exactly 0
