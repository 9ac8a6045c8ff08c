"""The Tokens and data page: its sections are built, and every number its examples print is what
a direct call of model.data gives."""
import ast
import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from model import ModelInputError
from model.config import ModelConfig, TrainConfig
from model.data import DEFAULT_CORPUS, CharTokenizer, get_batch, load_corpus, train_val_split
from model.train import seed_streams
from site_builder.run.examples import load_example

ROOT = Path(__file__).resolve().parent.parent
CONCEPTS = ["tokens-tokenizer", "tokens-corpus", "tokens-split", "tokens-batches"]
HEADINGS = ["What is it?", "Why does the model need it?", "Mathematics", "What does each symbol mean?",
            "Tiny numerical example", "Actual implementation", "Code and math connection", "Where is it used?"]


def example(name):
    return load_example(ROOT, f"tokens:{name}")()


def section(html, sid):
    """The HTML of one <section id=sid>, up to the next top-level section."""
    start = html.index(f'<section class="concept" id="{sid}"')
    end = html.find("<section", start + 1)
    return html[start:end if end > 0 else len(html)]


def cells(result):
    """Every table cell of an example, as printed."""
    return [c for b in result.blocks if b["kind"] == "table" for row in b["rows"] for c in row]


@pytest.fixture(scope="module")
def corpus():
    """(text, tokenizer, ids), loaded once: the example module's cached copy, checked against the file."""
    load_example(ROOT, "tokens:corpus")
    import sys
    text, tok, ids = sys.modules["content_examples_tokens"].corpus()
    assert text == DEFAULT_CORPUS.read_bytes().decode("utf-8")
    return text, tok, ids


def test_encode_gives_each_character_its_index():
    text = "O Romeo, Romeo! wherefore art thou Romeo?"
    tok = CharTokenizer(text)
    ids = tok.encode(text)
    assert all(tok.chars[i] == c for i, c in zip(ids, text))
    assert sorted(tok.chars) == list(tok.chars) and len(set(tok.chars)) == len(tok.chars)


@pytest.mark.parametrize("sid", CONCEPTS)
def test_page_has_each_concept_with_its_headings(site_page, sid):
    html = site_page("tokens")
    part = section(html, sid)
    for heading in HEADINGS:
        assert heading in part, f"{sid} lacks '{heading}'"


def test_page_has_tensor_shapes_for_the_ids(site_page):
    html = site_page("tokens")
    for sid in ("tokens-tokenizer", "tokens-batches"):
        assert "Tensor shapes" in section(html, sid)
    assert "(16,)" in section(html, "tokens-batches")


def test_vocabulary_is_the_corpus_characters(corpus):
    text, tok, _ = corpus
    r = example("vocabulary")
    assert r.data["chars"] == "".join(sorted(set(text)))
    assert r.data["vocab_size"] == len(set(text))
    shown = "".join(ast.literal_eval(c) for row in r.blocks[0]["rows"] for c in row[1].split("  "))
    assert shown == tok.chars


def test_encode_example_matches_a_direct_call(corpus):
    _, tok, _ = corpus
    r = example("encode_line")
    ids = tok.encode(r.data["text"])
    np.testing.assert_array_equal(r.data["ids"], ids)
    steps = r.blocks[0]["rows"]
    assert steps[-1]["value"] == "[" + ", ".join(str(int(i)) for i in ids) + "]"
    assert steps[0]["value"] == "[" + ", ".join(str(ord(c)) for c in r.data["text"]) + "]"
    per_char = dict((row[0], row[1:]) for row in r.blocks[1]["rows"])
    assert [int(v) for v in per_char["Id, ids[t]"]] == ids.tolist()
    assert r.data["decoded"] == r.data["text"]


def test_unknown_character_messages_are_the_real_ones(corpus):
    _, tok, _ = corpus
    r = example("unknown_characters")
    with pytest.raises(ModelInputError) as e:
        tok.encode("naïve café")
    assert r.data["rows"][0][1] == str(e.value)
    with pytest.raises(ModelInputError) as e:
        tok.decode([0, tok.vocab_size])
    assert r.data["rows"][1][1] == str(e.value)


def test_corpus_facts_match_the_file(corpus):
    text, tok, ids = corpus
    raw = DEFAULT_CORPUS.read_bytes()
    r = example("corpus_facts")
    assert r.data["n_bytes"] == len(raw) and r.data["n_chars"] == len(text) == len(ids)
    assert r.data["vocab_size"] == tok.vocab_size
    assert r.data["sha256"] == hashlib.sha256(raw).hexdigest()
    # data/SOURCE.md records the same digest
    assert r.data["sha256"] in (ROOT / "data" / "SOURCE.md").read_text(encoding="utf-8")
    shown = cells(r)
    assert f"{len(text):,}" in shown and hashlib.sha256(raw).hexdigest() in shown
    counts = np.bincount(ids, minlength=tok.vocab_size)
    assert r.data["top"][0] == (tok.chars[int(counts.argmax())], int(counts.max()))


def test_corpus_error_messages_are_the_real_ones(tmp_path):
    r = example("corpus_errors")
    rows = dict(r.data["rows"])
    with pytest.raises(ModelInputError) as e:
        load_corpus(tmp_path / "missing.txt")
    assert rows["A file that does not exist"] == str(e.value).replace(str(tmp_path), "TMP")
    (tmp_path / "latin1.txt").write_bytes("caf".encode() + "é au lait".encode("latin-1"))
    with pytest.raises(ModelInputError) as e:
        load_corpus(tmp_path / "latin1.txt")
    assert rows["Latin-1 bytes, not UTF-8"] == str(e.value).replace(str(tmp_path), "TMP")
    assert not any("/tmp" in m for m in rows.values())     # nothing random reaches the page


def test_split_sizes_match_a_direct_call(corpus):
    _, _, ids = corpus
    fraction = TrainConfig().val_fraction
    train, val = train_val_split(ids, fraction)
    r = example("split_sizes")
    assert (r.data["n"], r.data["n_train"], r.data["n_val"]) == (len(ids), len(train), len(val))
    assert f"{len(train):,}" in cells(r) and f"{len(val):,}" in cells(r)
    assert len(train) + len(val) == len(ids)


def test_first_batch_is_the_training_runs_first_batch(corpus):
    text, tok, ids = corpus
    tcfg = TrainConfig()
    train_ids, _ = train_val_split(ids, tcfg.val_fraction)
    cfg = ModelConfig(vocab_size=tok.vocab_size)
    x, y = get_batch(train_ids, tcfg.batch_size, cfg.seq_len, np.random.default_rng(seed_streams(tcfg.seed)[1]))
    r = example("first_batch")
    np.testing.assert_array_equal(r.data["x"], x)
    np.testing.assert_array_equal(r.data["y"], y)
    # y is x shifted by one, read straight from the corpus text
    for b, s in enumerate(r.data["starts"]):
        assert tok.decode(x[b]) == text[s:s + cfg.seq_len]
        assert tok.decode(y[b]) == text[s + 1:s + cfg.seq_len + 1]
    texts = r.blocks[1]["rows"]
    assert texts[0][2] == repr(text[r.data["starts"][0]:r.data["starts"][0] + cfg.seq_len])
    assert ["np.array_equal(y[:, :-1], x[:, 1:])", "True"] in r.blocks[-1]["rows"]


def test_run_coverage_starts_with_the_first_batch():
    first = example("first_batch")
    r = example("run_coverage")
    np.testing.assert_array_equal(r.data["first_x"][:, 0], first.data["starts"])
    assert 0 < r.data["touched"] < r.data["n_train"]
    share = [row[1] for row in r.blocks[0]["rows"] if row[0].startswith("Share")][0]
    assert re.fullmatch(r"\d+\.\d\d%", share)
