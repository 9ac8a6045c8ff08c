"""One step of gradient descent with weight decay, and the toy data it learns from."""
import numpy as np

from mlp.model import loss_and_grads

SPREAD = 3.0        # how far apart the centres are, in units of the points' own spread


def make_blobs(cfg, rng):
    """cfg.batch points around cfg.n_classes centres in n_in dimensions, and their classes."""
    centres = rng.standard_normal((cfg.n_classes, cfg.n_in)) * SPREAD
    y = np.arange(cfg.batch) % cfg.n_classes
    X = centres[y] + rng.standard_normal((cfg.batch, cfg.n_in))
    return X, y


def decays(name):
    """Weight decay applies to the weight matrices, not to the biases."""
    return name.startswith("w")


def train_step(params, X, y, cfg):
    """Updates params in place; returns the loss before the update."""
    loss, grads = loss_and_grads(params, X, y, cfg)
    for name, g in grads.items():
        if decays(name):
            g = g + cfg.weight_decay * params[name]
        params[name] -= cfg.lr * g
    return loss
