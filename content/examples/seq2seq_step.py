"""Examples for the page "One training step of the 2017 transformer" (seq2seq-step).

The page re-runs a hand derivation of one training step of the 2017 encoder-decoder
(../shared/seeds/000_d9398bb8a994875b.txt: "je suis" -> "i am", d_model 4, 2 heads) through the
real model/seq2seq.py. Every value in a "This code" column is computed here by calling the model.
The only numbers typed in this file are

* HAND: the derivation's own numbers, quoted verbatim as text (each with the title of the
  derivation's section it comes from). They are shown in the "Hand value (derivation)" columns
  and never used to compute anything the code column shows, except where the page says it
  continues from a stated value (the rounded X and Y, and the asserted h);
* the toy's configuration and the weights the derivation does not give, in CHOSEN, each with
  the reason for the choice.

Two runs of the same weights:
* "from the derivation's inputs": the encoder starts from the derivation's rounded X and the
  decoder from its rounded Y (encoder_forward and decoder_forward, which take embedded input);
* "exact inputs": forward() from the token ids, so the embeddings are scaled and the sinusoidal
  positions are added, as the model does.
"""
import json
import math

import numpy as np

from model import seq2seq as s2s
from model.config import Seq2SeqConfig
from model.ops import cross_entropy_forward, cross_entropy_backward, layer_norm_forward
from model.optim import AdamW, noam_lr
from site_builder.run.examples import ExampleResult, table, matrix, fmt_array, fmt_number, config_label
from site_builder.render.plots import SUBSCRIPT, SUPERSCRIPT
from site_builder.run.trace import trace_locals, trace_calls

# ----------------------------------------------------------------------------- the derivation's numbers

# Quoted verbatim from ../shared/seeds/000_d9398bb8a994875b.txt, as text: (section title, value as
# typed there). The derivation writes a few values in TeX; those are given here in the plain notation
# noted beside them. Nothing on the page is computed from these except the stated inputs
# X, Y (the rounded sums) and h (asserted), which the page says it starts from.
HAND = {
    # "How do token embeddings enter the encoder?"
    "sqrt_d": ("How do token embeddings enter the encoder?", "2"),
    "src_emb_je": ("How do token embeddings enter the encoder?", "[0.5, 0, 0.5, 0]"),
    "src_emb_suis": ("How do token embeddings enter the encoder?", "[0, 0.5, 0, 0.5]"),
    "embed_je": ("How do token embeddings enter the encoder?", "[1, 0, 1, 0]"),
    "embed_suis": ("How do token embeddings enter the encoder?", "[0, 1, 0, 1]"),
    # "What is positional encoding and how do I add it?"
    "pe0": ("What is positional encoding and how do I add it?", "[0, 1, 0, 1]"),
    "pe1": ("What is positional encoding and how do I add it?", "[0.84, 0.54, 0.01, 1.00]"),
    "X": ("What is positional encoding and how do I add it?", "[[1, 0, 1, 0], [0, 1, 0, 1]]"),
    # "How does encoder self-attention compute Q, K, and V?"  (W_Q = W_K for head 1)
    "enc_wqk_head1": ("How does encoder self-attention compute Q, K, and V?", "[[1, 0], [0, 1], [1, 0], [0, 1]]"),
    "enc_wv_head1": ("How does encoder self-attention compute Q, K, and V?", "[[1, 0], [0, 1], [0, 0], [0, 0]]"),
    "enc_Q1": ("How does encoder self-attention compute Q, K, and V?", "[[2, 0], [0, 2]]"),
    "enc_K1": ("How does encoder self-attention compute Q, K, and V?", "[[2, 0], [0, 2]]"),
    "enc_V1": ("How does encoder self-attention compute Q, K, and V?", "[[1, 0], [0, 1]]"),
    # "How do I score, scale, softmax, and mix values?"
    "enc_QK1": ("How do I score, scale, softmax, and mix values?", "[[4, 0], [0, 4]]"),
    "sqrt_dk": ("How do I score, scale, softmax, and mix values?", "1.4142"),
    "enc_S1": ("How do I score, scale, softmax, and mix values?", "[[2.828, 0], [0, 2.828]]"),
    "enc_exp": ("How do I score, scale, softmax, and mix values?", "16.92"),
    "enc_sum0": ("How do I score, scale, softmax, and mix values?", "17.92"),
    "enc_A1": ("How do I score, scale, softmax, and mix values?", "[[0.944, 0.056], [0.056, 0.944]]"),
    "enc_rowsum": ("How do I score, scale, softmax, and mix values?", "1"),
    "enc_O1": ("How do I score, scale, softmax, and mix values?", "[[0.944, 0.056], [0.056, 0.944]]"),
    "enc_mha": ("How do I score, scale, softmax, and mix values?",
                "[[0.944, 0.056, 0.944, 0.056], [0.056, 0.944, 0.056, 0.944]]"),
    # "What is Add & Norm (layer norm)?"
    "enc_X1": ("What is Add & Norm (layer norm)?", "[[1.944, 0.056, 1.944, 0.056], [0.056, 1.944, 0.056, 1.944]]"),
    "mu0": ("What is Add & Norm (layer norm)?", "1.0"),
    "dev0": ("What is Add & Norm (layer norm)?", "[0.944, -0.944, 0.944, -0.944]"),
    "var0": ("What is Add & Norm (layer norm)?", "0.891"),
    "sigma0": ("What is Add & Norm (layer norm)?", "0.944"),
    "LN1": ("What is Add & Norm (layer norm)?", "[[1, -1, 1, -1], [-1, 1, -1, 1]]"),
    # "How does the feed-forward network work?"
    "ffn_Z0": ("How does the feed-forward network work?", "[1, -1, 1, -1, 1, -1, 1, -1]"),
    "ffn_A0": ("How does the feed-forward network work?", "[1, 0, 1, 0, 1, 0, 1, 0]"),
    "ffn_out0": ("How does the feed-forward network work?", "[2, 0, 2, 0]"),
    "ENC": ("How does the feed-forward network work?", "[[1, -1, 1, -1], [-1, 1, -1, 1]]"),
    # "How does the decoder run masked self-attention?"
    "Y": ("How does the decoder run masked self-attention?", "[[1, 1, 0, 0], [0, 0, 1, 1]]"),
    "self_A0": ("How does the decoder run masked self-attention?", "[1, 0]"),
    "self_A1": ("How does the decoder run masked self-attention?", "[0.5, 0.5]"),
    "DEC1": ("How does the decoder run masked self-attention?", "[[1, 1, -1, -1], [-1, -1, 1, 1]]"),
    # "How does cross-attention connect encoder and decoder?"
    "cross_wq_head1": ("How does cross-attention connect encoder and decoder?", "[[1, 0], [0, -1], [0, 0], [0, 0]]"),
    "cross_wkv_head1": ("How does cross-attention connect encoder and decoder?", "[[1, 0], [0, 1], [0, 0], [0, 0]]"),
    "cross_Q1": ("How does cross-attention connect encoder and decoder?", "[[1, -1], [-1, 1]]"),
    "cross_K1": ("How does cross-attention connect encoder and decoder?", "[[1, -1], [-1, 1]]"),
    "cross_QK1": ("How does cross-attention connect encoder and decoder?", "[[2, -2], [-2, 2]]"),
    "cross_S1": ("How does cross-attention connect encoder and decoder?", "[[1.414, -1.414], [-1.414, 1.414]]"),
    "cross_exp": ("How does cross-attention connect encoder and decoder?", "[4.10, 0.243]"),
    "cross_sum0": ("How does cross-attention connect encoder and decoder?", "4.34"),
    "cross_A1": ("How does cross-attention connect encoder and decoder?", "[[0.944, 0.056], [0.056, 0.944]]"),
    "cross_O1": ("How does cross-attention connect encoder and decoder?", "[[0.888, -0.888], [-0.888, 0.888]]"),
    "h": ("How does cross-attention connect encoder and decoder?", "[1, 0, -1, 0]"),
    # "How do I project to vocabulary and get probabilities?"  (W_out = I_4, b = 0)
    "z": ("How do I project to vocabulary and get probabilities?", "[1, 0, -1, 0]"),
    "exp_z": ("How do I project to vocabulary and get probabilities?", "[2.718, 1, 0.368, 1]"),
    "denom": ("How do I project to vocabulary and get probabilities?", "5.086"),
    "p": ("How do I project to vocabulary and get probabilities?", "[0.535, 0.197, 0.072, 0.197]"),
    # "What is the cross-entropy loss with label smoothing?"
    "ce_plain": ("What is the cross-entropy loss with label smoothing?", "2.63"),
    "eps_over_V": ("What is the cross-entropy loss with label smoothing?", "0.025"),
    "q": ("What is the cross-entropy loss with label smoothing?", "[0.025, 0.025, 0.925, 0.025]"),
    "log_p": ("What is the cross-entropy loss with label smoothing?", "[-0.626, -1.627, -2.63, -1.627]"),
    "loss": ("What is the cross-entropy loss with label smoothing?", "2.53"),
    # "How does backprop flow through the transformer?"
    "dz": ("How does backprop flow through the transformer?", "[0.510, 0.172, -0.853, 0.172]"),
    "dz_sum": ("How does backprop flow through the transformer?", "0.001"),
    "dh": ("How does backprop flow through the transformer?", "[0.510, 0.172, -0.853, 0.172]"),
    # "How does Adam update a weight?"  (epsilon typed 10^{-9}, lr(1) typed 1.75 x 10^{-7})
    "beta1": ("How does Adam update a weight?", "0.9"),
    "beta2": ("How does Adam update a weight?", "0.98"),
    "adam_eps": ("How does Adam update a weight?", "1e-9"),
    "warmup": ("How does Adam update a weight?", "4000"),
    "d_model_lr": ("How does Adam update a weight?", "512"),
    "g": ("How does Adam update a weight?", "0.510"),
    "c1": ("How does Adam update a weight?", "0.1"),           # the divisor in m_hat = 0.0510 / 0.1
    "c2": ("How does Adam update a weight?", "0.02"),          # the divisor in v_hat = 0.00520 / 0.02
    "m1": ("How does Adam update a weight?", "0.0510"),
    "v1": ("How does Adam update a weight?", "0.00520"),
    "m_hat": ("How does Adam update a weight?", "0.510"),
    "v_hat": ("How does Adam update a weight?", "0.260"),
    "direction": ("How does Adam update a weight?", "1.0"),
    "lr1": ("How does Adam update a weight?", "1.75e-7"),
    "w1": ("How does Adam update a weight?", "0.99999983"),
    "lr4000": ("How does Adam update a weight?", "0.000699"),
    "w4000": ("How does Adam update a weight?", "0.999301"),
    # "What toy setup am I using?"  (the "Real (base paper)" column of its size table; 37,000 typed with a comma)
    "base_d_model": ("What toy setup am I using?", "512"),
    "base_heads": ("What toy setup am I using?", "8"),
    "base_dk": ("What toy setup am I using?", "64"),
    "base_d_ff": ("What toy setup am I using?", "2048"),
    "base_layers": ("What toy setup am I using?", "6"),
    "base_vocab": ("What toy setup am I using?", "37000"),
}

NOT_GIVEN = "not given"


def hand_text(key):
    """The quoted text; a tuple of keys joins several quoted values."""
    if not key:
        return NOT_GIVEN
    if isinstance(key, tuple):
        return ", ".join(HAND[k][1] for k in key)
    return HAND[key][1]


def hand(key):
    """A quoted hand value as an array (the text is valid JSON)."""
    return np.array(json.loads(HAND[key][1]), dtype=float)


# ----------------------------------------------------------------------------- the toy

SRC_VOCAB = ("je", "suis")
TGT_VOCAB = ("BOS", "i", "am", "EOS")
SRC_IDS = np.array([0, 1])            # je suis
TGT_IN = np.array([0, 1])             # BOS i: the target shifted right, what the decoder reads
TGT_OUT = np.array([1, 2])            # i am: what each position must predict
AM = TGT_VOCAB.index("am")
SCORED = 1                            # the derivation scores the last position, the one predicting "am"
LR_D_MODEL = int(hand_text("d_model_lr"))   # the derivation's learning rate uses the base model's d_model


def toy_cfg(**kw):
    """The derivation's toy: d_model 4, 2 heads (d_k 2), d_ff 8, one layer each side, LayerNorm
    epsilon 0, label smoothing 0.1. tie_output=False, because its W_out = I is not the target table."""
    base = dict(src_vocab_size=len(SRC_VOCAB), tgt_vocab_size=len(TGT_VOCAB), d_model=4, num_heads=2,
                d_ff=8, num_enc_layers=1, num_dec_layers=1, ln_eps=0.0, label_smoothing=0.1,
                tie_output=False)
    base.update(kw)
    return Seq2SeqConfig(**base)


def two_heads(head):
    """Both heads get the same (d, d_k) block: head i reads columns i*d_k:(i+1)*d_k of Q, K, V."""
    return np.hstack([head, head])


# The weights the derivation does not give, and why each was chosen (hand-picked here).
CHOSEN = {
    "second heads": "Head 1 of every attention (the second) uses head 0's weights: the derivation says its "
                    "head 2 'lands identically'.",
    "tgt_emb": "Rows BOS and i are the derivation's Y divided by √d_model, so that scaling gives its Y; "
               "rows am and EOS are 0 (never looked up).",
    "dec0.self": "Decoder self-attention: W_Q = 0, so every score is 0 and the causal mask alone sets the "
                 "weights; W_K, W_V and W_O are the identity.",
    "dec0.cross.wo": "Cross-attention's W_O is the identity (the derivation does not say).",
    "dec0.ff": "The decoder's FFN reuses the encoder's W_1 = [I | I] and W_2 = [I; I] "
               "(the derivation: 'same pattern as encoder').",
}


def toy_params():
    """Every parameter of the toy, hand-set: nothing random survives (each entry is overwritten)."""
    cfg = toy_cfg()
    p = {k: np.zeros_like(v) for k, v in s2s.init_params(cfg, np.random.default_rng(0)).items()}
    for k in p:                                   # LayerNorm gamma 1; beta and every bias stay 0
        if k.endswith("_g"):
            p[k][:] = 1.0
    d = cfg.d_model
    eye = np.eye(d)
    widen, narrow = np.hstack([eye, eye]), np.vstack([eye, eye])          # W1 = [I | I], W2 = [I; I]
    p["src_emb"] = np.stack([hand("src_emb_je"), hand("src_emb_suis")])
    p["tgt_emb"][:2] = hand("Y") / math.sqrt(d)                           # chosen: see CHOSEN
    p["enc0.wq"] = p["enc0.wk"] = two_heads(hand("enc_wqk_head1"))
    p["enc0.wv"] = two_heads(hand("enc_wv_head1"))
    p["enc0.wo"] = eye.copy()
    p["enc0.ff1_w"], p["enc0.ff2_w"] = widen.copy(), narrow.copy()
    p["dec0.self.wq"] = np.zeros((d, d))                                  # chosen: uniform causal weights
    p["dec0.self.wk"], p["dec0.self.wv"], p["dec0.self.wo"] = eye.copy(), eye.copy(), eye.copy()
    p["dec0.cross.wq"] = two_heads(hand("cross_wq_head1"))
    p["dec0.cross.wk"] = p["dec0.cross.wv"] = two_heads(hand("cross_wkv_head1"))
    p["dec0.cross.wo"] = eye.copy()
    p["dec0.ff1_w"], p["dec0.ff2_w"] = widen.copy(), narrow.copy()
    p["out_w"] = eye.copy()                                               # W_out = I_4
    return {k: np.array(v, dtype=float) for k, v in p.items()}


RUN = "source 'je suis', target in 'BOS i', target out 'i am'"
# The first example (every weight of the toy) names the whole config; the page's other examples
# point back to it, not repeat it (issue 27: it was 13 words in each of 19 lines).
TOY_SOURCE = (f"hand-set weights (toy_params in content/examples/seq2seq_step.py) in "
              f"{config_label(toy_cfg())}; {RUN}")
SOURCE = f"the toy's hand-set weights and config (toy_params, toy_cfg in content/examples/seq2seq_step.py); {RUN}"


# ----------------------------------------------------------------------------- the two runs

def hand_run(params=None):
    """The derivation's route: the encoder from its rounded X, the decoder from its rounded Y.
    Returns (flat trace, cache, logits) with flat_trace's names."""
    cfg, params = toy_cfg(), params if params is not None else toy_params()
    X, Y = hand("X"), hand("Y")
    memory, c_enc = s2s.encoder_forward(X, params, cfg, trace=True)
    logits, c_dec = s2s.decoder_forward(Y, memory, params, cfg, trace=True)
    cache = dict(enc=dict(emb=dict(trace=dict(X=X)), enc=c_enc), dec=dict(emb=dict(trace=dict(X=Y)), dec=c_dec))
    return s2s.flat_trace(cache), cache, logits


def exact_run(params=None):
    """The model's own route: forward() from the ids, embeddings scaled and positions added."""
    cfg, params = toy_cfg(), params if params is not None else toy_params()
    logits, cache = s2s.forward(params, SRC_IDS, TGT_IN, cfg, trace=True)
    return s2s.flat_trace(cache), cache, logits


# ----------------------------------------------------------------------------- formatting

def shape_text(v):
    s = np.shape(v)
    return "scalar" if s == () else str(s)


def fmt_sci(x):
    return f"{float(x):.4e}"


def fmt_long(x):
    return f"{float(x):.10f}"


def fmt_six(x):
    return f"{float(x):.6f}"


def fmt_bool(b):
    return "yes" if b else "no"


TWO_RUN_COLS = ["Step", "Code", "Hand value (derivation)", "This code, from the derivation's inputs",
                "This code, exact inputs", "Shape"]
ONE_RUN_COLS = ["Step", "Code", "Hand value (derivation)", "This code", "Shape"]


def two_run_table(spec, th, te, caption=""):
    """spec: (label, code, hand key or None, getter(trace) -> value). One row per step, both runs."""
    rows, values = [], {}
    for label, code, key, get in spec:
        vh, ve = get(th), get(te)
        rows.append([label, code, hand_text(key), fmt_array(vh), fmt_array(ve), shape_text(vh)])
        values[code] = (key, np.asarray(vh), np.asarray(ve))
    return table(TWO_RUN_COLS, rows, caption), values


def one_run_table(spec, caption=""):
    """spec: (label, code, hand key or None, value, formatter or None)."""
    rows, values = [], {}
    for label, code, key, v, fmt in spec:
        rows.append([label, code, hand_text(key), (fmt or fmt_array)(v), shape_text(v)])
        values[code] = (key, np.asarray(v))
    return table(ONE_RUN_COLS, rows, caption), values


def nth_value(trace, name, n=1):
    """The value of a local right after the n-th statement that bound or changed it."""
    return [s for s in trace.steps if name in s.changed][n - 1].locals[name]


# ----------------------------------------------------------------------------- 0. the toy's weights

def toy_weights():
    cfg, p = toy_cfg(), toy_params()
    blocks = [table(["Weight", "Where its value comes from"], [
        ["src_emb (je, suis)", "the derivation, before scaling by √d_model"],
        ["enc0.wq, enc0.wk, enc0.wv (head 0)", "the derivation"],
        ["enc0.wq, enc0.wk, enc0.wv (head 1)", "chosen: " + CHOSEN["second heads"]],
        ["enc0.wo, enc0.ff1_w, enc0.ff2_w", "the derivation (W_O = I_4, W_1 = [I | I], W_2 = [I; I], biases 0)"],
        ["tgt_emb", "chosen: " + CHOSEN["tgt_emb"]],
        ["dec0.self.*", "chosen: " + CHOSEN["dec0.self"]],
        ["dec0.cross.wq, wk, wv (head 0)", "the derivation"],
        ["dec0.cross.wq, wk, wv (head 1), dec0.cross.wo", "chosen: " + CHOSEN["second heads"] + " " + CHOSEN["dec0.cross.wo"]],
        ["dec0.ff1_w, dec0.ff2_w", "chosen: " + CHOSEN["dec0.ff"]],
        ["out_w, out_b", "the derivation (W_out = I_4, b = 0)"],
        ["every bias, every LayerNorm beta; every LayerNorm gamma", "the derivation: 0; 1"],
    ])]
    for name in ("src_emb", "tgt_emb", "enc0.wq", "enc0.wv", "enc0.ff1_w", "dec0.self.wq",
                 "dec0.cross.wq", "dec0.cross.wv", "out_w"):
        blocks.append(matrix(f'params["{name}"]', p[name]))
    dk = cfg.head_dim
    heads = table(["Check", "Value"], [
        ["cfg.head_dim = d_model / num_heads", str(dk)],
        ['head 0 of params["enc0.wq"] (columns 0 to d_k - 1) equals the derivation\'s W_Q⁽¹⁾ (its head 1)',
         fmt_bool(np.array_equal(p["enc0.wq"][:, :dk], hand("enc_wqk_head1")))],
        ["head 1 equals head 0", fmt_bool(np.array_equal(p["enc0.wq"][:, dk:], p["enc0.wq"][:, :dk]))],
        ["parameters set by hand / parameters of init_params", f"{len(p)} / {len(s2s.param_names(cfg))}"],
    ])
    blocks.insert(1, heads)
    return ExampleResult(blocks, TOY_SOURCE, data=dict(params=p, head_dim=dk))


# ----------------------------------------------------------------------------- 1. embeddings and positions

def embed_inputs():
    cfg, p = toy_cfg(), toy_params()
    te, cache, _ = exact_run(p)
    scale = cache["enc"]["emb"]["scale"]
    X_hand, Y_hand = hand("X"), hand("Y")
    enc, v1 = one_run_table([
        ("√d_model", 'c["scale"]', "sqrt_d", scale, fmt_number),
        ("E[je], before scaling", "src.E[0]", "src_emb_je", te["src.E"][0], None),
        ("embed(je) = E[je] · √d_model", "src.Es[0]", "embed_je", te["src.Es"][0], None),
        ("embed(suis)", "src.Es[1]", "embed_suis", te["src.Es"][1], None),
        ("PE at position 0", "src.PE[0]", "pe0", te["src.PE"][0], None),
        ("PE at position 1", "src.PE[1]", "pe1", te["src.PE"][1], None),
    ], caption="The encoder's input. The code column is embed_forward's trace, from the ids.")
    rounded, v2 = one_run_table([
        ("The derivation's X (rounded)", "hand X", "X", X_hand, None),
        ("Exact X", "src.X", None, te["src.X"], None),
        ("Largest |exact - rounded|", "np.abs(src.X - X).max()", None, float(np.abs(te["src.X"] - X_hand).max()), fmt_number),
        ("The rounded X equals embed alone (PE dropped)", "np.array_equal(X, src.Es)", None,
         fmt_bool(np.array_equal(X_hand, te["src.Es"])), str),
        ("The derivation's Y (rounded)", "hand Y", "Y", Y_hand, None),
        ("Exact Y = embed + PE", "tgt.X", None, te["tgt.X"], None),
        ("The rounded Y equals embed alone (PE dropped)", "np.array_equal(Y, tgt.Es)", None,
         fmt_bool(np.array_equal(Y_hand, te["tgt.Es"])), str),
    ], caption="What the rounding does: the rows the derivation keeps, next to the exact sums.")
    return ExampleResult([enc, rounded], SOURCE,
                         data=dict(values={**v1, **v2}, scale=scale, exact_X=te["src.X"], exact_Y=te["tgt.X"]))


# ----------------------------------------------------------------------------- 2. encoder self-attention

def encoder_attention():
    th, _, _ = hand_run()
    te, _, _ = exact_run()
    dk = toy_cfg().head_dim
    spec = [
        ("Q, head 0", "enc0.att.Qh[0]", "enc_Q1", lambda t: t["enc0.att.Qh"][0]),
        ("K, head 0", "enc0.att.Kh[0]", "enc_K1", lambda t: t["enc0.att.Kh"][0]),
        ("V, head 0", "enc0.att.Vh[0]", "enc_V1", lambda t: t["enc0.att.Vh"][0]),
        ("Q Kᵀ, head 0", "enc0.att.QK[0]", "enc_QK1", lambda t: t["enc0.att.QK"][0]),
        ("S = Q Kᵀ / √d_k, head 0", "enc0.att.S[0]", "enc_S1", lambda t: t["enc0.att.S"][0]),
        ("e^S[0, 0] alone", "np.exp(enc0.att.S[0, 0, 0])", "enc_exp", lambda t: np.exp(t["enc0.att.S"][0, 0, 0])),
        ("Σ e^S, row 0", "np.exp(enc0.att.S[0, 0]).sum()", "enc_sum0", lambda t: np.exp(t["enc0.att.S"][0, 0]).sum()),
        ("A = softmax(S), head 0", "enc0.att.A[0]", "enc_A1", lambda t: t["enc0.att.A"][0]),
        ("Row sums of A, every head", "enc0.att.A.sum(-1)", "enc_rowsum", lambda t: t["enc0.att.A"].sum(-1)),
        ("A V, head 0", "enc0.att.Oh[0]", "enc_O1", lambda t: t["enc0.att.Oh"][0]),
        ("A V, head 1 (the derivation's head 2: 'lands identically')", "enc0.att.Oh[1]", None, lambda t: t["enc0.att.Oh"][1]),
        ("Heads side by side", "enc0.att.O", None, lambda t: t["enc0.att.O"]),
        ("MHA(X) = O W_O", "enc0.att.out", "enc_mha", lambda t: t["enc0.att.out"]),
    ]
    tab, values = two_run_table(spec, th, te, caption="Heads are numbered from 0, as the code's head axis is; the derivation's head 1 is head 0.")
    sqrt_dk = one_run_table([("√d_k", "math.sqrt(Qh.shape[-1])", "sqrt_dk", math.sqrt(dk), fmt_number)])[0]
    return ExampleResult([tab, sqrt_dk], SOURCE, data=dict(values=values, sqrt_dk=math.sqrt(dk)))


# ----------------------------------------------------------------------------- 3. add & norm

def ln_trace(X1, cfg=None):
    cfg = cfg or toy_cfg()
    d = cfg.d_model
    return trace_locals(layer_norm_forward, X1, np.ones(d), np.zeros(d), cfg.ln_eps)


def add_norm():
    th, _, _ = hand_run()
    te, _, _ = exact_run()
    th, te = dict(th, ln=ln_trace(th["enc0.X1"])), dict(te, ln=ln_trace(te["enc0.X1"]))
    spec = [
        ("X + MHA(X)", "enc0.X1", "enc_X1", lambda t: t["enc0.X1"]),
        ("μ, row 0", "mu[0]", "mu0", lambda t: nth_value(t["ln"], "mu")[0, 0]),
        ("x - μ, row 0", "Xc[0]", "dev0", lambda t: nth_value(t["ln"], "Xc")[0]),
        ("σ², row 0", "var[0]", "var0", lambda t: nth_value(t["ln"], "var")[0, 0]),
        ("σ, row 0", "1 / s[0]", "sigma0", lambda t: 1.0 / nth_value(t["ln"], "s")[0, 0]),
        ("LN₁ = LayerNorm(X + MHA(X))", "enc0.Xn1", "LN1", lambda t: t["enc0.Xn1"]),
        ("Mean of each row of LN₁", "enc0.Xn1.mean(-1)", None, lambda t: t["enc0.Xn1"].mean(-1)),
        ("Variance of each row of LN₁", "enc0.Xn1.var(-1)", None, lambda t: t["enc0.Xn1"].var(-1)),
    ]
    tab, values = two_run_table(spec, th, te, caption="μ, x - μ, σ² and s are the locals of layer_norm_forward, "
                                                      "traced on the same X + MHA(X) with γ = 1, β = 0, ε = 0.")
    return ExampleResult([tab], SOURCE, data=dict(values=values))


# ----------------------------------------------------------------------------- 4. feed-forward

def feed_forward():
    th, _, _ = hand_run()
    te, _, _ = exact_run()
    spec = [
        ("Input, row 0", "enc0.ff.Xn[0]", None, lambda t: t["enc0.ff.Xn"][0]),
        ("x W₁ + b₁, row 0", "enc0.ff.Z[0]", "ffn_Z0", lambda t: t["enc0.ff.Z"][0]),
        ("ReLU, row 0", "enc0.ff.A[0]", "ffn_A0", lambda t: t["enc0.ff.A"][0]),
        ("FFN = ReLU(...) W₂ + b₂, row 0", "enc0.ff.out[0]", "ffn_out0", lambda t: t["enc0.ff.out"][0]),
        ("Second residual add", "enc0.X2", None, lambda t: t["enc0.X2"]),
        ("ENC = LayerNorm(...), the memory", "enc0.Xn2", "ENC", lambda t: t["enc0.Xn2"]),
        ("Variance of each row of ENC", "enc0.Xn2.var(-1)", None, lambda t: t["enc0.Xn2"].var(-1)),
    ]
    tab, values = two_run_table(spec, th, te)
    return ExampleResult([tab], SOURCE, data=dict(values=values))


# ----------------------------------------------------------------------------- 5. masked self-attention

def masked_attention():
    th, _, _ = hand_run()
    te, _, _ = exact_run()
    spec = [
        ("Y, the decoder's input", "dec0.Y", "Y", lambda t: t["dec0.Y"]),
        ("The causal mask (1 = visible)", "dec0.self.mask", None, lambda t: t["dec0.self.mask"].astype(float)),
        ("Q = Y W_Q (W_Q = 0, chosen)", "dec0.self.Q", None, lambda t: t["dec0.self.Q"]),
        ("Masked scores, head 0", "dec0.self.S_masked[0]", None, lambda t: t["dec0.self.S_masked"][0]),
        ("A, head 0, row 0", "dec0.self.A[0, 0]", "self_A0", lambda t: t["dec0.self.A"][0, 0]),
        ("A, head 0, row 1", "dec0.self.A[0, 1]", "self_A1", lambda t: t["dec0.self.A"][0, 1]),
        ("Weight on the hidden key, every head", "dec0.self.A[:, 0, 1]", None, lambda t: t["dec0.self.A"][:, 0, 1]),
        ("Masked self-attention's output", "dec0.self.out", None, lambda t: t["dec0.self.out"]),
        ("Y + SelfAttn(Y)", "dec0.Y1", None, lambda t: t["dec0.Y1"]),
        ("DEC₁ = LayerNorm(Y + SelfAttn(Y))", "dec0.Yn1", "DEC1", lambda t: t["dec0.Yn1"]),
    ]
    tab, values = two_run_table(spec, th, te, caption="The masked score is -inf; softmax turns it into exactly 0.")
    return ExampleResult([tab], SOURCE, data=dict(values=values))


# ----------------------------------------------------------------------------- 6. cross-attention

def cross_attention():
    th, _, _ = hand_run()
    te, _, _ = exact_run()
    spec = [
        ("Queries come from DEC₁", "dec0.cross.Xq", "DEC1", lambda t: t["dec0.cross.Xq"]),
        ("Keys and values come from ENC", "dec0.cross.Xkv", "ENC", lambda t: t["dec0.cross.Xkv"]),
        ("Q = DEC₁ W_Q, head 0", "dec0.cross.Qh[0]", "cross_Q1", lambda t: t["dec0.cross.Qh"][0]),
        ("K = ENC W_K, head 0", "dec0.cross.Kh[0]", "cross_K1", lambda t: t["dec0.cross.Kh"][0]),
        ("V = ENC W_V, head 0", "dec0.cross.Vh[0]", "cross_K1", lambda t: t["dec0.cross.Vh"][0]),
        ("Q Kᵀ, head 0", "dec0.cross.QK[0]", "cross_QK1", lambda t: t["dec0.cross.QK"][0]),
        ("S = Q Kᵀ / √d_k, head 0", "dec0.cross.S[0]", "cross_S1", lambda t: t["dec0.cross.S"][0]),
        ("e^S, row 0", "np.exp(dec0.cross.S[0, 0])", "cross_exp", lambda t: np.exp(t["dec0.cross.S"][0, 0])),
        ("Σ e^S, row 0", "np.exp(dec0.cross.S[0, 0]).sum()", "cross_sum0", lambda t: np.exp(t["dec0.cross.S"][0, 0]).sum()),
        ("A, head 0", "dec0.cross.A[0]", "cross_A1", lambda t: t["dec0.cross.A"][0]),
        ("Row sums of A, every head", "dec0.cross.A.sum(-1)", None, lambda t: t["dec0.cross.A"].sum(-1)),
        ("O = A V, head 0", "dec0.cross.Oh[0]", "cross_O1", lambda t: t["dec0.cross.Oh"][0]),
        ("Cross-attention's output", "dec0.cross.out", None, lambda t: t["dec0.cross.out"]),
    ]
    T, S = th["dec0.cross.Xq"].shape[0], th["dec0.cross.Xkv"].shape[0]
    tab, values = two_run_table(spec, th, te, caption=f"Queries: the decoder's {T} target positions. Keys and values: "
                                                      f"the encoder's {S} source positions. No mask: every target "
                                                      "position sees every source position.")
    return ExampleResult([tab], SOURCE, data=dict(values=values))


def decoder_output():
    """The rest of the decoder layer, and the h the derivation asserts."""
    th, _, _ = hand_run()
    te, _, _ = exact_run()
    spec = [
        ("DEC₁ + CrossAttn", "dec0.Y2", None, lambda t: t["dec0.Y2"]),
        ("LayerNorm", "dec0.Yn2", None, lambda t: t["dec0.Yn2"]),
        ("FFN", "dec0.ff.out", None, lambda t: t["dec0.ff.out"]),
        ("LayerNorm(... + FFN): the decoder's output", "dec0.Yn3", None, lambda t: t["dec0.Yn3"]),
        ("h: the row of the position that predicts 'am'", f"dec0.Yn3[{SCORED}]", "h", lambda t: t["dec0.Yn3"][SCORED]),
        ("Mean and variance of h", f"dec0.Yn3[{SCORED}].mean(), .var()", None,
         lambda t: np.array([t["dec0.Yn3"][SCORED].mean(), t["dec0.Yn3"][SCORED].var()])),
    ]
    tab, values = two_run_table(spec, th, te)
    h = hand("h")
    t = trace_locals(layer_norm_forward, h[None], np.ones(h.size), np.zeros(h.size), 0.0)
    stated, v2 = one_run_table([
        ("The stated h", "h", "h", h, None),
        ("Its mean μ", "mu", None, nth_value(t, "mu")[0, 0], fmt_number),
        ("Its variance σ²", "var", None, nth_value(t, "var")[0, 0], fmt_number),
        ("LayerNorm(h), γ = 1, β = 0, ε = 0", "layer_norm_forward(h, ...)", None, t.result[0][0], None),
        ("LayerNorm(h) equals h", "np.allclose(LayerNorm(h), h)", None, fmt_bool(np.allclose(t.result[0][0], h)), str),
    ], caption="Why the stated h cannot be the output of the last Add & Norm: a row LayerNorm made (γ = 1, β = 0) "
               "has variance 1, so LayerNorm leaves it unchanged. The stated h has another variance, and "
               "LayerNorm changes it.")
    return ExampleResult([tab, stated], SOURCE, data=dict(values=values, stated=v2))


# ----------------------------------------------------------------------------- 7. output and loss

def stated_h_step(params=None):
    """Output layer, loss and logit gradient for the one position the derivation scores, from its stated h."""
    cfg, params = toy_cfg(), params if params is not None else toy_params()
    h = hand("h")[None]                                        # (1, d): one position
    logits, c_out = s2s.output_forward(h, params, cfg)
    target = np.array([AM])
    t_ce = trace_locals(cross_entropy_forward, logits, target, cfg.label_smoothing)
    loss, c_ce = t_ce.result
    plain, _ = cross_entropy_forward(logits, target, 0.0)
    dlogits = cross_entropy_backward(1.0, c_ce)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dH = s2s.output_backward(dlogits, c_out, params, grads)
    return dict(h=h, logits=logits, logp=nth_value(t_ce, "logp", 2), P=c_ce["P"], q=c_ce["q"], loss=loss,
                plain=plain, dlogits=dlogits, dH=dH, grads=grads, c_out=c_out, params=params)


def output_and_loss():
    r = stated_h_step()
    z, P, q = r["logits"][0], r["P"][0], r["q"][0]
    tab, values = one_run_table([
        ("h (stated by the derivation)", "H", "h", r["h"][0], None),
        ("z = h W_out + b", "logits[0]", "z", z, None),
        ("e^z", "np.exp(logits[0])", "exp_z", np.exp(z), None),
        ("Σ e^z", "np.exp(logits[0]).sum()", "denom", np.exp(z).sum(), fmt_number),
        ("p = softmax(z)", 'c["P"][0]', "p", P, None),
        ("p[am]", f'c["P"][0, {AM}]', None, P[AM], fmt_number),
        ("Plain cross-entropy, -log p[am]", "cross_entropy_forward(logits, [am], 0.0)", "ce_plain", r["plain"], fmt_number),
        ("ε_ls / V", f'c["q"][0, 0]', "eps_over_V", q[0], fmt_number),
        ("q, smoothed targets", 'c["q"][0]', "q", q, None),
        ("log p", "logp[0]", "log_p", r["logp"][0], None),
        ("L = -Σ q log p", "cross_entropy_forward(logits, [am], 0.1)", "loss", r["loss"], fmt_number),
    ], caption="From the stated h, one position: output_forward with W_out = I (tie_output=False), then "
               "cross_entropy_forward on that position alone.")
    # The same head on the h the code computes, and the mean over both positions (what loss_and_grads returns).
    cfg, params = toy_cfg(), toy_params()
    rows, own = [], {}
    for name, run in (("from the derivation's inputs", hand_run), ("exact inputs", exact_run)):
        t, _, logits = run(params)
        one, _ = cross_entropy_forward(logits[SCORED:SCORED + 1], TGT_OUT[SCORED:SCORED + 1], cfg.label_smoothing)
        mean, _ = cross_entropy_forward(logits, TGT_OUT, cfg.label_smoothing)
        own[name] = dict(h=t["out.H"][SCORED], p=t["out.probs"][SCORED], one=one, mean=mean)
    lag, _ = s2s.loss_and_grads(params, SRC_IDS, TGT_IN, TGT_OUT, cfg)
    a, b = own["from the derivation's inputs"], own["exact inputs"]
    other = table(["Quantity", "Code", "From the derivation's inputs", "Exact inputs", "Shape"], [
        ["h, as the code computes it", f"out.H[{SCORED}]", fmt_array(a["h"]), fmt_array(b["h"]), shape_text(a["h"])],
        ["p", f"out.probs[{SCORED}]", fmt_array(a["p"]), fmt_array(b["p"]), shape_text(a["p"])],
        ["Loss at the scored position alone", "cross_entropy_forward(logits[1:2], ...)", fmt_number(a["one"]), fmt_number(b["one"]), "scalar"],
        ["Loss, mean over both target positions", "cross_entropy_forward(logits, [i, am], 0.1)", fmt_number(a["mean"]), fmt_number(b["mean"]), "scalar"],
        ["loss_and_grads (starts from ids)", "loss_and_grads(params, src, tgt_in, tgt_out, cfg)", "does not apply", fmt_number(lag), "scalar"],
    ], caption="What the same weights give when the step continues from the h the code computes instead. "
               "On the derivation's inputs the two positions mirror each other, so their losses are equal.")
    tied_cfg = toy_cfg(tie_output=True)
    tied = {k: v for k, v in params.items() if k != "out_w"}
    z_tied, _ = s2s.output_forward(r["h"], tied, tied_cfg)
    tie = table(["Output layer", "Code", "z from the stated h", "Shape"], [
        ["Untied: W = out_w = I (the derivation's W_out)", "output_forward(h, params, tie_output=False)", fmt_array(z), shape_text(z)],
        ["Tied: W = tgt_embᵀ (the model's default)", "output_forward(h, params, tie_output=True)", fmt_array(z_tied[0]), shape_text(z_tied[0])],
    ], caption="Why this page unties the output layer: tied to this toy's target table, W would not be I.")
    return ExampleResult([tab, other, tie], SOURCE,
                         data=dict(values=values, own=own, loss_and_grads=lag, z_tied=z_tied[0]))


# ----------------------------------------------------------------------------- 8. backward at the logits

def logit_gradient():
    r = stated_h_step()
    dz, dW, dh = r["dlogits"][0], r["grads"]["out_w"], r["dH"][0]
    tab, values = one_run_table([
        ("p - q", "P - q", None, r["P"][0] - r["q"][0], None),
        ("dL/dz", "cross_entropy_backward(1.0, c)[0]", "dz", dz, None),
        ("Σ dL/dz", "dlogits.sum()", "dz_sum", dz.sum(), fmt_sci),
        ("dL/dW_out = hᵀ dL/dz", 'grads["out_w"]', None, dW, None),
        ("dL/dW_out[0, 0]", 'grads["out_w"][0, 0]', "g", dW[0, 0], fmt_number),
        ("dL/db", 'grads["out_b"]', None, r["grads"]["out_b"], None),
        ("dL/dh = dL/dz W_outᵀ", "dH[0]", "dh", dh, None),
    ], caption="From the stated h, at the one position the derivation scores, so dL/dz is p - q itself "
               "(the mean over one position divides by 1).")
    # With N positions (what loss_and_grads differentiates), each row is (p - q) / N.
    cfg, params = toy_cfg(), toy_params()
    _, _, logits = exact_run(params)
    _, c = cross_entropy_forward(logits, TGT_OUT, cfg.label_smoothing)
    d_all = cross_entropy_backward(1.0, c)
    n = TGT_OUT.size
    mean_tab = table(["Exact inputs, both positions", "Code", "Value", "Shape"], [
        ["N, the number of positions averaged", "targets.size", str(n), "scalar"],
        ["dL/dz", "cross_entropy_backward(1.0, c)", fmt_array(d_all), shape_text(d_all)],
        ["(p - q) / N", '(c["P"] - c["q"]) / N', fmt_array((c["P"] - c["q"]) / n), shape_text(d_all)],
        ["Sum of each row", "dlogits.sum(-1)", fmt_array(d_all.sum(-1)), shape_text(d_all.sum(-1))],
    ], caption="The mean over positions divides each row by N: loss_and_grads' logit gradient.")
    return ExampleResult([tab, mean_tab], SOURCE,
                         data=dict(values=values, d_all=d_all, P_all=c["P"], q_all=c["q"], n=n))


# ----------------------------------------------------------------------------- 9. gradient paths

def _backward_both_positions(run, params, cut=False):
    """Loss over both positions, backward through every layer; returns grads, dmemory, dlogits."""
    cfg = toy_cfg()
    params = {k: v.copy() for k, v in params.items()}
    if cut:                                    # cross-attention's value path removed
        params["dec0.cross.wv"][:] = 0.0
        params["dec0.cross.bv"][:] = 0.0
    _, cache, logits = run(params)
    _, c_ce = cross_entropy_forward(logits, TGT_OUT, cfg.label_smoothing)
    dlogits = cross_entropy_backward(1.0, c_ce)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dY, dmemory = s2s.decoder_backward(dlogits, cache["dec"]["dec"], params, grads)
    dX = s2s.encoder_backward(dmemory, cache["enc"]["enc"], params, grads)
    return dict(grads=grads, dmemory=dmemory, dX=dX, dY=dY, params=params, cache=cache, dlogits=dlogits)


ENC_NAMES = ("enc0.wq", "enc0.wk", "enc0.wv", "enc0.wo", "enc0.ff1_w", "enc0.ff2_w", "enc0.ln1_g", "enc0.ln2_g")


def masked_gradient(run, params):
    """Loss on position 0 only: the gradient that reaches Y at position 1, and dS of the masked entry."""
    cfg = toy_cfg()
    _, cache, logits = run(params)
    _, c_ce = cross_entropy_forward(logits[:1], TGT_OUT[:1], cfg.label_smoothing)
    dlogits = np.zeros_like(logits)
    dlogits[:1] = cross_entropy_backward(1.0, c_ce)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    (dY, _), traces = trace_calls(s2s.decoder_backward, ["model.attention.mha_backward"],
                                  dlogits, cache["dec"]["dec"], params, grads)
    self_call = [t for t in traces["model.attention.mha_backward"] if t.arguments["p"] == "dec0.self."][0]
    dS = self_call.final_locals()["dS"]
    return dict(dY=dY, dS=dS)


def gradient_paths():
    params = toy_params()
    rows, data = [], {}
    for name, run in (("hand", hand_run), ("exact", exact_run)):
        t, _, _ = run(params)
        full = _backward_both_positions(run, params)
        cut = _backward_both_positions(run, params, cut=True)
        masked = masked_gradient(run, params)
        data[name] = dict(A_hidden=t["dec0.self.A"][:, 0, 1], dS_hidden=masked["dS"][:, 0, 1],
                          dY1=masked["dY"][1], dY0=masked["dY"][0],
                          dmemory=full["dmemory"], dmemory_cut=cut["dmemory"],
                          enc_norm=float(np.sqrt(sum((full["grads"][k] ** 2).sum() for k in ENC_NAMES))),
                          enc_norm_cut=float(np.sqrt(sum((cut["grads"][k] ** 2).sum() for k in ENC_NAMES))),
                          dX=full["dX"], dX_cut=cut["dX"])
    h, e = data["hand"], data["exact"]
    said = "Masked positions had zero forward attention weight → zero gradient."
    rows = [
        ["Weight on the hidden key (position 0 looking at 1), every head", "dec0.self.A[:, 0, 1]",
         "zero forward attention weight", fmt_array(h["A_hidden"]), fmt_array(e["A_hidden"]), shape_text(h["A_hidden"])],
        ["Gradient on that hidden score", 'dS[:, 0, 1] in mha_backward("dec0.self.")',
         "zero gradient", fmt_array(h["dS_hidden"]), fmt_array(e["dS_hidden"]), shape_text(h["dS_hidden"])],
        ["Loss at position 0 only: gradient reaching Y at position 1", "dY[1]",
         "zero gradient (causality)", fmt_array(h["dY1"]), fmt_array(e["dY1"]), shape_text(h["dY1"])],
        ["The three rows above are exactly 0", "== 0.0", "zero", *(fmt_bool(np.all(x["A_hidden"] == 0) and np.all(x["dS_hidden"] == 0)
                                                                        and np.all(x["dY1"] == 0)) for x in (h, e)), "scalar"],
        ["... and at position 0", "dY[0]", NOT_GIVEN, fmt_array(h["dY0"]), fmt_array(e["dY0"]), shape_text(h["dY0"])],
        ["Gradient on the memory ENC", "dmemory", NOT_GIVEN, fmt_array(h["dmemory"]), fmt_array(e["dmemory"]),
         shape_text(h["dmemory"])],
        ["Norm of the encoder's weight gradients", "norm of grads[enc0.*]", NOT_GIVEN,
         fmt_number(h["enc_norm"]), fmt_number(e["enc_norm"]), "scalar"],
        ["Same, with cross-attention's W_V and b_V set to 0: dmemory", "dmemory", NOT_GIVEN,
         fmt_array(h["dmemory_cut"]), fmt_array(e["dmemory_cut"]), shape_text(h["dmemory_cut"])],
        ["... and the norm of the encoder's weight gradients", "norm of grads[enc0.*]", NOT_GIVEN,
         fmt_number(h["enc_norm_cut"]), fmt_number(e["enc_norm_cut"]), "scalar"],
        ["Every entry exactly 0 with W_V = 0", "np.all(dmemory == 0)", NOT_GIVEN,
         fmt_bool(np.all(h["dmemory_cut"] == 0)), fmt_bool(np.all(e["dmemory_cut"] == 0)), "scalar"],
    ]
    tab = table(TWO_RUN_COLS[:2] + ["What the derivation says"] + TWO_RUN_COLS[3:], rows,
                caption="The derivation's words: '" + said + "' Losses over both target positions, except the "
                        "masked-gradient rows, where only position 0 carries a loss.")
    return ExampleResult([tab], SOURCE, data=data)


# ----------------------------------------------------------------------------- 10. Adam

ADAM_KW = dict(betas=(float(hand_text("beta1")), float(hand_text("beta2"))), eps=float(hand_text("adam_eps")),
               weight_decay=0.0)
WARMUP = int(hand_text("warmup"))


def adam_one_step(lr, traced=True):
    """AdamW.step (weight decay 0: the paper's Adam) on every toy parameter, with the gradient of the
    stated-h step: only the output layer's is non-zero. Returns the trace, the optimizer, before/after."""
    r = stated_h_step()
    params, grads = r["params"], r["grads"]
    before = params["out_w"][0, 0]
    opt = AdamW(params, lr=lr, **ADAM_KW)
    t = trace_locals(opt.step, params, grads, lr) if traced else opt.step(params, grads, lr)
    return dict(trace=t, opt=opt, before=float(before), after=float(params["out_w"][0, 0]),
                g=float(grads["out_w"][0, 0]), grads=grads)


def update_of(trace, name):
    """The `update` AdamW.step computed for parameter `name` (the loop's local, at that iteration)."""
    for s in trace.steps:
        if "update" in s.changed and s.locals.get("name") == name:
            return s.locals["update"]
    raise KeyError(name)


def adam_step():
    lr1 = noam_lr(1, LR_D_MODEL, WARMUP)
    lr4000 = noam_lr(WARMUP, LR_D_MODEL, WARMUP)
    a1 = adam_one_step(lr1)
    a4000 = adam_one_step(lr4000, traced=False)
    t, opt = a1["trace"], a1["opt"]
    c1, c2 = t.final_locals()["c1"], t.final_locals()["c2"]
    m, v = opt.m["out_w"][0, 0], opt.v["out_w"][0, 0]
    direction = update_of(t, "out_w")[0, 0]
    t = opt.t                                  # the step this call of AdamW.step ran
    sub, sup = str(t).translate(SUBSCRIPT), str(t).translate(SUPERSCRIPT)
    at_t = f"; at t = {t}"
    tab, values = one_run_table([
        ("g = dL/dW_out[0, 0]", 'grads["out_w"][0, 0]', "g", a1["g"], fmt_number),
        ("t, the step this AdamW.step ran (counted from 1)", "opt.t", None, t, str),
        ("β₁, β₂", "opt.betas", ("beta1", "beta2"), np.array(opt.betas), None),
        ("ε", "opt.eps", "adam_eps", opt.eps, fmt_sci),
        (f"mₜ = β₁ mₜ₋₁ + (1 - β₁) g{at_t}, from m = 0: m{sub}", 'opt.m["out_w"][0, 0]', "m1", m, fmt_six),
        (f"vₜ = β₂ vₜ₋₁ + (1 - β₂) g²{at_t}, from v = 0: v{sub}", 'opt.v["out_w"][0, 0]', "v1", v, fmt_six),
        (f"1 - β₁ᵗ, 1 - β₂ᵗ{at_t}: 1 - β₁{sup}, 1 - β₂{sup}", "c1, c2", ("c1", "c2"), np.array([c1, c2]), None),
        (f"m̂ₜ = mₜ / (1 - β₁ᵗ){at_t}: m̂{sub}", "m / c1", "m_hat", m / c1, fmt_number),
        (f"v̂ₜ = vₜ / (1 - β₂ᵗ){at_t}: v̂{sub}", "v / c2", "v_hat", v / c2, fmt_number),
        (f"m̂ₜ / (√v̂ₜ + ε){at_t}", 'update for "out_w", [0, 0]', "direction", direction, fmt_long),
        (f"lr(1), d_model = {LR_D_MODEL}", f"noam_lr(1, {LR_D_MODEL})", "lr1", lr1, fmt_sci),
        ("W_out[0, 0] after step 1", 'params["out_w"][0, 0]', "w1", a1["after"], fmt_long),
        (f"lr({WARMUP}), d_model = {LR_D_MODEL}", f"noam_lr({WARMUP}, {LR_D_MODEL})", "lr4000", lr4000, fmt_sci),
        (f"W_out[0, 0] after one step at lr({WARMUP})", 'params["out_w"][0, 0]', "w4000", a4000["after"], fmt_long),
    ], caption="AdamW.step with weight_decay = 0 (the paper's Adam), on every toy parameter; only the output "
               "layer has a non-zero gradient. The derivation's learning rate uses the base model's d_model, "
               "not the toy's.")
    # What the shortcuts hide: the toy's own d_model, and the direction at a real step 4000.
    toy_d = toy_cfg().d_model
    opt2 = AdamW({"w": np.array([a1["before"]])}, lr=0.0, **ADAM_KW)
    g = {"w": np.array([a1["g"]])}
    for _ in range(WARMUP - 1):
        opt2.step({"w": np.array([a1["before"]])}, g, lr=0.0)
    t2 = trace_locals(opt2.step, {"w": np.array([a1["before"]])}, g, 0.0)
    dir4000 = float(t2.final_locals()["update"][0])
    shortcuts = table(["Shortcut", "Code", "Value"], [
        ["lr(1) at the toy's d_model", f"noam_lr(1, {toy_d})", fmt_sci(noam_lr(1, toy_d, WARMUP))],
        ["lr(4000) at the toy's d_model", f"noam_lr({WARMUP}, {toy_d})", fmt_sci(noam_lr(WARMUP, toy_d, WARMUP))],
        [f"The step-{WARMUP} direction, after {WARMUP} steps with this same gradient", f"update at opt.t == {WARMUP}",
         fmt_long(dir4000)],
        ["The step-1 direction", "update at opt.t == 1", fmt_long(direction)],
    ], caption=f"The derivation applies lr({WARMUP}) to the step-1 direction. With the same gradient at every "
               f"step, m̂ = g and v̂ = g² at every t, so the direction at t = {WARMUP} is the same number.")
    return ExampleResult([tab, shortcuts], SOURCE,
                         data=dict(values=values, t=t, lr1=lr1, lr4000=lr4000, m=m, v=v, c1=c1, c2=c2,
                                   direction=direction, w1=a1["after"], w4000=a4000["after"], g=a1["g"],
                                   dir4000=dir4000, opt_t=opt2.t))


def facts():
    """For prose: the derivation's warm-up length (its own number, from the HAND table)."""
    return ExampleResult([], "the derivation's values, as HAND in content/examples/seq2seq_step.py quotes them",
                         data=dict(warmup=WARMUP))


def output_weight_name():
    """The parameter the toy's output layer uses as its weight, read from the run: the one
    matrix whose gradient the stated-h step's output_backward fills (out_w untied, the target
    table tied)."""
    moved = [name for name, g in stated_h_step()["grads"].items() if g.ndim == 2 and g.any()]
    if len(moved) != 1:
        raise ValueError(f"output_backward filled the gradients of {moved}, expected one weight matrix")
    return moved[0]


def toy_sizes():
    """The config and sequence lengths every example of the page runs with: the shape blocks
    are sized by them (`config: seq2seq_step:toy_sizes`). For prose, from the same run: whether
    its output layer is tied, and the name of the output weight it really has."""
    cfg = toy_cfg()
    return ExampleResult([], SOURCE, data=dict(
        config=cfg, lengths=dict(S=len(SRC_IDS), T=len(TGT_IN)), tie_output=cfg.tie_output,
        output_layer="tied to the target embedding" if cfg.tie_output else "untied, with a weight of its own",
        output_weight=output_weight_name()))


def three_digits(x):
    """x to three significant digits, trailing zeros kept, as the derivation prints (4.10)."""
    return np.format_float_positional(x, precision=3, unique=False, fractional=False, trim="k")


def cross_exp_gap():
    """Why the derivation's e^S differs from the code's: it exponentiates rounded scores. Each
    candidate rounding of the exact S = sqrt(2) row, exponentiated and rounded the way the
    derivation prints (three significant digits), against its typed e^S."""
    te, _, _ = exact_run()
    th, _, _ = hand_run()
    S = th["dec0.cross.S"][0, 0]                      # the derivation's inputs give the exact sqrt(2) row
    typed_S = hand("cross_S1")[0]
    typed_exp = hand("cross_exp")
    candidates = [("the code: S exactly", S), ("S as the derivation types it", typed_S)]
    for decimals in (2, 1):
        candidates.append((f"S rounded to {decimals} decimal{'s' if decimals > 1 else ''}", np.round(S, decimals)))
    rows, matches = [], {}
    for label, s in candidates:
        e = np.exp(s)
        shown = [float(f"{x:.3g}") for x in e]
        matches[label] = [bool(np.isclose(a, b)) for a, b in zip(shown, typed_exp)]
        rows.append([label, fmt_array(s), fmt_array(e), ", ".join(three_digits(x) for x in e),
                     ", ".join("yes" if m else "no" for m in matches[label])])
    tab = table(["Scores of row 0, head 0", "S", "e^S", "e^S to 3 digits", "Equals the derivation's typed e^S"],
                rows, caption=f"The derivation types e^S = {hand_text('cross_exp')} and S = {hand_text('cross_S1')}.")
    first = np.round(S, 2)
    return ExampleResult([tab], SOURCE, data=dict(
        typed_exp=hand_text("cross_exp"), exact=float(np.exp(S[0])), from_typed_S=float(np.exp(typed_S[0])),
        two_decimals=float(first[0]), from_two_decimals=float(np.exp(first[0])),
        first_matches=[label for label, m in matches.items() if m[0]],
        second_matches=[label for label, m in matches.items() if m[1]]))
