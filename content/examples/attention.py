"""Examples for the Attention page. Each returns an ExampleResult built from real calls of
model.attention (and model.ops.softmax_forward / softmax_backward); the heatmaps read the
cached training run of content/hooks.py."""

from pathlib import Path

import numpy as np

from model.attention import (split_heads, merge_heads, causal_mask, hiding, mha_forward, mha_backward,
                             attention_forward, attention_backward)
from model.config import ModelConfig
from model.gradcheck import numerical_grad
from model.ops import softmax_forward, softmax_backward
from model.transformer import init_params, forward
from site_builder.run.examples import (ExampleResult, gradcheck_table, table, figure, matrix, fmt_number, fmt_array,
                                   config_label, stepper, nth_change, steps_table)
from site_builder.render.plots import heatmap
from site_builder.run.trace import trace_locals, trace_calls
from content.hooks import ROOT, corpus_window, run_label, trained_run

SEED = 0
TINY = ModelConfig(vocab_size=5, seq_len=3, emb_dim=4, num_heads=2, ff_dim=6, num_layers=1)
TINY_SOURCE = f"init_params({config_label(TINY)}, np.random.default_rng({SEED}))"
P = "b0."
XN_HAND = np.array([[0.8, -1.2, 0.5, -0.1],      # hand-picked rows standing in for a LayerNorm's output
                    [-0.4, 1.5, 0.2, -1.3],
                    [1.1, 0.3, -1.6, 0.2]])
DOUT_HAND = np.array([[0.3, -0.2, 0.1, 0.5],     # hand-picked, not computed from a loss
                      [-0.4, 0.25, 0.6, -0.1],
                      [0.2, 0.15, -0.3, 0.35]])
XQ_CROSS = XN_HAND[:2]                            # cross-attention: 2 queries ...
XKV_CROSS = np.array([[0.5, 0.9, -1.0, 0.1],     # ... over 3 other rows (hand-picked)
                      [-1.2, 0.2, 0.4, 0.6],
                      [0.3, -0.7, 1.4, -0.4]])
DOUT_CROSS = DOUT_HAND[:2]
WINDOW_TEXT = "To be, or not to be"               # a real line of the corpus; its first seq_len characters
SHOW = {" ": "␣", "\n": "↵"}                      # how a heatmap labels characters that print as nothing
ATT_NAMES = ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo")


def tiny_params():
    return init_params(TINY, np.random.default_rng(SEED))


def zero_grads(params):
    return {k: np.zeros_like(v) for k, v in params.items()}


# ------------------------------------------------------------------ helpers

def step_value(trace, name, n=1):
    return nth_change(trace, name, n).locals[name]


# ------------------------------------------------------------------ heads

HEADS_X = np.array([[10.0 * t + j for j in range(6)] for t in range(2)])   # entry (t, j) = 10 t + j
HEADS_H = 3


def heads_split_merge():
    """Which columns go to which head: each entry of X is 10 * row + column, so it names its place."""
    Xh = split_heads(HEADS_X, HEADS_H)
    dk = HEADS_X.shape[-1] // HEADS_H
    blocks = [matrix("X", HEADS_X)]
    rows = []
    for i in range(HEADS_H):
        blocks.append(matrix(f"split_heads(X, {HEADS_H})[{i}]", Xh[i]))
        cols = slice(i * dk, (i + 1) * dk)
        rows.append([f"head {i}", f"{cols.start} to {cols.stop - 1}",
                     "yes" if np.array_equal(Xh[i], HEADS_X[:, cols]) else "NO"])
    back = merge_heads(Xh)
    blocks.append(matrix(f"merge_heads(split_heads(X, {HEADS_H}))", back))
    rows.append(["all heads, merged", f"0 to {HEADS_X.shape[-1] - 1}", "yes" if np.array_equal(back, HEADS_X) else "NO"])
    blocks.append(table(["Head", "Columns of X", "Equal to those columns of X?"], rows))
    return ExampleResult(blocks, f"split_heads and merge_heads on a hand-picked X of shape {HEADS_X.shape}, "
                                 f"h = {HEADS_H}, so dk = {dk}", data=dict(Xh=Xh, back=back))


# ------------------------------------------------------------------ mask

def mask_example():
    T = TINY.seq_len + 1
    mask = causal_mask(T)
    H = hiding(mask, "float64")
    return ExampleResult([matrix(f"causal_mask({T}) as 1 (True, visible) and 0 (False, hidden)", mask.astype(float)),
                          matrix(f"hiding(causal_mask({T}), float64)", H)],
                         f"causal_mask({T}) and hiding(mask, 'float64')", data=dict(mask=mask, H=H))


# ------------------------------------------------------------------ forward

def forward_trace():
    return trace_locals(mha_forward, XN_HAND.copy(), XN_HAND.copy(), tiny_params(), P, TINY.num_heads,
                        causal_mask(TINY.seq_len))


FORWARD_ROWS = [("Queries", "Q", 1), ("Keys", "K", 1), ("Values", "V", 1), ("Queries, per head", "Qh", 1),
                ("Scores Q K^T, per head", "S", 1), ("Divided by sqrt(dk)", "S", 2),
                ("Hidden scores set to -inf", "S", 3), ("Softmax of each row", "A", 1),
                ("Weighted sums of values, heads merged", "O", 1), ("Output projection", "out", 1)]


def forward_steps():
    """The step-through of the page: row 2 (it sees every key) after each line that makes a (T, d) array."""
    t = forward_trace()
    steps = stepper(t, row=2, steps=[("Input", "Xq", None), ("Queries", "Q", None), ("Keys", "K", None),
                                     ("Values", "V", None), ("Weighted sums of values, heads merged", "O", None),
                                     ("Output projection", "out", None)])
    return ExampleResult([steps], TINY_SOURCE + "; Xn hand-picked; causal mask")


def forward_worked():
    t = forward_trace()
    return ExampleResult([steps_table(t, FORWARD_ROWS)], TINY_SOURCE + "; Xn hand-picked; causal mask",
                         data=dict(values={f"{name}:{n}": step_value(t, name, n) for _, name, n in FORWARD_ROWS}))


def forward_head0():
    """Head 0, one matrix per step, so that the mask and the softmax can be read row by row."""
    t = forward_trace()
    blocks = [matrix("Qh[0]", step_value(t, "Qh")[0]), matrix("Kh[0]", step_value(t, "Kh")[0]),
              matrix("S[0] = Qh[0] Kh[0]^T", step_value(t, "S", 1)[0]),
              matrix("S[0] / sqrt(dk)", step_value(t, "S", 2)[0]),
              matrix("S[0] + hiding(mask)", step_value(t, "S", 3)[0]),
              matrix("A[0] = softmax of each row", step_value(t, "A")[0]),
              matrix("Vh[0]", step_value(t, "Vh")[0]),
              matrix("(A @ Vh)[0]: row t is a weighted average of the rows of Vh[0] up to t",
                     step_value(t, "A")[0] @ step_value(t, "Vh")[0])]
    return ExampleResult(blocks, TINY_SOURCE + "; Xn hand-picked; causal mask; head 0 of 2")


def forward_invariants():
    """Rows of A sum to 1; masked entries are exactly 0; visible ones are positive. On the tiny example
    and on every head of both blocks of the trained model."""
    rows, data = [], {}
    t = forward_trace()
    cases = [("tiny example above", t.result[1]["A"], causal_mask(TINY.seq_len))]
    run, _, window, ids, As = trained_weights()
    T = len(ids)
    for l, A in enumerate(As):
        cases.append((f"trained run, block {l}, all {run.model_cfg.num_heads} heads", A, causal_mask(T)))
    for label, A, mask in cases:
        hidden = A[..., ~mask]
        rows.append([label, str(A.shape), f"{np.abs(A.sum(axis=-1) - 1).max():.1e}", str(hidden.size),
                     str(int((hidden == 0.0).sum())), str(int((A[..., mask] > 0).sum())) + " of " + str(A[..., mask].size)])
        data[label] = A
    return ExampleResult([table(["Attention weights", "Shape of A", "Largest |row sum - 1|", "Hidden entries",
                                 "Hidden entries exactly 0.0", "Visible entries > 0"], rows)],
                         TINY_SOURCE + f"; and forward() of {run_label(run)} on {window!r}",
                         data=data)


def scale_experiment():
    """Why divide by sqrt(dk): the spread of raw dot products grows with dk, the scaled ones do not."""
    rng = np.random.default_rng(SEED)
    rows = []
    for dk in (2, 8, 32, 128):
        Q, K = rng.standard_normal((16, dk)), rng.standard_normal((16, dk))
        S = Q @ K.T
        raw, _ = softmax_forward(S.copy())
        scaled, _ = softmax_forward(S / np.sqrt(dk))
        rows.append([str(dk), fmt_number(S.std()), fmt_number((S / np.sqrt(dk)).std()),
                     fmt_number(raw.max(axis=-1).mean()), fmt_number(scaled.max(axis=-1).mean())])
    return ExampleResult([table(["dk", "Std of Q K^T", "Std of Q K^T / sqrt(dk)",
                                 "Mean largest weight of a row, unscaled", "Mean largest weight of a row, scaled"],
                                rows)],
                         f"softmax_forward on 16 x 16 scores from standard normal Q and K of width dk, "
                         f"np.random.default_rng({SEED})")


def cross_attention():
    """mha_forward with queries from one sequence and keys and values from another, no mask."""
    params = tiny_params()
    out, c = mha_forward(XQ_CROSS.copy(), XKV_CROSS.copy(), params, P, TINY.num_heads)
    A = c["A"]
    blocks = [matrix(f"A[{i}], head {i}: {A.shape[-2]} queries by {A.shape[-1]} keys", A[i]) for i in range(A.shape[0])]
    blocks.append(table(["", "Value"], [["Shape of A", str(A.shape)], ["Row sums of A", fmt_array(A.sum(axis=-1))],
                                        ["Shape of the output", str(out.shape)]]))
    return ExampleResult(blocks, TINY_SOURCE + "; Xq and Xkv hand-picked; mask=None",
                         data=dict(A=A, out=out))


# ------------------------------------------------------------------ the trained model

def head_stats(A):
    """Per head: mean weight on the same position, on the previous one, on position 0, and mean row entropy."""
    h, T, _ = A.shape
    t = np.arange(T)
    same = A[:, t, t].mean(axis=-1)
    prev = A[:, t[1:], t[1:] - 1].mean(axis=-1)
    first = A[:, 1:, 0].mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(A > 0, A * np.log(A), 0.0).sum(axis=-1).mean(axis=-1)
    return same, prev, first, ent


def trained_weights():
    """Run the real forward pass and trace each call of attention_forward (one per block): its
    returned cache holds the weights A, (h, T, T)."""
    run, start, window, ids = corpus_window(WINDOW_TEXT)
    _, traces = trace_calls(forward, ["model.attention.attention_forward"], run.params, ids, run.model_cfg)
    return run, start, window, ids, [t.result[1]["A"] for t in traces["model.attention.attention_forward"]]


def chosen_heads(As):
    """Block 0: the head with the most weight on the previous character. Block 1: the head whose
    rows are most spread out (largest mean entropy)."""
    _, prev0, _, _ = head_stats(As[0])
    _, _, _, ent1 = head_stats(As[1])
    return [(0, int(np.argmax(prev0)), "the head of block 0 with the most weight on the previous character"),
            (1, int(np.argmax(ent1)), "the head of block 1 whose rows are most spread out (largest mean entropy)")]


HEATMAP_AXES = dict(xlabel="key: character s", ylabel="query: character t", value_name="weight",
                    masked_name="hidden by the causal mask")


def attention_heatmap(A, labels, title, hidden=None):
    """One head's weights over a window of characters, causal mask shown: every heatmap of the
    page is drawn by this (and a replayed one by static/js/heatmap.js with the same axes), so
    their axes and scale read the same."""
    hidden = ~causal_mask(len(labels)) if hidden is None else hidden
    return heatmap(A, row_labels=labels, col_labels=labels, title=title, masked=hidden, **HEATMAP_AXES)


def trained_heatmaps():
    run, start, window, ids, As = trained_weights()
    labels = [SHOW.get(ch, ch) for ch in window]
    T = len(ids)
    blocks = []
    for l, h, why in chosen_heads(As):
        title = f"Attention weights of block {l}, head {h}, trained run {run.commit_key}"
        svg = attention_heatmap(As[l][h], labels, title)
        blocks.append(figure(svg, f"Block {l}, head {h}: {why}. Row t is the query at character t; column s is "
                                  f"the key at character s. A stronger colour is more weight; the grey cells above the "
                                  f"diagonal are hidden by the causal mask. Each row sums to 1."))
    return ExampleResult(blocks, f"model.transformer.forward, tracing its call of attention_forward in each block, with the final parameters of "
                                 f"{run_label(run)}, {config_label(run.model_cfg)}, "
                                 f"on {window!r}, characters {start} to {start + T - 1} of the shipped corpus",
                         data=dict(As=As, window=window, heads=chosen_heads(As)))


PROMPTS_NOTE = "the first seq_len characters"
# What a chosen heatmap says: one wording for this build's choices and for a prompt the reader's
# browser recomputes (heatmap_replay ships it), filled with window as repr() shows it.
HEATMAP_TITLE = "Attention weights of block {layer}, head {head}, trained run {run}, on {window}"
HEATMAP_CAPTION = ("Block {layer}, head {head} on {window}. Row t is the query at character t; column s is the key at "
                   "character s; the grey cells are hidden by the causal mask. Each row sums to 1 (largest gap {gap}).")


def heatmap_numbers(ids, params, cfg):
    """Every number a chosen heatmap shows, for every block and head: the weights A (h, T, T)
    that attention_forward of each block keeps in its cache, each row's largest gap from
    summing to 1, per head (h,), and the cells the causal mask hides (T, T)."""
    _, cache = forward(params, ids, cfg)
    A = [block["att"]["A"] for block in cache["blocks"]]
    return dict(A=A, gap=[np.abs(a.sum(axis=-1) - 1).max(axis=-1) for a in A], hidden=~causal_mask(len(ids)))


def chosen_heatmap(prompt=WINDOW_TEXT, layer=0, head=0):
    """One head of one block of the trained model on exactly the text chosen or typed (its first
    seq_len characters: the model reads no more), and where in the corpus that text is, if it is."""
    from model.data import DEFAULT_CORPUS, CharTokenizer
    run = trained_run()
    window = prompt[:run.model_cfg.seq_len]
    start = Path(DEFAULT_CORPUS).read_text(encoding="utf-8").find(window)
    where = (f"characters {start} to {start + len(window) - 1} of the shipped corpus" if start >= 0
             else "text typed by the reader, not in the corpus")
    ids = CharTokenizer(run.chars).encode(window)
    cfg = run.model_cfg
    numbers = heatmap_numbers(ids, run.params, cfg)
    A = numbers["A"][layer][head]
    labels = [SHOW.get(ch, ch) for ch in window]
    words = dict(layer=layer, head=head, run=run.commit_key, window=repr(window), gap=f"{numbers['gap'][layer][head]:.1e}")
    svg = attention_heatmap(A, labels, HEATMAP_TITLE.format(**words), numbers["hidden"])
    top = [labels[int(np.argmax(A[t]))] for t in range(len(ids))]
    return ExampleResult([figure(svg, HEATMAP_CAPTION.format(**words))],
                         f"model.transformer.forward with the final parameters of {run_label(run)}, "
                         f"{config_label(cfg)}: the weights A that attention_forward of block {layer} "
                         f"keeps in its cache, head {head} of {cfg.num_heads}, on {window!r} ({where})",
                         data=dict(A=A, window=window, top=top, seq_len=cfg.seq_len))


def heatmap_replay():
    """The tape of chosen_heatmap's computation, for a prompt the reader types on any host: the
    real forward pass recorded once per length T = 1 to seq_len (its shapes depend on T), each
    on the first T characters of the page's window, then checked on another text against a
    fresh call. The reader's text is encoded by the run's vocabulary (a declared step of the
    replayer: characters to ids) and cut to its first seq_len characters, as chosen_heatmap does."""
    from model.data import CharTokenizer
    from site_builder.run.tape import bundle, check, record
    run, _, window, _ = corpus_window(WINDOW_TEXT)
    cfg = run.model_cfg
    encode = CharTokenizer(run.chars).encode
    other = "Friends, Romans, countrymen"
    tapes, worst = {}, 0.0
    for T in range(1, cfg.seq_len + 1):
        fn = lambda ids, params: heatmap_numbers(ids, params, cfg)
        tapes[T] = record(ROOT, fn, dict(ids=encode(window[:T])), dict(params=run.params))
        worst = max(worst, check(tapes[T], dict(ids=encode(other[:T])), lambda ids: fn(ids, run.params)))
    layers = ([f"A of block {l} (h, T, T)" for l in range(cfg.num_layers)] + [f"gap of block {l} (h,)" for l in range(cfg.num_layers)]
              + ["hidden (T, T)"])
    recorded = (f"model.transformer.forward with the final parameters of {run_label(run)}, {config_label(cfg)}, "
                f"once per T from 1 to {cfg.seq_len}")
    return ExampleResult([figure("@@svg@@", "@@caption@@")], "@@source@@",
                         data=dict(tape=bundle(tapes, view="heatmap", recorded=recorded, chars=run.chars, window="first", length=cfg.seq_len,
                                               outputs=layers, show=SHOW, run=run.commit_key, title=HEATMAP_TITLE,
                                               caption=HEATMAP_CAPTION, num_heads=cfg.num_heads, axes=HEATMAP_AXES),
                                   worst=worst))


def trained_head_table():
    run, start, window, ids, As = trained_weights()
    rows = []
    for l, A in enumerate(As):
        for h, (s, p, f, e) in enumerate(zip(*head_stats(A))):
            rows.append([str(l), str(h), fmt_number(s), fmt_number(p), fmt_number(f), fmt_number(e)])
    return ExampleResult([table(["Block", "Head", "Mean weight on the same character",
                                 "Mean weight on the previous character", "Mean weight on the first character",
                                 "Mean entropy of a row (nats)"], rows)],
                         f"the attention weights of {run_label(run)} on {window!r}; "
                         f"the previous and first columns average over rows 1 to {len(ids) - 1}")


# ------------------------------------------------------------------ backward

def backward_trace():
    params = tiny_params()
    _, c = mha_forward(XN_HAND.copy(), XN_HAND.copy(), params, P, TINY.num_heads, causal_mask(TINY.seq_len))
    return trace_locals(mha_backward, DOUT_HAND.copy(), c, params, P, zero_grads(params)), c


BACKWARD_ROWS = [("Arrives", "dOut", 0), ("Back through the output projection", "dO", 1),
                 ("Split into heads", "dOh", 1), ("Gradient on the weights A", "dA", 1),
                 ("Gradient on the values", "dVh", 1), ("Through softmax", "dS", 1),
                 ("Through the 1/sqrt(dk) scale", "dS", 2), ("Gradient on the queries", "dQh", 1),
                 ("Gradient on the keys", "dKh", 1), ("Returned: (dXq, dXkv)", "return", "return")]


def backward_worked():
    t, _ = backward_trace()
    return ExampleResult([steps_table(t, BACKWARD_ROWS)], TINY_SOURCE + "; Xn and dOut hand-picked; causal mask",
                         data=dict(values={f"{name}:{n}": (t.result if n == "return" else
                                                           t.arguments[name] if n == 0 else step_value(t, name, n))
                                           for _, name, n in BACKWARD_ROWS}))


def backward_head0():
    t, c = backward_trace()
    A, dA, dS = c["A"][0], step_value(t, "dA")[0], step_value(t, "dS", 1)[0]
    return ExampleResult([matrix("A[0]", A), matrix("dA[0] = dOh[0] Vh[0]^T", dA),
                          matrix("dA[0] * A[0]", dA * A), matrix("sum of each row of dA[0] * A[0]", (dA * A).sum(axis=-1, keepdims=True)),
                          matrix("dS[0] = A[0] * (dA[0] - row sum)", dS)],
                         TINY_SOURCE + "; Xn and dOut hand-picked; causal mask; head 0 of 2")


def softmax_jacobian():
    """softmax_backward against the explicit Jacobian diag(p) - p p^T, row by row."""
    t, c = backward_trace()
    A, dA = c["A"], step_value(t, "dA")
    dS = softmax_backward(dA.copy(), A)
    rows = []
    for h in range(A.shape[0]):
        for r in range(A.shape[1]):
            p = A[h, r]
            J = np.diag(p) - np.outer(p, p)
            rows.append([f"head {h}, row {r}", fmt_array(dS[h, r]), fmt_array(J @ dA[h, r]),
                         f"{np.abs(dS[h, r] - J @ dA[h, r]).max():.1e}"])
    return ExampleResult([table(["Row of S", "softmax_backward(dA, A)", "(diag(p) - p p^T) dA",
                                 "Largest gap"], rows)],
                         TINY_SOURCE + "; the A and dA of the backward example above")


def backward_invariants():
    t, c = backward_trace()
    A, dS = c["A"], step_value(t, "dS", 2)
    grads = t.steps[-1].locals["grads"]
    mask = causal_mask(TINY.seq_len)
    rows = [["Hidden entries of dS", str(dS[..., ~mask].size)],
            ["Hidden entries of dS that are exactly 0.0", str(int((dS[..., ~mask] == 0.0).sum()))],
            ["Largest |row sum of dS|", f"{np.abs(dS.sum(axis=-1)).max():.1e}"],
            ["Largest |dS| in row 0 (one visible key, weight 1 whatever its score)", f"{np.abs(dS[..., 0, :]).max():.1e}"],
            ['Largest |grads["b0.bk"]|', f"{np.abs(grads[P + 'bk']).max():.1e}"],
            ['Largest |grads["b0.bq"]|, for comparison', f"{np.abs(grads[P + 'bq']).max():.1e}"]]
    return ExampleResult([table(["Measured on the backward example above", "Value"], rows)],
                         TINY_SOURCE + "; Xn and dOut hand-picked; causal mask",
                         data=dict(dS=dS, grads=grads))


def _mha_loss(Xq, Xkv, params, dOut, mask):
    return float((mha_forward(Xq, Xkv, params, P, TINY.num_heads, mask)[0] * dOut).sum())


def backward_gradcheck():
    """Cross-attention, so that dXq and dXkv are two different arrays."""
    params = tiny_params()
    Xq, Xkv = XQ_CROSS.copy(), XKV_CROSS.copy()
    _, c = mha_forward(Xq, Xkv, params, P, TINY.num_heads)
    grads = zero_grads(params)
    dXq, dXkv = mha_backward(DOUT_CROSS, c, params, P, grads)
    f = lambda: _mha_loss(Xq, Xkv, params, DOUT_CROSS, None)
    rows = [("dXq", dXq, numerical_grad(f, Xq)), ("dXkv", dXkv, numerical_grad(f, Xkv))]
    rows += [(f'grads["{P}{n}"]', grads[P + n], numerical_grad(f, params[P + n])) for n in ATT_NAMES]
    return ExampleResult([gradcheck_table(rows)], TINY_SOURCE + "; cross-attention, Xq, Xkv and dOut hand-picked",
                         data=dict(rows=rows))


def _lm_loss(Xn, params, dAtt):
    return float((attention_forward(Xn, params, P, TINY)[0] * dAtt).sum())


def lm_backward_gradcheck():
    params = tiny_params()
    Xn = XN_HAND.copy()
    _, c = attention_forward(Xn, params, P, TINY)
    grads = zero_grads(params)
    t = trace_locals(attention_backward, DOUT_HAND.copy(), c, params, P, grads)
    dXq, dXkv = nth_change(t, "dXq").locals["dXq"], nth_change(t, "dXkv").locals["dXkv"]
    f = lambda: _lm_loss(Xn, params, DOUT_HAND)
    steps = steps_table(t, [("Along the queries", "dXq", 1), ("Along the keys and values", "dXkv", 1),
                            ("Both paths added: dXn", "return", "return")])
    check = gradcheck_table([("dXn", t.result, numerical_grad(f, Xn)),
                             ('grads["b0.wq"]', grads[P + "wq"], numerical_grad(f, params[P + "wq"])),
                             ('grads["b0.wv"]', grads[P + "wv"], numerical_grad(f, params[P + "wv"]))])
    return ExampleResult([steps, check], TINY_SOURCE + "; Xn and dAtt hand-picked",
                         data=dict(dXq=dXq, dXkv=dXkv, dXn=t.result))


class _Written(dict):
    """A grads dict that remembers which names were written."""

    def __init__(self, *args):
        super().__init__(*args)
        self.written = set()

    def __setitem__(self, key, value):
        self.written.add(key)
        super().__setitem__(key, value)


def facts():
    """For prose: the parameter gradients mha_backward adds (run on the tiny model), and how many
    of those parameters optim.decays decays."""
    from model.optim import decays
    params = tiny_params()
    X = XN_HAND
    _, c = mha_forward(X, X, params, P, TINY.num_heads, causal_mask(X.shape[0]))
    grads = _Written(zero_grads(params))
    mha_backward(DOUT_HAND, c, params, P, grads)
    names = sorted(grads.written)
    decayed = [n for n in names if decays(n)]
    return ExampleResult([], TINY_SOURCE, data=dict(
        grads=len(names), decayed=len(decayed), not_decayed=len(names) - len(decayed),
        projections=len({n[len(P) + 1:] for n in names})))
