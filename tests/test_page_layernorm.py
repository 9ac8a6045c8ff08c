"""The LayerNorm page: each of its equations checked against model.ops (the page cites these
lines), the page's sections, and every example table against a direct call of the model."""
from pathlib import Path

import numpy as np
import pytest

from model.config import ModelConfig
from model.gradcheck import numerical_grad, rel_error
from model.ops import layer_norm_forward, layer_norm_backward, row_sums, column_sums
from model.transformer import embed_forward
from site_builder.run.examples import load_example, fmt_array, fmt_number
from site_builder.run.trace import trace_locals

ROOT = Path(__file__).resolve().parent.parent
EPS = ModelConfig(vocab_size=1).ln_eps
X = np.array([[2.0, -1.0, 0.5, 3.5], [0.3, 0.1, -0.2, 0.6], [-4.0, 1.0, 0.0, 7.5]])
G = np.array([1.5, 0.5, -1.0, 2.0])
B = np.array([0.1, 0.0, -0.2, 0.3])
DY = np.array([[0.2, -0.5, 0.1, 0.4], [-0.3, 0.2, 0.6, -0.1], [0.7, 0.0, -0.4, 0.25]])


def example(name):
    return load_example(ROOT, f"layernorm:{name}")


def first_value(trace, name):
    """The value a local had right after the first statement that bound it (later lines work in place)."""
    return next(s.locals[name] for s in trace.steps if name in s.changed)


# ---------------------------------------------------------------- the equations of the page

def test_forward_equations():
    t = trace_locals(layer_norm_forward, X.copy(), G, B, EPS)
    L = t.final_locals()
    Y, c = t.result
    np.testing.assert_allclose(L["mu"], X.mean(axis=-1, keepdims=True), rtol=1e-15)
    np.testing.assert_allclose(first_value(t, "Xc"), X - X.mean(axis=-1, keepdims=True), rtol=1e-15)
    np.testing.assert_allclose(L["var"], X.var(axis=-1, keepdims=True, ddof=0), rtol=1e-14)   # biased: / d
    np.testing.assert_allclose(c["s"], 1.0 / np.sqrt(X.var(axis=-1, keepdims=True) + EPS), rtol=1e-14)
    np.testing.assert_allclose(c["Xhat"], (X - X.mean(axis=-1, keepdims=True)) * c["s"], rtol=1e-14)
    np.testing.assert_allclose(Y, G * c["Xhat"] + B, rtol=1e-14)
    paper = G / np.sqrt(X.var(axis=-1, keepdims=True) + EPS) * (X - X.mean(axis=-1, keepdims=True)) + B
    np.testing.assert_allclose(Y, paper, rtol=1e-13)


def test_xhat_has_mean_zero_and_variance_var_over_var_plus_eps():
    _, c = layer_norm_forward(X.copy(), G, B, EPS)
    var = X.var(axis=-1)
    assert np.abs(c["Xhat"].mean(axis=-1)).max() < 1e-15
    np.testing.assert_allclose(c["Xhat"].var(axis=-1), var / (var + EPS), rtol=1e-14)


def test_row_sums_and_column_sums():
    M = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(row_sums(M), M.sum(axis=-1, keepdims=True))
    np.testing.assert_array_equal(column_sums(M), M.sum(axis=(0, 1)))


def test_gain_and_shift_gradients_sum_over_rows():
    _, c = layer_norm_forward(X.copy(), G, B, EPS)
    _, dg, db = layer_norm_backward(DY.copy(), c, G)
    np.testing.assert_allclose(db, DY.sum(axis=0), rtol=1e-15)
    np.testing.assert_allclose(dg, (DY * c["Xhat"]).sum(axis=0), rtol=1e-15)
    # A batch (B, T, d): the same parameters serve every row of every sequence.
    Xb, dYb = np.stack([X, 2 * X + 1]), np.stack([DY, -DY])
    _, cb = layer_norm_forward(Xb.copy(), G, B, EPS)
    _, dgb, dbb = layer_norm_backward(dYb.copy(), cb, G)
    np.testing.assert_allclose(dgb, (dYb * cb["Xhat"]).sum(axis=(0, 1)), rtol=1e-14, atol=1e-15)


def test_three_term_formula_and_jacobian():
    _, c = layer_norm_forward(X.copy(), G, B, EPS)
    t = trace_locals(layer_norm_backward, DY.copy(), c, G)
    dX = t.result[0]
    Xhat, s, d = c["Xhat"], c["s"], X.shape[-1]
    np.testing.assert_allclose(first_value(t, "dXhat"), DY * G, rtol=1e-15)
    three_terms = s * (DY * G - (DY * G).mean(axis=-1, keepdims=True)
                       - Xhat * (DY * G * Xhat).mean(axis=-1, keepdims=True))
    np.testing.assert_allclose(dX, three_terms, rtol=1e-13, atol=1e-15)
    for i in range(len(X)):                   # the Jacobian of one row: s (I - 1/d - xhat xhat^T / d)
        J = s[i, 0] * (np.eye(d) - 1.0 / d - np.outer(Xhat[i], Xhat[i]) / d)
        np.testing.assert_allclose(dX[i], J @ (DY[i] * G), rtol=1e-12, atol=1e-15)


def test_backward_against_central_differences():
    Xv, g, b = X.copy(), G.copy(), B.copy()
    _, c = layer_norm_forward(Xv.copy(), g, b, EPS)
    dX, dg, db = layer_norm_backward(DY.copy(), c, g)

    def f():
        return float((layer_norm_forward(Xv.copy(), g, b, EPS)[0] * DY).sum())

    assert rel_error(dX, numerical_grad(f, Xv)) < 1e-7
    assert rel_error(dg, numerical_grad(f, g)) < 1e-7
    assert rel_error(db, numerical_grad(f, b)) < 1e-7


def test_eps_keeps_a_constant_row_finite_and_bounds_s():
    const = np.full((1, 4), 0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        _, c0 = layer_norm_forward(const.copy(), np.ones(4), np.zeros(4), 0.0)
    assert np.isnan(c0["Xhat"]).all()                          # 0 / 0 without eps
    _, c = layer_norm_forward(const.copy(), np.ones(4), np.zeros(4), EPS)
    assert (c["Xhat"] == 0.0).all() and c["s"][0, 0] == pytest.approx(1 / np.sqrt(EPS), rel=1e-15)
    tiny = np.array([[1.0, -1.0, 2.0, 0.0]]) * 1e-3
    _, c = layer_norm_forward(tiny.copy(), np.ones(4), np.zeros(4), EPS)
    assert c["s"][0, 0] < 1 / np.sqrt(EPS) and c["Xhat"].var() < 0.5   # shrunk, not blown up to variance 1


# ---------------------------------------------------------------- the page and its examples

HEADINGS = ("What is it?", "Mathematics", "Tensor shapes", "Actual implementation",
            "Code and math connection", "Where is it used?")


@pytest.mark.parametrize("concept", ["layernorm-forward", "layernorm-backward"])
def test_page_has_its_sections(site_page, concept):
    html = site_page("layernorm")
    assert f'id="{concept}"' in html
    section = html.split(f'id="{concept}"', 1)[1].split('<section class="concept"', 1)[0]
    for heading in HEADINGS:
        assert heading in section, (concept, heading)
    assert "Gradient check" in html or "central differences" in html


def test_forward_table_equals_a_direct_call():
    ex = load_example(ROOT, "layernorm:forward_worked")()
    mod = __import__("sys").modules["content_examples_layernorm"]
    Y, c = layer_norm_forward(mod.X_HAND.copy(), mod.G_HAND, mod.B_HAND, EPS)
    values = [r["value"] for r in ex.blocks[0]["rows"]]
    Xh = mod.X_HAND
    mu = Xh.mean(axis=-1, keepdims=True)
    expected = [Xh, mu, Xh - mu, Xh.var(axis=-1, keepdims=True), c["s"], c["Xhat"], c["Xhat"] * mod.G_HAND, Y]
    assert values == [fmt_array(e) for e in expected]


def test_backward_tables_equal_a_direct_call():
    mod_fn = example("backward_worked")
    mod = __import__("sys").modules["content_examples_layernorm"]
    _, c = layer_norm_forward(mod.X_HAND.copy(), mod.G_HAND, mod.B_HAND, EPS)
    dX, dg, db = layer_norm_backward(mod.DY_HAND.copy(), c, mod.G_HAND)
    rows = {r["label"]: r["value"] for r in mod_fn().blocks[0]["rows"]}
    assert rows["Gain gradient, summed over rows"] == fmt_array(dg)
    assert rows["Shift gradient, summed over rows"] == fmt_array(db)
    assert rows["Times s: dX"] == fmt_array(dX)
    sums = example("gain_shift_sums")().blocks[0]["rows"]
    assert sums[-1] == ["returned by layer_norm_backward", fmt_array(dg), fmt_array(db)]
    assert sums[-2][1:] == [fmt_array(dg), fmt_array(db)]
    from tests.test_page_block import declared_example
    check = declared_example("layernorm", "Checking the backward numerically").blocks[0]["rows"]
    assert [r["analytic"] for r in check] == [[fmt_array(r) for r in dX], [fmt_array(dg)], [fmt_array(db)]]
    assert all(float(r["gap"]) < 1e-8 for r in check)


def test_eps_table_equals_a_direct_call():
    ex = example("eps_effect")()
    mod = __import__("sys").modules["content_examples_layernorm"]
    for (label, x), row in zip(mod.EPS_ROWS, ex.blocks[0]["rows"]):
        _, c = layer_norm_forward(x[None, :].copy(), np.ones(4), np.zeros(4), EPS)
        assert row[0] == label and row[2] == fmt_number(c["s"][0, 0]) and row[4] == fmt_array(c["Xhat"][0])


def test_real_rows_table_equals_a_direct_call(built_site):
    ex = example("real_rows")()
    mod = __import__("sys").modules["content_examples_layernorm"]
    run, _, _, ids = mod.corpus_window(mod.WINDOW_TEXT)
    X, _ = embed_forward(ids, run.params)
    _, c = layer_norm_forward(X.copy(), run.params["b0.ln1_g"], run.params["b0.ln1_b"], run.model_cfg.ln_eps)
    vh = c["Xhat"].var(axis=-1)
    assert ex.blocks[0]["rows"][1][3] == f"{vh.min():.6f} to {vh.max():.6f}"


def test_directions_table_equals_a_direct_call():
    mod_fn = example("backward_directions")
    mod = __import__("sys").modules["content_examples_layernorm"]
    _, c = layer_norm_forward(mod.X_HAND.copy(), mod.G_HAND, mod.B_HAND, EPS)
    dX, _, _ = layer_norm_backward(mod.DY_HAND.copy(), c, mod.G_HAND)
    rows = mod_fn().blocks[0]["rows"]
    assert [r[2] for r in rows] == [f"{dX[i].sum():.1e}" for i in range(len(dX))]
    assert all(abs(float(r[2])) < 1e-14 for r in rows)             # each row of dX sums to 0


def test_the_count_of_layernorms_per_pass_is_what_forward_does(site_page, monkeypatch):
    """The page said "three LayerNorms per pass"; at the default config a pass applies it
    2 * num_layers + 1 times, from three lines. Count the calls, and the lines they come from,
    while the real forward runs, and read what the page prints."""
    import re
    import sys
    import model.transformer as mt
    from model.data import DEFAULT_CORPUS, CharTokenizer, load_corpus
    from site_builder.gather.prose import format_value
    calls = []

    def counted(*args, **kwargs):
        caller = sys._getframe(1)
        calls.append((caller.f_code.co_name, caller.f_lineno))
        return layer_norm_forward(*args, **kwargs)
    monkeypatch.setattr(mt, "layer_norm_forward", counted)
    tokenizer = CharTokenizer(load_corpus(DEFAULT_CORPUS))
    cfg = ModelConfig(vocab_size=tokenizer.vocab_size)
    mt.forward(mt.init_params(cfg, np.random.default_rng(0)), tokenizer.encode("To be, or not to be")[:cfg.seq_len], cfg)
    monkeypatch.undo()
    data = example("per_pass")().data
    assert data["applications"] == len(calls) == 2 * cfg.num_layers + 1
    assert data["sites"] == len(set(calls))
    assert data["block_sites"] == len({line for name, line in calls if name == "block_forward"})
    text = re.sub(r"<[^>]+>", "", site_page("layernorm"))
    said = f"applies LayerNorm {format_value(len(calls), 'words')} times, from {format_value(len(set(calls)), 'words')} lines"
    assert said in " ".join(text.split())
    assert "three LayerNorms per pass" not in text
