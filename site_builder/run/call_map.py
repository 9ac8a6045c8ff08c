"""The landing page's map: what one real training step of the language model calls.

The map is read from a run, not from the syntax tree: the syntax tree sees every call a
function could make (`cross_entropy_forward` calls `smoothed_targets` only when the loss is
smoothed, which the language model never asks for), a run sees the calls it made. The run
is step 1 of `model.train.train` at the default configs (`TrainConfig()`, and `ModelConfig`
at the shipped corpus's vocabulary), set up exactly as `train` sets it up; `train_step`
itself (loss and gradients, clipping, the AdamW update) runs under
`site_builder.run.trace.call_tree`, which records who called whom and from which line.

The run is cached like the shape probes (`example_runner.recorded`): keyed on what it read
(the model's sources, this module's import closure, the corpus, the packages it loaded), so
an incremental build draws the map a clean build draws.
"""
from dataclasses import dataclass
from pathlib import Path

from site_builder.base.problems import Problem
from site_builder.run.qualnames import resolve_qualname
from site_builder.run.trace import CallSite, call_tree, raising_location

STEP = "model.train.train_step"
STEP_NUMBER = 1          # the step traced: the first, whose inputs need no training before them
SOURCE = (f"step {STEP_NUMBER} of model.train.train at TrainConfig() and the default ModelConfig, "
          f"on the shipped corpus")


@dataclass
class StepCalls:
    """The calls of the traced step (`root`, the CallSite of `train_step`), or why there are
    none (`problem`: the line that raised, for the build to report). `source`: which run it was."""
    root: CallSite | None
    problem: Problem | None = None
    source: str = SOURCE


def first_step_inputs():
    """What model.train.train passes to train_step at step STEP_NUMBER of a default run:
    (params, opt, x, y, cfg, tcfg, lr)."""
    import numpy as np
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
    lr = warmup_cosine_lr(STEP_NUMBER, tcfg.lr, tcfg.min_lr, tcfg.warmup_steps, tcfg.steps)
    return params, opt, x, y, cfg, tcfg, lr


def traced_step() -> StepCalls:
    """Step STEP_NUMBER of a default training run, its calls recorded; a run that raised is a
    problem at the line that raised (else at the file of STEP)."""
    try:
        _, root = call_tree(resolve_qualname(STEP), *first_step_inputs())
    except Exception as e:               # a broken model: report it, draw no map
        file, line, _ = raising_location(e) or (STEP.rpartition(".")[0].replace(".", "/") + ".py", 1, "")
        cause = e.__cause__ or e
        message = f"the landing page's map runs {STEP} ({SOURCE}), which raised {type(cause).__name__}: {cause}"
        return StepCalls(None, Problem(file, line, message, "fix the model code that raised; the build runs it "
                                                            "to draw the map"))
    return StepCalls(root)


def step_calls(root, store) -> StepCalls:
    """traced_step, run in a child and cached on what it read; here if the child failed."""
    from site_builder.run.example_runner import recorded
    found = recorded(root, store, f"the calls of {STEP}", _traced_and_kept, Path(root) / "site_builder" / "run" / "call_map.py")
    return found if found is not None else traced_step()


def _traced_and_kept():
    """traced_step as `recorded` takes it: (value, keep); a run that raised is not kept."""
    calls = traced_step()
    return calls, calls.problem is None
