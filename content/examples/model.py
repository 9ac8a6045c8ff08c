"""Examples for the Full Model page. The tiny model has the real vocabulary of the corpus, d = 4 and
two blocks, with random parameters from the real init_params; the parameter tables use the default
configuration. Every number comes from a call of model/."""
from functools import lru_cache

import numpy as np

from model import ModelInputError
from model.config import ModelConfig
from model.data import DEFAULT_CORPUS, CharTokenizer, load_corpus
from model.gradcheck import numerical_grad
from model.ops import (cross_entropy_forward, linear_forward, linear_backward, relu_forward, relu_backward,
                       softmax_forward, xavier_uniform)
from model.transformer import init_params, forward, loss_and_grads, embed_forward
from site_builder.run.examples import (ExampleResult, table, steps_table, step_row, gradcheck_table, fmt_array,
                                   fmt_number, config_label, value_of)
from site_builder.run.trace import trace_locals

SEED = 0
TEXT = "To be, or"               # hand-picked: x is its first 8 characters, y its last 8
H = 1e-6                         # central differences; the Embeddings page shows why not 1e-5 at this scale
TOP = 5                          # predictions shown

# hand-picked: a linear layer small enough to follow by hand, 2 rows of 3 features to 2 outputs
LIN_X = np.array([[1.0, 2.0, 0.0],
                  [0.0, -1.0, 3.0]])
LIN_W = np.array([[1.0, 0.5],
                  [0.0, -1.0],
                  [2.0, 0.0]])
LIN_B = np.array([0.5, -0.5])
LIN_G = np.array([[1.0, 0.0],     # the gradient arriving at Y, not computed from a loss
                  [0.5, -1.0]])
# hand-picked: one row of pre-activations, with a negative, an exact 0 and two positives
RELU_Z = np.array([[-1.5, 0.0, 0.5, 2.0]])
RELU_DA = np.array([[1.0, 2.0, 3.0, 4.0]])


@lru_cache(maxsize=1)
def tokenizer():
    return CharTokenizer(load_corpus(DEFAULT_CORPUS))


def default_config():
    return ModelConfig(vocab_size=tokenizer().vocab_size)


def tiny_config():
    return ModelConfig(vocab_size=tokenizer().vocab_size, seq_len=8, emb_dim=4, num_heads=2, ff_dim=8, num_layers=2)


def tiny_params():
    return init_params(tiny_config(), np.random.default_rng(SEED))


def tiny_source():
    return f"init_params({config_label(tiny_config())}, np.random.default_rng({SEED})), vocabulary of data/shakespeare.txt"


def default_source():
    return f"init_params({config_label(default_config())}, np.random.default_rng({SEED}))"


def batch():
    ids = tokenizer().encode(TEXT)
    return ids[:-1], ids[1:]


def show_char(c):
    return {"\n": "\\n", " ": "\u2423"}.get(c, c)


# ---------------------------------------------------------------- forward

def forward_steps():
    params, cfg = tiny_params(), tiny_config()
    x, _ = batch()
    t = trace_locals(forward, params, x, cfg)
    last = len(x) - 1
    rows = []
    for step in t.steps:
        if "X" in step.changed:
            label = "Embeddings" if "l" not in step.locals else f"Block l = {step.locals['l']}"
            rows.append(step_row(step, f"{label}: X[{last}]", fmt_array(step.locals["X"][last])))
        if "Xf" in step.changed:
            rows.append(step_row(step, f"Final LayerNorm: Xf[{last}]", fmt_array(step.locals["Xf"][last])))
        if "logits" in step.changed:
            rows.append(step_row(step, f"Head: logits[{last}], its first 6 of V", fmt_array(step.locals["logits"][last][:6]) + " ..."))
    logits = t.result[0]
    P, _ = softmax_forward(logits[last])
    order = np.argsort(-P)[:TOP]
    chars = tokenizer().chars
    top = table(["Rank", "Next character", "Logit", "Probability, softmax of the logits"],
                [[r + 1, show_char(chars[i]), fmt_number(logits[last][i]), fmt_number(P[i])] for r, i in enumerate(order)],
                caption=f"The {TOP} highest scores at the last position, after {TEXT[:len(x)]!r}. "
                        f"With random parameters they are close to uniform: 1 / V = {1 / cfg.vocab_size:.4f}.")
    return ExampleResult([steps_table(t, rows), top], tiny_source(),
                         data=dict(logits=logits, x=x, Xf=value_of(t, "Xf"), top=order))


# ---------------------------------------------------------------- loss_and_grads

def backward_order():
    params, cfg = tiny_params(), tiny_config()
    x, y = batch()
    t = trace_locals(loss_and_grads, params, x, y, cfg)
    rows, order, filled_before = [], [], set()
    for step in t.steps:
        grads = step.locals.get("grads")
        filled = {k for k, g in grads.items() if np.any(g != 0)} if isinstance(grads, dict) else set()
        new = sorted(filled - filled_before, key=list(params).index)
        filled_before |= filled
        changed = [n for n in ("dlogits", "dXf", "dX") if n in step.changed]
        if not changed and not new:
            continue
        what = []
        if changed:
            n = changed[-1]
            what.append(f"{n}, norm {fmt_number(np.linalg.norm(step.locals[n]))}")
        if new:
            shown = new if len(new) <= 4 else new[:2] + ["..."] + new[-1:]
            what.append(f"fills {len(new)} gradient(s): {', '.join(shown)}")
        label = f"Block l = {step.locals['l']}" if "block_backward" in step.code else \
            {"cross_entropy_backward": "Loss", "linear_backward": "Head", "layer_norm_backward": "Final LayerNorm",
             "embed_backward": "Embeddings"}.get(next((k for k in ("cross_entropy_backward", "linear_backward",
                                                                  "layer_norm_backward", "embed_backward")
                                                      if k in step.code), ""), "")
        if "block_backward" in step.code:
            order.append(int(step.locals["l"]))
        rows.append(step_row(step, label, "; ".join(what)))
    return ExampleResult([steps_table(t, rows)], tiny_source(),
                         data=dict(order=order, loss=t.result[0], grads=t.result[1]))


def _loss(params, x, y):
    return cross_entropy_forward(forward(params, x, tiny_config())[0], y)[0]


def model_gradcheck():
    params, cfg = tiny_params(), tiny_config()
    x, y = batch()
    _, grads = loss_and_grads(params, x, y, cfg)
    f = lambda: _loss(params, x, y)
    rows, gaps = [], {}
    for name, part in (("lnf_g", slice(None)), ("head_b", slice(0, 6)), ("b1.ln2_g", slice(None)),
                       ("b1.ff2_b", slice(None)), ("b0.wq", slice(None)), ("b0.ff1_b", slice(None))):
        num = numerical_grad(f, params[name], h=H)
        label = f'grads["{name}"]' + ("" if part == slice(None) else f"[:{part.stop}]")
        rows.append((label, grads[name][part], num[part]))
        gaps[name] = float(np.max(np.abs(grads[name] - num)))
    worst = table(["Tensor", "Largest gap over every entry"], [[f'grads["{k}"]', f"{v:.1e}"] for k, v in gaps.items()])
    return ExampleResult([gradcheck_table(rows), worst], tiny_source() + f"; central differences with h = {H:g}",
                         data=dict(gaps=gaps))


# ---------------------------------------------------------------- init_params

def _rule(name, p, cfg):
    """(how init_params starts this parameter, what that rule gives), from the code's rules."""
    v = p[name]
    if np.all(v == 1):
        return "ones", "exactly 1"
    if np.all(v == 0):
        return "zeros", "exactly 0"
    if name in ("tok_emb", "pos_emb"):
        return "normal", f"std = emb_std = {cfg.emb_std}"
    fan_in, fan_out = v.shape
    a = np.sqrt(6.0 / (fan_in + fan_out))
    return "Xavier uniform", f"a = {a:.4f}, std a/\u221a3 = {a / np.sqrt(3):.4f}"


def init_stats():
    """Every parameter of init_params at the default config, block 0 standing for every block."""
    from model.optim import decays
    cfg = default_config()
    p = init_params(cfg, np.random.default_rng(SEED))
    rows, within = [], {}
    for name, v in p.items():
        if name.startswith("b") and not name.startswith("b0."):
            continue
        how, rule = _rule(name, p, cfg)
        rows.append([name, str(v.shape), f"{v.size:,}", how, rule, fmt_number(np.abs(v).max()), fmt_number(v.std()),
                     "yes" if decays(name) else "no"])
        if how.startswith("Xavier"):
            within[name] = bool(np.abs(v).max() <= np.sqrt(6.0 / sum(v.shape)))
    return ExampleResult([table(["Parameter", "Shape", "Scalars", "Starts as", "The rule gives", "Largest |value|",
                                 "Std", "Weight decay"], rows,
                                caption=f"Block 0 stands for every block: the {cfg.num_layers} blocks have the same rows, "
                                        "each under its own prefix b0., b1., ...")],
                         default_source() + "; decay from model.optim.decays", data=dict(within=within, rows=rows))


def xavier_draw():
    """xavier_uniform itself, traced, for the head's shape at the default config."""
    cfg = default_config()
    t = trace_locals(xavier_uniform, cfg.emb_dim, cfg.vocab_size, np.random.default_rng(SEED))
    a = value_of(t, "a")
    W = t.result
    rows = [["a = sqrt(6 / (fan_in + fan_out))", fmt_number(a)],
            ["largest |w| of the draw", fmt_number(np.abs(W).max())],
            ["std of the draw", fmt_number(W.std())],
            ["a / sqrt(3), the std of U(-a, a)", fmt_number(a / np.sqrt(3))]]
    return ExampleResult([table([f"xavier_uniform({cfg.emb_dim}, {cfg.vocab_size}, rng)", "Value"], rows)],
                         f"xavier_uniform(emb_dim, vocab_size, np.random.default_rng({SEED})) at {config_label(cfg)}",
                         data=dict(a=a, W=W))


GROUPS = (  # (group, which names, the count as a formula of the config)
    ("Token table", lambda n: n == "tok_emb", "V d", lambda c: c.vocab_size * c.emb_dim),
    ("Position table", lambda n: n == "pos_emb", "T_max d", lambda c: c.seq_len * c.emb_dim),
    ("Attention, every block", lambda n: n.startswith("b") and n.split(".")[-1] in ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"),
     "L (4 d^2 + 4 d)", lambda c: c.num_layers * (4 * c.emb_dim ** 2 + 4 * c.emb_dim)),
    ("LayerNorms, every block", lambda n: n.startswith("b") and ".ln" in n, "L (4 d)", lambda c: c.num_layers * 4 * c.emb_dim),
    ("Feed-forward, every block", lambda n: n.startswith("b") and ".ff" in n, "L (2 d F + F + d)",
     lambda c: c.num_layers * (2 * c.emb_dim * c.ff_dim + c.ff_dim + c.emb_dim)),
    ("Final LayerNorm", lambda n: n.startswith("lnf"), "2 d", lambda c: 2 * c.emb_dim),
    ("Head", lambda n: n.startswith("head"), "d V + V", lambda c: c.emb_dim * c.vocab_size + c.vocab_size),
)


def param_count():
    cfg = default_config()
    p = init_params(cfg, np.random.default_rng(SEED))
    rows, claimed = [], set()
    for group, member, formula, count in GROUPS:
        names = [n for n in p if member(n)]
        claimed |= set(names)
        n = sum(p[k].size for k in names)
        rows.append([group, str(len(names)), formula, f"{count(cfg):,}", f"{n:,}"])
    total = sum(v.size for v in p.values())
    rows.append(["Total", str(len(p)), "", f"{sum(c(cfg) for *_, c in GROUPS):,}", f"{total:,}"])
    return ExampleResult([table(["Group", "Arrays", "Formula", "Formula at the config", "Sum of .size over the arrays"],
                                rows, caption=f"{config_label(cfg)}: V = {cfg.vocab_size}, T_max = seq_len = {cfg.seq_len}, "
                                              f"d = {cfg.emb_dim}, F = {cfg.ff_dim}, L = {cfg.num_layers}.")],
                         default_source(), data=dict(total=total, unclaimed=sorted(set(p) - claimed)))


# ---------------------------------------------------------------- check_ids

def check_ids_messages():
    cfg = default_config()
    params = init_params(cfg, np.random.default_rng(SEED))
    V, Tm = cfg.vocab_size, cfg.seq_len
    ok = np.zeros((2, 6), dtype=np.int64)
    cases = [
        ("Floats, not integers", "forward(params, np.array([[1.0, 2.0]]), cfg)", lambda: forward(params, np.array([[1.0, 2.0]]), cfg)),
        ("Three axes", "forward(params, np.zeros((1, 2, 3), int), cfg)", lambda: forward(params, np.zeros((1, 2, 3), int), cfg)),
        ("No positions", "forward(params, np.zeros((1, 0), int), cfg)", lambda: forward(params, np.zeros((1, 0), int), cfg)),
        ("Longer than seq_len", f"forward(params, np.zeros((1, {Tm + 1}), int), cfg)", lambda: forward(params, np.zeros((1, Tm + 1), int), cfg)),
        ("An id equal to vocab_size", f"forward(params, np.array([[3, 1, {V}]]), cfg)", lambda: forward(params, np.array([[3, 1, V]]), cfg)),
        ("A negative id", "forward(params, np.array([5, -1]), cfg)", lambda: forward(params, np.array([5, -1]), cfg)),
        ("Targets of another shape", "loss_and_grads(params, ids (2, 6), targets (2, 5), cfg)", lambda: loss_and_grads(params, ok, ok[:, :5], cfg)),
        ("A target out of range", f"loss_and_grads(params, ids, targets with targets[1, 3] = {V + 15}, cfg)",
         lambda: loss_and_grads(params, ok, np.where(np.arange(6) == 3, np.array([[0], [V + 15]]), ok), cfg)),
    ]
    rows, messages = [], []
    for what, call, fn in cases:
        try:
            fn()
            message = "(no error)"
        except ModelInputError as e:
            message = str(e)
        messages.append(message)
        rows.append([what, call, message])
    # What the check prevents: embed_forward does not check, and NumPy reads id -1 as the last row.
    X, _ = embed_forward(np.array([-1]), params)
    silent = bool(np.array_equal(X[0], params["tok_emb"][V - 1] + params["pos_emb"][0]))
    unchecked = table(["Without the check", "Result"],
                      [["embed_forward(np.array([-1]), params)[0][0] == tok_emb[V - 1] + pos_emb[0]", str(silent)]],
                      caption="embed_forward does not check its input: NumPy reads id -1 as the last row, with no error.")
    return ExampleResult([table(["Input", "Call", "ModelInputError message"], rows), unchecked], default_source(),
                         data=dict(messages=messages, silent=silent, cases=len(cases)))


# ---------------------------------------------------------------- linear

def linear_forward_worked():
    t = trace_locals(linear_forward, LIN_X, LIN_W, LIN_B)
    rows = [("Rows in", "X")]
    for step, label in zip([s for s in t.steps if "Y" in s.changed], ("X W", "X W, then plus b")):
        rows.append(step_row(step, label, fmt_array(step.locals["Y"])))
    return ExampleResult([steps_table(t, rows)], "the hand-picked X, W and b of content/examples/model.py",
                         data=dict(Y=t.result[0]))


def linear_backward_worked():
    t = trace_locals(linear_backward, LIN_G, LIN_X, LIN_W)
    block = steps_table(t, [("Arrives", "dY"), ("dX = G W^T", "dX"), ("dW = X^T G", "return[1]"), ("db = 1^T G", "return[2]")])
    return ExampleResult([block], "the hand-picked X, W and G of content/examples/model.py",
                         data=dict(dX=t.result[0], dW=t.result[1], db=t.result[2]))


def linear_gradcheck():
    X, W, b = LIN_X.copy(), LIN_W.copy(), LIN_B.copy()
    dX, dW, db = linear_backward(LIN_G, X, W)
    f = lambda: float((linear_forward(X, W, b)[0] * LIN_G).sum())
    rows = [("dX", dX, numerical_grad(f, X)), ("dW", dW, numerical_grad(f, W)), ("db", db, numerical_grad(f, b))]
    return ExampleResult([gradcheck_table(rows)], "the hand-picked X, W, b and G of content/examples/model.py; h = 1e-5")


# ---------------------------------------------------------------- relu

def relu_worked():
    tf = trace_locals(relu_forward, RELU_Z)
    tb = trace_locals(relu_backward, RELU_DA, tf.result[1])
    fwd = steps_table(tf, [("Z", "Z"), ("positive = Z > 0", "positive"), ("A = Z * positive", "return[0]")])
    bwd = steps_table(tb, [("dA arrives", "dA"), ("dZ = dA * positive", "return")])
    mask = tf.result[1]
    size = table(["Cache", "dtype", "Bytes per entry"], [["positive, the mask", str(mask.dtype), str(mask.itemsize)],
                                                          ["Z, if it were cached", str(RELU_Z.dtype), str(RELU_Z.itemsize)]])
    return ExampleResult([fwd, bwd, size], "the hand-picked Z and dA of content/examples/model.py",
                         data=dict(A=tf.result[0], positive=mask, dZ=tb.result))


def facts():
    """For prose: the tiny model's sizes and this page's gradient-check step."""
    cfg = tiny_config()
    return ExampleResult([], tiny_source(), data=dict(d=cfg.emb_dim, layers=cfg.num_layers, h=H))
