"""Examples for the layers page: real calls of mlp.ops on hand-picked inputs, traced line by
line, and their backward passes against central differences.

The inputs chain the way the classifier does: X through the first linear layer gives Z, ReLU
gives A, A through the output layer gives the logits, and a hand-picked gradient on the
logits goes back through the output layer and ReLU. So the backward examples show the output
layer, as loss_and_grads's first call of linear_backward does."""
import numpy as np

from mlp.config import MLPConfig
from mlp.ops import linear_backward, linear_forward, relu_backward, relu_forward
from site_builder.run.examples import ExampleResult, gradcheck_table, steps_table
from site_builder.run.trace import trace_locals
from tests.gradcheck import numerical_grad

# Hand-picked: a batch of two rows of three features, a hidden layer of four units, and an
# output layer of five classes; the upstream gradient is not computed from a loss.
X_HAND = np.array([[1.0, -2.0, 0.5],
                   [0.0, 1.0, 3.0]])
W1_HAND = np.array([[0.5, -1.0, 0.0, 2.0],
                    [1.0, 0.5, -0.5, 0.0],
                    [-1.0, 0.0, 1.0, 0.5]])
B1_HAND = np.array([0.1, -0.2, 0.0, 0.3])
W2_HAND = np.array([[1.0, 0.0, -0.5, 0.5, 0.2],
                    [0.0, 1.0, 0.5, -1.0, 0.0],
                    [-0.5, 0.5, 1.0, 0.0, 0.3],
                    [0.2, -0.3, 0.0, 1.0, -1.0]])
B2_HAND = np.array([0.0, 0.1, -0.1, 0.2, 0.0])
DLOGITS_HAND = np.array([[0.2, -0.5, 0.1, 0.4, -0.2],
                         [-0.3, 0.2, 0.6, -0.1, 0.0]])
# The sizes of these inputs as a config: the page's letters B, D, H, C are its fields.
SIZES = MLPConfig(batch=2, n_in=3, n_hidden=4, n_classes=5)
SOURCE = "mlp.ops with the hand-picked inputs of content/examples/layers.py"


def hidden():
    """Z and A of the hand-picked batch: the first layer and ReLU."""
    Z, _ = linear_forward(X_HAND, W1_HAND, B1_HAND)
    return Z, relu_forward(Z)


def linear_worked():
    t = trace_locals(linear_forward, X_HAND, W1_HAND, B1_HAND)
    return ExampleResult([steps_table(t, [("Input", "X"), ("Weights", "W"), ("Bias", "b"), ("X W + b", "Y")])],
                         SOURCE + ": the first layer", data=dict(config=SIZES, Y=t.result[0]))


def linear_backward_worked():
    _, (A, _) = hidden()
    t = trace_locals(linear_backward, DLOGITS_HAND, A, W2_HAND)
    rows = [("Arrives", "dY"), ("To the input", "dX"), ("To the weights", "dW"), ("To the bias", "db")]
    return ExampleResult([steps_table(t, rows)], SOURCE + ": the output layer, whose input X is A",
                         data=dict(config=SIZES, db=t.result[2]))


def linear_gradcheck():
    _, (A, _) = hidden()
    X, W, b = A.copy(), W2_HAND.copy(), B2_HAND.copy()
    dX, dW, db = linear_backward(DLOGITS_HAND, X, W)
    f = lambda: float((linear_forward(X, W, b)[0] * DLOGITS_HAND).sum())
    rows = [("dX", dX, numerical_grad(f, X)), ("dW", dW, numerical_grad(f, W)), ("db", db, numerical_grad(f, b))]
    return ExampleResult([gradcheck_table(rows)], SOURCE + ": the output layer", data=dict(config=SIZES, rows=rows))


def relu_worked():
    Z, _ = hidden()
    t = trace_locals(relu_forward, Z)
    return ExampleResult([steps_table(t, [("Input", "Z"), ("Where positive", "positive"), ("Output", "A")])],
                         SOURCE + ": Z is the output of the first layer", data=dict(config=SIZES))


def relu_gradcheck():
    Z, (A, positive) = hidden()
    Z = Z.copy()
    dA, _, _ = linear_backward(DLOGITS_HAND, A, W2_HAND)
    t = trace_locals(relu_backward, dA, positive)
    f = lambda: float((relu_forward(Z)[0] * dA).sum())
    return ExampleResult([steps_table(t, [("Arrives", "dA"), ("Where Z was positive", "positive"), ("Passed on", "dZ")]),
                          gradcheck_table([("dZ", t.result, numerical_grad(f, Z))])],
                         SOURCE + ": dA is what the output layer's backward returned", data=dict(config=SIZES))
