"""Examples for the Label smoothing page: real calls of model.ops and model.train_seq2seq, on the
reversal task's vocabulary and targets."""
import dataclasses

import numpy as np

from model import seq2seq as s2s
from model import train_seq2seq as task
from model.config import Seq2SeqConfig
from model.ops import smoothed_targets, cross_entropy_forward, cross_entropy_backward, softmax_forward
from site_builder.run.examples import ExampleResult, matrix, table, figure, fmt_number, fmt_array, config_label
from site_builder.render.plots import line_plot
from site_builder.run.trace import trace_locals
from content.hooks import REVERSAL_RUN, reversal_run

SEED = 0
# The run of the encoder-decoder page, the same one: trained once per build for both pages.
RUN = REVERSAL_RUN
EPS_GRID = [i / 100 for i in range(0, 31)]
_MEMO = {}


def task_cfg():
    """The reversal task's config, as train() builds it (one real step, nothing written)."""
    if "cfg" not in _MEMO:
        _MEMO["cfg"] = task.train(steps=1, seed=SEED, out=None, num_eval=1, progress=False)["cfg"]
    return _MEMO["cfg"]


def one_pair():
    """One reversal-task pair: a real draw of sample_sources and make_targets."""
    src, lengths = task.sample_sources(1, np.random.default_rng(SEED))
    tgt_in, tgt_out = task.make_targets(src, lengths)
    return src[0], tgt_in[0], tgt_out[0]


def where_eps_comes_from():
    default = next(f.default for f in dataclasses.fields(Seq2SeqConfig) if f.name == "label_smoothing")
    cfg = task_cfg()
    rows = [["Seq2SeqConfig's default label_smoothing", str(default)],
            ["The reversal task's config (train)", str(cfg.label_smoothing)],
            ["Its target vocabulary V", str(cfg.tgt_vocab_size)]]
    return ExampleResult([table(["", "Value"], rows)], "dataclasses.fields(Seq2SeqConfig), and the config train() builds",
                         data=dict(default=default, eps=cfg.label_smoothing, V=cfg.tgt_vocab_size))


def targets_of_one_pair():
    cfg = task_cfg()
    src, _, tgt_out = one_pair()
    t = trace_locals(smoothed_targets, tgt_out, cfg.tgt_vocab_size, cfg.label_smoothing)
    q = t.result
    rows = [["Target ids (tgt_out)", str(tgt_out.tolist())],
            ["q at each target, 1 - eps + eps / V", fmt_array(np.take_along_axis(q, tgt_out[:, None], -1)[:, 0])],
            ["Every other entry, eps / V", fmt_array(np.unique(q[q < q.max()]))],
            ["Largest |row sum - 1|", f"{np.abs(q.sum(-1) - 1).max():.1e}"]]
    return ExampleResult([table(["", "Value"], rows),
                          matrix(f"q: one row per target position, one column per id (V = {cfg.tgt_vocab_size})", q)],
                         f"smoothed_targets(tgt_out, V={cfg.tgt_vocab_size}, label_smoothing={cfg.label_smoothing}) "
                         f"for the source '{task.decode_text(src)}'",
                         data=dict(q=q, tgt_out=tgt_out))


def tiny_model_loss():
    """The reversal task's model at init on one pair: the smoothed loss, and its two parts."""
    cfg = task_cfg()
    src, tgt_in, tgt_out = one_pair()
    params = s2s.init_params(cfg, np.random.default_rng(SEED))
    logits, _ = s2s.forward(params, src, tgt_in, cfg)
    eps, V = cfg.label_smoothing, cfg.tgt_vocab_size
    t = trace_locals(cross_entropy_forward, logits, tgt_out, eps)
    loss, c = t.result
    hard, _ = cross_entropy_forward(logits, tgt_out, 0.0)
    logp = np.log(c["P"])
    uniform = float(-logp.mean(axis=-1).mean())
    dlogits = cross_entropy_backward(1.0, c)
    rows = [["Smoothed loss, cross_entropy_forward(logits, tgt_out, eps)", fmt_number(loss)],
            ["Hard loss, the same with label_smoothing 0", fmt_number(hard)],
            ["Cross-entropy against the uniform distribution, -mean log p", fmt_number(uniform)],
            ["(1 - eps) hard + eps uniform", fmt_number((1 - eps) * hard + eps * uniform)],
            ["log V, the loss of a uniform prediction", fmt_number(np.log(V))],
            ["Largest |row sum of dlogits|", f"{np.abs(dlogits.sum(-1)).max():.1e}"]]
    return ExampleResult([table(["", "Value"], rows)],
                         f"forward(init_params({config_label(cfg)}, np.random.default_rng({SEED})), ...) on the "
                         f"source '{task.decode_text(src)}'",
                         data=dict(loss=loss, hard=hard, uniform=uniform, eps=eps))


def floor_of_the_task():
    cfg = task_cfg()
    V, eps = cfg.tgt_vocab_size, cfg.label_smoothing
    floor = task.smoothing_floor(V, eps)
    q = smoothed_targets(np.array([task.EOS]), V, eps)
    at_q, c = cross_entropy_forward(np.log(q), np.array([task.EOS]), eps)      # logits log q: softmax gives q
    grad = float(np.abs(cross_entropy_backward(1.0, c)).max())
    gap = float(np.log(q.max() / q.min()))
    rows = [["smoothing_floor(V, eps)", fmt_number(floor)],
            ["Smoothed loss at logits log q, so that p = q", fmt_number(at_q)],
            ["Largest |dlogits| there", f"{grad:.1e}"],
            ["Logit of the target minus any other logit at the minimum, log(q_hit / q_miss)", fmt_number(gap)]]
    curve = [task.smoothing_floor(V, e) for e in EPS_GRID]
    svg = line_plot([(f"smoothing_floor({V}, eps)", EPS_GRID, curve)], "The floor against the smoothing",
                    "label_smoothing eps", "lowest reachable loss (nats)")
    return ExampleResult([table(["", "Value"], rows), figure(svg, f"V = {V}, the reversal task's vocabulary.")],
                         f"V = {V} and eps = {eps} from the reversal task's config; one position, target EOS",
                         data=dict(floor=floor, at_q=at_q, grad=grad, gap=gap, curve=curve))


def trained_model():
    """A real run of train() (the one of the encoder-decoder page): its loss against the floor, and
    the probability the trained model gives the right token on held-out pairs."""
    r = reversal_run(**RUN)["result"]
    cfg, params = r["cfg"], r["params"]
    V, eps = cfg.tgt_vocab_size, cfg.label_smoothing
    src, lengths = task.sample_sources(RUN["num_eval"], np.random.default_rng([RUN["seed"], 1]))   # train's held-out set
    tgt_in, tgt_out = task.make_targets(src, lengths)
    logits, _ = s2s.forward(params, src, tgt_in, cfg)
    held_loss, _ = cross_entropy_forward(logits, tgt_out, eps)
    P, _ = softmax_forward(logits)
    p_right = np.take_along_axis(P, tgt_out[..., None], -1)[..., 0].ravel()
    q_hit = 1 - eps + eps / V
    rows = [["Training loss, mean of the last logged steps", fmt_number(r["final_loss"])],
            ["Smoothed loss on the held-out pairs", fmt_number(held_loss)],
            ["smoothing_floor(V, eps)", fmt_number(r["loss_floor"])],
            ["q_hit = 1 - eps + eps / V: what q gives the right token", fmt_number(q_hit)],
            ["Median probability of the right token, held-out positions", fmt_number(np.median(p_right))],
            ["Mean probability of the right token", fmt_number(p_right.mean())],
            ["Largest probability of the right token", fmt_number(p_right.max())],
            ["Held-out exact match", f"{r['val_exact_match']:.1%}"]]
    ranked = np.sort(p_right)
    xs = list(range(len(ranked)))
    svg = line_plot([("p(right), sorted", xs, ranked.tolist()), ("q_hit", [0, xs[-1]], [q_hit, q_hit])],
                    "Probability of the right token, every held-out position", "held-out positions, sorted",
                    "probability")
    return ExampleResult([table(["", "Value"], rows), figure(svg)],
                         f"train({', '.join(f'{k}={v}' for k, v in RUN.items())}), the encoder-decoder page's run, "
                         "then forward on train's held-out sources",
                         data=dict(held_loss=held_loss, floor=r["loss_floor"], final=r["final_loss"],
                                   median=float(np.median(p_right)), q_hit=q_hit, p_right=p_right))
