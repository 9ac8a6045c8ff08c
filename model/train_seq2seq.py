"""Train the 2017 encoder-decoder on a small real task: reverse a random letter sequence.

    python3 -m model.train_seq2seq [--steps N] [--seed S] [--out DIR]

Source: 3 to 8 letters from a 10-letter alphabet, padded to 8 with PAD. Target: the letters
reversed, then EOS, then PAD. The decoder reads [BOS, reversed..., EOS, PAD...] minus its last
token and predicts it shifted by one (teacher forcing). Every position is in the loss, PAD
included: after EOS the answer is always PAD, so those positions are easy, and the model needs
no padding masks (the encoder's self-attention sees the pads and learns where the word ends).

Optimiser as in the paper: Adam with betas (0.9, 0.98), eps 1e-9, no weight decay, under the
Noam schedule (linear warm-up, then 1/sqrt(step)) times lr_factor; label smoothing 0.1.
Why warm-up 400 and lr_factor 0.5 (peak rate 4.4e-3 at step 400): the task is learnt by step
~500, and once the loss sits on its label-smoothing floor (0.537) Adam keeps taking full-size
steps on pure gradient noise, which now and then throws the post-LN model off (a loss spike it
recovers from in 100-200 steps). At factor 1 the spikes came more often and one seed in ten
ended at 94%; at 0.5 all ten ended at >= 99.8%.

Held-out accuracy is exact match of greedy decoding on sequences the training stream never draws.
Writes DIR/metrics.jsonl (one strict JSON object per line), DIR/config.json and DIR/checkpoint.npz
(parameters, Adam's state, the RNG's state, the step and the losses so far, every 250 steps and at
the end). The folder is handled as model.train handles its own (model/runs.py): a run there is
refused unless --resume continues it, bit for bit but for elapsed_s, or --overwrite replaces it
at the new run's first checkpoint. On the command line every failure is one line and exit status
2, a diverged run (a loss above 10 x log V, or NaN) 1, Ctrl-C 130 and SIGTERM 143; each leaves the
last checkpoint intact.
"""
import argparse
import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from model import ModelInputError
from model.config import Seq2SeqConfig
from model.optim import AdamW, noam_lr
from model.seq2seq import init_params, loss_and_grads, greedy_decode
from model.runs import (Terminated, TrainingDiverged, claim_run_dir, diverged_message, divergence, pending,
                        promote_pending, read_npz, save_state, signals_deferred, sigterm_raises,
                        state_groups, stopped_line)
from model.train import CHECKPOINT, METRICS, _fail, _free_memory, truncate_metrics

PAD, BOS, EOS = 0, 1, 2
LETTERS = "abcdefghij"
FIRST_LETTER = 3                    # letter k has id FIRST_LETTER + k
VOCAB = FIRST_LETTER + len(LETTERS)
MIN_LEN, MAX_LEN = 3, 8
# Peak memory of one training step per sequence in the batch, as measured at train()'s config
# (210 kB at batch sizes 2048 and 8192), rounded up.
_BYTES_PER_SEQUENCE = 220_000


def decode_text(ids) -> str:
    """Ids -> letters, stopping at EOS; PAD and BOS print as nothing."""
    out = []
    for i in ids:
        if i == EOS:
            break
        if i >= FIRST_LETTER:
            out.append(LETTERS[i - FIRST_LETTER])
    return "".join(out)


def sample_sources(n, rng, exclude=frozenset()):
    """n padded sources (n, MAX_LEN) whose letter tuples are not in `exclude`, and their lengths."""
    rows, lengths = [], []
    while len(rows) < n:
        L = int(rng.integers(MIN_LEN, MAX_LEN + 1))
        letters = tuple(int(x) for x in rng.integers(FIRST_LETTER, VOCAB, L))
        if letters in exclude:
            continue
        rows.append(list(letters) + [PAD] * (MAX_LEN - L))
        lengths.append(L)
    return np.array(rows, dtype=np.int64), np.array(lengths)


def make_targets(src, lengths):
    """full = [BOS, reversed letters, EOS, PAD...] (B, MAX_LEN + 2); returns (tgt_in, tgt_out)."""
    full = np.full((len(src), MAX_LEN + 2), PAD, dtype=np.int64)
    full[:, 0] = BOS
    for b, L in enumerate(lengths):
        full[b, 1:L + 1] = src[b, :L][::-1]
        full[b, L + 1] = EOS
    return full[:, :-1], full[:, 1:]    # teacher forcing: read up to t, predict t + 1


def one_blas_thread():
    """Run BLAS on one thread where threadpoolctl is installed (it is optional). These matrices
    are small enough that a second thread gains nothing, and on a busy machine BLAS threads
    waiting on each other stretched 2 ms matmuls to seconds (a 12 s run took 4 minutes)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def smoothing_floor(V, eps):
    """The lowest reachable label-smoothed loss: the entropy of q itself, when p = q exactly."""
    q_hit, q_miss = 1 - eps + eps / V, eps / V
    return float(-(q_hit * np.log(q_hit) + (V - 1) * q_miss * np.log(q_miss))) if eps else 0.0


def evaluate(params, cfg, src, lengths):
    """Greedy-decode every source; exact match = every letter and the EOS right, nothing extra."""
    _, tgt_out = make_targets(src, lengths)
    pred = greedy_decode(params, src, cfg, BOS, EOS, max_len=MAX_LEN + 1)
    exact, tokens, total = 0, 0, 0
    for b, L in enumerate(lengths):
        want = tgt_out[b, :L + 1]                       # letters then EOS
        got = np.full(L + 1, -1)
        got[:min(L + 1, pred.shape[1])] = pred[b, :L + 1]
        exact += bool((got == want).all())
        tokens += int((got == want).sum())
        total += L + 1
    return exact / len(lengths), tokens / total, pred


# Arguments of train() that change what the parameters become: resuming with any of them changed
# would splice two different runs (num_eval: the held-out set is kept out of the training draws).
# steps may grow (the schedule does not depend on it); the rest changes only what is written down.
TRAJECTORY = ("seed", "batch_size", "warmup", "lr_factor", "num_eval")


def train(steps=1000, seed=0, out="runs/seq2seq_reverse", batch_size=64, warmup=400,
          lr_factor=0.5, eval_every=250, num_eval=500, log_every=25, progress=True,
          checkpoint_every=250, resume=False, overwrite=False):
    """Returns a summary dict; writes metrics.jsonl, config.json and checkpoint.npz into `out`
    (pass out=None to write nothing). progress=False: no bar, no printing. A folder that holds a
    run is refused unless resume continues it (bit for bit) or overwrite replaces it, at the new
    run's first checkpoint (model/runs.py). A loss that diverges stops the run (TrainingDiverged)."""
    cfg = Seq2SeqConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, max_len=MAX_LEN + 1,
                        d_model=32, num_heads=4, d_ff=128, num_enc_layers=2, num_dec_layers=2,
                        label_smoothing=0.1, tie_output=True, share_vocab=True)
    settings = dict(steps=steps, seed=seed, batch_size=batch_size, warmup=warmup, lr_factor=lr_factor,
                    num_eval=num_eval)
    rng = np.random.default_rng(seed)
    params = init_params(cfg, rng)
    opt = AdamW(params, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.0)   # Adam, as in the paper

    # Held-out set first, from its own stream; training draws skip its sequences.
    val_src, val_len = sample_sources(num_eval, np.random.default_rng([seed, 1]))
    held_out = frozenset(tuple(int(x) for x in row[:L]) for row, L in zip(val_src, val_len))

    start, losses, exact, token_acc, elapsed = 0, [], float("nan"), float("nan"), 0.0
    new_run, metrics = False, None
    if out is not None:
        out = Path(out)
        ckpt_path, metrics_path, config_path = out / CHECKPOINT, out / METRICS, out / "config.json"
        claim_run_dir(out, ckpt_path, [ckpt_path, metrics_path, config_path], resume, overwrite)
        if resume:
            state = load_run(ckpt_path, cfg, settings)
            params, start, losses = state["params"], state["step"], state["losses"]
            opt.load_state_dict(state["opt_state"])
            rng.bit_generator.state = state["rng_state"]
            exact, token_acc, elapsed = state["val_exact_match"], state["val_token_acc"], state["elapsed_s"]
            truncate_metrics(metrics_path, start)
        else:
            new_run = True                   # config.json and metrics.jsonl are .pending until then
            pending(config_path).write_text(json.dumps(dict(model=cfg.to_dict(), **settings), indent=2))
        metrics = open(pending(metrics_path) if new_run else metrics_path, "w" if new_run else "a")

    def log(row):                           # one line per record, flushed: tail -f works
        if metrics is not None:
            metrics.write(json.dumps(row, allow_nan=False) + "\n")      # strict JSON: no NaN
            metrics.flush()

    def diverged(why, step):
        return TrainingDiverged(diverged_message(why, step, out and ckpt_path, new_run,
                                                 "try a lower --lr-factor or a longer --warmup"))

    def checkpoint(step):
        nonlocal new_run
        bad = [name for name, a in params.items() if not np.isfinite(a).all()]
        if bad:                             # a finite loss with an infinite gradient: the update broke them
            raise diverged(f"the update made {len(bad)} parameter arrays non-finite ({bad[0]}, ...)", step)
        os.fsync(metrics.fileno())          # metrics must reach the checkpoint's step
        meta = dict(kind="seq2seq", step=step, opt_t=opt.t, rng_state=rng.bit_generator.state,
                    model_config=cfg.to_dict(), settings=settings, elapsed_s=elapsed_now(),
                    val_exact_match=None if math.isnan(exact) else exact,
                    val_token_acc=None if math.isnan(token_acc) else token_acc)
        with signals_deferred():
            save_state(ckpt_path, meta, params, opt, losses=np.array(losses))
            if new_run:
                promote_pending([metrics_path, config_path])
                new_run = False

    t0 = time.time()

    def elapsed_now():
        return round(elapsed + time.time() - t0, 3)

    try:
        with one_blas_thread():
            bar = tqdm(range(start + 1, steps + 1), initial=start, total=steps, desc="reverse",
                       disable=not progress, dynamic_ncols=True)
            for step in bar:
                src, lengths = sample_sources(batch_size, rng, held_out)
                tgt_in, tgt_out = make_targets(src, lengths)
                loss, grads = loss_and_grads(params, src, tgt_in, tgt_out, cfg)
                if why := divergence(loss, cfg.tgt_vocab_size):
                    raise diverged(why, step)           # before the optimizer sees it
                lr = lr_factor * noam_lr(step, cfg.d_model, warmup)
                opt.step(params, grads, lr)
                losses.append(loss)
                recent = float(np.mean(losses[-log_every:]))
                if step % log_every == 0 or step == steps:
                    log(dict(step=step, loss=recent, lr=lr, elapsed_s=elapsed_now()))
                    bar.set_postfix(loss=f"{recent:.3f}", lr=f"{lr:.2e}")
                if step % eval_every == 0 or step == steps:
                    exact, token_acc, pred = evaluate(params, cfg, val_src, val_len)
                    log(dict(step=step, val_exact_match=exact, val_token_acc=token_acc, elapsed_s=elapsed_now()))
                    if progress:
                        tqdm.write(f"step {step:5d}  loss {recent:.4f}  exact match {exact:6.1%}  "
                                   f"token acc {token_acc:6.1%}  e.g. {decode_text(val_src[0])} -> "
                                   f"{decode_text(pred[0])}")
                if out is not None and (step % checkpoint_every == 0 or step == steps):
                    checkpoint(step)
            bar.close()
    finally:
        if metrics is not None:
            metrics.close()
            if new_run:                         # this run wrote no checkpoint: it leaves nothing behind
                for path in (metrics_path, config_path):
                    pending(path).unlink(missing_ok=True)
    return dict(steps=steps, wall_s=time.time() - t0, first_loss=float(np.mean(losses[:log_every])),
                final_loss=float(np.mean(losses[-log_every:])),
                loss_floor=smoothing_floor(VOCAB, cfg.label_smoothing), val_exact_match=exact,
                val_token_acc=token_acc, cfg=cfg, params=params)


def load_run(path: Path, cfg: Seq2SeqConfig, settings: dict) -> dict:
    """The checkpoint train() wrote at path, checked against the run that would continue it."""
    arrays = read_npz(path, "pass the checkpoint.npz that `python3 -m model.train_seq2seq` wrote")
    try:
        meta = json.loads(str(arrays.pop("meta")))
        groups = state_groups(arrays)
        state = dict(params=groups["param"], opt_state={"t": meta["opt_t"], "m": groups["adam_m"],
                                                        "v": groups["adam_v"]},
                     rng_state=meta["rng_state"], step=meta["step"], losses=list(arrays["losses"]),
                     elapsed_s=meta["elapsed_s"], model_config=meta["model_config"], settings=meta["settings"],
                     val_exact_match=_nan_if_none(meta["val_exact_match"]),
                     val_token_acc=_nan_if_none(meta["val_token_acc"]))
        if meta["kind"] != "seq2seq":
            raise ValueError(f"its kind is {meta['kind']!r}")
    except Exception as e:                           # JSON, key or field errors alike
        raise ModelInputError(f"cannot resume: {path} is not a checkpoint of model.train_seq2seq "
                              f"({type(e).__name__}: {e}); start a new --out") from None
    if state["model_config"] != cfg.to_dict():
        raise ModelInputError(f"cannot resume: {path} was written with another Seq2SeqConfig; start a new --out")
    for name in TRAJECTORY:
        have, want = state["settings"][name], settings[name]
        if have != want:
            raise ModelInputError(f"cannot resume: {path} has {name} = {have!r} but this run asks for "
                                  f"{want!r}; resume with the same value or start a new --out")
    if settings["steps"] < state["step"]:
        raise ModelInputError(f"cannot resume: {path} is already at step {state['step']}, past the "
                              f"requested --steps {settings['steps']}; ask for at least {state['step']} steps")
    return state


def _nan_if_none(x):
    return float("nan") if x is None else x


class _Parser(argparse.ArgumentParser):
    """argparse, but its errors are one line like every other error of this CLI."""

    def error(self, message):
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def _check_args(args):
    """Refuse what train() would turn into a traceback, a NaN summary or a run that cannot learn."""
    for name in ("steps", "batch_size", "warmup"):
        if getattr(args, name) < 1:
            raise ModelInputError(f"--{name.replace('_', '-')} must be an integer >= 1, got {getattr(args, name)}")
    if not 0 < args.lr_factor < math.inf:
        raise ModelInputError(f"--lr-factor must be a positive number, got {args.lr_factor}")
    if args.seed < 0:
        raise ModelInputError(f"--seed must be >= 0, got {args.seed}")
    need, free = args.batch_size * _BYTES_PER_SEQUENCE, _free_memory()
    if free is not None and need > free:             # refuse before minutes of drawing sequences
        raise ModelInputError(f"--batch-size {args.batch_size} needs about {need / 2**30:.1f} GiB per training "
                              f"step, but only {free / 2**30:.1f} GiB of memory is free; use --batch-size "
                              f"{max(1, free // (2 * _BYTES_PER_SEQUENCE))} or less")


def main(argv=None):
    ap = _Parser(prog="python3 -m model.train_seq2seq", description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/seq2seq_reverse", type=Path)
    ap.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.npz")
    ap.add_argument("--overwrite", action="store_true", help="replace the run in OUT; its files stay until "
                    "this run writes its first checkpoint")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=400, help="Noam warm-up steps")
    ap.add_argument("--lr-factor", type=float, default=0.5, help="multiplies the Noam rate")
    args = ap.parse_args(argv)
    try:
        _check_args(args)
        # Overflow on the way to a divergence is reported once, as TrainingDiverged, not as warnings.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"), sigterm_raises():
            r = train(args.steps, args.seed, args.out, args.batch_size, args.warmup, args.lr_factor,
                      resume=args.resume, overwrite=args.overwrite)
    except (ModelInputError, OSError) as e:
        _fail(e, 2)
    except MemoryError as e:
        _fail(f"out of memory at --batch-size {args.batch_size} ({e}); use a smaller --batch-size", 2)
    except TrainingDiverged as e:
        _fail(e, 1)
    except KeyboardInterrupt:
        print(stopped_line(args.out / CHECKPOINT, "interrupted"), file=sys.stderr)
        sys.exit(130)
    except Terminated:
        print(stopped_line(args.out / CHECKPOINT, "terminated (SIGTERM)"), file=sys.stderr)
        sys.exit(143)
    print(f"done: {r['steps']} steps in {r['wall_s']:.1f} s, loss {r['final_loss']:.4f} "
          f"(label-smoothing floor {r['loss_floor']:.4f}), "
          f"held-out exact match {r['val_exact_match']:.1%} (token accuracy {r['val_token_acc']:.1%}); "
          f"metrics in {args.out / METRICS}")


if __name__ == "__main__":
    main()
