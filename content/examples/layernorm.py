"""Examples for the LayerNorm page. Each returns an ExampleResult built from real calls of
model.ops.layer_norm_forward / layer_norm_backward (and, for the real rows, of the trained model)."""

from pathlib import Path

import numpy as np

from model.config import ModelConfig
from model.data import DEFAULT_CORPUS, CharTokenizer, load_corpus
from model.ops import layer_norm_forward, layer_norm_backward
from model.transformer import init_params, embed_forward, forward, block_forward
from site_builder.run.examples import (ExampleResult, gradcheck_table, table, fmt_number, fmt_array, matrix,
                                   nth_change, steps_table)
from site_builder.gather.source_index import build_index
from site_builder.run.qualnames import qualname_of
from site_builder.run.trace import call_tree, trace_locals
from content.hooks import corpus_window, run_label
from tests.fixtures import LN_B, LN_DY, LN_G, LN_X

ROOT = Path(__file__).resolve().parents[2]

EPS = ModelConfig(vocab_size=1).ln_eps          # the default cfg.ln_eps, read from the dataclass

# Hand-picked (tests/fixtures.py): two rows of d = 4 features, a scale and a shift, and dY.
X_HAND, G_HAND, B_HAND, DY_HAND = LN_X, LN_G, LN_B, LN_DY

# The rows of the epsilon experiment: an ordinary row, the same row shrunk a thousand times, a
# constant row. And one upstream gradient for all three.
EPS_ROWS = [("ordinary row", np.array([1.0, -1.0, 2.0, 0.0])),
            ("the same row times 0.001", np.array([1.0, -1.0, 2.0, 0.0]) * 1e-3),
            ("constant row", np.array([0.5, 0.5, 0.5, 0.5]))]
EPS_DY = np.array([0.2, -0.5, 0.1, 0.4])

HAND_SOURCE = f"layer_norm_forward with hand-picked X, g and b, eps = cfg.ln_eps = {EPS:g}"
WINDOW_TEXT = "To be, or not to be"               # a real line of the corpus; its first 16 characters


def _forward_trace():
    return trace_locals(layer_norm_forward, X_HAND.copy(), G_HAND, B_HAND, EPS)


FORWARD_ROWS = [("Input", "X", 0), ("Row means", "mu", 1), ("Centred rows", "Xc", 1),
                ("Biased variance, divided by d", "var", 1), ("One over the root of var + eps", "s", 1),
                ("Normalised rows", "Xhat", 1), ("Scaled by g", "Y", 1), ("Shifted by b: the output", "Y", 2)]


def forward_worked():
    t = _forward_trace()
    return ExampleResult([steps_table(t, FORWARD_ROWS)], HAND_SOURCE,
                         data=dict(values={f"{name}:{n}": (t.arguments[name] if n == 0 else
                                                           nth_change(t, name, n).locals[name])
                                           for _, name, n in FORWARD_ROWS}))


def forward_invariants():
    """Mean and variance of each row of Xhat, computed from what the code returned."""
    Y, c = layer_norm_forward(X_HAND.copy(), G_HAND, B_HAND, EPS)
    Xhat = c["Xhat"]
    var = X_HAND.var(axis=-1)
    rows = [[str(i), f"{Xhat[i].mean():.1e}", fmt_number(Xhat[i].var()),
             f"{Xhat[i].var():.12f}", f"{var[i] / (var[i] + EPS):.12f}"] for i in range(len(X_HAND))]
    return ExampleResult([table(["Row", "Mean of Xhat", "Variance of Xhat", "Variance of Xhat, 12 decimals",
                                 "var / (var + eps), 12 decimals"], rows)],
                         HAND_SOURCE, data=dict(Xhat=Xhat, var=var))


def backward_worked():
    _, c = layer_norm_forward(X_HAND.copy(), G_HAND, B_HAND, EPS)
    t = trace_locals(layer_norm_backward, DY_HAND.copy(), c, G_HAND)
    rows = [("Arrives", "dY", 0), ("Gain gradient, summed over rows", "dg", 1),
            ("Shift gradient, summed over rows", "db", 1), ("Through the gain", "dXhat", 1),
            ("Mean of dXhat, per row", "mean_dXhat", 1), ("Mean of dXhat * Xhat, per row", "mean_dXhat_Xhat", 1),
            ("Term 1 minus term 2", "dX", 2), ("Minus term 3", "dX", 3), ("Times s: dX", "dX", 4)]
    block = steps_table(t, rows)
    return ExampleResult([block], HAND_SOURCE + "; dY hand-picked",
                         data=dict(values={f"{name}:{n}": (t.arguments[name] if n == 0 else
                                                           nth_change(t, name, n).locals[name])
                                           for _, name, n in rows}))


def gain_shift_sums():
    """dg and db are sums over rows: one row of contributions per position, then the total."""
    _, c = layer_norm_forward(X_HAND.copy(), G_HAND, B_HAND, EPS)
    _, dg, db = layer_norm_backward(DY_HAND.copy(), c, G_HAND)
    Xhat = c["Xhat"]
    rows = [[f"row {i}", fmt_array(DY_HAND[i] * Xhat[i]), fmt_array(DY_HAND[i])] for i in range(len(DY_HAND))]
    rows.append(["sum over rows, by hand", fmt_array((DY_HAND * Xhat).sum(axis=0)), fmt_array(DY_HAND.sum(axis=0))])
    rows.append(["returned by layer_norm_backward", fmt_array(dg), fmt_array(db)])
    return ExampleResult([table(["", "dY * Xhat (for dg)", "dY (for db)"], rows)],
                         HAND_SOURCE + "; dY hand-picked", data=dict(dg=dg, db=db, Xhat=Xhat))


def backward_directions():
    """What the second and third terms take out of dX: each row of dX sums to 0 (a shift of the row
    changes nothing), and dX . Xhat is 0 up to eps (a rescaling of the row changes almost nothing)."""
    _, c = layer_norm_forward(X_HAND.copy(), G_HAND, B_HAND, EPS)
    dX, _, _ = layer_norm_backward(DY_HAND.copy(), c, G_HAND)
    Xhat, dXhat = c["Xhat"], DY_HAND * G_HAND
    rows = [[f"row {i}", f"{dXhat[i].sum():.4f}", f"{dX[i].sum():.1e}",
             f"{(dXhat[i] * Xhat[i]).sum():.4f}", f"{(dX[i] * Xhat[i]).sum():.1e}"] for i in range(len(dX))]
    return ExampleResult([table(["", "sum of dXhat (term 1 alone)", "sum of dX",
                                 "sum of dXhat * Xhat (term 1 alone)", "sum of dX * Xhat"], rows)],
                         HAND_SOURCE + "; dY hand-picked", data=dict(dX=dX, Xhat=Xhat))


def _eps_row(x, eps):
    with np.errstate(divide="ignore", invalid="ignore"):
        X = x[None, :].copy()
        _, c = layer_norm_forward(X, np.ones(4), np.zeros(4), eps)
        dX, _, _ = layer_norm_backward(EPS_DY[None, :].copy(), c, np.ones(4))
    return c["s"][0, 0], c["Xhat"][0], dX[0]


def eps_effect():
    """The same rows with eps = cfg.ln_eps and with eps = 0: the forward pass, then the backward pass."""
    fwd, bwd, data = [], [], {}
    for label, x in EPS_ROWS:
        s1, xh1, dx1 = _eps_row(x, EPS)
        s0, xh0, dx0 = _eps_row(x, 0.0)
        with np.errstate(invalid="ignore"):
            fwd.append([label, f"{x.var():.3e}", fmt_number(s1), fmt_number(s0),
                        fmt_array(xh1), fmt_array(xh0), fmt_number(xh1.var())])
            bwd.append([label, fmt_array(dx1), fmt_array(dx0)])
        data[label] = dict(s=(s1, s0), Xhat=(xh1, xh0), dX=(dx1, dx0))
    return ExampleResult([table(["Row", "var", "s, eps = cfg.ln_eps", "s, eps = 0", "Xhat, eps = cfg.ln_eps",
                                 "Xhat, eps = 0", "Variance of Xhat, eps = cfg.ln_eps"], fwd,
                                caption="Forward: layer_norm_forward"),
                          table(["Row", "dX, eps = cfg.ln_eps", "dX, eps = 0"], bwd,
                                caption="Backward: layer_norm_backward with the same dY for every row")],
                         f"layer_norm_forward and layer_norm_backward with g = 1, b = 0, the hand-picked rows above "
                         f"and dY = {fmt_array(EPS_DY)}; eps = cfg.ln_eps = {EPS:g}, then eps = 0",
                         data=data)


def eps_numbers(eps):
    """Every number with_eps shows, per row of EPS_ROWS: var(x), s, Xhat, var(Xhat) and dX."""
    out = []
    for _, x in EPS_ROWS:
        with np.errstate(divide="ignore", invalid="ignore"):
            s, xh, dx = _eps_row(x, eps)
            out.append(dict(var=x.var(), s=s, xhat=xh, xhat_var=xh.var(), dx=dx))
    return out


def eps_result(numbers, eps_text, number=fmt_number, array=fmt_array, sci3=lambda v: f"{v:.3e}"):
    """with_eps's table from its numbers: for this build's values, and (with slots for the
    numbers, site_builder/run/tape.py) the template a replayed eps fills in the reader's browser."""
    rows = [[label, sci3(n["var"]), number(n["s"]), array(n["xhat"]), number(n["xhat_var"]), array(n["dx"])]
            for (label, _), n in zip(EPS_ROWS, numbers)]
    return ExampleResult([table(["Row", "var", "s = 1 / sqrt(var + eps)", "Xhat", "Variance of Xhat", "dX"], rows,
                                caption=f"eps = {eps_text}")],
                         f"layer_norm_forward and layer_norm_backward with g = 1, b = 0, the hand-picked rows above, "
                         f"dY = {fmt_array(EPS_DY)} and eps = {eps_text} (the model's default is cfg.ln_eps = {EPS:g})")


def with_eps(eps=EPS):
    """The rows of the epsilon experiment at one eps: what the forward and backward passes give."""
    return eps_result(eps_numbers(eps), f"{eps:g}")


def eps_replay():
    """The tape of with_eps's computation, for an eps the reader types on any host: eps_numbers
    recorded once (no shape depends on eps), with eps an input of the tape, checked at another
    eps against a fresh call; and its table with a slot for each number."""
    from site_builder.run.tape import bundle, check, input_slot, record, slot_format, slots
    tape = record(ROOT, eps_numbers, dict(eps=np.float64(EPS)))
    worst = max(check(tape, dict(eps=e), eps_numbers) for e in (0.0, 0.37, 100.0))
    shown = slots(eps_numbers(EPS))
    template = eps_result(shown, input_slot("eps", "g", None), slot_format("fmt_number", fmt_number),
                          slot_format("fmt_array", fmt_array), slot_format("sci3", lambda v: f"{v:.3e}"))
    return ExampleResult(template.blocks, template.source,
                         data=dict(tape=bundle({"": tape}, view="slots", recorded="layernorm's eps_numbers"), worst=worst))


def real_rows():
    """What eps does to the rows the first LayerNorm of the model really receives: at
    initialisation (init_params, seed 0) and after the cached training run."""
    run, start, window, ids = corpus_window(WINDOW_TEXT)
    cfg = run.model_cfg
    rows, data = [], {}
    for label, params in ((f"init_params(seed 0)", init_params(cfg, np.random.default_rng(0))),
                          (f"trained run {run.commit_key}, step {max(run.snapshots)}", run.params)):
        X, _ = embed_forward(ids, params)
        _, c = layer_norm_forward(X.copy(), params["b0.ln1_g"], params["b0.ln1_b"], cfg.ln_eps)
        var = X.var(axis=-1)
        vh = c["Xhat"].var(axis=-1)
        rows.append([label, f"{var.min():.2e} to {var.max():.2e}", f"{np.abs(c['Xhat'].mean(axis=-1)).max():.1e}",
                     f"{vh.min():.6f} to {vh.max():.6f}", f"{np.abs(vh - var / (var + cfg.ln_eps)).max():.1e}"])
        data[label] = dict(var=var, Xhat_var=vh, Xhat_mean=c["Xhat"].mean(axis=-1))
    headers = ["Parameters", "Row variance of X (min to max)", "Largest |mean of a row of Xhat|",
               "Variance of a row of Xhat (min to max)", "Largest gap to var / (var + eps)"]
    return ExampleResult([table(headers, rows)],
                         f"embed_forward then the first layer_norm_forward of block 0 on the {len(window)} characters "
                         f"{window!r} (corpus offset {start}), {cfg.seq_len} rows of d = {cfg.emb_dim}, eps = {cfg.ln_eps:g}; "
                         f"the trained parameters are the last of {run_label(run)}",
                         data=data)


def per_pass():
    """How often one forward pass at the default config applies LayerNorm, counted while it runs
    (calls of layer_norm_forward), and from how many lines of code: the lines of the source index
    that call it, in the functions the pass ran (block_forward runs once per block)."""
    tokenizer = CharTokenizer(load_corpus(DEFAULT_CORPUS))
    cfg = ModelConfig(vocab_size=tokenizer.vocab_size)
    ids = tokenizer.encode(WINDOW_TEXT)[:cfg.seq_len]
    _, root = call_tree(forward, init_params(cfg, np.random.default_rng(0)), ids, cfg)
    ln, block = qualname_of(layer_norm_forward), qualname_of(block_forward)
    ran = {s.function for s in root.walk()}
    sites = [c for c in build_index(ROOT, ("model",)).called_by(ln) if c.caller in ran]
    return ExampleResult([], f"model.transformer.forward at {cfg} on the first {cfg.seq_len} characters of "
                             f"{WINDOW_TEXT!r}, its calls recorded; the call sites from the source index", data=dict(
        applications=sum(s.calls for s in root.walk() if s.function == ln), sites=len(sites),
        block_sites=sum(c.caller == block for c in sites), num_layers=cfg.num_layers))
