"""The tapes of the playable examples (site_builder/run/tape.py): the recorder, and each built
tape replayed by the shipped JavaScript replayer (under Node) on random valid inputs (a fixed
seed), equal to NumPy's real call to 1e-12 relative, and drawn as the build draws its own
results (the same SVG and caption, byte for byte). The replayer is the shipped, minified one."""
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
    """The harness's answers for runs [{case, inputs, args}], the raw outputs as arrays. The
    replayer is the build's shipped (minified) copy beside the tape, as a reader's browser loads it."""
    shipped = tape_file.parents[2] / "static" / "js"
    p = subprocess.run([NODE, str(ROOT / "tests" / "replay_harness.js"), str(shipped), str(tape_file)],
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
    # 5e-324: the constant row's s is 4.5e161, to be printed as NumPy's run prints it
    values = [0.0, 100.0, 1e-5, 1e-12, 5e-324] + list(rng.uniform(0, 100, 6)) + list(10.0 ** rng.uniform(-8, 1, 6))
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


@needs_node
def test_the_generation_tape_replayed_in_node_equals_numpy(built_site):
    """Random prompts and temperatures within the declaration: the replayed distribution and
    entropy equal next_distribution's to 1e-12, and the page's words (the likeliest characters,
    the draw, generate's 80 characters with the seed's uniforms) are at_temperature's own."""
    from content.examples.generation import LENGTH, TEMPERATURE_CAPTION, at_temperature, next_distribution
    from content.hooks import trained_run
    from model.data import CharTokenizer
    run = trained_run()
    cfg = run.model_cfg
    encode = CharTokenizer(run.chars).encode
    rng = np.random.default_rng(SEED)
    prompts = random_prompts(run.chars, rng, 8, 40) + ["a", "   "]
    temperatures = list(rng.uniform(0.05, 5, len(prompts) - 2)) + [0.05, 5.0]
    runs = [dict(case=str(min(len(p), cfg.seq_len)), inputs=dict(ids=encode(p)[-cfg.seq_len:].tolist(), temperature=[t]),
                 args=dict(prompt=p, temperature=t)) for p, t in zip(prompts, temperatures)]
    answers = node_replay(built_site / "play" / "generation-sample--ex-2" / "tape.js", runs)
    worst = 0.0
    for r, a in zip(runs, answers):
        want = next_distribution(np.array(r["inputs"]["ids"]), r["args"]["temperature"], run.params, cfg)
        worst = max([worst] + [relative_gap(g, w) for g, w in zip(a["raw"], [want["p"], want["entropy"]])])
        table, sample = at_temperature(**r["args"]).blocks
        slots = a["slots"]
        shown = [[str(i + 1), slots[f"char:{i}"], slots[f"p:{i}"]] for i in range(8)]
        assert shown == [[str(c) for c in row] for row in table["rows"][:8]], r["args"]
        assert [slots["rest"], slots["entropy"], slots["drawn"]] == [row[2] for row in table["rows"][8:]], r["args"]
        assert TEMPERATURE_CAPTION.format(prompt=slots["window"], seen=slots["seen"]) == table["caption"]
        assert [slots["prompt"], slots["continuation"]] == sample["rows"][0], \
            f"the declared loop and draws give generate's {LENGTH} characters ({r['args']})"
    print(f"largest relative difference from NumPy: {worst:.2e}")
    assert worst <= TOLERANCE


def test_the_declared_draw_is_numpys_choice():
    """choice_step(p, u) with u = rng.random() draws what rng.choice(len(p), p=p) draws."""
    from site_builder.run.tape import choice_step
    rng = np.random.default_rng(SEED)
    for k in range(200):
        p = rng.random(84) ** 6
        p /= p.sum()
        real, mine = np.random.default_rng(k), np.random.default_rng(k)
        assert [int(real.choice(84, p=p)) for _ in range(4)] == [choice_step(p, mine.random()) for _ in range(4)]


def stepper_numbers(steps):
    return [[s["after"], s["before"]] + [t["row"] for t in s.get("terms") or []] for s in steps]


@needs_node
def test_the_block_tape_replayed_in_node_equals_numpy(built_site):
    """Random typed rows for each row and layer of the menus: the stepper's numbers equal
    NumPy's real call to 1e-12, and the replayed stepper reads as block_forward_steps's own."""
    from content.examples.block import SEED as MODEL_SEED, TINY2, _Numbers, block_forward_steps, block_replay, block_stepper
    from model.transformer import init_params
    params = init_params(TINY2, np.random.default_rng(MODEL_SEED))
    rng = np.random.default_rng(SEED)
    runs = []
    for row in (0, 1, 2):
        for layer in (0, 1):
            for values in (rng.uniform(-10, 10, 4), np.array([-10.0, 10.0, 0.0, 1e-9])):
                runs.append(dict(case=f"layer-{layer}_row-{row}", inputs=dict(values=values.tolist()),
                                 args=dict(row=row, layer=layer, values=values.tolist())))
    answers = node_replay(built_site / "play" / "block-forward--ex-1" / "tape.js", runs)
    bodies = block_replay().data["bodies"]
    worst = 0.0
    for r, a in zip(runs, answers):
        kept = _Numbers()
        block_stepper(params, r["args"]["row"], r["args"]["layer"], np.array(r["args"]["values"]), kept)
        worst = max([worst] + [relative_gap(g, w) for g, w in zip(a["raw"], kept.kept)])
        template = bodies[r["case"]][0]["steps"]
        fill = lambda cells: None if cells is None else [filled(c, a["slots"]) for c in cells]
        got = [[fill(c) for c in step] for step in stepper_numbers(template)]
        assert got == stepper_numbers(block_forward_steps(**r["args"]).blocks[0]["steps"]), r["args"]
    print(f"largest relative difference from NumPy: {worst:.2e}")
    assert worst <= TOLERANCE


def test_a_tape_is_recorded_again_when_the_model_or_the_recorder_changes(built_site):
    """The replay examples' cached results are keyed on what they read: the package's code
    (whole files, or the functions the recording entered in them: an edit of what it ran
    records the tape again) and the recorder's file."""
    from site_builder.base.cache import BuildCache
    from site_builder.run.example_runner import ExampleStore
    store = ExampleStore(ROOT, BuildCache(ROOT / ".build_cache"))
    needs = {"attention:heatmap_replay": "model/attention.py", "layernorm:eps_replay": "model/ops.py",
             "generation:temperature_replay": "model/generate.py", "block:block_replay": "model/transformer.py"}
    for ref, model_file in needs.items():
        assert store.lookup(ref), f"the session's build cached {ref}"
        used = store.used[ref]
        read = {f for f, _ in used.files} | {rel for rel, paths, _ in used.functions if paths}
        assert {"model/ops.py", model_file, "site_builder/run/tape.py"} <= read, (ref, read)


def test_an_edit_of_the_sampling_code_invalidates_the_generation_tape(built_site):
    """Through the cache key: the generation tape's stored inputs are valid for the tree as it
    is, and not once model/generate.py's sample_next computes otherwise (the edit is made in the
    key's view of the file only), so the build records the tape again."""
    import hashlib
    from site_builder.base.cache import BuildCache
    from site_builder.gather.inputs import InputState
    from site_builder.run.example_runner import ExampleStore
    store = ExampleStore(ROOT, BuildCache(ROOT / ".build_cache"))
    ref = "generation:temperature_replay"
    assert store.lookup(ref), f"the session's build cached {ref}"
    used = store.used[ref]
    assert used.valid(InputState(ROOT))
    rel = "model/generate.py"
    source = (ROOT / rel).read_bytes()
    edited = source.replace(b"z = logits / temperature", b"z = logits / (2 * temperature)")
    assert edited != source
    changed = InputState(ROOT)
    changed.files[rel], changed.sources[rel] = hashlib.sha256(edited).hexdigest(), edited
    assert not used.valid(changed), "an edit of what the recording ran must record the tape again"
