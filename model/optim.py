"""AdamW, the weight-decay rule, global-norm gradient clipping and learning-rate schedules.

The decay rule is one function (`decays`) so that the optimizer, the tests and the site's
parameter tables all ask the same question the same way.
"""
import math

import numpy as np

# Weight matrices decay. Biases, LayerNorm gains and shifts do not: decaying a gain pulls it
# toward 0 and so switches its LayerNorm off. Embeddings do not either: decoupled decay shrinks
# every row every step, but a row only gets a gradient when its character appears, so rare
# characters' rows would fade between their uses.
DECAYED_SUFFIXES = (".wq", ".wk", ".wv", ".wo", "_w")


def decays(name: str) -> bool:
    """True if the parameter called `name` gets weight decay."""
    return name.endswith(DECAYED_SUFFIXES)


def clip_grad_norm(grads: dict, max_norm: float) -> float:
    """Scale every gradient by one factor so their global L2 norm is at most max_norm.
    Returns the norm before clipping."""
    total = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
    if total > max_norm:
        scale = max_norm / (total + 1e-12)
        for g in grads.values():
            g *= scale
    return total


class AdamW:
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019):
        m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
        w -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * w)   [wd only where decays(name)]
    With weight_decay 0 this is plain Adam (Kingma & Ba 2015)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.t = 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params, grads, lr=None):
        """One update of every parameter, in place. lr overrides self.lr (for schedules)."""
        lr = self.lr if lr is None else lr
        b1, b2 = self.betas
        self.t += 1
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t      # bias corrections
        for name, w in params.items():
            g, m, v = grads[name], self.m[name], self.v[name]
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * (g * g)
            update = (m / c1) / (np.sqrt(v / c2) + self.eps)
            if self.weight_decay and decays(name):
                update += self.weight_decay * w
            w -= lr * update

    def state_dict(self) -> dict:
        return {"t": self.t, "m": self.m, "v": self.v}

    def load_state_dict(self, state):
        self.t = int(state["t"])
        self.m = {k: np.array(a) for k, a in state["m"].items()}
        self.v = {k: np.array(a) for k, a in state["v"].items()}


def warmup_cosine_lr(step, max_lr, min_lr, warmup_steps, total_steps):
    """Linear warm-up to max_lr over warmup_steps, then a cosine down to min_lr at total_steps.
    step counts from 1."""
    if step <= warmup_steps:
        return max_lr * step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * progress))


def noam_lr(step, d_model, warmup_steps=4000):
    """Vaswani et al. 2017, Eq. 3: lr = d^-0.5 * min(t^-0.5, t * warmup^-1.5), t from 1."""
    return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)
