"""The builder's hooks for the MLP's site: what it must know of the package as code (the
settings that are data are the `project:` block of content/site.yaml, which names this file).
The builder calls a hook only if it is defined here; content/README.md lists them. The package
is imported inside each hook, so that a broken mlp/ is reported at its own line."""
import numpy as np


def one_batch(cfg):
    """(params, X, y, cfg), what loss_and_grads and train_step take: the parameters and a batch
    of the toy data at `cfg`, from one seeded generator."""
    from mlp.model import init_params
    from mlp.train import make_blobs
    rng = np.random.default_rng(0)
    return (init_params(cfg, rng), *make_blobs(cfg, rng), cfg)


def probes(config):
    """The shape probe: the loss and its backward pass, which reach every layer of mlp.ops."""
    return [dict(name="loss", entry="mlp.model.loss_and_grads", config=config, args=lambda cfg, sizes: one_batch(cfg))]


def call_map_inputs():
    """The landing page's map: one call of train_step, at the default config."""
    from mlp.config import MLPConfig
    return one_batch(MLPConfig()), "a batch of make_blobs at MLPConfig()"
