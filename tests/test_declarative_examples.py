"""Declarative examples (site_builder/run/declarative.py): a step table and a gradient check
from a few lines of a page's front matter, run, cached and rendered like a Python example, and
a mistake in them one line at the page's file and line."""
import re

import numpy as np
import pytest

from model.ops import relu_backward, relu_forward
from site_builder.build import build
from site_builder.base.problems import BuildFailed
from site_builder.run.examples import fmt_plain
from tests.conftest import mini_repo, shared_cache
from tests.test_build_errors import SITE

PAGE = """---
title: Mini
sections:
  - id: relu-back
    title: ReLU backward
    function: model.ops.relu_backward
    what: The gradient through ReLU.
    why: Training needs it.
    math:
      - eq: pass
        name: Pass where positive
        tex: 'dZ = dA \\odot \\mathbb{1}[Z > 0]'
        refs:
          - {role: inline, snippet: 'return dA * positive'}
    examples:
      - title: One row back
        steps: [{Arrives: dA}, {Where Z was positive: positive}, {Passed back: return}]
        inputs: {Z: [[1.0, -2.0, 0.5]], dA: [[0.3, 0.4, 0.5]]}
      - title: Checked numerically
        gradcheck: true
        inputs: {Z: [[1.0, -2.0, 0.5]], dA: [[0.3, 0.4, 0.5]]}
    shapes:
      - {title: Shapes, run: One row back, names: [dA, positive, return]}
---
ReLU.
"""


@pytest.fixture
def mini(tmp_path):
    return mini_repo(tmp_path, SITE, PAGE, {})


def cells(html, table_class):
    table = html[html.index(f'class="{table_class}'):]
    table = table[:table.index("</table>")]
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", table, re.S)]


def test_a_step_table_and_a_gradient_check_from_three_lines_each(mini):
    build(mini, mini / "site", strict=False, cache_dir=shared_cache())
    html = (mini / "site" / "mini.html").read_text()
    Z, dA = np.array([[1.0, -2.0, 0.5]]), np.array([[0.3, 0.4, 0.5]])
    _, positive = relu_forward(Z)
    steps = cells(html, "steps")
    for value in (fmt_plain(dA), fmt_plain(positive), fmt_plain(relu_backward(dA, positive))):
        assert value in steps, (value, steps)
    assert "Where Z was positive" in html and "Passed back" in html
    assert "relu_backward (its cache from relu_forward) with Z = [[1.0, -2.0, 0.5]], dA = [[0.3, 0.4, 0.5]]" in html
    assert "central differences of sum(relu_forward(...)[0] * dA)" in html
    assert cells(html, "shape-table") == ["dA", "(1, 3)", "(1, 3)", "positive", "(1, 3)", "(1, 3)", "out", "(1, 3)", "(1, 3)"]
    gaps = re.findall(r"\d\.\de-\d\d", html[html.index("Checked numerically"):])
    assert gaps and all(float(g) < 1e-8 for g in gaps)


@pytest.mark.parametrize("edit, needle", [
    ("inputs: {Z: [[1.0, -2.0, 0.5]], dA: [[0.3, 0.4, 0.5]]}\n      - title: Checked",
     "declarative example: 'Z: ZZ_TYPO' names nothing in tests/fixtures.py"),
    ("steps: [{Arrives: dA}, {Where Z was positive: positive}, {Passed back: return}]",
     "a step is a local's name or {label: name}"),
])
def test_a_mistake_is_one_line_at_the_example(mini, edit, needle):
    page = PAGE
    if edit.startswith("inputs"):
        page = page.replace(edit, edit.replace("Z: [[1.0, -2.0, 0.5]]", "Z: ZZ_TYPO"), 1)
        line = page.splitlines().index("        steps: [{Arrives: dA}, {Where Z was positive: positive}, {Passed back: return}]") + 1
    else:
        page = page.replace(edit, "steps: [{Arrives: dA}, [positive]]")
        line = page.splitlines().index("        steps: [{Arrives: dA}, [positive]]") + 1
    (mini / "content/pages/mini.md").write_text(page)
    with pytest.raises(BuildFailed) as e:
        build(mini, mini / "site", strict=True, cache_dir=shared_cache())
    [problem] = [str(p) for p in e.value.problems if needle in str(p)]
    assert problem.startswith(f"content/pages/mini.md:{line}: ")


ONE_ROW = "inputs: {Z: [[1.0, -2.0, 0.5]], dA: [[0.3, 0.4, 0.5]]}\n      - title: Checked"


@pytest.mark.parametrize("old, new, needle", [
    ("{Where Z was positive: positive}", "{Where Z was positive: positve}",
     "step 'Where Z was positive' names 'positve', no local of relu_backward (did you mean 'positive'? "
     "a step may name dA, positive, return)"),
    ("{Passed back: return}", "{Passed back: [dA, 3]}",
     "step 'Passed back' asks for change 3 of 'dA', which relu_backward changes 0 time(s)"),
    (ONE_ROW, ONE_ROW.replace("dA:", "dAA:"),
     "'dAA' in the inputs is no parameter of relu_backward or relu_forward (did you mean 'dA'? "
     "the inputs may name relu_backward's dA, positive; relu_forward's Z)"),
    (ONE_ROW, ONE_ROW.replace("Z: [[1.0, -2.0, 0.5]]", "Z: ffn_worked_parms"),
     "'Z: ffn_worked_parms' names nothing in tests/fixtures.py (did you mean 'ffn_worked_params'?)"),
    (ONE_ROW, ONE_ROW.replace("[[0.3, 0.4, 0.5]]", "[[0.3, 0.4]]"),
     "declarative example: model.ops.relu_backward raised ValueError: operands could not be broadcast"),
])
def test_a_typo_in_steps_or_inputs_is_named_at_the_content_line(mini, old, new, needle):
    """One problem at the example's line naming the bad name, a close spelling and the names allowed:
    never a line inside the builder, never "run the example function by hand" (there is none)."""
    page = PAGE.replace(old, new, 1)
    assert page != PAGE
    (mini / "content/pages/mini.md").write_text(page)
    with pytest.raises(BuildFailed) as e:
        build(mini, mini / "site", strict=True, cache_dir=shared_cache())
    [problem] = [str(p) for p in e.value.problems if "declarative example" in str(p)]
    line = page.splitlines().index("        steps: [{Arrives: dA}, {Where Z was positive: positive}, {Passed back: return}]"
                                   .replace(old, new)) + 1
    assert problem.startswith(f"content/pages/mini.md:{line}: "), problem
    assert needle in problem, problem
    assert "site_builder/" not in problem and "by hand" not in problem, problem
