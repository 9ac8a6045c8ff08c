"""Examples for the Loss page. Each returns an ExampleResult built from real calls of model.ops."""
import numpy as np

from model.config import ModelConfig
from model.gradcheck import numerical_grad
from model.ops import cross_entropy_forward, cross_entropy_backward, smoothed_targets
from model.train_seq2seq import smoothing_floor
from model.transformer import init_params, forward, loss_and_grads
from site_builder.run.examples import (ExampleResult, matrix, gradcheck_table, table, figure, fmt_number,
                                   fmt_array, config_label, code_line, value_of)
from site_builder.render.plots import line_plot
from site_builder.run.trace import trace_locals

SEED = 0
TINY = ModelConfig(vocab_size=5, seq_len=4, emb_dim=4, num_heads=2, ff_dim=6, num_layers=1)
IDS = np.array([0, 3, 1, 4])          # hand-picked input ids
TARGETS = np.array([3, 1, 4, 2])      # hand-picked: the "next id" of each position
EPS = 0.1                             # the label smoothing of Vaswani et al. 2017, Section 5.4
TINY_SOURCE = (f"forward(init_params({config_label(TINY)}, np.random.default_rng({SEED})), "
               f"ids={IDS.tolist()}), targets {TARGETS.tolist()}")


def fmt_tiny(x):
    """A value that is 0 up to rounding: scientific notation, so the rounding is visible."""
    return f"{float(x):.1e}"


def walk(trace, rows):
    """A step table in code order: rows are (label, local); a local named twice shows its first
    change, then its second, and so on, each with the line that made it. An argument that is
    never reassigned shows its value at the call."""
    seen = {}
    out = []
    for label, name in rows:
        changes = [s for s in trace.steps if name in s.changed]
        k = seen.get(name, 0)
        seen[name] = k + 1
        if name.startswith("return") or not changes:
            line, code = code_line(trace, name)
            value = value_of(trace, name)
        else:
            step = changes[k]
            line, code, value = step.line, step.code, step.locals[name]
        out.append(dict(label=label, name=name, line=line, code=code, value=fmt_array(value)))
    return dict(kind="steps", file=trace.file, function=trace.function, rows=out)


def tiny_params():
    return init_params(TINY, np.random.default_rng(SEED))


def tiny_logits():
    """Real logits: the tiny model's output for IDS. The parameters are random, not learned."""
    return forward(tiny_params(), IDS, TINY)[0]


# ----------------------------------------------------------------------------- forward

def forward_steps():
    logits = tiny_logits()
    t = trace_locals(cross_entropy_forward, logits, TARGETS)
    steps = walk(t, [("Logits", "logits"), ("Subtract each row's maximum", "logp"),
                     ("Exponentials", "P"), ("Row sums", "total"), ("Log-softmax", "logp"),
                     ("Softmax", "P"), ("Mean of -log p at the targets", "loss")])
    logp = t.steps[-1].locals["logp"]
    rows = [[str(i), str(int(TARGETS[i])), fmt_number(np.exp(logp[i, TARGETS[i]])),
             fmt_number(-logp[i, TARGETS[i]])] for i in range(len(TARGETS))]
    per_position = table(["Position", "Target id", "p of the target", "-log p of the target"], rows,
                         caption="One term per position. The mean of the last column is the loss above.")
    return ExampleResult([steps, per_position], TINY_SOURCE,
                         data=dict(loss=t.result[0], P=t.result[1]["P"], logp=logp))


def uniform_is_log_v():
    """Equal logits: every p is 1/V, so the loss is log V whatever the targets."""
    zero = np.zeros((len(TARGETS), TINY.vocab_size))
    loss, _ = cross_entropy_forward(zero, TARGETS)
    init_loss, _ = cross_entropy_forward(tiny_logits(), TARGETS)
    rows = [["All logits 0 (every p is 1/V)", fmt_number(loss)],
            ["log V", fmt_number(np.log(TINY.vocab_size))],
            ["The tiny model above, at init_params", fmt_number(init_loss)]]
    return ExampleResult([table(["Logits", "Loss (nats)"], rows)],
                         f"cross_entropy_forward on zeros of shape {zero.shape}, and on the logits of " + TINY_SOURCE,
                         data=dict(uniform=loss, log_v=float(np.log(TINY.vocab_size)), init=init_loss))


SHIFT = 1000.0                        # hand-picked: far beyond where exp overflows in float64


def textbook_loss(logits, targets):
    """-log(e^{z_y} / sum_j e^{z_j}) averaged, with no maximum subtracted: for comparison only."""
    with np.errstate(over="ignore", invalid="ignore"):
        E = np.exp(logits)
        p = np.take_along_axis(E, targets[:, None], axis=-1)[:, 0] / E.sum(axis=-1)
        return float(np.mean(-np.log(p)))


def large_logits():
    logits = tiny_logits()
    rows = []
    for label, z in (("The tiny model's logits", logits), (f"The same plus {SHIFT:g}", logits + SHIFT)):
        rows.append([label, fmt_number(cross_entropy_forward(z, TARGETS)[0]), fmt_number(textbook_loss(z, TARGETS))])
    return ExampleResult([table(["Logits", "cross_entropy_forward", "Without subtracting the maximum"], rows)],
                         TINY_SOURCE, data=dict(small=cross_entropy_forward(logits, TARGETS)[0],
                                                big=cross_entropy_forward(logits + SHIFT, TARGETS)[0],
                                                textbook_big=textbook_loss(logits + SHIFT, TARGETS)))


# ----------------------------------------------------------------------------- backward

def backward_steps():
    logits = tiny_logits()
    _, cache = cross_entropy_forward(logits, TARGETS)
    t = trace_locals(cross_entropy_backward, 1.0, cache)
    steps = walk(t, [("A copy of p", "dlogits"), ("p - q: 1 subtracted at each target", "dlogits"),
                     ("(p - q) / N, with N = targets.size", "return")])
    dlogits = t.result
    rows = [[str(i), str(int(TARGETS[i])), fmt_number(dlogits[i, TARGETS[i]]),
             fmt_number(np.delete(dlogits[i], TARGETS[i]).sum()), fmt_tiny(dlogits[i].sum())]
            for i in range(len(TARGETS))]
    sums = table(["Position", "Target id", "At the target", "Sum of the other entries", "Sum of the row"], rows,
                 caption="Each row of the gradient: the target entry is negative, the others are positive, "
                         "and they cancel. The last column is the row sum as float64 computes it.")
    return ExampleResult([steps, sums], TINY_SOURCE, data=dict(dlogits=dlogits, row_sums=dlogits.sum(axis=-1)))


def backward_gradcheck():
    logits = tiny_logits()
    _, cache = cross_entropy_forward(logits, TARGETS)
    analytic = cross_entropy_backward(1.0, cache)
    numeric = numerical_grad(lambda: cross_entropy_forward(logits, TARGETS)[0], logits)
    return ExampleResult([gradcheck_table([("dlogits", analytic, numeric)])], TINY_SOURCE,
                         data=dict(analytic=analytic, numeric=numeric))


def mean_over_positions():
    """The 1/N: the same sequence twice in a batch keeps the loss and every parameter gradient,
    and halves each position's logit gradient."""
    params = tiny_params()
    logits = forward(params, IDS, TINY)[0]
    twice_ids, twice_targets = np.stack([IDS, IDS]), np.stack([TARGETS, TARGETS])
    twice_logits = forward(params, twice_ids, TINY)[0]
    loss1, c1 = cross_entropy_forward(logits, TARGETS)
    loss2, c2 = cross_entropy_forward(twice_logits, twice_targets)
    d1, d2 = cross_entropy_backward(1.0, c1), cross_entropy_backward(1.0, c2)
    _, g1 = loss_and_grads(params, IDS, TARGETS, TINY)
    _, g2 = loss_and_grads(params, twice_ids, twice_targets, TINY)
    rows = [["N = targets.size", str(TARGETS.size), str(twice_targets.size)],
            ["Loss", fmt_number(loss1), fmt_number(loss2)],
            ["dlogits at position 0", fmt_array(d1[0]), fmt_array(d2[0, 0])],
            ['grads["head_b"]', fmt_array(g1["head_b"]), fmt_array(g2["head_b"])],
            ["Largest gap over every parameter gradient", "",
             fmt_tiny(max(np.abs(g1[k] - g2[k]).max() for k in g1))]]
    return ExampleResult([table(["", "One sequence, shape " + str(IDS.shape),
                                 "The same sequence twice, shape " + str(twice_ids.shape)], rows)],
                         TINY_SOURCE + "; loss_and_grads on the same parameters",
                         data=dict(loss1=loss1, loss2=loss2, d1=d1, d2=d2, g1=g1, g2=g2))


# ----------------------------------------------------------------------------- label smoothing

def smoothing_targets():
    t = trace_locals(smoothed_targets, TARGETS, TINY.vocab_size, EPS)
    steps = walk(t, [("eps / V everywhere", "q"), ("1 - eps + eps / V at each target", "q")])
    q = t.result
    rows = [[str(i), str(int(TARGETS[i])), fmt_number(q[i, TARGETS[i]]), fmt_number(np.delete(q[i], TARGETS[i]).max()),
             fmt_number(q[i].sum())] for i in range(len(TARGETS))]
    return ExampleResult([steps, table(["Position", "Target id", "q at the target", "q elsewhere", "Sum of q"], rows)],
                         f"smoothed_targets(targets={TARGETS.tolist()}, V={TINY.vocab_size}, label_smoothing={EPS})",
                         data=dict(q=q))


def smoothing_compared():
    logits = tiny_logits()
    loss0, c0 = cross_entropy_forward(logits, TARGETS)
    loss1, c1 = cross_entropy_forward(logits, TARGETS, EPS)
    d0, d1 = cross_entropy_backward(1.0, c0), cross_entropy_backward(1.0, c1)
    rows = [["Loss", fmt_number(loss0), fmt_number(loss1), fmt_number(loss1 - loss0)],
            ["dlogits at the targets, per position", fmt_array(np.take_along_axis(d0, TARGETS[:, None], -1)[:, 0]),
             fmt_array(np.take_along_axis(d1, TARGETS[:, None], -1)[:, 0]),
             fmt_array(np.take_along_axis(d1 - d0, TARGETS[:, None], -1)[:, 0])],
            ["dlogits elsewhere, row 0", fmt_array(np.delete(d0[0], TARGETS[0])), fmt_array(np.delete(d1[0], TARGETS[0])),
             fmt_array(np.delete(d1[0] - d0[0], TARGETS[0]))],
            ["The formula at the target: (eps - eps / V) / N", "", "", fmt_number((EPS - EPS / TINY.vocab_size) / TARGETS.size)],
            ["The formula elsewhere: -(eps / V) / N", "", "", fmt_number(-EPS / TINY.vocab_size / TARGETS.size)]]
    blocks = [table(["", "eps = 0", f"eps = {EPS}", "Difference"], rows),
              matrix("dlogits, eps = 0", d0), matrix(f"dlogits, eps = {EPS}", d1)]
    return ExampleResult(blocks, TINY_SOURCE + f"; label_smoothing 0 and {EPS}",
                         data=dict(loss0=loss0, loss1=loss1, d0=d0, d1=d1))


MARGINS = np.linspace(-2.0, 10.0, 61)    # hand-picked range of the target's logit


def margin_logits(m):
    z = np.zeros((1, TINY.vocab_size))
    z[0, 0] = m
    return z


def smoothing_curve():
    """The loss of one position as its target's logit grows, the others at 0."""
    target = np.array([0])
    series = []
    for eps in (0.0, EPS):
        losses = [cross_entropy_forward(margin_logits(m), target, eps)[0] for m in MARGINS]
        series.append((f"ε = {eps:g}", MARGINS.tolist(), losses))
    smoothed = np.array(series[1][2])
    best = int(np.argmin(smoothed))
    svg = line_plot(series, "Loss of one position against the target's logit", "logit of the target (others 0)",
                    "loss (nats)")
    q = smoothed_targets(target, TINY.vocab_size, EPS)
    at_q, c_q = cross_entropy_forward(np.log(q), target, EPS)     # logits log q: the softmax gives q back
    rows = [["Smallest smoothed loss on the curve", fmt_number(smoothed[best]), f"at logit {MARGINS[best]:g}"],
            ["Smoothed loss at logits = log q (so p = q)", fmt_number(at_q),
             "largest |dlogits| there: " + fmt_tiny(np.abs(cross_entropy_backward(1.0, c_q)).max())],
            ["smoothing_floor(V, eps): the entropy of q", fmt_number(smoothing_floor(TINY.vocab_size, EPS)), ""],
            ["Unsmoothed loss at the right end of the curve", fmt_number(series[0][2][-1]), f"at logit {MARGINS[-1]:g}"]]
    return ExampleResult([figure(svg, f"V = {TINY.vocab_size}, one position, target id 0."),
                          table(["", "Loss (nats)", "Detail"], rows)],
                         f"cross_entropy_forward(logits, targets=[0], label_smoothing) for V = {TINY.vocab_size}",
                         data=dict(series=series, at_q=at_q, floor=smoothing_floor(TINY.vocab_size, EPS),
                                   best=smoothed[best]))
