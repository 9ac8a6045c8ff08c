"""The tapes of the playable examples (site_builder/run/tape.py): the recorder, and each built
tape replayed by the shipped JavaScript replayer (under Node) on random valid inputs (a fixed
seed), equal to NumPy's real call to 1e-12 relative, and drawn as the build draws its own
results (the same SVG and caption, byte for byte)."""
import base64
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from site_builder.run.tape import TapeError, check, record, replay
from tests.conftest import ROOT

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="no node on this machine: the replayer runs in Node")
TOLERANCE = 1e-12
SEED = 29


def node_replay(tape_file, runs):
    """The harness's answers for runs [{case, inputs, args}], the raw outputs as arrays."""
    p = subprocess.run([NODE, str(ROOT / "tests" / "replay_harness.js"), str(ROOT / "static" / "js"), str(tape_file)],
                       input=json.dumps(runs), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    answers = json.loads(p.stdout)
    for a in answers:
        a["raw"] = [np.frombuffer(base64.b64decode(o["data"]), dtype="<f8").reshape(o["shape"]) for o in a["raw"]]
    return answers


def relative_gap(got, want):
    """max |got - want| / max(|want|, 1): relative for large values, absolute near 0; infinities equal."""
    got, want = np.asarray(got, float), np.asarray(want, float)
    assert got.shape == want.shape
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite], want[~finite], equal_nan=True)
    return float((np.abs(got[finite] - want[finite]) / np.maximum(np.abs(want[finite]), 1.0)).max(initial=0.0))


def random_prompts(chars, rng, n, longest):
    return ["".join(rng.choice(list(chars), size=int(rng.integers(1, longest + 1)))) for _ in range(n)]


# ------------------------------------------------------------------ the recorder

def test_recording_a_call_replays_it_on_other_inputs():
    from model.ops import layer_norm_forward, softmax_forward

    def fn(X, g):
        Y, c = layer_norm_forward(X.copy(), g, np.zeros(4), 1e-5)
        return softmax_forward(Y)[0], c["s"]
    rng = np.random.default_rng(SEED)
    tape = record(ROOT, fn, dict(X=rng.standard_normal((3, 4))), dict(g=np.ones(4)))
    assert {"matmul", "exp", "sqrt", "reduce"} <= {op["op"] for op in tape.ops}
    assert any(f == "model/ops.py" for f, _ in tape.lines), "each op keeps the line of model/ that performed it"
    X2 = rng.standard_normal((3, 4))
    assert check(tape, dict(X=X2), lambda X: fn(X, np.ones(4))) <= TOLERANCE


def test_control_flow_on_a_value_is_a_guard():
    def fn(x):
        return x * 2 if (x > 0).all() else x
    tape = record(ROOT, fn, dict(x=np.array([1.0, 2.0])))
    assert replay(tape, dict(x=[3.0, 4.0]))[0].tolist() == [6.0, 8.0]
    with pytest.raises(TapeError, match="branch"):
        replay(tape, dict(x=[-1.0, 4.0]))


def test_a_value_that_leaves_the_trace_is_refused():
    with pytest.raises(TapeError, match="leaves the tape"):
        record(ROOT, lambda x: x * float(x[0]), dict(x=np.array([1.0, 2.0])))
    with pytest.raises(TapeError, match="not an operation the tape knows"):
        record(ROOT, lambda x: np.sort(x), dict(x=np.array([2.0, 1.0])))


def test_an_untraced_array_changed_in_place_is_read_as_it_is_then():
    def fn(s):
        a = np.ones(3)
        b = a * s
        a -= 1.0                       # untraced, in place: the next read is of zeros
        return b + a * s
    tape = record(ROOT, fn, dict(s=np.float64(2.0)))
    assert check(tape, dict(s=5.0), fn) == 0.0


def test_a_stale_tape_is_caught():
    """A tape recorded before a change of the computation no longer equals the real call."""
    from model import ops
    fn = lambda X: ops.layer_norm_forward(X.copy(), np.ones(4), np.zeros(4), 1e-5)[0]
    X = np.random.default_rng(SEED).standard_normal((2, 4))
    tape = record(ROOT, fn, dict(X=X))
    changed = lambda X: ops.layer_norm_forward(X.copy(), np.ones(4), np.zeros(4), 1e-1)[0]
    with pytest.raises(TapeError, match="differs from the real call"):
        check(tape, dict(X=X), changed)


# ------------------------------------------------------------------ the built tapes, in Node

@needs_node
def test_the_attention_tape_replayed_in_node_equals_numpy(built_site):
    from content.examples.attention import chosen_heatmap, heatmap_numbers
    from content.hooks import trained_run
    from model.data import CharTokenizer
    run = trained_run()
    cfg = run.model_cfg
    encode = CharTokenizer(run.chars).encode
    rng = np.random.default_rng(SEED)
    prompts = random_prompts(run.chars, rng, 12, cfg.seq_len + 4) + ["a", "To be, or not to be"]
    runs = [dict(case=str(min(len(p), cfg.seq_len)), inputs=dict(ids=encode(p[:cfg.seq_len]).tolist()),
                 args=dict(prompt=p, layer=int(rng.integers(cfg.num_layers)), head=int(rng.integers(cfg.num_heads))))
            for p in prompts]
    answers = node_replay(built_site / "play" / "attention-lm--ex-2" / "tape.js", runs)
    worst = 0.0
    for r, a in zip(runs, answers):
        numbers = heatmap_numbers(np.array(r["inputs"]["ids"]), run.params, cfg)
        want = numbers["A"] + numbers["gap"] + [numbers["hidden"]]
        worst = max([worst] + [relative_gap(g, w) for g, w in zip(a["raw"], want)])
        block = chosen_heatmap(**r["args"]).blocks[0]
        assert a["slots"]["svg"] == block["svg"], f"the replayed heatmap is drawn as the build draws it ({r['args']})"
        # The caption's "largest gap" of a row sum from 1 is rounding error (about 1e-16), whose
        # digits depend on the order of the additions (BLAS in NumPy, one by one here): equal words,
        # and both gaps at the rounding level.
        gap = re.compile(r"largest gap (\S+)\)")
        assert gap.sub("", a["slots"]["caption"]) == gap.sub("", block["caption"])
        assert all(float(gap.search(c).group(1)) < 1e-14 for c in (a["slots"]["caption"], block["caption"]))
    print(f"largest relative difference from NumPy: {worst:.2e}")
    assert worst <= TOLERANCE


SLOT = re.compile(r"@@([^@]+)@@")


def filled(text, slots):
    return SLOT.sub(lambda m: slots[m.group(1)], text)


@needs_node
def test_the_layernorm_tape_replayed_in_node_equals_numpy(built_site):
    from content.examples.layernorm import eps_numbers, eps_replay, with_eps
    from site_builder.run.tape import _leaves
    rng = np.random.default_rng(SEED)
    values = [0.0, 100.0, 1e-5, 1e-12] + list(rng.uniform(0, 100, 6)) + list(10.0 ** rng.uniform(-8, 1, 6))
    answers = node_replay(built_site / "play" / "layernorm-forward--ex-4" / "tape.js",
                          [dict(case="", inputs=dict(eps=[e]), args=dict(eps=e)) for e in values])
    template = eps_replay().blocks[0]
    worst = 0.0
    for e, a in zip(values, answers):
        worst = max([worst] + [relative_gap(g, w) for g, w in zip(a["raw"], _leaves(eps_numbers(e)))])
        want = with_eps(e).blocks[0]
        assert [[filled(c, a["slots"]) for c in row] for row in template["rows"]] == want["rows"], e
        assert filled(template["caption"], a["slots"]) == want["caption"]
    print(f"largest relative difference from NumPy: {worst:.2e}")
    assert worst <= TOLERANCE


def test_a_tape_is_recorded_again_when_the_model_or_the_recorder_changes(built_site):
    """The replay examples' cached results are keyed on what they read: the package's code
    (whole files, or the functions the recording entered in them: an edit of what it ran
    records the tape again) and the recorder's file."""
    from site_builder.base.cache import BuildCache
    from site_builder.run.example_runner import ExampleStore
    store = ExampleStore(ROOT, BuildCache(ROOT / ".build_cache"))
    for ref in ("attention:heatmap_replay", "layernorm:eps_replay"):
        assert store.lookup(ref), f"the session's build cached {ref}"
        used = store.used[ref]
        read = {f for f, _ in used.files} | {rel for rel, paths, _ in used.functions if paths}
        assert {"model/ops.py", "site_builder/run/tape.py"} <= read, (ref, read)
        assert "model/attention.py" in read or ref != "attention:heatmap_replay", read
