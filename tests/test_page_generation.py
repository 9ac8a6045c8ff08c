"""The Generation page: its sections, its examples against direct calls of model.generate, and
the equations it cites that no other test checks line by line."""
from pathlib import Path

import numpy as np
import pytest

import model.generate as mg
from model import ModelInputError
from model.config import ModelConfig
from model.data import CharTokenizer
from model.transformer import forward, init_params
from content.hooks import trained_run
from site_builder.run import training_run
from site_builder.base.cache import BuildCache
from site_builder.run.examples import load_example
from site_builder.run.trace import trace_locals

ROOT = Path(__file__).resolve().parent.parent
CONCEPTS = ["generation-loop", "generation-sample"]
HEADINGS = ["What is it?", "Mathematics", "Tensor shapes", "Actual implementation",
            "Where is it used?"]
CFG = ModelConfig(vocab_size=12, seq_len=5, emb_dim=8, num_heads=2, ff_dim=16, num_layers=1)
PARAMS = init_params(CFG, np.random.default_rng(0))


def example(name):
    return load_example(ROOT, f"generation:{name}")


def constant(name):
    return example("sampled").__globals__[name]


def softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


@pytest.fixture(scope="module")
def run(built_site):
    training_run.configure(BuildCache(ROOT / ".build_cache"))
    return trained_run()


@pytest.fixture(scope="module")
def tok(run):
    return CharTokenizer.from_dict({"chars": run.chars})


# ----------------------------------------------------------------------------- the page

def test_generation_page_has_its_sections(site_page):
    html = site_page("generation")
    for cid in CONCEPTS:
        section = html[html.index(f'<section class="concept" id="{cid}"'):]
        section = section[:section.index("</section>")]
        for heading in HEADINGS:
            assert f">{heading}</h3>" in section, (cid, heading)
        assert f'id="{cid}--connection">Code and math connection' in section, cid      # in its evidence disclosure


# ----------------------------------------------------------------------------- examples

def test_sampling_outputs_equal_direct_calls(run, tok):
    texts = example("sampling_outputs")().data["texts"]
    for label, temperature, top_k in constant("SETTINGS"):
        ids = mg.generate(run.params, run.model_cfg, tok.encode(constant("PROMPT")), constant("LENGTH"),
                          temperature, top_k, np.random.default_rng(constant("SEED")))
        assert texts[label] == tok.decode(ids), label


def test_probability_table_is_the_softmax_of_the_real_logits(run, tok):
    data = example("probabilities")().data
    ids = tok.encode(constant("NEXT_PROMPT"))[-run.model_cfg.seq_len:]
    logits = forward(run.params, ids, run.model_cfg)[0][-1]
    np.testing.assert_array_equal(data["logits"], logits)
    for t in constant("TEMPERATURES"):
        np.testing.assert_allclose(data[f"T = {t:g}"], softmax(logits / t), rtol=1e-12, atol=1e-300)
    k = constant("TOP_K")
    top = data[f"T = 1, top-k {k}"]
    best = np.argsort(-logits)[:k]
    assert set(np.flatnonzero(top)) == set(best)
    np.testing.assert_allclose(top[best], softmax(logits[best]), rtol=1e-12)


def test_top_k_draws_stay_in_the_top_k():
    data = example("top_k_draws")().data
    assert data["counts"][data["p"] == 0].sum() == 0
    assert data["counts"].sum() == constant("DRAWS")


def test_greedy_cycle_example():
    data = example("greedy_cycle")().data
    if data["period"] is not None:
        assert data["periodic"]


def test_context_window_and_command_line_examples():
    assert example("context_window")().data["same"]
    assert example("command_line")().data["same"]


def test_bad_settings_table_is_check_samplings_messages():
    rows = example("bad_settings")().blocks[0]["rows"]
    for temperature, top_k, said in rows:
        if said != "accepted":
            with pytest.raises(ModelInputError) as e:
                mg.check_sampling(eval(temperature, {"nan": float("nan"), "inf": float("inf")}),
                                  eval(top_k))
            assert str(e.value) == said


# ----------------------------------------------------------------------------- equations

def test_generate_appends_the_argmax_of_the_last_row():
    prompt = np.array([1, 2, 3, 4, 5, 6, 7], dtype=np.int64)             # longer than seq_len
    ids = list(prompt)
    for _ in range(6):
        logits, _ = forward(PARAMS, np.array(ids[-CFG.seq_len:]), CFG)
        ids.append(int(np.argmax(logits[-1])))
    out = mg.generate(PARAMS, CFG, prompt, 6, 0, None, np.random.default_rng(0))
    assert out.tolist() == ids


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_sample_next_draws_from_the_softmax_of_logits_over_temperature(temperature):
    logits = np.random.default_rng(2).normal(size=CFG.vocab_size) * 3
    t = trace_locals(mg.sample_next, logits, temperature, None, np.random.default_rng(0))
    p = t.final_locals()["p"]
    expected = softmax(logits / temperature)
    np.testing.assert_allclose(p / p.sum(), expected, rtol=1e-12)


def test_sample_next_ignores_a_constant_added_to_the_logits():
    logits = np.random.default_rng(3).normal(size=CFG.vocab_size)
    a, b = np.random.default_rng(7), np.random.default_rng(7)
    draws = [(mg.sample_next(logits, 0.7, None, a), mg.sample_next(logits + 1000.0, 0.7, None, b)) for _ in range(200)]
    assert all(x == y for x, y in draws)
