"""Dataclasses that size a model and a training run.

The defaults are the documented configuration; every page of the site shows shapes at these
values. float64 is the default so that gradient checks and the site's numbers are exact to
the digits shown; float32 is selectable for speed.
"""
from dataclasses import dataclass, asdict

from model import ModelInputError

DTYPES = ("float64", "float32")


def _require_positive(owner, **fields):
    for name, value in fields.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ModelInputError(f"{owner}.{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    seq_len: int = 16       # the longest context; generation keeps the last seq_len ids
    emb_dim: int = 32       # d
    num_heads: int = 4
    ff_dim: int = 128       # F
    num_layers: int = 2
    ln_eps: float = 1e-5
    emb_std: float = 0.02   # std of the normal that token and position embeddings start from
    dtype: str = "float64"

    def __post_init__(self):
        _require_positive("ModelConfig", vocab_size=self.vocab_size, seq_len=self.seq_len,
                          emb_dim=self.emb_dim, num_heads=self.num_heads,
                          ff_dim=self.ff_dim, num_layers=self.num_layers)
        if self.emb_dim % self.num_heads:
            raise ModelInputError(
                f"emb_dim ({self.emb_dim}) must be divisible by num_heads ({self.num_heads}): "
                f"each head takes emb_dim / num_heads columns; try num_heads in "
                f"{[h for h in range(1, self.emb_dim + 1) if self.emb_dim % h == 0]}")
        if self.dtype not in DTYPES:
            raise ModelInputError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if not self.ln_eps > 0:
            raise ModelInputError(f"ln_eps must be positive, got {self.ln_eps!r}")

    @property
    def head_dim(self) -> int:
        return self.emb_dim // self.num_heads

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-2
    min_lr: float = 1e-3
    warmup_steps: int = 30
    weight_decay: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.99
    adam_eps: float = 1e-8
    clip_norm: float = 1.0
    val_fraction: float = 0.1
    eval_every: int = 50
    eval_batches: int = 8
    log_every: int = 10
    checkpoint_every: int = 100
    seed: int = 0

    def __post_init__(self):
        _require_positive("TrainConfig", steps=self.steps, batch_size=self.batch_size,
                          eval_every=self.eval_every, eval_batches=self.eval_batches,
                          log_every=self.log_every, checkpoint_every=self.checkpoint_every)
        if not 0 < self.val_fraction < 1:
            raise ModelInputError(f"val_fraction must be between 0 and 1, got {self.val_fraction}")

    def to_dict(self) -> dict:
        return asdict(self)
