"""Examples for the Transformer Block page. Each returns an ExampleResult built from real calls."""
import numpy as np

from model.config import ModelConfig
from model.gradcheck import numerical_grad
from model.transformer import init_params, ffn_forward, ffn_backward, block_forward, block_backward
from site_builder.run.examples import (ExampleResult, steps_table, matrix, gradcheck_table, stepper,
                                   config_label, fmt_array, fmt_number, table)
from site_builder.run.trace import trace_locals
from tests.fixtures import ffn_worked_params, FFN_WORKED_XN, FFN_WORKED_DOUT
from content.hooks import ROOT

SEED = 0
TINY = ModelConfig(vocab_size=5, seq_len=3, emb_dim=4, num_heads=2, ff_dim=6, num_layers=1)
X_HAND = np.array([[0.5, -1.0, 0.25, 0.0],      # hand-picked rows of the residual stream
                   [1.0, 0.0, -0.5, 2.0],
                   [-0.3, 0.8, 0.1, -0.6]])
DY_HAND = np.array([[0.1, -0.2, 0.3, 0.05],    # hand-picked, not computed from a loss
                    [-0.1, 0.25, 0.15, -0.3],
                    [0.2, 0.1, -0.25, 0.15]])
TINY_SOURCE = f"init_params({config_label(TINY)}, np.random.default_rng({SEED}))"
WORKED_SOURCE = f"the hand-picked weights of {ffn_worked_params.__module__.replace('.', '/')}.py ({ffn_worked_params.__name__})"


def tiny_params():
    return init_params(TINY, np.random.default_rng(SEED))


def ffn_forward_worked():
    params = ffn_worked_params()
    t = trace_locals(ffn_forward, FFN_WORKED_XN, params, "b0.")
    weights = [matrix(f"{label} = params[\"b0.{name}\"]", params["b0." + name])
               for label, name in (("W1", "ff1_w"), ("b1", "ff1_b"), ("W2", "ff2_w"), ("b2", "ff2_b"))]
    table = steps_table(t, [("Input", "Xn"), ("Widen", "Z"), ("ReLU", "A"), ("Narrow", "out")])
    return ExampleResult(weights + [table], WORKED_SOURCE)


def _ffn_loss(params, Xn, dOut):
    return float((ffn_forward(Xn, params, "b0.")[0] * dOut).sum())


def ffn_backward_gradcheck():
    params = ffn_worked_params()
    Xn = np.array(FFN_WORKED_XN, dtype=float)
    _, cache = ffn_forward(Xn, params, "b0.")
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXn = ffn_backward(FFN_WORKED_DOUT, cache, params, "b0.", grads)
    rows = [(f'grads["b0.{k}"]', grads["b0." + k],
             numerical_grad(lambda: _ffn_loss(params, Xn, FFN_WORKED_DOUT), params["b0." + k]))
            for k in ("ff2_w", "ff2_b", "ff1_w", "ff1_b")]
    rows.append(("dXn", dXn, numerical_grad(lambda: _ffn_loss(params, Xn, FFN_WORKED_DOUT), Xn)))
    return ExampleResult([gradcheck_table(rows)], WORKED_SOURCE)


TINY2 = ModelConfig(**{**TINY.to_dict(), "num_layers": 2})   # the same block 0 (init_params draws it first), and a block 1
TINY2_SOURCE = f"init_params({config_label(TINY2)}, np.random.default_rng({SEED}))"


def block_input(row, values=None):
    """The hand-picked X with row `row` replaced by `values` (as np.where, so a recording of it
    keeps the typed row traced)."""
    if values is None:
        return X_HAND.copy()
    chosen = (np.arange(len(X_HAND)) == row)[:, None]
    return np.where(chosen, np.asarray(values, dtype=float), X_HAND)


def block_stepper(params, row, layer, values=None, number=fmt_number):
    """The stepper of row `row` through block `layer` (numbers formatted by `number`): this
    build's, and, with a recording's slot formatter, the template block_replay fills."""
    X = block_input(row, values)
    for earlier in range(layer):
        X, _ = block_forward(X, params, earlier, TINY2)
    t = trace_locals(block_forward, X, params, layer, TINY2)
    return stepper(t, row=row, note=f"in block {layer}", number=number, steps=[
        ("Input", "X", None, f"The residual stream entering block {layer}: row {row} of X."),
        ("First LayerNorm", "Xn", None, "Rescales the row to mean 0 and variance 1, then applies the learned scale "
                                        "and shift; attention reads this copy, the stream X is left as it was."),
        ("Attention", "att", None, "Mixes in the rows up to this one (the causal mask hides later rows); "
                                   "this is the branch's output, not yet added to anything."),
        ("First residual add", "X1", ("X", "att"), "Adds the attention output to the stream: before is X, "
                                                   "the stream being added to, and the sum is X1."),
        ("Second LayerNorm", "Xn2", None, "Normalises the new stream X1 for the feed-forward layer; X1 itself is kept."),
        ("Feed-forward", "ff", None, "Widens the row, applies ReLU and narrows it back, looking at no other row."),
        ("Second residual add", "return[0]", ("X1", "ff"), "Adds the feed-forward output to the stream X1: "
                                                           "the sum is the block's output."),
    ])


def block_forward_steps(row=1, layer=0, values=None):
    """One row through block `layer` of a two-block model; `values` (free input) replaces that
    row of the hand-picked input X before block 0."""
    params = init_params(TINY2, np.random.default_rng(SEED))
    steps = block_stepper(params, row, layer, values)
    hand = "" if values is None else f", row {row} of X replaced by {fmt_array(values)} (typed by the reader)"
    return ExampleResult([steps], TINY2_SOURCE + hand)


class _Numbers:
    """A stepper's number formatter that keeps each number it is given, in order, and writes
    its slot (site_builder/run/tape.py): the tape's outputs are the stepper's numbers."""

    def __init__(self):
        self.kept = []

    def __call__(self, x):
        self.kept.append(x)
        return f"@@{len(self.kept) - 1} fmt_number@@"


def block_replay():
    """The tape of block_forward_steps's computation, for the row values the reader types on
    any host: block_stepper recorded once per choice of row and layer (which numbers the
    stepper shows depends on both), the typed row an input, each checked at other values
    against a fresh call; and each combination's stepper with a slot for every number."""
    from site_builder.gather.playground import combo_key
    from site_builder.run.tape import bundle, check, record
    params = init_params(TINY2, np.random.default_rng(SEED))
    choices = dict(row=[1, 0, 2], layer=[0, 1])
    tapes, bodies, worst = {}, {}, 0.0
    for row in choices["row"]:
        for layer in choices["layer"]:
            def numbers(values, params, row=row, layer=layer):
                kept = _Numbers()
                block_stepper(params, row, layer, values, kept)
                return kept.kept
            key = combo_key(choices, dict(row=row, layer=layer))
            tapes[key] = record(ROOT, numbers, dict(values=X_HAND[row].copy()), dict(params=params))
            worst = max(worst, check(tapes[key], dict(values=np.array([3.0, -7.5, 0.125, 9.0])),
                                     lambda values, f=numbers: f(values, params)))
            bodies[key] = [block_stepper(params, row, layer, X_HAND[row].copy(), _Numbers())]
    return ExampleResult(bodies[combo_key(choices, dict(row=1, layer=0))], "@@source@@",
                         data=dict(tape=bundle(tapes, view="stepper", recorded=TINY2_SOURCE), bodies=bodies, worst=worst))


def _block_backward_trace(params):
    _, cache = block_forward(X_HAND.copy(), params, 0, TINY)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    return trace_locals(block_backward, DY_HAND.copy(), cache, params, 0, grads)


def block_backward_steps():
    t = _block_backward_trace(tiny_params())
    steps = stepper(t, row=1, steps=[
        ("The gradient arrives", "dY", None),
        ("Through the feed-forward branch", "dXn2", None),
        ("Through the second LayerNorm", "dX1_branch", None),
        ("Second add, reversed", "dX1", ("dY", "dX1_branch")),
        ("Through the attention branch", "dXn", None),
        ("Through the first LayerNorm", "dX_branch", None),
        ("First add, reversed", "return", ("dX1", "dX_branch")),
    ])
    return ExampleResult([steps], TINY_SOURCE)


def _matrices(t, names):
    from site_builder.run.examples import value_of
    return [matrix(label, value_of(t, name)) for label, name in names]


def block_backward_parameter_gradients():
    """What the stepper above cannot show: the parameter gradients the same backward pass adds
    to `grads`, the weight matrices whole and the vectors as one table."""
    params = tiny_params()
    _, cache = block_forward(X_HAND.copy(), params, 0, TINY)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    block_backward(DY_HAND.copy(), cache, params, 0, grads)
    ours = [k for k in grads if k.startswith("b0.")]
    blocks = [matrix(f"grads['{k}']", grads[k]) for k in ours if grads[k].ndim == 2]
    blocks.append(table(["Vector", "Gradient"], [[f"grads['{k}']", fmt_array(grads[k])] for k in ours if grads[k].ndim == 1]))
    return ExampleResult(blocks, TINY_SOURCE)


def block_backward_identity_only():
    params = tiny_params()
    params["b0.ln1_g"][:] = 0.0
    params["b0.ln2_g"][:] = 0.0
    t = _block_backward_trace(params)
    names = [("dX1_branch", "dX1_branch"), ("dX_branch", "dX_branch"), ("dX", "return")]
    return ExampleResult(_matrices(t, names), TINY_SOURCE + ", then ln1_g and ln2_g set to 0")


def _block_loss(params, X):
    return float((block_forward(X, params, 0, TINY)[0] * DY_HAND).sum())


def block_backward_gradcheck():
    params = tiny_params()
    X = X_HAND.copy()
    _, cache = block_forward(X, params, 0, TINY)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dX = block_backward(DY_HAND, cache, params, 0, grads)
    names = ["b0.ln1_g", "b0.wq", "b0.wo", "b0.ln2_b", "b0.ff1_w", "b0.ff2_w"]
    rows = [(f'grads["{k}"]', grads[k], numerical_grad(lambda: _block_loss(params, X), params[k]))
            for k in names]
    rows.append(("dX", dX, numerical_grad(lambda: _block_loss(params, X), X)))
    return ExampleResult([gradcheck_table(rows)], TINY_SOURCE)


def facts():
    """For prose: counts and sizes the code tells. The caches block_forward returns, the
    parameter gradients ffn_backward adds, and how many times smaller ReLU's boolean mask is
    than Z at the documented dtype."""
    params = tiny_params()
    _, cache = block_forward(X_HAND.copy(), params, 0, TINY)
    Xn = np.array(FFN_WORKED_XN, dtype=float)
    worked = ffn_worked_params()
    _, c_ffn = ffn_forward(Xn, worked, "b0.")
    grads = {k: np.zeros_like(v) for k, v in worked.items()}
    ffn_backward(np.array(FFN_WORKED_DOUT, dtype=float), c_ffn, worked, "b0.", grads)
    touched = [k for k, v in grads.items() if np.any(v)]
    dtype = np.dtype(TINY.dtype)          # the default: TINY leaves it as ModelConfig sets it
    return ExampleResult([], TINY_SOURCE, data=dict(
        caches=len(cache), ffn_grads=len(touched),
        worked_in=worked["b0.ff1_w"].shape[0], worked_hidden=worked["b0.ff1_w"].shape[1],
        worked_out=worked["b0.ff2_w"].shape[1], worked_negative=int((c_ffn["positive"] == 0).sum()), dtype=dtype.name,
        mask_ratio=dtype.itemsize // c_ffn["positive"].dtype.itemsize))
