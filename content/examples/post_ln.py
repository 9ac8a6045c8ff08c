"""Examples for the Post-LN versus pre-LN page: the encoder layers of model.seq2seq (post-LN) and
the blocks of model.transformer (pre-LN), stacked at the same sizes and run on the same input."""
import numpy as np

from model import seq2seq as s2s
from model import transformer as lm
from model import train_seq2seq as task
from model.config import ModelConfig, Seq2SeqConfig
from model.ops import layer_norm_forward, layer_norm_backward
from site_builder.run.examples import ExampleResult, table, figure, fmt_number, fmt_array, config_label, value_of, steps_table
from site_builder.render.plots import line_plot
from site_builder.run.trace import trace_locals

SEED = 0
DEPTH = 6                         # layers of the stream-norm measurement: the paper's base model has 6
DEPTHS = (1, 2, 4, 8, 16)         # stack depths of the gradient measurement
SEEDS = (0, 1, 2, 3)              # parameter draws averaged over in the gradient measurement


_MEMO = {}


def task_cfg():
    """The reversal task's config, as train() builds it (one real step, nothing written), once."""
    if "cfg" not in _MEMO:
        _MEMO["cfg"] = task.train(steps=1, seed=SEED, out=None, num_eval=1, progress=False)["cfg"]
    return _MEMO["cfg"]


def configs(L):
    """A post-LN encoder stack and a pre-LN block stack of L layers, both at the reversal task's sizes."""
    t = task_cfg()
    post = Seq2SeqConfig(src_vocab_size=t.src_vocab_size, tgt_vocab_size=t.tgt_vocab_size, max_len=t.max_len,
                         d_model=t.d_model, num_heads=t.num_heads, d_ff=t.d_ff, num_enc_layers=L, num_dec_layers=1)
    pre = ModelConfig(vocab_size=t.src_vocab_size, seq_len=t.max_len, emb_dim=t.d_model, num_heads=t.num_heads,
                      ff_dim=t.d_ff, num_layers=L)
    return post, pre


def task_input():
    """The embedded source of one reversal-task sample, as the post-LN encoder receives it."""
    cfg = task_cfg()
    src, _ = task.sample_sources(1, np.random.default_rng(SEED))
    params = s2s.init_params(cfg, np.random.default_rng(SEED))
    X, _ = s2s.embed_forward(src[0], params, s2s.src_table(cfg), cfg)
    return X


def readout(X, seed):
    """A fixed random read-out G: the loss is sum(G * output), so the output's gradient is exactly G."""
    return np.random.default_rng([seed, 99]).standard_normal(X.shape)


def post_stack(X, L, seed):
    post, _ = configs(L)
    params = s2s.init_params(post, np.random.default_rng(seed))
    streams, caches = [X], []
    for l in range(L):
        X, c = s2s.encoder_layer_forward(X, params, l, post)
        streams.append(X)
        caches.append(c)
    return params, streams, caches


def pre_stack(X, L, seed):
    """The language model's blocks, then its final LayerNorm, as model.transformer.forward runs them."""
    _, pre = configs(L)
    params = lm.init_params(pre, np.random.default_rng(seed))
    streams, caches = [X], []
    for l in range(L):
        X, c = lm.block_forward(X, params, l, pre)
        streams.append(X)
        caches.append(c)
    out, c_lnf = layer_norm_forward(X, params["lnf_g"], params["lnf_b"], pre.ln_eps)
    return params, streams, caches, out, c_lnf


def row_norm(X):
    return float(np.linalg.norm(X, axis=-1).mean())


def stream_norms():
    X = task_input()
    _, post, _ = post_stack(X, DEPTH, SEED)
    _, pre, _, _, _ = pre_stack(X, DEPTH, SEED)
    layers = list(range(DEPTH + 1))
    pn, qn = [row_norm(x) for x in post], [row_norm(x) for x in pre]
    svg = line_plot([("post-LN", layers, pn), ("pre-LN", layers, qn)],
                    "Mean row norm of the stream after each layer", "layers applied", "mean |row|")
    rows = [[str(l), fmt_number(a), fmt_number(b)] for l, a, b in zip(layers, pn, qn)]
    d = configs(DEPTH)[0].d_model
    rows.append(["sqrt(d_model)", fmt_number(np.sqrt(d)), ""])
    post_cfg, pre_cfg = configs(DEPTH)
    return ExampleResult([figure(svg, "Post-LN: encoder_layer_forward, one per layer. Pre-LN: block_forward, one per layer."),
                          table(["Layers applied", "Post-LN stream", "Pre-LN stream"], rows)],
                         f"{DEPTH} layers of each, init_params(..., np.random.default_rng({SEED})); "
                         f"post: {config_label(post_cfg)}; pre: {config_label(pre_cfg)}",
                         data=dict(post=pn, pre=qn, d=d))


def grad_norms(L, seed):
    """||dW2|| of the last layer's second feed-forward matrix, and ||dX|| at the input, for one draw."""
    X = task_input()
    G = readout(X, seed)
    p_post, _, c_post = post_stack(X, L, seed)
    g_post = {k: np.zeros_like(v) for k, v in p_post.items()}
    dX_post = s2s.encoder_backward(G, c_post, p_post, g_post)
    p_pre, _, c_pre, _, c_lnf = pre_stack(X, L, seed)
    g_pre = {k: np.zeros_like(v) for k, v in p_pre.items()}
    dX, _, _ = layer_norm_backward(G, c_lnf, p_pre["lnf_g"])
    for l in reversed(range(L)):
        dX = lm.block_backward(dX, c_pre[l], p_pre, l, g_pre)
    return dict(post_last=float(np.linalg.norm(g_post[f"enc{L - 1}.ff2_w"])),
                pre_last=float(np.linalg.norm(g_pre[f"b{L - 1}.ff2_w"])),
                post_first=float(np.linalg.norm(g_post["enc0.ff2_w"])),
                pre_first=float(np.linalg.norm(g_pre["b0.ff2_w"])),
                post_input=float(np.linalg.norm(dX_post)), pre_input=float(np.linalg.norm(dX)))


def last_layer_gradients():
    means = {L: {k: float(np.mean([grad_norms(L, s)[k] for s in SEEDS])) for k in
                 ("post_last", "pre_last", "post_first", "pre_first")} for L in DEPTHS}
    Ls = list(DEPTHS)
    svg = line_plot([("post-LN", Ls, [means[L]["post_last"] for L in Ls]),
                     ("pre-LN", Ls, [means[L]["pre_last"] for L in Ls])],
                    "Gradient norm of the last layer's second feed-forward matrix", "layers L",
                    "mean ||dW2||")
    rows = [[str(L), fmt_number(means[L]["post_last"]), fmt_number(means[L]["pre_last"]),
             fmt_number(means[L]["pre_last"] * np.sqrt(L)), fmt_number(means[L]["post_first"]),
             fmt_number(means[L]["pre_first"])] for L in Ls]
    return ExampleResult([figure(svg), table(["Layers L", "Post-LN, last layer", "Pre-LN, last layer",
                                              "Pre-LN, last layer, times sqrt(L)", "Post-LN, first layer",
                                              "Pre-LN, first layer"], rows)],
                         f"the mean of ||dW2|| over the parameter draws np.random.default_rng(s) for s in {list(SEEDS)}; "
                         "the loss is sum(G * output) with a fixed random G per draw",
                         data=dict(means=means))


def zero_gains():
    """One layer of each with every LayerNorm gain set to 0: what reaches the layer's input."""
    X = task_input()
    G = readout(X, SEED)
    post_cfg, pre_cfg = configs(1)
    p_post = s2s.init_params(post_cfg, np.random.default_rng(SEED))
    p_pre = lm.init_params(pre_cfg, np.random.default_rng(SEED))
    for p, names in ((p_post, ("enc0.ln1_g", "enc0.ln2_g")), (p_pre, ("b0.ln1_g", "b0.ln2_g"))):
        for n in names:
            p[n][:] = 0.0
    _, c = s2s.encoder_layer_forward(X, p_post, 0, post_cfg)
    t_post = trace_locals(s2s.encoder_layer_backward, G, c, p_post, 0, {k: np.zeros_like(v) for k, v in p_post.items()})
    _, c = lm.block_forward(X, p_pre, 0, pre_cfg)
    t_pre = trace_locals(lm.block_backward, G, c, p_pre, 0, {k: np.zeros_like(v) for k, v in p_pre.items()})
    d_post, d_pre = t_post.result, t_pre.result
    rows = [["Post-LN: encoder_layer_backward", fmt_number(np.abs(d_post).max()), f"{np.abs(d_post - G).max():.4g}"],
            ["Pre-LN: block_backward", fmt_number(np.abs(d_pre).max()), f"{np.abs(d_pre - G).max():.4g}"]]
    return ExampleResult([table(["Layer, all LayerNorm gains 0", "Largest |dX|", "Largest |dX - dY|"], rows)],
                         f"one layer of each at the reversal task's sizes, init_params(..., np.random.default_rng({SEED})), "
                         "then every ln*_g set to 0; dY is the fixed random read-out G",
                         data=dict(post=d_post, pre=d_pre, G=G))
