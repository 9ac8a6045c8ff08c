"""Stage 4, shapes: symbolic shapes inferred by running the real model at the default config
and at a probe config with distinct sizes. Only a few stable names are looked up; a missing
one skips with a message instead of failing on a rename."""
import pickle

import pytest

from model.config import ModelConfig
from site_builder.run import shapes
from site_builder.gather.shape_syntax import parse_shape
from site_builder.run.shapes import (INCIDENTAL_SIZES, PROBE_SIZES, PROBES, ProbeError, ShapeInfo,
                                     check_declared, check_distinct, legend_text, run_probe, symbolize)

FFN = "model.transformer.ffn_forward"


@pytest.fixture(scope="module")
def lm():
    return run_probe("lm")


@pytest.fixture(scope="module")
def cfg():
    return ModelConfig(vocab_size=65)


def _info(result, qualname, name) -> ShapeInfo:
    if qualname not in result:
        pytest.skip(f"{qualname} is not reached by the probe any more")
    if name not in result[qualname]:
        pytest.skip(f"{qualname} has no array called {name!r} any more: "
                    f"it has {sorted(result[qualname])}")
    return result[qualname][name]


def test_ffn_input_is_T_by_d(lm, cfg):
    info = _info(lm, FFN, "Xn")
    assert info.symbolic == "(T, d)"
    assert info.concrete == (cfg.seq_len, cfg.emb_dim)
    assert info.concrete_str == f"({cfg.seq_len}, {cfg.emb_dim})"
    assert info.function == FFN and info.name == "Xn" and info.ambiguous == ()


def test_ffn_hidden_activations_are_T_by_F(lm, cfg):
    if FFN not in lm:
        pytest.skip(f"{FFN} is not reached")
    hidden = {n: i for n, i in lm[FFN].items() if i.symbolic == "(T, F)"}
    assert hidden, f"no (T, F) array in {FFN}: {({n: i.symbolic for n, i in lm[FFN].items()})}"
    assert all(i.concrete == (cfg.seq_len, cfg.ff_dim) for i in hidden.values())


def test_block_backward_and_attention(lm):
    assert _info(lm, "model.transformer.block_backward", "dX1").symbolic == "(T, d)"
    mha = "model.attention.mha_forward"
    assert _info(lm, mha, "S").symbolic == "(h, T, T)"
    assert _info(lm, mha, "A").symbolic == "(h, T, T)"


def test_parameters_and_returns_have_symbols(lm):
    loss = "model.transformer.loss_and_grads"
    grads = {n: i for n, i in lm.get(loss, {}).items() if n.startswith("return[1]")}
    if not grads:
        pytest.skip(f"{loss} no longer returns a dict of gradients second")
    assert grads['return[1]["tok_emb"]'].symbolic == "(V, d)"
    assert all(i.ambiguous == () for i in grads.values())


def test_constant_axes_are_numbers_not_ambiguous(lm):
    layer_norm = "model.ops.layer_norm_forward"
    kept = [i for i in lm.get(layer_norm, {}).values() if i.symbolic == "(T, 1)"]
    if not kept:
        pytest.skip(f"{layer_norm} keeps no (T, 1) statistics any more")
    assert all(i.ambiguous == () for i in kept)


def test_probe_sizes_are_pairwise_distinct():
    check_distinct(PROBE_SIZES)
    sizes = list(PROBE_SIZES.values())
    assert len(set(sizes)) == len(sizes)
    assert not set(sizes) & INCIDENTAL_SIZES
    assert PROBE_SIZES["d"] == PROBE_SIZES["h"] * PROBE_SIZES["dk"]
    for name, setup in shapes.available_probes().items():
        check_distinct(setup.symbols_at_probe, name)
        assert set(setup.symbols_at_probe) == set(setup.symbols_at_default)
    with pytest.raises(ProbeError, match="T and d are both 6"):
        check_distinct({"T": 6, "d": 6})
    with pytest.raises(ProbeError, match="h = 1"):
        check_distinct({"h": 1})


def test_symbolize_reports_what_it_cannot_name():
    sd, sp = {"T": 16, "n": 11}, {"T": 6, "n": 11}
    assert symbolize((6, 1), (16, 1), sd, sp) == ("(T, 1)", (), ["T"])
    symbolic, ambiguous, _ = symbolize((17,), (27,), sd, sp)      # T + n: no one symbol
    assert symbolic == "(27,)" and ambiguous == (0,)
    assert symbolize((), (), sd, sp) == ("()", (), [])


def test_check_declared(lm):
    info = _info(lm, FFN, "Xn")
    assert check_declared("(T, d)", info) is None
    assert check_declared("(T,d)", info) is None
    assert check_declared(" ( T , d ) ", info) is None
    msg = check_declared("(T, F)", info)
    assert msg == (f"declared (T, F) but the code gives (T, d) for Xn in {FFN}"
                   f" (with the default config {info.concrete_str})")
    vec = ShapeInfo("(d,)", (32,), "(32,)", name="b", function="f")
    assert check_declared("(d)", vec) is None and check_declared("(d,)", vec) is None
    assert "declared (T,)" in check_declared("(T,)", vec)
    assert parse_shape("()") == ()


def test_legend_text(lm, cfg):
    text = legend_text([_info(lm, FFN, "Xn")])
    assert text == f"T = seq_len = {cfg.seq_len}. d = emb_dim = {cfg.emb_dim}."
    assert shapes.SYMBOLS["T"] == "seq_len" and shapes.SYMBOLS["dk"] == "head_dim"


def test_results_are_deterministic_and_picklable(lm):
    again = run_probe("lm")
    assert again == lm
    assert list(again) == list(lm)
    assert pickle.loads(pickle.dumps(lm)) == lm


def test_seq2seq_probe_when_the_module_exists():
    if "seq2seq" not in PROBES or PROBES["seq2seq"].build(11) is None:
        pytest.skip("model/seq2seq.py does not exist yet")
    result = run_probe("seq2seq")
    symbols = {i.symbolic for infos in result.values() for i in infos.values()}
    assert "(S, d)" in symbols and "(T, d)" in symbols
    assert any("T, S" in s for s in symbols), "no cross-attention weights (.., T, S)"


def test_missing_modules_are_skipped_silently(monkeypatch):
    monkeypatch.setattr(shapes, "_module_exists", lambda name: False)
    assert PROBES["seq2seq"].build(65) is None
    assert PROBES["generate"].build(65) is None
    assert run_probe("seq2seq") is None
    assert "seq2seq" not in shapes.available_probes()


def test_a_shapes_block_at_an_example_config_says_which_switches_differ_from_the_probes():
    """The probes run at the default config; an example's config with a switch flipped (an
    untied output layer) may name its arrays otherwise, and the block's line says so."""
    from model.config import Seq2SeqConfig
    from site_builder.render.pages import names_apart
    untied = Seq2SeqConfig(src_vocab_size=5, tgt_vocab_size=4, d_model=4, num_heads=2, tie_output=False)
    assert shapes.switches_apart(untied) == [("tie_output", True, False)]
    assert shapes.switches_apart(Seq2SeqConfig(src_vocab_size=5, tgt_vocab_size=4, d_model=4, num_heads=2)) == []
    line = names_apart(untied, "m:toy")
    assert "(tie_output = True)" in line and "m:toy runs tie_output = False" in line
    assert names_apart(ModelConfig(vocab_size=5), "m:lm") == ""
