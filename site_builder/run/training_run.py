"""The training run the site shows: the loss curve, samples at several steps, and the
trained parameters that the attention heatmap and the generation page read.

It is the real `model.train.train` on the shipped corpus at the default config, run in
segments (train stops at each snapshot step with a checkpoint and resumes bit for bit), so
the samples come from the same run as the curve. Training takes seconds, not minutes, but a
normal build should not pay it: the result is cached, keyed on the model and training
sources, the corpus, the configs and NumPy's version. It reruns when one of those changes,
or when the build is asked to (`--retrain`).
"""
import ast
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from site_builder.base.cache import BuildCache, digest

SNAPSHOT_STEPS = (1, 50, 150, 300, 600)
SAMPLE_PROMPT = "ROMEO:"
SAMPLE_LENGTH = 120
SAMPLE_SEED = 0
_state = {"cache": BuildCache(None), "retrain": False}


@dataclass
class TrainingRun:
    model_cfg: object
    train_cfg: object
    metrics: list            # the rows of metrics.jsonl
    samples: dict            # step -> generated text (greedy-free: temperature 0.8, seed fixed)
    params: dict             # the final parameters
    snapshots: dict          # step -> params at that step
    chars: str               # the tokenizer's vocabulary
    commit_key: str          # the cache key: which sources and configs produced this run


def configure(cache: BuildCache, retrain: bool = False):
    """Called by the build: where the runs are cached, and whether to ignore the cache."""
    _state["cache"], _state["retrain"], _state["retrained"] = cache, retrain, set()


def _retrain(kind: str) -> bool:
    """--retrain ignores the cache for each run once per build, not once per example."""
    return _state["retrain"] and kind not in _state.setdefault("retrained", set())


def code_fingerprint(path: Path) -> str:
    """The source's syntax tree without positions: comments, blank lines and moved code
    leave it unchanged, so they do not retrain (nothing the run shows depends on line numbers)."""
    text = path.read_text(encoding="utf-8")
    try:
        return ast.dump(ast.parse(text), include_attributes=False)
    except SyntaxError:
        return text


def model_fingerprint(root: Path) -> list:
    """The syntax trees of model/*.py, by file name, and of this file (how a run is made and
    sampled): what every training run depends on."""
    return [(p.name, code_fingerprint(p)) for p in sorted((root / "model").glob("*.py"))] + \
        [("training_run.py", code_fingerprint(Path(__file__)))]


def source_key(root: Path, train_cfg, corpus: Path):
    return digest(*model_fingerprint(root), corpus.read_bytes(), repr(train_cfg),
                  np.__version__, SNAPSHOT_STEPS, SAMPLE_PROMPT, SAMPLE_LENGTH, SAMPLE_SEED)


# What each kind of run is, as a page names it: an example that read one is not a tiny example.
RUN_NAMES = {"language model": "the trained language model", "reversal": "the encoder-decoder trained to reverse"}


def runs_read() -> set:
    """The kinds of run read in this process since the last clear_runs_read() (the example
    runner asks, per example)."""
    return set(_state.setdefault("read", set()))


def clear_runs_read():
    _state["read"] = set()


def _cached_run(kind: str, key: str, compute):
    """compute() once per key: held in memory for the process (one run per kind), stored in the
    build cache; --retrain ignores both once per kind and build."""
    _state.setdefault("read", set()).add(kind)
    held = _state.setdefault("held", {})
    if kind in held and held[kind][0] == key and not _retrain(kind):
        return held[kind][1]
    run = None if _retrain(kind) else _state["cache"].get("training", key)
    if run is None:
        run = compute()
        _state["cache"].put("training", key, run)
        _state.setdefault("retrained", set()).add(kind)
    held[kind] = (key, run)
    return run


def held_runs() -> dict:
    """The runs held in this process, {kind: (key, run)}: what a child that trained them
    hands back to the build (site_builder/run/example_runner.py)."""
    return dict(_state.get("held", {}))


def adopt(held: dict):
    """Hold runs trained in a child, so the children forked after this read them from memory;
    a run adopted under --retrain counts as retrained for this build."""
    _state.setdefault("held", {}).update(held)
    if _state["retrain"]:
        _state.setdefault("retrained", set()).update(held)


_DIVERGED = re.compile(r"^(?P<what>.*?) at step (?P<step>\d+)\b")


def _setting_line(root: Path, cls: str, field: str):
    """(file, line) of `field: ... = default` in class `cls` of model/config.py, or None."""
    path = root / "model" / "config.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and getattr(item.target, "id", None) == field:
                    return "model/config.py", item.lineno
    return None


def diverged(e: Exception, root: Path, train_cfg) -> Exception:
    """model.train's TrainingDiverged, said for the site: the step and what stopped being
    finite, and what to change here. Its own advice is for the command line (`--lr`, and a
    checkpoint in the build's temporary folder, gone by the time anyone reads it)."""
    text = str(e)
    m = _DIVERGED.match(text)
    what, step = (m["what"], m["step"]) if m else (text.split(";")[0], None)
    what = re.sub(r" ?\(loss (-?[\d.]+(?:e[+-]?\d+)?|nan|inf)\)", lambda n: f", loss {float(n[1]):.4g}", what)
    at = _setting_line(root, "TrainConfig", "lr")
    where = f" at {at[0]}:{at[1]}" if at else ""
    message = (f"diverged at step {step}" if step else "diverged") + \
        (f" ({what}; the site trains with TrainConfig's defaults: lower lr, {train_cfg.lr:g}{where}, "
         "or undo the model edit that makes training diverge)")
    return type(e)(message).with_traceback(e.__traceback__)


def run_training(root: Path, train_cfg):
    try:
        return _run_training(root, train_cfg)
    except Exception as e:
        from model.train import TrainingDiverged
        if isinstance(e, TrainingDiverged):
            raise diverged(e, root, train_cfg) from None
        raise


def _run_training(root: Path, train_cfg):
    from model.data import DEFAULT_CORPUS, CharTokenizer
    from model.generate import generate
    from model.train import train, load_checkpoint
    samples, snapshots = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, step in enumerate(s for s in SNAPSHOT_STEPS if s <= train_cfg.steps):
            result = train(tmp, train_cfg=train_cfg, corpus=DEFAULT_CORPUS, resume=i > 0, progress=False, stop_at=step)
            ckpt = load_checkpoint(Path(tmp) / "checkpoint.npz")
            cfg, tok = ckpt["model_cfg"], ckpt["tokenizer"]
            snapshots[step] = {k: v.copy() for k, v in result["params"].items()}
            ids = generate(result["params"], cfg, tok.encode(SAMPLE_PROMPT), SAMPLE_LENGTH, 0.8, None,
                           np.random.default_rng(SAMPLE_SEED))
            samples[step] = tok.decode(ids)
        metrics = [json.loads(line) for line in (Path(tmp) / "metrics.jsonl").read_text().splitlines() if line]
    for row in metrics:
        row.pop("tokens_per_s", None)          # wall-clock: would make two builds differ
    return TrainingRun(model_cfg=cfg, train_cfg=train_cfg, metrics=metrics, samples=samples,
                       params=snapshots[max(snapshots)], snapshots=snapshots, chars="".join(tok.chars),
                       commit_key="")


def trained_run(root: Path | None = None, steps: int = max(SNAPSHOT_STEPS)) -> TrainingRun:
    """The cached run (training it first if the cache has none for these sources)."""
    from model.config import TrainConfig
    from model.data import DEFAULT_CORPUS
    root = root or Path(__file__).resolve().parents[2]
    train_cfg = TrainConfig(steps=steps)
    key = source_key(root, train_cfg, Path(DEFAULT_CORPUS))

    def compute():
        run = run_training(root, train_cfg)
        run.commit_key = key[:12]
        return run
    return _cached_run("language model", key, compute)


def run_label(run: TrainingRun) -> str:
    """How a page names the site's run, read from the run's own record: its step count and
    what its TrainConfig sets otherwise than the defaults (a page showing a run at the
    defaults, TrainConfig(), shows another run and says so)."""
    from dataclasses import asdict
    from model.config import TrainConfig
    default = asdict(TrainConfig())
    changed = ", ".join(f"{k}={v!r}" for k, v in asdict(run.train_cfg).items() if default.get(k) != v)
    return (f"the site's training run ({run.train_cfg.steps} steps: model.train.train at "
            f"TrainConfig({changed}), cache key {run.commit_key})")


# The encoder-decoder's run on the reversal task, as the seq2seq page shows it; the label
# smoothing page reads the same run rather than training a second copy of it.
REVERSAL_RUN = dict(steps=250, seed=0, eval_every=50, num_eval=200, log_every=10)


def reversal_run(root: Path | None = None, **overrides) -> dict:
    """model.train_seq2seq.train(**REVERSAL_RUN, **overrides): its summary (params and cfg
    included) and its metrics.jsonl rows, as {"result", "metrics"}. Cached like the language
    model's run: on the syntax tree of model/*.py, the arguments and NumPy's version; held in
    memory for the process."""
    root = root or Path(__file__).resolve().parents[2]
    args = {**REVERSAL_RUN, **overrides}
    key = digest("reversal", *model_fingerprint(root), sorted(args.items()), np.__version__)

    def compute():
        from model.train_seq2seq import train
        with tempfile.TemporaryDirectory() as out:
            result = train(out=out, progress=False, **args)
            metrics = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines() if line]
        for row in metrics:
            row.pop("elapsed_s", None)         # wall-clock: would make two builds differ
        result.pop("wall_s", None)
        return dict(result=result, metrics=metrics)
    return _cached_run("reversal", key, compute)


def corpus_window(line_start: str):
    """(run, offset, window, ids): the first seq_len characters of the corpus from the first place
    `line_start` occurs, as ids of the trained run's tokenizer. Pages read the trained model on it."""
    from model.data import DEFAULT_CORPUS, CharTokenizer
    run = trained_run()
    text = Path(DEFAULT_CORPUS).read_text(encoding="utf-8")
    start = text.find(line_start)
    if start < 0:
        raise ValueError(f"{line_start!r} is not in the shipped corpus {DEFAULT_CORPUS}: an example reads the "
                         f"trained model on it (restore the corpus, or change the example's text)")
    window = text[start:start + run.model_cfg.seq_len]
    return run, start, window, CharTokenizer(run.chars).encode(window)
