"""Examples for the encoder-decoder page. Each returns an ExampleResult built from real calls of
model.seq2seq and model.train_seq2seq."""
import re

import numpy as np

from model import seq2seq as s2s
from model import train_seq2seq as task
from model.attention import mha_forward
from model.config import Seq2SeqConfig
from model.gradcheck import numerical_grad
from model.ops import cross_entropy_forward, cross_entropy_backward
from model.optim import decays
from site_builder.run.examples import (ExampleResult, steps_table, matrix, gradcheck_table, stepper, table,
                                   figure, fmt_number, fmt_array, config_label, value_of)
from site_builder.render.plots import line_plot, heatmap
from site_builder.run.trace import trace_locals
from content.hooks import REVERSAL_RUN, reversal_run as trained_reversal

SEED = 0
# A tiny model: two layers on each side (so the memory gradient has two shares), two heads.
TINY = Seq2SeqConfig(src_vocab_size=6, tgt_vocab_size=6, max_len=4, d_model=4, num_heads=2, d_ff=8,
                     num_enc_layers=2, num_dec_layers=2)
# Hand-picked, in the reversal task's numbering (PAD 0, BOS 1, EOS 2, letters from 3):
SRC = np.array([3, 4, 5])             # the source "abc": S = 3
TGT_IN = np.array([1, 5, 4, 3])       # what the decoder reads: BOS, then "cba"
TGT_OUT = np.array([5, 4, 3, 2])      # what it must predict at each position: "cba", then EOS
GREEDY_BOS, GREEDY_EOS = 1, 2     # the task's BOS and EOS ids
TINY_SOURCE = f"init_params({config_label(TINY)}, np.random.default_rng({SEED}))"

# The reversal task's run on this page: the same length as tests/test_seq2seq.py's short run.
RUN_STEPS, RUN_EVAL_EVERY, RUN_NUM_EVAL, RUN_LOG_EVERY = (REVERSAL_RUN[k] for k in
                                                         ("steps", "eval_every", "num_eval", "log_every"))


def tiny_params():
    return s2s.init_params(TINY, np.random.default_rng(SEED))


def ids_text(ids):
    """Token ids as the integers they are (fmt_array would print 3.0000)."""
    return str(np.asarray(ids).tolist())


def tiny_memory(params):
    memory, _ = s2s.encode_forward(params, SRC, TINY)
    return memory


def embedded_source(params):
    X, _ = s2s.embed_forward(SRC, params, s2s.src_table(TINY), TINY)
    return X


# ----------------------------------------------------------------------------- embeddings

def embed_steps():
    params = tiny_params()
    t = trace_locals(s2s.embed_forward, SRC, params, s2s.src_table(TINY), TINY)
    rows = steps_table(t, [("Token ids", "ids"), ("Rows of the table", "E"),
                           ("Times the square root of d_model", "Es"), ("Sinusoidal positions", "PE"),
                           ("Their sum", "X")])
    rows["rows"][0]["value"] = ids_text(value_of(t, "ids"))
    return ExampleResult([rows], TINY_SOURCE + f", src = {SRC.tolist()}",
                         data=dict(X=value_of(t, "X"), scale=value_of(t, "scale")))


def embed_scale():
    """The paper's scale, measured: rows of the table times sqrt(d) against the positions, at the
    reversal task's size (emb_std = d_model ** -0.5 by default)."""
    cfg = task_config()
    params = s2s.init_params(cfg, np.random.default_rng(SEED))
    ids = np.arange(cfg.src_vocab_size)
    t = trace_locals(s2s.embed_forward, ids, params, s2s.src_table(cfg), cfg)
    E, Es, PE = (value_of(t, n) for n in ("E", "Es", "PE"))
    rms = lambda a: float(np.sqrt(np.mean(a * a)))
    rows = [["E: rows of the table, as init_params draws them", fmt_number(rms(E))],
            ["Es = E * sqrt(d_model)", fmt_number(rms(Es))],
            ["PE: the sinusoidal positions", fmt_number(rms(PE))]]
    return ExampleResult([table(["Array", "Root mean square of its entries"], rows)],
                         f"embed_forward(ids = every id once, S = {len(ids)}) at the reversal task's "
                         f"config: {config_label(cfg)}, seed {SEED}",
                         data=dict(E=rms(E), Es=rms(Es), PE=rms(PE), d=cfg.d_model, std=cfg.emb_std))


# ----------------------------------------------------------------------------- encoder

def encoder_layer_steps():
    params = tiny_params()
    X = embedded_source(params)
    t = trace_locals(s2s.encoder_layer_forward, X, params, 0, TINY)
    steps = stepper(t, row=0, steps=[
        ("Input", "X", None),
        ("Self-attention, no mask", "att", None),
        ("First residual add", "X1", ("X", "att")),
        ("LayerNorm after the add", "Xn1", None),
        ("Feed-forward", "ff", None),
        ("Second residual add", "X2", ("Xn1", "ff")),
        ("LayerNorm after the add", "return[0]", None),
    ])
    out = value_of(t, "return[0]")
    check = table(["Every row the layer returns", "Measured"],
                  [["Largest |row mean|", f"{np.abs(out.mean(-1)).max():.1e}"],
                   ["Row variances", fmt_array(out.var(-1))]])
    return ExampleResult([steps, check], TINY_SOURCE + f", src = {SRC.tolist()}, layer 0",
                         data=dict(out=out))


def _encoder_layer_loss(params, X, G):
    return float((s2s.encoder_layer_forward(X, params, 0, TINY)[0] * G).sum())


G_HAND = np.array([[0.1, -0.2, 0.3, 0.05],      # hand-picked upstream gradient, not from a loss
                   [-0.1, 0.25, 0.15, -0.3],
                   [0.2, 0.1, -0.25, 0.15]])


def encoder_layer_backward_gradcheck():
    params = tiny_params()
    X = embedded_source(params)
    _, c = s2s.encoder_layer_forward(X, params, 0, TINY)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    t = trace_locals(s2s.encoder_layer_backward, G_HAND, c, params, 0, grads)
    dX = t.result
    f = lambda: _encoder_layer_loss(params, X, G_HAND)
    rows = [(f'grads["{k}"]', grads[k], numerical_grad(f, params[k]))
            for k in ("enc0.ln2_g", "enc0.ff2_w", "enc0.ln1_b", "enc0.wv")]
    rows.append(("dX", dX, numerical_grad(f, X)))
    parts = [matrix("dX1: the residual path", value_of(t, "dX1")),
             matrix("dXq: through the queries", value_of(t, "dXq")),
             matrix("dXkv: through the keys and values", value_of(t, "dXkv")),
             matrix("dX = dX1 + dXq + dXkv", dX)]
    return ExampleResult(parts + [gradcheck_table(rows)], TINY_SOURCE + ", layer 0, dXn2 hand-picked",
                         data=dict(dX=dX, dX1=value_of(t, "dX1"), dXq=value_of(t, "dXq"), dXkv=value_of(t, "dXkv")))


# ----------------------------------------------------------------------------- decoder

def decoder_input(params):
    Y, _ = s2s.embed_forward(TGT_IN, params, s2s.tgt_table(TINY), TINY)
    return Y


def decoder_layer_trace(params=None):
    params = params if params is not None else tiny_params()
    return trace_locals(s2s.decoder_layer_forward, decoder_input(params), tiny_memory(params), params, 0, TINY)


def decoder_layer_steps():
    t = decoder_layer_trace()
    steps = stepper(t, row=1, steps=[
        ("Input", "Y", None),
        ("Masked self-attention", "self_att", None),
        ("First residual add", "Y1", ("Y", "self_att")),
        ("LayerNorm", "Yn1", None),
        ("Cross-attention to the memory", "cross", None),
        ("Second residual add", "Y2", ("Yn1", "cross")),
        ("LayerNorm", "Yn2", None),
        ("Feed-forward", "ff", None),
        ("Third residual add", "Y3", ("Yn2", "ff")),
        ("LayerNorm", "return[0]", None),
    ])
    return ExampleResult([steps], TINY_SOURCE + f", src = {SRC.tolist()}, tgt_in = {TGT_IN.tolist()}, layer 0")


def cross_attention_steps():
    """mha_forward as decoder layer 0 calls it: queries from Yn1, keys and values from memory."""
    params = tiny_params()
    d = decoder_layer_trace(params)
    Yn1, memory = value_of(d, "Yn1"), value_of(d, "memory")
    t = trace_locals(mha_forward, Yn1, memory, params, "dec0.cross.", TINY.num_heads)
    rows = steps_table(t, [("Queries read the decoder: Xq = Yn1", "Xq"), ("Keys and values read the memory: Xkv", "Xkv"),
                           ("Q = Xq Wq + bq", "Q"), ("K = Xkv Wk + bk", "K"), ("V = Xkv Wv + bv", "V"),
                           ("Weights: one row per target position, one column per source position", "A"),
                           ("Heads side by side", "O"), ("Output projection", "out")])
    gap = float(np.abs(value_of(t, "out") - value_of(d, "cross")).max())
    check = table(["Compared with decoder_layer_forward", "Largest difference"],
                  [["out above against the cross that decoder_layer_forward added to its stream", f"{gap:.1e}"]])
    return ExampleResult([rows, check], TINY_SOURCE + f", src = {SRC.tolist()}, tgt_in = {TGT_IN.tolist()}, "
                                                      "decoder layer 0's cross-attention",
                         data=dict(out=value_of(t, "out"), A=value_of(t, "A"), cross=value_of(d, "cross")))


def cross_attention_weights():
    """The weights of both heads of both decoder layers, as heatmaps: rows are target positions,
    columns source positions. No cell is masked."""
    params = tiny_params()
    _, c = s2s.forward(params, SRC, TGT_IN, TINY, trace=True)
    flat = s2s.flat_trace(c)
    blocks, sums, smallest = [], [], []
    rows_lab = [f"t{t}" for t in range(len(TGT_IN))]
    cols_lab = [f"s{s}" for s in range(len(SRC))]
    for l in range(TINY.num_dec_layers):
        A = flat[f"dec{l}.cross.A"]
        for h in range(TINY.num_heads):
            blocks.append(figure(heatmap(A[h].tolist(), rows_lab, cols_lab,
                                         f"Decoder layer {l}, head {h}: cross-attention weights",
                                         xlabel="source position s", ylabel="target position t", value_name="weight"),
                                 f"Decoder layer {l}, head {h}. Row t: target position, column s: source position."))
        sums.append(float(np.abs(A.sum(-1) - 1).max()))
        smallest.append(float(A.min()))
    rows = [[f"dec{l}.cross.A", f"{sums[l]:.1e}", fmt_number(smallest[l])] for l in range(TINY.num_dec_layers)]
    blocks.append(table(["Weights", "Largest |row sum - 1|", "Smallest weight"], rows))
    return ExampleResult(blocks, TINY_SOURCE + f", forward(..., trace=True), src = {SRC.tolist()}, "
                                               f"tgt_in = {TGT_IN.tolist()}",
                         data=dict(A=[flat[f"dec{l}.cross.A"] for l in range(TINY.num_dec_layers)],
                                   sums=sums, smallest=smallest))


def tiny_dlogits(params):
    logits, c = s2s.forward(params, SRC, TGT_IN, TINY)
    _, c_ce = cross_entropy_forward(logits, TGT_OUT, TINY.label_smoothing)
    return cross_entropy_backward(1.0, c_ce), c


def decoder_layer_backward_tables():
    params = tiny_params()
    dlogits, c = tiny_dlogits(params)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dY = s2s.output_backward(dlogits, c["dec"]["dec"]["out"], params, grads)
    layer = c["dec"]["dec"]["layers"][-1]
    t = trace_locals(s2s.decoder_layer_backward, dY, layer, params, TINY.num_dec_layers - 1, grads)
    names = [("dYn1_q: through the queries of cross-attention", "dYn1_q"),
             ("dYn1 = dY2 + dYn1_q", "dYn1"), ("dmemory: through the keys and values", "dmemory"),
             ("dY: returned to the layer below", "return[0]")]
    return ExampleResult([matrix(label, value_of(t, n)) for label, n in names],
                         TINY_SOURCE + f", the real loss of src = {SRC.tolist()}, tgt_out = {TGT_OUT.tolist()}; "
                                       f"last decoder layer (dec{TINY.num_dec_layers - 1})")


def memory_gradient_shares():
    """decoder_backward adds one share of d loss / d memory per decoder layer: read each share from
    the trace of the real function, and check their sum against what it returns."""
    params = tiny_params()
    dlogits, c = tiny_dlogits(params)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    t = trace_locals(s2s.decoder_backward, dlogits, c["dec"]["dec"], params, grads)
    shares = [(s.locals["l"], s.locals["dmem_l"]) for s in t.steps if "dmem_l" in s.changed]
    total = t.result[1]
    blocks = [matrix(f"Share of decoder layer {l} (dmem_l)", share) for l, share in shares]
    blocks.append(matrix("dmemory: their sum, returned", total))
    # And the gradient the encoder receives, checked by central differences on the memory itself.
    memory = tiny_memory(params)

    def loss_of_memory():
        logits, _ = s2s.decode_forward(params, memory, TGT_IN, TINY)
        return cross_entropy_forward(logits, TGT_OUT, TINY.label_smoothing)[0]
    numeric = numerical_grad(loss_of_memory, memory)
    blocks.append(gradcheck_table([(f"layer {l}'s share alone", share, numeric) for l, share in shares]
                                  + [("dmemory, the sum", total, numeric)]))
    return ExampleResult(blocks, TINY_SOURCE + f", src = {SRC.tolist()}, tgt_in = {TGT_IN.tolist()}, "
                                               f"tgt_out = {TGT_OUT.tolist()}",
                         data=dict(shares=[s for _, s in shares], layers=[l for l, _ in shares], total=total))


def _encoder_names(params):
    return [k for k in params if k.startswith("enc") or k == s2s.src_table(TINY)]


def memory_only_through_cross_attention():
    """Cut every cross-attention value path (wv = 0, bv = 0): memory then moves no output, so its
    gradient and every encoder gradient are exactly 0."""
    rows, data = [], {}
    for label, cut in (("as init_params draws them", False), ("every dec{l}.cross.wv and .bv set to 0", True)):
        params = tiny_params()
        if cut:
            for l in range(TINY.num_dec_layers):
                params[f"dec{l}.cross.wv"][:] = 0.0
                params[f"dec{l}.cross.bv"][:] = 0.0
        memory, c_enc = s2s.encode_forward(params, SRC, TINY)
        logits, c_dec = s2s.decode_forward(params, memory, TGT_IN, TINY)
        _, c_ce = cross_entropy_forward(logits, TGT_OUT, TINY.label_smoothing)
        grads = {k: np.zeros_like(v) for k, v in params.items()}
        dmemory = s2s.decode_backward(cross_entropy_backward(1.0, c_ce), c_dec, params, grads)
        _, full = s2s.loss_and_grads(params, SRC, TGT_IN, TGT_OUT, TINY)
        names = _encoder_names(params)
        enc = max(float(np.abs(full[k]).max()) for k in names)
        zero = sum(int(np.all(full[k] == 0)) for k in names)
        rows.append([label, fmt_number(np.abs(dmemory).max()), fmt_number(enc), f"{zero} of {len(names)}"])
        data[cut] = dict(dmemory=dmemory, enc=enc, zero=zero, names=names)
    return ExampleResult([table(["Cross-attention parameters", "Largest |dmemory|",
                                 "Largest |gradient| of any encoder tensor",
                                 "Encoder tensors whose gradient is exactly 0"], rows)],
                         TINY_SOURCE + f", src = {SRC.tolist()}, tgt_in = {TGT_IN.tolist()}, "
                                       f"tgt_out = {TGT_OUT.tolist()}", data=data)


# ----------------------------------------------------------------------------- output layer

def tied_output_shares():
    """With tie_output, the target table gets two gradients: the output projection's, for every row,
    and the embedding's, only for the ids the decoder read."""
    params = tiny_params()
    dlogits, c = tiny_dlogits(params)
    proj = {k: np.zeros_like(v) for k, v in params.items()}
    s2s.output_backward(dlogits, c["dec"]["dec"]["out"], params, proj)
    _, grads = s2s.loss_and_grads(params, SRC, TGT_IN, TGT_OUT, TINY)
    table_name = s2s.tgt_table(TINY)
    total, share = grads[table_name], proj[table_name]
    rows = []
    for v in range(TINY.tgt_vocab_size):
        rows.append([str(v), "yes" if v in TGT_IN else "no", fmt_number(np.linalg.norm(share[v])),
                     fmt_number(np.linalg.norm(total[v] - share[v])), fmt_number(np.linalg.norm(total[v]))])
    return ExampleResult([table([f"Row of {table_name}", "Read by the decoder?", "|projection share|",
                                 "|embedding share|", "|total gradient|"], rows)],
                         TINY_SOURCE + f", tgt_in = {TGT_IN.tolist()}, tgt_out = {TGT_OUT.tolist()}",
                         data=dict(total=total, share=share))


def output_steps():
    params = tiny_params()
    _, c = s2s.forward(params, SRC, TGT_IN, TINY)
    H = c["dec"]["dec"]["out"]["H"]
    t = trace_locals(s2s.output_forward, H, params, TINY)
    rows = steps_table(t, [("Decoder output H", "H"), ("The tied weights: the target table, transposed", "W"),
                           ("Logits", "logits")])
    return ExampleResult([rows], TINY_SOURCE + f", src = {SRC.tolist()}, tgt_in = {TGT_IN.tolist()}",
                         data=dict(W=value_of(t, "W"), logits=value_of(t, "logits")))


# ----------------------------------------------------------------------------- the whole model

def loss_and_grads_gradcheck():
    params = tiny_params()
    t = trace_locals(s2s.loss_and_grads, params, SRC, TGT_IN, TGT_OUT, TINY)
    loss, grads = t.result
    f = lambda: cross_entropy_forward(s2s.forward(params, SRC, TGT_IN, TINY)[0], TGT_OUT, TINY.label_smoothing)[0]
    names = [s2s.src_table(TINY), "enc0.wq", "enc1.ff1_w", "dec0.cross.wk", "dec1.cross.wv", "dec1.ln3_g", "out_b"]
    check = gradcheck_table([(f'grads["{k}"]', grads[k], numerical_grad(f, params[k])) for k in names])
    rows = steps_table(t, [("Logits", "logits"), ("Label-smoothed loss", "loss"), ("Gradient on the logits", "dlogits")])
    return ExampleResult([rows, check], TINY_SOURCE + f", src = {SRC.tolist()}, tgt_in = {TGT_IN.tolist()}, "
                                                      f"tgt_out = {TGT_OUT.tolist()}",
                         data=dict(loss=loss, grads=grads))


def parameter_table():
    """Every parameter of the reversal task's model, from init_params: one row per name pattern
    (enc{l}.wq stands for one tensor per encoder layer), shape, count and decay (optim.decays)."""
    cfg = task_config()
    params = s2s.init_params(cfg, np.random.default_rng(SEED))
    assert list(params) == s2s.param_names(cfg)
    patterns = {}
    for name, w in params.items():
        pattern = re.sub(r"^(enc|dec)\d+\.", r"\1{l}.", name)
        entry = patterns.setdefault(pattern, dict(shape=w.shape, size=w.size, n=0, decay=decays(name)))
        entry["n"] += 1
    rows = [[p, str(tuple(e["shape"])), f"{e['size']:,}", str(e["n"]), f"{e['size'] * e['n']:,}",
             "yes" if e["decay"] else "no"] for p, e in patterns.items()]
    total = sum(w.size for w in params.values())
    rows.append(["Total", "", "", str(len(params)), f"{total:,}", ""])
    return ExampleResult([table(["Name", "Shape", "Scalars each", "Tensors", "Scalars", "Weight decay"], rows)],
                         f"init_params({config_label(cfg)}), the reversal task's config",
                         data=dict(total=total, count=len(params), patterns=patterns))


# ----------------------------------------------------------------------------- decoding and the task

_CFG = {}


def task_config():
    """The reversal task's config, as train() builds it: one step of the real function, nothing written."""
    if "cfg" not in _CFG:
        _CFG["cfg"] = task.train(steps=1, seed=SEED, out=None, num_eval=1, progress=False)["cfg"]
    return _CFG["cfg"]


def task_examples():
    rng = np.random.default_rng(SEED)
    src, lengths = task.sample_sources(4, rng)
    tgt_in, tgt_out = task.make_targets(src, lengths)
    rows = [[task.decode_text(s), ids_text(s), ids_text(ti), ids_text(to), task.decode_text(to)]
            for s, ti, to in zip(src, tgt_in, tgt_out)]
    ids = [["PAD", str(task.PAD)], ["BOS", str(task.BOS)], ["EOS", str(task.EOS)],
           [f"letters {task.LETTERS[0]} to {task.LETTERS[-1]}", f"{task.FIRST_LETTER} to {task.VOCAB - 1}"]]
    return ExampleResult([table(["Token", "Id"], ids),
                          table(["Source letters", "src ids", "tgt_in ids (decoder reads)",
                                 "tgt_out ids (decoder predicts)", "Answer letters"], rows)],
                         f"sample_sources(4, np.random.default_rng({SEED})), then make_targets",
                         data=dict(src=src, lengths=lengths, tgt_in=tgt_in, tgt_out=tgt_out))


def reversal_run(steps=RUN_STEPS, eval_every=RUN_EVAL_EVERY, num_eval=RUN_NUM_EVAL, log_every=RUN_LOG_EVERY):
    """A real run of model.train_seq2seq.train (trained once per build for this page and the
    label smoothing page, content/hooks.py): its metrics.jsonl read back, and greedy
    decodes of held-out sources with the parameters it returns."""
    run = trained_reversal(steps=steps, seed=SEED, eval_every=eval_every, num_eval=num_eval, log_every=log_every)
    r, metrics = run["result"], run["metrics"]
    losses = [(m["step"], m["loss"]) for m in metrics if "loss" in m]
    evals = [(m["step"], m["val_exact_match"], m["val_token_acc"]) for m in metrics if "val_exact_match" in m]
    floor = r["loss_floor"]
    svg = line_plot([("training loss", [s for s, _ in losses], [l for _, l in losses]),
                     ("floor", [losses[0][0], losses[-1][0]], [floor, floor])],
                    "The reversal task: training loss", "step", "loss (nats)")
    eval_rows = [[str(s), f"{e:.1%}", f"{a:.1%}"] for s, e, a in evals]
    # Greedy decodes of held-out sources, with the trained parameters, by train's own evaluate.
    val_src, val_len = task.sample_sources(num_eval, np.random.default_rng([SEED, 1]))
    _, _, pred = task.evaluate(r["params"], r["cfg"], val_src[:5], val_len[:5])
    dec_rows = [[task.decode_text(s), task.decode_text(s)[::-1], task.decode_text(p),
                 "yes" if task.decode_text(p) == task.decode_text(s)[::-1] else "no"]
                for s, p in zip(val_src[:5], pred)]
    # Where the trained decoder looks: the last decoder layer's cross-attention, mean over heads.
    b = 0
    tin, tout = task.make_targets(val_src[b:b + 1], val_len[b:b + 1])
    _, c = s2s.forward(r["params"], val_src[b], tin[0], r["cfg"], trace=True)
    last = r["cfg"].num_dec_layers - 1
    A = s2s.flat_trace(c)[f"dec{last}.cross.A"].mean(axis=0)
    heat = figure(heatmap(A.tolist(), [token_name(i) for i in tout[0]], [token_name(i) for i in val_src[b]],
                          f"Trained model, decoder layer {last}: cross-attention weights, mean over heads",
                          xlabel="source token", ylabel="target: token to predict", value_name="weight"),
                  f"Held-out source '{task.decode_text(val_src[b])}'. Decoder layer {last}, the mean of its "
                  f"{r['cfg'].num_heads} heads. Each row is a target position, labelled with the token it must "
                  "predict; each column a source position, labelled with its token.")
    summary = [["Loss of the first log_every steps", fmt_number(r["first_loss"])],
               ["Loss of the last log_every steps", fmt_number(r["final_loss"])],
               ["smoothing_floor: the lowest loss label smoothing allows", fmt_number(floor)],
               ["Held-out exact match at the last step", f"{r['val_exact_match']:.1%}"],
               ["Held-out token accuracy at the last step", f"{r['val_token_acc']:.1%}"]]
    return ExampleResult([figure(svg, f"The training loss as train() logs it: the mean of the last {log_every} steps. "
                                      "The flat line is smoothing_floor, the lowest loss label smoothing allows."),
                          table(["", "Measured"], summary),
                          table(["Step", "Held-out exact match", "Held-out token accuracy"], eval_rows),
                          table(["Held-out source", "Its reverse", "Greedy decode", "Right?"], dec_rows), heat],
                         f"train(steps={steps}, seed={SEED}, eval_every={eval_every}, num_eval={num_eval}, "
                         f"log_every={log_every}), every other argument at its default",
                         data=dict(losses=losses, evals=evals, floor=floor, first=r["first_loss"],
                                   final=r["final_loss"], exact=r["val_exact_match"], token=r["val_token_acc"],
                                   decodes=dec_rows, A=A))


def token_name(i):
    """A reversal-task id as a short label: its letter, or PAD, BOS, EOS."""
    i = int(i)
    return {task.PAD: "PAD", task.BOS: "BOS", task.EOS: "EOS"}.get(i) or task.LETTERS[i - task.FIRST_LETTER]


def greedy_steps():
    """greedy_decode on the tiny untrained model, read from the trace of the real function: at each
    pass of its loop, the prefix the decoder read, the last row of the logits, and the id appended."""
    params = tiny_params()
    t = trace_locals(s2s.greedy_decode, params, SRC, TINY, GREEDY_BOS, GREEDY_EOS, TINY.max_len)
    rows = []
    for step in t.steps:
        if "nxt" in step.changed:
            loc = step.locals
            rows.append([ids_text(loc["out"][0]), fmt_array(loc["logits"][0, -1]), ids_text(loc["nxt"])])
    return ExampleResult([table(["Prefix the decoder reads (BOS first)", "Last row of the logits", "Appended id"], rows),
                          table(["Returned", "Value"], [["greedy_decode(...)", ids_text(t.result)]])],
                         TINY_SOURCE + f", src = {SRC.tolist()}, bos_id {GREEDY_BOS}, eos_id {GREEDY_EOS}, "
                                       f"max_len {TINY.max_len}",
                         data=dict(result=t.result, rows=rows))
