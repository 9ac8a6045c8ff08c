"""Stage 4, the parameter table: every parameter of init_params once, counts that add up to the
real total, shapes with symbols, init kinds and the decay rule, each read from the code."""
import linecache
import pickle
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from model.config import ModelConfig
from model.optim import decays
from model.transformer import init_params
from site_builder.gather.project import Project, load_project
from site_builder.run.params import (NoInitParams, ParamRow, block_pattern, count_by_group, param_rows,
                                     total_count)

ROOT = Path(__file__).resolve().parent.parent
PROJECT = load_project(ROOT)      # init_params per config, the decay rule, the groups, the block prefixes


@pytest.fixture(scope="module")
def cfg():
    return ModelConfig(vocab_size=65)


@pytest.fixture(scope="module")
def rows(cfg):
    return param_rows(cfg, PROJECT)


@pytest.fixture(scope="module")
def real(cfg):
    return init_params(cfg, np.random.default_rng(0))


def _row(rows, pattern) -> ParamRow:
    found = [r for r in rows if r.pattern == pattern]
    if not found:
        pytest.skip(f"no row {pattern!r}: the rows are {[r.pattern for r in rows]}")
    return found[0]


def test_every_parameter_appears_exactly_once(rows, real):
    names = Counter(n for r in rows for n in r.names)
    assert set(names) == set(real)
    assert all(c == 1 for c in names.values()), [n for n, c in names.items() if c > 1]
    ungrouped = param_rows(ModelConfig(vocab_size=65), PROJECT, grouped=False)
    assert [r.pattern for r in ungrouped] == list(real)        # in creation order


def test_counts_sum_to_the_real_total(cfg, rows, real):
    total = sum(v.size for v in real.values())
    assert sum(r.total for r in rows) == total == total_count(cfg, PROJECT)
    groups = count_by_group(cfg, PROJECT)
    assert sum(groups.values()) == total
    assert "other" not in groups, f"a parameter no group claims: {groups}"
    assert groups["attention"] == cfg.num_layers * 4 * (cfg.emb_dim ** 2 + cfg.emb_dim)


def test_ff1_w(cfg, rows):
    r = _row(rows, "b{l}.ff1_w")
    assert r.per_block and r.names == tuple(f"b{l}.ff1_w" for l in range(cfg.num_layers))
    assert r.symbolic == "(d, F)" and r.shape == (cfg.emb_dim, cfg.ff_dim)
    assert r.shape_str == f"({cfg.emb_dim}, {cfg.ff_dim})"
    assert r.count == cfg.emb_dim * cfg.ff_dim and r.symbolic_count == "d × F"
    assert r.init == "Xavier uniform" and r.decays is True
    assert r.file == "model/transformer.py"
    assert "ff1_w" in linecache.getline(str(ROOT / r.file), r.line)


def test_layer_norm_gains_are_ones_and_do_not_decay(rows):
    gains = [r for r in rows if block_pattern(r.pattern, PROJECT.block_prefixes)[0].split(".")[-1].startswith("ln")
             and r.pattern.endswith("_g")]
    assert gains, "no LayerNorm gain in init_params"
    for r in gains:
        assert r.init == "ones" and r.decays is False and r.symbolic == "(d,)"


def test_each_row_agrees_with_the_code(rows, real, cfg):
    for r in rows:
        assert r.decays == decays(r.names[0])
        assert r.code == linecache.getline(str(ROOT / r.file), r.line).strip()
        assert r.init != "unknown", r
        assert r.ambiguous == ()
        value = real[r.names[0]]
        if r.init == "zeros":
            assert not value.any()
        if r.init.startswith("normal"):
            assert r.init == f"normal, std {cfg.emb_std:g}"


def test_block_pattern():
    prefixes = PROJECT.block_prefixes
    assert block_pattern("b1.wq", prefixes) == ("b{l}.wq", True)
    assert block_pattern("dec0.self.wq", prefixes) == ("dec{l}.self.wq", True)
    assert block_pattern("lnf_g", prefixes) == ("lnf_g", False)
    assert block_pattern("b1.wq") == ("b1.wq", False), "without block_prefix no name is per block"
    assert block_pattern("layer12.w", ("layer{l}.",)) == ("layer{l}.w", True)


def test_rows_are_picklable(rows):
    assert pickle.loads(pickle.dumps(rows)) == rows


def test_seq2seq_parameters_when_the_module_exists():
    import importlib.util
    if importlib.util.find_spec("model.seq2seq") is None:
        pytest.skip("model/seq2seq.py does not exist yet")
    import model.config
    from model.seq2seq import init_params as s2s_init
    vocab = 11                      # both sides the same size, as the seq2seq probe (content/hooks.py) makes it
    cfg = model.config.Seq2SeqConfig(src_vocab_size=vocab, tgt_vocab_size=vocab)
    rows = param_rows(cfg, PROJECT, init=s2s_init)
    assert param_rows(cfg, PROJECT) == rows, "the project block names init_params per config class"
    real = s2s_init(cfg, np.random.default_rng(0))
    names = Counter(n for r in rows for n in r.names)
    assert set(names) == set(real) and max(names.values()) == 1
    assert sum(r.total for r in rows) == total_count(cfg, PROJECT, s2s_init) == sum(v.size for v in real.values())
    assert sum(count_by_group(cfg, PROJECT, s2s_init).values()) == total_count(cfg, PROJECT, s2s_init)
    weights = [r for r in rows if r.pattern.endswith(".wq")]
    assert weights and all(r.init == "Xavier uniform" and r.symbolic == "(d, d)" for r in weights)
    assert all(r.init != "unknown" for r in rows), [r.pattern for r in rows if r.init == "unknown"]


def test_without_settings_the_table_is_plain_and_nothing_crashes(cfg, rows):
    """A project block that names only its config and init_params: one row per parameter, no
    decay rule (None: the page says n/a), every parameter "other"; no init_params: a problem
    naming the setting, and no size table."""
    from site_builder.gather.project import ConfigSpec
    bare = Project(package="model", configs=(ConfigSpec("model.config.ModelConfig", {}, "model.transformer.init_params"),))
    plain = param_rows(cfg, bare)
    assert [r.pattern for r in plain] == list(init_params(cfg, np.random.default_rng(0)))
    assert all(r.decays is None and not r.per_block for r in plain)
    assert [(r.shape, r.init, r.line) for r in plain] == [(r.shape, r.init, r.line) for r in param_rows(cfg, PROJECT, grouped=False)]
    assert count_by_group(cfg, bare) == {"other": total_count(cfg, PROJECT)}
    nothing = Project(package="model")
    assert count_by_group(cfg, nothing) is None
    with pytest.raises(NoInitParams, match="project.configs names no init_params for ModelConfig"):
        param_rows(cfg, nothing)


def test_the_groups_come_from_the_project_block(cfg):
    regrouped = Project(package="model", configs=PROJECT.configs, block_prefix="b{l}.",
                        param_groups=(("w[qkvo]$", "projections", True), ("emb", "tables", False)))
    groups = count_by_group(cfg, regrouped)
    assert groups["projections"] == cfg.num_layers * 4 * cfg.emb_dim ** 2
    assert groups["tables"] == count_by_group(cfg, PROJECT)["embeddings"]
    assert sum(groups.values()) == total_count(cfg, PROJECT) and "other" in groups
