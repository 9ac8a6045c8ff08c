"""The Embeddings page: its sections are built, the equations it states hold, and every number its
examples print is what a direct call of the model gives."""

import numpy as np
import pytest

from model.config import ModelConfig
from model.gradcheck import numerical_grad
from model.ops import embedding_forward, embedding_backward
from model.transformer import init_params, embed_forward, embed_backward, loss_and_grads
from site_builder.run.examples import load_example, fmt_array
from tests.conftest import ROOT, concept_section as section

CONCEPTS = ["embeddings-forward", "embeddings-backward"]
HEADINGS = ["What is it?", "Why does the model need it?", "Mathematics", "What does each symbol mean?",
            "Tiny numerical example", "Tensor shapes", "Actual implementation", "Code and math connection",
            "Where is it used?"]


def example(name):
    return load_example(ROOT, f"embeddings:{name}")()


def module():
    load_example(ROOT, "embeddings:batch")
    import sys
    return sys.modules["content_examples_embeddings"]


# ---------------------------------------------------------------- the equations of the page

def test_lookup_is_a_product_with_one_hot_rows():
    rng = np.random.default_rng(0)
    V, d = 7, 3
    table = rng.standard_normal((V, d))
    ids = np.array([2, 5, 2, 0, 2])
    onehot = np.eye(V)[ids]                               # (T, V), a single 1 per row
    np.testing.assert_array_equal(onehot @ table, table[ids])
    np.testing.assert_array_equal(embedding_forward(ids, table)[0], table[ids])


def test_embed_forward_is_token_row_plus_position_row():
    cfg = ModelConfig(vocab_size=9, seq_len=6, emb_dim=4, num_heads=2, ff_dim=8, num_layers=1)
    params = init_params(cfg, np.random.default_rng(3))
    ids = np.array([4, 1, 4, 4])                          # T = 4 < seq_len: the first rows of pos_emb
    T = len(ids)
    X, cache = embed_forward(ids, params)
    np.testing.assert_array_equal(X, params["tok_emb"][ids] + params["pos_emb"][:T])
    assert cache is ids


def test_scatter_add_is_a_product_with_one_hot_rows():
    rng = np.random.default_rng(1)
    V, d = 6, 3
    ids = np.array([[1, 4, 1, 1], [0, 4, 2, 1]])          # 1 five times, 3 and 5 never
    dout = rng.standard_normal((2, 4, d))
    onehot = np.eye(V)[ids.reshape(-1)]                   # (B*T, V)
    np.testing.assert_allclose(embedding_backward(dout, ids, V), onehot.T @ dout.reshape(-1, d), rtol=1e-14, atol=1e-15)


# ---------------------------------------------------------------- the built page

@pytest.mark.parametrize("sid", CONCEPTS)
def test_page_has_each_concept_with_its_headings(site_page, sid):
    part = section(site_page("embeddings"), sid)
    for heading in HEADINGS:
        assert heading in part, f"{sid} lacks '{heading}'"


def test_page_shows_the_scatter_add_and_the_gradient_check(site_page):
    html = site_page("embeddings")
    assert "Repeated letters accumulate" in html and "Checking both tables numerically" in html
    assert "np.add.at" in html


# ---------------------------------------------------------------- the examples against direct calls

def test_forward_example_matches_a_direct_call():
    m = module()
    params = m.tiny_params()
    x, _ = m.batch()
    X, _ = embed_forward(x[0], params)
    r = example("embed_forward_one")
    np.testing.assert_array_equal(r.data["X"], X)
    np.testing.assert_array_equal(r.data["tok"], params["tok_emb"][x[0]])
    assert r.data["same_tok"] and not r.data["same_X"]
    shown = [b for b in r.blocks if b["kind"] == "matrix" and b["name"].startswith("X")][0]
    assert shown["rows"][0] == [f"{v:.4f}" if v != 0 else "0.0000" for v in X[0]]


def test_token_gradient_is_the_sum_of_the_rows_of_repeated_ids():
    m = module()
    params = m.tiny_params()
    x, y = m.batch()
    r = example("embed_backward_tokens")
    _, grads = loss_and_grads(params, x, y, m.tiny_config())
    np.testing.assert_array_equal(r.data["tok_emb"], grads["tok_emb"])
    dX = r.data["dX"]
    # embed_backward on that dX alone gives the same token gradient
    alone = {"tok_emb": np.zeros_like(params["tok_emb"]), "pos_emb": np.zeros_like(params["pos_emb"])}
    embed_backward(dX, x, alone)
    np.testing.assert_array_equal(alone["tok_emb"], grads["tok_emb"])
    o = int(m.tokenizer().encode("o")[0])
    np.testing.assert_allclose(grads["tok_emb"][o], dX[x == o].sum(axis=0), rtol=1e-13, atol=1e-15)
    assert all(gap < 1e-12 for gap in r.data["gaps"].values())
    assert (grads["tok_emb"][int(m.tokenizer().encode("z")[0])] == 0).all()
    rows = r.blocks[0]["rows"]
    assert [f'grads["tok_emb"][{o}]', f"'o' (id {o})", fmt_array(grads["tok_emb"][o])] in rows
    # the naive scatter really is different
    assert not np.allclose(r.data["naive"][o], grads["tok_emb"][o])


def test_position_gradient_sums_over_the_batch():
    m = module()
    params = m.tiny_params()
    x, y = m.batch()
    _, grads = loss_and_grads(params, x, y, m.tiny_config())
    r = example("embed_backward_positions")
    T = x.shape[1]
    np.testing.assert_allclose(grads["pos_emb"][:T], r.data["dX"].sum(axis=0), rtol=1e-13, atol=1e-15)
    assert (grads["pos_emb"][T:] == 0).all()
    np.testing.assert_array_equal(r.data["pos_emb"], grads["pos_emb"])


def test_gradient_check_agrees_with_central_differences():
    m = module()
    params = m.tiny_params()
    x, y = m.batch()
    r = example("embed_gradcheck")
    num = numerical_grad(lambda: m._loss(params, x, y), params["pos_emb"], h=m.H)
    np.testing.assert_array_equal(r.data["num_pos"], num)
    assert np.max(np.abs(r.data["tok_emb"] - r.data["num_tok"])) < 1e-6
    assert np.max(np.abs(r.data["pos_emb"] - r.data["num_pos"])) < 1e-6


def test_the_kink_explains_the_step_size():
    m = module()
    r = example("embed_gradcheck_step")
    gaps = r.data["gaps"]
    assert gaps[1e-5] > 1e-3 > 1e-6 > gaps[1e-6] > gaps[1e-7]
    assert r.data["char_at_kink"] == m.KINK_CHAR
    assert abs(r.data["kink"][3]) < 1e-3
