"""What both trainers (model.train, model.train_seq2seq) do with a run's folder and its losses.

  * A folder that holds a run is continued (--resume), refused, or with --overwrite replaced only
    when the new run writes its first checkpoint: until then its other files are NAME.pending.
  * Files are replaced atomically (temp file, fsync, os.replace), with the mode any new file gets.
  * Ctrl-C and SIGTERM wait while a checkpoint and its metrics change together.
  * A diverged run stops before the optimizer sees the bad step (divergence).
  * metrics.jsonl is strict JSON: a NaN or inf in a record is a bug, not a line to write.
"""
import contextlib
import json
import math
import os
import signal
import tempfile
import threading
from pathlib import Path

import numpy as np

from model import ModelInputError

PENDING = ".pending"   # a new run's files, until its first checkpoint

# The divergence rule. A model that gives every token the same score has loss log(V) (label
# smoothing or not), and a fresh model starts near it; learning goes down from there. A loss of
# DIVERGENCE_FACTOR * log(V) means the right token gets probability V**-10 on average: confidently
# wrong, which a learning run does not pass through (the reversal task's worst step in 1000, seeds
# 0 to 2, was 2.85 nats, 1.1 x log 13; the language model starts at 4.81, 1.1 x log 84). Stopping
# there catches an exploding run before its loss overflows to inf or NaN (model.train at --lr 1e6:
# 1.8e10 at step 2, where it went on to a validation loss of 4e16).
DIVERGENCE_FACTOR = 10


class TrainingDiverged(RuntimeError):
    """The loss stopped being finite or exploded (divergence), or the gradient norm is not finite."""


class Terminated(Exception):
    """SIGTERM, raised in the main thread so the trainer can say which checkpoint survives."""


def divergence(loss, vocab_size, what="loss"):
    """Why loss says the run diverged (NaN, infinite, or above DIVERGENCE_FACTOR * log(vocab_size)),
    or None if it does not."""
    limit = DIVERGENCE_FACTOR * math.log(vocab_size)
    if not math.isfinite(loss):
        return f"{what} is {loss}"
    if loss > limit:
        return f"{what} is {loss:.4g}, above {DIVERGENCE_FACTOR} x log(vocabulary {vocab_size}) = {limit:.4g}"
    return None


# ----------------------------------------------------------------------------- the folder

def claim_run_dir(out_dir: Path, checkpoint: Path, held: list, resume: bool, overwrite: bool):
    """Check that out_dir may take this run, and make it. held: the files of a run already there
    (checkpoint first). Raises ModelInputError naming --resume and --overwrite."""
    if resume and overwrite:
        raise ModelInputError(f"--resume continues the run in {out_dir} and --overwrite replaces it; "
                              f"pass only one")
    if out_dir.exists() and not out_dir.is_dir():
        raise ModelInputError(f"--out {out_dir} is a file, not a folder; pass a folder for the run's files")
    if resume:
        if not checkpoint.exists():
            raise ModelInputError(f"cannot resume: no checkpoint at {checkpoint}; "
                                  f"drop --resume to start a new run in {out_dir}")
        return
    held = [p.name for p in held if p.exists()]
    if held and not overwrite:
        raise ModelInputError(f"{out_dir} already holds a run ({' and '.join(held)}); continue it with "
                              f"--resume, or pass --overwrite to replace it once the new run writes "
                              f"its first checkpoint")
    out_dir.mkdir(parents=True, exist_ok=True)


def pending(path: Path) -> Path:
    return path.with_name(path.name + PENDING)


def promote_pending(paths):
    """Move each path's .pending file over it: the new run's first checkpoint is written."""
    for path in paths:
        os.replace(pending(path), path)
    fsync_dir(paths[0].parent)


def diverged_message(error, step, checkpoint: Path, new_run: bool, hint: str) -> str:
    """The line a diverged run ends with: what went wrong, where, and which checkpoint survives."""
    if checkpoint is None:
        last = "nothing was written (no folder)"
    elif not new_run:
        last = f"the last good checkpoint {checkpoint} is untouched"
    elif checkpoint.exists():
        last = f"this run wrote no checkpoint; the earlier run's {checkpoint} is untouched"
    else:
        last = "no checkpoint had been written yet"
    return f"{error} at step {step}; {last}; {hint}"


# ----------------------------------------------------------------------------- checkpoint files

def save_state(path: Path, meta: dict, params: dict, opt, **arrays):
    """One .npz, written atomically: meta as a JSON string (no pickle, so loading one never runs
    code), each parameter with AdamW's two moments of it, and any further arrays."""
    out = {"meta": np.array(json.dumps(meta, allow_nan=False)), **arrays}
    for name in params:
        out["param/" + name] = params[name]
        out["adam_m/" + name] = opt.m[name]
        out["adam_v/" + name] = opt.v[name]
    atomic_write(Path(path), lambda f: np.savez(f, **out))


def read_npz(path: Path, fix: str) -> dict:
    """Every array of the .npz at path. ModelInputError if it is damaged (a zip whose data or
    directory is broken) or not an .npz at all; fix says what to pass instead."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as e:                           # NumPy's and zipfile's errors vary
        with open(path, "rb") as f:
            is_zip = f.read(4) == b"PK\x03\x04"
        if is_zip:
            raise ModelInputError(f"{path} is damaged ({type(e).__name__}: {e}); restore it from a copy "
                                  f"or retrain") from None
        raise ModelInputError(f"{path} is not a NumPy .npz archive; {fix}") from None


def state_groups(arrays: dict) -> dict:
    """{"param": ..., "adam_m": ..., "adam_v": ...}: save_state's arrays by group, under their names."""
    return {g: {k.split("/", 1)[1]: a for k, a in arrays.items() if k.startswith(g + "/")}
            for g in ("param", "adam_m", "adam_v")}


# ----------------------------------------------------------------------------- atomic writes

def _new_file_mode() -> int:
    """The mode open() gives a new file: 0o666 less the umask (read by setting it back at once)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: Path, write):
    """write(file) into a temp file beside path, fsync it, then os.replace it over path. The file
    gets the usual mode of a new file (mkstemp's own is 0600)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        os.fchmod(fd, _new_file_mode())
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: Path):
    """Make a rename inside folder durable."""
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# ----------------------------------------------------------------------------- signals

@contextlib.contextmanager
def signals_deferred():
    """Hold Ctrl-C and SIGTERM until the block ends, so a checkpoint and metrics.jsonl change
    together. Only the main thread receives signals; elsewhere the block runs as is, and a signal
    whose handler Python did not install is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not None]
    caught = []
    previous = {s: signal.signal(s, lambda signum, frame: caught.append(signum)) for s in held}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for s in dict.fromkeys(caught):
            signal.raise_signal(s)               # delivered now, to the handler it was meant for


@contextlib.contextmanager
def sigterm_raises():
    """Inside the block SIGTERM raises Terminated, as Ctrl-C raises KeyboardInterrupt, so the
    trainer can say which checkpoint survives. Main thread only (elsewhere the block runs as is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stopped_line(checkpoint: Path, how: str) -> str:
    """The line Ctrl-C or SIGTERM prints: which checkpoint survives, and at what step."""
    if not checkpoint.exists():
        return f"{how} before the first checkpoint; {checkpoint.parent} holds nothing to resume"
    try:
        with np.load(checkpoint, allow_pickle=False) as z:   # the metadata only, not the arrays
            step = f" at step {json.loads(str(z['meta']))['step']}"
    except Exception:                                # the file is there; its step is only a detail
        step = ""
    return f"{how}; the last checkpoint {checkpoint}{step} is intact; continue it with --resume"
