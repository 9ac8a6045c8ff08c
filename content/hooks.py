"""The builder's hooks for this project: what it must know about the transformer as code.

The settings that are data are in the `project:` block of content/site.yaml; this file, which
that block names (`hooks: content/hooks.py`), holds what must be code. The builder calls a hook
only if it is defined here (site_builder/gather/project.py: `hook(root, project, name)`); the
hooks it knows, and when it calls each, are listed in content/README.md.
"""
import numpy as np


# ---------------------------------------------------------------------- shape probes
# site_builder/run/shapes.py runs each probe twice, at the config given and at its probe
# version (every field of `configs[].axes` at its `probe_sizes` size), and names each axis
# of what the package held by the one letter of that size.

def probes(config):
    """Called once per build by the shape probes (site_builder/run/shapes.py), with the
    documented config (the landing page's, its vocabulary the shipped corpus's). Returns the
    probes to run, in order (where two reach a function, the first one's shapes are shown):
    each a dict of `name`; `entry`, the dotted name of the function run; `config`, the config
    of its default run; `args(config, sizes)`, the call's positional arguments at a config,
    `sizes` being each letter's size in that run; and optionally `lengths`, the letters of a
    call's lengths (the project block's `lengths` says what each is) that no config field
    sizes, as {letter: its size in the default run, or None for its probe size in both runs}."""
    from model.config import Seq2SeqConfig
    pair = Seq2SeqConfig(src_vocab_size=config.vocab_size, tgt_vocab_size=config.vocab_size)
    length = min(pair.max_len, 16)          # one pair of sequences, as long as the config allows, at most 16
    return [
        dict(name="lm", entry="model.transformer.loss_and_grads", config=config, args=_lm_args),
        dict(name="seq2seq", entry="model.seq2seq.loss_and_grads", config=pair, args=_seq2seq_args,
             lengths={"S": length, "T": length}),
        dict(name="generate", entry="model.generate.generate", config=config, args=_generate_args,
             lengths={"n": None}),
    ]


def _ids(rng, vocab, length):
    return rng.integers(0, vocab, size=(length,))


def _lm_args(cfg, sizes):
    """loss_and_grads(params, ids, targets, cfg) on one sequence of length seq_len."""
    from model.transformer import init_params
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng)
    ids = _ids(rng, cfg.vocab_size, cfg.seq_len)
    return params, ids, np.roll(ids, -1), cfg


def _seq2seq_args(cfg, sizes):
    """loss_and_grads(params, src_ids, tgt_in_ids, tgt_out_ids, cfg): S source ids, T target ids."""
    from model.seq2seq import init_params
    if sizes["M"] < max(sizes["S"], sizes["T"]):
        raise ValueError("the probe's maximum length is shorter than its sequences")
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng)
    return (params, _ids(rng, sizes["V"], sizes["S"]), _ids(rng, sizes["V"], sizes["T"]),
            _ids(rng, sizes["V"], sizes["T"]), cfg)


def _generate_args(cfg, sizes):
    """generate(params, cfg, prompt_ids, steps, temperature, top_k, rng): a prompt of seq_len
    ids, n new tokens, temperature 1, no top-k."""
    from model.transformer import init_params
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng)
    return params, cfg, _ids(rng, cfg.vocab_size, cfg.seq_len), sizes["n"], 1.0, None, np.random.default_rng(0)
