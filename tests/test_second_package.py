"""The second package, built at full depth: the MLP classifier of tests/second_package/,
copied beside the builder (tests/second_project.py), checked with `build_site.py check` and
built with `--out`, once for the module. Each test asserts one part a page should have:
equations linked to lines of mlp/, declared shapes shown and checked (and a wrong one failing
`check` at its content line), a worked example, a gradient check, called-by and tested-by,
the parameter table, source pages, search; and that no page names the transformer.

The copy's commands run with this repository out of sight (HIDE_REPOSITORY): an editable
install of it (`pip install -e .`, as .ci/run does) lets `import model` find the transformer
from any folder, and the copy must build from its own mlp/ alone.

Expected numbers come from the copy's own code, run in the copy (`in_project`): the tests
type no line number, shape or count.

"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import concept_section
from tests.fixture_project import seed_build_cache
from tests.second_project import make_second_project
from tests.test_search import fragments

ROOT = Path(__file__).resolve().parent.parent
BUILD_TIMEOUT = 600
# Run `script args` (a file of the copy), `-m module args` or `-c code` with no finder of an
# editable install and no path entry of this repository: `import model` must fail in the copy.
HIDE_REPOSITORY = """
import os, runpy, sys
repository = os.path.realpath(sys.argv.pop(1))
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != repository]
sys.argv.pop(0)
if sys.argv[0] == "-m":
    sys.argv.pop(0)
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
elif sys.argv[0] == "-c":
    exec(compile(sys.argv[1], "<in the copy>", "exec"), {"__name__": "__main__"})
else:
    runpy.run_path(sys.argv[0], run_name="__main__")
"""
# What a page of the MLP's site must not say: the transformer's names, and (transformer_words)
# the words its site.yaml gives the pages.
NAMES = ("ModelConfig", "TrainConfig", "model/", "vocab", "corpus", "Shakespeare", "transformer")


def transformer_words():
    """NAMES, and the words the transformer's site.yaml gives its pages (labels:, and the project
    block's landing: and example_headings:) where they are not the builder's defaults, each
    cut at its {placeholders}."""
    from site_builder.gather.project import EXAMPLE_HEADINGS, LANDING, load_project
    from site_builder.gather.content import LABELS, load_content
    transformer = load_project(ROOT)
    said = [(transformer.landing, LANDING), (transformer.example_headings, EXAMPLE_HEADINGS),
            (load_content(ROOT, []).labels, LABELS)]
    own = [text for given, default in said for key, text in given.items() if text != default[key]]
    return NAMES + tuple(part.strip() for text in own for part in re.split(r"\{\w+\}", text) if len(part.strip()) > 12)


def in_project(project: Path, *args, timeout=BUILD_TIMEOUT):
    """`python3 args...` in the copy, the repository hidden; the CompletedProcess."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", HIDE_REPOSITORY, str(ROOT), *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=timeout)


def run_in_copy(project: Path, code: str):
    """What `code` (Python that prints one JSON value), run in the copy, prints."""
    done = in_project(project, "-c", code, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def builder(project: Path, *args):
    done = in_project(project, "build_site.py", *args)
    return done.returncode, done.stdout + done.stderr


def text_of(html: str) -> str:
    """A page's words: no tags, scripts or math markup."""
    html = re.sub(r"<script.*?</script>|<style.*?</style>|<annotation.*?</annotation>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def line_of(path: Path, text: str) -> int:
    """The one line of `path` that holds `text` (1-based)."""
    found = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line]
    assert len(found) == 1, f"{text!r} is on lines {found} of {path}"
    return found[0]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return make_second_project(tmp_path_factory.mktemp("second") / "project")


@pytest.fixture(scope="module")
def checked(project):
    status, output = builder(project, "check")
    assert status == 0, output
    return output


@pytest.fixture(scope="module")
def site(project, checked):
    out = project.parent / "site"
    status, output = builder(project, "--out", str(out))
    assert status == 0, output
    return out


def page(site, slug):
    return (site / f"{slug}.html").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------ the package

def test_the_package_s_own_tests_pass(project):
    """The gradient checks the pages cite are real tests, and they pass."""
    done = in_project(project, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "tests")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b\d+ passed\b", done.stdout) and "failed" not in done.stdout, done.stdout


def test_check_passes_with_nothing_to_report(checked):
    assert "warning" not in checked, checked


# ------------------------------------------------------------------------------ the parts of a page

def test_equations_link_to_the_lines_of_mlp(site, project):
    ops = project / "mlp" / "ops.py"
    section = concept_section(page(site, "layers"), "linear-forward")
    n = line_of(ops, "Y = X @ W + b")
    assert f'href="source/mlp/ops.py.html#L{n}">Written inline: ops.py:{n}</a>' in section
    references = json.loads((site / "references.json").read_text())["references"]
    inline = {(r["file"], r["start"]) for r in references if r["role"] == "inline" and r["concept"] == "linear-forward"}
    assert inline == {("mlp/ops.py", n)}
    tests = project / "tests" / "test_ops.py"
    t = line_of(tests, "np.testing.assert_allclose(Yl, np.einsum(")
    assert f'href="source/tests/test_ops.py.html#L{t}">Tests it: test_ops.py:{t}</a>' in section


def test_declared_shapes_are_shown_and_checked(site):
    section = concept_section(page(site, "layers"), "linear-forward")
    symbols = section[section.index('class="symbols"'):section.index("</table>", section.index('class="symbols"'))]
    for shape in ("(B, D)", "(D, H)", "(H,)", "(B, H)"):
        assert re.search(re.escape(shape) + r' <span class="checked"[^>]*>✓</span>', symbols), shape
    # a shape only an example's run checks (make_blobs is no probe's), sized by the config's axes
    data = concept_section(page(site, "network"), "mlp-data")
    assert re.search(r'\(C, D\) <span class="checked"[^>]*>✓</span>', data)
    # the hooks' probe (loss_and_grads) reaches a function that declares no `probe:` of its own
    loss = concept_section(page(site, "loss"), "softmax-ce-forward")
    assert re.search(r'\(B, C\) <span class="checked"[^>]* title="checked against a probe run of the code">✓</span>', loss)


def checked_copy(project, tmp_path, edits):
    """A copy of the project with `edits` ({file of the copy: [(old, new)]}), its cache
    seeded from `project`'s; the copy, and (status, output) of `check` in it."""
    copy = make_second_project(tmp_path / "edited")
    seed_build_cache(copy, project / ".build_cache")
    for rel, pairs in edits.items():
        path = copy / rel
        text = path.read_text(encoding="utf-8")
        for old, new in pairs:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    return copy, builder(copy, "check")


def test_a_wrong_declared_shape_fails_check_at_its_line(project, checked, tmp_path):
    row = """{tex: 'W', meaning: "The weights: one column per unit of the layer", shape: '(D, H)'}"""
    wrong = row.replace("(D, H)", "(H, D)")
    copy, (status, output) = checked_copy(project, tmp_path, {"content/pages/layers.md": [(row, wrong)]})
    n = line_of(copy / "content" / "pages" / "layers.md", wrong)
    assert status == 1, output
    assert re.search(rf"^content/pages/layers\.md:{n}: declared \(H, D\) but the code gives \(D, H\)", output, re.M), \
        output


def test_a_shape_only_the_config_can_tell_fails_check(project, checked, tmp_path):
    """The centres (C, D) and the points (B, D) of make_blobs declared (D, C) and (B, C): the
    rows agree with each other, so only the config's axes (n_in is D, n_classes is C) tell
    that they are wrong."""
    edits = [("code: centres, shape: '(C, D)'}", "code: centres, shape: '(D, C)'}"),
             ("code: X, shape: '(B, D)'}", "code: X, shape: '(B, C)'}")]
    copy, (status, output) = checked_copy(project, tmp_path, {"content/pages/network.md": edits})
    assert status == 1, output
    network = copy / "content" / "pages" / "network.md"
    for _, new in edits:
        assert re.search(rf"^content/pages/network\.md:{line_of(network, new)}: declared", output, re.M), output


def test_a_public_function_no_page_documents_fails_check(project, checked, tmp_path):
    """The strict check of undocumented functions looks at the project's package."""
    before = "def softmax_cross_entropy_backward(c):"
    added = 'def leaky_relu_forward(Z):\n    """Not on any page."""\n    return Z\n\n\n'
    copy, (status, output) = checked_copy(project, tmp_path, {"mlp/ops.py": [(before, added + before)]})
    n = line_of(copy / "mlp" / "ops.py", "def leaky_relu_forward(Z):")
    assert status == 1, output
    assert re.search(rf"^mlp/ops\.py:{n}: public function mlp\.ops\.leaky_relu_forward is cited by no page", output,
                     re.M), output


def steps(section):
    """{step label: the value printed} of the first steps table of a section."""
    table = section[re.search(r'<table class="steps( cards)?">', section).start():]
    table = table[:table.index("</table>")]
    return dict(re.findall(r"<tr[^>]*><td[^>]*>([^<]+)</td><td[^>]*>.*?</td><td[^>]*><code>([^<]+)</code></td></tr>", table))


def test_the_worked_example_prints_what_the_code_computes(site, project):
    shown = steps(concept_section(page(site, "layers"), "linear-forward"))
    X, W, b, Y = (np.array(json.loads(shown[label])) for label in ("Input", "Weights", "Bias", "X W + b"))
    np.testing.assert_allclose(Y, X @ W + b, atol=5e-5)         # the page prints 4 decimals
    expected = run_in_copy(project, "import json\nfrom content.examples.layers import X_HAND, W1_HAND, B1_HAND\n"
                                    "print(json.dumps((X_HAND @ W1_HAND + B1_HAND).tolist()))")
    np.testing.assert_allclose(Y, expected, atol=5e-5)


def parameter_shapes(project):
    """{name: shape} of what init_params returns at the default config, run in the copy."""
    return run_in_copy(project, "import json, numpy as np\nfrom mlp.config import MLPConfig\n"
                                "from mlp.model import init_params\n"
                                "params = init_params(MLPConfig(), np.random.default_rng(0))\n"
                                "print(json.dumps({k: v.shape for k, v in params.items()}))")


def test_the_gradient_check_covers_every_parameter(site, project):
    section = concept_section(page(site, "network"), "mlp-backward")
    table = section[section.index('<table class="gradcheck cards">'):]
    rows = re.findall(r'<tr><td data-label="Gradient"><code>grads\[&#39;(\w+)&#39;\]</code></td>.*?'
                      r'<td data-label="Largest gap"><code>([-+.e\d]+)</code></td></tr>',
                      table[:table.index("</table>")])
    assert [name for name, _ in rows] == list(parameter_shapes(project))
    assert all(float(gap) < 1e-6 for _, gap in rows), rows


def used(section, term):
    """The <dd> of `term` ("Called by", "Tested by") under a section's "Where is it used?"."""
    start = section.index(f"<dt>{term}</dt>")
    return section[start:section.index("</dd>", start)]


def test_called_by_and_tested_by(site):
    section = concept_section(page(site, "layers"), "linear-forward")
    called_by, tested_by = used(section, "Called by"), used(section, "Tested by")
    assert '<a href="network.html#mlp-forward">model.forward</a>' in called_by
    assert "test_ops.test_linear_forward_is_x_w_plus_b" in tested_by
    assert "test_ops.test_linear_backward_matches_central_differences" in tested_by


def test_the_parameter_table_counts_what_init_params_returns(site, project):
    shapes = parameter_shapes(project)
    html = page(site, "network")
    table = html[html.index('<section id="params">'):]
    table = table[:table.index("</table>")]
    # name, the shape at the config, the count under the symbolic count ("D × H")
    rows = re.findall(r"<tr><td[^>]*><code>(\w+)</code>.*?<td[^>]*><code>\(([\d, ]+)\)</code></td>"
                      r"<td[^>]*><code>[^<]*</code><br>(\d+)</td>", table)
    assert [name for name, _, _ in rows] == list(shapes)
    for name, concrete, count in rows:
        assert tuple(int(n) for n in concrete.rstrip(",").split(",")) == tuple(shapes[name])
        assert int(count) == int(np.prod(shapes[name])), name
    total = sum(int(np.prod(s)) for s in shapes.values())
    assert f"<td>Total</td><td>{total}</td>" in page(site, "index"), "the landing page's size"


def test_every_file_of_mlp_has_a_source_page(site, project):
    for path in sorted((project / "mlp").glob("*.py")):
        assert (site / "source" / "mlp" / f"{path.name}.html").is_file(), path.name
    assert (site / "source" / "tests" / "gradcheck.py.html").is_file(), "cited from a caption"


def test_the_site_is_searchable(site):
    texts = fragments(site / "pagefind")
    assert {"/layers.html", "/loss.html", "/network.html", "/source/mlp/ops.py.html"} <= set(texts)
    assert "softmax_cross_entropy_forward" in texts["/loss.html"]


def test_the_landing_page_maps_the_step_the_project_names(site):
    html = page(site, "index")
    assert "train.train_step" in text_of(html)
    assert "MLPConfig(" in html


def test_no_page_names_the_transformer(site):
    words = transformer_words()
    assert len(words) > len(NAMES), "the transformer's site.yaml gives its pages no words of its own"
    for path in sorted(site.rglob("*.html")) + [site / "references.json"]:
        text = text_of(path.read_text(encoding="utf-8"))
        found = [word for word in words if word.lower() in text.lower()]
        assert not found, f"{path.relative_to(site)}: {found}"
