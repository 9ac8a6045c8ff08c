"""Multi-head attention: self-attention with a causal mask for the language model, and
cross-attention (queries from one sequence, keys and values from another) for the decoder
of the encoder-decoder. One pair of functions serves both; the wrappers at the bottom fix
the arguments the language model uses.

Head i uses the contiguous columns i*dk:(i+1)*dk of Q, K and V, with dk = d / num_heads.
"""
import math

import numpy as np

from model.ops import linear_forward, linear_backward, softmax_forward, softmax_backward


def split_heads(X, num_heads):
    """(..., T, d) -> (..., h, T, dk): head i takes columns i*dk:(i+1)*dk."""
    *lead, T, d = X.shape
    return X.reshape(*lead, T, num_heads, d // num_heads).swapaxes(-2, -3)


def merge_heads(Xh):
    """(..., h, T, dk) -> (..., T, d): the inverse of split_heads."""
    *lead, h, T, dk = Xh.shape
    return Xh.swapaxes(-2, -3).reshape(*lead, T, h * dk)


def causal_mask(T):
    """(T, T) booleans, True where query t may see key s, that is s <= t."""
    return np.tril(np.ones((T, T), dtype=bool))


def hiding(mask, dtype):
    """(Tq, Tk): 0 where the mask is True (visible), -inf where it hides a key. Adding it to the
    scores in place is cheaper than np.where over every head of every sequence."""
    return np.where(mask, 0.0, -np.inf).astype(dtype, copy=False)


def mha_forward(Xq, Xkv, params, p, num_heads, mask=None):
    """Queries from Xq (..., Tq, d); keys and values from Xkv (..., Tk, d). mask: (Tq, Tk), True = visible."""
    Q, _ = linear_forward(Xq, params[p + "wq"], params[p + "bq"])
    K, _ = linear_forward(Xkv, params[p + "wk"], params[p + "bk"])
    V, _ = linear_forward(Xkv, params[p + "wv"], params[p + "bv"])
    Qh, Kh, Vh = (split_heads(M, num_heads) for M in (Q, K, V))   # (..., h, T, dk)
    S = Qh @ Kh.swapaxes(-1, -2)                                  # (..., h, Tq, Tk)
    S /= math.sqrt(Qh.shape[-1])              # in place, by a Python float: float32 stays float32
    if mask is not None:
        S += hiding(mask, S.dtype)            # exp(-inf) is exactly 0: no weight on a hidden key
    A, _ = softmax_forward(S)
    O = merge_heads(A @ Vh)                   # (..., Tq, d)
    out, _ = linear_forward(O, params[p + "wo"], params[p + "bo"])
    return out, dict(Xq=Xq, Xkv=Xkv, Qh=Qh, Kh=Kh, Vh=Vh, A=A, O=O)


def mha_backward(dOut, c, params, p, grads):
    """Returns (dXq, dXkv) and adds the eight parameter gradients into grads."""
    dO, dWo, dbo = linear_backward(dOut, c["O"], params[p + "wo"])
    grads[p + "wo"] += dWo
    grads[p + "bo"] += dbo
    Qh, Kh, Vh, A = c["Qh"], c["Kh"], c["Vh"], c["A"]
    dOh = split_heads(dO, Qh.shape[-3])
    dA = dOh @ Vh.swapaxes(-1, -2)
    dVh = A.swapaxes(-1, -2) @ dOh
    dS = softmax_backward(dA, A)              # 0 wherever A is 0: masked keys get no gradient
    dS /= math.sqrt(Qh.shape[-1])
    dQh = dS @ Kh
    dKh = dS.swapaxes(-1, -2) @ Qh
    dXq, dWq, dbq = linear_backward(merge_heads(dQh), c["Xq"], params[p + "wq"])
    dXk, dWk, dbk = linear_backward(merge_heads(dKh), c["Xkv"], params[p + "wk"])
    dXv, dWv, dbv = linear_backward(merge_heads(dVh), c["Xkv"], params[p + "wv"])
    grads[p + "wq"] += dWq
    grads[p + "bq"] += dbq
    grads[p + "wk"] += dWk
    grads[p + "bk"] += dbk
    grads[p + "wv"] += dWv
    grads[p + "bv"] += dbv
    return dXq, dXk + dXv


def attention_forward(Xn, params, p, cfg):
    """Causal self-attention of the language model: queries, keys and values all from Xn (..., T, d)."""
    return mha_forward(Xn, Xn, params, p, cfg.num_heads, causal_mask(Xn.shape[-2]))


def attention_backward(dAtt, c, params, p, grads):
    """Xn fed the queries, keys and values, so its gradient is the sum of both paths."""
    dXq, dXkv = mha_backward(dAtt, c, params, p, grads)
    return dXq + dXkv
