"""The Training page: its sections, its examples against direct calls of model.train, and the
equations it cites that no other test checks line by line."""
import math
import re
from pathlib import Path

import numpy as np
import pytest

import model.train as mt
from model.config import ModelConfig, TrainConfig
from model.data import get_batch
from model.optim import AdamW, clip_grad_norm, warmup_cosine_lr
from model.transformer import init_params, loss_and_grads
from site_builder.base.cache import BuildCache
from site_builder.run.examples import load_example
from site_builder.render.plots import line_plot
from content import hooks             # the training runs' recipe (content/hooks.py)
from site_builder.run import training_run

ROOT = Path(__file__).resolve().parent.parent
CONCEPTS = ["training-step", "training-loop", "training-eval", "training-resume"]
HEADINGS = ["What is it?", "Mathematics", "Tensor shapes", "Actual implementation",
            "Where is it used?"]
CFG = ModelConfig(vocab_size=11, seq_len=6, emb_dim=8, num_heads=2, ff_dim=16, num_layers=1)
TCFG = TrainConfig(steps=10, batch_size=3, warmup_steps=2, eval_batches=3)


def example(name):
    return load_example(ROOT, f"training:{name}")


def constant(name):
    """A module-level value of content/examples/training.py."""
    return example("tiny_cfg").__globals__[name]


@pytest.fixture(scope="module")
def run(built_site):
    """The cached training run (the shared build has just made or read it)."""
    training_run.configure(BuildCache(ROOT / ".build_cache"))
    return hooks.trained_run()


def batch(seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, CFG.vocab_size, size=(TCFG.batch_size, CFG.seq_len + 1))
    return ids[:, :-1], ids[:, 1:]


# ----------------------------------------------------------------------------- the page

def test_training_page_has_its_sections(site_page):
    html = site_page("training")
    for cid in CONCEPTS:
        assert f'id="{cid}"' in html, cid
        section = html[html.index(f'<section class="concept" id="{cid}"'):]
        section = section[:section.index("</section>")]
        for heading in HEADINGS:
            assert f">{heading}</h3>" in section, (cid, heading)
        assert f'id="{cid}--connection">Code and math connection' in section, cid      # in its evidence disclosure
    assert 'id="training-cli"' in html


def test_loss_curve_is_drawn_from_the_metrics(site_page, run):
    html = site_page("training")
    train = ([r["step"] for r in run.metrics], [r["train_loss"] for r in run.metrics])
    val = ([r["step"] for r in run.metrics if "val_loss" in r], [r["val_loss"] for r in run.metrics if "val_loss" in r])
    svg = line_plot([(constant("TRAIN_LABEL"), *train), (constant("VAL_LABEL"), *val)],
                    constant("CURVE_TITLE"), "step", "loss (nats per character)")
    points = re.findall(r'<polyline class="line s\d" points="([^"]+)"', svg)
    assert len(points) == 2 * 2        # both series, in the wide drawing and the phone's (plots.line_plot)
    for p in points:
        assert f'points="{p}"' in html
    data = example("loss_curve")().data
    assert data["train"] == train and data["val"] == val


def test_samples_table_is_the_runs_samples(run):
    rows = example("samples_rows")()[1]
    assert [r["step"] for r in rows] == sorted(run.samples)
    by_step = {r["step"]: r for r in run.metrics}
    for r in rows:
        assert r["sample"] == run.samples[r["step"]]
        if "val_loss" in by_step.get(r["step"], {}):
            assert r["val_loss"] == by_step[r["step"]]["val_loss"]


def test_evaluate_on_a_snapshot_gives_the_logged_validation_loss(run):
    step = next(r["step"] for r in run.metrics if "val_loss" in r and r["step"] in run.snapshots)
    logged = next(r["val_loss"] for r in run.metrics if r["step"] == step)
    assert example("snapshot_val_loss")(run, step) == logged


# ----------------------------------------------------------------------------- one step

def test_train_step_example_is_step_one_of_train(tmp_path):
    data = example("train_step_traced")().data
    tiny_train = constant("TINY_TRAIN")
    tokenizer = mt.prepare_data(mt.DEFAULT_CORPUS, None, tiny_train)[0]
    result = mt.train(tmp_path, example("tiny_cfg")(tokenizer.vocab_size), tiny_train, progress=False, stop_at=1)
    name, row, cols = constant("WATCHED")
    np.testing.assert_array_equal(result["params"][name][row, cols], data["after"])
    first = mt.truncate_metrics(tmp_path / mt.METRICS, 1)[0]
    assert first["train_loss"] == data["loss"] and first["grad_norm"] == data["grad_norm"] and first["lr"] == data["lr"]
    np.testing.assert_allclose(data["g_clipped"], data["g_raw"] * tiny_train.clip_norm / data["grad_norm"],
                               rtol=1e-10)


def test_train_step_loss_is_the_mean_over_the_batch():
    params = init_params(CFG, np.random.default_rng(0))
    x, y = batch()
    per_sequence = [loss_and_grads(params, xs, ys, CFG)[0] for xs, ys in zip(x, y)]
    loss, _ = mt.train_step(params, AdamW(params), x, y, CFG, TCFG, 1e-3)
    assert loss == pytest.approx(np.mean(per_sequence), abs=1e-12)


class RecordingOptimizer:
    """Stands in for AdamW: records the gradients train_step hands to step()."""

    def step(self, params, grads, lr):
        self.grads, self.lr = {k: g.copy() for k, g in grads.items()}, lr


def test_train_step_clips_then_steps():
    params = init_params(CFG, np.random.default_rng(0))
    x, y = batch()
    _, raw = loss_and_grads(params, x, y, CFG)
    total = math.sqrt(sum(float((g * g).sum()) for g in raw.values()))
    tcfg = TrainConfig(**{**TCFG.to_dict(), "clip_norm": total / 4})     # sure to clip
    opt = RecordingOptimizer()
    _, grad_norm = mt.train_step(params, opt, x, y, CFG, tcfg, 0.5)
    assert grad_norm == pytest.approx(total, rel=1e-12)
    seen_norm = math.sqrt(sum(float((g * g).sum()) for g in opt.grads.values()))
    assert seen_norm == pytest.approx(tcfg.clip_norm, rel=1e-9)
    assert opt.lr == 0.5


def test_train_step_update_is_adamw_on_the_clipped_gradients():
    params = init_params(CFG, np.random.default_rng(0))
    manual = {k: v.copy() for k, v in params.items()}
    x, y = batch()
    mt.train_step(params, mt.make_optimizer(params, TCFG), x, y, CFG, TCFG, 3e-3)
    _, grads = loss_and_grads(manual, x, y, CFG)
    clip_grad_norm(grads, TCFG.clip_norm)
    mt.make_optimizer(manual, TCFG).step(manual, grads, 3e-3)
    for name in params:
        np.testing.assert_array_equal(params[name], manual[name], err_msg=name)


def test_clipping_barely_changes_adamws_first_step():
    data = example("clipping_and_first_adam_step")().data
    assert data["gap"] < 0.05 * data["largest_update"]


# ----------------------------------------------------------------------------- the loop

def test_logged_lr_follows_the_schedule(run):
    tc = run.train_cfg
    for row in run.metrics:
        assert row["lr"] == warmup_cosine_lr(row["step"], tc.lr, tc.min_lr, tc.warmup_steps, tc.steps)
    assert example("schedule_curve")().data["gap"] == 0


def test_main_scales_min_lr_with_lr(monkeypatch, tmp_path):
    seen = {}

    def record(out_dir, train_cfg=None, **kwargs):          # main's call of train, without training
        seen["tcfg"] = train_cfg
        return dict(step=0, train_loss=0.0, val_loss=0.0)

    monkeypatch.setattr(mt, "train", record)
    mt.main(["--out", str(tmp_path), "--lr", "0.02"])
    d = TrainConfig()
    assert seen["tcfg"].min_lr == pytest.approx(0.02 * d.min_lr / d.lr, rel=1e-12)


def test_command_line_example_matches_main():
    shown = example("command_line")().blocks
    ratio = shown[1]["rows"]
    d = TrainConfig()
    assert ratio[0][1] == f"{d.lr:g}, {d.min_lr:g}"
    assert "note:" in shown[0]["rows"][1][2]


# ----------------------------------------------------------------------------- evaluation

def test_evaluate_is_the_mean_over_its_batches():
    params = init_params(CFG, np.random.default_rng(0))
    ids = np.random.default_rng(1).integers(0, CFG.vocab_size, size=200)
    rng = mt.eval_rng(5)
    losses = []
    for _ in range(TCFG.eval_batches):
        x, y = get_batch(ids, TCFG.batch_size, CFG.seq_len, rng)
        losses.append(loss_and_grads(params, x, y, CFG)[0])
    assert mt.evaluate(params, ids, CFG, TCFG, mt.eval_rng(5)) == pytest.approx(np.mean(losses), abs=1e-12)


def test_evaluation_example_equals_direct_calls():
    data = example("evaluation_fixed_batches")().data
    _, cfg, _, val_ids, _ = example("tiny_data")()
    tcfg = constant("TINY_TRAIN")
    params = init_params(cfg, np.random.default_rng(mt.seed_streams(tcfg.seed)[0]))
    assert data["first"] == data["again"] == mt.evaluate(params, val_ids, cfg, tcfg, mt.eval_rng(tcfg.seed))
    assert data["other"] == mt.evaluate(params, val_ids, cfg, tcfg, np.random.default_rng(1))


# ----------------------------------------------------------------------------- resume

def test_resume_example_is_bit_exact():
    data = example("resume_exact")().data
    assert data["params_gap"] == 0.0 and data["metrics_equal"]


def test_checkpoint_holds_each_parameter_three_times():
    groups = example("checkpoint_contents")().data["groups"]
    assert groups["param"] == groups["adam_m"] == groups["adam_v"]
    assert groups["meta"][0] == 1


def test_refusals_are_check_compatibles_messages():
    rows = dict(example("refusals")().data["rows"])
    assert "TrainConfig.lr" in rows["lr doubled"] and "ModelConfig.emb_dim" in rows["emb_dim doubled"]
    assert rows["eval_every changed (not a trajectory field)"] == "accepted"
    kept = example("refusals")().data["kept"]
    assert [r["step"] for r in kept] == [1, 2, 4]


def visible_text(page_html):
    """A built page as a reader reads it: no tags, scripts or styles, one space between words."""
    import html as html_lib
    text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page_html, flags=re.S)
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def test_every_page_names_the_runs_it_shows_with_their_own_step_counts(built_site, run):
    """A page showing the site's training run names it, and its step count, from the run's record;
    a page showing a run at TrainConfig's defaults says so, with that run's step count."""
    label = hooks.run_label(run)
    assert f"({run.train_cfg.steps} steps:" in label
    showing = set()
    for page in sorted(built_site.glob("*.html")):
        text = visible_text(page.read_text(encoding="utf-8"))
        if run.commit_key in text:               # results of the site's run are on this page
            showing.add(page.stem)
            assert label in text, f"{page.name} shows the site's run without naming it and its steps"
        for n in re.findall(r"site's (?:own )?training run[^.]{0,80}?\(?(\d[\d,]*) steps", text):
            assert int(n.replace(",", "")) == run.train_cfg.steps, f"{page.name}: {n} steps for the site's run"
        for n in re.findall(r"TrainConfig\(\)`? defaults, (\d[\d,]*) steps", text):
            assert int(n.replace(",", "")) == TrainConfig().steps, f"{page.name}: {n} steps for a default run"
    assert {"training", "optimizer", "attention", "generation", "layernorm"} <= showing


def test_pages_that_show_a_default_run_say_it_is_not_the_sites(site_page, run):
    for slug in ("optimizer", "tokens"):
        text = visible_text(site_page(slug))
        assert f"TrainConfig() defaults, {TrainConfig().steps} steps" in text, slug
    assert f"trains {run.train_cfg.steps} steps" in visible_text(site_page("optimizer"))
    # the tokens page reads no run (its examples run without training), so it names the site's
    # run only as another one
    assert "not the site's own training run" in visible_text(site_page("tokens"))
