"""Examples for the Tokens and data page. Each returns an ExampleResult built from real calls of
model.data on the shipped corpus (data/shakespeare.txt)."""
import hashlib
import tempfile
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np

from model import ModelInputError
from model.config import ModelConfig, TrainConfig
from model.data import DEFAULT_CORPUS, CharTokenizer, load_corpus, train_val_split, get_batch
from model.train import seed_streams
from site_builder.run.examples import ExampleResult, table, code_line, value_of
from site_builder.run.trace import trace_locals

CORPUS_LABEL = "data/shakespeare.txt"
WORD = "O Romeo, Romeo!"                                      # hand-picked: words of the corpus
UNKNOWN = "naïve café"                                        # hand-picked: two letters the corpus lacks
SHOWN_ROWS = 4                                                # batch rows printed in full


@lru_cache(maxsize=1)
def corpus():
    """(text, tokenizer, ids) of the shipped corpus, read once per process."""
    text = load_corpus(DEFAULT_CORPUS)
    tok = CharTokenizer(text)
    return text, tok, tok.encode(text)


def show_char(c):
    """A character as the page prints it: a space as an open box, a newline as \\n."""
    return {"\n": "\\n", " ": "\u2423"}.get(c, c)


def fmt_ids(a):
    a = np.asarray(a)
    if a.dtype == bool:
        return "[" + ", ".join("True" if v else "False" for v in a.reshape(-1)) + "]"
    return "[" + ", ".join(str(int(v)) for v in a.reshape(-1)) + "]"


def int_steps(trace, rows):
    """Like site_builder.run.examples.steps_table, but prints integers and booleans as they are."""
    out = []
    for label, name in rows:
        line, code = code_line(trace, name)
        out.append(dict(label=label, name=name, line=line, code=code, value=fmt_ids(value_of(trace, name))))
    return dict(kind="steps", file=trace.file, function=trace.function, rows=out)


# ---------------------------------------------------------------- the tokenizer

def vocabulary():
    """Every character of the corpus with its id, twelve to a row."""
    _, tok, _ = corpus()
    rows = []
    for start in range(0, tok.vocab_size, 12):
        chars = tok.chars[start:start + 12]
        rows.append([f"{start} to {start + len(chars) - 1}", "  ".join(repr(c) for c in chars)])
    summary = table(["Ids", "Characters, in id order"], rows,
                    caption=f"CharTokenizer(load_corpus({CORPUS_LABEL})).chars: {tok.vocab_size} characters")
    return ExampleResult([summary], f"CharTokenizer on {CORPUS_LABEL}",
                         data=dict(chars=tok.chars, vocab_size=tok.vocab_size))


def encode_line():
    _, tok, _ = corpus()
    t = trace_locals(tok.encode, WORD)
    steps = int_steps(t, [("Code points of the text", "codes"), ("Code point within the lookup table", "known"),
                          ("Ids", "ids")])
    ids = t.result
    back = tok.decode(ids)
    per_char = table(["Position t"] + [str(i) for i in range(len(WORD))],
                     [["Character"] + [show_char(c) for c in WORD],
                      ["Id, ids[t]"] + [str(int(v)) for v in ids],
                      ["chars[ids[t]]"] + [show_char(tok.chars[v]) for v in ids]],
                     caption="Each id is the position of its character in chars, so chars[id] gives the character back. "
                             "A space is shown as \u2423.")
    check = table(["Call", "Result"], [["tok.decode(tok.encode(text)) == text", str(back == WORD)],
                                       ["len(ids), len(text)", f"{len(ids)}, {len(WORD)}"]])
    return ExampleResult([steps, per_char, check], f"CharTokenizer on {CORPUS_LABEL}",
                         data=dict(ids=ids, text=WORD, decoded=back))


def unknown_characters():
    _, tok, _ = corpus()
    rows = []
    for call, fn in ((f"tok.encode({UNKNOWN!r})", lambda: tok.encode(UNKNOWN)),
                     (f"tok.decode([0, {tok.vocab_size}])", lambda: tok.decode([0, tok.vocab_size]))):
        try:
            fn()
            message = "(no error)"
        except ModelInputError as e:
            message = str(e)
        rows.append([call, message])
    return ExampleResult([table(["Call", "ModelInputError message"], rows)],
                         f"CharTokenizer on {CORPUS_LABEL}", data=dict(rows=rows))


# ---------------------------------------------------------------- the corpus

def corpus_facts():
    text, tok, ids = corpus()
    raw = Path(DEFAULT_CORPUS).read_bytes()
    counts = Counter(text)
    n_words = len(text.split())
    seq_len = ModelConfig(vocab_size=tok.vocab_size).seq_len
    top = counts.most_common(6)
    rows = [
        ["Bytes in the file", f"{len(raw):,}", "len(path.read_bytes())"],
        ["Characters", f"{len(text):,}", "len(load_corpus(path))"],
        ["Lines", f"{text.count(chr(10)):,}", "text.count('\\n')"],
        ["Distinct characters (vocab_size)", str(tok.vocab_size), "CharTokenizer(text).vocab_size"],
        ["Every character is ASCII", str(all(ord(c) < 128 for c in tok.chars)), "all(ord(c) < 128 for c in tok.chars)"],
        ["Ids after encoding", f"{ids.shape[0]:,} of dtype {ids.dtype}", "tok.encode(text)"],
        ["Characters per word", f"{len(text) / n_words:.2f}", "len(text) / len(text.split())"],
        [f"Words in a context of seq_len = {seq_len} characters", f"{seq_len * n_words / len(text):.2f}",
         "seq_len * len(text.split()) / len(text)"],
        ["sha256 of the file", hashlib.sha256(raw).hexdigest(), "hashlib.sha256(raw)"],
    ]
    freq = table(["Character", "Count", "Share of the text"],
                 [[show_char(c), f"{n:,}", f"{100 * n / len(text):.2f}%"] for c, n in top],
                 caption="The most frequent characters.")
    return ExampleResult([table(["Quantity", "Value", "Computed by"], rows), freq],
                         f"load_corpus({CORPUS_LABEL})",
                         data=dict(n_bytes=len(raw), n_chars=len(text), vocab_size=tok.vocab_size,
                                   sha256=hashlib.sha256(raw).hexdigest(), top=top, n_words=n_words))


def corpus_errors():
    """load_corpus on four bad paths in a temporary folder; its name is printed as TMP."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "empty.txt").write_bytes(b"")
        (tmp / "latin1.txt").write_bytes("caf".encode() + "é au lait".encode("latin-1"))
        for what, path in (("A file that does not exist", tmp / "missing.txt"),
                           ("A folder", tmp),
                           ("An empty file", tmp / "empty.txt"),
                           ("Latin-1 bytes, not UTF-8", tmp / "latin1.txt")):
            try:
                load_corpus(path)
                message = "(no error)"
            except ModelInputError as e:
                message = str(e).replace(str(tmp), "TMP")
            rows.append([what, message])
    return ExampleResult([table(["Input", "ModelInputError message"], rows)],
                         "load_corpus on files made in a temporary folder", data=dict(rows=rows))


# ---------------------------------------------------------------- the split

def split_sizes():
    text, tok, ids = corpus()
    fraction = TrainConfig().val_fraction
    train, val = train_val_split(ids, fraction)
    n_val = round(len(ids) * fraction)
    rows = [
        ["Ids in the corpus, N", f"{len(ids):,}"],
        ["TrainConfig().val_fraction", str(fraction)],
        ["round(N * val_fraction)", f"{n_val:,}"],
        ["len(train)", f"{len(train):,}"],
        ["len(val)", f"{len(val):,}"],
        ["np.array_equal(np.concatenate([train, val]), ids)", str(np.array_equal(np.concatenate([train, val]), ids))],
        ["train and val are views of ids (no copy)", str(np.shares_memory(train, ids) and np.shares_memory(val, ids))],
    ]
    boundary = table(["Where", "Text"], [["The last 60 characters of train", repr(tok.decode(train[-60:]))],
                                         ["The first 60 characters of val", repr(tok.decode(val[:60]))]],
                     caption="The split falls where the ids fall, here in the middle of a scene.")
    return ExampleResult([table(["Quantity", "Value"], rows), boundary],
                         f"train_val_split(CharTokenizer(text).encode(text), {fraction}) on {CORPUS_LABEL}",
                         data=dict(n=len(ids), n_train=len(train), n_val=len(val), fraction=fraction))


# ---------------------------------------------------------------- batches

def first_batch_inputs():
    """What train() passes to get_batch at step 1: the training ids, the sizes, and the batch RNG."""
    _, tok, ids = corpus()
    tcfg = TrainConfig()
    cfg = ModelConfig(vocab_size=tok.vocab_size)
    train_ids, _ = train_val_split(ids, tcfg.val_fraction)
    rng = np.random.default_rng(seed_streams(tcfg.seed)[1])
    return train_ids, tcfg.batch_size, cfg.seq_len, rng


def first_batch():
    _, tok, _ = corpus()
    train_ids, B, T, rng = first_batch_inputs()
    x, y = get_batch(train_ids, B, T, rng)
    # The same draw on positions instead of ids says where each window starts (see run_coverage).
    _, _, _, same_rng = first_batch_inputs()
    starts = get_batch(np.arange(len(train_ids)), B, T, same_rng)[0][:, 0]
    shapes = table(["Array", "Shape", "dtype"], [["x", str(x.shape), str(x.dtype)], ["y", str(y.shape), str(y.dtype)]])
    texts = table(["Row b", "Start s_b", "x[b], decoded", "y[b], decoded"],
                  [[b, int(starts[b]), repr(tok.decode(x[b])), repr(tok.decode(y[b]))] for b in range(SHOWN_ROWS)],
                  caption=f"The first {SHOWN_ROWS} of the B rows. Each y row is its x row moved one character to the left, "
                          "with the next character appended.")
    row0 = table(["Position t"] + [str(i) for i in range(T)],
                 [["x[0, t]"] + [str(int(v)) for v in x[0]],
                  ["its character"] + [show_char(tok.chars[v]) for v in x[0]],
                  ["y[0, t]"] + [str(int(v)) for v in y[0]],
                  ["its character"] + [show_char(tok.chars[v]) for v in y[0]]],
                 caption="Row 0, position by position: the target of position t is the input at t + 1. "
                         "A space is shown as \u2423.")
    check = table(["Check, over all B rows", "Result"],
                  [["np.array_equal(x, train_ids[starts[:, None] + np.arange(T)])",
                    str(np.array_equal(x, train_ids[starts[:, None] + np.arange(T)]))],
                   ["np.array_equal(y[:, :-1], x[:, 1:])", str(np.array_equal(y[:, :-1], x[:, 1:]))],
                   ["np.array_equal(y[:, -1], train_ids[starts + T])", str(np.array_equal(y[:, -1], train_ids[starts + T]))]])
    return ExampleResult([shapes, texts, row0, check],
                         f"get_batch(train_ids, {B}, {T}, np.random.default_rng(seed_streams({TrainConfig().seed})[1])) "
                         f"on {CORPUS_LABEL}", data=dict(x=x, y=y, starts=starts))


def run_coverage():
    """Every window a training run at TrainConfig's defaults draws (not the site's run). get_batch on positions (np.arange) instead of ids,
    with the run's RNG, draws the same windows and returns where they are."""
    train_ids, B, T, rng = first_batch_inputs()
    steps = TrainConfig().steps
    positions = np.arange(len(train_ids))
    touched = np.zeros(len(train_ids), dtype=bool)
    first_x = None
    for _ in range(steps):
        x, y = get_batch(positions, B, T, rng)
        first_x = x if first_x is None else first_x
        touched[x] = True
        touched[y[:, -1]] = True
    rows = [["Training steps, TrainConfig().steps", f"{steps:,}"],
            ["Windows drawn, steps * batch_size", f"{steps * B:,}"],
            ["Ids those windows read, steps * batch_size * (seq_len + 1)", f"{steps * B * (T + 1):,}"],
            ["Training ids, len(train)", f"{len(train_ids):,}"],
            ["Training ids read at least once", f"{int(touched.sum()):,}"],
            ["Share of the training ids read at least once", f"{100 * touched.mean():.2f}%"]]
    return ExampleResult([table(["Quantity", "Value"], rows)],
                         f"{steps} calls of get_batch(np.arange(len(train)), {B}, {T}, rng) with the batch RNG of a "
                         f"run at TrainConfig()",
                         data=dict(touched=int(touched.sum()), n_train=len(train_ids), first_x=first_x, steps=steps))
