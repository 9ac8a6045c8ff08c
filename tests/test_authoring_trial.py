"""The measured trial of issue 17, on a copy of the repository: add a GELU pair to model/ops.py
with its tests, run `new-concept`, write prose and TeX only, and `check` the page.

Goal: the lines of content an author types (content/, model code and tests excluded) are at
most 2 per line of model code added, and the check passes. The test prints both ratios: what
the section and its example would take typed by hand (every line the scaffold wrote plus the
author's), and what the author types with the scaffold (the lines that differ from its output).

Cheap on purpose: one copy of the sources (no build cache: editing model/ops.py invalidates
every example and the shape probes anyway), and `check --page model`, which gathers and checks
that page (its examples, references, symbols, shapes, TeX) without rendering or writing the
site (about 3 s on the 2-core machine, against 35 s for a cold full check of the copy).
"""
import difflib
import subprocess
import sys
import time

from tests.fixture_project import make_repo_copy

GELU = '''

def gelu_forward(x):
    """GELU, the tanh approximation of x times the normal CDF at x (Hendrycks and Gimpel)."""
    u = np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)
    t = np.tanh(u)
    return 0.5 * x * (1.0 + t), (x, t)


def gelu_backward(dy, cache):
    """The derivative of the tanh form, from the cached input and tanh."""
    x, t = cache
    du = np.sqrt(2.0 / np.pi) * (1.0 + 3 * 0.044715 * x ** 2)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)
'''

GELU_TESTS = '''

def test_gelu_forward_is_close_to_the_erf_form():
    from math import erf
    x = np.linspace(-3.0, 3.0, 13)
    y, _ = gelu_forward(x)
    exact = np.array([0.5 * v * (1.0 + erf(v / np.sqrt(2.0))) for v in x])
    np.testing.assert_allclose(y, exact, atol=1e-3)


def test_gelu_backward_matches_central_differences():
    x = np.linspace(-3.0, 3.0, 13)
    _, cache = gelu_forward(x)
    dx = gelu_backward(np.ones_like(x), cache)
    h = 1e-6
    numeric = (gelu_forward(x + h)[0] - gelu_forward(x - h)[0]) / (2 * h)
    np.testing.assert_allclose(dx, numeric, atol=1e-8)
'''

# What the author writes: each TODO line of the scaffold's output, in order, becomes one line.
FILL = [
    ("    title: TODO", "    title: GELU"),
    ("    name: TODO", "    name: GELU, forward and backward"),
    ("    what: TODO", "    what: '`gelu_forward` scales each entry $x$ by about the chance that a standard normal is below $x$.'"),
    ("    why: TODO", "    why: A smooth alternative to ReLU that lets a small gradient through below 0."),
    ("        name: TODO", "        name: GELU, tanh form"),
    ("        tex: TODO", r"        tex: 'y = \tfrac12\, x\, (1 + t), \quad t = \tanh u, \quad u = \sqrt{2/\pi}\,(x + 0.044715\, x^3)'"),
    ("        name: TODO", "        name: GELU backward"),
    ("        tex: TODO", r"        tex: 'dx = dy \odot \bigl(\tfrac12 (1 + t) + \tfrac12\, x\, (1 - t^2)\, \partial u / \partial x\bigr)'"),
    ("      - {tex: 'x', meaning: TODO, shape: '(T, d)'}", "      - {tex: 'x', meaning: The input, shape: '(T, d)'}"),
    ("      - {tex: 'u', meaning: TODO, shape: '(T, d)'}", "      - {tex: 'u', meaning: The argument of tanh, shape: '(T, d)'}"),
    ("      - {tex: 't', meaning: TODO, shape: '(T, d)'}",
     "      - {tex: 't', meaning: 'tanh of u, cached for the backward pass', shape: '(T, d)'}"),
    ("      - {tex: 'y', meaning: TODO, code: 'return[0]', shape: '(T, d)'}",
     "      - {tex: 'y', meaning: The output, code: 'return[0]', shape: '(T, d)'}"),
    ("      - title: TODO", "      - title: Five inputs from $-2$ to $2$"),
    ("        hand_picked: TODO", "        hand_picked: Five evenly spaced inputs, negative and positive."),
    ("      - title: TODO", "      - title: Element by element, any shape"),
    ("        caption: TODO", "        caption: 'The backward half:'"),
]


def fill(text):
    for old, new in FILL:
        at = text.index(old + "\n")
        text = text[:at] + new + text[at + len(old):]
    return text


def run(root, *args):
    return subprocess.run([sys.executable, "build_site.py", *args], cwd=root, capture_output=True, text=True, timeout=300)


def added_lines(before, after):
    """Lines of `after` that are not lines of `before` (the lines someone typed)."""
    return [line for tag, line in ((x[0], x[2:]) for x in difflib.ndiff(before.splitlines(), after.splitlines()))
            if tag == "+"]


def test_documenting_gelu_takes_prose_and_tex_only(tmp_path):
    t0 = time.perf_counter()
    root = make_repo_copy(tmp_path / "repo")
    ops, tests = root / "model" / "ops.py", root / "tests" / "test_ops.py"
    ops_before = ops.read_text()
    ops.write_text(ops_before.replace("\n\ndef layer_norm_forward(", GELU + "\n\ndef layer_norm_forward(", 1))
    tests.write_text(tests.read_text().replace("embedding_forward, embedding_backward)",
                                               "embedding_forward, embedding_backward, gelu_forward, gelu_backward)", 1)
                     + GELU_TESTS)
    model_lines = [x for x in added_lines(ops_before, ops.read_text()) if x.strip()]
    page, example = root / "content" / "pages" / "model.md", root / "content" / "examples" / "model.py"
    page_0, example_0 = page.read_text(), example.read_text()

    made = run(root, "new-concept", "model.ops.gelu_forward", "--page", "model", "--after", "model-relu")
    assert made.returncode == 0, made.stderr
    assert "wrote content/pages/model.md:" in made.stdout and "model.ops.gelu_backward" in made.stdout
    assert "wrote content/examples/model.py" in made.stdout
    again = run(root, "new-concept", "model.ops.gelu_forward", "--page", "model")
    assert again.returncode == 2 and "documented already" in again.stderr and "nothing was written" in again.stderr
    page_1, example_1 = page.read_text(), example.read_text()
    section = page_1[page_1.index("  - id: model-gelu"):page_1.index("  - id: model-init")]
    assert section.index("model-gelu") > 0 and page_1.index("model-gelu") > page_1.index("  - id: model-relu")
    assert "function: model.ops.gelu_backward" in section                 # the backward pair is listed
    assert "tests.test_ops.test_gelu_forward_is_close_to_the_erf_form" in section   # found via the test index
    assert "snippet: 'np.testing.assert_allclose(y, exact, atol=1e-3)'" in section    # its assertion, not the call

    unfinished = run(root, "check", "--page", "model")
    assert unfinished.returncode == 1
    assert unfinished.stderr.count("is still TODO") == len(FILL)          # every blank named, with its line

    page.write_text(fill(page_1))
    checked = run(root, "check", "--page", "model")
    assert checked.returncode == 0, checked.stderr
    assert "no problem" in checked.stdout

    typed_by_hand = len(added_lines(page_0, page.read_text())) + len(added_lines(example_0, example.read_text()))
    authored = len(added_lines(page_1, page.read_text())) + len(added_lines(example_1, example.read_text()))
    print(f"\nmodel lines added: {len(model_lines)}; content lines by hand: {typed_by_hand} "
          f"({typed_by_hand / len(model_lines):.2f} per model line); authored after new-concept: {authored} "
          f"({authored / len(model_lines):.2f} per model line); trial took {time.perf_counter() - t0:.1f} s")
    assert authored <= 2 * len(model_lines)
