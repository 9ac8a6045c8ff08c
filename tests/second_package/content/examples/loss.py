"""Examples for the loss page: softmax cross-entropy on hand-picked logits."""
import numpy as np

from mlp.config import MLPConfig
from mlp.ops import softmax_cross_entropy_backward, softmax_cross_entropy_forward
from site_builder.run.examples import ExampleResult, gradcheck_table, steps_table
from site_builder.run.trace import trace_locals
from tests.gradcheck import numerical_grad

# Hand-picked: two examples, three classes; the first is scored right, the second wrong.
LOGITS_HAND = np.array([[2.0, 0.5, -1.0],
                        [0.0, 1.5, 0.3]])
Y_HAND = np.array([0, 2])
SIZES = MLPConfig(batch=2, n_classes=3)
SOURCE = "mlp.ops with the hand-picked logits and classes of content/examples/loss.py"


def forward_worked():
    t = trace_locals(softmax_cross_entropy_forward, LOGITS_HAND, Y_HAND)
    rows = [("Logits", "logits"), ("Minus the row maximum", "shifted"), ("Exponentials", "E"),
            ("Probabilities", "P"), ("Probability of the right class", "picked"), ("Mean negative log", "loss")]
    P = t.result[1]["P"]
    return ExampleResult([steps_table(t, rows)], SOURCE,
                         data=dict(config=SIZES, loss=t.result[0], row_sums=P.sum(axis=1)))


def backward_gradcheck():
    logits = LOGITS_HAND.copy()
    _, c = softmax_cross_entropy_forward(logits, Y_HAND)
    t = trace_locals(softmax_cross_entropy_backward, c)
    f = lambda: float(softmax_cross_entropy_forward(logits, Y_HAND)[0])
    numeric = numerical_grad(f, logits)
    return ExampleResult([steps_table(t, [("Probabilities, copied", "dlogits", 1), ("Minus 1 at the right class", "dlogits", 2),
                                          ("Divided by the batch", "dlogits", 3)]),
                          gradcheck_table([("dlogits", t.result, numeric)])],
                         SOURCE, data=dict(config=SIZES, gap=float(np.abs(t.result - numeric).max())))
