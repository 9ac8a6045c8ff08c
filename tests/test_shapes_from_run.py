"""A shapes block sized from an example's recorded run (`run: module:function`): a function no
probe reaches (one that takes a random generator) still gets its "Tensor shapes" section, each
axis named by the letter of its size (site_builder/run/example_shapes.py run_shape_infos)."""
import html as html_text
import re

import pytest

from site_builder.build import build
from site_builder.base.problems import BuildFailed
from tests.conftest import mini_repo, shared_cache
from tests.test_build_errors import SITE

PAGE = """---
title: Mini
sections:
  - id: batches
    title: Batches
    function: model.data.get_batch
    what: Random windows of ids.
    why: Training reads batches.
    math:
      - eq: window
        name: Window
        tex: 'x_{b} = \\mathrm{ids}[s_b + t], \\quad b < B, t < T'
        refs:
          - {role: inline, snippet: windows}
    symbols:
      - {tex: 'B', meaning: The number of windows, code: batch_size, shape: scalar}
      - {tex: 'T', meaning: The window length, code: seq_len, shape: scalar}
    examples:
      - {title: One batch, run: "mini:batch"}
    shapes:
      - title: One batch
        run: mini:batch
        names: [starts, windows, "return[0]", "return[1]"]
---
Batches.
"""
EXAMPLE = """import numpy as np
from model.data import get_batch
from site_builder.run.examples import ExampleResult, table


def batch():
    x, y = get_batch(np.arange(50), 3, 5, np.random.default_rng(0))
    return ExampleResult([table(["x[0]"], [[str(x[0])]])], "ids 0 to 49, seed 0")


def nothing():
    return ExampleResult([table(["a"], [["b"]])], "nothing")
"""


@pytest.fixture
def mini(tmp_path):
    return mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE})


def shape_rows(html):
    table = html[html.index('class="shape-table"'):]
    table = table[:table.index("</table>")]
    cells = [html_text.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", table, re.S)]
    return [cells[i:i + 3] for i in range(0, len(cells), 3)]


def test_a_function_taking_a_generator_gets_its_shapes_from_the_examples_run(mini):
    build(mini, mini / "site", strict=False, cache_dir=shared_cache())
    html = (mini / "site" / "mini.html").read_text()
    assert shape_rows(html) == [["Array", "Shape", "In the example's run"], ["starts", "(B,)", "(3,)"],
                                ["windows", "(B, 6)", "(3, 6)"], ["out[0]", "(B, T)", "(3, 5)"],
                                ["out[1]", "(B, T)", "(3, 5)"]]
    assert "B = batch_size = 3. T = seq_len = 5." in html


def test_an_example_that_never_calls_the_function_is_one_line_at_run(mini):
    page = PAGE.replace("        run: mini:batch\n", "        run: mini:nothing\n")
    (mini / "content/pages/mini.md").write_text(page)
    with pytest.raises(BuildFailed) as e:
        build(mini, mini / "site", strict=True, cache_dir=shared_cache())
    line = page.splitlines().index("        run: mini:nothing") + 1
    [problem] = [str(p) for p in e.value.problems if "mini:nothing" in str(p)]
    assert problem.startswith(f"content/pages/mini.md:{line}: the example mini:nothing never calls "
                              f"model.data.get_batch, so its run sizes no shapes of it")
