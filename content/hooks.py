"""The builder's hooks for this project: what it must know about the transformer as code.

The settings that are data are in the `project:` block of content/site.yaml; this file, which
that block names (`hooks: content/hooks.py`), holds what must be code. The builder calls a hook
only if it is defined here (site_builder/gather/project.py: `hook(root, project, name)`); the
hooks it knows, and when it calls each, are listed in content/README.md.
"""


# ---------------------------------------------------------------------------------------------
# The landing page, the training runs, the call map and the playground's vocabulary
# (the builder's build/render_step.py, run/training_run.py, run/call_map.py, gather/playground.py)

import ast
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from site_builder.run import training_run

ROOT = Path(__file__).resolve().parents[1]

_VOCAB_SIZES = {}


def corpus_vocab_size() -> int:
    """The number of distinct characters of the shipped corpus (counted once per corpus content
    in a process: sorting 4.8 M characters takes a while)."""
    from model.data import CharTokenizer, load_corpus, DEFAULT_CORPUS
    text = load_corpus(DEFAULT_CORPUS)
    if text not in _VOCAB_SIZES:
        _VOCAB_SIZES.clear()
        _VOCAB_SIZES[text] = len(CharTokenizer(text).chars)
    return _VOCAB_SIZES[text]


def documented_config():
    """Called by the build once, before the shape probes: the config the site documents (the
    landing page's, the parameter tables', the shape tables' "at the default config"), and what
    the landing page says of it after its fields. ModelConfig's defaults, with the vocabulary of
    the shipped corpus."""
    from model.config import ModelConfig
    return ModelConfig(vocab_size=corpus_vocab_size()), "vocabulary from the shipped corpus"


# -- the training runs the pages read

SNAPSHOT_STEPS = (1, 50, 150, 300, 600)
SAMPLE_PROMPT = "ROMEO:"
SAMPLE_LENGTH = 120
SAMPLE_SEED = 0
# The encoder-decoder's run on the reversal task, as the seq2seq page shows it; the label
# smoothing page reads the same run rather than training a second copy of it.
REVERSAL_RUN = dict(steps=250, seed=0, eval_every=50, num_eval=200, log_every=10)


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


def training_runs():
    """Called by the build before the examples that read a run (each run trains in a child of
    its own beside the other examples, and is handed to them), and by a page to name what an
    example read: {kind: (how a page names the run, fn(root) training it or reading it from
    the build cache)}."""
    return {"language model": ("the trained language model", trained_run),
            "reversal": ("the encoder-decoder trained to reverse", reversal_run)}


def trained_run(root=None, steps: int = max(SNAPSHOT_STEPS)) -> TrainingRun:
    """The real model.train.train on the shipped corpus at the default configs, stopped at each
    of SNAPSHOT_STEPS (and resumed bit for bit), so the samples come from the same run as the
    curve; cached on the model's code, this recipe, the corpus and the configs."""
    from model.config import TrainConfig
    from model.data import DEFAULT_CORPUS
    root = Path(root or ROOT)
    train_cfg = TrainConfig(steps=steps)
    key = training_run.run_key(root, "language model", Path(DEFAULT_CORPUS).read_bytes(), repr(train_cfg),
                               SNAPSHOT_STEPS, SAMPLE_PROMPT, SAMPLE_LENGTH, SAMPLE_SEED)

    def compute():
        run = run_training(root, train_cfg)
        run.commit_key = key[:12]
        return run
    return training_run.cached_run("language model", key, compute)


def run_training(root: Path, train_cfg) -> TrainingRun:
    """The run, uncached; a run that diverges raises TrainingDiverged said for the site."""
    from model.train import TrainingDiverged
    try:
        return _run_training(train_cfg)
    except TrainingDiverged as e:
        raise diverged(e, root, train_cfg) from None


def _run_training(train_cfg) -> TrainingRun:
    from model.data import DEFAULT_CORPUS
    from model.generate import generate
    from model.train import train, load_checkpoint
    with tempfile.TemporaryDirectory() as tmp:
        def run_to(step, resume):
            """Train to `step` (resuming from the last stop's checkpoint) and sample there."""
            params = train(tmp, train_cfg=train_cfg, corpus=DEFAULT_CORPUS, resume=resume, progress=False,
                           stop_at=step)["params"]
            ckpt = load_checkpoint(Path(tmp) / "checkpoint.npz")
            tok = ckpt["tokenizer"]
            ids = generate(params, ckpt["model_cfg"], tok.encode(SAMPLE_PROMPT), SAMPLE_LENGTH, 0.8, None,
                           np.random.default_rng(SAMPLE_SEED))
            return {k: v.copy() for k, v in params.items()}, tok.decode(ids), ckpt
        stops = training_run.in_segments([s for s in SNAPSHOT_STEPS if s <= train_cfg.steps], run_to)
        metrics = training_run.read_rows(Path(tmp) / "metrics.jsonl", drop=("tokens_per_s",))
    snapshots = {step: params for step, (params, _, _) in stops.items()}
    last = stops[max(stops)][2]
    return TrainingRun(model_cfg=last["model_cfg"], train_cfg=train_cfg, metrics=metrics,
                       samples={step: sample for step, (_, sample, _) in stops.items()},
                       params=snapshots[max(snapshots)], snapshots=snapshots, chars="".join(last["tokenizer"].chars),
                       commit_key="")


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


def run_label(run: TrainingRun) -> str:
    """How a page names the site's run, read from the run's own record: its step count and
    what its TrainConfig sets otherwise than the defaults (a page showing a run at the
    defaults, TrainConfig(), shows another run and says so)."""
    from model.config import TrainConfig
    default = asdict(TrainConfig())
    changed = ", ".join(f"{k}={v!r}" for k, v in asdict(run.train_cfg).items() if default.get(k) != v)
    return (f"the site's training run ({run.train_cfg.steps} steps: model.train.train at "
            f"TrainConfig({changed}), cache key {run.commit_key})")


def reversal_run(root=None, **overrides) -> dict:
    """model.train_seq2seq.train(**REVERSAL_RUN, **overrides): its summary (params and cfg
    included) and its metrics.jsonl rows, as {"result", "metrics"}. Cached like the language
    model's run; held in memory for the process."""
    root = Path(root or ROOT)
    args = {**REVERSAL_RUN, **overrides}
    key = training_run.run_key(root, "reversal", sorted(args.items()))

    def compute():
        from model.train_seq2seq import train
        with tempfile.TemporaryDirectory() as out:
            result = train(out=out, progress=False, **args)
            metrics = training_run.read_rows(Path(out) / "metrics.jsonl", drop=("elapsed_s",))
        result.pop("wall_s", None)             # wall-clock: would make two builds differ
        return dict(result=result, metrics=metrics)
    return training_run.cached_run("reversal", key, compute)


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


# -- the landing page's map: step 1 of a default training run

CALL_MAP_STEP = 1          # the step traced: the first, whose inputs need no training before them


def call_map_inputs():
    """Called by the build (in a child, cached on what it read) to draw the landing page's map:
    (the arguments call_map_root, model.train.train_step, is traced with, which call that is
    in words). Exactly what model.train.train passes to train_step at step CALL_MAP_STEP of a
    default run."""
    return first_step_inputs(), (f"step {CALL_MAP_STEP} of model.train.train at TrainConfig() and the default "
                                 f"ModelConfig, on the shipped corpus")


def first_step_inputs():
    """What model.train.train passes to train_step at step CALL_MAP_STEP of a default run:
    (params, opt, x, y, cfg, tcfg, lr)."""
    from model.config import TrainConfig
    from model.data import DEFAULT_CORPUS, get_batch
    from model.optim import warmup_cosine_lr
    from model.train import init_params, make_optimizer, prepare_data, seed_streams
    tcfg = TrainConfig()
    _, cfg, train_ids, _, _ = prepare_data(DEFAULT_CORPUS, None, tcfg)
    init_seed, train_seed, _ = seed_streams(tcfg.seed)
    params = init_params(cfg, np.random.default_rng(init_seed))
    opt = make_optimizer(params, tcfg)
    x, y = get_batch(train_ids, tcfg.batch_size, cfg.seq_len, np.random.default_rng(train_seed))
    lr = warmup_cosine_lr(CALL_MAP_STEP, tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps)
    return params, opt, x, y, cfg, tcfg, lr


# -- the playground

def text_vocabularies():
    """Called when a page is built (for the names and words) and by `serve`'s playground (for
    the characters, only when a reader's text is checked): the vocabularies a playable text may
    declare (`vocabulary: NAME`), as {name: {characters: fn() -> str, alphabet: what the
    field's hint calls them, known: the refusal's words for them ({n}: how many), context: what
    a text as long as a config field is}}."""
    return {"corpus": dict(characters=lambda: trained_run().chars, alphabet="characters of the corpus's alphabet",
                           known="the {n} characters of the corpus", context="all the model reads")}


# ---------------------------------------------------------------------- shape probes
# site_builder/run/shapes.py runs each probe twice, at the config given and at its probe
# version (every field of `configs[].axes` at its `probe_sizes` size), and names each axis
# of what the package held by the one letter of that size.

def probes(config):
    """Called once per build by the shape probes (site_builder/run/shapes.py), with the
    documented config (the landing page's, its vocabulary the shipped corpus's). Returns the
    probes to run, in order (where two reach a function, the first one's shapes are shown):
    each a dict of `name`; `entry`, the dotted name of the function run; `config`, the config
    of its default run; `args(config, sizes)`, the call's positional arguments at a config,
    `sizes` being each letter's size in that run; and optionally `lengths`, the letters of a
    call's lengths (the project block's `lengths` says what each is) that no config field
    sizes, as {letter: its size in the default run, or None for its probe size in both runs}."""
    from model.config import Seq2SeqConfig
    pair = Seq2SeqConfig(src_vocab_size=config.vocab_size, tgt_vocab_size=config.vocab_size)
    length = min(pair.max_len, 16)          # one pair of sequences, as long as the config allows, at most 16
    return [
        dict(name="lm", entry="model.transformer.loss_and_grads", config=config, args=_lm_args),
        dict(name="seq2seq", entry="model.seq2seq.loss_and_grads", config=pair, args=_seq2seq_args,
             lengths={"S": length, "T": length}),
        dict(name="generate", entry="model.generate.generate", config=config, args=_generate_args,
             lengths={"n": None}),
    ]


def _ids(rng, vocab, length):
    return rng.integers(0, vocab, size=(length,))


def _lm_args(cfg, sizes):
    """loss_and_grads(params, ids, targets, cfg) on one sequence of length seq_len."""
    from model.transformer import init_params
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng)
    ids = _ids(rng, cfg.vocab_size, cfg.seq_len)
    return params, ids, np.roll(ids, -1), cfg


def _seq2seq_args(cfg, sizes):
    """loss_and_grads(params, src_ids, tgt_in_ids, tgt_out_ids, cfg): S source ids, T target ids."""
    from model.seq2seq import init_params
    if sizes["M"] < max(sizes["S"], sizes["T"]):
        raise ValueError("the probe's maximum length is shorter than its sequences")
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng)
    return (params, _ids(rng, sizes["V"], sizes["S"]), _ids(rng, sizes["V"], sizes["T"]),
            _ids(rng, sizes["V"], sizes["T"]), cfg)


def _generate_args(cfg, sizes):
    """generate(params, cfg, prompt_ids, steps, temperature, top_k, rng): a prompt of seq_len
    ids, n new tokens, temperature 1, no top-k."""
    from model.transformer import init_params
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng)
    return params, cfg, _ids(rng, cfg.vocab_size, cfg.seq_len), sizes["n"], 1.0, None, np.random.default_rng(0)
