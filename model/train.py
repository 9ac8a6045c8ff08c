"""The training loop, its checkpoints and its metrics.

    python3 -m model.train --steps 300 --out runs/x [--seed S] [--corpus PATH] [--resume | --overwrite]

Trade-offs:
  * Training never loses a checkpoint. A folder that already holds a run is continued (--resume),
    refused, or with --overwrite replaced, and only when the new run writes its first checkpoint:
    until then the new metrics go to metrics.jsonl.pending and the old files stay whole.
  * Resuming is bit-exact: the checkpoint holds everything the next step reads (parameters,
    AdamW's t, m and v, the batch RNG's state, the step), evaluation draws from its own RNG, and
    the learning rate is a function of the step. So N steps + resume + N steps gives the same
    bytes as 2N steps; only the wall-clock field tokens_per_s differs.
  * Checkpoints are replaced atomically (temp file, fsync, os.replace): a crash mid-write leaves
    the previous checkpoint, never half of a new one. metrics.jsonl is fsynced before each
    checkpoint, so it always reaches at least the checkpoint's step; resume cuts what lies beyond.
  * Loading a checkpoint checks its arrays against its own metadata (layer count, every shape and
    dtype against what init_params makes of the config, vocabulary sizes, finite values), so a
    file that disagrees with itself is one line per disagreement, not a KeyError or garbage text.
  * A diverged run stops before the optimizer sees the bad step: one would fill AdamW's moments
    with NaN for good, and a checkpoint written after it would be worthless. Diverged means a
    training or validation loss that is NaN, inf or above 10 x log(vocab_size) (model/runs.py says
    why), or a gradient norm that is not finite. The run exits 1 with one line; the last good
    checkpoint stays, and metrics.jsonl never holds a NaN (every line is strict JSON).
  * SIGTERM is handled as Ctrl-C is (one line, the last checkpoint intact), with exit status 143.
  * Checkpoints are .npz with the configs and RNG state as a JSON string: no pickle, so loading
    one never runs code.
  * BLAS runs on one thread unless OPENBLAS_NUM_THREADS says otherwise: at these sizes (32 x 128
    matrices) threads cost more in hand-offs than they save, and on a busy machine they spin;
    300 steps took 73 s with the default threads and 3.4 s with one, under load. It only takes
    effect if NumPy is not imported yet, as under `python3 -m model.train`.
"""
import argparse
import contextlib
import hashlib
import json
import math
import os
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402  (after the thread setting, which NumPy reads on import)
from tqdm import tqdm

from model import ModelInputError
from model.config import ModelConfig, TrainConfig
from model.data import DEFAULT_CORPUS, CharTokenizer, get_batch, load_corpus, train_val_split
from model.ops import cross_entropy_forward
from model.optim import AdamW, clip_grad_norm, warmup_cosine_lr
from model.runs import (Terminated, TrainingDiverged, atomic_write, read_npz, save_state, state_groups, claim_run_dir, diverged_message, divergence,
                        pending, promote_pending, signals_deferred, sigterm_raises,
                        stopped_line)
from model.transformer import forward, init_params, loss_and_grads

CHECKPOINT = "checkpoint.npz"
METRICS = "metrics.jsonl"
FORMAT_VERSION = 1
SEQ2SEQ_FILES = ("params.npz", "config.json")   # what a model.train_seq2seq run has and this one does not

# TrainConfig fields that change what the parameters become. Resuming with any of them changed
# would splice two different runs; the rest (cadence of logs, evals and checkpoints) only
# changes what is written down, and `steps` may grow to extend a run.
TRAJECTORY_FIELDS = ("batch_size", "lr", "min_lr", "warmup_steps", "weight_decay", "beta1", "beta2",
                     "adam_eps", "clip_norm", "val_fraction", "seed")


# ----------------------------------------------------------------------------- one step

def batch_loss_and_grads(params, x, y, cfg: ModelConfig):
    """loss_and_grads, refusing a diverged loss (runs.divergence) before its gradients can reach the optimizer."""
    loss, grads = loss_and_grads(params, x, y, cfg)
    if why := divergence(loss, cfg.vocab_size):
        raise TrainingDiverged(why)
    return loss, grads


def train_step(params, opt: AdamW, x, y, cfg: ModelConfig, tcfg: TrainConfig, lr):
    """One AdamW update on the batch (x, y), in place. Returns (loss, grad norm before clipping)."""
    loss, grads = batch_loss_and_grads(params, x, y, cfg)
    grad_norm = clip_grad_norm(grads, tcfg.clip_norm)
    if not math.isfinite(grad_norm):                 # a finite loss can still have an inf gradient
        raise TrainingDiverged(f"gradient norm is {grad_norm} (loss {loss:.4f})")
    opt.step(params, grads, lr)
    return loss, grad_norm


def evaluate(params, ids, cfg: ModelConfig, tcfg: TrainConfig, rng):
    """Mean loss in nats per character over tcfg.eval_batches batches drawn from ids with rng.
    Pass a fresh RNG made from a fixed seed (eval_rng) to score every step on the same batches."""
    losses = []
    for _ in range(tcfg.eval_batches):
        x, y = get_batch(ids, tcfg.batch_size, cfg.seq_len, rng)
        logits, _ = forward(params, x, cfg)          # no backward: the loss alone is enough
        losses.append(cross_entropy_forward(logits, y)[0])
    return float(np.mean(losses))


def seed_streams(seed):
    """Independent seeds for init, training batches and evaluation batches, all from one integer."""
    return np.random.SeedSequence(seed).spawn(3)


def eval_rng(seed):
    return np.random.default_rng(seed_streams(seed)[2])


# ----------------------------------------------------------------------------- checkpoints

def save_checkpoint(path, *, params, opt: AdamW, rng, step, model_cfg: ModelConfig,
                    train_cfg: TrainConfig, tokenizer: CharTokenizer, corpus_sha256=None):
    """Everything needed to continue the run bit-exactly, or to sample from it, in one .npz."""
    meta = dict(format_version=FORMAT_VERSION, step=int(step), opt_t=int(opt.t),
                model_config=model_cfg.to_dict(), train_config=train_cfg.to_dict(),
                rng_state=rng.bit_generator.state, tokenizer=tokenizer.to_dict(),
                corpus_sha256=corpus_sha256)
    save_state(path, meta, params, opt)


def load_checkpoint(path) -> dict:
    """The checkpoint as a dict: params, opt_state (t, m, v), rng_state, step, model_cfg,
    train_cfg, tokenizer, corpus_sha256. Raises ModelInputError if path is not one, or if its
    arrays disagree with its own metadata (one line per disagreement)."""
    path = Path(path)
    if path.is_dir():                  # a run's folder: its checkpoint is the file model.train wrote there
        path = path / CHECKPOINT
    if not path.is_file():
        run_dir = path.parent if path.name == CHECKPOINT else path.with_suffix("")
        if any((run_dir / name).exists() for name in SEQ2SEQ_FILES):
            raise ModelInputError(_seq2seq_message(run_dir))
        raise ModelInputError(f"no checkpoint at {path}; train one with "
                              f"`python3 -m model.train --out {run_dir}`, which writes {run_dir / CHECKPOINT}")
    arrays = read_npz(path, "pass the checkpoint.npz that `python3 -m model.train` wrote")
    if _is_seq2seq(arrays):
        raise ModelInputError(_seq2seq_message(path))
    try:
        meta = json.loads(str(arrays.pop("meta")))
        if meta["format_version"] != FORMAT_VERSION:
            raise ValueError(f"format_version is {meta['format_version']!r}, this code reads {FORMAT_VERSION}")
        groups = state_groups(arrays)
        ckpt = dict(params=groups["param"],
                    opt_state={"t": meta["opt_t"], "m": groups["adam_m"], "v": groups["adam_v"]},
                    rng_state=meta["rng_state"], step=meta["step"],
                    model_cfg=ModelConfig(**meta["model_config"]),
                    train_cfg=TrainConfig(**meta["train_config"]),
                    tokenizer=CharTokenizer.from_dict(meta["tokenizer"]),
                    corpus_sha256=meta.get("corpus_sha256"))
    except ModelInputError as e:                     # a config or tokenizer the dataclasses refuse
        raise ModelInputError(f"{path}: its metadata is invalid: {e} (the checkpoint is damaged; "
                              f"retrain or restore it)") from None
    except Exception as e:                           # JSON, key or field errors alike
        raise ModelInputError(f"{path} is not a checkpoint written by this version of model.train "
                              f"({type(e).__name__}: {e})") from None
    problems = _inconsistencies(ckpt)
    if problems:
        shown = problems[:_MAX_SHOWN]
        if len(problems) > _MAX_SHOWN:
            shown.append(f"and {len(problems) - _MAX_SHOWN} more disagreements")
        raise ModelInputError("\n".join(f"{path}: {p} (the checkpoint is inconsistent; retrain or restore it)"
                                        for p in shown))
    return ckpt


def _is_seq2seq(arrays) -> bool:
    """Whether arrays are what model.train_seq2seq writes (its params.npz of old had no metadata)."""
    if "meta" not in arrays:
        return any(name.startswith(("enc", "dec")) for name in arrays)
    with contextlib.suppress(ValueError, AttributeError):
        return json.loads(str(arrays["meta"])).get("kind") == "seq2seq"
    return False


def _seq2seq_message(path) -> str:
    return (f"{path} holds a model.train_seq2seq run (the encoder-decoder of the reversal task), which "
            f"model.generate cannot sample from and model.train cannot resume: they read the language "
            f"model's checkpoint.npz of a `python3 -m model.train --out DIR` run; the encoder-decoder is "
            f"decoded by model.seq2seq.greedy_decode, and resumed by `python3 -m model.train_seq2seq --resume`")


_MAX_SHOWN = 12                                      # lines of disagreement; a count stands for the rest

# What each size of ModelConfig is read from: (array, axis, field).
_SIZE_READINGS = (("tok_emb", 0, "vocab_size"), ("tok_emb", 1, "emb_dim"), ("pos_emb", 0, "seq_len"),
                  ("pos_emb", 1, "emb_dim"), ("b0.ff1_w", 1, "ff_dim"), ("head_w", 1, "vocab_size"))


def _listing(names) -> str:
    names = list(names)
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _inconsistencies(ckpt) -> list:
    """What in a checkpoint disagrees with its own metadata, one sentence each; [] if nothing does."""
    cfg, params, problems = ckpt["model_cfg"], ckpt["params"], []
    moments = {"adam_m": ckpt["opt_state"]["m"], "adam_v": ckpt["opt_state"]["v"]}

    # Sizes first, each read off one array: a wrong emb_dim is one line, not one per array it shapes.
    blocks = {int(m.group(1)) for name in params if (m := re.match(r"b(\d+)\.", name))}
    extra = sorted(l for l in blocks if l >= cfg.num_layers)
    absent = [l for l in range(cfg.num_layers) if l not in blocks]
    if extra:
        problems.append(f"{_listing(f'b{l}.*' for l in extra)} {'is' if len(extra) == 1 else 'are'} in "
                        f"the file but the metadata says num_layers={cfg.num_layers}")
    if absent:
        problems.append(f"the metadata says num_layers={cfg.num_layers} but the file has no "
                        f"{_listing(f'b{l}.*' for l in absent)} parameters")
    read = set()                                     # fields already read off an array
    for name, axis, field in _SIZE_READINGS:
        a, want = params.get(name), getattr(cfg, field)
        if a is not None and a.ndim == 2 and field not in read:
            read.add(field)
            if a.shape[axis] != want:
                problems.append(f"{name} has shape {a.shape}, so {field}={a.shape[axis]}, but the metadata "
                                f"says {field}={want}")
    if ckpt["tokenizer"].vocab_size != cfg.vocab_size:
        problems.append(f"the tokenizer has {ckpt['tokenizer'].vocab_size} characters but the metadata "
                        f"says vocab_size={cfg.vocab_size}")

    # Then every name and shape against what init_params makes of the config. Only once the sizes
    # agree: then it allocates no more than the file holds, and adds nothing the lines above said.
    if not problems:
        expected = init_params(cfg, np.random.default_rng(0))
        for name, want in expected.items():
            if name not in params:
                problems.append(f"{name} is missing from the file but the metadata's config has it")
            elif params[name].shape != want.shape:
                problems.append(f"{name} has shape {params[name].shape} but the metadata's config makes "
                                f"it {want.shape}")
        problems += [f"{name} is in the file but the metadata's config has no such parameter"
                     for name in sorted(params.keys() - expected.keys())]

    # AdamW's moments mirror the parameters, name for name and shape for shape.
    for group, arrays in moments.items():
        lost, stray = sorted(params.keys() - arrays.keys()), sorted(arrays.keys() - params.keys())
        if lost:
            problems.append(f"{group} has no entry for {_listing(lost)}, which the parameters have")
        if stray:
            problems.append(f"{group} has {_listing(stray)}, which the parameters do not")
        problems += [f"{group}/{name} has shape {arrays[name].shape} but {name} has {params[name].shape}"
                     for name in sorted(params.keys() & arrays.keys()) if arrays[name].shape != params[name].shape]

    # dtypes, one line per dtype found; then values, which must all be finite.
    every = {**params, **{f"{g}/{n}": a for g, arrays in moments.items() for n, a in arrays.items()}}
    wrong_dtype = {}
    for name, a in every.items():
        if a.dtype != np.dtype(cfg.dtype):
            wrong_dtype.setdefault(str(a.dtype), []).append(name)
    problems += [f"{_listing(names)} {'is' if len(names) == 1 else 'are'} {dtype} but the metadata says "
                 f"dtype={cfg.dtype}" for dtype, names in wrong_dtype.items()]
    for name, a in every.items():
        bad = a.size - np.count_nonzero(np.isfinite(a)) if a.dtype.kind == "f" else 0
        if bad:
            problems.append(f"{name} holds {bad} NaN or infinite value(s) of {a.size}")

    for key, value in (("step", ckpt["step"]), ("opt_t", ckpt["opt_state"]["t"])):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            problems.append(f"the metadata's {key} is {value!r}, not a step count (an integer >= 0)")
    try:
        np.random.default_rng().bit_generator.state = ckpt["rng_state"]
    except Exception as e:                           # any malformed dict: NumPy's errors vary
        problems.append(f"the metadata's rng_state is not a state of NumPy's PCG64 ({type(e).__name__}: {e})")
    return problems


def check_compatible(ckpt, model_cfg, train_cfg, tokenizer, corpus_sha256, path):
    """Refuse to resume a checkpoint into a run it did not come from, naming both values."""
    if ckpt["tokenizer"].chars != tokenizer.chars:
        old, new = set(ckpt["tokenizer"].chars), set(tokenizer.chars)
        raise ModelInputError(
            f"{path} was trained on a vocabulary of {len(old)} characters, but this corpus has "
            f"{len(new)} (missing from the corpus: {''.join(sorted(old - new))!r}; new in the corpus: "
            f"{''.join(sorted(new - old))!r}); resume with the checkpoint's corpus or start a new --out")
    for name, want in model_cfg.to_dict().items():
        have = ckpt["model_cfg"].to_dict()[name]
        if have != want:
            raise ModelInputError(f"{path} has ModelConfig.{name} = {have!r} but this run asks for "
                                  f"{want!r}; resume with the checkpoint's config or start a new --out")
    for name in TRAJECTORY_FIELDS:
        have, want = getattr(ckpt["train_cfg"], name), getattr(train_cfg, name)
        if have != want:
            raise ModelInputError(f"{path} has TrainConfig.{name} = {have!r} but this run asks for "
                                  f"{want!r}; resume with the same value or start a new --out")
    if train_cfg.steps < ckpt["step"]:
        raise ModelInputError(f"{path} is already at step {ckpt['step']}, past the requested "
                              f"--steps {train_cfg.steps}; ask for at least {ckpt['step']} steps")
    if ckpt["corpus_sha256"] not in (None, corpus_sha256):
        raise ModelInputError(f"{path} was trained on a corpus with sha256 {ckpt['corpus_sha256'][:12]}..., "
                              f"but this corpus has {corpus_sha256[:12]}...; resume with the same --corpus")


# ----------------------------------------------------------------------------- metrics

def truncate_metrics(path: Path, last_step) -> list:
    """Keep the metrics lines up to last_step, so a resumed run continues without duplicates.
    A torn last line (the process died mid-write) is dropped with the rest. Returns the kept records."""
    if not path.exists():
        return []
    kept, records = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            break
        if record.get("step", math.inf) > last_step:
            break
        kept.append(line + "\n")
        records.append(record)
    atomic_write(path, lambda f: f.write("".join(kept).encode("utf-8")))
    return records


# ----------------------------------------------------------------------------- the loop

def prepare_data(corpus, model_cfg: ModelConfig | None, tcfg: TrainConfig):
    """Read and encode the corpus and split it. Returns (tokenizer, model config, train ids,
    val ids, corpus sha256); model_cfg None means the default config at the corpus's vocabulary."""
    text = load_corpus(corpus)
    tokenizer = CharTokenizer(text)
    cfg = model_cfg or ModelConfig(vocab_size=tokenizer.vocab_size)
    if cfg.vocab_size != tokenizer.vocab_size:
        raise ModelInputError(f"ModelConfig.vocab_size is {cfg.vocab_size} but corpus {corpus} has "
                              f"{tokenizer.vocab_size} distinct characters; set vocab_size={tokenizer.vocab_size}")
    train_ids, val_ids = train_val_split(tokenizer.encode(text), tcfg.val_fraction)
    for name, ids in (("training", train_ids), ("validation", val_ids)):
        if len(ids) <= cfg.seq_len:
            raise ModelInputError(f"the {name} split of {corpus} has {len(ids)} characters, but a "
                                  f"window needs seq_len + 1 = {cfg.seq_len + 1}; use a longer corpus")
    return tokenizer, cfg, train_ids, val_ids, hashlib.sha256(text.encode("utf-8")).hexdigest()


def _step_bytes(cfg: ModelConfig, batch_size) -> int:
    """About the peak memory of one training step: per position, what forward keeps for backward
    (per block: a dozen d-wide tensors, two F-wide, two rows of attention weights per head) plus
    three V-wide ones for the logits and their gradient. 15.3 kB per position at the default
    config, where the measured peak is 14.8 kB."""
    per_position = (cfg.num_layers * (12 * cfg.emb_dim + 2 * cfg.ff_dim + 2 * cfg.num_heads * cfg.seq_len)
                    + 3 * cfg.vocab_size + 4 * cfg.emb_dim)
    return batch_size * cfg.seq_len * per_position * np.dtype(cfg.dtype).itemsize


def _free_memory():
    """Bytes of memory free for this process (MemAvailable, or what is left under a cgroup
    limit if less; where there is no /proc, all of physical memory), or None where the system
    does not say."""
    free, cgroup = [], Path("/sys/fs/cgroup")
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/meminfo") as f:
            free += [int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")]
    if not free:
        with contextlib.suppress(AttributeError, OSError, ValueError):   # macOS: no /proc
            free.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    with contextlib.suppress(OSError, ValueError):                    # memory.max "max" means no limit
        free.append(int((cgroup / "memory.max").read_text()) - int((cgroup / "memory.current").read_text()))
    return min(free, default=None)


def _check_memory(cfg: ModelConfig, tcfg: TrainConfig):
    """Refuse a batch that cannot fit before NumPy tries: a failed 12 GiB allocation is a
    traceback, and one that succeeds on paper gets the process killed when it touches the pages."""
    need, free = _step_bytes(cfg, tcfg.batch_size), _free_memory()
    if free is not None and need > free:
        fits = max(1, tcfg.batch_size * free // (2 * need))     # half the free memory, to leave room
        raise ModelInputError(f"--batch-size {tcfg.batch_size} needs about {need / 2**30:.1f} GiB per training "
                              f"step, but only {free / 2**30:.1f} GiB of memory is free; use --batch-size "
                              f"{fits} or less")


def make_optimizer(params, tcfg: TrainConfig) -> AdamW:
    return AdamW(params, lr=tcfg.lr, betas=(tcfg.beta1, tcfg.beta2), eps=tcfg.adam_eps,
                 weight_decay=tcfg.weight_decay)


def train(out_dir, model_cfg: ModelConfig | None = None, train_cfg: TrainConfig | None = None,
          corpus=DEFAULT_CORPUS, resume=False, progress=True, stop_at=None, overwrite=False) -> dict:
    """Train (or, with resume, continue) a language model on corpus, writing to out_dir.
    model_cfg defaults to ModelConfig with the corpus's vocabulary. stop_at ends this call early,
    with a checkpoint, at that step of the schedule: a run in segments (resume continues it) is
    bit for bit the run in one go. An out_dir that already holds a run is refused unless resume
    continues it or overwrite replaces it; overwrite keeps the old checkpoint and metrics until
    the new run writes its first checkpoint. Returns a dict with the final params, step,
    train_loss and val_loss."""
    tcfg = train_cfg or TrainConfig()
    out_dir = Path(out_dir)
    ckpt_path, metrics_path = out_dir / CHECKPOINT, out_dir / METRICS
    tokenizer, cfg, train_ids, val_ids, corpus_sha256 = prepare_data(corpus, model_cfg, tcfg)
    _check_memory(cfg, tcfg)
    claim_run_dir(out_dir, ckpt_path, [ckpt_path, metrics_path], resume, overwrite)

    init_seed, train_seed, _ = seed_streams(tcfg.seed)
    rng = np.random.default_rng(train_seed)          # draws the training batches, and only them
    if resume:
        ckpt = load_checkpoint(ckpt_path)
        check_compatible(ckpt, cfg, tcfg, tokenizer, corpus_sha256, ckpt_path)
        params, start = ckpt["params"], ckpt["step"]
        opt = make_optimizer(params, tcfg)
        opt.load_state_dict(ckpt["opt_state"])
        rng.bit_generator.state = ckpt["rng_state"]
        if tcfg.steps != ckpt["train_cfg"].steps:
            print(f"note: the checkpoint's schedule ended at step {ckpt['train_cfg'].steps}, this one at "
                  f"{tcfg.steps}: the learning rate changes course from step {start}", file=sys.stderr)
        history = truncate_metrics(metrics_path, start)
        new_run = False
    else:
        params = init_params(cfg, np.random.default_rng(init_seed))
        opt = make_optimizer(params, tcfg)
        start, history = 0, []
        new_run = True                               # metrics go to metrics.jsonl.pending until the first checkpoint
        pending(metrics_path).write_text("", encoding="utf-8")     # (empties one a killed run left)

    def checkpoint(step):
        nonlocal new_run
        with signals_deferred():
            save_checkpoint(ckpt_path, params=params, opt=opt, rng=rng, step=step, model_cfg=cfg,
                            train_cfg=tcfg, tokenizer=tokenizer, corpus_sha256=corpus_sha256)
            # A new run's first checkpoint: its metrics move in too. Ctrl-C waits for both renames;
            # only a kill between them leaves the new checkpoint beside the old metrics.jsonl.
            if new_run:
                promote_pending([metrics_path])      # the open file keeps its handle across the rename
                new_run = False

    def diverged(why, step):
        return TrainingDiverged(diverged_message(why, step, ckpt_path, new_run, "try a lower --lr"))

    tokens_per_step = tcfg.batch_size * cfg.seq_len
    # The last values written down, so a resume with nothing left to do still reports them.
    loss = next((r["train_loss"] for r in reversed(history) if "train_loss" in r), math.nan)
    val_loss = next((r["val_loss"] for r in reversed(history) if "val_loss" in r), math.nan)
    end = min(stop_at or tcfg.steps, tcfg.steps)
    bar = tqdm(range(start + 1, end + 1), initial=start, total=tcfg.steps,
               disable=not progress, unit="step", dynamic_ncols=True)
    clock, clock_step = time.perf_counter(), start
    try:
        with open(pending(metrics_path) if new_run else metrics_path, "a", encoding="utf-8") as metrics:
            for step in bar:
                lr = warmup_cosine_lr(step, tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps)
                x, y = get_batch(train_ids, tcfg.batch_size, cfg.seq_len, rng)
                try:
                    loss, grad_norm = train_step(params, opt, x, y, cfg, tcfg, lr)
                except TrainingDiverged as e:
                    raise diverged(e, step) from None

                last_step = step == tcfg.steps
                evaluated = step % tcfg.eval_every == 0 or last_step
                if step == 1 or step % tcfg.log_every == 0 or evaluated:
                    # Training throughput only: the clock stops before evaluation and restarts after it.
                    tokens_per_s = tokens_per_step * (step - clock_step) / max(time.perf_counter() - clock, 1e-9)
                    record = dict(step=step, train_loss=loss, lr=lr, grad_norm=grad_norm,
                                  tokens_per_s=round(tokens_per_s, 1))
                    if evaluated:
                        val_loss = record["val_loss"] = evaluate(params, val_ids, cfg, tcfg, eval_rng(tcfg.seed))
                        if why := divergence(val_loss, cfg.vocab_size, "the validation loss"):
                            raise diverged(why, step)    # before its checkpoint: the last good one stays
                    metrics.write(json.dumps(record, allow_nan=False) + "\n")   # strict JSON: no NaN
                    metrics.flush()
                    shown_val = f"{val_loss:.3f}" if math.isfinite(val_loss) else "–"    # none yet
                    bar.set_postfix(loss=f"{loss:.3f}", val=shown_val, tok_s=f"{tokens_per_s:,.0f}")
                    clock, clock_step = time.perf_counter(), step
                if step % tcfg.checkpoint_every == 0 or last_step or step == end:
                    os.fsync(metrics.fileno())           # metrics must reach the checkpoint's step
                    checkpoint(step)
    finally:
        bar.close()
        if new_run:                                  # this run wrote no checkpoint: it leaves nothing behind
            pending(metrics_path).unlink(missing_ok=True)
    return dict(params=params, step=max(start, end), train_loss=loss, val_loss=val_loss)


# ----------------------------------------------------------------------------- command line

def _positive_number(text):
    """--lr: a float above 0 and finite (NaN and inf refused here, named as the option)."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse, but its errors look like every other error of this CLI."""

    def error(self, message):
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    d = TrainConfig()
    ap = _Parser(prog="python3 -m model.train", description="Train the character-level language model.")
    ap.add_argument("--steps", type=int, default=d.steps, help=f"total optimizer steps (default {d.steps})")
    ap.add_argument("--out", required=True, type=Path, help="directory for checkpoint.npz and metrics.jsonl")
    ap.add_argument("--seed", type=int, default=d.seed, help=f"seed for init and batches (default {d.seed})")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="UTF-8 text file to train on")
    ap.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.npz")
    ap.add_argument("--overwrite", action="store_true", help="replace the run in OUT; its checkpoint and "
                    "metrics stay until this run writes its first checkpoint")
    ap.add_argument("--batch-size", type=int, default=d.batch_size, help=f"default {d.batch_size}")
    ap.add_argument("--lr", type=_positive_number, default=d.lr, help=f"peak learning rate (default {d.lr}); "
                    f"the cosine floor min_lr keeps its default ratio {d.min_lr / d.lr:g} to it")
    return ap.parse_args(argv)


def _fail(error, status):
    """Print each line of the error as `error: ...` and exit with status."""
    print("\n".join(f"error: {line}" for line in str(error).splitlines()), file=sys.stderr)
    sys.exit(status)


def main(argv=None):
    args = parse_args(argv)
    try:
        d = TrainConfig()
        min_lr = d.min_lr if args.lr == d.lr else args.lr * (d.min_lr / d.lr)
        tcfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, seed=args.seed, lr=args.lr,
                           min_lr=min_lr)
        # Overflow on the way to a NaN is reported once, as TrainingDiverged, not as NumPy warnings.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"), sigterm_raises():
            result = train(args.out, train_cfg=tcfg, corpus=args.corpus, resume=args.resume,
                           overwrite=args.overwrite)
    except (ModelInputError, OSError) as e:
        _fail(e, 2)                                  # a checkpoint's disagreements: one line each
    except MemoryError as e:
        _fail(f"out of memory at --batch-size {args.batch_size} ({e}); use a smaller --batch-size", 2)
    except TrainingDiverged as e:
        _fail(e, 1)
    except KeyboardInterrupt:
        print(stopped_line(args.out / CHECKPOINT, "interrupted"), file=sys.stderr)
        sys.exit(130)
    except Terminated:
        print(stopped_line(args.out / CHECKPOINT, "terminated (SIGTERM)"), file=sys.stderr)
        sys.exit(143)                                # 128 + SIGTERM, as the shell reports a killed job
    print(f"step {result['step']}: train loss {result['train_loss']:.4f}, "
          f"val loss {result['val_loss']:.4f} nats/char; checkpoint {args.out / CHECKPOINT}")


if __name__ == "__main__":
    main()
