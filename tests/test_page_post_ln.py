"""The Post-LN versus pre-LN page: its sections, its measurements against direct calls of both
models, and the properties it derives (cited as `tests` references)."""
import numpy as np
import pytest

from model import seq2seq as s2s
from model import transformer as lm
from model.attention import attention_forward
from model.ops import layer_norm_forward, layer_norm_backward
from model.transformer import ffn_forward
from site_builder.run.examples import load_example, fmt_number
from tests.conftest import ROOT, assert_sections

CONCEPTS = ["post-ln-forward", "post-ln-gradients"]
HEADINGS = ["What is it?", "Why does the model need it?", "Mathematics", "What does each symbol mean?",
            "Tiny numerical example", "Tensor shapes", "Actual implementation", "Code and math connection",
            "Where is it used?"]
EX = load_example(ROOT, "post_ln:stream_norms").__globals__


def example(name):
    return load_example(ROOT, f"post_ln:{name}")()


@pytest.mark.parametrize("concept", CONCEPTS)
def test_every_concept_has_every_section(site_page, concept):
    assert_sections(site_page("post-ln"), concept, HEADINGS)


def test_page_cites_xiong(site_page):
    html = site_page("post-ln")
    assert "Xiong et al. 2020" in html and "Note · measured" in html and html.count("<svg") >= 2


# ----------------------------------------------------------------------------- equations the page cites

def test_post_ln_rows_have_norm_sqrt_d():
    post, _ = EX["configs"](3)
    d = post.d_model
    X = EX["task_input"]()
    params = s2s.init_params(post, np.random.default_rng(0))
    for l in range(3):
        out, _ = s2s.encoder_layer_forward(X, params, l, post)
        np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.sqrt(d), rtol=1e-5)
        X = out


def test_pre_ln_adds_to_the_stream_as_it_was():
    _, pre = EX["configs"](1)
    params = lm.init_params(pre, np.random.default_rng(0))
    X = EX["task_input"]()
    Y, _ = lm.block_forward(X, params, 0, pre)
    Xn = layer_norm_forward(X, params["b0.ln1_g"], params["b0.ln1_b"], pre.ln_eps)[0]
    X1 = X + attention_forward(Xn, params, "b0.", pre)[0]
    Xn2 = layer_norm_forward(X1, params["b0.ln2_g"], params["b0.ln2_b"], pre.ln_eps)[0]
    np.testing.assert_allclose(Y, X1 + ffn_forward(Xn2, params, "b0.")[0], rtol=0, atol=1e-14)


def test_pre_ln_stream_is_a_running_sum():
    X = EX["task_input"]()
    _, streams, _, out, _ = EX["pre_stack"](X, 4, 0)
    branches = [b - a for a, b in zip(streams[:-1], streams[1:])]      # what each block added
    np.testing.assert_allclose(streams[-1], X + sum(branches), rtol=0, atol=1e-12)
    assert np.linalg.norm(streams[-1], axis=-1).mean() > np.linalg.norm(X, axis=-1).mean()


def test_zero_gains_block_post_ln_and_pass_pre_ln():
    r = example("zero_gains")
    post, pre, G = r.data["post"], r.data["pre"], r.data["G"]
    assert np.all(post == 0.0)
    assert np.array_equal(pre, G)
    # and directly, without the example's trace
    post_cfg, _ = EX["configs"](1)
    p = s2s.init_params(post_cfg, np.random.default_rng(0))
    p["enc0.ln1_g"][:] = 0.0
    p["enc0.ln2_g"][:] = 0.0
    _, c = s2s.encoder_layer_forward(EX["task_input"](), p, 0, post_cfg)
    assert np.all(s2s.encoder_layer_backward(G, c, p, 0, {k: np.zeros_like(v) for k, v in p.items()}) == 0.0)


def test_gradient_example_equals_direct_calls():
    r = example("last_layer_gradients")
    for L in (2, 8):
        X = EX["task_input"]()
        post, pre = [], []
        for s in EX["SEEDS"]:
            G = EX["readout"](X, s)
            p, _, c = EX["post_stack"](X, L, s)
            g = {k: np.zeros_like(v) for k, v in p.items()}
            s2s.encoder_backward(G, c, p, g)
            post.append(np.linalg.norm(g[f"enc{L - 1}.ff2_w"]))
            p, _, c, _, c_lnf = EX["pre_stack"](X, L, s)
            g = {k: np.zeros_like(v) for k, v in p.items()}
            dX = layer_norm_backward(G, c_lnf, p["lnf_g"])[0]
            for l in reversed(range(L)):
                dX = lm.block_backward(dX, c[l], p, l, g)
            pre.append(np.linalg.norm(g[f"b{L - 1}.ff2_w"]))
        assert r.data["means"][L]["post_last"] == pytest.approx(np.mean(post), rel=1e-12)
        assert r.data["means"][L]["pre_last"] == pytest.approx(np.mean(pre), rel=1e-12)
    assert r.data["means"][16]["pre_last"] < r.data["means"][1]["pre_last"] / 2


# ----------------------------------------------------------------------------- examples = direct calls

def test_stream_norm_example_equals_direct_calls():
    r = example("stream_norms")
    X = EX["task_input"]()
    _, streams, _ = EX["post_stack"](X, EX["DEPTH"], EX["SEED"])
    assert r.data["post"] == [float(np.linalg.norm(x, axis=-1).mean()) for x in streams]
    assert all(v == pytest.approx(np.sqrt(r.data["d"]), rel=1e-5) for v in r.data["post"][1:])
    assert r.data["pre"][-1] > r.data["pre"][1] > r.data["pre"][0]
    assert r.blocks[1]["rows"][0][1] == fmt_number(np.linalg.norm(X, axis=-1).mean())
