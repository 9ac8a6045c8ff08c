"""Examples for the Generation page. Each returns an ExampleResult built from real calls.

The parameters are the final ones of the site's training run (content/hooks.py:
model.train.train on the shipped corpus at the default configs), and the tokenizer is rebuilt
from that run's vocabulary. Every sampled output names its seed.
"""
import contextlib
import io
import tempfile
from pathlib import Path

import numpy as np

import model.generate as mg
from model import ModelInputError
from model.data import CharTokenizer
from model.optim import AdamW
from model.train import save_checkpoint
from model.transformer import forward
from site_builder.run.examples import ExampleResult, config_label, figure, fmt_number, table
from site_builder.render.plots import line_plot
from site_builder.run.trace import trace_locals
from content.hooks import ROOT, run_label, trained_run

PROMPT = "ROMEO:\n"                      # hand-picked prompts
NEXT_PROMPT = "To be, or not to b"       # the probabilities of the character after this one
LONG_PROMPT = "KING HENRY:\nI will not go to "
LENGTH = 80                              # characters to generate
GREEDY_LENGTH = 200                      # long enough for greedy output to settle into its cycle
SEED = 0
SETTINGS = [                             # (label, temperature, top_k)
    ("Greedy", 0, None),
    ("Temperature 0.5", 0.5, None),
    ("Temperature 1", 1.0, None),
    ("Temperature 2", 2.0, None),
    ("Temperature 1, top-k 5", 1.0, 5),
]
TEMPERATURES = (0.5, 1.0, 2.0)
TOP_K = 3
SHOWN = 8                                # rows of the probability table
DRAWS = 2000


def model_and_tokenizer():
    run = trained_run()
    return run, CharTokenizer.from_dict({"chars": run.chars})


def _source(run):
    return (f"the final parameters of {run_label(run)}, "
            f"{config_label(run.model_cfg)}, tokenizer CharTokenizer.from_dict({{'chars': run.chars}})")


def _show(text):
    return text.replace("\n", "↵")


def sampled(temperature, top_k, prompt=PROMPT, length=LENGTH, seed=SEED):
    run, tok = model_and_tokenizer()
    ids = mg.generate(run.params, run.model_cfg, tok.encode(prompt), length, temperature, top_k,
                      np.random.default_rng(seed))
    return tok.decode(ids)


def sampling_outputs():
    run, _ = model_and_tokenizer()
    rows, texts = [], {}
    for label, temperature, top_k in SETTINGS:
        text = sampled(temperature, top_k)
        texts[label] = text
        rows.append([label, f"generate(params, cfg, encode({PROMPT!r}), {LENGTH}, {temperature}, {top_k}, "
                            f"np.random.default_rng({SEED}))", _show(text)])
    return ExampleResult([table(["Setting", "Call", "Output (↵ is a newline)"], rows)], _source(run),
                         data=dict(texts=texts))


def greedy_cycle():
    """Greedy output is a function of its last seq_len ids: find the first window that repeats."""
    run, tok = model_and_tokenizer()
    ids = mg.generate(run.params, run.model_cfg, tok.encode(PROMPT), GREEDY_LENGTH, 0, None,
                      np.random.default_rng(SEED))
    T, seen, found = run.model_cfg.seq_len, {}, None
    for end in range(T, len(ids) + 1):
        window = tuple(ids[end - T:end])
        if window in seen:
            found = (seen[window], end)
            break
        seen[window] = end
    if found is None:
        rows = [["A repeated window", f"none in {GREEDY_LENGTH} greedy characters"]]
        return ExampleResult([table(["Greedy output", "Value"], rows)], _source(run), data=dict(period=None))
    first, again = found
    period = again - first
    unit = tok.decode(ids[first - period:first]) if first >= period else tok.decode(ids[first:again])
    rest_periodic = all(ids[i] == ids[i - period] for i in range(first, len(ids)))
    rows = [["Characters generated", GREEDY_LENGTH],
            ["First window of seq_len characters seen twice", repr(tok.decode(ids[first - T:first]))],
            ["It ends at position (prompt included)", f"{first}, and again at {again}"],
            ["Period of the cycle", period],
            ["The repeating unit", repr(unit)],
            ["Every later character equals the one a period earlier", str(rest_periodic)]]
    return ExampleResult([table(["Greedy output from " + repr(PROMPT), "Value"], rows)], _source(run),
                         data=dict(period=period, first=first, periodic=rest_periodic))


# ----------------------------------------------------------------------------- probabilities

def next_logits():
    run, tok = model_and_tokenizer()
    ids = tok.encode(NEXT_PROMPT)[-run.model_cfg.seq_len:]
    logits, _ = forward(run.params, ids, run.model_cfg)
    return run, tok, logits[-1]


def traced_probabilities(logits, temperature, top_k):
    """sample_next's own distribution: its local p, normalised as its return line does."""
    t = trace_locals(mg.sample_next, logits, temperature, top_k, np.random.default_rng(SEED))
    p = next(s.locals["p"] for s in reversed(t.steps) if "p" in s.locals)
    return p / p.sum(), t.result


def probability_columns():
    run, tok, logits = next_logits()
    cols = {f"T = {t:g}": traced_probabilities(logits, t, None) for t in TEMPERATURES}
    cols[f"T = 1, top-k {TOP_K}"] = traced_probabilities(logits, 1.0, TOP_K)
    return run, tok, logits, cols


def probabilities():
    run, tok, logits, cols = probability_columns()
    order = np.argsort(-logits, kind="stable")
    rows = []
    for rank, i in enumerate(order[:SHOWN], 1):
        rows.append([rank, repr(tok.chars[i]), fmt_number(logits[i])] + [fmt_number(p[i]) for p, _ in cols.values()])
    rest = order[SHOWN:]
    rows.append(["", f"the other {len(rest)} characters", ""] + [fmt_number(p[rest].sum()) for p, _ in cols.values()])
    entropy = ["", "entropy (nats)", ""] + [fmt_number(-(p[p > 0] * np.log(p[p > 0])).sum()) for p, _ in cols.values()]
    drawn = ["", "drawn by sample_next (seed 0)", ""] + [repr(tok.chars[r]) for _, r in cols.values()]
    head = table(["Rank", "Next character", "Logit"] + list(cols), rows + [entropy, drawn],
                 caption=f"After {NEXT_PROMPT!r}")
    series = [(name, list(range(1, len(order) + 1)), [float(p[i]) for i in order])
              for name, (p, _) in cols.items() if "top" not in name]
    svg = line_plot(series, f"Probability of each next character after {NEXT_PROMPT!r}, likeliest first",
                    "rank of the character (by logit)", "probability (log scale)", logy=True)
    return ExampleResult([head, figure(svg, "The same logits at three temperatures. The order never changes; "
                                            "only how steeply the probability falls.")], _source(run),
                         data={name: p for name, (p, _) in cols.items()} | dict(logits=logits))


def entropy(p):
    """-sum p log p over the p > 0, in nats (written with np.where, so the tape records it)."""
    positive = p > 0
    return -np.where(positive, p * np.log(np.where(positive, p, 1.0)), 0.0).sum()


def next_distribution(ids, temperature, params, cfg):
    """What sample_next draws the next id from after `ids` (the model's last row of logits at
    this temperature, the p it hands to rng.choice) and its entropy: the step the replayer
    recomputes, the draw itself left to its declared step (site_builder/run/tape.py choice_step)."""
    from site_builder.run.tape import ChoiceRecorder
    logits, _ = forward(params, ids, cfg)
    draw = ChoiceRecorder()
    mg.sample_next(logits[-1], temperature, None, draw)
    return dict(p=draw.p, entropy=entropy(draw.p))


TEMPERATURE_CAPTION = "After {prompt} (the model reads its last {seen} characters)"


def temperature_result(source, prompt, temperature, seen, top, others, rest, entropy_text, drawn, continuation):
    """at_temperature's two tables from their texts: this build's (formatted values) and the
    template a temperature or prompt typed in the reader's browser fills (slots, temperature_replay).
    top: [(character, probability)] of the SHOWN likeliest, in order."""
    rows = [[rank, char, prob] for rank, (char, prob) in enumerate(top, 1)]
    rows.append(["", "the other " + others + " characters", rest])
    rows.append(["", "entropy (nats)", entropy_text])
    rows.append(["", f"drawn by sample_next (seed {SEED})", drawn])
    sample = table(["Prompt", f"generate(..., {LENGTH}, {temperature}, None, np.random.default_rng({SEED})) (↵ is a newline)"],
                   [[prompt, continuation]])
    return ExampleResult([table(["Rank", "Next character", f"Probability at T = {temperature}"], rows,
                                caption=TEMPERATURE_CAPTION.format(prompt=seen[0], seen=seen[1])), sample], source)


def at_temperature(temperature=1.0, prompt=NEXT_PROMPT):
    """The next-character distribution after `prompt` at one temperature (sample_next's own p,
    traced), and a continuation sampled at that temperature with the fixed seed."""
    run, tok = model_and_tokenizer()
    ids = tok.encode(prompt)[-run.model_cfg.seq_len:]
    logits, _ = forward(run.params, ids, run.model_cfg)
    p, drawn = traced_probabilities(logits[-1], temperature, None)
    order = np.argsort(-p, kind="stable")
    text = sampled(temperature, None, prompt=prompt)
    result = temperature_result(_source(run), _show(prompt), f"{temperature:g}", (repr(prompt), len(ids)),
                                [(repr(tok.chars[i]), fmt_number(p[i])) for i in order[:SHOWN]], str(len(order) - SHOWN),
                                fmt_number(p[order[SHOWN:]].sum()), fmt_number(entropy(p)), repr(tok.chars[drawn]),
                                _show(text[len(prompt):]))
    result.data = dict(p=p, text=text)
    return result


def temperature_replay():
    """The tape of at_temperature's computation, for a temperature and prompt the reader types
    on any host: next_distribution recorded once per context length T = 1 to seq_len (the
    forward pass's shapes depend on T), with the temperature an input, each checked at another
    text and temperature against a fresh call. Two steps are the replayer's, declared: the
    loop of generate (append the drawn id, keep the last seq_len) and the draw, which takes the
    uniforms default_rng(SEED) gives, shipped; that the declared steps give generate's own
    text is checked here on a second prompt, so a change of either fails the build."""
    from site_builder.run.tape import bundle, check, choice_step, record, replay
    run, tok = model_and_tokenizer()
    cfg = run.model_cfg
    tapes, worst = {}, 0.0
    fn = lambda ids, temperature, params: next_distribution(ids, temperature, params, cfg)
    real = lambda ids, temperature: fn(ids, temperature, run.params)
    other = "Friends, Romans, countrymen"
    for T in range(1, cfg.seq_len + 1):
        tapes[T] = record(ROOT, fn, dict(ids=tok.encode(NEXT_PROMPT[-T:]), temperature=1.0), dict(params=run.params))
        worst = max(worst, check(tapes[T], dict(ids=tok.encode(other[:T]), temperature=0.37), real))
    draws = np.random.default_rng(SEED).random(LENGTH)
    ids = list(tok.encode(other))
    for u in draws:                                  # the declared steps, here as in the browser
        context = ids[-cfg.seq_len:]
        p, _ = replay(tapes[len(context)], dict(ids=context, temperature=0.8))
        ids.append(choice_step(p, u))
    if tok.decode(ids) != sampled(0.8, None, prompt=other):
        raise AssertionError("the replayed loop and draws do not give generate's text: the declared steps drifted")
    template = temperature_result("@@source@@", "@@prompt@@", "@@temperature@@", ("@@window@@", "@@seen@@"),
                                  [(f"@@char:{r}@@", f"@@p:{r}@@") for r in range(SHOWN)], str(len(run.chars) - SHOWN), "@@rest@@", "@@entropy@@",
                                  "@@drawn@@", "@@continuation@@")
    recorded = f"next_distribution (model.transformer.forward, then model.generate.sample_next) with {_source(run)}, once per T from 1 to {cfg.seq_len}"
    return ExampleResult(template.blocks, template.source,
                         data=dict(tape=bundle(tapes, view="generation", recorded=recorded, chars=run.chars, length=cfg.seq_len,
                                               draws=[float(u) for u in draws], shown=SHOWN, defaults=dict(prompt=NEXT_PROMPT)),
                                   worst=worst))


def top_k_draws():
    run, tok, logits = next_logits()
    p, _ = traced_probabilities(logits, 1.0, TOP_K)
    rng = np.random.default_rng(SEED)
    draws = np.array([mg.sample_next(logits, 1.0, TOP_K, rng) for _ in range(DRAWS)])
    counts = np.bincount(draws, minlength=len(logits))
    kept = np.flatnonzero(p > 0)
    rows = [[repr(tok.chars[i]), fmt_number(p[i]), counts[i], fmt_number(counts[i] / DRAWS)]
            for i in kept[np.argsort(-p[kept])]]
    rows.append(["any other character", fmt_number(p[p == 0].sum()), int(counts[p == 0].sum()),
                 fmt_number(counts[p == 0].sum() / DRAWS)])
    return ExampleResult([table(["Character", "Probability (top-k 3, T = 1)", f"Times drawn in {DRAWS}",
                                 "Fraction drawn"], rows, caption=f"After {NEXT_PROMPT!r}, seed {SEED}")],
                         _source(run), data=dict(counts=counts, p=p))


def bad_settings():
    cases = [(-0.5, None), (float("nan"), None), (float("inf"), None), (True, None), ("0.8", None),
             (1.0, 0), (1.0, 2.5), (1.0, -3), (1.0, True)]
    rows = []
    for temperature, top_k in cases:
        try:
            mg.check_sampling(temperature, top_k)
            rows.append([repr(temperature), repr(top_k), "accepted"])
        except ModelInputError as e:
            rows.append([repr(temperature), repr(top_k), str(e)])
    ok = []
    for temperature, top_k in [(0, None), (0.8, None), (1, 1), (2.0, 40)]:
        mg.check_sampling(temperature, top_k)
        ok.append([repr(temperature), repr(top_k), "accepted"])
    return ExampleResult([table(["temperature", "top_k", "check_sampling says"], rows + ok)],
                         "model.generate.check_sampling called with each pair (hand-picked)")


# ----------------------------------------------------------------------------- context

def context_window():
    run, tok = model_and_tokenizer()
    T = run.model_cfg.seq_len
    long_ids = tok.encode(LONG_PROMPT)
    t = trace_locals(mg.generate, run.params, run.model_cfg, long_ids, 3, 1.0, None, np.random.default_rng(SEED))
    contexts = [s.locals["context"] for s in t.steps if "context" in s.changed]
    trace_rows = [[i + 1, repr(tok.decode(c)), len(c), repr(tok.decode(t.result[len(long_ids) + i:len(long_ids) + i + 1]))]
                  for i, c in enumerate(contexts)]
    full = mg.generate(run.params, run.model_cfg, long_ids, LENGTH, 1.0, None, np.random.default_rng(SEED))
    tail = mg.generate(run.params, run.model_cfg, long_ids[-T:], LENGTH, 1.0, None, np.random.default_rng(SEED))
    same = bool(np.array_equal(full[len(long_ids):], tail[T:]))
    compare = table(["Prompt", "Its length", "Continuation, temperature 1, seed 0 (↵ is a newline)"],
                    [[repr(LONG_PROMPT), len(long_ids), _show(tok.decode(full[len(long_ids):]))],
                     [f"its last seq_len = {T} characters: {tok.decode(long_ids[-T:])!r}", T,
                      _show(tok.decode(tail[T:]))],
                     ["Identical continuations", "", str(same)]])
    steps = table(["Loop pass", "context (what forward sees)", "Its length", "Character appended"], trace_rows,
                  caption=f"The first passes of generate's loop on {LONG_PROMPT!r}")
    return ExampleResult([steps, compare], _source(run), data=dict(same=same, contexts=contexts))


def exit_status(call):
    """(the status call exits with, what it printed on stderr)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            call()
    except SystemExit as e:
        return e.code, err.getvalue()
    return 0, err.getvalue()


CLI = dict(steps=60, temperature=0.8, top_k=10, seed=3)   # hand-picked settings for the command line


def command_line():
    run, tok = model_and_tokenizer()
    prompt = PROMPT.strip()
    argv = ["--prompt", prompt, "--steps", str(CLI["steps"]), "--temperature", str(CLI["temperature"]),
            "--top-k", str(CLI["top_k"]), "--seed", str(CLI["seed"])]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "checkpoint.npz"
        save_checkpoint(path, params=run.params, opt=AdamW(run.params), rng=np.random.default_rng(0),
                        step=run.train_cfg.steps, model_cfg=run.model_cfg, train_cfg=run.train_cfg, tokenizer=tok)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            mg.main(["--checkpoint", str(path)] + argv)
        bad = ["--checkpoint", str(path), "--prompt", prompt, "--temperature", "-1"]
        bad_status, bad_said = exit_status(lambda: mg.main(bad))
    printed = out.getvalue()
    direct = tok.decode(mg.generate(run.params, run.model_cfg, tok.encode(prompt), CLI["steps"], CLI["temperature"],
                                    CLI["top_k"], np.random.default_rng(CLI["seed"])))
    same = printed == direct + "\n"
    call = (f"generate(params, cfg, encode({prompt!r}), {CLI['steps']}, {CLI['temperature']}, {CLI['top_k']}, "
            f"np.random.default_rng({CLI['seed']})), decoded")
    rows = [["Command", "python3 -m model.generate --checkpoint OUT/checkpoint.npz " + " ".join(argv)],
            ["Printed (↵ is a newline)", _show(printed.rstrip("\n"))],
            [f"Equal to {call}", str(same)],
            ["Bad input: " + " ".join(bad[2:]), f"{bad_said.strip()} (exit status {bad_status})"]]
    return ExampleResult([table(["The command line", "Value"], rows)],
                         "model.generate.main in this process, on a checkpoint.npz written by save_checkpoint "
                         "(temporary folder, shown as OUT) from " + _source(run), data=dict(same=same, printed=printed, bad_status=bad_status))
