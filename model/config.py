"""Dataclasses that size a model and a training run.

The defaults are the documented configuration; every page of the site shows shapes at these
values. float64 is the default so that gradient checks and the site's numbers are exact to
the digits shown; float32 is selectable for speed.
"""
from dataclasses import dataclass, asdict

from model import ModelInputError

DTYPES = ("float64", "float32")


def _require_heads_divide(width_name, width, num_heads):
    if width % num_heads:
        raise ModelInputError(
            f"{width_name} ({width}) must be divisible by num_heads ({num_heads}): each head takes "
            f"{width_name} / num_heads columns; try num_heads in {[h for h in range(1, width + 1) if width % h == 0]}")


def _require_dtype(dtype):
    if dtype not in DTYPES:
        raise ModelInputError(f"dtype must be one of {DTYPES}, got {dtype!r}")


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
        _require_heads_divide("emb_dim", self.emb_dim, self.num_heads)
        _require_dtype(self.dtype)
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
        # `not x > 0` rather than `x <= 0`, so that NaN is refused too.
        if not 0 < self.lr < float("inf"):
            raise ModelInputError(f"TrainConfig.lr must be a positive number, got {self.lr!r}")
        if not 0 <= self.min_lr <= self.lr:
            raise ModelInputError(f"TrainConfig.min_lr must be between 0 and lr ({self.lr}), got {self.min_lr!r}")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ModelInputError(f"TrainConfig.warmup_steps must be an integer >= 0, got {self.warmup_steps!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ModelInputError(f"TrainConfig.seed must be an integer >= 0, got {self.seed!r}")
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ModelInputError(f"TrainConfig.{name} must be in [0, 1), got {getattr(self, name)!r}")
        for name in ("adam_eps", "clip_norm"):
            if not getattr(self, name) > 0:
                raise ModelInputError(f"TrainConfig.{name} must be positive, got {getattr(self, name)!r}")
        if not self.weight_decay >= 0:
            raise ModelInputError(f"TrainConfig.weight_decay must be >= 0, got {self.weight_decay!r}")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Seq2SeqConfig:
    """The post-LN encoder-decoder of Vaswani et al. (2017), at toy sizes by default.

    emb_std None means d_model ** -0.5: the embeddings are multiplied by sqrt(d_model) on the
    way in, so they enter at unit scale like the positional encodings, and with tie_output the
    same small table gives logits of unit scale on the way out.
    ln_eps may be 0 so that a hand derivation can use the plain formula (x - mu) / sigma."""
    src_vocab_size: int
    tgt_vocab_size: int
    max_len: int = 32               # the longest source or target sequence
    d_model: int = 32
    num_heads: int = 4
    d_ff: int = 128
    num_enc_layers: int = 2
    num_dec_layers: int = 2
    ln_eps: float = 1e-6
    label_smoothing: float = 0.1
    tie_output: bool = True         # logits = h tgt_emb^T + out_b: the output layer is the target embedding
    share_vocab: bool = False       # one table `emb` for source, target (and output, if tied)
    emb_std: float | None = None    # None: d_model ** -0.5
    dtype: str = "float64"

    def __post_init__(self):
        _require_positive("Seq2SeqConfig", src_vocab_size=self.src_vocab_size,
                          tgt_vocab_size=self.tgt_vocab_size, max_len=self.max_len,
                          d_model=self.d_model, num_heads=self.num_heads, d_ff=self.d_ff,
                          num_enc_layers=self.num_enc_layers, num_dec_layers=self.num_dec_layers)
        _require_heads_divide("d_model", self.d_model, self.num_heads)
        _require_dtype(self.dtype)
        if not (isinstance(self.ln_eps, (int, float)) and self.ln_eps >= 0):
            raise ModelInputError(f"ln_eps must be >= 0 (0 only for hand-set weights), got {self.ln_eps!r}")
        if not (isinstance(self.label_smoothing, (int, float)) and 0 <= self.label_smoothing < 1):
            raise ModelInputError(f"label_smoothing must be in [0, 1), got {self.label_smoothing!r}")
        for name in ("tie_output", "share_vocab"):
            if not isinstance(getattr(self, name), bool):
                raise ModelInputError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.share_vocab and self.src_vocab_size != self.tgt_vocab_size:
            raise ModelInputError(
                f"share_vocab needs one vocabulary, but src_vocab_size = {self.src_vocab_size} and "
                f"tgt_vocab_size = {self.tgt_vocab_size}; make them equal or set share_vocab=False")
        if self.emb_std is None:
            object.__setattr__(self, "emb_std", self.d_model ** -0.5)   # frozen: set once, here
        if not (isinstance(self.emb_std, (int, float)) and self.emb_std > 0):
            raise ModelInputError(f"emb_std must be positive, got {self.emb_std!r}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    def to_dict(self) -> dict:
        return asdict(self)
