"""Characters in, integer ids out: the tokenizer, the corpus, the train/validation split, batches.

Trade-offs:
  * Characters, not subwords: the vocabulary is tiny (84 symbols for the Shakespeare corpus), every
    string can be encoded, and nothing needs training. The price is long sequences: a 16-character
    context is about three words.
  * The validation set is the last fraction of the corpus, not a random sample of windows: random
    windows would overlap training windows and flatter the validation loss.
  * Batches are random windows drawn with replacement, one NumPy gather per batch; an epoch has
    no meaning at this corpus size and step count.
"""
from pathlib import Path

import numpy as np

from model import ModelInputError

DEFAULT_CORPUS = Path(__file__).resolve().parent.parent / "data" / "shakespeare.txt"


class CharTokenizer:
    """Ids are positions in the sorted list of the text's distinct characters."""

    def __init__(self, text: str):
        if not isinstance(text, str) or not text:
            raise ModelInputError("CharTokenizer needs a non-empty string to take its vocabulary from")
        self.chars = "".join(sorted(set(text)))
        # One lookup table over code points makes encode a single gather instead of a dict per character.
        codes = np.array([ord(c) for c in self.chars])
        self._ids_by_code = np.full(codes.max() + 1, -1, dtype=np.int64)
        self._ids_by_code[codes] = np.arange(len(codes))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> np.ndarray:
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        known = codes < len(self._ids_by_code)
        ids = np.where(known, self._ids_by_code[np.where(known, codes, 0)], -1)
        if (ids < 0).any():
            raise ModelInputError(self._unknown_message(text, np.flatnonzero(ids < 0)))
        return ids

    def _unknown_message(self, text, positions):
        first = {}                                  # each unknown character, at its first position
        for p in positions:
            first.setdefault(text[p], int(p))
        shown = ", ".join(f"{c!r} at position {p}" for c, p in list(first.items())[:5])
        more = f" and {len(first) - 5} more" if len(first) > 5 else ""
        return (f"text contains {len(first)} character(s) the checkpoint's vocabulary lacks: "
                f"{shown}{more}; remove or replace them (the vocabulary is {self.chars!r})")

    def decode(self, ids) -> str:
        ids = np.asarray(ids)
        if ids.size and (not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0
                         or ids.max() >= self.vocab_size):
            raise ModelInputError(f"decode needs integer ids in [0, {self.vocab_size - 1}], "
                                  f"got dtype {ids.dtype} with range [{ids.min()}, {ids.max()}]")
        return "".join(self.chars[i] for i in ids.reshape(-1))

    def to_dict(self) -> dict:
        return {"chars": self.chars}

    @classmethod
    def from_dict(cls, d: dict) -> "CharTokenizer":
        chars = d.get("chars") if isinstance(d, dict) else None
        if not isinstance(chars, str) or not chars or "".join(sorted(set(chars))) != chars:
            raise ModelInputError("tokenizer dict must hold 'chars': a non-empty string of sorted, "
                                  "distinct characters, as to_dict() writes it")
        return cls(chars)


def load_corpus(path) -> str:
    """The whole file as one string, or a ModelInputError that names the file and the problem."""
    path = Path(path)
    if not path.is_file():
        what = ("is a directory, not a file" if path.is_dir() else
                "is not a regular file (a device, pipe or socket)" if path.exists() else "does not exist")
        raise ModelInputError(f"corpus {path} {what}; pass --corpus with the path of a UTF-8 text "
                              f"file (the default is rebuilt by data/build_corpus.py)")
    raw = path.read_bytes()
    if not raw:
        raise ModelInputError(f"corpus {path} is empty; it needs at least a few hundred characters of text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelInputError(f"corpus {path} is not valid UTF-8: byte 0x{raw[e.start]:02x} at offset "
                              f"{e.start} ({e.reason}); re-save the file as UTF-8") from None


def train_val_split(ids, val_fraction):
    """(train, val): the first part and the last round(len * val_fraction) ids, as views."""
    if not 0 < val_fraction < 1:
        raise ModelInputError(f"val_fraction must be between 0 and 1, got {val_fraction}")
    n_val = round(len(ids) * val_fraction)
    if n_val == 0 or n_val == len(ids):
        raise ModelInputError(f"val_fraction {val_fraction} of {len(ids)} ids leaves an empty "
                              f"{'validation' if n_val == 0 else 'training'} set; use a longer corpus")
    return ids[:len(ids) - n_val], ids[len(ids) - n_val:]


def get_batch(ids, batch_size, seq_len, rng):
    """batch_size random windows of seq_len + 1 ids: x is the first seq_len, y the last seq_len.
    So y[b, t] is the id that follows x[b, t], the target of position t."""
    n_starts = len(ids) - seq_len                   # a window starting later would run off the end
    if n_starts < 1:
        raise ModelInputError(f"cannot draw windows of seq_len + 1 = {seq_len + 1} ids from {len(ids)} "
                              f"ids; use a longer corpus or a shorter seq_len")
    starts = rng.integers(0, n_starts, size=batch_size)
    windows = ids[starts[:, None] + np.arange(seq_len + 1)]   # (B, T + 1) in one gather
    return windows[:, :-1].astype(np.int64), windows[:, 1:].astype(np.int64)
