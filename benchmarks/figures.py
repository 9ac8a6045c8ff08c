"""Size and build time of one figure: site_builder.render.plots against matplotlib (and, with
--before FILE, against an older copy of plots.py). Not run by the build or the tests.

  python3 benchmarks/figures.py [--before /path/to/old/plots.py] [--repeat 50]

matplotlib is not a dependency: install it anywhere on PYTHONPATH to include it
(python3 -m pip install --target /tmp/mpl matplotlib; PYTHONPATH=/tmp/mpl python3 ...).
Figures: a loss curve (2 series, 61 and 12 points), a 16 x 16 attention heatmap with its causal
mask, and the 32 x 32 signed positional-encoding matrix, at the sizes the site uses.
"""
import argparse
import hashlib
import importlib.util
import io
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def data():
    rng = np.random.default_rng(0)
    steps = np.arange(0, 601, 10)
    train = 2.2 + 2.6 * np.exp(-steps / 40) + rng.normal(0, 0.05, steps.size)
    vsteps = steps[5::5]
    val = 2.2 + 2.6 * np.exp(-vsteps / 45)
    S = rng.normal(size=(16, 16))
    mask = np.triu(np.ones((16, 16), bool), 1)
    A = np.exp(np.where(mask, -np.inf, S))
    A /= A.sum(-1, keepdims=True)
    pos, i = np.arange(32)[:, None], np.arange(0, 32, 2)
    PE = np.zeros((32, 32))
    PE[:, 0::2], PE[:, 1::2] = np.sin(pos / 10000 ** (i / 32)), np.cos(pos / 10000 ** (i / 32))
    return dict(line=[("training loss", steps.tolist(), train.tolist()), ("validation loss", vsteps.tolist(), val.tolist())],
                A=A, mask=mask, PE=PE)


def ours(mod, d):
    labels = [str(k) for k in range(16)]
    return dict(
        line=lambda: mod.line_plot(d["line"], "Loss", "step", "loss (nats per character)"),
        attention=lambda: mod.heatmap(d["A"].tolist(), labels, labels, "Attention", masked=d["mask"].tolist()),
        positions=lambda: mod.heatmap(d["PE"].tolist(), [str(p) for p in range(32)], [str(j) for j in range(32)], "PE"))


def matplotlib_figures(d):
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.hashsalt"] = "site"
    matplotlib.rcParams["svg.fonttype"] = "none"       # text as text (themeable, searchable), not glyph paths

    def save(fig):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        plt.close(fig)
        return buf.getvalue()

    def line():
        fig, ax = plt.subplots(figsize=(6.4, 3.0))
        for label, xs, ys in d["line"]:
            ax.plot(xs, ys, label=label)
        ax.set_xlabel("step"); ax.set_ylabel("loss (nats per character)"); ax.legend()
        return save(fig)

    def heat(M, mask=None, cmap="Blues", signed=False):
        fig, ax = plt.subplots(figsize=(5, 4.5))
        shown = np.ma.masked_array(M, mask) if mask is not None else M
        im = ax.imshow(shown, cmap=cmap, vmin=-1 if signed else 0, vmax=1)
        fig.colorbar(im, ax=ax)
        return save(fig)
    return dict(line=line, attention=lambda: heat(d["A"], d["mask"]), positions=lambda: heat(d["PE"], cmap="RdBu", signed=True))


def measure(figs, repeat):
    out = {}
    for name, make in figs.items():
        first = make()
        t = time.perf_counter()
        for _ in range(repeat):
            again = make()
        ms = (time.perf_counter() - t) / repeat * 1000
        out[name] = (len(first.encode()), ms, hashlib.sha256(first.encode()).digest() == hashlib.sha256(again.encode()).digest())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path)
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    d = data()
    from site_builder.render import plots
    rows = [("site_builder.render.plots (now)", measure(ours(plots, d), args.repeat))]
    if args.before:
        spec = importlib.util.spec_from_file_location("plots_before", args.before)
        before = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(before)
        rows.insert(0, ("site_builder.render.plots (before)", measure(ours(before, d), args.repeat)))
    try:
        t = time.perf_counter()
        import matplotlib  # noqa: F401
        figs = matplotlib_figures(d)
        import_s = time.perf_counter() - t
        rows.append((f"matplotlib {matplotlib.__version__} (import {import_s:.2f} s once)", measure(figs, max(3, args.repeat // 10))))
    except ImportError:
        print("matplotlib is not installed: left out")
    print("| figure | " + " | ".join(name for name, _ in rows) + " |")
    print("|---|" + "---:|" * len(rows))
    for fig in ("line", "attention", "positions"):
        print(f"| {fig} | " + " | ".join(f"{r[fig][0]:,} B, {r[fig][1]:.2f} ms{'' if r[fig][2] else ', NOT deterministic'}" for _, r in rows) + " |")


if __name__ == "__main__":
    main()
