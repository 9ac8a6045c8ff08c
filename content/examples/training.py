"""Examples for the Training page. Each returns an ExampleResult built from real calls.

Two sources of numbers:
  * the cached training run of the site (content/hooks.py's trained_run): the real
    model.train.train on the shipped corpus at the default configs, with its metrics.jsonl,
    its snapshots and the samples drawn from them;
  * tiny runs made here, at TINY and TINY_TRAIN, on the shipped corpus: one traced train_step,
    a run in one go against a run in two segments, and what a checkpoint holds.
"""
import contextlib
import functools
import io
import json
import tempfile
from pathlib import Path

import numpy as np

import model.train as mt
from model import ModelInputError
from model.config import ModelConfig, TrainConfig
from model.data import DEFAULT_CORPUS, CharTokenizer, get_batch
from model.generate import generate
from model.optim import warmup_cosine_lr
from site_builder.run.examples import ExampleResult, config_label, figure, fmt_array, fmt_number, steps_table, table
from site_builder.render.plots import line_plot
from site_builder.run.trace import trace_locals
from content.hooks import SAMPLE_LENGTH, SAMPLE_PROMPT, SAMPLE_SEED, run_label, trained_run

# The tiny runs: the shipped corpus (its vocabulary fixes vocab_size), a model small enough
# that a step takes milliseconds, and a schedule short enough to show warm-up and cosine.
TINY_TRAIN = TrainConfig(steps=8, batch_size=4, warmup_steps=2, eval_every=4, eval_batches=2,
                         log_every=2, checkpoint_every=4)
WATCHED = ("b0.wq", 0, slice(0, 4))          # the weights the traced step follows: row 0 of b0.wq
# The temperature content/hooks.py draws its samples at. It is a literal inside _run_training;
# samples_table regenerates every sample with it and fails the build if one differs.
SAMPLE_TEMPERATURE = 0.8


def tiny_cfg(vocab_size):
    return ModelConfig(vocab_size=vocab_size, seq_len=8, emb_dim=8, num_heads=2, ff_dim=16, num_layers=1)


def tiny_data(tcfg=TINY_TRAIN):
    """prepare_data on the shipped corpus, at the tiny model config."""
    tokenizer = mt.prepare_data(DEFAULT_CORPUS, None, tcfg)[0]
    return mt.prepare_data(DEFAULT_CORPUS, tiny_cfg(tokenizer.vocab_size), tcfg)


def first_step_inputs(tcfg=TINY_TRAIN):
    """Exactly what train() holds before its step 1: params, optimizer, batch, lr."""
    tokenizer, cfg, train_ids, _, _ = tiny_data(tcfg)
    init_seed, train_seed, _ = mt.seed_streams(tcfg.seed)
    params = mt.init_params(cfg, np.random.default_rng(init_seed))
    opt = mt.make_optimizer(params, tcfg)
    x, y = get_batch(train_ids, tcfg.batch_size, cfg.seq_len, np.random.default_rng(train_seed))
    lr = warmup_cosine_lr(1, tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps)
    return tokenizer, cfg, params, opt, x, y, lr


def _locals_after(trace, snippet):
    """The frame's locals after the first statement whose code contains snippet."""
    return next(s.locals for s in trace.steps if snippet in s.code)


def _tiny_source(cfg, tcfg=TINY_TRAIN):
    return (f"model.train.train_step at {config_label(cfg)} and {config_label(tcfg)} on "
            f"data/shakespeare.txt: parameters from init_params and the batch from get_batch, each "
            f"with its stream of seed_streams({tcfg.seed}), as train() draws them for step 1")


def train_step_data():
    """The traced step 1 and the values the page shows (for the example and its test)."""
    tokenizer, cfg, params, opt, x, y, lr = first_step_inputs()
    name, row, cols = WATCHED
    before = params[name][row, cols].copy()
    t = trace_locals(mt.train_step, params, opt, x, y, cfg, TINY_TRAIN, lr)
    g_raw = _locals_after(t, "batch_loss_and_grads(")["grads"][name][row, cols]
    g_clipped = _locals_after(t, "clip_grad_norm(")["grads"][name][row, cols]
    return dict(trace=t, tokenizer=tokenizer, cfg=cfg, x=x, y=y, lr=lr, before=before, g_raw=g_raw,
                g_clipped=g_clipped, after=params[name][row, cols].copy(), params=params,
                loss=t.result[0], grad_norm=t.result[1])


def train_step_traced():
    d = train_step_data()
    tok, t = d["tokenizer"], d["trace"]
    name, row, _ = WATCHED
    batch = table(["Row of the batch", "x (input characters)", "y (the next character of each)"],
                  [[b, repr(tok.decode(d["x"][b])), repr(tok.decode(d["y"][b]))] for b in range(len(d["x"]))],
                  caption=f"The batch: {len(d['x'])} windows of {d['cfg'].seq_len} characters")
    steps = steps_table(t, [("Loss of the batch, in nats per character", "loss"),
                            ("Gradient norm before clipping", "grad_norm")])
    weights = table(["Quantity", f"{name}[{row}, :4]"], [
        ["Learning rate of step 1 (warmup_cosine_lr)", fmt_number(d["lr"])],
        ["Clip norm (TrainConfig.clip_norm)", fmt_number(TINY_TRAIN.clip_norm)],
        ["Weights before the step", fmt_array(d["before"])],
        ["Their gradient, before clipping", fmt_array(d["g_raw"])],
        ["Their gradient, after clipping", fmt_array(d["g_clipped"])],
        ["Gradient ratio after / before (one factor for every entry)", fmt_array(d["g_clipped"] / d["g_raw"])],
        ["clip_norm / grad norm", fmt_number(TINY_TRAIN.clip_norm / d["grad_norm"])],
        ["Weights after opt.step", fmt_array(d["after"])],
        ["Change", fmt_array(d["after"] - d["before"])],
    ], caption="One row of one weight matrix through the step")
    return ExampleResult([batch, steps, weights], _tiny_source(d["cfg"]),
                         data=dict(loss=d["loss"], grad_norm=d["grad_norm"], lr=d["lr"], before=d["before"],
                                   g_raw=d["g_raw"], g_clipped=d["g_clipped"], after=d["after"]))


def clipping_and_first_adam_step():
    """The same step 1 with clip_norm 1 (the default) and with a clip norm it never reaches."""
    results = {}
    for label, clip in (("clipped", TINY_TRAIN.clip_norm), ("not clipped", 1e12)):
        tcfg = TrainConfig(**{**TINY_TRAIN.to_dict(), "clip_norm": clip})
        _, cfg, params, opt, x, y, lr = first_step_inputs(tcfg)
        before = {k: v.copy() for k, v in params.items()}
        _, grad_norm = mt.train_step(params, opt, x, y, cfg, tcfg, lr)
        results[label] = (params, before, grad_norm)
    clipped, unclipped = results["clipped"][0], results["not clipped"][0]
    before = results["clipped"][1]
    largest_update = max(float(np.abs(clipped[k] - before[k]).max()) for k in before)
    gap = max(float(np.abs(clipped[k] - unclipped[k]).max()) for k in before)
    rows = [["Gradient norm before clipping", fmt_number(results["clipped"][2])],
            ["Clip norms compared", f"{TINY_TRAIN.clip_norm:g} and 1e12 (never reached)"],
            ["Largest change of any parameter in step 1", f"{largest_update:.3e}"],
            ["Largest difference between the parameters after the two steps", f"{gap:.3e}"]]
    return ExampleResult([table(["Quantity", "Value"], rows)], _tiny_source(cfg),
                         data=dict(largest_update=largest_update, gap=gap))


# ----------------------------------------------------------------------------- the real run

def run_info_table(run):
    rows = [["Model config (model_cfg)", config_label(run.model_cfg)],
            ["Training config (train_cfg)", config_label(run.train_cfg)],
            ["Corpus", f"{Path(DEFAULT_CORPUS).relative_to(Path(DEFAULT_CORPUS).parents[1]).as_posix()}, "
                       f"{len(run.chars)} distinct characters"],
            ["Cache key (model/*.py, the corpus, the configs, NumPy)", run.commit_key],
            ["Rows of metrics.jsonl", str(len(run.metrics))]]
    return table(["The run", "Value"], rows,
                 caption="Training is deterministic given these inputs, so the commit named at the foot of "
                         "this page (its model sources, corpus and configs) reproduces this run exactly.")


def _run_source(run):
    return (f"{run_label(run)}, from {trained_run.__module__}.{trained_run.__qualname__}(), on data/shakespeare.txt with "
            f"{config_label(run.model_cfg)} and {config_label(run.train_cfg)}")


def curve_series(metrics):
    """The two series of the loss curve, exactly as loss_curve draws them."""
    train = ([r["step"] for r in metrics], [r["train_loss"] for r in metrics])
    val = ([r["step"] for r in metrics if "val_loss" in r], [r["val_loss"] for r in metrics if "val_loss" in r])
    return train, val


CURVE_TITLE = "Training and validation loss of the site's training run"
TRAIN_LABEL, VAL_LABEL = "training loss", "validation loss"


def loss_curve():
    run = trained_run()
    train, val = curve_series(run.metrics)
    svg = line_plot([(TRAIN_LABEL, *train), (VAL_LABEL, *val)],
                    CURVE_TITLE, "step", "loss (nats per character)")
    last = run.metrics[-1]
    summary = table(["At step", "Training loss", "Validation loss", "ln(vocab_size): a uniform guess"],
                    [[last["step"], fmt_number(last["train_loss"]), fmt_number(last["val_loss"]),
                      fmt_number(np.log(run.model_cfg.vocab_size))]])
    return ExampleResult([run_info_table(run), figure(svg, "Each point is one row of metrics.jsonl."), summary],
                         _run_source(run), data=dict(train=train, val=val, svg=svg, steps=run.train_cfg.steps))


def schedule_curve():
    run = trained_run()
    steps = [r["step"] for r in run.metrics]
    lrs = [r["lr"] for r in run.metrics]
    tc = run.train_cfg
    formula = [warmup_cosine_lr(s, tc.lr, tc.min_lr, tc.warmup_steps, tc.steps) for s in steps]
    gap = max(abs(a - b) for a, b in zip(lrs, formula))
    svg = line_plot([("learning rate (metrics.jsonl)", steps, lrs)], "Learning rate of the site's training run",
                    "step", "learning rate")
    rows = [["warmup_steps", tc.warmup_steps], ["Peak (lr)", fmt_number(tc.lr)], ["Floor (min_lr)", fmt_number(tc.min_lr)],
            ["Largest gap between the logged lr and warmup_cosine_lr(step, ...)", f"{gap:.1e}"]]
    return ExampleResult([figure(svg), table(["Schedule", "Value"], rows)], _run_source(run),
                         data=dict(steps=steps, lrs=lrs, gap=gap))


def grad_norm_curve():
    run = trained_run()
    steps = [r["step"] for r in run.metrics]
    norms = [r["grad_norm"] for r in run.metrics]
    clip = run.train_cfg.clip_norm
    svg = line_plot([("gradient norm before clipping", steps, norms), ("clip_norm", [steps[0], steps[-1]], [clip, clip])],
                    "Gradient norm of the logged steps", "step", "global L2 norm (log scale)", logy=True)
    above = [s for s, n in zip(steps, norms) if n > clip]
    rows = [["Logged steps", len(steps)],
            ["Logged steps whose norm exceeded clip_norm (so clipping acted)", len(above)],
            ["Those steps", ", ".join(str(s) for s in above) or "none"]]
    return ExampleResult([figure(svg), table(["In metrics.jsonl", "Value"], rows)], _run_source(run),
                         data=dict(steps=steps, norms=norms, above=above))


def _show(text):
    return text.replace("\n", "↵")


@functools.lru_cache(maxsize=2)
def run_data(model_cfg, train_cfg):
    """prepare_data as train() calls it for the run: (tokenizer, cfg, train ids, val ids, sha256)."""
    return mt.prepare_data(DEFAULT_CORPUS, model_cfg, train_cfg)


def snapshot_val_loss(run, step):
    """evaluate() on the snapshot of that step, as train() scores it (its eval RNG, the val split)."""
    _, cfg, _, val_ids, _ = run_data(run.model_cfg, run.train_cfg)
    return mt.evaluate(run.snapshots[step], val_ids, cfg, run.train_cfg, mt.eval_rng(run.train_cfg.seed))


def check_samples(run):
    """Generate every sample again from its snapshot: the page states how they were drawn."""
    tok = CharTokenizer.from_dict({"chars": run.chars})
    for step in sorted(run.samples):
        again = tok.decode(generate(run.snapshots[step], run.model_cfg, tok.encode(SAMPLE_PROMPT), SAMPLE_LENGTH,
                                    SAMPLE_TEMPERATURE, None, np.random.default_rng(SAMPLE_SEED)))
        if again != run.samples[step]:
            raise AssertionError(f"the sample of step {step} is not generate(..., temperature "
                                 f"{SAMPLE_TEMPERATURE}, seed {SAMPLE_SEED}): update SAMPLE_TEMPERATURE")


def samples_rows():
    run = trained_run()
    by_step = {r["step"]: r for r in run.metrics}
    rows = []
    for step in sorted(run.samples):
        logged = by_step.get(step, {})
        if "val_loss" in logged:
            val, where = logged["val_loss"], "metrics.jsonl"
        else:
            val, where = snapshot_val_loss(run, step), "evaluate() on this snapshot (not logged at this step)"
        rows.append(dict(step=step, train_loss=logged.get("train_loss"), val_loss=val, where=where,
                         sample=run.samples[step]))
    return run, rows


def samples_table():
    run, rows = samples_rows()
    check_samples(run)
    losses = table(["Step", "Training loss", "Validation loss", "Validation loss from"],
                   [[r["step"], fmt_number(r["train_loss"]) if r["train_loss"] is not None else "not logged",
                     fmt_number(r["val_loss"]), r["where"]] for r in rows])
    samples = table(["Step", "Sample (↵ is a newline)"], [[r["step"], _show(r["sample"])] for r in rows])
    how = table(["How each sample was drawn", "Value"],
                [["Call", f"generate(snapshot, model_cfg, encode({SAMPLE_PROMPT!r}), {SAMPLE_LENGTH}, "
                          f"{SAMPLE_TEMPERATURE}, None, np.random.default_rng({SAMPLE_SEED}))"],
                 ["Checked", "each sample was generated again from its snapshot and is identical"]])
    return ExampleResult([losses, samples, how], _run_source(run), data=dict(rows=rows))


# ----------------------------------------------------------------------------- evaluation

def evaluation_fixed_batches():
    _, cfg, train_ids, val_ids, _ = tiny_data()
    init_seed, _, _ = mt.seed_streams(TINY_TRAIN.seed)
    params = mt.init_params(cfg, np.random.default_rng(init_seed))
    first = mt.evaluate(params, val_ids, cfg, TINY_TRAIN, mt.eval_rng(TINY_TRAIN.seed))
    again = mt.evaluate(params, val_ids, cfg, TINY_TRAIN, mt.eval_rng(TINY_TRAIN.seed))
    other = mt.evaluate(params, val_ids, cfg, TINY_TRAIN, np.random.default_rng(1))
    # The window starts eval_rng draws: the same every time it is made.
    starts = [int(x) for x in mt.eval_rng(TINY_TRAIN.seed).integers(0, len(val_ids) - cfg.seq_len, size=TINY_TRAIN.batch_size)]
    rows = [[f"evaluate(..., eval_rng({TINY_TRAIN.seed}))", fmt_number(first)],
            [f"evaluate(..., eval_rng({TINY_TRAIN.seed})) again", fmt_number(again)],
            ["evaluate(..., np.random.default_rng(1)): other batches", fmt_number(other)],
            [f"First window starts of eval_rng({TINY_TRAIN.seed}) in the validation ids", ", ".join(map(str, starts))],
            ["Same value both times", str(first == again)]]
    return ExampleResult([table(["Call", "Validation loss"], rows)],
                         f"model.train.evaluate with the untrained parameters of {config_label(cfg)}, "
                         f"{config_label(TINY_TRAIN)}, on the validation split of data/shakespeare.txt",
                         data=dict(first=first, again=again, other=other))


# ----------------------------------------------------------------------------- resume

def _metrics(path):
    return [{k: v for k, v in json.loads(line).items() if k != "tokens_per_s"}
            for line in Path(path).read_text(encoding="utf-8").splitlines()]


@functools.lru_cache(maxsize=1)
def resume_runs():
    """One run of TINY_TRAIN.steps steps, and one stopped at the middle and resumed."""
    tokenizer = mt.prepare_data(DEFAULT_CORPUS, None, TINY_TRAIN)[0]
    cfg, half = tiny_cfg(tokenizer.vocab_size), TINY_TRAIN.steps // 2
    with tempfile.TemporaryDirectory() as tmp:
        whole, split = Path(tmp) / "whole", Path(tmp) / "split"
        mt.train(whole, cfg, TINY_TRAIN, progress=False)
        mt.train(split, cfg, TINY_TRAIN, progress=False, stop_at=half)
        mid = mt.load_checkpoint(split / mt.CHECKPOINT)
        mid_metrics = _metrics(split / mt.METRICS)
        mt.train(split, cfg, TINY_TRAIN, progress=False, resume=True)
        a, b = mt.load_checkpoint(whole / mt.CHECKPOINT), mt.load_checkpoint(split / mt.CHECKPOINT)
        ma, mb = _metrics(whole / mt.METRICS), _metrics(split / mt.METRICS)
        with np.load(whole / mt.CHECKPOINT, allow_pickle=False) as z:
            entries = {k: z[k].shape for k in z.files}
    return dict(cfg=cfg, half=half, mid=mid, mid_metrics=mid_metrics, a=a, b=b, ma=ma, mb=mb, entries=entries)


def _largest_gap(x, y):
    return max(float(np.abs(x[k] - y[k]).max()) for k in x)


def resume_exact():
    r = resume_runs()
    a, b = r["a"], r["b"]
    rows = [["Parameters", f"{_largest_gap(a['params'], b['params']):.1e}"],
            ["AdamW first moments m", f"{_largest_gap(a['opt_state']['m'], b['opt_state']['m']):.1e}"],
            ["AdamW second moments v", f"{_largest_gap(a['opt_state']['v'], b['opt_state']['v']):.1e}"],
            ["AdamW step count t", f"{a['opt_state']['t']} and {b['opt_state']['t']}"],
            ["Batch RNG state", "equal" if a["rng_state"] == b["rng_state"] else "different"],
            ["metrics.jsonl rows, without tokens_per_s",
             "equal" if r["ma"] == r["mb"] else "different"]]
    mid = table(["At the stop", "Value"],
                [["Checkpoint step", r["mid"]["step"]], ["AdamW t in the checkpoint", r["mid"]["opt_state"]["t"]],
                 ["Last step in metrics.jsonl", r["mid_metrics"][-1]["step"]]])
    return ExampleResult([mid, table([f"{TINY_TRAIN.steps} steps at once vs {r['half']} + resume + "
                                      f"{TINY_TRAIN.steps - r['half']}", "Largest difference, or comparison"], rows)],
                         f"model.train.train at {config_label(r['cfg'])} and {config_label(TINY_TRAIN)} on "
                         f"data/shakespeare.txt, in two temporary folders",
                         data=dict(params_gap=_largest_gap(a["params"], b["params"]), metrics_equal=r["ma"] == r["mb"]))


def checkpoint_contents():
    r = resume_runs()
    groups = {}
    for key, shape in r["entries"].items():
        group = key.split("/", 1)[0] if "/" in key else key
        n, scalars = groups.get(group, (0, 0))
        groups[group] = (n + 1, scalars + int(np.prod(shape)))
    rows = [[g, n, f"{s:,}" if g != "meta" else "one JSON string"] for g, (n, s) in groups.items()]
    meta = sorted(set(r["a"]) - {"params", "opt_state"}) + ["opt_state: t (m and v are the adam_ arrays)"]
    return ExampleResult([table(["Entry group in checkpoint.npz", "Arrays", "Scalars"], rows),
                          table(["What load_checkpoint returns besides params"], [[m] for m in meta])],
                         f"the checkpoint model.train.train wrote at step {r['a']['step']} of the run in one go "
                         f"above ({config_label(r['cfg'])})",
                         data=dict(groups=groups))


def refusals():
    """check_compatible and truncate_metrics on the checkpoint of the tiny run."""
    r = resume_runs()
    ckpt, cfg = r["a"], r["cfg"]
    tokenizer = ckpt["tokenizer"]
    sha = ckpt["corpus_sha256"]
    cases = [("lr doubled", cfg, TrainConfig(**{**TINY_TRAIN.to_dict(), "lr": 2 * TINY_TRAIN.lr}), tokenizer, sha),
             ("emb_dim doubled", ModelConfig(**{**cfg.to_dict(), "emb_dim": 2 * cfg.emb_dim}), TINY_TRAIN, tokenizer, sha),
             ("fewer steps than the checkpoint", cfg, TrainConfig(**{**TINY_TRAIN.to_dict(), "steps": TINY_TRAIN.steps // 2}),
              tokenizer, sha),
             ("a corpus with one character more", cfg, TINY_TRAIN, CharTokenizer(tokenizer.chars + "\u00e9"), sha),
             ("eval_every changed (not a trajectory field)", cfg, TrainConfig(**{**TINY_TRAIN.to_dict(), "eval_every": 1}),
              tokenizer, sha)]
    rows = []
    for label, mcfg, tcfg, tok, corpus_sha in cases:
        try:
            mt.check_compatible(ckpt, mcfg, tcfg, tok, corpus_sha, "OUT/checkpoint.npz")
            rows.append([label, "accepted"])
        except ModelInputError as e:
            rows.append([label, str(e)])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / mt.METRICS
        lines = [json.dumps(dict(step=s, train_loss=1.0)) for s in (1, 2, 4, 6)]
        path.write_text("\n".join(lines) + '\n{"step": 8, "train_lo', encoding="utf-8")
        before = path.read_text(encoding="utf-8").splitlines()
        kept = mt.truncate_metrics(path, 4)
        after = path.read_text(encoding="utf-8").splitlines()
    cut = table(["metrics.jsonl before truncate_metrics(path, 4)", "After"],
                [[b, after[i] if i < len(after) else "(cut)"] for i, b in enumerate(before)])
    return ExampleResult([table(["Resume with", "check_compatible says"], rows), cut],
                         f"model.train.check_compatible on the checkpoint of the run above, and "
                         f"model.train.truncate_metrics on a hand-written metrics file",
                         data=dict(rows=rows, kept=kept))


def _config_main_passes(argv):
    """The TrainConfig main builds from argv: main runs with train replaced by a recorder."""
    seen, real = {}, mt.train

    def record(out_dir, train_cfg=None, **kwargs):
        seen["tcfg"] = train_cfg
        return dict(step=0, train_loss=float("nan"), val_loss=float("nan"))

    mt.train = record
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            mt.main(argv)
    finally:
        mt.train = real
    return seen["tcfg"]


def command_line():
    """python3 -m model.train twice, in process: 4 steps, then --resume to 8 (the schedule changes)."""
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = str(Path(tmp) / "run")
        shown = []
        for argv in (["--steps", "4", "--batch-size", "4", "--out", out_dir],
                     ["--steps", "8", "--batch-size", "4", "--out", out_dir, "--resume"]):
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                mt.main(argv)
            notes = [line for line in stderr.getvalue().splitlines() if line.startswith("note:")]
            shown.append(["python3 -m model.train " + " ".join(argv).replace(out_dir, "OUT"),
                          stdout.getvalue().strip().replace(out_dir, "OUT"),
                          " ".join(notes).replace(out_dir, "OUT") or "none"])
        bad = ["--steps", "0", "--out", out_dir]
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                mt.main(bad)
            bad_status = 0
        except SystemExit as e:
            bad_status = e.code
        shown.append(["python3 -m model.train " + " ".join(bad).replace(out_dir, "OUT"),
                      f"(nothing; exit status {bad_status})", err.getvalue().strip().replace(out_dir, "OUT")])
        ratio_rows = [[lr, _config_main_passes(["--out", out_dir] + (["--lr", lr] if lr else []))] for lr in (None, "0.02")]
    d = TrainConfig()
    ratio = table(["--lr", "TrainConfig main builds: lr, min_lr"],
                  [[lr or f"not given (default {d.lr:g})", f"{t.lr:g}, {t.min_lr:g}"] for lr, t in ratio_rows])
    return ExampleResult([table(["Command", "Printed", "Note on stderr"], shown), ratio],
                         "model.train.main in this process, in a temporary folder (shown as OUT), default ModelConfig",
                         data=dict(bad_status=bad_status))
