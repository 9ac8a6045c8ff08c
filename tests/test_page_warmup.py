"""The warm-up schedule page: its sections, its examples against direct calls of noam_lr and of
model.train_seq2seq.train, and the properties it derives (cited as `tests` references)."""
import inspect

import numpy as np
import pytest

from model import seq2seq as s2s
from model import train_seq2seq as task
from model.optim import noam_lr
from site_builder.run.examples import load_example
from tests.conftest import ROOT, assert_sections

CONCEPTS = ["warmup-noam", "warmup-adam"]
HEADINGS = ["What is it?", "Why does the model need it?", "Mathematics", "What does each symbol mean?",
            "Tiny numerical example", "Actual implementation", "Code and math connection", "Where is it used?"]
EX = load_example(ROOT, "warmup:paper_schedule").__globals__
PAPER_WARMUP = EX["PAPER_WARMUP"]


def example(name, *args):
    return load_example(ROOT, f"warmup:{name}")(*args)


@pytest.mark.parametrize("concept", CONCEPTS)
def test_every_concept_has_every_section(site_page, concept):
    assert_sections(site_page("warmup"), concept, HEADINGS)


def test_page_draws_both_schedules(site_page):
    html = site_page("warmup")
    assert html.count("<svg") >= 2 and "Note · measured" in html and "Eq. 3" in html


# ----------------------------------------------------------------------------- equations the page cites

@pytest.mark.parametrize("d,w", [(512, 4000), (32, 400), (64, 10)])
def test_rise_then_decay(d, w):
    for t in (1, w // 2, w):
        assert noam_lr(t, d, w) == pytest.approx(d ** -0.5 * w ** -1.5 * t, rel=1e-12)
    for t in (w, 3 * w, 10 * w):
        assert noam_lr(t, d, w) == pytest.approx(d ** -0.5 * t ** -0.5, rel=1e-12)
    assert noam_lr(1, d, w) * w == pytest.approx(noam_lr(w, d, w), rel=1e-12)


def test_peak_is_at_warmup():
    r = example("paper_schedule")
    assert r.data["peak_step"] == PAPER_WARMUP
    assert r.data["peak"] == pytest.approx((EX["PAPER_D"] * PAPER_WARMUP) ** -0.5, rel=1e-12)
    s = example("task_schedule")
    sig = inspect.signature(task.train).parameters
    assert s.data["peak_step"] == sig["warmup"].default
    assert s.data["peak"] == sig["lr_factor"].default * noam_lr(s.data["warmup"], s.data["d"], s.data["warmup"])


def test_logged_rates_follow_the_formula():
    r = example("logged_rates", 6)                    # a 6-step run through the example's own code
    s = EX["task_settings"]()
    factor, d, warmup = s["factor"], s["d"], s["warmup"]
    assert [t for t, _ in r.data["pairs"]] == list(range(1, 7))
    for step, lr in r.data["pairs"]:
        assert lr == factor * noam_lr(step, d, warmup)


def test_first_adam_step_moves_by_lr():
    s = EX["task_settings"]()
    cfg = s["cfg"]
    after = task.train(steps=1, seed=EX["SEED"], out=None, num_eval=1, progress=False)["params"]
    before = s2s.init_params(cfg, np.random.default_rng(EX["SEED"]))
    r = example("first_adam_step")
    lr1 = r.data["lr1"]
    assert lr1 == s["factor"] * noam_lr(1, s["d"], s["warmup"])
    sizes = np.cumsum([0] + [v.size for v in before.values()])
    for i, k in enumerate(before):                    # the example's gradients reproduce the real step
        g = r.data["g"][sizes[i]:sizes[i + 1]].reshape(before[k].shape) * np.sign(before[k] - after[k])
        np.testing.assert_allclose(after[k] - before[k], -lr1 * g / (np.abs(g) + 1e-9), rtol=1e-9, atol=1e-20)
    assert r.data["full"] > 0.95 * r.data["moved"].size
