"""What the builder cannot read off the package's names, as code this project owns: named by
`project: hooks:` in content/site.yaml.

Each function takes a config (the default MLPConfig, or the probe's: the default with every
field of `project: axes` set to its size in `project: probe_sizes`) and returns the arguments
of one call. Everything else the builder needs (the config class, the axis letters,
init_params, the decay rule, the call map's root) is a name in site.yaml, not code.

The function names are provisional: site_builder/project.py on main will fix the spelling
of the hooks (issue 25).
"""
import numpy as np

from mlp.model import init_params
from mlp.train import make_blobs


def one_batch(cfg, seed=0):
    """Parameters and a batch of the toy data at `cfg`, from one seeded generator."""
    rng = np.random.default_rng(seed)
    params = init_params(cfg, rng)
    X, y = make_blobs(cfg, rng)
    return params, X, y


def probe_arguments(cfg):
    """{entry point: (args, kwargs)} of the shape probe at `cfg`: the loss and its backward
    pass, which reach every layer of mlp.ops."""
    params, X, y = one_batch(cfg)
    return {"mlp.model.loss_and_grads": ((params, X, y, cfg), {})}


def step_arguments(cfg):
    """(args, kwargs) of one call of `project: call_map_root` (mlp.train.train_step), for the
    landing page's map of one step."""
    params, X, y = one_batch(cfg)
    return (params, X, y, cfg), {}
