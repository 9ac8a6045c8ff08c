"""Stage 4, shapes: symbolic shapes inferred by running the real model at the default config
and at a probe config with distinct sizes. Only a few stable names are looked up; a missing
one skips with a message instead of failing on a rename. The probes are the project's
(content/hooks.py: probes) and their letters and sizes its settings (content/site.yaml:
project); the last tests run the same machinery on a small package of other letters."""
import dataclasses
import pickle
import sys
import textwrap

import pytest

from model.config import ModelConfig
from site_builder.gather.project import ConfigSpec, Project, load_project
from site_builder.run import shapes
from site_builder.gather.shape_syntax import parse_shape
from site_builder.run.shapes import (INCIDENTAL_SIZES, ProbeError, ShapeInfo, available_probes, check_declared,
                                     check_distinct, legend_text, probe_setup, project_probes, run_probe, symbolize)
from tests.conftest import ROOT

FFN = "model.transformer.ffn_forward"
PROJECT = load_project(ROOT)
PROBE_SIZES = PROJECT.probe_sizes


def _probe(name, vocab_size=65):
    return next(p for p in project_probes(ROOT, PROJECT, ModelConfig(vocab_size=vocab_size)) if p.name == name)


@pytest.fixture(scope="module")
def lm():
    return run_probe(_probe("lm"), PROJECT)


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
    for name, setup in available_probes(project_probes(ROOT, PROJECT, ModelConfig(vocab_size=65)), PROJECT).items():
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
                   f" (its shape at the default config: {info.concrete_str})")
    vec = ShapeInfo("(d,)", (32,), "(32,)", name="b", function="f")
    assert check_declared("(d)", vec) is None and check_declared("(d,)", vec) is None
    assert "declared (T,)" in check_declared("(T,)", vec)
    assert parse_shape("()") == ()


def test_a_scalar_where_an_array_is_declared_points_at_the_input_first():
    # A newcomer passed 2.0 as an example's input and was told to "correct the declared shape".
    from site_builder.render.pages.symbol_rows import shape_fix
    scalar = check_declared("(T, F)", ShapeInfo("()", (), "()", name="A", function="f"))
    assert "a number where an array is meant" in shape_fix(scalar)
    assert shape_fix(check_declared("(T,)", ShapeInfo("(d,)", (32,), "(32,)", name="b", function="f"))) \
        == "correct the declared shape"


def test_legend_text(lm, cfg):
    text = legend_text([_info(lm, FFN, "Xn")])
    assert text == f"T = seq_len = {cfg.seq_len}. d = emb_dim = {cfg.emb_dim}."
    axes = PROJECT.axes_for(cfg)
    assert axes["seq_len"] == "T" and axes["head_dim"] == "dk"


def test_results_are_deterministic_and_picklable(lm):
    again = run_probe(_probe("lm"), PROJECT)
    assert again == lm
    assert list(again) == list(lm)
    assert pickle.loads(pickle.dumps(lm)) == lm


def test_seq2seq_probe_when_the_module_exists():
    if probe_setup(_probe("seq2seq", 11), PROJECT) is None:
        pytest.skip("model/seq2seq.py does not exist yet")
    result = run_probe(_probe("seq2seq"), PROJECT)
    symbols = {i.symbolic for infos in result.values() for i in infos.values()}
    assert "(S, d)" in symbols and "(T, d)" in symbols
    assert any("T, S" in s for s in symbols), "no cross-attention weights (.., T, S)"


def test_missing_modules_are_skipped_silently(monkeypatch):
    monkeypatch.setattr(shapes, "_module_missing", lambda entry: entry.startswith(("model.seq2seq.", "model.generate.")))
    assert probe_setup(_probe("seq2seq"), PROJECT) is None
    assert probe_setup(_probe("generate"), PROJECT) is None
    assert run_probe(_probe("seq2seq"), PROJECT) is None
    assert list(available_probes(project_probes(ROOT, PROJECT, ModelConfig(vocab_size=65)), PROJECT)) == ["lm"]


def test_a_shapes_block_at_an_example_config_says_which_switches_differ_from_the_probes():
    """The probes run at the default config; an example's config with a switch flipped (an
    untied output layer) may name its arrays otherwise, and the block's line says so."""
    from model.config import Seq2SeqConfig
    from site_builder.render.pages.shape_blocks import names_apart
    untied = Seq2SeqConfig(src_vocab_size=5, tgt_vocab_size=4, d_model=4, num_heads=2, tie_output=False)
    assert shapes.switches_apart(untied) == [("tie_output", True, False)]
    assert shapes.switches_apart(Seq2SeqConfig(src_vocab_size=5, tgt_vocab_size=4, d_model=4, num_heads=2)) == []
    line = names_apart(untied, "m:toy")
    assert "(tie_output = True)" in line and "m:toy runs tie_output = False" in line
    assert names_apart(ModelConfig(vocab_size=5), "m:lm") == ""


# -------------------------------------------- a package of other letters (no transformer)

TINY = {
    "tinynet/__init__.py": "",
    "tinynet/config.py": """
        from dataclasses import dataclass


        @dataclass(frozen=True)
        class TinyConfig:
            in_dim: int = 4
            hidden: int = 8
            classes: int = 3
        """,
    "tinynet/layers.py": """
        import numpy as np


        def init_params(cfg, rng):
            return {"W1": rng.standard_normal((cfg.in_dim, cfg.hidden)),
                    "W2": rng.standard_normal((cfg.hidden, cfg.classes))}


        def hidden_forward(x, W1):
            h = np.tanh(x @ W1)
            return h


        def loss(params, x, cfg):
            h = hidden_forward(x, params["W1"])
            logits = h @ params["W2"]
            return float(logits.sum())
        """,
    "content/hooks.py": """
        import numpy as np


        def probes(config):
            def args(cfg, sizes):
                from tinynet.layers import init_params
                rng = np.random.default_rng(0)
                return init_params(cfg, rng), rng.standard_normal((sizes["B"], cfg.in_dim)), cfg
            return [dict(name="tiny", entry="tinynet.layers.loss", config=config, args=args, lengths={"B": 5})]
        """,
    "content/broken_hooks.py": """
        def probes(config):
            raise ValueError("no probes today")
        """,
    "content/site.yaml": """
        project:
          package: tinynet
          tests: tests
          hooks: content/hooks.py
          configs:
            - {class: tinynet.config.TinyConfig, axes: {in_dim: D, hidden: H, classes: C}}
          probe_sizes: {B: 7, D: 9, H: 11, C: 13}
          lengths: {B: batch size}
        """,
}


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """(root, project, config) of a small classifier package with its own letters."""
    for rel, text in TINY.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text).lstrip("\n"))
    (tmp_path / "tests").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path, load_project(tmp_path), __import__("tinynet.config").config.TinyConfig()
    for name in [m for m in sys.modules if m == "tinynet" or m.startswith("tinynet.")]:
        del sys.modules[name]


def test_a_package_of_other_letters_is_probed_in_its_letters(tiny):
    root, project, cfg = tiny
    table = shapes.infer_shapes(root, project, cfg)
    assert not table.failures and table.order == ("tiny",) and table.probe_sizes == project.probe_sizes
    own = table["tinynet.layers.hidden_forward"]
    assert (own["W1"].symbolic, own["W1"].concrete_str) == ("(D, H)", "(4, 8)")
    assert own["h"].symbolic == "(B, H)" and table["tinynet.layers.loss"]["logits"].symbolic == "(B, C)"
    assert legend_text([own["h"], own["W1"]]) == "B = batch size = 5. H = hidden = 8. D = in_dim = 4."
    # a wrong declared shape in the package's own letters fails; the right one passes
    assert check_declared("(D, H)", own["W1"]) is None
    assert check_declared("(H, D)", own["W1"]).startswith("declared (H, D) but the code gives (D, H) for W1")


def test_a_declared_probe_in_other_letters(tiny):
    from site_builder.run.declared_probes import infer_declared
    root, project, cfg = tiny
    found, errors = infer_declared({"tinynet.layers.hidden_forward": {"x": "(C, D)", "W1": "(D, H)"}}, project, cfg)
    assert not errors and found["tinynet.layers.hidden_forward"]["h"].symbolic == "(C, H)"
    _, errors = infer_declared({"tinynet.layers.hidden_forward": {"x": "(T, D)", "W1": "(D, H)"}}, project, cfg)
    assert "unknown axis 'T'" in errors["tinynet.layers.hidden_forward"] and "D, H, C" in errors["tinynet.layers.hidden_forward"]


def test_without_the_hook_nothing_is_probed_and_a_raising_hook_is_one_failure(tiny):
    root, project, cfg = tiny
    bare = shapes.infer_shapes(root, dataclasses.replace(project, hooks=None), cfg)
    assert dict(bare) == {} and bare.failures == [] and bare.order == ()
    broken = shapes.infer_shapes(root, dataclasses.replace(project, hooks="content/broken_hooks.py"), cfg)
    [failure] = broken.failures
    assert (failure.probe, failure.file) == ("probes", "content/broken_hooks.py")      # outside this repository: no line
    assert failure.describe().startswith("the shape probe content/broken_hooks.py: probes() raised ValueError: no probes today")


def test_an_example_run_checks_a_declared_shape_in_the_projects_letters():
    """A declared (H, D) for an array that was (4, 8) passed `check`: the letters of an
    example's run were one package's (d, F, V, ...), so H and D were sized by the very row
    that used them. The config's letters come from the project now."""
    from site_builder.run.example_shapes import Row, check_rows
    project = Project(package="tinynet", configs=(ConfigSpec("tinynet.config.TinyConfig", {"in_dim": "D", "hidden": "H"}),))
    held = {"cfg": ("c", "TinyConfig"), "cfg.in_dim": ("i", 4), "cfg.hidden": ("i", 8), "W1": ("a", (4, 8))}
    wrong, checked, _ = check_rows([Row(10, "W1", "(H, D)"), Row(11, "W1", "(D, H)")], held, {}, {}, "the run", project=project)
    assert wrong[10].endswith("axis 0 is 4, not H (H = 8 from cfg.hidden); axis 1 is 8, not D (D = 4 from cfg.in_dim)")
    assert checked == {11}
    # the config the example returns sizes the letters too, when the function held none
    config = dataclasses.make_dataclass("TinyConfig", [("in_dim", int, 4), ("hidden", int, 8)])()
    wrong, checked, _ = check_rows([Row(10, "W1", "(H, D)")], {"W1": ("a", (4, 8))}, {}, {"config": config}, "the run",
                                   project=project)
    assert "D = 4 from the example's config.in_dim" in wrong[10] and not checked


def test_a_letter_two_fields_share_is_sized_by_the_arrays_name():
    from site_builder.run.shapes import sized_for_name, sizes_of
    spec = ConfigSpec("p.Pair", {"src_size": "V", "tgt_size": "V", "width": "d"},
                      axes_by_name=(("src", {"src_size": "V"}), ("", {"tgt_size": "V"})))
    pair = dataclasses.make_dataclass("Pair", [("src_size", int, 2), ("tgt_size", int, 4), ("width", int, 6)])()
    sizes = sizes_of(pair, spec.axes, {"S": 3}, {"S": "source length"})
    assert sizes == {"S": ("source length", 3), "V": ("src_size", 2), "d": ("width", 6)}
    assert sized_for_name(sizes, pair, spec, 'grads["src_emb"]')["V"] == ("src_size", 2)
    assert sized_for_name(sizes, pair, spec, 'grads["tgt_emb"]')["V"] == ("tgt_size", 4)
    assert sized_for_name(sizes, pair, None, "x") == sizes


@pytest.mark.parametrize("setting, says", [
    ("  lengths: [B]\n", "content/site.yaml:8: project.lengths is a list"),
    ("  lengths: {B: 3}\n", "content/site.yaml:8: project.lengths has an entry that is not LETTER: WORDS"),
])
def test_a_wrong_shape_setting_is_one_line_naming_it(tiny, setting, says):
    from site_builder.gather.project import ProjectError
    root = tiny[0]
    site = root / "content" / "site.yaml"
    site.write_text(site.read_text().replace("  lengths: {B: batch size}\n", setting))
    with pytest.raises(ProjectError) as e:
        load_project(root)
    [problem] = e.value.problems
    assert str(problem).startswith(says), str(problem)


def test_a_wrong_axes_by_name_is_one_line_naming_it(tiny):
    from site_builder.gather.project import ProjectError
    root = tiny[0]
    site = root / "content" / "site.yaml"
    site.write_text(site.read_text().replace("axes: {in_dim: D, hidden: H, classes: C}}",
                                             "axes: {in_dim: D, hidden: H, classes: C}, axes_by_name: [{match: '(', axes: {}}]}"))
    with pytest.raises(ProjectError) as e:
        load_project(root)
    [problem] = e.value.problems
    assert str(problem).startswith("content/site.yaml:5: project.configs[0].axes_by_name has an entry that is not"), str(problem)
