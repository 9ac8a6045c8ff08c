"""The Attention page: each of its equations checked against model.attention and the softmax of
model.ops (the page cites these lines), the page's sections, and every example table against a
direct call of the model."""
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from model.attention import (split_heads, merge_heads, causal_mask, hiding, mha_forward, mha_backward,
                             attention_forward, attention_backward)
from model.config import ModelConfig
from model.gradcheck import numerical_grad, rel_error
from model.ops import softmax_forward, softmax_backward
from model.transformer import forward
from site_builder.run.examples import load_example, fmt_array, fmt_number
from site_builder.run.trace import trace_locals
from tests.conftest import concept_section

ROOT = Path(__file__).resolve().parent.parent
D, H, DK = 6, 3, 2
NAMES = ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo")


def params_with_biases(seed=3):
    """Random weights and NONZERO biases, so that every bias term of every equation shows."""
    rng = np.random.default_rng(seed)
    return {"a." + n: rng.standard_normal((D, D)) * 0.5 if n.startswith("w") else rng.standard_normal(D) * 0.3
            for n in NAMES}


def changes(trace, name):
    """Every value a local took, in order (S and dS are changed in place)."""
    return [s.locals[name] for s in trace.steps if name in s.changed]


@pytest.fixture
def fwd():
    rng = np.random.default_rng(11)
    Xq, Xkv = rng.standard_normal((4, D)), rng.standard_normal((5, D))
    mask = rng.random((4, 5)) < 0.6
    mask[:, 0] = True                                   # every query sees at least one key
    params = params_with_biases()
    t = trace_locals(mha_forward, Xq, Xkv, params, "a.", H, mask)
    return t, Xq, Xkv, params, mask


# ---------------------------------------------------------------- forward equations

def test_projections(fwd):
    t, Xq, Xkv, params, _ = fwd
    L = t.final_locals()
    np.testing.assert_allclose(L["Q"], Xq @ params["a.wq"] + params["a.bq"], rtol=1e-14)
    np.testing.assert_allclose(L["K"], Xkv @ params["a.wk"] + params["a.bk"], rtol=1e-14)
    np.testing.assert_allclose(L["V"], Xkv @ params["a.wv"] + params["a.bv"], rtol=1e-14)


def test_head_i_takes_columns_i_dk_to_i_plus_1_dk():
    X = np.arange(4.0 * D).reshape(4, D)
    for i in range(H):
        np.testing.assert_array_equal(split_heads(X, H)[i], X[:, i * DK:(i + 1) * DK])
    np.testing.assert_array_equal(merge_heads(split_heads(X, H)), X)
    np.testing.assert_array_equal(merge_heads(split_heads(X, H)), np.concatenate(list(split_heads(X, H)), axis=-1))


def test_causal_mask_and_hiding():
    m = causal_mask(5)
    assert all(m[t, s] == (s <= t) for t in range(5) for s in range(5))
    np.testing.assert_array_equal(hiding(m, "float64"), np.where(m, 0.0, -np.inf))


def test_scores_scale_mask_and_softmax(fwd):
    t, _, _, _, mask = fwd
    L = t.final_locals()
    raw, scaled, masked = changes(t, "S")
    np.testing.assert_allclose(raw, L["Qh"] @ np.swapaxes(L["Kh"], -1, -2), rtol=1e-14)
    np.testing.assert_allclose(scaled, raw / math.sqrt(DK), rtol=1e-15)
    assert (masked[:, ~mask] == -np.inf).all() and (masked[:, mask] == scaled[:, mask]).all()
    E = np.exp(masked - masked.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(L["A"], E / E.sum(axis=-1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(L["A"].sum(axis=-1), 1.0, rtol=0, atol=1e-15)
    assert (L["A"][:, ~mask] == 0.0).all()              # exactly: exp(-inf) is 0


def test_softmax_forward_is_shift_free():
    S = np.array([[1000.0, 999.0, -np.inf], [0.5, -0.25, 2.0]])
    P, _ = softmax_forward(S.copy())
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(P, E / E.sum(axis=-1, keepdims=True), rtol=1e-15)
    assert P[0, 2] == 0.0 and np.isfinite(P).all()


def test_weighted_values_merge_and_output_projection(fwd):
    t, Xq, Xkv, params, mask = fwd
    L = t.final_locals()
    heads = [L["A"][i] @ L["Vh"][i] for i in range(H)]
    np.testing.assert_allclose(L["O"], np.concatenate(heads, axis=-1), rtol=1e-14)
    np.testing.assert_allclose(t.result[0], L["O"] @ params["a.wo"] + params["a.bo"], rtol=1e-14)


def test_equation_1_and_multi_head_written_out(fwd):
    t, Xq, Xkv, params, mask = fwd
    Q, K, V = (X @ params["a.w" + n] + params["a.b" + n] for X, n in ((Xq, "q"), (Xkv, "k"), (Xkv, "v")))
    heads = []
    for i in range(H):
        c = slice(i * DK, (i + 1) * DK)
        S = np.where(mask, Q[:, c] @ K[:, c].T / np.sqrt(DK), -np.inf)
        heads.append(np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True) @ V[:, c])
    expected = np.concatenate(heads, axis=-1) @ params["a.wo"] + params["a.bo"]
    np.testing.assert_allclose(t.result[0], expected, rtol=1e-12, atol=1e-14)


def test_language_model_attention_is_causal_self_attention():
    rng = np.random.default_rng(5)
    cfg = ModelConfig(vocab_size=5, seq_len=4, emb_dim=D, num_heads=H)
    Xn, params = rng.standard_normal((2, 4, D)), params_with_biases()
    out, c = attention_forward(Xn, params, "a.", cfg)
    np.testing.assert_array_equal(out, mha_forward(Xn, Xn, params, "a.", H, causal_mask(4))[0])


# ---------------------------------------------------------------- backward equations

@pytest.fixture
def bwd(fwd):
    _, Xq, Xkv, params, mask = fwd
    out, c = mha_forward(Xq, Xkv, params, "a.", H, mask)
    dOut = np.random.default_rng(12).standard_normal(out.shape)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    t = trace_locals(mha_backward, dOut, c, params, "a.", grads)
    return t, c, dOut, params, grads, mask, Xq, Xkv


def test_backward_through_output_projection_and_values(bwd):
    t, c, dOut, params, grads, *_ = bwd
    L = t.final_locals()
    np.testing.assert_allclose(L["dO"], dOut @ params["a.wo"].T, rtol=1e-14)
    np.testing.assert_allclose(grads["a.wo"], c["O"].T @ dOut, rtol=1e-14)
    np.testing.assert_allclose(grads["a.bo"], dOut.sum(axis=0), rtol=1e-14)
    np.testing.assert_allclose(L["dA"], L["dOh"] @ np.swapaxes(c["Vh"], -1, -2), rtol=1e-14)
    np.testing.assert_allclose(L["dVh"], np.swapaxes(c["A"], -1, -2) @ L["dOh"], rtol=1e-14)


def test_softmax_jacobian(bwd):
    t, c, *_ = bwd
    dA, A = t.final_locals()["dA"], c["A"]
    dS = changes(t, "dS")[0]
    np.testing.assert_allclose(dS, A * (dA - (dA * A).sum(axis=-1, keepdims=True)), rtol=1e-13, atol=1e-16)
    for h in range(A.shape[0]):
        for r in range(A.shape[1]):
            J = np.diag(A[h, r]) - np.outer(A[h, r], A[h, r])
            np.testing.assert_allclose(dS[h, r], J @ dA[h, r], rtol=1e-12, atol=1e-16)


def test_hidden_scores_get_exactly_zero_gradient(bwd):
    t, c, *_, mask, _, _ = bwd
    dS = changes(t, "dS")[-1]
    assert (dS[:, ~mask] == 0.0).all()
    assert np.abs(dS.sum(axis=-1)).max() < 1e-15


def test_backward_scale_queries_and_keys(bwd):
    t, c, *_ = bwd
    L = t.final_locals()
    dS_soft, dS = changes(t, "dS")
    np.testing.assert_allclose(dS, dS_soft / math.sqrt(DK), rtol=1e-15)
    np.testing.assert_allclose(L["dQh"], dS @ c["Kh"], rtol=1e-14)
    np.testing.assert_allclose(L["dKh"], np.swapaxes(dS, -1, -2) @ c["Qh"], rtol=1e-14)


def test_backward_to_the_inputs_and_projection_weights(bwd):
    t, c, dOut, params, grads, mask, Xq, Xkv = bwd
    L = t.final_locals()
    dXq, dXkv = t.result
    np.testing.assert_allclose(dXq, merge_heads(L["dQh"]) @ params["a.wq"].T, rtol=1e-13)
    np.testing.assert_allclose(dXkv, merge_heads(L["dKh"]) @ params["a.wk"].T + merge_heads(L["dVh"]) @ params["a.wv"].T, rtol=1e-13)
    np.testing.assert_allclose(grads["a.wq"], Xq.T @ merge_heads(L["dQh"]), rtol=1e-13)
    np.testing.assert_allclose(grads["a.wk"], Xkv.T @ merge_heads(L["dKh"]), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(grads["a.wv"], Xkv.T @ merge_heads(L["dVh"]), rtol=1e-13)


def test_mha_backward_against_central_differences(fwd):
    _, Xq, Xkv, params, mask = fwd
    out, c = mha_forward(Xq, Xkv, params, "a.", H, mask)
    G = np.random.default_rng(13).standard_normal(out.shape)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXq, dXkv = mha_backward(G, c, params, "a.", grads)
    f = lambda: float((mha_forward(Xq, Xkv, params, "a.", H, mask)[0] * G).sum())
    assert rel_error(dXq, numerical_grad(f, Xq)) < 1e-7 and rel_error(dXkv, numerical_grad(f, Xkv)) < 1e-7
    for n in ("wq", "wk", "wv", "wo", "bq", "bv", "bo"):
        assert rel_error(grads["a." + n], numerical_grad(f, params["a." + n])) < 1e-7, n
    assert np.abs(grads["a.bk"]).max() < 1e-14          # a key bias shifts a whole row of scores: softmax ignores it


def test_language_model_attention_backward_adds_both_paths():
    rng = np.random.default_rng(6)
    cfg = ModelConfig(vocab_size=5, seq_len=4, emb_dim=D, num_heads=H)
    Xn, params, G = rng.standard_normal((4, D)), params_with_biases(), rng.standard_normal((4, D))
    _, c = attention_forward(Xn, params, "a.", cfg)
    g1, g2 = ({k: np.zeros_like(v) for k, v in params.items()} for _ in range(2))
    dXq, dXkv = mha_backward(G, c, params, "a.", g1)
    dXn = attention_backward(G, c, params, "a.", g2)
    np.testing.assert_array_equal(dXn, dXq + dXkv)
    f = lambda: float((attention_forward(Xn, params, "a.", cfg)[0] * G).sum())
    assert rel_error(dXn, numerical_grad(f, Xn)) < 1e-7


# ---------------------------------------------------------------- the page and its examples

HEADINGS = ("What is it?", "Mathematics", "Tensor shapes", "Actual implementation",
            "Code and math connection", "Where is it used?")
CONCEPTS = ["attention-heads", "attention-mask", "attention-mha", "attention-lm", "attention-backward",
            "attention-lm-backward"]


def example(name):
    return load_example(ROOT, f"attention:{name}")


def module():
    example("tiny_params")
    return sys.modules["content_examples_attention"]


@pytest.mark.parametrize("concept", CONCEPTS)
def test_page_has_its_sections(site_page, concept):
    html = site_page("attention")
    assert f'id="{concept}"' in html
    section = html.split(f'id="{concept}"', 1)[1].split('<section class="concept"', 1)[0]
    for heading in HEADINGS:
        assert heading in section, (concept, heading)


def test_page_has_the_trained_heatmaps(site_page):
    html = site_page("attention")
    assert html.count('<svg class="heatmap"') >= 2 and 'class="masked"' in html


def example_heading(html, concept):
    return re.search(rf'<h3 id="{concept}--example">([^<]*)</h3>', html).group(1)


def test_the_example_heading_says_which_model_computed_them(site_page):
    """An example that read the trained run is not a tiny example: the heading says which
    model the numbers under it come from."""
    html = site_page("attention")
    assert example_heading(html, "attention-lm") == "Computed with the trained language model"
    assert example_heading(html, "attention-mha") == "Numerical examples: a tiny model, and the trained language model"
    assert example_heading(html, "attention-backward") == "Tiny numerical example"


def test_every_heatmap_of_the_page_names_its_axes_alike(site_page):
    """The heatmap the reader chooses is drawn like the ones above it: query rows, key columns."""
    html = concept_section(site_page("attention"), "attention-lm")
    axes = re.findall(r'<svg class="heatmap"[^>]*data-xlabel="([^"]*)" data-ylabel="([^"]*)" data-value="([^"]*)" '
                      r'data-masked="([^"]*)"', html)
    assert len(axes) >= 3 and len(set(axes)) == 1, axes
    assert axes[0][:2] == ("key: character s", "query: character t")


def test_the_stepper_shows_what_each_line_reads():
    """Keys and values are made from Xkv, not from Q and K: each step's "before" is the array its
    line reads, and a line that reads no array of its result's shape has no "before"."""
    m = module()
    block = example("forward_steps")().blocks[0]
    steps = {st["name"]: st for st in block["steps"]}
    row = [fmt_number(x) for x in m.XN_HAND[block["row"]]]
    assert (steps["Q"]["before_name"], steps["Q"]["before"]) == ("Xq", row)
    for name in ("K", "V"):
        assert (steps[name]["before_name"], steps[name]["before"]) == ("Xkv", row), name
    assert steps["O"]["before"] is None                   # merge_heads(A @ Vh) reads per-head arrays
    assert steps["out"]["before_name"] == "O"


def test_heads_example_equals_split_heads():
    m = module()
    ex = example("heads_split_merge")()
    Xh = split_heads(m.HEADS_X, m.HEADS_H)
    np.testing.assert_array_equal(ex.data["Xh"], Xh)
    assert [b["rows"] for b in ex.blocks if b["kind"] == "matrix"][1] == [[f"{x:.4f}" for x in r] for r in Xh[0]]


def test_mask_example_equals_causal_mask():
    ex = example("mask_example")()
    np.testing.assert_array_equal(ex.data["mask"], causal_mask(len(ex.data["mask"])))
    np.testing.assert_array_equal(ex.data["H"], hiding(causal_mask(len(ex.data["mask"])), "float64"))


def test_forward_tables_equal_a_direct_call():
    m = module()
    out, c = mha_forward(m.XN_HAND.copy(), m.XN_HAND.copy(), m.tiny_params(), m.P, m.TINY.num_heads,
                         causal_mask(m.TINY.seq_len))
    rows = {r["label"]: r["value"] for r in example("forward_worked")().blocks[0]["rows"]}
    assert rows["Softmax of each row"] == fmt_array(c["A"])
    assert rows["Weighted sums of values, heads merged"] == fmt_array(c["O"])
    assert rows["Output projection"] == fmt_array(out)
    cross_out, cc = mha_forward(m.XQ_CROSS.copy(), m.XKV_CROSS.copy(), m.tiny_params(), m.P, m.TINY.num_heads)
    ex = example("cross_attention")()
    np.testing.assert_array_equal(ex.data["A"], cc["A"])
    np.testing.assert_array_equal(ex.data["out"], cross_out)


def test_trained_heatmaps_equal_a_direct_call(built_site):
    m = module()
    run, _, window, ids = m.corpus_window(m.WINDOW_TEXT)
    _, c = forward(run.params, ids, run.model_cfg)
    ex = example("trained_heatmaps")()
    for l, A in enumerate(ex.data["As"]):
        np.testing.assert_array_equal(A, c["blocks"][l]["att"]["A"])
    for (l, h, _), block in zip(ex.data["heads"], ex.blocks):
        assert f"block {l}, head {h}" in block["svg"]
        A = c["blocks"][l]["att"]["A"][h]
        assert f"{A[1, 0]:.3f}" in block["svg"]


def test_backward_tables_equal_a_direct_call():
    m = module()
    params = m.tiny_params()
    _, c = mha_forward(m.XN_HAND.copy(), m.XN_HAND.copy(), params, m.P, m.TINY.num_heads, causal_mask(m.TINY.seq_len))
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXq, dXkv = mha_backward(m.DOUT_HAND.copy(), c, params, m.P, grads)
    rows = {r["label"]: r["value"] for r in example("backward_worked")().blocks[0]["rows"]}
    assert rows["Returned: (dXq, dXkv)"] == fmt_array((dXq, dXkv))
    check = example("backward_gradcheck")().blocks[0]["rows"]
    assert all(float(r["gap"]) < 1e-8 for r in check)
    lm = example("lm_backward_gradcheck")()
    np.testing.assert_array_equal(lm.data["dXn"], dXq + dXkv)
    inv = dict(example("backward_invariants")().blocks[0]["rows"])
    assert inv["Hidden entries of dS"] == inv["Hidden entries of dS that are exactly 0.0"]


def test_a_chosen_or_typed_prompt_is_drawn_exactly(built_site):
    """The heatmap is of exactly the text chosen or typed (up to seq_len characters), never a
    corpus window that merely starts with it (a hostile test typed 'H' and got 'HAT ENDS WELL')."""
    chosen = example("chosen_heatmap")
    assert chosen("H").data["window"] == "H"
    seq_len = module().corpus_window(module().WINDOW_TEXT)[0].model_cfg.seq_len
    typed = "To be, or not to be, that is the question"
    assert chosen(typed, 1, 2).data["window"] == typed[:seq_len]
    assert chosen(typed, 1, 2).data["A"].shape == (seq_len, seq_len)


def test_every_cache_row_says_what_it_holds_and_where_it_is_built(site_page):
    """mha_forward's cache holds its own arrays (Qh, A, ...), not sub-caches: each row still
    describes its key and links the line that binds the array (a parameter: the def line)."""
    import inspect
    html = site_page("attention")
    table = html[html.index('<table class="caches">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr><td><code>c\["(\w+)"\]</code></td>(.*?)</tr>', table, re.S)
    _, cache = mha_forward(np.ones((2, D)), np.ones((2, D)), params_with_biases(), "a.", H)
    assert sorted(k for k, _ in rows) == sorted(cache)
    lines, first = inspect.getsourcelines(mha_forward)
    binds = {"Qh": next(first + i for i, text in enumerate(lines) if text.lstrip().startswith("Qh, Kh, Vh =")),
             "Xq": first}
    for key, row in rows:
        assert re.search(r'<ul class="holds"><li>\S', row), f"c[{key!r}] holds nothing"
        assert re.search(r'>attention\.py:\d+</a>', row), f"c[{key!r}] has no 'Built at'"
        if key in binds:
            assert f">attention.py:{binds[key]}</a>" in row
