"""Examples for the Embeddings page. A tiny model (d = 4) with the real vocabulary of the corpus and
random parameters from the real init_params; every number comes from a call of model/."""
from functools import lru_cache

import numpy as np

from model.config import ModelConfig
from model.data import DEFAULT_CORPUS, CharTokenizer, load_corpus
from model.gradcheck import numerical_grad
from model.ops import cross_entropy_forward
from model.transformer import init_params, embed_forward, forward, loss_and_grads
from site_builder.run.examples import ExampleResult, table, matrix, gradcheck_table, fmt_array, config_label, value_of
from site_builder.run.trace import trace_locals, trace_calls

SEED = 0
WORDS = ("tomorrow", "sorrows!")    # hand-picked: repeated letters, within one sequence and across the two
ABSENT = "z"                         # hand-picked: a character neither input contains


@lru_cache(maxsize=1)
def tokenizer():
    return CharTokenizer(load_corpus(DEFAULT_CORPUS))


def tiny_config():
    return ModelConfig(vocab_size=tokenizer().vocab_size, seq_len=8, emb_dim=4, num_heads=2, ff_dim=8, num_layers=1)


def tiny_params():
    return init_params(tiny_config(), np.random.default_rng(SEED))


def source():
    return f"init_params({config_label(tiny_config())}, np.random.default_rng({SEED})), vocabulary of data/shakespeare.txt"


def batch():
    """x: each word without its last character, y: without its first. Shape (2, 7)."""
    ids = np.stack([tokenizer().encode(w) for w in WORDS])
    return ids[:, :-1], ids[:, 1:]


def show_char(c):
    return {"\n": "\\n", " ": "\u2423"}.get(c, c)


def occurrences(x, char):
    """[(b, t)] where x holds the id of char, in reading order."""
    i = int(tokenizer().encode(char)[0])
    return [(int(b), int(t)) for b, t in zip(*np.nonzero(x == i))]


def dX_at_embeddings(params, x, y):
    """The gradient loss_and_grads passes to embed_backward, and the gradients it returns."""
    (loss, grads), traces = trace_calls(loss_and_grads, ["model.transformer.embed_backward"],
                                        params, x, y, tiny_config())
    return traces["model.transformer.embed_backward"][0].arguments["dX"], grads, loss


# ---------------------------------------------------------------- forward

def embed_forward_one():
    params = tiny_params()
    tok = tokenizer()
    x, _ = batch()
    ids = x[0]
    t = trace_locals(embed_forward, ids, params)
    X = t.result[0]
    looked_up = value_of(t, "tok")
    T = len(ids)
    chars = table(["Position t"] + [str(i) for i in range(T)],
                  [["Character"] + [show_char(tok.chars[i]) for i in ids], ["Id"] + [str(int(i)) for i in ids]])
    o = [t_ for _, t_ in occurrences(x[:1], "o")]
    same_tok = all(np.array_equal(looked_up[o[0]], looked_up[k]) for k in o[1:])
    same_X = any(np.array_equal(X[o[0]], X[k]) for k in o[1:])
    check = table(["Check, at the positions of 'o'", "Result"],
                  [[f"tok rows {o} are one and the same row of tok_emb", str(same_tok)],
                   [f"two X rows among {o} are equal", str(same_X)]])
    return ExampleResult([chars, matrix("tok = tok_emb[ids]", looked_up), matrix("pos_emb[:T]", params["pos_emb"][:T]),
                          matrix("X = tok + pos_emb[:T]", X), check], source(),
                         data=dict(ids=ids, tok=looked_up, X=X, same_tok=same_tok, same_X=same_X))


# ---------------------------------------------------------------- backward

def embed_backward_tokens():
    params = tiny_params()
    tok = tokenizer()
    x, y = batch()
    dX, grads, _ = dX_at_embeddings(params, x, y)
    rows, gaps = [], {}
    for char in ("o", "r", ABSENT):
        i = int(tok.encode(char)[0])
        where = occurrences(x, char)
        total = np.zeros(dX.shape[-1])
        for b, t in where:
            rows.append([f"dX[{b}, {t}]", f"'{char}'", fmt_array(dX[b, t])])
            total = total + dX[b, t]
        if where:
            rows.append([f"sum of the {len(where)} rows above", f"'{char}'", fmt_array(total)])
        else:
            rows.append(["no position holds it: an empty sum", f"'{char}'", fmt_array(total)])
        rows.append([f'grads["tok_emb"][{i}]', f"'{char}' (id {i})", fmt_array(grads["tok_emb"][i])])
        gaps[char] = float(np.max(np.abs(total - grads["tok_emb"][i])))
        rows.append(["largest gap, sum against grads row", "", f"{gaps[char]:.1e}"])
    # What plain fancy-index addition would give instead of a scatter-add: NumPy buffers it, so a
    # repeated id keeps one of its rows instead of their sum.
    naive = np.zeros_like(grads["tok_emb"])
    naive[x.reshape(-1)] += dX.reshape(-1, dX.shape[-1])
    o = int(tok.encode("o")[0])
    wrong = table(["Scatter", f"Row {o}, 'o'"],
                  [["embedding_backward (a scatter-add)", fmt_array(grads["tok_emb"][o])],
                   ["dtable[ids] += dX", fmt_array(naive[o])],
                   ["the last 'o' row, dX" + str(list(occurrences(x, "o")[-1])), fmt_array(dX[occurrences(x, "o")[-1]])]],
                  caption="The one-line alternative is wrong for repeated ids.")
    return ExampleResult([table(["Row", "Character", "Value"], rows), wrong], source(),
                         data=dict(dX=dX, tok_emb=grads["tok_emb"], gaps=gaps, x=x, naive=naive))


def embed_backward_positions():
    params = tiny_params()
    x, y = batch()
    dX, grads, _ = dX_at_embeddings(params, x, y)
    B, T, _ = dX.shape
    rows = []
    for t in range(params["pos_emb"].shape[0]):
        if t < T:
            rows.append([str(t), fmt_array(dX[0, t]), fmt_array(dX[1, t]), fmt_array(dX[0, t] + dX[1, t]),
                         fmt_array(grads["pos_emb"][t])])
        else:
            rows.append([str(t), "no position t", "no position t", "", fmt_array(grads["pos_emb"][t])])
    return ExampleResult([table(["t", "dX[0, t]", "dX[1, t]", "dX[0, t] + dX[1, t]", 'grads["pos_emb"][t]'], rows,
                                caption=f"B = {B} sequences of T = {T} ids; pos_emb has seq_len = {params['pos_emb'].shape[0]} rows.")],
                         source(), data=dict(dX=dX, pos_emb=grads["pos_emb"]))


def _loss(params, x, y):
    logits, _ = forward(params, x, tiny_config())
    return cross_entropy_forward(logits, y)[0]


H = 1e-6            # the step of the central differences below; see embed_gradcheck_step for why not 1e-5
KINK_CHAR = "s"     # the row whose check at h = 1e-5 straddles a ReLU kink (measured in embed_gradcheck_step)


def embed_gradcheck():
    params = tiny_params()
    tok = tokenizer()
    x, y = batch()
    _, grads = loss_and_grads(params, x, y, tiny_config())
    f = lambda: _loss(params, x, y)
    num_tok = numerical_grad(f, params["tok_emb"], h=H)
    num_pos = numerical_grad(f, params["pos_emb"], h=H)
    rows = []
    for char in ("o", "r", "t", "s", ABSENT):
        i = int(tok.encode(char)[0])
        rows.append((f'grads["tok_emb"][{i}], \'{char}\'', grads["tok_emb"][i], num_tok[i]))
    rows.append(('grads["pos_emb"]', grads["pos_emb"], num_pos))
    whole = table(["Whole table", "Largest gap over every entry"],
                  [['grads["tok_emb"]', f"{np.max(np.abs(grads['tok_emb'] - num_tok)):.1e}"],
                   ['grads["pos_emb"]', f"{np.max(np.abs(grads['pos_emb'] - num_pos)):.1e}"]])
    return ExampleResult([gradcheck_table(rows), whole], source() + f"; central differences with h = {H:g}",
                         data=dict(tok_emb=grads["tok_emb"], num_tok=num_tok, pos_emb=grads["pos_emb"], num_pos=num_pos))


def nearest_relu_kink(params, x):
    """(b, t, unit, Z) of the ReLU input of the feed-forward layer closest to 0 in this batch."""
    _, traces = trace_calls(forward, ["model.ops.relu_forward"], params, x, tiny_config(), limit=1)
    Z = traces["model.ops.relu_forward"][0].arguments["Z"]
    b, t, unit = np.unravel_index(np.argmin(np.abs(Z)), Z.shape)
    return int(b), int(t), int(unit), float(Z[b, t, unit])


def embed_gradcheck_step():
    params = tiny_params()
    tok = tokenizer()
    x, y = batch()
    _, grads = loss_and_grads(params, x, y, tiny_config())
    i = int(tok.encode(KINK_CHAR)[0])
    rows, gaps = [], {}
    for h in (1e-4, 1e-5, 1e-6, 1e-7):
        num = numerical_grad(lambda: _loss(params, x, y), params["tok_emb"][i], h=h)   # a view: nudges row i only
        gaps[h] = float(np.max(np.abs(num - grads["tok_emb"][i])))
        rows.append([f"{h:g}", fmt_array(num), f"{gaps[h]:.1e}"])
    rows.append(["the backward pass", fmt_array(grads["tok_emb"][i]), ""])
    b, t, unit, z = nearest_relu_kink(params, x)
    kink = table(["The ReLU input closest to 0 in this batch", "Value"],
                 [["where: sequence b, position t, hidden unit", f"b = {b}, t = {t}, unit {unit}"],
                  ["the character at x[b, t]", f"'{tok.chars[x[b, t]]}'"],
                  ["Z there", f"{z:.2e}"]])
    return ExampleResult([table(["h", f'numerical_grad(..., h)[{i}], the row of \'{KINK_CHAR}\'', "Largest gap"], rows),
                          kink], source(),
                         data=dict(gaps=gaps, kink=(b, t, unit, z), char_at_kink=tok.chars[x[b, t]]))


def facts():
    """For prose: the tiny model's width, and the step of this page's gradient checks against
    numerical_grad's default."""
    import inspect
    return ExampleResult([], source(), data=dict(
        d=tiny_config().emb_dim, h=H,
        default_h=inspect.signature(numerical_grad).parameters["h"].default))
