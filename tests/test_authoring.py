"""Issue 17: less to type (defaults), shapes for any function, no silent TeX traps, citations.
Unit tests on the pieces, and one targeted check of a small page (no site build)."""
from pathlib import Path

import pytest

from site_builder.gather.content import tex_traps
from site_builder.render.mathrender import render_tex, space_operators
from site_builder.render.pages.symbol_rows import tex_name
from site_builder.render.html import cite_authors, spoken_list
from site_builder.gather.resolve import ResolveError, resolve_snippet
from site_builder.gather.source_index import build_index
from site_builder.render.symbols import wrap_symbols
from tests.conftest import PROJECT_BLOCK, mini_repo, shared_cache

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def index():
    return build_index(ROOT)


# -- TeX traps --------------------------------------------------------------------------------

def test_yaml_escapes_inside_math_in_double_quotes_are_named_with_their_line():
    text = ('math:\n'
            '  - text: "GELU uses $\\tanh(u)$ and $\\Phi(x)$, and $\\\\beta$ is escaped"\n'
            "  - text: 'single quotes keep $\\tanh u$'\n"
            '  - text: |\n'
            '      a block keeps "$\\frac12$"\n'
            '  - text: "no math, a tab \\t is meant"\n')
    found = tex_traps(text, "content/pages/x.md", offset=1)
    assert [(p.line, p.message.split("'")[1]) for p in found] == [(3, "\\tanh"), (3, "\\Phi")]
    assert all("single quotes" in p.fix and "| block" in p.fix for p in found)


def test_an_escape_yaml_does_not_know_is_reported_as_a_trap_not_only_as_malformed_yaml():
    found = tex_traps('math:\n  - text: "the mean $\\mu$"\n', "f.md")
    assert len(found) == 1 and found[0].line == 2 and "single quotes" in found[0].fix


def test_a_double_quoted_tex_key_is_all_tex_and_its_escapes_are_named():
    # A newcomer wrote tex: "A = Z \times \tanh Z": YAML made two tabs of it, and check passed.
    text = ('sections:\n'
            '  - equations:\n'
            '      - {eq: a, tex: "A = Z \\times \\tanh Z"}\n'
            '    symbols:\n'
            '      - tex: "\\beta"\n'
            '        meaning: "a tab \\t is meant here, it is not TeX"\n'
            "      - tex: '\\tanh kept by single quotes'\n"
            '      - tex: "\\\\alpha escaped"\n')
    found = tex_traps(text, "content/pages/x.md", offset=1)
    assert [(p.line, p.message.split("'")[1]) for p in found] == [(4, "\\times"), (4, "\\tanh"), (6, "\\beta")]
    unknown = tex_traps('symbols:\n  - tex: "\\mu"\n', "f.md")      # an escape YAML rejects
    assert len(unknown) == 1 and unknown[0].line == 2 and "single quotes" in unknown[0].fix


def test_the_guide_writes_tex_in_safe_forms():
    guide = (ROOT / "content" / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in guide.split("```yaml")[1:]]
    assert blocks and not any(tex_traps(b, "content/README.md") for b in blocks)
    assert "single quotes" in guide and "new-concept" in guide


# -- less to type ---------------------------------------------------------------------------

def test_a_bare_local_name_cites_the_line_that_assigns_it(index):
    r = resolve_snippet(index, "model.ops.relu_forward", "positive")
    assert r.code.strip() == "positive = Z > 0"
    assigned = index.assignments("model.transformer.forward")["X"]
    assert len(assigned) > 1
    with pytest.raises(ResolveError, match=r"'X' is assigned on \d+ lines"):
        resolve_snippet(index, "model.transformer.forward", "X")
    # a name the function does not assign is matched as text, as before
    assert "relu_forward" in resolve_snippet(index, "model.transformer.ffn_forward", "relu_forward").code


def test_tex_names_map_to_code_names():
    assert [tex_name(t) for t in ("Z", "X_n", "X_{n}", "\\mathrm{Ff}", "\\hat{x}", "\\mu")] == \
        ["Z", "Xn", "Xn", "Ff", "xhat", "mu"]


def test_two_authors_are_both_named_and_lines_are_spoken():
    assert cite_authors("Hendrycks and Gimpel") == "Hendrycks and Gimpel"
    assert cite_authors("Ba, Kiros and Hinton") == "Ba et al."
    assert cite_authors("Shannon") == "Shannon"
    assert (spoken_list([12]), spoken_list([12, 19]), spoken_list([1, 2, 3])) == ("12", "12 and 19", "1, 2 and 3")


# -- symbols and operators ----------------------------------------------------------------------

def test_an_operator_symbol_is_marked_on_its_name_and_its_argument_stays_math():
    wrapped = wrap_symbols("y = \\operatorname{GELU}(x)", [(0, "\\operatorname{GELU}(x)")])
    assert wrapped == "y = {\\htmlClass{sym-0}{\\operatorname{GELU}}}(x)"
    html = render_tex(wrapped, False, symbol_classes=True)
    assert '<mrow class="sym-0"><mi mathvariant="normal">GELU</mi>' in html and "<mi>x</mi>" in html
    assert wrap_symbols("\\operatorname{LN}_1(x)", [(0, "\\operatorname{LN}_1")]).startswith("{\\htmlClass{sym-0}{\\operatorname{LN}_1}}")


def test_operator_names_are_spaced_from_an_argument_as_tex_spaces_them():
    space = '<mspace width="0.1667em"></mspace>'
    assert space + "<mi>u</mi>" in render_tex("\\tanh u", False)
    assert space not in render_tex("\\tanh(u)", False)                          # brackets: no space
    assert "</munder>" + space + "<msub><mi>z</mi>" in render_tex("\\max_j z_{ij}", True)
    assert space_operators("<mi>log</mi><mo>\u2061</mo><mo>+</mo>") == "<mi>log</mi><mo>\u2061</mo><mo>+</mo>"


# -- shapes for any function --------------------------------------------------------------------

SITE = "title: t\nrepo_url: https://example.invalid/r\nnav: [mini]\n" + PROJECT_BLOCK
PAGE = """---
title: Mini
sections:
  - id: mini-split
    title: Split
    function: model.data.train_val_split
    what: w
    why: w
    probe: {ids: '(V,)', val_fraction: 0.25}
    math:
      - eq: n
        name: Held out
        tex: n_{\\text{val}} = \\operatorname{round}(N f)
        refs:
          - {role: inline, snippet: n_val}
    symbols:
      - {tex: 'N', meaning: The ids, code: ids, shape: '(V,)'}
      - {tex: 'f', meaning: The fraction, code: val_fraction, shape: '(d,)'}
    shapes:
      - title: Split
        names: [ids, nothing]
  - id: mini-relu
    title: ReLU
    function: model.ops.relu_forward
    what: w
    why: w
    math:
      - eq: r
        name: ReLU
        tex: A = Z \\odot P
        refs:
          - {role: inline, snippet: 'return Z * positive'}
    symbols:
      - {tex: 'Z', meaning: In, shape: '(T, F)'}
      - {tex: 'P', meaning: Mask, code: positive, shape: '(T, d)'}
---
Intro.
"""


def test_a_declared_probe_gives_shapes_and_defaults_fill_function_and_code(tmp_path):
    from site_builder.build.page_check import check_pages
    root = mini_repo(tmp_path, SITE, PAGE, {})
    failing, warnings, _ = check_pages(root, ["mini"], cache_dir=shared_cache(), jobs=1)
    mine = [str(p) for p in failing + warnings if p.file == "content/pages/mini.md"]
    # the probe declared on the concept recorded ids' shape: (V,) is checked, the scalar is not an array
    assert not any("'ids'" in m and "nothing checks" in m for m in mine)
    assert any("no shape recorded for 'nothing' in model.data.train_val_split (names the probe saw: " in m
               and "use one of those names" in m for m in mine), mine
    # code defaults to the TeX's name (Z); the wrong declared shape of the explicit code is caught
    assert any("declared (T, d) but the code gives (T, F) for positive" in m for m in mine), mine
    assert not any("symbol 'Z'" in m for m in mine)
    # the function: of a reference defaults to the concept's (n_val is a local of train_val_split)
    assert not any("no line of" in m or "is assigned on" in m or "no function" in m for m in mine), mine


def test_a_shape_nothing_checks_names_the_fix(tmp_path):
    from site_builder.build.page_check import check_pages
    page = PAGE.replace("    probe: {ids: '(V,)', val_fraction: 0.25}\n", "")
    root = mini_repo(tmp_path, SITE, page, {})
    failing, warnings, _ = check_pages(root, ["mini"], cache_dir=shared_cache(), jobs=1)
    shown = [str(p) for p in failing + warnings if p.file == "content/pages/mini.md"]
    unchecked = [p for p in failing if "nothing checks the declared shape (V,) of 'ids'" in p.message]
    # a problem of `check` at the shape's line, naming both parameters the probe needs
    assert [(p.line, p.strict) for p in unchecked] == [(16, True)], shown
    assert "no probe run and no example of the concept reaches model.data.train_val_split" in unchecked[0].message
    assert "probe: {ids: ..., val_fraction: ...}" in unchecked[0].fix
    assert any("no shape recorded for 'ids' in model.data.train_val_split (names the probe saw: none)" in m
               and "probe:" in m for m in shown), shown


SHORTEN_PAGE = """---
title: Mini
sections:
  - id: mini-relu
    title: ReLU
    function: model.ops.relu_forward
    what: w
    why: w
    math:
      - eq: r
        name: ReLU
        tex: A = Z \\odot P
        refs:
          - {role: inline, function: model.ops.relu_forward, snippet: 'positive = Z > 0'}   # kept comment
          - {role: inline, function: model.ops.relu_backward, snippet: 'return dA * positive'}
    symbols:
      - {tex: 'Z', meaning: In, code: Z, shape: '(T, F)'}
      - {tex: 'P', meaning: Mask, code: positive, shape: '(T, F)'}
---
Intro.
"""


def test_shorten_refs_rewrites_only_what_defaults_give_back_and_is_idempotent(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("shorten_refs", ROOT / "tools" / "shorten_refs.py")
    shorten_refs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shorten_refs)
    root = mini_repo(tmp_path, SITE, SHORTEN_PAGE, {})
    page = root / "content" / "pages" / "mini.md"
    edits = shorten_refs.shorten(root)
    assert len(edits) == 3, edits
    text = page.read_text()
    assert "- {role: inline, snippet: positive}   # kept comment" in text
    assert "function: model.ops.relu_backward, snippet: 'return dA * positive'" in text    # another function
    assert "{tex: 'Z', meaning: In, shape: '(T, F)'}" in text and "code: positive" in text
    assert shorten_refs.shorten(root) == [] and page.read_text() == text


TRACED_PAGE = """---
title: Mini
sections:
  - id: mini-split
    title: Split
    function: model.data.train_val_split
    what: w
    why: w
    math:
      - eq: n
        name: Held out
        tex: n = N f
        refs:
          - {role: inline, snippet: n_val}
    symbols:
      - {tex: 'N', meaning: The ids, code: ids, shape: '(T, d)'}
      - {tex: 'f', meaning: The fraction, code: val_fraction, shape: scalar}
    examples:
      - {title: Split, run: mini:split}
---
Intro.
"""
TRACED_EXAMPLE = '''import numpy as np
from model.data import train_val_split
from site_builder.run.examples import ExampleResult, steps_table
from site_builder.run.trace import trace_locals


def split():
    t = trace_locals(train_val_split, np.arange(20), 0.25)
    return ExampleResult([steps_table(t, [("ids", "ids")])], "hand-picked")
'''


def test_the_examples_run_checks_a_declared_shape_no_probe_reaches(tmp_path):
    from site_builder.build.page_check import check_pages
    root = mini_repo(tmp_path, SITE, TRACED_PAGE, {"mini": TRACED_EXAMPLE})
    failing, warnings, _ = check_pages(root, ["mini"], cache_dir=shared_cache(), jobs=1)
    shown = [str(p) for p in failing + warnings if p.file == "content/pages/mini.md"]
    assert any(":16: declared (T, d) for 'ids', but the example mini:split's run of model.data.train_val_split "
               "gives (20,): (20,) has 1 axes, not 2" in m for m in shown), shown
    page = root / "content" / "pages" / "mini.md"
    page.write_text(TRACED_PAGE.replace("code: ids, shape: '(T, d)'", "code: ids, shape: '(N,)'"))
    failing, warnings, _ = check_pages(root, ["mini"], cache_dir=shared_cache(), jobs=1)
    assert not [p for p in failing + warnings if p.file == "content/pages/mini.md" and "'ids'" in p.message]


BATCH_PAGE = """---
title: Mini
sections:
  - id: mini-batch
    title: Batch
    function: model.data.get_batch
    what: w
    why: w
    math:
      - eq: w
        name: Windows
        tex: x = W, y = W, s, Z
        refs:
          - {role: inline, snippet: windows}
    symbols:
      - {tex: 'B', meaning: Windows, code: batch_size, shape: scalar}
      - {tex: 'T', meaning: Length, code: seq_len, shape: scalar}
      - {tex: 'W', meaning: All windows, code: windows, shape: '(B, T + 1)'}
      - {tex: 'x', meaning: Inputs, code: 'return[0]', shape: '(B, T)'}
      - {tex: 'y', meaning: Targets, code: 'return[1]', shape: '(B, T)'}
      - {tex: 's', meaning: Starts, code: 'starts[b]', shape_of: starts, shape: '(B,)'}
      - {tex: 'Z', meaning: "A callee no example calls: the probe decides", code: 'Z (inside relu_forward)', shape: '(T, F)'}
    examples:
      - {title: Batch, run: mini:batch}
  - id: mini-step
    title: Step
    function: model.train.train_step
    what: w
    why: w
    math:
      - eq: s
        name: Step
        tex: g = G
        refs:
          - {role: inline, snippet: grad_norm}
    symbols:
      - {tex: 'g', meaning: Norm, code: grad_norm, shape: '(1, 5)'}
    shapes:
      - title: Norm
        names: [grad_norm]
---
Intro.
"""
BATCH_EXAMPLE = """import numpy as np
from model.data import get_batch
from site_builder.run.examples import ExampleResult, table


def batch():
    x, y = get_batch(np.arange(100), 4, 7, np.random.default_rng(0))
    return ExampleResult([table(["x"], [[str(v) for v in x[0]]])], "get_batch(np.arange(100), 4, 7, rng)")
"""


def test_a_declared_shape_only_an_example_reaches_is_checked_axis_by_axis(tmp_path):
    """get_batch is reached by no probe, only by the example: B and T come from the concept's
    scalar rows (batch_size, seq_len: 4 and 7 in the example's run), and each declared shape
    is compared with what the function held, axis by axis."""
    from site_builder.build.page_check import check_pages
    root = mini_repo(tmp_path, SITE, BATCH_PAGE, {"mini": BATCH_EXAMPLE})
    page = root / "content" / "pages" / "mini.md"

    everything = []

    def problems(text):
        page.write_text(text)
        failing, warnings, _ = check_pages(root, ["mini"], cache_dir=shared_cache(), jobs=1)
        everything[:] = failing
        return {p.line: p for p in failing + warnings if p.file == "content/pages/mini.md"
                and ("declared" in p.message or "nothing checks" in p.message)}

    def line(needle):
        return next(n for n, text in enumerate(BATCH_PAGE.splitlines(), 1) if needle in text)

    found = problems(BATCH_PAGE)
    step = line("code: grad_norm")
    assert set(found) == {step}, [str(p) for p in found.values()]       # only train_step's row
    wrong = problems(BATCH_PAGE.replace("code: 'return[0]', shape: '(B, T)'", "code: 'return[0]', shape: '(B, T, d)'")
                     .replace("code: 'return[1]', shape: '(B, T)'", "code: 'return[1]', shape: '(T, B)'")
                     .replace("shape_of: starts, shape: '(B,)'", "shape_of: starts, shape: '(T,)'")
                     .replace("(inside relu_forward)', shape: '(T, F)'", "(inside relu_forward)', shape: '(F, T)'"))
    x, y, starts = line("code: 'return[0]'"), line("code: 'return[1]'"), line("shape_of: starts")
    z = line("(inside relu_forward)")
    assert set(wrong) == {x, y, starts, step, z}
    assert "declared (F, T) for 'Z (inside relu_forward)', but the probe run gives" in wrong[z].message, str(wrong[z])
    assert "declared (T,) for 'starts'" in wrong[starts].message       # shape_of is what the check reads
    assert "(4, 7) has 2 axes, not 3" in wrong[x].message and wrong[x].fix == "correct the declared shape"
    assert ("gives (4, 7): axis 0 is 4, not T (T = 7 from 'seq_len'); axis 1 is 7, not B (B = 4 from 'batch_size')"
            in wrong[y].message), str(wrong[y])
    # a declared shape nothing checks: train_step takes a parameter dict, an optimizer and
    # configs, so the fix is an example, never a probe of shapes
    unchecked = found[step]
    assert unchecked.strict and "nothing checks the declared shape (1, 5) of 'grad_norm'" in unchecked.message
    assert "give the concept an example that calls model.train.train_step" in unchecked.fix
    assert "params" in unchecked.fix and "probe:" not in unchecked.fix
    # a bracketed shape whose code is words: nothing can check it, so it fails with that fix
    words = problems(BATCH_PAGE.replace("code: 'return[0]', shape: '(B, T)'", "code: 'not named in the code', shape: '(B, T)'"))
    assert set(words) == {x, step}, [str(p) for p in words.values()]
    assert "nothing checks the declared shape (B, T) of 'not named in the code'" in words[x].message
    assert "or write the shape in words" in words[x].fix
    # a shapes block needs the probe's symbols, which no example gives: its fix says so
    block = [p for p in everything if p.line == line("names: [grad_norm]")]
    assert len(block) == 1 and "a probe cannot build params, opt, cfg, tcfg from shapes" in block[0].fix, block


def test_symbol_codes_are_read_from_the_recorded_shapes():
    from site_builder.run.example_shapes import Unknown, array_params, declared_shapes, evaluate, names_own
    names = {"X": ("a", (2, 5, 8)), "p": ("s", "b0."), 'params["b0.wq"]': ("a", (8, 8)), "t": ("i", 3),
             "return[0]": ("a", (5,)), "loss": ("a", ())}
    calls = {"model.data.get_batch": {"starts": ("a", (4,))}}
    assert evaluate('params[p + "wq"], X[t], X[..., None], X.T', names, calls) == [
        ("a", (8, 8)), ("a", (5, 8)), ("a", (2, 5, 8, 1)), ("a", (8, 5, 2))]
    assert evaluate("X.max(axis=-1, keepdims=True), X[0] @ X[0].T, X + X[0]", names, calls) == [
        ("a", (2, 5, 1)), ("a", (5, 5)), ("a", (2, 5, 8))]
    assert evaluate("starts (inside get_batch)", names, calls) == [("a", (4,))]
    assert evaluate("len(X), loss / X.size, X.shape[-1]", names, calls) == [("i", 2), ("a", ()), ("i", 8)]
    with pytest.raises(Unknown):
        evaluate("Y", names, calls)
    # a slice's length where the recording tells its bounds (a number, a recorded int); not `i*dk`
    names.update({"cfg.head_dim": ("i", 3), "L": ("i", 4)})
    assert evaluate("X[0, :, :cfg.head_dim], X[1, :L], X[:, 1:-1], X[0, :L + 9], X[0, :2 * L - 6]", names, calls) == [
        ("a", (5, 3)), ("a", (4, 8)), ("a", (2, 3, 8)), ("a", (5, 8)), ("a", (2, 8))]
    with pytest.raises(Unknown, match="slices a part"):
        evaluate("X[0, :, i*cfg.head_dim:(i+1)*cfg.head_dim]", names, calls)
    assert declared_shapes("(d, F) and (F,)") == [("d", "F"), ("F",)] and declared_shapes("scalar") is None
    assert names_own("X[t], return[0]", {"X", "t"}) and not names_own("causal_mask(T)", {"T"})
    assert not names_own("not named in the code", {"X"}) and names_own("S (inside mha_forward)", set())
    assert array_params(["def f(params, X: np.ndarray, n: int, cfg, eps=1e-5):", "    pass"]) == (["X"], ["params", "n", "cfg"])
    # model sizes come from the first config that has them, not from an optimizer held before it
    from site_builder.run.example_shapes import config_sizes
    held = {"opt": ("c", "AdamW"), "opt.t": ("i", 3), "cfg": ("c", "ModelConfig"), "cfg.emb_dim": ("i", 8),
            "cfg.seq_len": ("i", 5)}
    from site_builder.gather.project import load_project
    from tests.conftest import ROOT
    assert config_sizes(held, {}, load_project(ROOT)) == {"d": (8, "cfg.emb_dim")}     # T is a length: not from the config


def test_check_page_knows_the_sources_quotations_name():
    """`check --page` of a page that quotes the paper and the derivation passes as the full
    check does (a hostile test found it reporting every quotation's source as unknown)."""
    from site_builder.build.page_check import check_pages
    from tests.conftest import ROOT
    failing, warnings, _ = check_pages(ROOT, ["positions", "seq2seq-step"], cache_dir=ROOT / ".build_cache", jobs=2)
    assert not failing and not warnings, [str(p) for p in failing + warnings]


@pytest.mark.parametrize("qualname, after, says", [
    ("tests.test_ops.test_relu_backward", None, "is not a function of model/"),
    ("numpy.tanh", None, "is not a function of model/"),
    ("model.ops.gelu_forward", None, "write the function in model/ first"),
    ("model.ops.relu_backward", "nosuch", "has no section 'nosuch' (its sections: model-forward"),
])
def test_new_concept_refuses_in_one_line_and_writes_nothing(qualname, after, says):
    from site_builder.scaffold import ScaffoldError, new_concept
    from tests.conftest import ROOT
    before = {p: p.read_bytes() for p in (ROOT / "content").rglob("*") if p.is_file()}
    with pytest.raises(ScaffoldError) as e:
        new_concept(ROOT, qualname, "model", after)
    assert says in str(e.value) and "nothing was written" in str(e.value) and "\n" not in str(e.value)
    assert {p: p.read_bytes() for p in (ROOT / "content").rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("twice, says", [
    (["--page", "model", "--after", "model-relu", "--after", "model-linear"],
     "takes one --after, got 2 (model-relu, model-linear); name the one section the new one follows"),
    (["--page", "model", "--page", "block"], "takes one --page, got 2 (model, block); name the one page to add to"),
    (["--page", "model", "--page", "model"], "takes one --page, got 2 (model, model)"),
])
def test_new_concept_refuses_a_flag_given_twice_in_one_line(twice, says):
    # a child process: importing build_site here would change this process's sys.path and
    # environment for every later in-process build of the session
    import subprocess, sys
    proc = subprocess.run([sys.executable, str(ROOT / "build_site.py"), "new-concept", "model.ops.relu_forward", *twice],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_new_concept_writes_a_local_named_like_an_axis_as_that_axis_not_a_second_symbol():
    import yaml
    from site_builder.scaffold.concept import _symbol_rows
    rows = {r["tex"]: r for r in (yaml.safe_load(text) for text in _symbol_rows(
        ["X", "T", "n", "out"], {"X": "(T, d)", "out": "(d,)"}))}
    assert rows["T"]["shape"] == "scalar"                       # a length, not an array with no shape
    assert rows["T"]["meaning"].startswith("TODO") and "the axis T of the shapes" in rows["T"]["meaning"]
    assert (rows["n"]["shape"], rows["n"]["meaning"]) == ("none", "TODO")     # no axis of these shapes
    assert rows["X"]["shape"] == "(T, d)" and rows[r"\mathrm{out}"]["meaning"] == "TODO"
    assert "code" not in rows[r"\mathrm{out}"]                   # \mathrm{out} reads back as out: no code needed


@pytest.mark.parametrize("shape, what, fix", [
    ("(T,, d)", "(T,, d) has an empty axis", "write (T, d)"),
    ("(T, d,)", "(T, d,) ends in a comma, which only a one-axis shape does", "write (T, d)"),
    ("(T, d", "the '(' at character 1 is never closed", "close it with ')'"),
    ("(T, d))", "the ')' at character 7 closes no '('", "remove it, or add the '(' it closes"),
])
def test_a_malformed_symbol_shape_is_one_problem_at_its_line_with_the_fix(tmp_path, shape, what, fix):
    from site_builder.gather.content import load_content
    page = PAGE.replace("shape: '(T, d)'}", f"shape: '{shape}'}}")
    root = mini_repo(tmp_path, SITE, page, {})
    problems = []
    load_content(root, problems)
    line = page.split("\n").index(next(l for l in page.split("\n") if f"'{shape}'" in l)) + 1
    assert [(p.file, p.line, p.message, p.fix) for p in problems] == [
        ("content/pages/mini.md", line, f"the shape '{shape}' is malformed: {what}", fix)]


def test_well_formed_shapes_and_words_around_them_pass():
    from site_builder.gather.shape_syntax import malformed_shape
    for shape in ["(d,)", "()", "(T, d)", "(d)", "(S, ceil(d/2)) for all of them", "(F, d) and (d,)",
                  "(T, d), (S, d), (S, d)", "ceil(d/2) entries", "same as θ", "(B,) for all of them"]:
        assert malformed_shape(shape) is None, shape


# -- check --page: its links, its command line ----------------------------------------------------

LINKED_BODY = ("Intro.\n\n[gone](nope.html), [here](#mini-nowhere), [a section](#mini-split), "
               "[the overview](index.html#not-read) and [a source](source/model/data.py.html#L1).\n")


def test_check_pages_checks_the_links_of_its_page(tmp_path):
    """`check --page` said "no problem" about a page with broken links: they were never checked."""
    from site_builder.build.page_check import check_pages
    root = mini_repo(tmp_path, SITE, PAGE.replace("Intro.\n", LINKED_BODY), {})
    failing, _, counts = check_pages(root, ["mini"], cache_dir=shared_cache(), jobs=1)
    broken = [p for p in failing if "broken link" in p.message]
    line = (PAGE.replace("Intro.\n", LINKED_BODY)).splitlines().index(LINKED_BODY.splitlines()[2]) + 1
    # the missing file and the page's own missing anchor; another page's anchor is the full check's
    assert sorted((p.file, p.line, p.message.split(": ", 1)[1].split("'")[1]) for p in broken) == \
        [("content/pages/mini.md", line, "#mini-nowhere"), ("content/pages/mini.md", line, "nope.html")], broken
    assert counts["links"] >= 5


def test_check_page_names_an_unknown_page_on_the_command_line_and_lists_a_page_once(tmp_path):
    import subprocess
    import sys
    root = mini_repo(tmp_path, SITE, PAGE, {})

    def run(*pages):
        args = [a for p in pages for a in ("--page", p)]
        return subprocess.run([sys.executable, "build_site.py", "check", *args, "--cache-dir", str(shared_cache())],
                              cwd=root, capture_output=True, text=True, timeout=300)
    unknown = run("Mini")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines() == ["error: --page Mini: no such page (did you mean 'mini'?; pages: mini)"]
    twice = run("mini", "mini")
    last = (twice.stdout + twice.stderr).strip().splitlines()[-1]
    assert "mini, mini" not in last and ("(mini)" in last or last.endswith(" on mini")), last


def test_check_page_of_a_page_that_does_not_load_reports_why_not_no_such_page(tmp_path):
    # other.md has a YAML error, so it is not among the loaded pages: that is the problem to
    # report, at its line, not "--page other: no such page"
    from site_builder.build.page_check import check_pages
    root = mini_repo(tmp_path, SITE.replace("nav: [mini]", "nav: [mini, other]"), PAGE, {})
    broken = PAGE.replace("title: Mini", "title: Other", 1).replace("id: mini-", "id: other-").replace(
        "    what: w", "    what: [w", 1)
    (root / "content" / "pages" / "other.md").write_text(broken)
    failing, _, _ = check_pages(root, ["other"], cache_dir=shared_cache())
    assert [p.file for p in failing] == ["content/pages/other.md"] and "malformed YAML" in failing[0].message, failing


PARAMS_PAGE = """---
title: Mini
sections:
  - type: params
    id: every-parameter
    title: Every parameter
    block: ''
    roles: {{tok_emb: The table}}{extra}
---
Intro.
"""


@pytest.mark.parametrize("extra, says", [
    ("", []),            # block '': no prefix, every parameter (a project with block prefixes may want that)
    ("\n    init: normal", ["unknown key 'init' in params"]),      # keys nothing reads are refused,
    ("\n    config: small", ["unknown key 'config' in params"]),   # not silently ignored
])
def test_a_params_section_takes_an_empty_block_and_no_key_nothing_reads(tmp_path, extra, says):
    from site_builder.gather.content import load_content
    problems = []
    load_content(mini_repo(tmp_path, "title: t\nnav: [mini]\n", PARAMS_PAGE.format(extra=extra), {}), problems)
    assert [p.message for p in problems] == says


def test_check_page_does_not_fail_on_another_page_s_todo(tmp_path):
    """check --page mini is about mini: a TODO new-page left in other.md is a warning there,
    naming its file and line; the full check still fails on it (strict)."""
    from site_builder.build.page_check import check_pages
    root = mini_repo(tmp_path, SITE.replace("nav: [mini]", "nav: [mini, other]"), PAGE, {})
    other = "---\ntitle: Other\nsummary: TODO\nsections: []\n---\nIntro.\n"
    (root / "content" / "pages" / "other.md").write_text(other)
    failing, warnings, _ = check_pages(root, ["mini"], cache_dir=shared_cache(), jobs=1)
    assert not [p for p in failing if p.file == "content/pages/other.md"], failing
    assert any(w.file == "content/pages/other.md" and "still TODO" in w.message for w in warnings), warnings
    failing, _, _ = check_pages(root, ["other"], cache_dir=shared_cache(), jobs=1)
    assert any("still TODO" in p.message for p in failing), failing
