"""The authoring trials of issue 26: four functions of different kinds, documented as a new
contributor would, each on a copy of the repository.

Each trial adds a forward/backward pair in a module of its own (model/trial_NAME.py) with its
tests in a file of its own (tests/test_trial_NAME.py): no other file is edited, so nothing
depends on another file's text (the GELU trial before these matched an import line of
tests/test_ops.py, and broke when a contributor added an op there). It runs `new-concept`
(after `new-page` for a new page), then applies only what an author types: prose, TeX and
symbol meanings, one line for each TODO the scaffold left (FILL), in order, and a new page's
summary and introduction (INTRO). It counts the lines that differ from the scaffold's output
and asserts at most 2 per line of model code, that `check --page` passes, and that the page's
example shows finite values and its scalars as scalars.

  rms_norm         a scalar parameter (eps, which its tests pass as a number), on an existing page
  dropout          a random generator and a probability, on a new page
  softmax_entropy  two outputs (the softmax and each row's entropy), on a new page
  one_hot          integer ids and a size named like an axis (V), on a new page

Cheap on purpose: one mini repository (tests/conftest.py `mini_repo`: the templates linked; the
builder, package and tests copied, since a traced file's path is read relative to the
builder's root) shared by the four, so the shape probes run once; each trial checks only its
own page (`check --page`: gathered and checked, nothing rendered or written).
`python3 -m pytest tests/test_authoring_trial.py -s` prints each trial's counts.
"""
import difflib
import json
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, mini_repo

# The code each trial adds: a module of its own in the package, and a test file of its own (no
# other file is edited, so no other file's text is matched).
MODEL = {
    "rms_norm": '''import numpy as np

from model.ops import column_sums, row_sums


def rms_norm_forward(X, g, eps):
    """RMSNorm (Zhang and Sennrich 2019): divide each row by its root mean square, then scale by g."""
    d = X.shape[-1]
    ms = row_sums(X * X) / d                  # (..., 1): the mean square of each row
    s = 1.0 / np.sqrt(ms + eps)
    Xhat = X * s
    Y = Xhat * g
    return Y, (Xhat, s, g)


def rms_norm_backward(dY, cache):
    """dX = s * (dXhat - Xhat * mean(dXhat * Xhat)); dg sums dY * Xhat over every leading axis."""
    Xhat, s, g = cache
    d = dY.shape[-1]
    dg = column_sums(dY * Xhat)
    dXhat = dY * g
    dX = s * (dXhat - Xhat * row_sums(dXhat * Xhat) / d)
    return dX, dg
''',
    "dropout": '''import numpy as np


def dropout_forward(x, p, rng):
    """Inverted dropout: zero each entry with probability p, scale the others by 1 / (1 - p)."""
    keep = rng.random(x.shape) >= p
    scale = 1.0 / (1.0 - p)
    y = x * keep * scale
    return y, (keep, scale)


def dropout_backward(dy, cache):
    """The gradient flows through the kept entries, scaled as they were."""
    keep, scale = cache
    return dy * keep * scale
''',
    "softmax_entropy": '''import numpy as np

from model.ops import row_max, row_sums


def softmax_entropy_forward(S):
    """The softmax of each row and its entropy in nats: two outputs of one pass."""
    E = np.exp(S - row_max(S))
    P = E / row_sums(E)
    logP = np.log(P)
    H = -(P * logP).sum(axis=-1)
    return P, H, (P, logP)


def softmax_entropy_backward(dP, dH, cache):
    """dH/dP = -(log P + 1), then the softmax Jacobian: dS = P * (g - sum(g * P))."""
    P, logP = cache
    g = dP - dH[..., None] * (logP + 1.0)
    dS = P * (g - row_sums(g * P))
    return dS
''',
    "one_hot": '''import numpy as np


def one_hot_forward(ids, V):
    """Row t is all zeros but a one at column ids[t]: integer ids in, a float matrix out."""
    Y = np.zeros((*ids.shape, V))
    np.put_along_axis(Y, ids[..., None], 1.0, axis=-1)
    return Y, ids


def one_hot_backward(dY, ids):
    """The ids are integers: no gradient reaches them. The gradient of each row's one is dY[t, ids[t]]."""
    picked = np.take_along_axis(dY, ids[..., None], axis=-1)[..., 0]
    return picked
''',
}
TESTS = {
    "rms_norm": '''"""The tests a contributor writes with model/trial_rms_norm.py (tests/test_authoring_trial.py)."""
import numpy as np

from model.gradcheck import numerical_grad
from model.trial_rms_norm import rms_norm_backward, rms_norm_forward


def test_rms_norm_rows_have_unit_root_mean_square():
    X = np.random.default_rng(0).standard_normal((4, 6))
    Y, _ = rms_norm_forward(X, np.ones(6), 1e-8)
    np.testing.assert_allclose(np.sqrt(np.mean(Y ** 2, axis=-1)), 1.0, atol=1e-6)


def test_rms_norm_backward_matches_central_differences():
    rng = np.random.default_rng(1)
    X, g, dY = rng.standard_normal((3, 5)), rng.standard_normal(5), rng.standard_normal((3, 5))
    _, cache = rms_norm_forward(X, g, 1e-5)
    dX, dg = rms_norm_backward(dY, cache)
    numeric = numerical_grad(lambda: np.sum(rms_norm_forward(X, g, 1e-5)[0] * dY), X)
    np.testing.assert_allclose(dX, numeric, atol=1e-7)
''',
    "dropout": '''"""The tests a contributor writes with model/trial_dropout.py (tests/test_authoring_trial.py)."""
import numpy as np

from model.trial_dropout import dropout_backward, dropout_forward


def test_dropout_keeps_the_mean():
    y, _ = dropout_forward(np.ones((200, 50)), 0.25, np.random.default_rng(0))
    assert abs(y.mean() - 1.0) < 0.02


def test_dropout_backward_passes_the_gradient_where_kept():
    x = np.random.default_rng(3).standard_normal((4, 5))
    y, cache = dropout_forward(x, 0.5, np.random.default_rng(0))
    dx = dropout_backward(np.ones_like(x), cache)
    np.testing.assert_array_equal(dx != 0, y != 0)
''',
    "softmax_entropy": '''"""The tests a contributor writes with model/trial_softmax_entropy.py (tests/test_authoring_trial.py)."""
import numpy as np

from model.gradcheck import numerical_grad
from model.trial_softmax_entropy import softmax_entropy_backward, softmax_entropy_forward


def test_softmax_entropy_of_a_uniform_row_is_log_n():
    P, H, _ = softmax_entropy_forward(np.zeros((2, 4)))
    np.testing.assert_allclose(H, np.log(4))


def test_softmax_entropy_backward_matches_central_differences():
    rng = np.random.default_rng(2)
    S, dP, dH = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    _, _, cache = softmax_entropy_forward(S)
    dS = softmax_entropy_backward(dP, dH, cache)

    def f():
        P, H, _ = softmax_entropy_forward(S)
        return np.sum(P * dP) + np.sum(H * dH)
    np.testing.assert_allclose(dS, numerical_grad(f, S), atol=1e-7)
''',
    "one_hot": '''"""The tests a contributor writes with model/trial_one_hot.py (tests/test_authoring_trial.py)."""
import numpy as np

from model.trial_one_hot import one_hot_backward, one_hot_forward


def test_one_hot_has_a_single_one_per_row():
    Y, _ = one_hot_forward(np.array([2, 0, 1]), 4)
    np.testing.assert_array_equal(Y.argmax(axis=-1), [2, 0, 1])


def test_one_hot_backward_picks_the_gradient_at_each_id():
    dY = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(one_hot_backward(dY, np.array([2, 0, 1])), [2.0, 4.0, 9.0])
''',
}

SITE = "title: Trials\nrepo_url: https://github.com/OWNER/REPO\nnav: [mini]\n"
# The existing page the scalar trial adds to: one section, as a page has before a contributor comes.
PAGE = """---
title: Mini
summary: A page with one section.
sections:
  - type: text
    id: mini-about
    title: About this page
    body: A page a contributor finds with one section, and adds to.
---
Intro.
"""

# What the author types: one answer per TODO line of the scaffold's output, in order (the TODO,
# or its quoted 'TODO: ...' hint, is replaced by the answer).
FILL = {
    "rms_norm": [
        "RMSNorm", "'Divides each row by its root mean square, then scales it by a learned $g$.'",
        "LayerNorm without the mean, one reduction fewer; many models train as well with it.",
        "Mean square", "Inverse root", "Normalise", "Scale",
        "Gradient of the gain", "Gradient at the normalised row", "Gradient at the input",
        "The row width", "The input rows", "Each row's mean square", "Keeps the root away from zero",
        "One over each row's root mean square", "The normalised rows", "The learned gain",
        "The output", "The gradient arriving at the output", "The gain's gradient",
        "The gradient at the normalised rows", "The gradient at the input",
        "Two rows of four", "Two rows, evenly spaced from $-1.5$ to $1.5$, and a gain from $0.5$ to $1.5$.",
        "Any number of rows",
    ],
    "dropout": [
        "Dropout", "'Zeroes each entry with probability $p$ and scales the rest by $1/(1-p)$.'",
        "It keeps units from relying on each other, and the scale keeps the expected output equal to the input.",
        "Keep mask", "Scale", "Output", "Backward",
        "The probability of dropping an entry", "The input", "Where an entry is kept", "The scale of a kept entry",
        "The output", "The gradient arriving at the output", "The gradient at the input",
        "Two rows of four", "Evenly spaced inputs, $p = 1/2$, and a generator seeded at 0.", "Any shape",
    ],
    "softmax_entropy": [
        "Softmax and entropy", "'The softmax of each row, and the entropy of that distribution in nats.'",
        "The entropy of the attention or output distribution is a common regulariser.",
        "Shifted exponentials", "Softmax", "Log-probabilities", "Entropy", "Total gradient at P", "Gradient at the scores",
        "The scores", "The exponentials shifted by the row maximum", "The probabilities", "Their logarithms",
        "The entropy of each row", "The gradient arriving at P", "The gradient arriving at H",
        "The total gradient at P", "The gradient at the scores",
        "Two rows of four", "Evenly spaced scores from $-1.5$ to $1.5$.", "Rows of any length",
    ],
    "one_hot": [
        "One-hot", "'Turns integer ids into rows of zeros with a one at each id.'",
        "A target distribution for the loss is the one-hot row of the target id.",
        "One-hot rows", r"'Y_{t,k} = [k = \mathrm{ids}_t]'", "Picked gradient",
        r"'\mathrm{picked}_t = dY_{t, \mathrm{ids}_t}'",
        "The number of columns", "The ids", "The one-hot rows", "The gradient arriving at the rows",
        "The gradient of each row's one", "Two ids", "The ids 0 and 1, in three columns.", "Sequence by columns",
    ],
}
INTRO = {"summary: TODO": "summary: {title}, forward and backward.",
         "TODO: the page's introduction": "How {title} works, one line of code at a time."}
TRIALS = [  # (name, page, a new page's title or None, the section it follows)
    ("rms_norm", "mini", None, "mini-about"),
    ("dropout", "dropout", "Dropout", None),
    ("softmax_entropy", "softmax-entropy", "Softmax and entropy", None),
    ("one_hot", "one-hot", "One-hot", None),
]
TODO_VALUE = re.compile(r"'TODO(?:[^']|'')*'|TODO")


def run(root, *args):
    return subprocess.run([sys.executable, "build_site.py", *args], cwd=root, capture_output=True, text=True, timeout=300)


def added_lines(before, after):
    """Lines of `after` that are not lines of `before` (the lines someone typed)."""
    return [line for tag, line in ((x[0], x[2:]) for x in difflib.ndiff(before.splitlines(), after.splitlines()))
            if tag == "+"]


def model_lines(name):
    """The non-blank lines of the trial's forward and backward."""
    blocks = re.split(r"\n(?=def )", MODEL[name])
    return sum(len([x for x in b.splitlines() if x.strip()]) for b in blocks
               if re.match(rf"def {name}_(forward|backward)\(", b))


def fill(text, answers, title=None):
    """The page after the author's typing: each TODO replaced by the next answer, in order."""
    lines, answers = text.split("\n"), list(answers)
    for i, line in enumerate(lines):
        intro = next((new for old, new in INTRO.items() if title and line.startswith(old)), None)
        if intro:
            lines[i] = intro.format(title=title)
        elif TODO_VALUE.search(line):
            lines[i] = TODO_VALUE.sub(lambda m: answers.pop(0), line, count=1)
    assert not answers, f"answers left over: {answers}"
    return "\n".join(lines)


@pytest.fixture(scope="module")
def trial_repo(tmp_path_factory):
    root = mini_repo(tmp_path_factory.mktemp("trials"), SITE, PAGE, {}, copy=("model", "tests", "site_builder"))
    shutil.copy(ROOT / "content" / "page_test.py.in", root / "content" / "page_test.py.in")
    for name in MODEL:
        (root / "model" / f"trial_{name}.py").write_text(MODEL[name], encoding="utf-8")
        (root / "tests" / f"test_trial_{name}.py").write_text(TESTS[name], encoding="utf-8")
    return root


def example_values(root, run_name):
    """Every value the example's tables show, as text, run in the repository copy."""
    code = ("import json; from pathlib import Path; from site_builder.run.examples import load_example; "
            f"r = load_example(Path('.'), {run_name!r})(); "
            "print(json.dumps([row['value'] for b in r.blocks for row in b.get('rows', [])]))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name, page, title, after", TRIALS, ids=[t[0] for t in TRIALS])
def test_a_new_function_takes_prose_tex_and_meanings_only(trial_repo, name, page, title, after):
    root, function = trial_repo, f"model.trial_{name}.{name}_forward"
    page_file, example_file = root / "content" / "pages" / f"{page}.md", root / "content" / "examples" / f"{page}.py"
    if title:
        missing = run(root, "new-concept", function, "--page", page)
        assert missing.returncode == 2 and f"new-page {page} --title" in missing.stderr, missing.stderr
        started = run(root, "new-page", page, "--title", title)
        assert started.returncode == 0, started.stderr
        assert (root / "tests" / f"test_page_{page.replace('-', '_')}.py").is_file()
    page_0 = page_file.read_text(encoding="utf-8")
    example_0 = example_file.read_text(encoding="utf-8") if example_file.exists() else ""
    made = run(root, "new-concept", function, "--page", page, *(["--after", after] if after else []))
    assert made.returncode == 0, made.stderr
    page_1, example_1 = page_file.read_text(encoding="utf-8"), example_file.read_text(encoding="utf-8")
    assert "noqa" not in example_1 and example_1.index(f"import {name}_forward") < example_1.index("def ")

    unfinished = run(root, "check", "--page", page)
    assert unfinished.returncode == 1
    todo_lines = [line for line in page_1.splitlines() if TODO_VALUE.search(line)]
    assert unfinished.stderr.count("is still TODO") == len(todo_lines), unfinished.stderr   # every blank named

    page_file.write_text(fill(page_1, FILL[name], title), encoding="utf-8")
    checked = run(root, "check", "--page", page)
    assert checked.returncode == 0, checked.stderr
    assert "no problem" in checked.stdout

    values = example_values(root, f"{page}:{name}_worked")
    assert values and not any(re.search(r"\b(inf|nan)\b", v, re.I) for v in values), values
    section = page_file.read_text(encoding="utf-8")
    scalars = {"rms_norm": ["eps"], "dropout": ["p"], "one_hot": ["V"]}.get(name, [])
    for scalar in scalars:         # a scalar is declared a scalar: a number (or a size) in the probe, never a shape
        assert re.search(rf"probe: {{[^}}]*\b{scalar}: [\w.'-]+[,}}]", section), section
        assert not re.search(rf"\b{scalar}: '\(", section), section

    lines = model_lines(name)
    typed_by_hand = len(added_lines(page_0, page_file.read_text(encoding="utf-8"))) \
        + len(added_lines(example_0, example_file.read_text(encoding="utf-8")))
    authored = len(added_lines(page_1, page_file.read_text(encoding="utf-8"))) \
        + len(added_lines(example_1, example_file.read_text(encoding="utf-8")))
    print(f"\n{name}: model lines {lines}; content lines by hand: {typed_by_hand} "
          f"({typed_by_hand / lines:.2f} per model line); authored after new-concept: {authored} "
          f"({authored / lines:.2f} per model line)")
    assert authored <= 2 * lines
