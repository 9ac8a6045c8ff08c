"""Examples for the network page: the classifier at its default config on the toy data of
mlp.train.make_blobs, its gradients against central differences, and a few training steps."""
import numpy as np

from mlp.config import MLPConfig
from mlp.model import forward, init_params, loss_and_grads
from mlp.train import make_blobs, train_step
from site_builder.run.examples import ExampleResult, gradcheck_table, steps_table, table
from site_builder.run.trace import trace_locals
from tests.gradcheck import numerical_grad, rel_error

CFG = MLPConfig()
SEED = 0
SOURCE = f"init_params and make_blobs at MLPConfig() with np.random.default_rng({SEED})"


def setup():
    rng = np.random.default_rng(SEED)
    return (init_params(CFG, rng),) + make_blobs(CFG, rng)


def data():
    t = trace_locals(make_blobs, CFG, np.random.default_rng(SEED))
    return ExampleResult([steps_table(t, [("Centres", "centres"), ("Classes", "y"), ("Points", "X")])],
                         f"make_blobs(MLPConfig(), np.random.default_rng({SEED}))", data=dict(config=CFG))


def forward_worked():
    params, X, _ = setup()
    t = trace_locals(forward, params, X)
    rows = [("Input", "X"), ("First layer", "Z"), ("ReLU", "A"), ("Second layer: the logits", "logits")]
    return ExampleResult([steps_table(t, rows)], SOURCE, data=dict(config=CFG))


def gradcheck():
    params, X, y = setup()
    loss, grads = loss_and_grads(params, X, y, CFG)
    f = lambda: float(loss_and_grads(params, X, y, CFG)[0])
    numeric = {name: numerical_grad(f, params[name]) for name in params}
    worst = max(rel_error(grads[n], numeric[n]) for n in params)
    return ExampleResult([gradcheck_table([(f"grads[{n!r}]", grads[n], numeric[n]) for n in params])],
                         SOURCE, data=dict(config=CFG, worst=worst, loss=loss))


def counts():
    """The number of scalars in every parameter, from the arrays init_params returns."""
    params = init_params(CFG, np.random.default_rng(SEED))
    rows = [[name, str(p.shape), str(p.size)] for name, p in params.items()]
    total = sum(p.size for p in params.values())
    return ExampleResult([table(["Parameter", "Shape", "Scalars"], rows + [["Total", "", str(total)]])],
                         f"init_params(MLPConfig(), np.random.default_rng({SEED}))", data=dict(total=total))


def training(steps=20):
    params, X, y = setup()
    t = trace_locals(train_step, params, X, y, CFG)
    losses = [t.result] + [train_step(params, X, y, CFG) for _ in range(steps - 1)]
    shown = [0, 1, 2, steps // 2, steps - 1]
    return ExampleResult([steps_table(t, [("Loss before the step", "loss")]),
                          table(["Step", "Loss"], [[str(i), f"{losses[i]:.4f}"] for i in shown])],
                         SOURCE + f", then {steps} calls of train_step on the same batch",
                         data=dict(config=CFG, first=losses[0], last=losses[-1], steps=steps))
