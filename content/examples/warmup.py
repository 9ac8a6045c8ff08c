"""Examples for the warm-up schedule page: real calls of model.optim.noam_lr, and real runs of
model.train_seq2seq.train read back from what they write and return."""
import inspect
import json
import tempfile
from pathlib import Path

import numpy as np

from model import seq2seq as s2s
from model import train_seq2seq as task
from model.optim import noam_lr
from site_builder.run.examples import ExampleResult, table, figure, fmt_number
from site_builder.render.plots import line_plot

# The paper's base model (Vaswani et al. 2017, Sections 3 and 5.3): hand-picked, not a config here.
PAPER_D, PAPER_WARMUP, PAPER_STEPS = 512, 4000, 100_000
LOG_RUN_STEPS = 40            # a short real run whose logged rates are compared with the formula
SEED = 0
_MEMO = {}


def sci(x):
    return f"{x:.3e}"


def task_settings():
    """What train() uses by default, read from the code: its signature for steps, warmup and
    lr_factor, and the config it builds for d_model (one real step, nothing written)."""
    if "settings" not in _MEMO:
        sig = inspect.signature(task.train).parameters
        cfg = task.train(steps=1, seed=SEED, out=None, num_eval=1, progress=False)["cfg"]
        _MEMO["settings"] = dict(d=cfg.d_model, warmup=sig["warmup"].default, factor=sig["lr_factor"].default,
                                 steps=sig["steps"].default, cfg=cfg)
    return _MEMO["settings"]


def peak_of(d, warmup, last):
    """The step of the largest rate over 1..last, found by evaluating every step."""
    steps = np.arange(1, last + 1)
    lrs = np.array([noam_lr(int(s), d, warmup) for s in steps])
    return int(steps[np.argmax(lrs)]), float(lrs.max()), steps, lrs


def paper_schedule():
    peak_step, peak, steps, lrs = peak_of(PAPER_D, PAPER_WARMUP, PAPER_STEPS)
    every = steps[::250]
    svg = line_plot([(f"noam_lr(t, {PAPER_D}, {PAPER_WARMUP})", every.tolist(), lrs[::250].tolist())],
                    "The schedule of the paper's base model", "step t", "learning rate")
    rows = [["Rate at step 1", sci(noam_lr(1, PAPER_D, PAPER_WARMUP))],
            [f"Step of the largest rate, over every step 1 to {PAPER_STEPS:,}", f"{peak_step:,}"],
            ["The largest rate", sci(peak)],
            ["(d_model · warmup)^-0.5", sci((PAPER_D * PAPER_WARMUP) ** -0.5)],
            [f"Rate at 4 · warmup = {4 * PAPER_WARMUP:,}, over the peak", fmt_number(noam_lr(4 * PAPER_WARMUP, PAPER_D, PAPER_WARMUP) / peak)],
            [f"Rate at step {PAPER_STEPS:,}", sci(noam_lr(PAPER_STEPS, PAPER_D, PAPER_WARMUP))]]
    return ExampleResult([figure(svg, "Every 250th step."), table(["", "Value"], rows)],
                         f"noam_lr(t, d_model={PAPER_D}, warmup_steps={PAPER_WARMUP}) for t = 1 to {PAPER_STEPS:,}",
                         data=dict(peak_step=peak_step, peak=peak))


def task_schedule():
    s = task_settings()
    d, warmup, factor, last = s["d"], s["warmup"], s["factor"], s["steps"]
    peak_step, peak, steps, lrs = peak_of(d, warmup, last)
    svg = line_plot([(f"{factor} · noam_lr(t, {d}, {warmup})", steps.tolist(), (factor * lrs).tolist())],
                    "The reversal task's schedule", "step t", "learning rate")
    rows = [["d_model, from the config train() builds", str(d)],
            ["warmup, train()'s default", str(warmup)],
            ["lr_factor, train()'s default", str(factor)],
            ["steps, train()'s default", str(last)],
            ["Step of the largest rate", str(peak_step)],
            ["The largest rate, lr_factor · (d_model · warmup)^-0.5", sci(factor * peak)],
            ["Rate at step 1", sci(factor * noam_lr(1, d, warmup))],
            ["Rate at the last step", sci(factor * noam_lr(last, d, warmup))]]
    return ExampleResult([figure(svg, "Every step of a default run."), table(["", "Value"], rows)],
                         f"lr_factor · noam_lr(t, d_model, warmup) with train()'s defaults, t = 1 to {last}",
                         data=dict(peak_step=peak_step, peak=factor * peak, d=d, warmup=warmup, factor=factor))


def logged_rates(steps=LOG_RUN_STEPS):
    """A short real run with one log line per step: the rate train() used against the formula."""
    s = task_settings()
    with tempfile.TemporaryDirectory() as out:
        task.train(steps=steps, seed=SEED, out=out, log_every=1, eval_every=steps, num_eval=5, progress=False)
        logged = [json.loads(x) for x in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    pairs = [(m["step"], m["lr"]) for m in logged if "lr" in m]
    gap = max(abs(lr - s["factor"] * noam_lr(t, s["d"], s["warmup"])) for t, lr in pairs)
    ratio = pairs[-1][1] / pairs[0][1]
    rows = [["Steps logged", str(len(pairs))],
            ["Largest |logged lr - lr_factor · noam_lr(step, d_model, warmup)|", f"{gap:.1e}"],
            [f"Logged lr at step {pairs[-1][0]} over step 1", fmt_number(ratio)]]
    return ExampleResult([table(["", "Measured"], rows)],
                         f"train(steps={steps}, seed={SEED}, log_every=1), its metrics.jsonl read back",
                         data=dict(pairs=pairs, gap=gap, ratio=ratio))


WITHIN = 1e-3     # an entry 'moved by lr' when |change| / lr is within this of 1


def first_adam_step():
    """One real step of train(): every parameter before (init_params with train's seed) and after.
    At t = 1 Adam's update is g / (|g| + eps), so an entry moves by lr whatever its gradient's size."""
    s = task_settings()
    cfg = s["cfg"]
    after = task.train(steps=1, seed=SEED, out=None, num_eval=1, progress=False)["params"]
    before = s2s.init_params(cfg, np.random.default_rng(SEED))       # what train() starts from
    # The gradient of that first step, on the batch train() draws first from the same stream.
    rng = np.random.default_rng(SEED)
    s2s.init_params(cfg, rng)
    held_src, held_len = task.sample_sources(1, np.random.default_rng([SEED, 1]))
    held = frozenset(tuple(int(x) for x in row[:L]) for row, L in zip(held_src, held_len))
    src, lengths = task.sample_sources(64, rng, held)
    tgt_in, tgt_out = task.make_targets(src, lengths)
    _, grads = s2s.loss_and_grads(before, src, tgt_in, tgt_out, cfg)
    lr1 = s["factor"] * noam_lr(1, s["d"], s["warmup"])
    moved = np.concatenate([np.abs(after[k] - before[k]).ravel() for k in before]) / lr1
    g = np.concatenate([np.abs(grads[k]).ravel() for k in before])
    full = np.abs(moved - 1) < WITHIN
    is_bk = np.concatenate([np.full(before[k].size, k.endswith(".bk")) for k in before])
    rows = [["Rate at step 1, lr_factor · noam_lr(1, d_model, warmup)", sci(lr1)],
            [f"Entries moved by lr to within {WITHIN:.1%}", f"{int(full.sum()):,} of {moved.size:,}"],
            ["Largest |change| / lr", fmt_number(moved.max())],
            ["Smallest and largest |gradient| among those entries", f"{sci(g[full].min())} to {sci(g[full].max())}"],
            ["Largest |gradient| among the other entries", sci(g[~full].max())],
            ["Attention key-bias entries (.bk) among the other entries", f"{int((~full & is_bk).sum()):,} of {int(is_bk.sum()):,}"],
            ["Peak rate over the rate at step 1", fmt_number(s["factor"] * noam_lr(s["warmup"], s["d"], s["warmup"]) / lr1)]]
    return ExampleResult([table(["Step 1 of the reversal task", "Measured"], rows)],
                         f"train(steps=1, seed={SEED}) against init_params(cfg, np.random.default_rng({SEED})); "
                         "the gradient recomputed on the first batch train() draws",
                         data=dict(moved=moved, g=g, full=int(full.sum()), lr1=lr1, within=WITHIN))
