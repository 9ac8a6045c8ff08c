import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import model.train as mt
from model import ModelInputError
from model.config import ModelConfig, TrainConfig
from model.data import CharTokenizer
from model.train import TrainingDiverged, load_checkpoint, train

REPO = Path(__file__).resolve().parent.parent
TEXT = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
        "The slings and arrows of outrageous fortune,\nOr to take arms against a sea of troubles\n") * 12
TCFG = TrainConfig(steps=12, batch_size=4, warmup_steps=2, eval_every=4, eval_batches=2,
                   log_every=2, checkpoint_every=4)


def tiny_cfg(text=TEXT, **overrides):
    sizes = dict(vocab_size=CharTokenizer(text).vocab_size, seq_len=8, emb_dim=8, num_heads=2,
                 ff_dim=16, num_layers=1)
    return ModelConfig(**{**sizes, **overrides})


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def run(out, corpus, tcfg=TCFG, cfg=None, resume=False):
    return train(out, cfg or tiny_cfg(), tcfg, corpus=corpus, resume=resume, progress=False)


def metrics(out):
    return [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]


def without_timing(records):
    return [{k: v for k, v in r.items() if k != "tokens_per_s"} for r in records]


def test_training_writes_metrics_and_a_checkpoint(tmp_path, corpus):
    result = run(tmp_path / "run", corpus)
    records = metrics(tmp_path / "run")
    assert [r["step"] for r in records] == [1, 2, 4, 6, 8, 10, 12]
    for r in records:
        assert {"step", "train_loss", "lr", "tokens_per_s"} <= r.keys()
        assert ("val_loss" in r) == (r["step"] % 4 == 0)
    assert records[-1]["val_loss"] == result["val_loss"]
    ckpt = load_checkpoint(tmp_path / "run" / "checkpoint.npz")
    assert ckpt["step"] == 12 and ckpt["opt_state"]["t"] == 12
    assert ckpt["model_cfg"] == tiny_cfg() and ckpt["train_cfg"] == TCFG
    assert ckpt["tokenizer"].chars == CharTokenizer(TEXT).chars
    assert all(np.array_equal(ckpt["params"][k], v) for k, v in result["params"].items())
    assert not [p for p in os.listdir(tmp_path / "run") if p.endswith(".tmp")]


def test_resume_is_bit_exact(tmp_path, corpus, monkeypatch):
    whole = run(tmp_path / "whole", corpus)

    # Interrupt a second run at step 7: its last checkpoint is step 4, its metrics reach step 6.
    real_step, calls = mt.train_step, []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 7:
            raise KeyboardInterrupt
        return real_step(*args)

    monkeypatch.setattr(mt, "train_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "split", corpus)
    monkeypatch.setattr(mt, "train_step", real_step)
    assert load_checkpoint(tmp_path / "split" / "checkpoint.npz")["step"] == 4
    assert metrics(tmp_path / "split")[-1]["step"] == 6

    resumed = run(tmp_path / "split", corpus, resume=True)
    a = load_checkpoint(tmp_path / "whole" / "checkpoint.npz")
    b = load_checkpoint(tmp_path / "split" / "checkpoint.npz")
    for name in whole["params"]:
        assert np.array_equal(whole["params"][name], resumed["params"][name]), name
        assert np.array_equal(a["params"][name], b["params"][name]), name
        assert np.array_equal(a["opt_state"]["m"][name], b["opt_state"]["m"][name]), name
        assert np.array_equal(a["opt_state"]["v"][name], b["opt_state"]["v"][name]), name
    assert a["rng_state"] == b["rng_state"] and a["step"] == b["step"] == 12
    assert without_timing(metrics(tmp_path / "whole")) == without_timing(metrics(tmp_path / "split"))


def test_evaluation_does_not_perturb_training(tmp_path, corpus):
    often = run(tmp_path / "often", corpus, TrainConfig(**{**TCFG.to_dict(), "eval_every": 1}))
    rarely = run(tmp_path / "rarely", corpus, TrainConfig(**{**TCFG.to_dict(), "eval_every": 100}))
    for name in often["params"]:
        assert np.array_equal(often["params"][name], rarely["params"][name]), name


def test_evaluation_uses_fixed_batches(corpus):
    cfg = tiny_cfg()
    params = mt.init_params(cfg, np.random.default_rng(0))
    ids = CharTokenizer(TEXT).encode(TEXT)
    first = mt.evaluate(params, ids, cfg, TCFG, mt.eval_rng(0))
    assert first == mt.evaluate(params, ids, cfg, TCFG, mt.eval_rng(0))
    assert np.isfinite(first)


def test_resume_with_another_model_config_names_both_values(tmp_path, corpus):
    run(tmp_path / "run", corpus)
    with pytest.raises(ModelInputError, match=r"emb_dim = 8 but this run asks for 16"):
        run(tmp_path / "run", corpus, cfg=tiny_cfg(emb_dim=16), resume=True)


def test_resume_with_another_train_config_names_both_values(tmp_path, corpus):
    run(tmp_path / "run", corpus)
    with pytest.raises(ModelInputError, match=r"lr = 0.01 but this run asks for 0.02"):
        run(tmp_path / "run", corpus, TrainConfig(**{**TCFG.to_dict(), "lr": 0.02}), resume=True)


def test_resume_on_a_corpus_with_another_vocabulary(tmp_path, corpus):
    run(tmp_path / "run", corpus)
    other = tmp_path / "other.txt"
    other.write_text(TEXT + "Zounds!\n", encoding="utf-8")
    with pytest.raises(ModelInputError, match=r"vocabulary of \d+ characters, but this corpus has \d+"):
        run(tmp_path / "run", other, cfg=tiny_cfg(TEXT + "Zounds!\n"), resume=True)


def test_resume_on_another_corpus_with_the_same_vocabulary(tmp_path, corpus):
    run(tmp_path / "run", corpus)
    other = tmp_path / "other.txt"
    other.write_text(TEXT[::-1], encoding="utf-8")
    with pytest.raises(ModelInputError, match="sha256"):
        run(tmp_path / "run", other, resume=True)


def test_model_config_must_match_the_corpus_vocabulary(tmp_path, corpus):
    with pytest.raises(ModelInputError, match=r"vocab_size is 99 but corpus .* has \d+"):
        run(tmp_path / "run", corpus, cfg=tiny_cfg(vocab_size=99))


def test_resume_without_a_checkpoint(tmp_path, corpus):
    with pytest.raises(ModelInputError, match="cannot resume: no checkpoint at"):
        run(tmp_path / "nothing", corpus, resume=True)


def inject_nan_at(monkeypatch, bad_call):
    real, calls = mt.loss_and_grads, []

    def sometimes_nan(*args):
        calls.append(1)
        loss, grads = real(*args)
        return (float("nan") if len(calls) == bad_call else loss), grads

    monkeypatch.setattr(mt, "loss_and_grads", sometimes_nan)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, corpus, monkeypatch):
    saved = []                                          # sha256 of the file after every save
    real_save = mt.save_checkpoint

    def recording_save(path, **kw):
        real_save(path, **kw)
        saved.append((kw["step"], hashlib.sha256(Path(path).read_bytes()).hexdigest()))

    monkeypatch.setattr(mt, "save_checkpoint", recording_save)
    inject_nan_at(monkeypatch, 7)
    with pytest.raises(TrainingDiverged, match="loss is nan at step 7"):
        run(tmp_path / "run", corpus)
    path = tmp_path / "run" / "checkpoint.npz"
    assert [step for step, _ in saved] == [4]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == saved[-1][1]
    ckpt = load_checkpoint(path)
    assert ckpt["step"] == 4
    assert all(np.isfinite(p).all() for p in ckpt["params"].values())


def test_nan_loss_exits_1_from_the_cli(tmp_path, corpus, monkeypatch, capsys):
    inject_nan_at(monkeypatch, 2)
    with pytest.raises(SystemExit) as e:
        mt.main(["--steps", "3", "--out", str(tmp_path / "run"), "--corpus", str(corpus),
                 "--batch-size", "2"])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert "error: loss is nan at step 2" in err and "Traceback" not in err


def cli(*args):
    return subprocess.run([sys.executable, "-m", "model.train", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("args, message", [
    (["--corpus", "{tmp}/missing.txt"], "does not exist"),
    (["--batch-size", "0"], "batch_size must be a positive integer"),
    (["--resume"], "cannot resume: no checkpoint at"),
    (["--steps", "many"], "invalid int value"),
])
def test_cli_errors_exit_2_without_a_traceback(tmp_path, corpus, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    r = cli("--out", str(tmp_path / "run"), "--corpus", str(corpus), *args)
    assert r.returncode == 2
    assert r.stderr.startswith("error:") and message in r.stderr
    assert "Traceback" not in r.stderr


# ----------------------------------------------------------------------------- never lose a checkpoint

def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_a_new_run_into_a_folder_with_a_run_is_refused(tmp_path, corpus):
    run(tmp_path / "run", corpus)
    before = {p.name: digest(p) for p in (tmp_path / "run").iterdir()}
    with pytest.raises(ModelInputError, match=r"already holds a run \(checkpoint.npz and metrics.jsonl\); "
                                              r"continue it with --resume, or pass --overwrite"):
        run(tmp_path / "run", corpus, TrainConfig(**{**TCFG.to_dict(), "seed": 1}))
    assert {p.name: digest(p) for p in (tmp_path / "run").iterdir()} == before


def test_resume_and_overwrite_exclude_each_other(tmp_path, corpus):
    with pytest.raises(ModelInputError, match="pass only one"):
        train(tmp_path / "run", tiny_cfg(), TCFG, corpus=corpus, resume=True, overwrite=True, progress=False)


def test_overwrite_replaces_the_old_run_only_at_its_first_checkpoint(tmp_path, corpus, monkeypatch):
    other_seed = TrainConfig(**{**TCFG.to_dict(), "seed": 1})
    run(tmp_path / "run", corpus)
    old = {name: digest(tmp_path / "run" / name) for name in ("checkpoint.npz", "metrics.jsonl")}
    fresh = run(tmp_path / "fresh", corpus, other_seed)

    # Until step 4, its first checkpoint, the new run must leave the old files exactly as they were.
    real_step, seen = mt.train_step, []

    def watching(*args):
        seen.append({name: digest(tmp_path / "run" / name) for name in old})
        return real_step(*args)

    monkeypatch.setattr(mt, "train_step", watching)
    train(tmp_path / "run", tiny_cfg(), other_seed, corpus=corpus, overwrite=True, progress=False)
    assert seen[:4] == [old] * 4 and seen[4] != old
    ckpt = load_checkpoint(tmp_path / "run" / "checkpoint.npz")
    assert ckpt["train_cfg"].seed == 1 and ckpt["step"] == 12
    assert all(np.array_equal(ckpt["params"][k], v) for k, v in fresh["params"].items())
    assert without_timing(metrics(tmp_path / "run")) == without_timing(metrics(tmp_path / "fresh"))
    assert sorted(os.listdir(tmp_path / "run")) == ["checkpoint.npz", "metrics.jsonl"]


def test_an_overwrite_that_diverges_before_its_first_checkpoint_keeps_the_old_run(tmp_path, corpus, monkeypatch):
    run(tmp_path / "run", corpus)
    before = {p.name: digest(p) for p in (tmp_path / "run").iterdir()}
    inject_nan_at(monkeypatch, 2)
    with pytest.raises(TrainingDiverged, match=r"loss is nan at step 2; this run wrote no checkpoint; "
                                               r"the earlier run's .*checkpoint.npz is untouched"):
        train(tmp_path / "run", tiny_cfg(), TCFG, corpus=corpus, overwrite=True, progress=False)
    assert {p.name: digest(p) for p in (tmp_path / "run").iterdir()} == before   # no metrics.jsonl.pending
    assert load_checkpoint(tmp_path / "run" / "checkpoint.npz")["step"] == 12


def test_a_run_stopped_before_its_first_checkpoint_leaves_nothing(tmp_path, corpus, monkeypatch):
    real_step, calls = mt.train_step, []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_step(*args)

    monkeypatch.setattr(mt, "train_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "run", corpus)
    assert os.listdir(tmp_path / "run") == []
    monkeypatch.setattr(mt, "train_step", real_step)
    run(tmp_path / "run", corpus)                       # an empty folder needs no --overwrite


@pytest.mark.skipif(mt._free_memory() is None, reason="this system does not say how much memory is free")
def test_a_batch_too_large_for_memory_is_refused_before_numpy_tries(tmp_path, corpus):
    huge = TrainConfig(**{**TCFG.to_dict(), "batch_size": 10**12})
    with pytest.raises(ModelInputError, match=r"--batch-size 1000000000000 needs about [\d.]+ GiB per training "
                                              r"step, but only [\d.]+ GiB of memory is free; use --batch-size \d+"):
        run(tmp_path / "run", corpus, huge)
    assert not (tmp_path / "run").exists()


def test_step_bytes_is_close_to_the_measured_peak():
    # 14.8 kB per position was measured (peak RSS of loss_and_grads at B 1024 to 16384, default config).
    per_position = mt._step_bytes(ModelConfig(vocab_size=84), 1) / 16
    assert 14_800 <= per_position <= 1.2 * 14_800


def test_the_progress_bar_shows_no_validation_loss_before_the_first(tmp_path, corpus, capsys):
    train(tmp_path / "run", tiny_cfg(), TCFG, corpus=corpus, progress=True)
    bar = capsys.readouterr().err
    assert "val=nan" not in bar and "val=–" in bar and "val=" + f"{metrics(tmp_path / 'run')[-1]['val_loss']:.3f}" in bar


def test_an_exploding_validation_loss_stops_before_its_checkpoint(tmp_path, corpus, monkeypatch):
    real, calls = mt.evaluate, []

    def exploding(*args):
        calls.append(1)
        return 1e9 if len(calls) == 2 else real(*args)

    monkeypatch.setattr(mt, "evaluate", exploding)
    with pytest.raises(TrainingDiverged, match=r"the validation loss is 1e\+09, above 10 x log\(vocabulary \d+\) "
                                               r"= [\d.]+ at step 8; the last good checkpoint .* is untouched"):
        run(tmp_path / "run", corpus)
    assert load_checkpoint(tmp_path / "run" / "checkpoint.npz")["step"] == 4
