"""The decoder-only pre-LN language model, forward and backward.

    X  = tok_emb[ids] + pos_emb[:T]
    per block: Xn = LN1(X); X1 = X + Attention(Xn); Xn2 = LN2(X1); Y = X1 + FFN(Xn2)
    logits = LN_f(X) head_w + head_b;  loss = mean cross-entropy over every position

Parameters live in one flat dict with stable names (`b{l}.wq`, `b{l}.ff1_w`, ...); `grads`
has exactly the same keys. Every function takes one sequence (T,) or a batch (B, T).
"""
import numpy as np

from model import ModelInputError
from model.attention import attention_forward, attention_backward
from model.config import ModelConfig
from model.ops import (xavier_uniform, linear_forward, linear_backward, relu_forward, relu_backward,
                       layer_norm_forward, layer_norm_backward, embedding_forward, embedding_backward,
                       cross_entropy_forward, cross_entropy_backward)


def init_params(cfg: ModelConfig, rng: np.random.Generator) -> dict:
    """Xavier uniform weight matrices, zero biases, LayerNorm gains 1 and shifts 0,
    embeddings from N(0, cfg.emb_std^2)."""
    d, F, V, dt = cfg.emb_dim, cfg.ff_dim, cfg.vocab_size, cfg.dtype
    p = {"tok_emb": (rng.standard_normal((V, d)) * cfg.emb_std).astype(dt),
         "pos_emb": (rng.standard_normal((cfg.seq_len, d)) * cfg.emb_std).astype(dt)}
    for l in range(cfg.num_layers):
        b = f"b{l}."
        p[b + "ln1_g"], p[b + "ln1_b"] = np.ones(d, dt), np.zeros(d, dt)
        for w in ("q", "k", "v", "o"):
            p[b + "w" + w] = xavier_uniform(d, d, rng, dt)
            p[b + "b" + w] = np.zeros(d, dt)
        p[b + "ln2_g"], p[b + "ln2_b"] = np.ones(d, dt), np.zeros(d, dt)
        p[b + "ff1_w"], p[b + "ff1_b"] = xavier_uniform(d, F, rng, dt), np.zeros(F, dt)
        p[b + "ff2_w"], p[b + "ff2_b"] = xavier_uniform(F, d, rng, dt), np.zeros(d, dt)
    p["lnf_g"], p["lnf_b"] = np.ones(d, dt), np.zeros(d, dt)
    p["head_w"], p["head_b"] = xavier_uniform(d, V, rng, dt), np.zeros(V, dt)
    return p


def check_ids(ids, cfg: ModelConfig, name="ids"):
    """Reject what NumPy would turn into a confusing error or a silent wrong answer."""
    ids = np.asarray(ids)
    if ids.ndim not in (1, 2) or not np.issubdtype(ids.dtype, np.integer):
        raise ModelInputError(f"{name} must be integers of shape (T,) or (B, T), "
                              f"got dtype {ids.dtype} and shape {ids.shape}")
    if ids.shape[-1] == 0 or ids.shape[-1] > cfg.seq_len:
        raise ModelInputError(f"{name} has T = {ids.shape[-1]}, but T must be between 1 and "
                              f"seq_len = {cfg.seq_len}; pass the last {cfg.seq_len} ids")
    bad = (ids < 0) | (ids >= cfg.vocab_size)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ModelInputError(f"{name}{list(where)} = {int(ids[where])} is out of range: "
                              f"token ids must be in [0, {cfg.vocab_size - 1}] (vocab_size {cfg.vocab_size})")
    return ids


def embed_forward(ids, params):
    """X = tok_emb[ids] + pos_emb[:T]: (..., T) ids -> (..., T, d)."""
    tok, _ = embedding_forward(ids, params["tok_emb"])
    return tok + params["pos_emb"][:ids.shape[-1]], ids


def embed_backward(dX, ids, grads):
    """Token rows scatter-add (a repeated id sums its gradients); positions sum over the batch."""
    grads["tok_emb"] += embedding_backward(dX, ids, grads["tok_emb"].shape[0])
    T = ids.shape[-1]
    grads["pos_emb"][:T] += dX.reshape(-1, T, dX.shape[-1]).sum(axis=0)


def ffn_forward(Xn, params, p):
    Z, _ = linear_forward(Xn, params[p + "ff1_w"], params[p + "ff1_b"])     # (..., T, F)
    A, positive = relu_forward(Z)
    out, _ = linear_forward(A, params[p + "ff2_w"], params[p + "ff2_b"])    # (..., T, d)
    return out, dict(Xn=Xn, A=A, positive=positive)


def ffn_backward(dOut, c, params, p, grads):
    dA, dW2, db2 = linear_backward(dOut, c["A"], params[p + "ff2_w"])
    grads[p + "ff2_w"] += dW2
    grads[p + "ff2_b"] += db2
    dZ = relu_backward(dA, c["positive"])
    dXn, dW1, db1 = linear_backward(dZ, c["Xn"], params[p + "ff1_w"])
    grads[p + "ff1_w"] += dW1
    grads[p + "ff1_b"] += db1
    return dXn


def block_forward(X, params, l: int, cfg: ModelConfig):
    p = f"b{l}."
    Xn, c_ln1 = layer_norm_forward(X, params[p + "ln1_g"], params[p + "ln1_b"], cfg.ln_eps)  # a normalised copy for attention
    att, c_att = attention_forward(Xn, params, p, cfg)       # each position gathers from itself and earlier ones
    X1 = X + att
    Xn2, c_ln2 = layer_norm_forward(X1, params[p + "ln2_g"], params[p + "ln2_b"], cfg.ln_eps)  # a normalised copy for the FFN
    ff, c_ff = ffn_forward(Xn2, params, p)                   # each position on its own
    return X1 + ff, dict(ln1=c_ln1, att=c_att, ln2=c_ln2, ff=c_ff)


def block_backward(dY, c, params, l: int, grads):
    p = f"b{l}."
    dXn2 = ffn_backward(dY, c["ff"], params, p, grads)
    dX1_branch, dg, db = layer_norm_backward(dXn2, c["ln2"], params[p + "ln2_g"])
    grads[p + "ln2_g"] += dg
    grads[p + "ln2_b"] += db
    dX1 = dY + dX1_branch
    dXn = attention_backward(dX1, c["att"], params, p, grads)
    dX_branch, dg, db = layer_norm_backward(dXn, c["ln1"], params[p + "ln1_g"])
    grads[p + "ln1_g"] += dg
    grads[p + "ln1_b"] += db
    return dX1 + dX_branch


def forward(params, ids, cfg: ModelConfig):
    """ids (T,) or (B, T) -> logits (T, V) or (B, T, V), and the cache backward reads."""
    ids = check_ids(ids, cfg)
    X, c_emb = embed_forward(ids, params)
    c_blocks = []
    for l in range(cfg.num_layers):
        X, c_block = block_forward(X, params, l, cfg)
        c_blocks.append(c_block)
    Xf, c_lnf = layer_norm_forward(X, params["lnf_g"], params["lnf_b"], cfg.ln_eps)
    logits, _ = linear_forward(Xf, params["head_w"], params["head_b"])
    return logits, dict(emb=c_emb, blocks=c_blocks, lnf=c_lnf, Xf=Xf)


def loss_and_grads(params, ids, targets, cfg: ModelConfig):
    """Mean cross-entropy over every position, and its gradient on every parameter."""
    targets = check_ids(targets, cfg, "targets")
    if np.shape(targets) != np.shape(ids):
        raise ModelInputError(f"targets shape {np.shape(targets)} must equal ids shape {np.shape(ids)}")
    logits, c = forward(params, ids, cfg)
    loss, c_ce = cross_entropy_forward(logits, targets)
    grads = {k: np.zeros(v.shape, v.dtype) for k, v in params.items()}   # np.zeros_like is slower
    dlogits = cross_entropy_backward(1.0, c_ce)
    dXf, grads["head_w"], grads["head_b"] = linear_backward(dlogits, c["Xf"], params["head_w"])
    dX, grads["lnf_g"], grads["lnf_b"] = layer_norm_backward(dXf, c["lnf"], params["lnf_g"])
    for l in reversed(range(cfg.num_layers)):                # last block first
        dX = block_backward(dX, c["blocks"][l], params, l, grads)
    embed_backward(dX, c["emb"], grads)
    return loss, grads
