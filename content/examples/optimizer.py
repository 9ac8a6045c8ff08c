"""Examples for the Optimizer page. Each returns an ExampleResult built from real calls of model.optim.

The moment table replays the first steps of the real training run: the same corpus, config,
seeds, batches, schedule, clipping and AdamW as model.train.train, unrolled so that the gradient
AdamW receives can be read before the step and the optimizer's state after it.
"""
import math

import numpy as np

from model.config import ModelConfig, TrainConfig
from model.data import DEFAULT_CORPUS, get_batch
from model.optim import AdamW, decays, clip_grad_norm, warmup_cosine_lr, noam_lr, DECAYED_SUFFIXES
from model.train import prepare_data, seed_streams, make_optimizer, batch_loss_and_grads
from model.transformer import init_params
from site_builder.run.examples import ExampleResult, table, figure, fmt_number, config_label
from site_builder.render.plots import line_plot

STEPS = 6                       # how many real training steps the moment table follows


def sci(x):
    """Four significant digits: the moments span many orders of magnitude."""
    return f"{float(x):.4g}"


def training_start():
    """What model.train.train builds before its first step: data, config, params, optimizer, batch RNG."""
    tcfg = TrainConfig()
    _, cfg, train_ids, _, _ = prepare_data(DEFAULT_CORPUS, None, tcfg)
    init_seed, train_seed, _ = seed_streams(tcfg.seed)
    params = init_params(cfg, np.random.default_rng(init_seed))
    opt = make_optimizer(params, tcfg)
    rng = np.random.default_rng(train_seed)
    return tcfg, cfg, train_ids, params, opt, rng


def first_gradient():
    """The real gradient of step 1 (before clipping), with everything needed to take the step."""
    tcfg, cfg, train_ids, params, opt, rng = training_start()
    x, y = get_batch(train_ids, tcfg.batch_size, cfg.seq_len, rng)
    loss, grads = batch_loss_and_grads(params, x, y, cfg)
    return tcfg, cfg, params, opt, grads, loss, x


SOURCE = (f"the first steps of model.train.train at TrainConfig() and the default ModelConfig, on the "
          f"shipped corpus (seed {TrainConfig().seed})")


# ----------------------------------------------------------------------------- AdamW

def replay(steps=STEPS):
    """The training loop of model.train.train, unrolled: per step the lr, the clipped gradients, and
    the weights before and after AdamW.step. Returns (tcfg, cfg, records, opt, params)."""
    tcfg, cfg, train_ids, params, opt, rng = training_start()
    records = []
    for step in range(1, steps + 1):
        lr = warmup_cosine_lr(step, tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps)
        x, y = get_batch(train_ids, tcfg.batch_size, cfg.seq_len, rng)
        loss, grads = batch_loss_and_grads(params, x, y, cfg)
        norm = clip_grad_norm(grads, tcfg.clip_norm)
        before = {k: v.copy() for k, v in params.items()}
        opt.step(params, grads, lr)
        records.append(dict(step=step, lr=lr, loss=loss, norm=norm, grads=grads, before=before,
                            after={k: v.copy() for k, v in params.items()},
                            m={k: v.copy() for k, v in opt.m.items()}, v={k: v.copy() for k, v in opt.v.items()},
                            t=opt.t))
    return tcfg, cfg, records, opt, params


def chosen_entry(records):
    """The entry of head_w whose step-1 gradient is largest in magnitude: chosen by a rule, not by hand."""
    g = records[0]["grads"]["head_w"]
    return "head_w", np.unravel_index(int(np.argmax(np.abs(g))), g.shape)


def moments_rows(tcfg, records, name, idx):
    b1, b2, eps, wd = tcfg.beta1, tcfg.beta2, tcfg.adam_eps, tcfg.weight_decay
    rows, data = [], []
    for r in records:
        t = r["t"]
        g, m, v = r["grads"][name][idx], r["m"][name][idx], r["v"][name][idx]
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        adam = m_hat / (math.sqrt(v_hat) + eps)
        w0, w1 = r["before"][name][idx], r["after"][name][idx]
        decay = wd * w0 if decays(name) else 0.0
        update = (w0 - w1) / r["lr"]                       # what the step really did, divided by lr
        rows.append([str(t), sci(r["lr"]), sci(g), sci(m), sci(v), sci(m_hat), sci(v_hat), sci(adam),
                     sci(decay), sci(update), fmt_number(w1)])
        data.append(dict(t=t, lr=r["lr"], g=g, m=m, v=v, m_hat=m_hat, v_hat=v_hat, adam=adam, decay=decay,
                         update=update, w=w1))
    return rows, data


def adamw_moments():
    tcfg, cfg, records, opt, params = replay()
    name, idx = chosen_entry(records)
    rows, data = moments_rows(tcfg, records, name, idx)
    headers = ["t", "lr", "g", "m", "v", "m̂", "v̂", "m̂ / (√v̂ + ε)", "λ w", "update", "w after"]
    first_w = fmt_number(records[0]["before"][name][idx])
    return ExampleResult([table(headers, rows, caption=f"{name}{list(map(int, idx))}, which starts at {first_w}")],
                         SOURCE, data=dict(name=name, idx=tuple(int(i) for i in idx), rows=data))


def adamw_first_step():
    """At t = 1, m̂ = g and v̂ = g²: the Adam term is g / (|g| + ε), ±1 unless |g| is near ε."""
    tcfg, cfg, records, opt, params = replay(steps=1)
    r = records[0]
    adam = {k: (r["before"][k] - r["after"][k]) / r["lr"] - (tcfg.weight_decay * r["before"][k] if decays(k) else 0)
            for k in params}
    g = {k: r["grads"][k] for k in params}
    nonzero = np.concatenate([np.abs(adam[k][g[k] != 0]) for k in params])
    zero_entries = {k: int((g[k] == 0).sum()) for k in params if (g[k] == 0).any()}
    rows_emb = int((np.abs(g["tok_emb"]).sum(axis=1) == 0).sum())
    far = {k: int(((np.abs(adam[k]) < 0.5) & (g[k] != 0)).sum()) for k in params}
    far = {k: n for k, n in far.items() if n}
    tiny_g = {k: float(np.abs(g[k]).max()) for k in far}
    rows = [["Entries with a nonzero gradient", str(nonzero.size)],
            ["Median of |m̂ / (√v̂ + ε)| over them", fmt_number(np.median(nonzero))],
            ["Largest", fmt_number(nonzero.max())],
            ["Smallest", sci(nonzero.min())],
            ["Entries with a nonzero gradient but |m̂ / (√v̂ + ε)| below 0.5, per tensor",
             ", ".join(f"{k}: {n}" for k, n in far.items()) or "none"],
            ["The largest |g| in those tensors", ", ".join(f"{k}: {sci(v)}" for k, v in tiny_g.items()) or "none"],
            ["Entries with a gradient of exactly 0: no Adam term at all",
             ", ".join(f"{k}: {n}" for k, n in zero_entries.items()) or "none"],
            ["Rows of tok_emb with a zero gradient (characters absent from the batch), of " +
             str(g["tok_emb"].shape[0]), str(rows_emb)]]
    return ExampleResult([table(["Step 1, over every parameter of the model", "Measured"], rows)],
                         SOURCE + "; the Adam term is measured as (w before - w after) / lr minus the decay term",
                         data=dict(median=float(np.median(nonzero)), max=float(nonzero.max()),
                                   min=float(nonzero.min()), zero_entries=zero_entries, rows_emb=rows_emb,
                                   far=far, eps=tcfg.adam_eps))


# ----------------------------------------------------------------------------- decay rule

# Why each kind of parameter decays or not, and what decays() must answer for it. The answer column
# of the table comes from decays(name); this text only explains it, and the example fails (so the
# build fails) if the two ever disagree.
KINDS = [
    (lambda n: n.endswith((".wq", ".wk", ".wv", ".wo")), True,
     "An attention projection matrix: a weight matrix that multiplies its input."),
    (lambda n: n.endswith(("ff1_w", "ff2_w")), True, "A feed-forward weight matrix."),
    (lambda n: n == "head_w", True, "The output layer's weight matrix."),
    (lambda n: n.endswith("_g"), False,
     "A LayerNorm gain. Decay would pull it toward 0, which switches its LayerNorm's output off."),
    (lambda n: n.endswith(("ln1_b", "ln2_b", "lnf_b")), False, "A LayerNorm shift: an offset, not a weight matrix."),
    (lambda n: n.endswith((".bq", ".bk", ".bv", ".bo", "ff1_b", "ff2_b")) or n == "head_b", False,
     "A bias: an offset added to every row, not a weight matrix."),
    (lambda n: n in ("tok_emb", "pos_emb"), False,
     "An embedding table, looked up rather than multiplied. Decoupled decay would shrink every row at "
     "every step, but a row only gets a gradient when its character or position appears in the batch."),
]


def why(name):
    for test, expected, text in KINDS:
        if test(name):
            if decays(name) != expected:
                raise AssertionError(f"decays({name!r}) is {decays(name)}, but the page explains it as "
                                     f"{'decayed' if expected else 'not decayed'}: update KINDS in content/examples/optimizer.py")
            return text
    raise AssertionError(f"no explanation for parameter {name!r}: add its kind to KINDS in content/examples/optimizer.py")


def default_config():
    return prepare_data(DEFAULT_CORPUS, None, TrainConfig())[1]


def decay_table():
    cfg = default_config()
    params = init_params(cfg, np.random.default_rng(0))
    rows = [[name, str(p.shape), "yes" if decays(name) else "no", why(name)] for name, p in params.items()]
    n_decay = sum(p.size for k, p in params.items() if decays(k))
    n_all = sum(p.size for p in params.values())
    summary = table(["", "Tensors", "Scalars"], [
        ["Decayed", str(sum(decays(k) for k in params)), f"{n_decay:,}"],
        ["Not decayed", str(sum(not decays(k) for k in params)), f"{n_all - n_decay:,}"],
        ["Share of scalars decayed", "", f"{n_decay / n_all:.1%}"]])
    return ExampleResult([table(["Name", "Shape", "decays(name)", "Why"], rows), summary],
                         f"decays(name) for every name of init_params({config_label(cfg)}, ...); "
                         f"DECAYED_SUFFIXES = {DECAYED_SUFFIXES}",
                         data=dict(names=list(params), decayed=[k for k in params if decays(k)]))


def decay_alone():
    """A step with every gradient 0: the Adam term is 0 / (0 + ε) = 0, so only the decay acts."""
    tcfg = TrainConfig()
    cfg = default_config()
    params = init_params(cfg, np.random.default_rng(0))
    for k in params:                       # no zero entries (biases start at 0), so any decay would show
        params[k] = params[k] + 1.0
    before = {k: v.copy() for k, v in params.items()}
    opt = make_optimizer(params, tcfg)
    opt.step(params, {k: np.zeros_like(v) for k, v in params.items()})
    rows, ratios = [], {}
    for name in ("b0.wq", "b0.ff1_w", "head_w", "b0.ln1_g", "b0.bq", "head_b", "tok_emb"):
        ratio = params[name] / before[name]
        ratios[name] = (float(ratio.min()), float(ratio.max()))
        rows.append([name, "yes" if decays(name) else "no", f"{ratio.min():.10f}", f"{ratio.max():.10f}"])
    rows.append(["1 - lr λ, for comparison", "", f"{1 - tcfg.lr * tcfg.weight_decay:.10f}", ""])
    return ExampleResult([table(["Parameter", "decays(name)", "Smallest w after / w before", "Largest"], rows)],
                         f"init_params({config_label(cfg)}, np.random.default_rng(0)) plus 1 everywhere; one "
                         f"AdamW.step at TrainConfig's lr {tcfg.lr:g} and weight_decay {tcfg.weight_decay:g} with "
                         f"every gradient 0",
                         data=dict(ratios=ratios, expected=1 - tcfg.lr * tcfg.weight_decay))


# ----------------------------------------------------------------------------- clipping

def clip_example():
    tcfg, cfg, params, opt, grads, loss, x = first_gradient()
    before = {k: g.copy() for k, g in grads.items()}
    norm_before = clip_grad_norm(grads, tcfg.clip_norm)
    norm_after = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
    flat_b = np.concatenate([g.ravel() for g in before.values()])
    flat_a = np.concatenate([g.ravel() for g in grads.values()])
    cosine = float(flat_a @ flat_b / (np.linalg.norm(flat_a) * np.linalg.norm(flat_b)))
    summary = table(["", "Value"], [
        ["Global norm before: the value clip_grad_norm returns", fmt_number(norm_before)],
        ["max_norm (TrainConfig.clip_norm)", fmt_number(tcfg.clip_norm)],
        ["Scale: max_norm / (norm + 1e-12)", f"{tcfg.clip_norm / (norm_before + 1e-12):.6f}"],
        ["Global norm after", f"{norm_after:.12f}"],
        ["Cosine between the gradient before and after", f"{cosine:.12f}"]])
    top = sorted(before, key=lambda k: -np.linalg.norm(before[k]))[:6]
    per_tensor = table(["Tensor", "Norm before", "Norm after", "After / before"],
                       [[k, fmt_number(np.linalg.norm(before[k])), fmt_number(np.linalg.norm(grads[k])),
                         f"{np.linalg.norm(grads[k]) / np.linalg.norm(before[k]):.6f}"] for k in top],
                       caption="The six tensors with the largest gradients: every one is scaled by the same factor.")
    return ExampleResult([summary, per_tensor], SOURCE + ": the gradient of step 1",
                         data=dict(before=norm_before, after=norm_after, cosine=cosine, max_norm=tcfg.clip_norm))


def clip_during_training():
    from content.hooks import run_label, trained_run
    run = trained_run()
    rows = [r for r in run.metrics if "grad_norm" in r]
    steps = [r["step"] for r in rows]
    norms = [r["grad_norm"] for r in rows]
    clip = run.train_cfg.clip_norm
    svg = line_plot([("gradient norm before clipping", steps, norms),
                     ("max_norm", [steps[0], steps[-1]], [clip, clip])],
                    "Global gradient norm during the training run", "step", "global L2 norm", logy=True)
    clipped = sum(n > clip for n in norms)
    summary = table(["", "Value"], [["Logged steps", str(len(norms))],
                                    ["Of them, clipped (norm above max_norm)", str(clipped)],
                                    ["Last logged step that was clipped", str(max((s for s, n in zip(steps, norms) if n > clip), default="none"))],
                                    ["Norm at the first logged step", fmt_number(norms[0])],
                                    ["Norm at the last logged step", fmt_number(norms[-1])]])
    return ExampleResult([figure(svg, "Every logged step of the site's training run. The gradient norm is the "
                                      "value train_step records, before clipping."), summary],
                         f"the metrics of {run_label(run)}",
                         data=dict(steps=steps, norms=norms, clipped=clipped, clip=clip))


# ----------------------------------------------------------------------------- schedules

def warmup_cosine_plot():
    """The schedule of a run at TrainConfig's defaults; the site's own run (site_steps) is
    another run, and the page says so."""
    from content.hooks import trained_run
    tcfg = TrainConfig()
    steps = list(range(1, tcfg.steps + 1))
    lrs = [warmup_cosine_lr(s, tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps) for s in steps]
    svg = line_plot([("warmup_cosine_lr", steps, lrs)], "Warm-up then cosine, at the TrainConfig defaults",
                    "step", "learning rate")
    mid = tcfg.warmup_steps + (tcfg.steps - tcfg.warmup_steps) // 2
    points = [(1, "the first step"), (tcfg.warmup_steps, "the end of warm-up: max_lr"),
              (mid, "halfway down the cosine"), (tcfg.steps, "the last step: min_lr")]
    rows = [[str(s), what, sci(warmup_cosine_lr(s, tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps))]
            for s, what in points]
    return ExampleResult([figure(svg), table(["Step", "Where in the schedule", "Learning rate"], rows)],
                         f"warmup_cosine_lr(step, max_lr={tcfg.lr:g}, min_lr={tcfg.min_lr:g}, "
                         f"warmup_steps={tcfg.warmup_steps}, total_steps={tcfg.steps}) for every step of a run "
                         f"at TrainConfig()",
                         data=dict(steps=steps, lrs=lrs, total=tcfg.steps, site_steps=trained_run().train_cfg.steps))


NOAM_D, NOAM_WARMUP, NOAM_STEPS = 512, 4000, 100_000     # the base model of Vaswani et al. 2017, Section 5.3


def noam_plot():
    steps = list(range(1, NOAM_STEPS + 1, 100)) + [NOAM_WARMUP, NOAM_STEPS]
    steps = sorted(set(steps))
    lrs = [noam_lr(s, NOAM_D, NOAM_WARMUP) for s in steps]
    svg = line_plot([(f"noam_lr(step, {NOAM_D}, {NOAM_WARMUP})", steps, lrs)],
                    "The schedule of Vaswani et al. 2017, Eq. 3", "step", "learning rate")
    points = [(1, "the first step"), (NOAM_WARMUP, "the end of warm-up: the peak"),
              (4 * NOAM_WARMUP, "four times later: half the peak"), (NOAM_STEPS, "the paper's last step")]
    rows = [[str(s), what, sci(noam_lr(s, NOAM_D, NOAM_WARMUP))] for s, what in points]
    return ExampleResult([figure(svg), table(["Step", "Where in the schedule", "Learning rate"], rows)],
                         f"noam_lr(step, d_model={NOAM_D}, warmup_steps={NOAM_WARMUP}), every 100th step and the peak",
                         data=dict(steps=steps, lrs=lrs))


def clip_and_adam():
    """Step 1 with and without clipping: Adam divides by the gradient's own scale, so a uniform factor
    on every gradient changes the first update only where |g| is not far above ε."""
    tcfg, cfg, params, opt, grads, loss, x = first_gradient()
    lr = warmup_cosine_lr(1, tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps)
    clipped = {k: g.copy() for k, g in grads.items()}
    norm = clip_grad_norm(clipped, tcfg.clip_norm)
    results = {}
    for label, g in (("clipped", clipped), ("not clipped", grads)):
        p = {k: v.copy() for k, v in params.items()}
        make_optimizer(p, tcfg).step(p, g, lr)
        results[label] = p
    diff = {k: np.abs(results["clipped"][k] - results["not clipped"][k]) / lr for k in params}
    flat = np.concatenate([d.ravel() for d in diff.values()])
    worst = max(diff, key=lambda k: diff[k].max())
    moved = max(float(np.abs(results["clipped"][k] - params[k]).max()) / lr for k in params)
    rows = [["Global norm before clipping", fmt_number(norm)],
            ["Factor clipping applies to every gradient", f"{tcfg.clip_norm / (norm + 1e-12):.6f}"],
            ["Largest |update| of any entry, in units of lr", fmt_number(moved)],
            ["Median difference between the two updates, in units of lr", sci(np.median(flat))],
            ["Entries whose update differs by more than 1% of lr", f"{int((flat > 0.01).sum())} of {flat.size}"],
            ["Largest difference, in units of lr, and its tensor", f"{sci(flat.max())} ({worst})"]]
    return ExampleResult([table(["Step 1 of training, with and without clipping", "Measured"], rows)],
                         SOURCE + "; two copies of the parameters, each given one AdamW.step",
                         data=dict(median=float(np.median(flat)), over=int((flat > 0.01).sum()), size=flat.size,
                                   norm=norm, clipped=results["clipped"]))
