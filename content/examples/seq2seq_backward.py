"""Examples for the backward half of the page "One training step of the 2017 transformer"
(seq2seq-step): the decoder's last LayerNorm, its feed-forward network, cross-attention, masked
self-attention and the embeddings, each with the values of the real backward pass and a
gradient check; then "the one pattern" of every linear layer, the sizes against the paper's base
model, and a closing summary.

The hand derivation (../shared/seeds/000_d9398bb8a994875b.txt) gives formulas here, not numbers.
Every value below is what the model's own backward functions computed in one run, recorded by
`trace_calls` (no formula is re-derived in this file): `record("exact")` traces
`loss_and_grads` from the ids, as training runs it; `record("hand")` runs the same
`decoder_backward` and `encoder_backward` from the derivation's rounded inputs (seq2seq_step's two
runs). Both take the loss over both target positions, as `loss_and_grads` does.

Trade-off: the calls are told apart by their arguments (`p` of mha_backward and ffn_backward) and,
for layer_norm_backward, by the order `decoder_layer_backward` calls them (ln3, ln2, ln1); the
page's tests recompute each recorded value with direct calls, so a change of order fails them.
"""
import re

import numpy as np

from model import seq2seq as s2s
from model.gradcheck import numerical_grad
from model.ops import cross_entropy_forward, cross_entropy_backward, layer_norm_forward
from model.transformer import ffn_forward
from model.attention import causal_mask, mha_forward
from site_builder.run.examples import ExampleResult, table, gradcheck_table, fmt_array, fmt_number, value_at
from site_builder.run.trace import trace_calls
from model.config import Seq2SeqConfig
from model.optim import AdamW, noam_lr
from content.examples.seq2seq_step import (ADAM_KW, WARMUP, NOT_GIVEN, SOURCE, SRC_IDS, TGT_IN, TGT_OUT, hand_run, exact_run, hand_text,
                                           toy_cfg, toy_params, shape_text, fmt_sci)

RUN_COLS = ["Step", "Code", "This code, from the derivation's inputs", "This code, exact inputs", "Shape"]
RUN_NAMES = ("hand", "exact")
NO_VALUE = "does not apply"           # the derivation's inputs X and Y are given arrays: no embedding table
TARGETS = ["model.ops.layer_norm_backward", "model.transformer.ffn_backward", "model.ops.relu_backward",
           "model.attention.mha_backward", "model.ops.softmax_backward", "model.ops.linear_backward",
           "model.seq2seq.embed_backward", "model.seq2seq.output_backward", "model.ops.cross_entropy_backward",
           "model.seq2seq.decoder_layer_backward", "model.seq2seq.encoder_layer_backward"]
LN_ORDER = ("dec0.ln3", "dec0.ln2", "dec0.ln1", "enc0.ln2", "enc0.ln1")   # the order backward calls them
_MEMO = {}


def hand_step(params):
    """The derivation's route backward: the loss over both positions, then the real decoder_backward
    and encoder_backward (its inputs X and Y are given arrays, so there is no embedding to reach)."""
    cfg = toy_cfg()
    _, cache, logits = hand_run(params)
    loss, c_ce = cross_entropy_forward(logits, TGT_OUT, cfg.label_smoothing)
    dlogits = cross_entropy_backward(1.0, c_ce)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dY, dmemory = s2s.decoder_backward(dlogits, cache["dec"]["dec"], params, grads)
    dX = s2s.encoder_backward(dmemory, cache["enc"]["enc"], params, grads)
    return loss, grads, dY, dX


def exact_step(params):
    """The model's own route: loss_and_grads from the ids."""
    return s2s.loss_and_grads(params, SRC_IDS, TGT_IN, TGT_OUT, toy_cfg())


def loss_of(name, params):
    """The run's loss as a function of params (for central differences): the same forward, no backward."""
    cfg = toy_cfg()
    if name == "exact":
        logits, _ = s2s.forward(params, SRC_IDS, TGT_IN, cfg)
    else:
        logits = hand_run(params)[2]
    return cross_entropy_forward(logits, TGT_OUT, cfg.label_smoothing)[0]


def record(name):
    """One run's backward pass: {loss, grads, forward trace, each traced call by role}."""
    if name in _MEMO:
        return _MEMO[name]
    params = toy_params()
    entry = exact_step if name == "exact" else hand_step
    result, calls = trace_calls(entry, TARGETS, params)
    forward_trace = (exact_run if name == "exact" else hand_run)(params)[0]
    lns = calls["model.ops.layer_norm_backward"]
    assert len(lns) == len(LN_ORDER), [t.call_index for t in lns]
    rec = dict(loss=result[0], grads=result[1], params=params, fwd=forward_trace, calls=calls,
               ln=dict(zip(LN_ORDER, lns)),
               mha={t.arguments["p"]: t for t in calls["model.attention.mha_backward"]},
               ffn={t.arguments["p"]: t for t in calls["model.transformer.ffn_backward"]},
               linear=linear_layers(calls))
    rec["softmax"] = {p: nearest(calls["model.ops.softmax_backward"], t) for p, t in rec["mha"].items()}
    rec["relu"] = {p: nearest(calls["model.ops.relu_backward"], t) for p, t in rec["ffn"].items()}
    rec["embed"] = {t.arguments["c"]["table"]: t for t in calls.get("model.seq2seq.embed_backward", [])}
    embed = rec["embed"]
    rec["dY"] = embed["tgt_emb"].arguments["dX"] if embed else result[2]     # the decoder input's gradient
    rec["dX"] = embed["src_emb"].arguments["dX"] if embed else result[3]     # the encoder input's gradient
    rec["dec"] = calls["model.seq2seq.decoder_layer_backward"][0]
    rec["enc"] = calls["model.seq2seq.encoder_layer_backward"][0]
    _MEMO[name] = rec
    return rec


def nearest(traces, caller):
    """The first of `traces` that started after `caller` did (the call it made)."""
    return min((t for t in traces if t.call_index > caller.call_index), key=lambda t: t.call_index)
# A traced call's `result` is the returned object itself, which a caller may change in place afterwards
# (mha_backward divides softmax_backward's dS by sqrt(d_k)): read values from the snapshots of its locals.


PARAM_ARG = re.compile(r'params\[(?:p \+ )?"(\w+)"\]')


def linear_layers(calls):
    """{parameter name: linear_backward's trace} for every linear layer of the step. The name is read
    from the line of the caller that made the call (`params[p + "wq"]`), with the caller's prefix p."""
    callers = sorted((t for q in ("model.attention.mha_backward", "model.transformer.ffn_backward",
                                  "model.seq2seq.output_backward") for t in calls.get(q, [])),
                     key=lambda t: t.call_index)
    linear = sorted(calls["model.ops.linear_backward"], key=lambda t: t.call_index)
    out = {}
    for caller in callers:
        later = [c for c in callers if c.call_index > caller.call_index]
        end = min((c.call_index for c in later), default=float("inf"))
        mine = [t for t in linear if caller.call_index < t.call_index < end]
        lines = [s for s in caller.steps if "linear_backward(" in s.code]
        assert len(mine) == len(lines), (caller.function, len(mine), len(lines))
        for t, step in zip(mine, lines):
            out[caller.arguments.get("p", "") + PARAM_ARG.search(step.code).group(1)] = t
    return out


def fmt_tiny(a):
    """A value that is 0 up to rounding, in the digits that show how close: [1.4e-17, 0.0e+00]."""
    a = np.asarray(a)
    return f"{float(a) + 0.0:.1e}" if a.ndim == 0 else "[" + ", ".join(fmt_tiny(x) for x in a) + "]"


def runs_table(spec, caption=""):
    """spec: (label, code, getter(record) -> value[, formatter]). One row per step, both runs side by side."""
    rows, values = [], {}
    for label, code, get, *fmt in spec:
        show = fmt[0] if fmt else fmt_array
        vh, ve = get(record("hand")), get(record("exact"))
        shown = [NO_VALUE if v is None else show(v) for v in (vh, ve)]
        rows.append([label, code, *shown, shape_text(ve if vh is None else vh)])
        values[code] = (np.asarray(vh), np.asarray(ve))
    return table(RUN_COLS, rows, caption), values


def param_checks(names):
    """Gradient-check rows for parameters: the backward pass's grads against central differences of
    the same run's loss, in both runs."""
    rows = []
    for run in RUN_NAMES:
        rec = record(run)
        params = {k: v.copy() for k, v in rec["params"].items()}
        for name in names:
            numeric = numerical_grad(lambda: loss_of(run, params), params[name])
            rows.append((f'grads["{name}"], {WHICH[run]}', rec["grads"][name], numeric))
    return rows


WHICH = dict(hand="derivation's inputs", exact="exact inputs")


def vjp_numeric(forward, x, upstream):
    """Central differences of <upstream, forward(x)> in x: a step's input gradient as the step sees the
    loss, with the gradient that reached its output held at the recorded value."""
    x = np.array(x, dtype=float)
    return numerical_grad(lambda: float((forward(x.copy()) * upstream).sum()), x)


# ----------------------------------------------------------------------------- the last LayerNorm

def ln3_backward():
    ln = lambda r: r["ln"]["dec0.ln3"]
    tab, values = runs_table([
        ("dL/dYn₃ = dL/dH, from output_backward", "dY (argument)", lambda r: ln(r).arguments["dY"]),
        ("x̂, the normalised rows", 'c["Xhat"]', lambda r: ln(r).arguments["c"]["Xhat"]),
        ("s = 1/σ of each row", 'c["s"]', lambda r: ln(r).arguments["c"]["s"][:, 0]),
        ("dγ₃ = Σₜ dY ⊙ x̂", "dg", lambda r: value_at(ln(r), "dg")),
        ("dβ₃ = Σₜ dY", "db", lambda r: value_at(ln(r), "db")),
        ("dx̂ = dY ⊙ γ", "dXhat", lambda r: value_at(ln(r), "dXhat", 1)),
        ("mean of dx̂, per row", "mean_dXhat", lambda r: value_at(ln(r), "mean_dXhat")[:, 0]),
        ("mean of dx̂ ⊙ x̂, per row", "mean_dXhat_Xhat", lambda r: value_at(ln(r), "mean_dXhat_Xhat")[:, 0]),
        ("dL/dY3 = s (dx̂ - mean(dx̂) - x̂ mean(dx̂ ⊙ x̂))", "dX", lambda r: value_at(ln(r), "dX")),
        ("Σⱼ dL/dY3, per row: the mean direction removed", "dX.sum(-1)", lambda r: value_at(ln(r), "dX").sum(-1), fmt_tiny),
        ("Σⱼ dL/dY3 ⊙ x̂, per row: the scale direction removed", "(dX * Xhat).sum(-1)",
         lambda r: (value_at(ln(r), "dX") * ln(r).arguments["c"]["Xhat"]).sum(-1), fmt_tiny),
    ], caption="The first layer_norm_backward call of the backward pass: decoder_layer_backward's ln3. "
               "Recorded from the run; γ = 1, so dx̂ = dY here.")
    rows = []
    for run in RUN_NAMES:
        rec = record(run)
        t = ln(rec)
        Y3 = rec["fwd"]["dec0.Y3"]
        g, b = rec["params"]["dec0.ln3_g"], rec["params"]["dec0.ln3_b"]
        numeric = vjp_numeric(lambda x: layer_norm_forward(x, g, b, toy_cfg().ln_eps)[0], Y3, t.arguments["dY"])
        rows.append((f"dL/dY3, {WHICH[run]}", value_at(t, "dX"), numeric))
    rows += param_checks(["dec0.ln3_g", "dec0.ln3_b"])
    return ExampleResult([tab, gradcheck_table(rows)], SOURCE + "; layer_norm_backward's call for dec0.ln3, "
                         "recorded in the real backward pass",
                         data=dict(values=values, checks=rows, config=toy_cfg(),
                                   lengths=dict(S=len(SRC_IDS), T=len(TGT_IN))))


# ----------------------------------------------------------------------------- the feed-forward network

def units(mask):
    """The widened units a boolean gate lets through, row by row: 'row 0: 0 1 4 5; row 1: 2 3 6 7'."""
    return "; ".join(f"row {t}: " + (" ".join(str(j) for j in np.flatnonzero(m)) or "none")
                     for t, m in enumerate(np.atleast_2d(mask)))


def ffn_backward_step():
    f = lambda r: r["ffn"]["dec0."]
    gate = lambda r: f(r).arguments["c"]["positive"]
    tab, values = runs_table([
        ("dL/dFFN, the gradient reaching the network's output: dL/dY3", "dOut (argument)", lambda r: f(r).arguments["dOut"]),
        ("Z > 0, the ReLU gate of each widened unit (1 = open)", 'c["positive"]', lambda r: gate(r).astype(float)),
        ("The units the gate lets through", 'np.flatnonzero(c["positive"][t])', gate, units),
        ("dA = dOut W₂ᵀ, before the gate", "dA", lambda r: value_at(f(r), "dA")),
        ("dZ = dA ⊙ 1[Z > 0], after the gate", "dZ", lambda r: value_at(f(r), "dZ")),
        ("Gradient the gate blocks: |dA| summed where Z ≤ 0", "np.abs(dA[~positive]).sum()",
         lambda r: np.abs(value_at(f(r), "dA")[~gate(r)]).sum()),
        ("dW₂ = Aᵀ dOut", "dW2", lambda r: value_at(f(r), "dW2")),
        ("db₂ = Σₜ dOut", "db2", lambda r: value_at(f(r), "db2")),
        ("dW₁ = Xₙᵀ dZ", "dW1", lambda r: value_at(f(r), "dW1")),
        ("dXₙ = dZ W₁ᵀ, the network's input gradient", "dXn", lambda r: value_at(f(r), "dXn")),
        ("dL/dYn2 = dY3 + dXn: the residual path plus the network's", "dYn2 (in decoder_layer_backward)",
         lambda r: value_at(r["dec"], "dYn2")),
    ], caption="The ffn_backward call for dec0. (the decoder's network), recorded. W₁ = [I | I] copies each row "
               "twice, so units j and j + d_model share a gate.")
    rows = []
    for run in RUN_NAMES:
        rec = record(run)
        t, params = f(rec), rec["params"]
        numeric = vjp_numeric(lambda x: ffn_forward(x, params, "dec0.")[0], rec["fwd"]["dec0.Yn2"], t.arguments["dOut"])
        rows.append((f"dXn, {WHICH[run]}", value_at(t, "dXn"), numeric))
    rows += param_checks(["dec0.ff1_w", "dec0.ff1_b", "dec0.ff2_w", "dec0.ff2_b"])
    closed = {run: int((~gate(record(run))).sum()) for run in RUN_NAMES}
    return ExampleResult([tab, gradcheck_table(rows)], SOURCE + "; ffn_backward's call for dec0., recorded",
                         data=dict(values=values, checks=rows, closed=closed, config=toy_cfg(),
                                   gate={run: gate(record(run)) for run in RUN_NAMES},
                                   lengths=dict(S=len(SRC_IDS), T=len(TGT_IN))))


# ----------------------------------------------------------------------------- cross-attention

def softmax_jacobian(P_row):
    """The Jacobian of the model's softmax_forward at one row, by central differences: J[i, j] = dP_i / dS_j.
    The code never forms it; it is here to show what softmax_backward applies without forming it."""
    from model.ops import softmax_forward
    S = np.log(P_row)                            # a row of scores with these weights (softmax is shift-invariant)
    return np.stack([numerical_grad(lambda: float(softmax_forward(S.copy())[0][i]), S) for i in range(S.size)])


def attention_rows(p, head=0):
    """The rows of one attention's backward, head `head`, both runs: the recorded locals of mha_backward."""
    m = lambda r: r["mha"][p]
    sm = lambda r: r["softmax"][p]
    return [
        ("dL/dO, the gradient reaching the heads' mix: dOut W_Oᵀ", "dO", lambda r: value_at(m(r), "dO")),
        (f"dV = Aᵀ dO, head {head}", f"dVh[{head}]", lambda r: value_at(m(r), "dVh")[head]),
        (f"dA = dO Vᵀ, head {head}", f"dA[{head}]", lambda r: value_at(m(r), "dA")[head]),
        (f"dA - Σⱼ A dA, head {head} (softmax_backward's first line)", f"dS[{head}] (in softmax_backward, line 1)",
         lambda r: value_at(sm(r), "dS", 1)[head]),
        (f"dL/dS = A ⊙ (dA - Σⱼ A dA), head {head}", f"softmax_backward(dA, A)[{head}]", lambda r: value_at(sm(r), "dS")[head]),
        ("Each row of dL/dS sums to 0, every head", "softmax_backward(dA, A).sum(-1)",
         lambda r: value_at(sm(r), "dS").sum(-1), fmt_tiny),
        (f"dS / √d_k, head {head}", f"dS[{head}]", lambda r: value_at(m(r), "dS")[head]),
        (f"dQ = (dS/√d_k) K, head {head}", f"dQh[{head}]", lambda r: value_at(m(r), "dQh")[head]),
        (f"dK = (dS/√d_k)ᵀ Q, head {head}", f"dKh[{head}]", lambda r: value_at(m(r), "dKh")[head]),
        ("dW_Q = Xᵀ dQ, the heads side by side", "dWq", lambda r: value_at(m(r), "dWq")),
        ("dW_K = Xₖᵥᵀ dK", "dWk", lambda r: value_at(m(r), "dWk")),
        ("dW_V = Xₖᵥᵀ dV", "dWv", lambda r: value_at(m(r), "dWv")),
        ("dW_O = Oᵀ dOut", "dWo", lambda r: value_at(m(r), "dWo")),
        ("db_K = Σ dK: 0, because each row of dS sums to 0", "dbk", lambda r: value_at(m(r), "dbk"), fmt_tiny),
        ("dL/dXq, the queries' input gradient", "dXq", lambda r: value_at(m(r), "dXq")),
        ("dL/dXₖᵥ = dXk + dXv, the keys' and values' input gradient", "dXk + dXv",
         lambda r: value_at(m(r), "dXk") + value_at(m(r), "dXv")),
    ]


def jacobian_table(p, head=0):
    """Row by row: the softmax Jacobian at A's row (central differences of softmax_forward), J dA, and the
    recorded softmax_backward result, which applies it without forming J."""
    rows = []
    for run in RUN_NAMES:
        rec = record(run)
        sm = rec["softmax"][p]
        A, dA = sm.arguments["P"][head], sm.arguments["dP"][head]
        for i in range(A.shape[0]):
            J = softmax_jacobian(A[i])
            rows.append([WHICH[run], f"row {i}", fmt_array(A[i]), fmt_array(J), fmt_array(J @ dA[i]),
                         fmt_array(value_at(sm, "dS")[head, i])])
    return table(["Run", "Row i", "Aᵢ", "Jᵢ = ∂Aᵢ/∂Sᵢ (central differences)", "Jᵢ dAᵢ", "softmax_backward, row i"],
                 rows, caption=f"Head {head}. Jᵢ is symmetric and each of its rows sums to 0 (up to the differences' "
                               "error); softmax_backward gives Jᵢ dAᵢ as Aᵢ ⊙ (dAᵢ - Aᵢ · dAᵢ).")


def decoder_inputs(run):
    """The decoder's input Y and the memory, as the run's forward pass made them."""
    fwd = record(run)["fwd"]
    return fwd["dec0.Y"], fwd["enc0.Xn2"]


def memory_check(run):
    """dL/dmemory against central differences of the loss as decode_forward's function of the memory."""
    rec, cfg = record(run), toy_cfg()
    Y, memory = decoder_inputs(run)
    memory = memory.copy()
    f = lambda: cross_entropy_forward(s2s.decoder_forward(Y, memory, rec["params"], cfg)[0], TGT_OUT,
                                      cfg.label_smoothing)[0]
    m = rec["mha"]["dec0.cross."]
    return (f"dL/dmemory, {WHICH[run]}", value_at(m, "dXk") + value_at(m, "dXv"), numerical_grad(f, memory))


def cross_backward():
    p = "dec0.cross."
    tab, values = runs_table([
        ("dL/dY2: dL/dYn2 through the second LayerNorm (ln2)", "dY2 (in decoder_layer_backward)",
         lambda r: value_at(r["dec"], "dY2")),
        ("A, head 0 (forward)", 'c["A"][0]', lambda r: r["mha"][p].arguments["c"]["A"][0]),
        *attention_rows(p),
        ("dL/dDEC₁ = dY2 + dXq: the residual path plus the queries'", "dYn1 (in decoder_layer_backward)",
         lambda r: value_at(r["dec"], "dYn1")),
    ], caption="The mha_backward call for dec0.cross., recorded, and its softmax_backward call. The keys' bias "
               "never gets a gradient: adding a constant to every key adds the same number to a whole row of scores.")
    rows = [memory_check(run) for run in RUN_NAMES]
    for run in RUN_NAMES:
        rec = record(run)
        m, params = rec["mha"][p], rec["params"]
        Y, memory = decoder_inputs(run)
        numeric = vjp_numeric(lambda x: mha_forward(x, memory, params, p, toy_cfg().num_heads)[0],
                              rec["fwd"]["dec0.Yn1"], m.arguments["dOut"])
        rows.append((f"dL/dXq, {WHICH[run]}", value_at(m, "dXq"), numeric))
    rows += param_checks([p + "wq", p + "wk", p + "wv", p + "wo"])
    return ExampleResult([tab, jacobian_table(p), gradcheck_table(rows)],
                         SOURCE + "; mha_backward's call for dec0.cross., recorded",
                         data=dict(values=values, checks=rows, config=toy_cfg(),
                                   lengths=dict(S=len(SRC_IDS), T=len(TGT_IN))))


# ----------------------------------------------------------------------------- masked self-attention

def masked_backward():
    p = "dec0.self."
    m = lambda r: r["mha"][p]
    hidden = lambda a: a[:, ~causal_mask(a.shape[-1])]          # every head's entries above the diagonal
    tab, values = runs_table([
        ("dL/dY1: dL/dDEC₁ through the first LayerNorm (ln1)", "dY1 (in decoder_layer_backward)",
         lambda r: value_at(r["dec"], "dY1")),
        ("A, head 0 (forward): the hidden weight is 0", 'c["A"][0]', lambda r: m(r).arguments["c"]["A"][0]),
        ("dA = dO Vᵀ, head 0: the hidden entry gets a gradient here", "dA[0]", lambda r: value_at(m(r), "dA")[0]),
        ("dL/dS, head 0: A ⊙ (...) is 0 where A is", "softmax_backward(dA, A)[0]", lambda r: value_at(r["softmax"][p], "dS")[0]),
        ("dL/dS at every hidden entry, every head", "dS[:, ~causal_mask(T)]", lambda r: hidden(value_at(m(r), "dS")), fmt_tiny),
        ("Exactly 0, in every head", "np.all(dS[:, ~causal_mask(T)] == 0)",
         lambda r: np.all(hidden(value_at(m(r), "dS")) == 0.0), yes_no),
        ("dQ, head 0", "dQh[0]", lambda r: value_at(m(r), "dQh")[0]),
        ("dK = (dS/√d_k)ᵀ Q, head 0: 0, because the chosen W_Q makes Q = 0", "dKh[0]", lambda r: value_at(m(r), "dKh")[0]),
        ("dW_Q = Yᵀ dQ", "dWq", lambda r: value_at(m(r), "dWq")),
        ("dW_K = Yᵀ dK", "dWk", lambda r: value_at(m(r), "dWk")),
        ("dW_V = Yᵀ dV", "dWv", lambda r: value_at(m(r), "dWv")),
        ("dL/dY = dY1 + dYq + dYkv: the residual, the queries, the keys and values", "return[0] of decoder_layer_backward",
         lambda r: r["dY"]),
    ], caption="The mha_backward call for dec0.self., recorded. Each run's loss covers both positions; the table of "
               "'Where the gradient goes' below puts the loss on position 0 alone.")
    rows = []
    for run in RUN_NAMES:
        rec = record(run)
        params = rec["params"]
        Y = rec["fwd"]["dec0.Y"]
        numeric = vjp_numeric(lambda x: mha_forward(x, x, params, p, toy_cfg().num_heads, causal_mask(len(x)))[0],
                              Y, m(rec).arguments["dOut"])
        rows.append((f"dYq + dYkv, {WHICH[run]}", value_at(m(rec), "dXq") + value_at(m(rec), "dXk") + value_at(m(rec), "dXv"),
                     numeric))
    rows += param_checks([p + "wq", p + "wk", p + "wv", p + "wo"])
    hidden_dS = {run: hidden(value_at(m(record(run)), "dS")) for run in RUN_NAMES}
    return ExampleResult([tab, gradcheck_table(rows)], SOURCE + "; mha_backward's call for dec0.self., recorded",
                         data=dict(values=values, checks=rows, hidden_dS=hidden_dS, config=toy_cfg(),
                                   lengths=dict(S=len(SRC_IDS), T=len(TGT_IN))))


def yes_no(b):
    return "yes" if bool(b) else "no"


# ----------------------------------------------------------------------------- the embeddings

def embed_backward_step():
    cfg = toy_cfg()
    e = lambda r, table: r["embed"].get(table)
    tab, values = runs_table([
        ("dL/dY, the decoder input's gradient", "dX (argument, target)", lambda r: r["dY"]),
        ("dE = dY · √d_model (the forward pass scaled the rows)", "dE (target)",
         lambda r: value_at(e(r, "tgt_emb"), "dE") if r["embed"] else None),
        ("grads[\"tgt_emb\"]: each row the sum over the positions that looked it up", 'grads["tgt_emb"]',
         lambda r: r["grads"]["tgt_emb"] if r["embed"] else None),
        ("dL/dmemory, into the encoder", "dmemory", lambda r: value_at(r["mha"]["dec0.cross."], "dXk")
         + value_at(r["mha"]["dec0.cross."], "dXv")),
        ("dL/dX, the encoder input's gradient (after encoder_layer_backward)", "dX (argument, source)", lambda r: r["dX"]),
        ("grads[\"src_emb\"]", 'grads["src_emb"]', lambda r: r["grads"]["src_emb"] if r["embed"] else None),
        ("Rows of the target table no position looked up (am, EOS): their gradient", 'grads["tgt_emb"][2:]',
         lambda r: r["grads"]["tgt_emb"][2:] if r["embed"] else None),
    ], caption="The embed_backward calls of loss_and_grads, recorded (the decoder's first, then the encoder's). The "
               "derivation's route starts from given X and Y, so it has no table to reach: its X and Y gradients "
               "are the end of its backward pass.")
    rows = []
    for run in RUN_NAMES:
        rec = record(run)
        params = {k: v.copy() for k, v in rec["params"].items()}
        if run == "exact":
            rows += [(f'grads["{k}"], exact inputs', rec["grads"][k], numerical_grad(lambda: loss_of(run, params), params[k]))
                     for k in ("tgt_emb", "src_emb")]
            continue
        X, Y = rec["fwd"]["enc0.X"].copy(), rec["fwd"]["dec0.Y"].copy()
        f = lambda: cross_entropy_forward(s2s.decoder_forward(Y, s2s.encoder_forward(X, params, cfg)[0], params, cfg)[0],
                                          TGT_OUT, cfg.label_smoothing)[0]
        rows += [("dL/dY, derivation's inputs", rec["dY"], numerical_grad(f, Y)),
                 ("dL/dX, derivation's inputs", rec["dX"], numerical_grad(f, X))]
    return ExampleResult([tab, gradcheck_table(rows)], SOURCE + "; embed_backward's calls, recorded",
                         data=dict(values=values, checks=rows, config=cfg, lengths=dict(S=len(SRC_IDS), T=len(TGT_IN))))


# ----------------------------------------------------------------------------- the one pattern

def gap(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def one_pattern():
    """For every linear layer of the exact run's step: the recorded X and G = dL/dY of its
    linear_backward call, the pattern's X^T G and G W^T, against the gradient loss_and_grads returned,
    the dX the call returned, and central differences of the whole loss in W."""
    rec = record("exact")
    params = {k: v.copy() for k, v in rec["params"].items()}
    rows, gaps = [], {}
    for name, t in rec["linear"].items():
        X, G, W = (t.arguments[k] for k in ("X", "dY", "W"))
        X2, G2 = X.reshape(-1, X.shape[-1]), G.reshape(-1, G.shape[-1])
        pattern_dW, pattern_dX = X2.T @ G2, (G2 @ W.T).reshape(X.shape)
        numeric = numerical_grad(lambda: loss_of("exact", params), params[name])
        gaps[name] = dict(dW=gap(rec["grads"][name], pattern_dW), dX=gap(value_at(t, "dX"), pattern_dX),
                          numeric=gap(pattern_dW, numeric))
        rows.append([f'{name}', f"{X.shape} · {G.shape}", shape_text(W),
                     f"{gaps[name]['dW']:.1e}", f"{gaps[name]['dX']:.1e}", f"{gaps[name]['numeric']:.1e}"])
    tab = table(["Weight W", "X, G", "W's shape", "|grads[W] - XᵀG|, largest", "|dX - G Wᵀ|, largest",
                 "|XᵀG - central differences|, largest"], rows,
                caption=f"Every linear_backward call of loss_and_grads ({len(rows)}), in the order the backward pass made "
                        "them; each named by the parameter its caller passed. X and G are the call's recorded arguments; "
                        "XᵀG and G Wᵀ are formed here, from them.")
    return ExampleResult([tab], SOURCE + "; every linear_backward call of loss_and_grads, recorded",
                         data=dict(gaps=gaps, count=len(rows),
                                   worst_dW=max(g["dW"] for g in gaps.values()),
                                   worst_dX=max(g["dX"] for g in gaps.values()),
                                   worst_numeric=max(g["numeric"] for g in gaps.values())))


# ----------------------------------------------------------------------------- the toy against the paper

# The paper's base model, as a config of this code: Vaswani et al. 2017, Table 3 ("base": N = 6,
# d_model = 512, d_ff = 2048, h = 8, d_k = d_v = 64, eps_ls = 0.1) and Section 5.1 (a shared
# source-target vocabulary of about 37000 tokens). Quoted numbers, not computed: the page says so.
PAPER_BASE = Seq2SeqConfig(src_vocab_size=37000, tgt_vocab_size=37000, d_model=512, num_heads=8, d_ff=2048,
                           num_enc_layers=6, num_dec_layers=6, label_smoothing=0.1, share_vocab=True)
SIZE_ROWS = [("d_model, the width of every row", "d_model", "base_d_model"),
             ("h, the heads of each attention", "num_heads", "base_heads"),
             ("d_k = d_v = d_model / h, one head's width", "head_dim", "base_dk"),
             ("d_ff, the feed-forward network's width", "d_ff", "base_d_ff"),
             ("N, encoder layers", "num_enc_layers", "base_layers"),
             ("N, decoder layers", "num_dec_layers", "base_layers"),
             ("V, the target vocabulary", "tgt_vocab_size", "base_vocab"),
             ("ε_ls, the label smoothing", "label_smoothing", None)]


def sizes():
    toy = toy_cfg()
    rows, ratios = [], {}
    for label, field, key in SIZE_ROWS:
        a, b = getattr(toy, field), getattr(PAPER_BASE, field)
        quoted = hand_text(key) if key else NOT_GIVEN
        agrees = NOT_GIVEN if not key else yes_no(float(quoted) == float(b))
        rows.append([label, f"cfg.{field}", str(a), str(b), quoted, agrees])
        ratios[field] = b / a
    count = sum(v.size for v in s2s.init_params(toy, np.random.default_rng(0)).values())
    tab = table(["Size", "Config field", "The toy (toy_cfg(), as the examples ran)",
                 "The paper's base model (quoted, as PAPER_BASE)", "The derivation's table (quoted)",
                 "The derivation agrees with the paper"], rows,
                caption="The toy's column is read from the config every example of this page ran with. The paper's is "
                        "a Seq2SeqConfig built from the paper's Table 3 and Section 5.1 (the page quotes it): typed "
                        "numbers of the paper, not measured here.")
    return ExampleResult([tab], "toy_cfg() in content/examples/seq2seq_step.py and PAPER_BASE in "
                         "content/examples/seq2seq_backward.py",
                         data=dict(toy=toy, base=PAPER_BASE, ratios=ratios, toy_params=count,
                                   width_ratio=PAPER_BASE.d_model // toy.d_model, toy_width=toy.d_model,
                                   agree=all(r[5] != "no" for r in rows)))


# ----------------------------------------------------------------------------- the closing summary

def step_summary():
    """The whole step on the exact inputs: loss_and_grads, then one AdamW.step (weight decay 0, the paper's
    Adam) at the schedule's first rate for the toy's own d_model; the loss before and after, the largest
    gradients, and how far each parameter moved."""
    cfg = toy_cfg()
    rec = record("exact")
    params = {k: v.copy() for k, v in rec["params"].items()}
    before = {k: v.copy() for k, v in params.items()}
    lr = noam_lr(1, cfg.d_model, WARMUP)
    AdamW(params, lr=lr, **ADAM_KW).step(params, rec["grads"], lr)
    after_loss = loss_of("exact", params)
    moved = {k: np.abs(params[k] - before[k]) for k in params}
    largest = sorted(rec["grads"], key=lambda k: -np.abs(rec["grads"][k]).max())
    rows = []
    for k in largest:
        g = np.abs(rec["grads"][k])
        if params[k].ndim < 2:
            continue
        rows.append([k, shape_text(params[k]), fmt_sci(g.max()), fmt_sci(moved[k].max()),
                     f"{int((moved[k] > 0).sum())} of {moved[k].size}"])
    small = [k for k in largest if params[k].ndim < 2]
    rows.append([f"the {len(small)} biases, gains and shifts", "vectors",
                 fmt_sci(max(np.abs(rec["grads"][k]).max() for k in small)),
                 fmt_sci(max(moved[k].max() for k in small)),
                 f"{sum(int((moved[k] > 0).sum()) for k in small)} of {sum(moved[k].size for k in small)}"])
    tab = table(["Parameter", "Shape", "Largest |gradient|", "Largest |move|", "Entries that moved"], rows,
                caption=f"loss_and_grads on the exact inputs, then AdamW.step with weight decay 0 at "
                        f"lr = noam_lr(1, {cfg.d_model}, {WARMUP}) = {fmt_sci(lr)}. Sorted by the largest gradient.")
    still = [k for k in params if not moved[k].any()]
    facts = table(["Quantity", "Value"], [
        ["Loss before the step (exact inputs, both positions)", fmt_number(rec["loss"])],
        ["Loss before the step (the derivation's inputs)", fmt_number(record("hand")["loss"])],
        ["Loss after one Adam step (exact inputs)", fmt_number(after_loss)],
        ["Change of the loss", fmt_sci(after_loss - rec["loss"])],
        ["Largest gradient entry", f'{largest[0]}: {fmt_sci(np.abs(rec["grads"][largest[0]]).max())}'],
        ["Largest move of any entry", fmt_sci(max(m.max() for m in moved.values()))],
        ["Parameters that did not move at all", ", ".join(still) or "none"],
    ])
    return ExampleResult([facts, tab], SOURCE + "; loss_and_grads, then AdamW.step (weight_decay=0)",
                         data=dict(loss=rec["loss"], hand_loss=record("hand")["loss"], after=after_loss, lr=lr,
                                   largest=largest[0], largest_value=float(np.abs(rec["grads"][largest[0]]).max()),
                                   max_move=float(max(m.max() for m in moved.values())), still=still,
                                   moved={k: float(m.max()) for k, m in moved.items()}))
