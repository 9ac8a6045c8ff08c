import numpy as np
import pytest

from model import ModelInputError
from model.data import (DEFAULT_CORPUS, CharTokenizer, get_batch, load_corpus, train_val_split)

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n"


def test_tokenizer_round_trip():
    tok = CharTokenizer(TEXT)
    ids = tok.encode(TEXT)
    assert ids.dtype == np.int64 and ids.shape == (len(TEXT),)
    assert tok.decode(ids) == TEXT
    assert tok.chars == "".join(sorted(set(TEXT)))
    assert tok.vocab_size == len(set(TEXT))


def test_tokenizer_round_trip_beyond_ascii():
    text = "naïve café — 𝔘nicode\n"
    tok = CharTokenizer(text)
    assert tok.decode(tok.encode(text)) == text
    assert tok.encode("").shape == (0,) and tok.decode([]) == ""


def test_tokenizer_dict_round_trip():
    tok = CharTokenizer(TEXT)
    again = CharTokenizer.from_dict(tok.to_dict())
    assert again.chars == tok.chars
    assert np.array_equal(again.encode(TEXT), tok.encode(TEXT))


def test_tokenizer_from_bad_dict():
    with pytest.raises(ModelInputError, match="sorted, distinct"):
        CharTokenizer.from_dict({"chars": "ba"})
    with pytest.raises(ModelInputError):
        CharTokenizer.from_dict({})


def test_unknown_characters_named_with_positions():
    tok = CharTokenizer("abc ")
    with pytest.raises(ModelInputError) as e:
        tok.encode("ab é c€")
    msg = str(e.value)
    assert "'é' at position 3" in msg and "'€' at position 6" in msg
    assert "vocabulary lacks" in msg


def test_decode_rejects_out_of_range_ids():
    tok = CharTokenizer("abc")
    with pytest.raises(ModelInputError, match=r"\[0, 2\]"):
        tok.decode([0, 3])


def test_split_is_contiguous_with_the_right_sizes():
    ids = np.arange(1000)
    train, val = train_val_split(ids, 0.1)
    assert len(train) == 900 and len(val) == 100
    assert np.array_equal(train, np.arange(900))        # the first part ...
    assert np.array_equal(val, np.arange(900, 1000))    # ... and the last, never interleaved


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_split_rejects_bad_fractions(fraction):
    with pytest.raises(ModelInputError, match="val_fraction"):
        train_val_split(np.arange(100), fraction)


def test_split_rejects_an_empty_part():
    with pytest.raises(ModelInputError, match="empty validation"):
        train_val_split(np.arange(3), 0.1)


def test_batches_are_windows_shifted_by_one():
    ids = np.arange(500, dtype=np.int64)                # each id names its own position
    x, y = get_batch(ids, 64, 8, np.random.default_rng(0))
    assert x.shape == y.shape == (64, 8)
    assert x.dtype == y.dtype == np.int64
    assert np.array_equal(y, x + 1)                     # y is the next id of every position
    assert np.array_equal(x, x[:, :1] + np.arange(8))   # every row is one contiguous window
    assert x.min() >= 0 and y.max() <= 499


def test_batches_cover_the_last_window_and_stay_in_range():
    ids = np.arange(10, dtype=np.int64)
    x, y = get_batch(ids, 2000, 9, np.random.default_rng(1))
    assert set(x[:, 0]) == {0}                          # only one window of 10 ids fits
    assert y.max() == 9


def test_batches_are_reproducible_from_the_rng():
    ids = np.arange(100)
    a = get_batch(ids, 4, 5, np.random.default_rng(7))
    b = get_batch(ids, 4, 5, np.random.default_rng(7))
    assert all(np.array_equal(p, q) for p, q in zip(a, b))


def test_batch_from_too_few_ids():
    with pytest.raises(ModelInputError, match="seq_len \\+ 1 = 9"):
        get_batch(np.arange(8), 2, 8, np.random.default_rng(0))


def test_load_corpus(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(TEXT, encoding="utf-8")
    assert load_corpus(path) == TEXT


def test_missing_corpus(tmp_path):
    path = tmp_path / "nope.txt"
    with pytest.raises(ModelInputError, match="does not exist") as e:
        load_corpus(path)
    assert str(path) in str(e.value)


def test_directory_as_corpus(tmp_path):
    with pytest.raises(ModelInputError, match="is a directory"):
        load_corpus(tmp_path)


def test_empty_corpus(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    with pytest.raises(ModelInputError, match="is empty") as e:
        load_corpus(path)
    assert str(path) in str(e.value)


def test_non_utf8_corpus_names_the_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf".encode() + "é au lait".encode("latin-1"))
    with pytest.raises(ModelInputError, match="byte 0xe9 at offset 3") as e:
        load_corpus(path)
    assert str(path) in str(e.value) and "UTF-8" in str(e.value)


def test_default_corpus_path_is_resolved_from_the_package():
    assert DEFAULT_CORPUS.is_absolute()
    assert DEFAULT_CORPUS.parts[-2:] == ("data", "shakespeare.txt")
