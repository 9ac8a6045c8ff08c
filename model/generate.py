"""Sampling text from a checkpoint, one character at a time.

    python3 -m model.generate --checkpoint runs/x/checkpoint.npz --prompt "ROMEO:" --steps 200

Trade-offs:
  * No key/value cache: every new character reruns the model on the last seq_len ids. At
    seq_len 16 that costs little and keeps generation a plain call of `forward`.
  * The model has seen at most seq_len characters of context in training, so generation keeps
    only the last seq_len: anything older is forgotten.
  * Temperature 0 and top-k 1 are exact argmax, not a near-one-hot sample, so greedy output
    never depends on the RNG.
  * Every failure is one line and exit status 2 (bad input, or a checkpoint that disagrees with
    itself: one line per disagreement); Ctrl-C is one line and status 130. The text is printed
    only once it is complete.
"""
import argparse
import math
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # tiny matrices: see model/train.py

import numpy as np  # noqa: E402

from model import ModelInputError
from model.config import ModelConfig
from model.train import load_checkpoint
from model.transformer import forward


def check_sampling(temperature, top_k):
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not 0 <= temperature < math.inf:
        raise ModelInputError(f"temperature must be a number >= 0 (0 means greedy), got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer))
                              or top_k < 1):
        raise ModelInputError(f"top_k must be an integer >= 1 (or None for all), got {top_k!r}")


def sample_next(logits, temperature, top_k, rng) -> int:
    """One id from the distribution softmax(logits / temperature), restricted to the top_k
    largest logits (top_k None keeps all of them)."""
    check_sampling(temperature, top_k)
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 1 or not logits.size:
        raise ModelInputError(f"logits must be one non-empty row (V,), got shape {logits.shape}")
    if temperature == 0 or top_k == 1:
        return int(np.argmax(logits))
    if top_k is not None and top_k < logits.size:
        keep = np.argpartition(logits, -top_k)[-top_k:]
        kept = np.full_like(logits, -np.inf)             # exp(-inf) = 0: the rest cannot be drawn
        kept[keep] = logits[keep]
        logits = kept
    z = logits / temperature
    p = np.exp(z - z.max())
    return int(rng.choice(logits.size, p=p / p.sum()))


def generate(params, cfg: ModelConfig, prompt_ids, steps, temperature, top_k, rng) -> np.ndarray:
    """prompt_ids followed by `steps` sampled ids, as one int64 array."""
    check_sampling(temperature, top_k)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ModelInputError(f"steps must be an integer >= 0, got {steps!r}")
    ids = list(np.asarray(prompt_ids, dtype=np.int64).reshape(-1))
    if not ids:
        raise ModelInputError("the prompt is empty; give at least one character to continue from")
    for _ in range(steps):
        context = np.array(ids[-cfg.seq_len:], dtype=np.int64)
        logits, _ = forward(params, context, cfg)        # (T, V); the last row predicts the next id
        ids.append(sample_next(logits[-1], temperature, top_k, rng))
    return np.array(ids, dtype=np.int64)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def _require_utf8(prompt: str):
    """Python keeps argv bytes that are not UTF-8 as lone surrogates (PEP 383), which no
    tokenizer can encode; name the first such byte instead."""
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as e:
        try:
            what = f"byte 0x{os.fsencode(prompt[e.start])[0]:02x}"
        except UnicodeEncodeError:                   # a surrogate that came from no byte
            what = f"the lone surrogate {prompt[e.start]!r}"
        raise ModelInputError(f"--prompt is not valid UTF-8: {what} at character {e.start}; "
                              f"pass the prompt as UTF-8 text") from None


def main(argv=None):
    ap = _Parser(prog="python3 -m model.generate", description="Continue a prompt with a trained model.")
    ap.add_argument("--checkpoint", required=True, type=Path, help="a checkpoint.npz from model.train, or the run folder that holds it")
    ap.add_argument("--prompt", required=True, help="text to continue; its characters must be in the vocabulary")
    ap.add_argument("--temperature", type=float, default=0.8, help="0 is greedy (default 0.8)")
    ap.add_argument("--top-k", type=int, default=None, help="sample only from the k likeliest characters")
    ap.add_argument("--steps", type=int, default=200, help="characters to generate (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sampling RNG (default 0)")
    args = ap.parse_args(argv)
    try:
        check_sampling(args.temperature, args.top_k)
        if args.seed < 0:
            raise ModelInputError(f"--seed must be >= 0, got {args.seed}")
        _require_utf8(args.prompt)
        ckpt = load_checkpoint(args.checkpoint)
        tokenizer = ckpt["tokenizer"]
        try:
            prompt_ids = tokenizer.encode(args.prompt)
        except ModelInputError as e:
            raise ModelInputError(f"--prompt: {e}") from None
        ids = generate(ckpt["params"], ckpt["model_cfg"], prompt_ids, args.steps, args.temperature,
                       args.top_k, np.random.default_rng(args.seed))
    except (ModelInputError, OSError) as e:      # a checkpoint's disagreements: one line each
        print("\n".join(f"error: {line}" for line in str(e).splitlines()), file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted; nothing was printed (the text is printed once it is complete)", file=sys.stderr)
        sys.exit(130)
    print(tokenizer.decode(ids))


if __name__ == "__main__":
    main()
