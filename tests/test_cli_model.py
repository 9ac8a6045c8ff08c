"""The three command lines of model/ fail in one line each: status 2 for bad input (a checkpoint
that disagrees with its own metadata included), 1 for a diverged run, 130 for Ctrl-C, and never a
traceback. Runs are tiny; every child is a real `python3 -m` process."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import model.train as mt
from model import ModelInputError
from model.config import ModelConfig, TrainConfig
from model.data import CharTokenizer
from model.optim import AdamW
from model.train import load_checkpoint, save_checkpoint
from model.transformer import init_params

REPO = Path(__file__).resolve().parent.parent
TEXT = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
        "The slings and arrows of outrageous fortune,\nOr to take arms against a sea of troubles\n") * 12
TOK = CharTokenizer(TEXT)
CFG = ModelConfig(vocab_size=TOK.vocab_size, seq_len=8, emb_dim=8, num_heads=2, ff_dim=16, num_layers=2)
ENV = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"}
INCONSISTENT = "(the checkpoint is inconsistent; retrain or restore it)"


def run(module, *args, timeout=60):
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, capture_output=True,
                          timeout=timeout, env=ENV)


def message_lines(stderr: bytes) -> list:
    """stderr without tqdm's progress bar (its states are separated by carriage returns)."""
    lines = re.split(r"[\r\n]+", stderr.decode("utf-8", "backslashreplace"))
    return [line for line in lines if line.strip() and not re.search(r"\d+/\d+ \[", line)]


def assert_one_line(r, status, *fragments):
    lines = message_lines(r.stderr)
    assert r.returncode == status, r.stderr.decode()
    assert len(lines) == 1, lines
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- 1: nothing is destroyed

def test_a_second_diverging_run_cannot_destroy_the_first_runs_checkpoint(tmp_path, corpus):
    """The issue's case: a run, then one with --lr 1e308 into the same folder."""
    out = tmp_path / "run"
    first = run("model.train", "--steps", "4", "--batch-size", "2", "--corpus", str(corpus), "--out", str(out))
    assert first.returncode == 0, first.stderr.decode()
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    again = run("model.train", "--steps", "4", "--corpus", str(corpus), "--out", str(out), "--lr", "1e308")
    assert_one_line(again, 2, f"error: {out} already holds a run", "--resume", "--overwrite")

    overwrite = run("model.train", "--steps", "4", "--corpus", str(corpus), "--out", str(out), "--lr", "1e308",
                    "--overwrite")
    assert_one_line(overwrite, 1, "error: loss is nan at step", "this run wrote no checkpoint",
                    f"the earlier run's {out / 'checkpoint.npz'} is untouched")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert load_checkpoint(out / "checkpoint.npz")["step"] == 4


def test_resume_and_overwrite_together(tmp_path, corpus):
    r = run("model.train", "--resume", "--overwrite", "--corpus", str(corpus), "--out", str(tmp_path / "run"))
    assert_one_line(r, 2, "error: --resume continues the run in", "pass only one")


# ----------------------------------------------------------------------------- 2: one line, exit 2 or 130

@pytest.mark.skipif(mt._free_memory() is None, reason="this system does not say how much memory is free")
def test_a_batch_size_that_cannot_fit_is_one_line(tmp_path, corpus):
    r = run("model.train", "--batch-size", "100000000", "--corpus", str(corpus), "--out", str(tmp_path / "run"))
    assert_one_line(r, 2, "error: --batch-size 100000000 needs about", "use --batch-size")


def test_memory_error_during_training_is_one_line(tmp_path, corpus, monkeypatch, capsys):
    """Whatever the estimate misses: NumPy's MemoryError becomes a line naming the option."""
    def out_of_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 12.7 GiB for an array with shape (100000000, 17)")

    monkeypatch.setattr(mt, "train", out_of_memory)
    with pytest.raises(SystemExit) as e:
        mt.main(["--batch-size", "4096", "--corpus", str(corpus), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1
    assert err.startswith("error: out of memory at --batch-size 4096 (Unable to allocate 12.7 GiB")
    assert "use a smaller --batch-size" in err


def test_a_prompt_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "checkpoint.npz"
    write_checkpoint(path)
    r = run("model.generate", "--checkpoint", str(path), "--prompt", b"To\xff", "--steps", "3")
    assert_one_line(r, 2, "error: --prompt is not valid UTF-8: byte 0xff at character 2")
    assert r.stdout == b""


@pytest.mark.parametrize("args, message", [
    (["--steps", "0"], "error: --steps must be an integer >= 1, got 0"),
    (["--batch-size", "0"], "error: --batch-size must be an integer >= 1, got 0"),
    (["--warmup", "0"], "error: --warmup must be an integer >= 1, got 0"),
    (["--lr-factor", "nan"], "error: --lr-factor must be a positive number, got nan"),
    pytest.param(["--batch-size", "100000000"], "error: --batch-size 100000000 needs about",
                 marks=pytest.mark.skipif(mt._free_memory() is None, reason="no free-memory figure")),
    (["--steps", "many"], "error: argument --steps: invalid int value: 'many' (see --help)"),
])
def test_seq2seq_cli_errors_are_one_line(tmp_path, args, message):
    r = run("model.train_seq2seq", "--out", str(tmp_path / "run"), *args)
    assert_one_line(r, 2, message)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_a_learning_rate_that_is_no_positive_number_is_named_as_the_option(tmp_path, value):
    """It said `TrainConfig.lr must be a positive number`: a name the command line does not have."""
    r = run("model.train", "--out", str(tmp_path / "run"), "--steps", "1", "--lr", value)
    assert_one_line(r, 2, f"error: argument --lr: must be a positive number, got '{value}' (see --help)")
    assert not (tmp_path / "run").exists()


def wait_for(condition, child, what, timeout=300):
    deadline = time.monotonic() + timeout
    while not condition():
        if child.poll() is not None:
            pytest.fail(f"the child ended (status {child.returncode}) before {what}: {child.stderr.read()!r}")
        if time.monotonic() > deadline:
            child.kill()
            pytest.fail(f"no {what} after {timeout} s")
        time.sleep(0.05)


def interrupt(child):
    child.send_signal(signal.SIGINT)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        pytest.fail("Ctrl-C did not end the child within 60 s")
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def spawn(module, *args):
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_ctrl_c_during_training_exits_130_and_keeps_the_checkpoint(tmp_path, corpus):
    out = tmp_path / "run"
    child = spawn("model.train", "--steps", "100000", "--batch-size", "2", "--corpus", str(corpus), "--out", str(out))
    wait_for((out / "checkpoint.npz").exists, child, "first checkpoint")
    r = interrupt(child)
    line = assert_one_line(r, 130, "interrupted; the last checkpoint", "is intact; continue it with --resume")
    ckpt = load_checkpoint(out / "checkpoint.npz")
    assert ckpt["step"] % 100 == 0 and f"at step {ckpt['step']} " in line
    assert sorted(os.listdir(out)) == ["checkpoint.npz", "metrics.jsonl"]     # no temp file, no pending metrics
    steps = [json.loads(row)["step"] for row in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps[-1] >= ckpt["step"]


def cpu_seconds(pid):
    """User plus system CPU time of a process, from /proc (fields 14 and 15, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see the child working")
def test_ctrl_c_during_generation_exits_130(tmp_path):
    path = tmp_path / "checkpoint.npz"
    write_checkpoint(path)
    child = spawn("model.generate", "--checkpoint", str(path), "--prompt", "To be", "--steps", "100000000")
    # A second of CPU is far past the imports (0.2 s): Ctrl-C lands in the generation loop.
    wait_for(lambda: cpu_seconds(child.pid) > 1.0, child, "a second of generating")
    r = interrupt(child)
    assert_one_line(r, 130, "interrupted; nothing was printed")
    assert r.stdout == b""


def test_ctrl_c_during_seq2seq_training_exits_130(tmp_path):
    out = tmp_path / "run"
    child = spawn("model.train_seq2seq", "--steps", "100000", "--batch-size", "4", "--out", str(out))
    wait_for((out / "checkpoint.npz").exists, child, "first checkpoint")
    r = interrupt(child)
    assert_one_line(r, 130, f"interrupted; the last checkpoint {out / 'checkpoint.npz'} at step",
                    "is intact; continue it with --resume")
    assert sorted(os.listdir(out)) == ["checkpoint.npz", "config.json", "metrics.jsonl"]


@pytest.mark.parametrize("module", ["model.train", "model.train_seq2seq"])
def test_sigterm_during_training_exits_143_and_keeps_the_checkpoint(tmp_path, corpus, module):
    out = tmp_path / "run"
    data = ["--corpus", str(corpus)] if module == "model.train" else []
    child = spawn(module, "--steps", "100000", "--batch-size", "2", *data, "--out", str(out))
    wait_for((out / "checkpoint.npz").exists, child, "first checkpoint")
    child.send_signal(signal.SIGTERM)
    r = subprocess.CompletedProcess(child.args, None, *child.communicate(timeout=60))
    r.returncode = child.returncode
    assert_one_line(r, 143, f"terminated (SIGTERM); the last checkpoint {out / 'checkpoint.npz'} at step",
                    "is intact; continue it with --resume")
    step = json.loads(str(np.load(out / "checkpoint.npz")["meta"]))["step"]
    assert step > 0 and not [p for p in os.listdir(out) if p.endswith((".tmp", ".pending"))]


# ----------------------------------------------------------------------------- divergence, bad paths

def strict_lines(path):
    """Every line of a metrics file, parsed by a JSON parser that refuses NaN and Infinity."""
    def refuse(token):
        raise ValueError(f"{token} is not JSON")
    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]


def test_an_exploding_loss_is_divergence_not_a_checkpoint(tmp_path):
    """The issue's case: --lr 1e6 reached a validation loss of 4e16, exit 0, and saved it."""
    out = tmp_path / "run"
    r = run("model.train", "--steps", "3", "--lr", "1e6", "--out", str(out))
    line = assert_one_line(r, 1, "error: loss is", "above 10 x log(vocabulary 84)", "at step 2; no checkpoint")
    assert "--lr" in line
    assert os.listdir(out) == []                     # no checkpoint, no pending metrics


def test_an_overwrite_that_explodes_keeps_the_earlier_checkpoint(tmp_path, corpus):
    out = tmp_path / "run"
    first = run("model.train", "--steps", "100", "--batch-size", "2", "--corpus", str(corpus), "--out", str(out))
    assert first.returncode == 0, first.stderr.decode()
    before = (out / "checkpoint.npz").read_bytes()
    r = run("model.train", "--steps", "3", "--lr", "1e6", "--batch-size", "2", "--corpus", str(corpus),
            "--out", str(out), "--overwrite")
    assert_one_line(r, 1, "error:", "this run wrote no checkpoint; the earlier run's")
    assert (out / "checkpoint.npz").read_bytes() == before
    strict_lines(out / "metrics.jsonl")


def test_metrics_lines_are_strict_json(tmp_path, corpus):
    out = tmp_path / "run"
    r = run("model.train", "--steps", "4", "--batch-size", "2", "--corpus", str(corpus), "--out", str(out))
    assert r.returncode == 0, r.stderr.decode()
    assert [row["step"] for row in strict_lines(out / "metrics.jsonl")] == [1, 4]


def test_the_checkpoint_gets_the_mode_of_the_other_files(tmp_path, corpus):
    out = tmp_path / "run"
    r = run("model.train", "--steps", "2", "--batch-size", "2", "--corpus", str(corpus), "--out", str(out))
    assert r.returncode == 0, r.stderr.decode()
    mode = lambda name: (out / name).stat().st_mode & 0o777          # noqa: E731
    assert mode("checkpoint.npz") == mode("metrics.jsonl")


@pytest.mark.parametrize("module", ["model.train", "model.train_seq2seq"])
def test_out_that_is_a_file_is_one_line(tmp_path, corpus, module):
    taken = tmp_path / "taken"
    taken.write_text("x")
    data = ["--corpus", str(corpus)] if module == "model.train" else []
    r = run(module, "--steps", "2", *data, "--out", str(taken))
    assert_one_line(r, 2, f"error: --out {taken} is a file, not a folder")


def test_a_corpus_that_is_not_a_regular_file_is_said_so(tmp_path):
    r = run("model.train", "--steps", "2", "--corpus", "/dev/null", "--out", str(tmp_path / "run"))
    line = assert_one_line(r, 2, "error: corpus /dev/null is not a regular file")
    assert "does not exist" not in line


def test_a_corrupted_checkpoint_is_said_to_be_damaged(good_checkpoint, tmp_path):
    bad = tmp_path / "checkpoint.npz"
    data = bytearray(good_checkpoint.read_bytes())
    data[len(data) // 2] ^= 0xFF                     # inside an array's bytes: the zip's CRC no longer matches
    bad.write_bytes(bytes(data))
    r = run("model.generate", "--checkpoint", str(bad), "--prompt", "To be", "--steps", "3")
    line = assert_one_line(r, 2, f"error: {bad} is damaged", "CRC")
    assert "not a NumPy .npz archive" not in line


# ----------------------------------------------------------------------------- 3: inconsistent checkpoints

def write_checkpoint(path, params=None, cfg=CFG):
    params = params or init_params(cfg, np.random.default_rng(0))
    save_checkpoint(path, params=params, opt=AdamW(params), rng=np.random.default_rng(0), step=0,
                    model_cfg=cfg, train_cfg=TrainConfig(), tokenizer=TOK)


def rewrite(src, dst, edit_meta=None, edit_arrays=None):
    """A copy of the checkpoint src with its metadata or arrays edited, written with np.savez: the
    zip is sound, only what it says is wrong."""
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    if edit_meta:
        edit_meta(meta)
    if edit_arrays:
        edit_arrays(arrays)
    np.savez(dst, meta=np.array(json.dumps(meta)), **arrays)


def set_config(**fields):
    return lambda meta: meta["model_config"].update(fields)


def drop(*names):
    def edit(arrays):
        for name in names:
            del arrays[name]
    return edit


def replace(name, make):
    def edit(arrays):
        arrays[name] = make(arrays[name])
    return edit


def with_nan(a):
    a = a.copy()
    a.flat[3] = np.nan
    return a


def short_tokenizer(meta):
    meta["tokenizer"]["chars"] = meta["tokenizer"]["chars"][:-5]


V = TOK.vocab_size
CASES = {
    "three layers in the metadata over two": (
        set_config(num_layers=3), None,
        "the metadata says num_layers=3 but the file has no b2.* parameters"),
    "one layer in the metadata over two": (
        set_config(num_layers=1), None,
        "b1.* is in the file but the metadata says num_layers=1"),
    "a wrong shape": (
        None, replace("param/b0.wq", lambda a: a[:, :7]),
        "b0.wq has shape (8, 7) but the metadata's config makes it (8, 8)"),
    "a missing parameter": (
        None, drop("param/b1.ff2_b", "adam_m/b1.ff2_b", "adam_v/b1.ff2_b"),
        "b1.ff2_b is missing from the file but the metadata's config has it"),
    "NaN weights": (
        None, replace("param/head_w", with_nan),
        f"head_w holds 1 NaN or infinite value(s) of {8 * V}"),
    "emb_dim 64 in the metadata": (
        set_config(emb_dim=64), None,
        f"tok_emb has shape ({V}, 8), so emb_dim=8, but the metadata says emb_dim=64"),
    "a tokenizer 5 characters short": (
        short_tokenizer, None,
        f"the tokenizer has {V - 5} characters but the metadata says vocab_size={V}"),
    "float32 weights under float64": (
        None, replace("param/b0.ff1_w", lambda a: a.astype(np.float32)),
        "b0.ff1_w is float32 but the metadata says dtype=float64"),
    "a moment of the wrong shape": (
        None, replace("adam_v/lnf_g", lambda a: a[:4]),
        "adam_v/lnf_g has shape (4,) but lnf_g has (8,)"),
}


@pytest.fixture(scope="module")
def good_checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("good") / "checkpoint.npz"
    write_checkpoint(path)
    return path


@pytest.mark.parametrize("case", CASES)
def test_an_inconsistent_checkpoint_is_one_line_per_disagreement(good_checkpoint, tmp_path, case):
    edit_meta, edit_arrays, message = CASES[case]
    bad = tmp_path / "checkpoint.npz"
    rewrite(good_checkpoint, bad, edit_meta, edit_arrays)
    with pytest.raises(ModelInputError) as e:
        load_checkpoint(bad)
    assert f"{bad}: {message} {INCONSISTENT}" in str(e.value).splitlines()

    r = run("model.generate", "--checkpoint", str(bad), "--prompt", "To be", "--steps", "3")
    lines = message_lines(r.stderr)
    assert r.returncode == 2 and r.stdout == b""
    assert f"error: {bad}: {message} {INCONSISTENT}" in lines, lines
    assert all(line.startswith("error: ") and line.endswith(INCONSISTENT) for line in lines), lines
    # One disagreement, one line; a wrong shape also disagrees with AdamW's two moments of it.
    assert len(lines) == (3 if case == "a wrong shape" else 1), lines


def test_the_good_checkpoint_loads(good_checkpoint):
    assert load_checkpoint(good_checkpoint)["model_cfg"] == CFG


def test_a_run_folder_is_read_as_its_checkpoint(good_checkpoint):
    assert load_checkpoint(good_checkpoint.parent)["model_cfg"] == CFG


@pytest.mark.parametrize("given, run_dir", [("runs/x/", "runs/x"), ("runs/x/checkpoint.npz", "runs/x"),
                                            ("runs/x.npz", "runs/x")])
def test_a_missing_checkpoint_names_the_train_command_that_writes_it(tmp_path, given, run_dir):
    with pytest.raises(ModelInputError) as e:
        load_checkpoint(tmp_path / given)
    # The advice is a command that writes a file load_checkpoint would then read.
    advised = Path(re.search(r"--out (\S+)`", str(e.value)).group(1))
    assert advised == tmp_path / run_dir
    assert str(advised / mt.CHECKPOINT) in str(e.value)


def test_many_disagreements_are_capped_with_a_count(good_checkpoint, tmp_path):
    bad = tmp_path / "checkpoint.npz"
    nan_everywhere = lambda arrays: arrays.update({k: a * np.nan for k, a in arrays.items()})  # noqa: E731
    rewrite(good_checkpoint, bad, edit_arrays=nan_everywhere)
    with pytest.raises(ModelInputError) as e:
        load_checkpoint(bad)
    lines = str(e.value).splitlines()
    assert len(lines) == mt._MAX_SHOWN + 1
    assert re.fullmatch(rf"{re.escape(str(bad))}: and \d+ more disagreements {re.escape(INCONSISTENT)}", lines[-1])


def test_resume_from_an_inconsistent_checkpoint_is_refused(tmp_path, corpus):
    out = tmp_path / "run"
    out.mkdir()
    write_checkpoint(out / "good.npz")
    rewrite(out / "good.npz", out / "checkpoint.npz", set_config(num_layers=1))
    (out / "good.npz").unlink()
    r = run("model.train", "--resume", "--steps", "8", "--corpus", str(corpus), "--out", str(out))
    assert r.returncode == 2, r.stderr.decode()
    assert message_lines(r.stderr) == [f"error: {out / 'checkpoint.npz'}: b1.* is in the file but the "
                                       f"metadata says num_layers=1 {INCONSISTENT}"]
