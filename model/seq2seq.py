"""The post-LN encoder-decoder of Vaswani et al. (2017), "Attention Is All You Need", forward and backward.

    X = src_emb[src] * sqrt(d) + PE[:S]
    encoder layer:  X1 = X + SelfAttn(X);         Xn1 = LN1(X1)
                    X2 = Xn1 + FFN(Xn1);          Xn2 = LN2(X2)        memory = last Xn2
    Y = tgt_emb[tgt_in] * sqrt(d) + PE[:T]
    decoder layer:  Y1 = Y + MaskedSelfAttn(Y);   Yn1 = LN1(Y1)
                    Y2 = Yn1 + CrossAttn(Yn1, memory);  Yn2 = LN2(Y2)    queries from the decoder,
                    Y3 = Yn2 + FFN(Yn2);          Yn3 = LN3(Y3)          keys and values from memory
    logits = H tgt_emb^T + out_b  (tie_output)  or  H out_w + out_b
    loss = mean over positions of -sum_k q_k log p_k,  q = (1 - eps) onehot + eps / V

Post-LN: the LayerNorm comes after each residual add, so there is no final LayerNorm; every
sublayer's output is already normalised. Parameters live in one flat dict (see `param_names`);
`grads` has exactly the same keys. Every function takes one sequence (T,) or a batch (B, T).

Every forward takes `trace=False`. With trace=True each cache also keeps every named
intermediate (for the documentation site's worked pages); backward never reads them.
"""
import math

import numpy as np

from model import ModelInputError
from model.attention import mha_forward, mha_backward, causal_mask, split_heads, merge_heads
from model.config import Seq2SeqConfig
from model.ops import (xavier_uniform, linear_forward, linear_backward, relu_forward,
                       layer_norm_forward, layer_norm_backward, softmax_forward, embedding_forward,
                       embedding_backward, cross_entropy_forward, cross_entropy_backward)
from model.transformer import ffn_forward, ffn_backward

MHA_SUFFIXES = ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo")


# ----------------------------------------------------------------------------- parameters

def src_table(cfg: Seq2SeqConfig) -> str:
    return "emb" if cfg.share_vocab else "src_emb"


def tgt_table(cfg: Seq2SeqConfig) -> str:
    return "emb" if cfg.share_vocab else "tgt_emb"


def param_names(cfg: Seq2SeqConfig) -> list:
    """Every parameter name, in init order. Weight matrices end with .wq/.wk/.wv/.wo/_w, so
    optim.decays picks exactly them; embeddings, biases and LayerNorm gains/shifts do not decay."""
    names = ["emb"] if cfg.share_vocab else ["src_emb", "tgt_emb"]
    for l in range(cfg.num_enc_layers):
        p = f"enc{l}."
        names += [p + s for s in MHA_SUFFIXES] + [p + "ln1_g", p + "ln1_b"]
        names += [p + "ff1_w", p + "ff1_b", p + "ff2_w", p + "ff2_b", p + "ln2_g", p + "ln2_b"]
    for l in range(cfg.num_dec_layers):
        p = f"dec{l}."
        names += [p + "self." + s for s in MHA_SUFFIXES] + [p + "ln1_g", p + "ln1_b"]
        names += [p + "cross." + s for s in MHA_SUFFIXES] + [p + "ln2_g", p + "ln2_b"]
        names += [p + "ff1_w", p + "ff1_b", p + "ff2_w", p + "ff2_b", p + "ln3_g", p + "ln3_b"]
    names += ["out_b"] if cfg.tie_output else ["out_w", "out_b"]
    return names


def init_params(cfg: Seq2SeqConfig, rng: np.random.Generator) -> dict:
    """Xavier uniform weight matrices, zero biases, LayerNorm gains 1 and shifts 0,
    embeddings from N(0, cfg.emb_std^2). Overwrite entries freely to hand-set weights."""
    d, F, dt = cfg.d_model, cfg.d_ff, cfg.dtype
    p = {}
    if cfg.share_vocab:
        p["emb"] = (rng.standard_normal((cfg.tgt_vocab_size, d)) * cfg.emb_std).astype(dt)
    else:
        p["src_emb"] = (rng.standard_normal((cfg.src_vocab_size, d)) * cfg.emb_std).astype(dt)
        p["tgt_emb"] = (rng.standard_normal((cfg.tgt_vocab_size, d)) * cfg.emb_std).astype(dt)

    def add_mha(prefix):
        for w in ("q", "k", "v", "o"):
            p[prefix + "w" + w] = xavier_uniform(d, d, rng, dt)
            p[prefix + "b" + w] = np.zeros(d, dt)

    def add_ffn(prefix):
        p[prefix + "ff1_w"], p[prefix + "ff1_b"] = xavier_uniform(d, F, rng, dt), np.zeros(F, dt)
        p[prefix + "ff2_w"], p[prefix + "ff2_b"] = xavier_uniform(F, d, rng, dt), np.zeros(d, dt)

    def add_ln(name):
        p[name + "_g"], p[name + "_b"] = np.ones(d, dt), np.zeros(d, dt)

    for l in range(cfg.num_enc_layers):
        add_mha(f"enc{l}.")
        add_ln(f"enc{l}.ln1")
        add_ffn(f"enc{l}.")
        add_ln(f"enc{l}.ln2")
    for l in range(cfg.num_dec_layers):
        add_mha(f"dec{l}.self.")
        add_ln(f"dec{l}.ln1")
        add_mha(f"dec{l}.cross.")
        add_ln(f"dec{l}.ln2")
        add_ffn(f"dec{l}.")
        add_ln(f"dec{l}.ln3")
    if not cfg.tie_output:
        p["out_w"] = xavier_uniform(d, cfg.tgt_vocab_size, rng, dt)
    p["out_b"] = np.zeros(cfg.tgt_vocab_size, dt)
    assert list(p) == param_names(cfg)
    return p


# ----------------------------------------------------------------------------- input checks

def check_ids(ids, vocab_size: int, max_len: int, name="ids"):
    """Reject what NumPy would turn into a confusing error or a silent wrong answer."""
    ids = np.asarray(ids)
    if ids.ndim not in (1, 2) or not np.issubdtype(ids.dtype, np.integer):
        raise ModelInputError(f"{name} must be integers of shape (T,) or (B, T), "
                              f"got dtype {ids.dtype} and shape {ids.shape}")
    if ids.shape[-1] == 0 or ids.shape[-1] > max_len:
        raise ModelInputError(f"{name} has length {ids.shape[-1]}, but it must be between 1 and "
                              f"max_len = {max_len}; shorten the sequence or raise Seq2SeqConfig.max_len")
    bad = (ids < 0) | (ids >= vocab_size)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ModelInputError(f"{name}{list(where)} = {int(ids[where])} is out of range: "
                              f"token ids must be in [0, {vocab_size - 1}] (vocab size {vocab_size})")
    return ids


def check_pair(src_ids, tgt_ids, cfg: Seq2SeqConfig, tgt_name="tgt_in_ids"):
    src = check_ids(src_ids, cfg.src_vocab_size, cfg.max_len, "src_ids")
    tgt = check_ids(tgt_ids, cfg.tgt_vocab_size, cfg.max_len, tgt_name)
    if src.shape[:-1] != tgt.shape[:-1]:
        raise ModelInputError(f"src_ids {src.shape} and {tgt_name} {tgt.shape} must both be single "
                              f"sequences (T,) or batches (B, T) with the same B")
    return src, tgt


def check_memory(memory, tgt, cfg: Seq2SeqConfig):
    memory = np.asarray(memory)
    if memory.ndim != tgt.ndim + 1 or memory.shape[:-2] != tgt.shape[:-1] or memory.shape[-1] != cfg.d_model:
        raise ModelInputError(f"memory must be (S, d_model) for one target (T,) or (B, S, d_model) for "
                              f"a batch (B, T); got memory {memory.shape} with target {tgt.shape}, "
                              f"d_model = {cfg.d_model}")
    return memory


# ----------------------------------------------------------------------------- embeddings

def sinusoidal_positions(T: int, d: int, dtype="float64"):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)): (T, d).
    Fixed, not learned; an odd d keeps the sine of its last pair."""
    pos = np.arange(T, dtype=np.float64)[:, None]                  # (T, 1)
    two_i = np.arange(0, d, 2, dtype=np.float64)                    # (ceil(d/2),)
    angle = pos / 10000.0 ** (two_i / d)                            # (T, ceil(d/2))
    PE = np.zeros((T, d))
    PE[:, 0::2] = np.sin(angle)
    PE[:, 1::2] = np.cos(angle[:, :d // 2])
    return PE.astype(dtype)


def embed_forward(ids, params, table: str, cfg: Seq2SeqConfig, trace=False):
    """X = table[ids] * sqrt(d_model) + PE[:T]: (..., T) ids -> (..., T, d)."""
    E, _ = embedding_forward(ids, params[table])
    scale = cfg.d_model ** 0.5              # the paper's scale: a small table meets unit-sized PE
    Es = E * scale
    PE = sinusoidal_positions(ids.shape[-1], cfg.d_model, E.dtype)
    X = Es + PE
    c = dict(ids=ids, table=table, scale=scale)
    if trace:
        c["trace"] = dict(ids=ids, E=E, Es=Es, PE=PE, X=X)
    return X, c


def embed_backward(dX, c, grads):
    """PE is fixed, so only the table learns: a scatter-add of the scaled gradient."""
    dE = dX * c["scale"]
    grads[c["table"]] += embedding_backward(dE, c["ids"], grads[c["table"]].shape[0])


# ----------------------------------------------------------------------------- documentation trace

def attention_trace(Xq, Xkv, params, p, num_heads, mask=None):
    """Every step of multi-head attention, for worked pages only: recomputes what mha_forward
    computed, with the same primitives, keeping each intermediate (tests check it agrees)."""
    Q, _ = linear_forward(Xq, params[p + "wq"], params[p + "bq"])
    K, _ = linear_forward(Xkv, params[p + "wk"], params[p + "bk"])
    V, _ = linear_forward(Xkv, params[p + "wv"], params[p + "bv"])
    Qh, Kh, Vh = (split_heads(M, num_heads) for M in (Q, K, V))   # (..., h, T, dk)
    QK = Qh @ Kh.swapaxes(-1, -2)            # (..., h, Tq, Tk)
    S = QK / math.sqrt(Qh.shape[-1])         # a Python float: float32 stays float32
    S_masked = S if mask is None else np.where(mask, S, -np.inf)
    A, _ = softmax_forward(S_masked)
    Oh = A @ Vh                              # (..., h, Tq, dk): each head's mixed values
    O = merge_heads(Oh)                      # (..., Tq, d): the heads side by side
    out, _ = linear_forward(O, params[p + "wo"], params[p + "bo"])
    return dict(Xq=Xq, Xkv=Xkv, Q=Q, K=K, V=V, Qh=Qh, Kh=Kh, Vh=Vh, QK=QK, S=S, mask=mask,
                S_masked=S_masked, A=A, Oh=Oh, O=O, out=out)


def flat_trace(cache) -> dict:
    """The intermediates of forward(..., trace=True) under flat dotted names, in forward order:
    src.E, src.X, enc0.att.Qh, enc0.att.S, enc0.att.A, enc0.X1, enc0.Xn1, enc0.ff.Z, ...,
    tgt.X, dec0.self.A, dec0.Yn1, dec0.cross.A, ..., out.logits, out.probs."""
    flat = {}

    def add(prefix, d):
        for k, v in d.items():
            if isinstance(v, dict):
                add(f"{prefix}.{k}", v)
            elif v is not None:
                flat[f"{prefix}.{k}"] = v

    add("src", cache["enc"]["emb"]["trace"])
    for l, c in enumerate(cache["enc"]["enc"]):
        add(f"enc{l}", c["trace"])
    add("tgt", cache["dec"]["emb"]["trace"])
    for l, c in enumerate(cache["dec"]["dec"]["layers"]):
        add(f"dec{l}", c["trace"])
    add("out", cache["dec"]["dec"]["trace"])
    return flat


def ffn_trace(Xn, out, params, p):
    """The FFN's steps for worked pages: Z = Xn W1 + b1 (before ReLU), A = ReLU(Z), out = A W2 + b2."""
    Z, _ = linear_forward(Xn, params[p + "ff1_w"], params[p + "ff1_b"])
    A, _ = relu_forward(Z)
    return dict(Xn=Xn, Z=Z, A=A, out=out)


# ----------------------------------------------------------------------------- encoder

def encoder_layer_forward(X, params, l: int, cfg: Seq2SeqConfig, trace=False):
    """LN(x + SelfAttn(x)), then LN(x + FFN(x)). No mask: every source position sees every other."""
    p = f"enc{l}."
    att, c_att = mha_forward(X, X, params, p, cfg.num_heads)
    X1 = X + att
    Xn1, c_ln1 = layer_norm_forward(X1, params[p + "ln1_g"], params[p + "ln1_b"], cfg.ln_eps)
    ff, c_ff = ffn_forward(Xn1, params, p)                  # each position on its own
    X2 = Xn1 + ff
    Xn2, c_ln2 = layer_norm_forward(X2, params[p + "ln2_g"], params[p + "ln2_b"], cfg.ln_eps)
    c = dict(att=c_att, ln1=c_ln1, ff=c_ff, ln2=c_ln2)
    if trace:
        c["trace"] = dict(X=X, att=attention_trace(X, X, params, p, cfg.num_heads), X1=X1, Xn1=Xn1,
                          ff=ffn_trace(Xn1, ff, params, p), X2=X2, Xn2=Xn2)
    return Xn2, c


def encoder_layer_backward(dXn2, c, params, l: int, grads):
    p = f"enc{l}."
    dX2, dg, db = layer_norm_backward(dXn2, c["ln2"], params[p + "ln2_g"])
    grads[p + "ln2_g"] += dg
    grads[p + "ln2_b"] += db
    dXn1 = dX2 + ffn_backward(dX2, c["ff"], params, p, grads)     # residual path + FFN path
    dX1, dg, db = layer_norm_backward(dXn1, c["ln1"], params[p + "ln1_g"])
    grads[p + "ln1_g"] += dg
    grads[p + "ln1_b"] += db
    dXq, dXkv = mha_backward(dX1, c["att"], params, p, grads)
    return dX1 + dXq + dXkv                 # X fed the residual, the queries, and the keys and values


def encoder_forward(X, params, cfg: Seq2SeqConfig, trace=False):
    """The encoder stack on embedded input X (..., S, d) -> memory (..., S, d)."""
    c_layers = []
    for l in range(cfg.num_enc_layers):
        X, c_layer = encoder_layer_forward(X, params, l, cfg, trace)
        c_layers.append(c_layer)
    return X, c_layers


def encoder_backward(dmemory, c_layers, params, grads):
    dX = dmemory
    for l in reversed(range(len(c_layers))):               # last layer first
        dX = encoder_layer_backward(dX, c_layers[l], params, l, grads)
    return dX


def encode_forward(params, src_ids, cfg: Seq2SeqConfig, trace=False):
    """src_ids (S,) or (B, S) -> memory (S, d) or (B, S, d), and the cache encode_backward reads."""
    src = check_ids(src_ids, cfg.src_vocab_size, cfg.max_len, "src_ids")
    X, c_emb = embed_forward(src, params, src_table(cfg), cfg, trace)
    memory, c_enc = encoder_forward(X, params, cfg, trace)
    return memory, dict(emb=c_emb, enc=c_enc)


def encode_backward(dmemory, c, params, grads):
    dX = encoder_backward(dmemory, c["enc"], params, grads)
    embed_backward(dX, c["emb"], grads)


# ----------------------------------------------------------------------------- decoder

def decoder_layer_forward(Y, memory, params, l: int, cfg: Seq2SeqConfig, trace=False):
    """LN(y + MaskedSelfAttn(y)), LN(y + CrossAttn(y, memory)), LN(y + FFN(y))."""
    p = f"dec{l}."
    mask = causal_mask(Y.shape[-2])                          # position t sees targets 0..t only
    self_att, c_self = mha_forward(Y, Y, params, p + "self.", cfg.num_heads, mask)
    Y1 = Y + self_att
    Yn1, c_ln1 = layer_norm_forward(Y1, params[p + "ln1_g"], params[p + "ln1_b"], cfg.ln_eps)
    cross, c_cross = mha_forward(Yn1, memory, params, p + "cross.", cfg.num_heads)  # sees all of the source
    Y2 = Yn1 + cross
    Yn2, c_ln2 = layer_norm_forward(Y2, params[p + "ln2_g"], params[p + "ln2_b"], cfg.ln_eps)
    ff, c_ff = ffn_forward(Yn2, params, p)
    Y3 = Yn2 + ff
    Yn3, c_ln3 = layer_norm_forward(Y3, params[p + "ln3_g"], params[p + "ln3_b"], cfg.ln_eps)
    c = dict(self=c_self, ln1=c_ln1, cross=c_cross, ln2=c_ln2, ff=c_ff, ln3=c_ln3)
    if trace:
        c["trace"] = dict(Y=Y, self=attention_trace(Y, Y, params, p + "self.", cfg.num_heads, mask),
                          Y1=Y1, Yn1=Yn1,
                          cross=attention_trace(Yn1, memory, params, p + "cross.", cfg.num_heads),
                          Y2=Y2, Yn2=Yn2, ff=ffn_trace(Yn2, ff, params, p), Y3=Y3, Yn3=Yn3)
    return Yn3, c


def decoder_layer_backward(dYn3, c, params, l: int, grads):
    """Returns (dY, dmemory): the layer's input gradient and this layer's share of memory's."""
    p = f"dec{l}."
    dY3, dg, db = layer_norm_backward(dYn3, c["ln3"], params[p + "ln3_g"])
    grads[p + "ln3_g"] += dg
    grads[p + "ln3_b"] += db
    dYn2 = dY3 + ffn_backward(dY3, c["ff"], params, p, grads)
    dY2, dg, db = layer_norm_backward(dYn2, c["ln2"], params[p + "ln2_g"])
    grads[p + "ln2_g"] += dg
    grads[p + "ln2_b"] += db
    dYn1_q, dmemory = mha_backward(dY2, c["cross"], params, p + "cross.", grads)
    dYn1 = dY2 + dYn1_q                     # Yn1 fed the residual and the queries; memory the keys and values
    dY1, dg, db = layer_norm_backward(dYn1, c["ln1"], params[p + "ln1_g"])
    grads[p + "ln1_g"] += dg
    grads[p + "ln1_b"] += db
    dYq, dYkv = mha_backward(dY1, c["self"], params, p + "self.", grads)
    return dY1 + dYq + dYkv, dmemory


def output_forward(H, params, cfg: Seq2SeqConfig):
    """logits = H W + out_b, with W = tgt_emb^T when tied (a (d, V) view, no copy)."""
    W = params[tgt_table(cfg)].T if cfg.tie_output else params["out_w"]
    logits, _ = linear_forward(H, W, params["out_b"])
    return logits, dict(H=H, tied=cfg.tie_output, table=tgt_table(cfg))


def output_backward(dlogits, c, params, grads):
    if c["tied"]:
        dH, dWT, db = linear_backward(dlogits, c["H"], params[c["table"]].T)
        grads[c["table"]] += dWT.T          # the projection's share; the embedding adds its own
    else:
        dH, dW, db = linear_backward(dlogits, c["H"], params["out_w"])
        grads["out_w"] += dW
    grads["out_b"] += db
    return dH


def decoder_forward(Y, memory, params, cfg: Seq2SeqConfig, trace=False):
    """The decoder stack and output layer on embedded targets Y (..., T, d) -> logits (..., T, V)."""
    c_layers = []
    for l in range(cfg.num_dec_layers):
        Y, c_layer = decoder_layer_forward(Y, memory, params, l, cfg, trace)
        c_layers.append(c_layer)
    logits, c_out = output_forward(Y, params, cfg)
    c = dict(layers=c_layers, out=c_out)
    if trace:
        c["trace"] = dict(H=Y, logits=logits, probs=softmax_forward(logits)[0])
    return logits, c


def decoder_backward(dlogits, c, params, grads):
    """Returns (dY, dmemory); memory's gradient sums over every decoder layer's cross-attention."""
    dY = output_backward(dlogits, c["out"], params, grads)
    dmemory = 0.0
    for l in reversed(range(len(c["layers"]))):
        dY, dmem_l = decoder_layer_backward(dY, c["layers"][l], params, l, grads)
        dmemory = dmemory + dmem_l
    return dY, dmemory


def decode_forward(params, memory, tgt_in_ids, cfg: Seq2SeqConfig, trace=False):
    """memory (S, d) or (B, S, d) and tgt_in_ids (T,) or (B, T) -> logits (T, V) or (B, T, V)."""
    tgt = check_ids(tgt_in_ids, cfg.tgt_vocab_size, cfg.max_len, "tgt_in_ids")
    memory = check_memory(memory, tgt, cfg)
    Y, c_emb = embed_forward(tgt, params, tgt_table(cfg), cfg, trace)
    logits, c_dec = decoder_forward(Y, memory, params, cfg, trace)
    return logits, dict(emb=c_emb, dec=c_dec)


def decode_backward(dlogits, c, params, grads):
    """Adds the decoder's parameter gradients into grads and returns d loss / d memory."""
    dY, dmemory = decoder_backward(dlogits, c["dec"], params, grads)
    embed_backward(dY, c["emb"], grads)
    return dmemory


# ----------------------------------------------------------------------------- the whole model

def forward(params, src_ids, tgt_in_ids, cfg: Seq2SeqConfig, trace=False):
    """src_ids (S,) or (B, S), tgt_in_ids (T,) or (B, T) -> logits (T, V) or (B, T, V), and the cache."""
    src, tgt = check_pair(src_ids, tgt_in_ids, cfg)
    memory, c_enc = encode_forward(params, src, cfg, trace)
    logits, c_dec = decode_forward(params, memory, tgt, cfg, trace)
    return logits, dict(enc=c_enc, dec=c_dec)


def backward(dlogits, c, params):
    """Every parameter's gradient from d loss / d logits: decoder first, then the encoder
    through the memory gradient that the cross-attentions sent back."""
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dmemory = decode_backward(dlogits, c["dec"], params, grads)
    encode_backward(dmemory, c["enc"], params, grads)
    return grads


def loss_and_grads(params, src_ids, tgt_in_ids, tgt_out_ids, cfg: Seq2SeqConfig):
    """Label-smoothed cross-entropy, the mean over every target position, and its gradient on
    every parameter (summed over the batch)."""
    src, tgt_in = check_pair(src_ids, tgt_in_ids, cfg)
    tgt_out = check_ids(tgt_out_ids, cfg.tgt_vocab_size, cfg.max_len, "tgt_out_ids")
    if tgt_out.shape != tgt_in.shape:
        raise ModelInputError(f"tgt_out_ids shape {tgt_out.shape} must equal tgt_in_ids shape {tgt_in.shape}")
    logits, c = forward(params, src, tgt_in, cfg)
    loss, c_ce = cross_entropy_forward(logits, tgt_out, cfg.label_smoothing)
    dlogits = cross_entropy_backward(1.0, c_ce)
    return loss, backward(dlogits, c, params)


def greedy_decode(params, src_ids, cfg: Seq2SeqConfig, bos_id: int, eos_id: int, max_len: int):
    """Encode once, then repeatedly append the most likely next token, starting from bos_id.
    Returns the generated ids after bos, through the first eos_id if one appears:
    (n,) for one source (S,); (B, n) for a batch, rows that finished early padded with eos_id.
    Runs the decoder over the whole prefix each step (no key/value cache): simple, and T is short."""
    for name, v in (("bos_id", bos_id), ("eos_id", eos_id)):
        if not isinstance(v, (int, np.integer)) or not 0 <= v < cfg.tgt_vocab_size:
            raise ModelInputError(f"{name} must be a target id in [0, {cfg.tgt_vocab_size - 1}], got {v!r}")
    if not isinstance(max_len, (int, np.integer)) or not 1 <= max_len <= cfg.max_len:
        raise ModelInputError(f"max_len must be between 1 and cfg.max_len = {cfg.max_len} "
                              f"(the decoder's input grows to max_len), got {max_len!r}")
    src = check_ids(src_ids, cfg.src_vocab_size, cfg.max_len, "src_ids")
    single = src.ndim == 1
    src = src[None] if single else src                      # (B, S)
    memory, _ = encode_forward(params, src, cfg)
    out = np.full((src.shape[0], 1), bos_id, dtype=np.int64)
    done = np.zeros(src.shape[0], dtype=bool)
    for _ in range(max_len):
        logits, _ = decode_forward(params, memory, out, cfg)
        nxt = np.where(done, eos_id, logits[:, -1].argmax(axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done |= nxt == eos_id
        if done.all():
            break
    out = out[:, 1:]
    return out[0] if single else out
