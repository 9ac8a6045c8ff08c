import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from model import ModelInputError
from model.config import ModelConfig, TrainConfig
from model.data import CharTokenizer
from model.generate import generate, sample_next
from model.optim import AdamW
from model.train import save_checkpoint
from model.transformer import init_params

REPO = Path(__file__).resolve().parent.parent
VOCAB = "\n !,.:;ABCDEIJLMORTUaehilmnorstuw"
TOK = CharTokenizer(VOCAB)
CFG = ModelConfig(vocab_size=TOK.vocab_size, seq_len=8, emb_dim=8, num_heads=2, ff_dim=16, num_layers=1)
# Random weights give a flat-ish distribution: a model that is not sure is the harder test.
PARAMS = init_params(CFG, np.random.default_rng(0))
PROMPT = TOK.encode("ROMEO:\n")


def test_temperature_zero_is_argmax():
    logits = np.array([0.1, 2.0, -1.0, 1.9])
    assert sample_next(logits, 0, None, np.random.default_rng(0)) == 1


def test_top_k_1_is_argmax_at_any_temperature():
    logits = np.random.default_rng(3).standard_normal(50)
    for seed in range(20):
        assert sample_next(logits, 5.0, 1, np.random.default_rng(seed)) == int(np.argmax(logits))


def test_top_k_samples_only_the_k_largest():
    logits = np.array([0.0, 3.0, 1.0, 2.9, -2.0, 2.8])
    rng = np.random.default_rng(0)
    drawn = {sample_next(logits, 10.0, 3, rng) for _ in range(300)}
    assert drawn == {1, 3, 5}


def test_sampling_follows_the_softmax():
    logits = np.log(np.array([0.7, 0.2, 0.1]))
    rng = np.random.default_rng(0)
    counts = np.bincount([sample_next(logits, 1.0, None, rng) for _ in range(4000)], minlength=3)
    assert np.allclose(counts / 4000, [0.7, 0.2, 0.1], atol=0.03)


@pytest.mark.parametrize("temperature, top_k, message", [
    (-0.5, None, "temperature"), (float("nan"), None, "temperature"), (float("inf"), None, "temperature"),
    (1.0, 0, "top_k"), (1.0, 2.5, "top_k"), (1.0, -3, "top_k"),
])
def test_bad_sampling_settings(temperature, top_k, message):
    with pytest.raises(ModelInputError, match=message):
        sample_next(np.zeros(4), temperature, top_k, np.random.default_rng(0))


def test_greedy_generation_is_deterministic():
    a = generate(PARAMS, CFG, PROMPT, 20, 0, None, np.random.default_rng(0))
    b = generate(PARAMS, CFG, PROMPT, 20, 0, None, np.random.default_rng(99))
    assert np.array_equal(a, b)
    assert a.dtype == np.int64 and len(a) == len(PROMPT) + 20
    assert np.array_equal(a[:len(PROMPT)], PROMPT)


def test_top_k_1_equals_greedy():
    greedy = generate(PARAMS, CFG, PROMPT, 20, 0, None, np.random.default_rng(0))
    top1 = generate(PARAMS, CFG, PROMPT, 20, 1.3, 1, np.random.default_rng(5))
    assert np.array_equal(greedy, top1)


def test_sampling_is_reproducible_from_the_seed():
    a = generate(PARAMS, CFG, PROMPT, 30, 1.0, None, np.random.default_rng(4))
    b = generate(PARAMS, CFG, PROMPT, 30, 1.0, None, np.random.default_rng(4))
    assert np.array_equal(a, b)


def test_only_the_last_seq_len_ids_are_context():
    long_prompt = TOK.encode("JULIET:\nO Romeo, Romeo!\n")
    assert len(long_prompt) > CFG.seq_len
    full = generate(PARAMS, CFG, long_prompt, 10, 0, None, np.random.default_rng(0))
    tail = generate(PARAMS, CFG, long_prompt[-CFG.seq_len:], 10, 0, None, np.random.default_rng(0))
    assert np.array_equal(full[len(long_prompt):], tail[CFG.seq_len:])


def test_empty_prompt_and_bad_steps():
    with pytest.raises(ModelInputError, match="prompt is empty"):
        generate(PARAMS, CFG, [], 5, 0, None, np.random.default_rng(0))
    with pytest.raises(ModelInputError, match="steps"):
        generate(PARAMS, CFG, PROMPT, -1, 0, None, np.random.default_rng(0))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "checkpoint.npz"
    save_checkpoint(path, params=PARAMS, opt=AdamW(PARAMS), rng=np.random.default_rng(0), step=0,
                    model_cfg=CFG, train_cfg=TrainConfig(), tokenizer=TOK)
    return path


def cli(*args):
    return subprocess.run([sys.executable, "-m", "model.generate", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_cli_prints_the_continuation(checkpoint):
    r = cli("--checkpoint", str(checkpoint), "--prompt", "ROMEO:", "--steps", "12", "--temperature", "0")
    assert r.returncode == 0, r.stderr
    expected = generate(PARAMS, CFG, TOK.encode("ROMEO:"), 12, 0, None, np.random.default_rng(0))
    assert r.stdout == TOK.decode(expected) + "\n"


@pytest.mark.parametrize("args, message", [
    (["--prompt", "Roméo"], "'é' at position 3"),
    (["--prompt", "ROMEO", "--temperature", "-1"], "temperature must be a number >= 0"),
    (["--prompt", "ROMEO", "--top-k", "0"], "top_k must be an integer >= 1"),
    (["--prompt", "ROMEO", "--checkpoint", "{missing}"], "no checkpoint at"),
])
def test_cli_errors_exit_2_without_a_traceback(checkpoint, args, message):
    args = [a.replace("{missing}", str(checkpoint.parent / "missing.npz")) for a in args]
    r = cli("--checkpoint", str(checkpoint), *args)
    assert r.returncode == 2
    assert r.stderr.startswith("error:") and message in r.stderr
    assert "Traceback" not in r.stderr
