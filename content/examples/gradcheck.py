"""Examples for the Gradient checking page: the whole language model against central differences.

The setup is the one of tests/test_gradcheck.py::test_every_tensor_passes (config, seeds, the
perturbed biases and gains, the batch), so the page shows what that test checks.
"""
import inspect
from functools import lru_cache

import numpy as np

from model.config import ModelConfig
from model.gradcheck import numerical_grad, rel_error
from model.ops import cross_entropy_forward
from model.transformer import init_params, forward, loss_and_grads, embed_forward
from site_builder.run.examples import ExampleResult, table, figure, gradcheck_table, config_label
from site_builder.render.plots import line_plot
from site_builder.run.trace import trace_locals
from tests.fixtures import GRADCHECK_TOL as TOL

H = inspect.signature(numerical_grad).parameters["h"].default    # numerical_grad's default step


def check_config(emb_std=1.0):
    return ModelConfig(vocab_size=7, seq_len=4, emb_dim=8, num_heads=2, ff_dim=12, num_layers=2, emb_std=emb_std)


def setup(emb_std=1.0):
    """Parameters, ids and targets exactly as test_every_tensor_passes makes them."""
    cfg = check_config(emb_std)
    params = init_params(cfg, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    for name in params:                       # nonzero biases, gains and shifts: no zero is special
        if name.endswith(("_b", "_g", ".bq", ".bk", ".bv", ".bo")):
            params[name] = params[name] + 0.1 * rng.standard_normal(params[name].shape)
    ids, targets = rng.integers(0, cfg.vocab_size, size=(2, 4)), rng.integers(0, cfg.vocab_size, size=(2, 4))
    return cfg, params, ids, targets


def loss_fn(cfg, params, ids, targets):
    return lambda: cross_entropy_forward(forward(params, ids, cfg)[0], targets)[0]


def source(emb_std=1.0):
    return (f"init_params({config_label(check_config(emb_std))}, np.random.default_rng(0)), biases, gains and "
            f"shifts moved by 0.1 N(0, 1), a batch of 2 sequences: the setup of test_every_tensor_passes")


def sci(x):
    return f"{float(x):.1e}"


@lru_cache(maxsize=None)
def whole_model(emb_std=1.0, h=H):
    """Analytic and numerical gradient of every parameter. Cached: two examples read it."""
    cfg, params, ids, targets = setup(emb_std)
    loss, grads = loss_and_grads(params, ids, targets, cfg)
    f = loss_fn(cfg, params, ids, targets)
    numeric = {name: numerical_grad(f, params[name], h) for name in params}
    return loss, grads, numeric


def verdict(name, a, n):
    """The test's own rule: key biases by absolute norm bounds, every other tensor by rel_error <= TOL."""
    if name.endswith(".bk"):
        ok = np.linalg.norm(a) < 1e-14 and np.linalg.norm(n) < 1e-9
        return "both 0 by norm" if ok else "FAILS"
    return "passes" if rel_error(a, n) <= TOL else "FAILS"


# ----------------------------------------------------------------------------- central differences

def central_walk():
    """numerical_grad on head_b, traced: each entry nudged up and down, and the loss at both."""
    cfg, params, ids, targets = setup()
    _, grads = loss_and_grads(params, ids, targets, cfg)
    t = trace_locals(numerical_grad, loss_fn(cfg, params, ids, targets), params["head_b"])
    rows, up, old = [], None, None
    for step in t.steps:
        if "old" in step.changed:
            old = step.locals["old"]
        if "up" in step.changed:
            up = step.locals["up"]
        if "down" in step.changed:
            i, down = int(step.locals["i"]), step.locals["down"]
            central = (up - down) / (2 * H)
            rows.append([str(i), f"{old:.6f}", f"{up:.12f}", f"{down:.12f}",
                         f"{central:.10f}", f"{grads['head_b'][i]:.10f}", sci(abs(central - grads['head_b'][i]))])
    assert np.array_equal(t.arguments["x"], params["head_b"])          # restored entry by entry
    headers = ["i", "x_i", "f(x + h e_i)", "f(x - h e_i)", "Central difference", "loss_and_grads", "Gap"]
    return ExampleResult([table(headers, rows, caption="numerical_grad(f, params[\"head_b\"]), traced line by line")],
                         source(), data=dict(rows=rows, numeric=t.result, analytic=grads["head_b"]))


HS = [10.0 ** (-k / 2) for k in range(4, 21)]      # h from 1e-2 down to 1e-10, half a decade apart


def h_sweep(emb_std):
    cfg, params, ids, targets = setup(emb_std)
    _, grads = loss_and_grads(params, ids, targets, cfg)
    f = loss_fn(cfg, params, ids, targets)
    return [rel_error(grads["tok_emb"], numerical_grad(f, params["tok_emb"], h)) for h in HS]


def error_vs_h():
    series, best, all_errs = [], [], {}
    for emb_std in (0.02, 1.0):
        errs = all_errs[emb_std] = h_sweep(emb_std)
        series.append((f"emb_std {emb_std}", [float(np.log10(h)) for h in HS], [float(np.log10(e)) for e in errs]))
        k = int(np.argmin(errs))
        best.append([f"{emb_std}", sci(errs[HS.index(H)]), sci(HS[k]), sci(errs[k])])
    svg = line_plot([(label, HS, all_errs[std]) for (label, _, _), std in zip(series, all_errs)],
                    "rel_error of tok_emb against the step h", "step h (log scale)", "rel_error (log scale)",
                    logx=True, logy=True)
    rows = table(["emb_std", "rel_error at h = 1e-5", "Best h", "rel_error there"], best)
    return ExampleResult([figure(svg, "The whole model's loss, its tok_emb gradient from loss_and_grads against "
                                      "numerical_grad at each h. On the right, truncation: the error falls as h²; on the "
                                      "left, rounding: it grows as 1/h."), rows],
                         source(1.0) + "; the same with emb_std 0.02",
                         data=dict(series=series, errs=all_errs))


# ----------------------------------------------------------------------------- relative error

def elementwise_vs_norm():
    """What an elementwise relative error would say about the same check, tensor by tensor."""
    loss, grads, numeric = whole_model()
    rows, data = [], {}
    for name in grads:
        a, n = grads[name], numeric[name]
        with np.errstate(invalid="ignore", divide="ignore"):
            elem = np.abs(a - n) / (np.abs(a) + np.abs(n))
        worst = float(np.nanmax(elem)) if np.isfinite(elem).any() else float("nan")
        smallest = float(np.abs(a).min())
        data[name] = (worst, rel_error(a, n))
        if worst > TOL:
            rows.append([name, sci(worst), sci(smallest), sci(rel_error(a, n))])
    return ExampleResult([table(["Tensor", "Worst elementwise |a - n| / (|a| + |n|)", "Smallest |a| in it",
                                 "rel_error, by norm"], rows,
                                caption=f"Every tensor whose worst entry is above {TOL:g} elementwise")],
                         source(), data=data)


def key_bias():
    loss, grads, numeric = whole_model()
    cfg, params, ids, targets = setup()
    f = loss_fn(cfg, params, ids, targets)
    rows = []
    for l in range(cfg.num_layers):
        name, scale = f"b{l}.bk", np.linalg.norm(grads[f"b{l}.bq"])
        a, n = grads[name], numeric[name]
        rows.append([name, sci(np.linalg.norm(a)), sci(np.linalg.norm(n)), sci(rel_error(a, n)),
                     sci(rel_error(a, n, floor=scale)), sci(scale)])
    before = f()
    params["b0.bk"] += 1.0                           # a large change of every entry
    after = f()
    params["b0.bk"] -= 1.0
    shift = table(["", "Loss"], [["Before", f"{before:.17f}"], ["After adding 1 to every entry of b0.bk", f"{after:.17f}"],
                                 ["Difference", sci(after - before)]])
    return ExampleResult([table(["Tensor", "‖analytic‖", "‖numerical‖", "rel_error, floor 1e-8",
                                 "rel_error, floor ‖grads[bq]‖", "‖grads[bq]‖ of the same layer"], rows), shift],
                         source(), data=dict(rows=rows, before=before, after=after))


# ----------------------------------------------------------------------------- the whole model

def whole_model_table():
    loss, grads, numeric = whole_model()
    rows, data = [], {}
    for name in grads:
        a, n = grads[name], numeric[name]
        gap = float(np.abs(a - n).max())
        err = rel_error(a, n)
        data[name] = dict(rel_error=err, gap=gap, verdict=verdict(name, a, n))
        rows.append([name, str(a.shape), f"{np.linalg.norm(a):.4g}", f"{np.linalg.norm(n):.4g}", sci(err), sci(gap),
                     data[name]["verdict"]])
    headers = ["Parameter", "Shape", "‖analytic‖", "‖numerical‖", "rel_error", "Largest |gap|", f"Test's rule (≤ {TOL:g})"]
    sample = gradcheck_table([(f'grads["{k}"]', grads[k], numeric[k]) for k in ("head_b", "lnf_g", "b1.ln2_g")])
    return ExampleResult([table(headers, rows), sample], source(),
                         data=dict(rows=data, loss=loss, count=sum(a.size for a in grads.values())))


def emb_std_compare():
    rows, data = [], {}
    for emb_std in (0.02, 1.0):
        cfg, params, ids, targets = setup(emb_std)
        _, grads = loss_and_grads(params, ids, targets, cfg)
        f = loss_fn(cfg, params, ids, targets)
        X, _ = embed_forward(ids, params)                 # the rows the first LayerNorm normalises
        row_std = float(X.std(axis=-1).mean())
        errs = {name: {h: rel_error(grads[name], numerical_grad(f, params[name], h)) for h in (H, 3e-6)}
                for name in ("tok_emb", "pos_emb")}
        data[emb_std] = dict(row_std=row_std, errs=errs)
        for name in ("tok_emb", "pos_emb"):
            e = errs[name]
            rows.append([f"{emb_std}", f"{row_std:.4f}", name, sci(e[H]), sci(e[3e-6]), f"{e[H] / e[3e-6]:.1f}",
                         "within" if e[H] <= TOL else "above"])
    headers = ["emb_std", "Mean std of a row entering LayerNorm 1", "Tensor", "rel_error, h = 1e-5",
               "rel_error, h = 3e-6", "Ratio", f"≤ {TOL:g} at h = 1e-5"]
    return ExampleResult([table(headers, rows, caption=f"(1e-5 / 3e-6)² = {(1e-5 / 3e-6) ** 2:.1f}: the ratio "
                                                         f"truncation error alone would give")],
                         source(1.0) + "; the same with emb_std 0.02", data=data)


def cost():
    """How many loss evaluations a full check takes: two per scalar parameter."""
    from model.train import prepare_data
    from model.config import TrainConfig
    from model.data import DEFAULT_CORPUS
    small = sum(p.size for p in setup()[1].values())
    default_cfg = prepare_data(DEFAULT_CORPUS, None, TrainConfig())[1]
    big = sum(p.size for p in init_params(default_cfg, np.random.default_rng(0)).values())
    rows = [["The check's config (this page)", f"{small:,}", f"{2 * small:,}"],
            ["The default config", f"{big:,}", f"{2 * big:,}"]]
    return ExampleResult([table(["Config", "Scalar parameters", "Loss evaluations for a full check"], rows)],
                         f"parameter counts of init_params at {config_label(check_config())} and at "
                         f"{config_label(default_cfg)}", data=dict(small=small, big=big))


def defaults():
    """For prose: the step numerical_grad takes when a caller gives none ({{gradcheck:defaults.h}})."""
    return ExampleResult([], "inspect.signature(model.gradcheck.numerical_grad)", data=dict(h=H))
