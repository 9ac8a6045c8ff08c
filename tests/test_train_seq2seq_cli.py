"""model.train_seq2seq's run folder: refused unless --resume (bit for bit) or --overwrite (at the new
run's first checkpoint), a diverged run stopped with one line and exit 1, metrics.jsonl strict JSON.
Runs are a few steps of the real task."""
import hashlib
import json
import os

import numpy as np
import pytest

import model.train_seq2seq as task
from model import ModelInputError
from model.runs import TrainingDiverged
from tests.test_cli_model import assert_one_line, run

TINY = dict(steps=8, seed=0, batch_size=4, warmup=4, eval_every=4, num_eval=5, log_every=2,
            checkpoint_every=4, progress=False)


def digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def strict_records(path):
    """Every line of a metrics file, parsed by a JSON parser that refuses NaN and Infinity."""
    def refuse(token):
        raise ValueError(f"{token} is not JSON")
    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]


def without_clock(records):
    return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in records]


def test_a_second_run_into_the_folder_is_refused_and_keeps_the_first(tmp_path):
    out = tmp_path / "run"
    first = run("model.train_seq2seq", "--steps", "3", "--batch-size", "4", "--out", str(out))
    assert first.returncode == 0, first.stderr.decode()
    before = digests(out)
    again = run("model.train_seq2seq", "--steps", "3", "--batch-size", "4", "--out", str(out))
    assert_one_line(again, 2, f"error: {out} already holds a run", "--resume", "--overwrite")
    assert digests(out) == before


def test_resume_is_bit_exact(tmp_path, monkeypatch):
    whole = task.train(out=tmp_path / "whole", **TINY)
    real, calls = task.loss_and_grads, []

    def interrupted(*args, **kw):
        calls.append(1)
        if len(calls) == 7:                          # after the checkpoint of step 4
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(task, "loss_and_grads", interrupted)
    with pytest.raises(KeyboardInterrupt):
        task.train(out=tmp_path / "split", **TINY)
    monkeypatch.setattr(task, "loss_and_grads", real)
    resumed = task.train(out=tmp_path / "split", resume=True, **TINY)

    for name in whole["params"]:
        assert np.array_equal(whole["params"][name], resumed["params"][name]), name
    a, b = (np.load(tmp_path / run / "checkpoint.npz") for run in ("whole", "split"))
    assert sorted(a.files) == sorted(b.files)
    for key in a.files:
        if key != "meta":                            # the metadata differs in elapsed_s only
            assert np.array_equal(a[key], b[key]), key
    meta_a, meta_b = (json.loads(str(z["meta"])) for z in (a, b))
    assert {**meta_a, "elapsed_s": 0} == {**meta_b, "elapsed_s": 0} and meta_a["step"] == 8
    assert without_clock(strict_records(tmp_path / "whole" / "metrics.jsonl")) == \
        without_clock(strict_records(tmp_path / "split" / "metrics.jsonl"))
    assert {k: v for k, v in whole.items() if k not in ("wall_s", "params")} == \
        {k: v for k, v in resumed.items() if k not in ("wall_s", "params")}


def test_resume_with_another_setting_names_both_values(tmp_path):
    task.train(out=tmp_path / "run", **TINY)
    with pytest.raises(ModelInputError, match=r"has lr_factor = 0.5 but this run asks for 0.25"):
        task.train(out=tmp_path / "run", resume=True, **{**TINY, "steps": 12}, lr_factor=0.25)


def test_overwrite_keeps_the_old_run_until_the_first_checkpoint(tmp_path, monkeypatch):
    out = tmp_path / "run"
    task.train(out=out, **TINY)
    old = digests(out)
    real, seen = task.loss_and_grads, []

    def watching(*args, **kw):
        seen.append({name: d for name, d in digests(out).items() if name in old})
        return real(*args, **kw)

    monkeypatch.setattr(task, "loss_and_grads", watching)
    task.train(out=out, overwrite=True, **{**TINY, "seed": 1})
    assert seen[:4] == [old] * 4 and seen[4] != old
    assert json.loads((out / "config.json").read_text())["seed"] == 1
    assert sorted(os.listdir(out)) == ["checkpoint.npz", "config.json", "metrics.jsonl"]


def test_divergence_exits_1_and_writes_no_nan(tmp_path):
    """The issue's case: --lr-factor 1e200 printed `done: ... loss nan`, exit 0, and NaN arrays."""
    out = tmp_path / "run"
    r = run("model.train_seq2seq", "--steps", "5", "--lr-factor", "1e200", "--out", str(out))
    assert_one_line(r, 1, "error: loss is nan at step 2; no checkpoint had been written yet", "--lr-factor")
    assert os.listdir(out) == []                     # nothing half-written, no .pending files


def test_an_overwrite_that_diverges_keeps_the_old_run(tmp_path):
    out = tmp_path / "run"
    task.train(out=out, **TINY)
    before = digests(out)
    with pytest.raises(TrainingDiverged, match=r"at step 2; this run wrote no checkpoint; the earlier run's"), \
            np.errstate(over="ignore", invalid="ignore"):
        task.train(out=out, overwrite=True, **{**TINY, "lr_factor": 1e200})
    assert digests(out) == before
    strict_records(out / "metrics.jsonl")


def test_an_exploding_finite_loss_is_divergence(tmp_path, monkeypatch):
    """Not only NaN: a loss above 10 x log V stops the run before its checkpoint."""
    real, calls = task.loss_and_grads, []

    def exploding(*args, **kw):
        calls.append(1)
        loss, grads = real(*args, **kw)
        return (1e6 if len(calls) == 6 else loss), grads

    monkeypatch.setattr(task, "loss_and_grads", exploding)
    with pytest.raises(TrainingDiverged, match=r"loss is 1e\+06, above 10 x log\(vocabulary 13\) = 25.65 at "
                                               r"step 6; the last good checkpoint .* is untouched"):
        task.train(out=tmp_path / "run", **TINY)
    assert json.loads(str(np.load(tmp_path / "run" / "checkpoint.npz")["meta"]))["step"] == 4
    assert [r["step"] for r in strict_records(tmp_path / "run" / "metrics.jsonl")][-1] == 4


def test_out_that_is_a_file_is_one_line(tmp_path):
    path = tmp_path / "taken"
    path.write_text("x")
    r = run("model.train_seq2seq", "--steps", "2", "--out", str(path))
    assert_one_line(r, 2, f"error: --out {path} is a file, not a folder")


def test_generate_says_what_a_seq2seq_run_is(tmp_path):
    out = tmp_path / "run"
    task.train(out=out, **{**TINY, "steps": 2})
    old_style = tmp_path / "old" / "params.npz"       # what model.train_seq2seq wrote before checkpoints
    old_style.parent.mkdir()
    np.savez(old_style, **task.train(out=None, **{**TINY, "steps": 1})["params"])
    for given in (out, out / "checkpoint.npz", old_style, old_style.parent):
        r = run("model.generate", "--checkpoint", str(given), "--prompt", "ab", "--steps", "2")
        line = assert_one_line(r, 2, "holds a model.train_seq2seq run", "model.generate cannot sample from",
                               "python3 -m model.train --out DIR")
        assert "KeyError" not in line and "no checkpoint at" not in line
