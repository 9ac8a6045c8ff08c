"""The Optimizer page: its sections, its examples against direct calls of model.optim and of the
real training loop, and the equations no other test checks (cited by the page as `tests` references)."""
import math

import numpy as np
import pytest

from model.config import TrainConfig
from model.optim import AdamW, decays, clip_grad_norm, warmup_cosine_lr, noam_lr
from model.train import train, load_checkpoint
from model.transformer import init_params
from site_builder.run.examples import load_example
from tests.conftest import ROOT, assert_anchored_sections

CONCEPTS = ("optimizer-adamw", "optimizer-decay", "optimizer-clip", "optimizer-warmup-cosine", "optimizer-noam")
WITH_SHAPES = ("optimizer-adamw", "optimizer-decay", "optimizer-clip")     # the schedules are scalars


def example(name):
    return load_example(ROOT, f"optimizer:{name}")


# ---------------------------------------------------------------- equations the page cites

def test_corrected_moments_of_a_constant_gradient_are_exact():
    b1, b2 = 0.9, 0.99
    g = np.array([0.3, -2.0, 1e-3])
    params = {"x.wq": np.zeros(3)}
    opt = AdamW(params, lr=1e-3, betas=(b1, b2))
    for t in range(1, 6):
        opt.step(params, {"x.wq": g.copy()})
        np.testing.assert_allclose(opt.m["x.wq"] / (1 - b1 ** t), g, rtol=1e-14)
        np.testing.assert_allclose(opt.v["x.wq"] / (1 - b2 ** t), g * g, rtol=1e-14)


def test_first_step_is_the_sign_of_the_gradient():
    eps, lr = 1e-8, 0.1
    g = np.array([0.5, -3.0, 1e-8, -1e-12, 0.0])         # two near eps, one below it, one zero
    params = {"x.bq": np.ones(5)}
    AdamW(params, lr=lr, eps=eps).step(params, {"x.bq": g})
    step = (1.0 - params["x.bq"]) / lr
    np.testing.assert_allclose(step, g / (np.abs(g) + eps), rtol=1e-9, atol=1e-15)
    assert step[0] == pytest.approx(1.0, abs=1e-7) and step[1] == pytest.approx(-1.0, abs=1e-8)


# ---------------------------------------------------------------- the page

def test_page_has_its_sections(site_page):
    html = site_page("optimizer")
    assert_anchored_sections(html, CONCEPTS, WITH_SHAPES)
    assert html.count('<svg class="chart"') >= 3


# ---------------------------------------------------------------- the examples equal direct calls

def test_moment_table_is_the_real_training_run(tmp_path):
    """The example replays train's first steps by hand; train itself must end at the same state."""
    r = example("adamw_moments")()
    ex = example("replay").__globals__
    steps = ex["STEPS"]
    train(tmp_path, train_cfg=TrainConfig(), progress=False, stop_at=steps)
    ckpt = load_checkpoint(tmp_path / "checkpoint.npz")
    name, idx = r.data["name"], r.data["idx"]
    last = r.data["rows"][-1]
    assert ckpt["opt_state"]["t"] == last["t"] == steps
    assert ckpt["opt_state"]["m"][name][idx] == last["m"]
    assert ckpt["opt_state"]["v"][name][idx] == last["v"]
    assert ckpt["params"][name][idx] == last["w"]
    tcfg = TrainConfig()
    for row in r.data["rows"]:
        assert row["lr"] == warmup_cosine_lr(row["t"], tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps)
        assert row["m_hat"] == row["m"] / (1 - tcfg.beta1 ** row["t"])
        # the measured update equals the Adam term plus the decay term
        assert row["update"] == pytest.approx(row["adam"] + row["decay"], rel=1e-9)
    assert decays(name)


def test_first_step_example():
    r = example("adamw_first_step")()
    assert r.data["median"] == pytest.approx(1.0, abs=1e-3)
    assert set(r.data["far"]) <= {"b0.bk", "b1.bk"}
    # A key bias's gradient is 0 in exact arithmetic (a constant added to a query's scores leaves
    # its softmax unchanged): in floats it is ~1e-17, or exactly 0 where the sums cancel, which
    # depends on NumPy's summation order. Every other exact 0 is an absent character's row.
    assert "tok_emb" in r.data["zero_entries"]
    assert set(r.data["zero_entries"]) - {"tok_emb"} <= {"b0.bk", "b1.bk"}
    assert r.data["zero_entries"]["tok_emb"] == r.data["rows_emb"] * 32


def test_decay_examples():
    r = example("decay_table")()
    cfg = example("default_config")()
    names = list(init_params(cfg, np.random.default_rng(0)))
    assert r.data["names"] == names
    assert r.data["decayed"] == [n for n in names if decays(n)]
    rows = r.blocks[0]["rows"]
    assert [row[2] == "yes" for row in rows] == [decays(n) for n in names]
    r = example("decay_alone")()
    for name, (lo, hi) in r.data["ratios"].items():
        want = r.data["expected"] if decays(name) else 1.0
        assert lo == pytest.approx(want, rel=1e-14) and hi == pytest.approx(want, rel=1e-14), name


def test_clip_examples():
    ex = example("first_gradient")
    tcfg, cfg, params, opt, grads, loss, x = ex()
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    r = example("clip_example")()
    assert r.data["before"] == pytest.approx(norm, rel=1e-12)
    assert r.data["before"] > tcfg.clip_norm                     # it does clip
    assert r.data["after"] == pytest.approx(tcfg.clip_norm, rel=1e-12)
    assert r.data["cosine"] == pytest.approx(1.0, abs=1e-12)
    r = example("clip_and_adam")()
    clip_grad_norm(grads, tcfg.clip_norm)
    AdamW_step = example("make_optimizer")(params, tcfg)
    AdamW_step.step(params, grads, warmup_cosine_lr(1, tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps))
    for k in params:
        np.testing.assert_array_equal(r.data["clipped"][k], params[k])
    assert r.data["over"] < 0.01 * r.data["size"]


def test_clip_during_training():
    from site_builder.base.cache import BuildCache
    from content.hooks import trained_run
    from site_builder.run import training_run
    training_run.configure(BuildCache(ROOT / ".build_cache"))
    run = trained_run()
    r = example("clip_during_training")()
    assert r.data["norms"] == [row["grad_norm"] for row in run.metrics if "grad_norm" in row]
    assert r.data["clipped"] == sum(n > run.train_cfg.clip_norm for n in r.data["norms"])


def test_schedule_examples():
    tcfg = TrainConfig()
    r = example("warmup_cosine_plot")()
    assert r.data["steps"] == list(range(1, tcfg.steps + 1))
    assert r.data["lrs"] == [warmup_cosine_lr(s, tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps) for s in r.data["steps"]]
    assert max(r.data["lrs"]) == tcfg.lr
    r = example("noam_plot")()
    assert r.data["lrs"] == [noam_lr(s, 512, 4000) for s in r.data["steps"]]
    assert r.data["steps"][int(np.argmax(r.data["lrs"]))] == 4000
