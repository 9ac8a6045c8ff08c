"""The Label smoothing page: its sections, its examples against direct calls of model.ops and
model.train_seq2seq, and the equations it derives (cited as `tests` references)."""
import numpy as np
import pytest

from model import seq2seq as s2s
from model import train_seq2seq as task
from model.ops import smoothed_targets, cross_entropy_forward, cross_entropy_backward
from model.train_seq2seq import smoothing_floor
from site_builder.run.examples import load_example, fmt_number
from tests.conftest import ROOT, assert_sections

CONCEPTS = ["label-smoothing-targets", "label-smoothing-loss", "label-smoothing-floor"]
HEADINGS = ["What is it?", "Why does the model need it?", "Mathematics", "What does each symbol mean?",
            "Actual implementation", "Code and math connection", "Where is it used?"]
EX = load_example(ROOT, "label_smoothing:task_cfg").__globals__


def example(name):
    return load_example(ROOT, f"label_smoothing:{name}")()


@pytest.mark.parametrize("concept", CONCEPTS)
def test_every_concept_has_every_section(site_page, concept):
    assert_sections(site_page("label-smoothing"), concept, HEADINGS)


def test_page_shows_the_floor(site_page):
    html = site_page("label-smoothing")
    assert fmt_number(smoothing_floor(task.VOCAB, 0.1)) in html and "Note · measured" in html


# ----------------------------------------------------------------------------- equations the page cites

@pytest.mark.parametrize("V,eps", [(13, 0.1), (5, 0.3), (40, 0.05)])
def test_q_has_two_values_and_sums_to_one(V, eps):
    targets = np.array([[0, 3, V - 1], [2, 2, 1]])
    q = smoothed_targets(targets, V, eps)
    np.testing.assert_allclose(q.sum(-1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.take_along_axis(q, targets[..., None], -1), 1 - eps + eps / V, rtol=1e-15)
    assert np.allclose(np.sort(q, -1)[..., :-1], eps / V)


def test_smoothed_loss_is_a_mix():
    rng = np.random.default_rng(3)
    V, eps = 13, 0.1
    logits, targets = rng.standard_normal((4, 9, V)) * 2, rng.integers(0, V, (4, 9))
    loss, c = cross_entropy_forward(logits, targets, eps)
    hard, _ = cross_entropy_forward(logits, targets, 0.0)
    uniform = float(-np.log(c["P"]).mean())
    assert loss == pytest.approx((1 - eps) * hard + eps * uniform, rel=1e-12)


@pytest.mark.parametrize("V,eps", [(13, 0.1), (5, 0.3)])
def test_floor_is_the_loss_at_p_equals_q(V, eps):
    q = smoothed_targets(np.array([1]), V, eps)
    at_q, c = cross_entropy_forward(np.log(q), np.array([1]), eps)
    assert at_q == pytest.approx(smoothing_floor(V, eps), rel=1e-12)
    assert np.abs(cross_entropy_backward(1.0, c)).max() < 1e-15
    gap = float(np.log(q.max() / q.min()))
    assert gap == pytest.approx(np.log(1 + (1 - eps) * V / eps), rel=1e-12)
    for shift in (-0.3, 0.2):                       # any other logits cost more
        z = np.log(q).copy()
        z[0, 1] += shift
        assert cross_entropy_forward(z, np.array([1]), eps)[0] > at_q


# ----------------------------------------------------------------------------- examples = direct calls

def test_eps_example_reads_the_config():
    r = example("where_eps_comes_from")
    cfg = EX["task_cfg"]()
    assert r.data["eps"] == cfg.label_smoothing and r.data["V"] == task.VOCAB
    from model.config import Seq2SeqConfig
    assert r.data["default"] == Seq2SeqConfig(3, 3).label_smoothing


def test_targets_example_equals_a_direct_call():
    r = example("targets_of_one_pair")
    src, lengths = task.sample_sources(1, np.random.default_rng(EX["SEED"]))
    _, tgt_out = task.make_targets(src, lengths)
    assert np.array_equal(r.data["tgt_out"], tgt_out[0])
    np.testing.assert_array_equal(r.data["q"], smoothed_targets(tgt_out[0], task.VOCAB, 0.1))


def test_loss_example_equals_a_direct_call():
    r = example("tiny_model_loss")
    cfg = EX["task_cfg"]()
    src, tgt_in, tgt_out = EX["one_pair"]()
    params = s2s.init_params(cfg, np.random.default_rng(EX["SEED"]))
    loss, _ = s2s.loss_and_grads(params, src, tgt_in, tgt_out, cfg)
    assert r.data["loss"] == pytest.approx(loss, rel=1e-14)
    assert r.data["loss"] == pytest.approx((1 - r.data["eps"]) * r.data["hard"] + r.data["eps"] * r.data["uniform"], rel=1e-12)


def test_floor_example_equals_a_direct_call():
    r = example("floor_of_the_task")
    assert r.data["floor"] == smoothing_floor(task.VOCAB, 0.1)
    assert r.data["at_q"] == pytest.approx(r.data["floor"], rel=1e-12) and r.data["grad"] < 1e-15
    assert r.data["curve"][0] == 0.0


def test_trained_example_helper_matches_train(monkeypatch):
    """The trained-model example with a 5-step run (the page's run is cached by the build)."""
    mod = load_example(ROOT, "label_smoothing:trained_model").__globals__
    small = dict(mod["RUN"], steps=5, eval_every=5, num_eval=10)
    monkeypatch.setitem(mod, "RUN", small)
    r = load_example(ROOT, "label_smoothing:trained_model")()
    direct = task.train(out=None, progress=False, **small)
    assert r.data["final"] == direct["final_loss"] and r.data["floor"] == direct["loss_floor"]
    assert r.data["held_loss"] > r.data["floor"] and len(r.data["p_right"]) > 0


def test_the_trained_model_is_the_encoder_decoder_pages_run(monkeypatch):
    """Both pages read one run, trained once per process (and cached by the build)."""
    from content import hooks
    from site_builder.run import training_run
    assert EX["RUN"] is hooks.REVERSAL_RUN
    s2s_ex = load_example(ROOT, "seq2seq:reversal_run").__globals__
    assert (s2s_ex["RUN_STEPS"], s2s_ex["RUN_EVAL_EVERY"], s2s_ex["RUN_NUM_EVAL"], s2s_ex["RUN_LOG_EVERY"],
            s2s_ex["SEED"]) == tuple(hooks.REVERSAL_RUN[k] for k in
                                     ("steps", "eval_every", "num_eval", "log_every", "seed"))
    calls = []
    real = task.train
    monkeypatch.setattr(task, "train", lambda **kw: calls.append(kw) or real(**kw))
    monkeypatch.setitem(training_run._state, "held", {})
    first = hooks.reversal_run(steps=3, eval_every=3, num_eval=4, log_every=1)
    again = hooks.reversal_run(steps=3, eval_every=3, num_eval=4, log_every=1)
    assert again is first and len(calls) <= 1     # 0 when the build cache already holds it
    assert [m["step"] for m in first["metrics"] if "loss" in m] == [1, 2, 3]
    assert "elapsed_s" not in first["metrics"][0] and "wall_s" not in first["result"]
