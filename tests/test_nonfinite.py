"""An example that shows inf or NaN fails `check` at its content line, naming the example
function, unless it declares `shows_nonfinite: true`; a declaration with nothing to show is
a `check` problem too (site_builder/run/nonfinite.py)."""
import pytest

from site_builder.build import build
from site_builder.base.problems import BuildFailed
from site_builder.run.examples import gradcheck_table, matrix, steps_table, table
from site_builder.run.nonfinite import nonfinite_shown
from tests.conftest import mini_repo, shared_cache
from tests.test_build_errors import PAGE, SITE

EXAMPLE = """import numpy as np
from site_builder.run.examples import ExampleResult, table


def compare():
    return ExampleResult([table(["error"], [["1.0000"]])], "hand-picked vectors")


def overflow():
    with np.errstate(over="ignore"):
        return ExampleResult([table(["row", "exp"], [["big", np.exp(1000.0)]])], "a hand-picked logit")
"""


@pytest.fixture
def mini(tmp_path):
    return mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE})


def nonfinite_problems(root, page):
    (root / "content/pages/mini.md").write_text(page)
    try:
        build(root, root / "site", strict=True, cache_dir=shared_cache())
    except BuildFailed as e:
        return [str(p) for p in e.problems if "non-finite" in str(p) or "shows_nonfinite" in str(p)]
    return []


def test_an_example_showing_inf_fails_check_at_its_run_line(mini):
    page = PAGE.replace('run: "mini:compare"', 'run: "mini:overflow"')
    lines = nonfinite_problems(mini, page)
    line = next(i for i, text in enumerate(page.splitlines(), 1) if "mini:overflow" in text)
    assert lines == [f"content/pages/mini.md:{line}: example mini:overflow (content/examples/mini.py:9) shows a "
                     f"non-finite value: inf in the table's row 'big' (fix its inputs, or add 'shows_nonfinite: true' "
                     f"to the example if it shows them on purpose (and say why in its caption))"]


def test_a_declared_example_passes_and_a_needless_declaration_does_not(mini):
    declared = PAGE.replace('run: "mini:compare"}', 'run: "mini:overflow", shows_nonfinite: true}')
    assert nonfinite_problems(mini, declared) == []
    needless = PAGE.replace('run: "mini:compare"}', 'run: "mini:compare", shows_nonfinite: true}')
    [line] = nonfinite_problems(mini, needless)
    assert "declares shows_nonfinite, but shows no inf or NaN" in line


def test_only_values_count_never_code_or_labels():
    import numpy as np
    assert nonfinite_shown([matrix("S", [[0.0, -np.inf]])]) == "-inf in the matrix S's row 0"
    assert nonfinite_shown([gradcheck_table([("dx", np.ones(2), np.array([1.0, np.nan]))])]).startswith("nan in")
    code_only = dict(kind="steps", rows=[dict(label="Hide with -inf", code="S = np.where(m, S, -np.inf)", value="[0.0000]")])
    assert nonfinite_shown([code_only, table(["information"], [["finite"]])]) is None
