"""One test per class of build error: each is reported as `file:line: what (fix)`, all of a
build's problems together, with exit status 1 and no traceback. The builds run on a small
repository made in a temporary folder: the real model, templates and static files, and a
one-page content folder that each test breaks in one way."""
import subprocess
import sys
from pathlib import Path

import pytest

from site_builder.build import build
from site_builder.base.problems import BuildFailed
from tests.conftest import PROJECT_BLOCK, ROOT, mini_repo, shared_cache, with_project

SITE = """title: Mini
repo_url: https://example.invalid/repo
nav: [mini]
papers:
  vaswani2017: {title: Attention Is All You Need, authors: Vaswani and others, year: 2017}
""" + PROJECT_BLOCK
PAGE = """---
title: Mini
sections:
  - id: mini
    title: Relative error
    function: model.gradcheck.rel_error
    what: How far apart two gradients are.
    why: Tests compare gradients by norm.
    math:
      - eq: rel
        name: Relative error
        tex: e = \\frac{\\|a - n\\|}{\\|a\\| + \\|n\\|}
        refs:
          - {role: computes, function: model.gradcheck.rel_error, snippet: "return float("}
    symbols:
      - {tex: 'e', meaning: The relative error, code: return, shape: scalar}
    examples:
      - {title: One comparison, run: "mini:compare"}
---
The body, with a [link](mini.html#mini).
"""
EXAMPLE = """import numpy as np
from model.gradcheck import rel_error
from site_builder.run.examples import ExampleResult, table


def compare():
    return ExampleResult([table(["error"], [[rel_error(np.ones(3), np.ones(3))]])], "hand-picked vectors")


def explode():
    from model.transformer import check_ids
    from model.config import ModelConfig
    check_ids(np.array([99]), ModelConfig(vocab_size=5))
"""


@pytest.fixture
def mini(tmp_path):
    return mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE})


def problems_of(root, page=None, site=None, strict=True):
    if page is not None:
        (root / "content/pages/mini.md").write_text(page)
    if site is not None:
        (root / "content/site.yaml").write_text(with_project(site))
    with pytest.raises(BuildFailed) as e:
        build(root, root / "site", strict=strict, cache_dir=shared_cache())
    return [str(p) for p in e.value.problems]


def only(lines, needle):
    hits = [l for l in lines if needle in l]
    assert hits, f"no problem mentions {needle!r}: {lines}"
    return hits[0]


def test_the_mini_site_builds_apart_from_undocumented_functions(mini):
    build(mini, mini / "site", strict=False, cache_dir=shared_cache())
    assert (mini / "site" / "mini.html").exists()
    lines = problems_of(mini)     # strict: the rest of model/ is undocumented here
    assert all("is cited by no page" in l for l in lines)
    assert only(lines, "model.transformer.forward").startswith("model/transformer.py:")


def test_malformed_yaml(mini):
    line = only(problems_of(mini, PAGE.replace("    why: Tests", "    why: [Tests")), "malformed YAML")
    assert line.startswith("content/pages/mini.md:")


def test_an_unclosed_quote_is_reported_where_it_opens(mini):
    # YAML gives up on the string lines later (here, where the front matter ends)
    line = only(problems_of(mini, PAGE.replace("    why: Tests", '    why: "Tests')), "malformed YAML")
    assert line.startswith("content/pages/mini.md:8:") and "in the quoted string that starts on this line" in line


def test_unknown_key_suggests_the_close_one(mini):
    line = only(problems_of(mini, PAGE.replace("    why:", "    whyy:")), "unknown key 'whyy'")
    assert line.startswith("content/pages/mini.md:8:") and "did you mean 'why'" in line


def test_missing_required_field(mini):
    line = only(problems_of(mini, PAGE.replace("    what: How far apart two gradients are.\n", "")), "required key 'what'")
    assert line.startswith("content/pages/mini.md:")


def test_wrong_type(mini):
    line = only(problems_of(mini, PAGE.replace("title: Relative error", "title: [a, b]")), "'title' must be")
    assert line.startswith("content/pages/mini.md:5:")


@pytest.mark.parametrize("old, new", [
    ("sections:\n", "sections: 5\nwas_sections:\n"),
    ("sections:\n", "sections: true\nwas_sections:\n"),
    ("    math:\n", "    math: 7\n    was_math:\n"),
    ("    math:\n", "    math: 1.5\n    was_math:\n"),
    ("        refs:\n", "        refs: 3\n        was_refs:\n"),
    ("    symbols:\n", "    symbols: 2\n    was_symbols:\n"),
    ("    examples:\n", "    examples: 4\n    was_examples:\n"),
], ids=["sections-5", "sections-true", "math-7", "math-1.5", "refs-3", "symbols-2", "examples-4"])
def test_a_number_where_a_list_belongs_is_one_problem_line(mini, old, new):
    """`sections: 5` was `internal error: TypeError: 'int' object is not iterable`, naming no
    file: the checks that run after the schema's read the key as a list (a text or a mapping
    there was already one line)."""
    key = new.split(":")[0].strip()
    line = only(problems_of(mini, PAGE.replace(old, new, 1)), f"'{key}' must be a list")
    assert line.startswith("content/pages/mini.md:")


def test_a_nav_that_is_not_a_list_is_one_line_not_one_per_page(mini):
    (mini / "content/pages/other.md").write_text(PAGE.replace("id: mini", "id: other"))
    lines = problems_of(mini, site=SITE.replace("nav: [mini]", "nav: 5"))
    assert [l for l in lines if "nav" in l] and not [l for l in lines if "missing from the navigation" in l], lines


def test_duplicate_ids(mini):
    doubled = PAGE.replace("      - eq: rel\n", "      - {eq: rel, name: Again, tex: e, refs: []}\n      - eq: rel\n")
    only(problems_of(mini, doubled), "duplicate equation id 'rel'")
    page = PAGE.replace("sections:\n", "sections:\n  - {type: text, id: mini, title: Twice, body: text}\n")
    assert "duplicate section id 'mini'" in only(problems_of(mini, page), "duplicate section id")


def test_tex_error_has_katex_message_and_position(mini):
    line = only(problems_of(mini, PAGE.replace("\\frac{", "\\frca{")), "TeX error")
    assert line.startswith("content/pages/mini.md:") and "\\frca" in line and "position" in line


@pytest.mark.parametrize("old, new, needle", [
    ("model.gradcheck.rel_error, snippet", "model.gradcheck.rel_eror, snippet", "did you mean model.gradcheck.rel_error"),
    ("model.gradcheck.rel_error, snippet", "model.gradchek.rel_error, snippet", "no module model.gradchek"),
    ('snippet: "return float("', 'snippet: "no such code"', "no line of model.gradcheck.rel_error contains"),
    ('snippet: "return float("', 'snippet: "np."', "matches"),
])
def test_unresolvable_references(mini, old, new, needle):
    line = only(problems_of(mini, PAGE.replace(old, new)), needle)
    assert line.startswith("content/pages/mini.md:14:")


def test_a_misspelled_function_with_a_flow_is_one_problem(mini):
    # found by tests/test_fuzz_content.py: the flow diagram asked the index for the function
    page = PAGE.replace("function: model.gradcheck.rel_error\n", "function: model.gradcheck.rel_eror\n    flow: true\n")
    line = only(problems_of(mini, page), "did you mean model.gradcheck.rel_error")
    assert line.startswith("content/pages/mini.md:6:")


def test_missing_test_reference(mini):
    page = PAGE.replace('snippet: "return float("}', 'snippet: "return float("}\n          - {role: tests, function: tests.test_nothing.test_x, snippet: "x"}')
    assert only(problems_of(mini, page), "tests.test_nothing").startswith("content/pages/mini.md:15:")


def test_symbol_never_used(mini):
    page = PAGE.replace("code: return, shape: scalar}", "code: return, shape: scalar}\n      - {tex: 'Q_z', meaning: Stale, code: q, shape: scalar}")
    assert only(problems_of(mini, page), "symbol 'Q_z' is declared but no equation").startswith("content/pages/mini.md:17:")


def test_a_stale_symbol_code_fails_check_at_its_row(mini):
    page = PAGE.replace("code: return, shape: scalar}", "code: 'np.linalg.norm(a - n).sum(axis=0)', shape: scalar}")
    line = only(problems_of(mini, page), "spells sum")
    assert line.startswith("content/pages/mini.md:16: symbol 'e': code 'np.linalg.norm(a - n).sum(axis=0)'")
    assert "model.gradcheck.rel_error" in line
    page = PAGE.replace("code: return, shape: scalar}", "code: 'np.linalg.norm(a - n)', shape: scalar}")
    assert not [l for l in problems_of(mini, page) if "spells" in l]       # what the code has is found


def test_a_tests_reference_that_asserts_nothing_fails_check(mini):
    ref = '          - {role: tests, function: tests.test_gradcheck.test_linear_backward, snippet: "%s"}'
    page = PAGE.replace('snippet: "return float("}', 'snippet: "return float("}\n' + ref % "dX, dW, db = linear_backward(")
    line = only(problems_of(mini, page), "asserts nothing")
    assert line.startswith("content/pages/mini.md:15: line ") and "of tests.test_gradcheck.test_linear_backward" in line
    assert "cite the assertion that checks it: line " in line and "assert_close(dX, f, X, \"dX\")" in line
    page = PAGE.replace('snippet: "return float("}', 'snippet: "return float("}\n' + ref % "assert_close(dX, f")
    assert not [l for l in problems_of(mini, page) if "asserts nothing" in l]



def test_a_tests_file_that_cannot_import_is_one_problem_not_listed_tests(tmp_path):
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE}, copy=("tests",))
    (root / "tests" / "test_unrunnable.py").write_text(
        "from model.ops import relu_forward\nimport nonexistent_pkg_zz\n\n\ndef test_relu():\n    assert relu_forward(-1.0)[0] == 0\n")
    lines = problems_of(root)
    assert lines == ["tests/test_unrunnable.py:2: imports nonexistent_pkg_zz, which is not installed, so the tests "
                     "in this file cannot run and no page lists them (install it (the test extra: python3 -m pip "
                     "install -e \".[test]\"), or fix the import)"], lines
    from site_builder.build.page_check import check_pages
    assert [str(p) for p in check_pages(root, ["mini"])[0]] == lines

def test_navigation_and_pages_must_agree(mini):
    lines = problems_of(mini, site=SITE.replace("nav: [mini]", "nav: [mini, ghost]"))
    assert only(lines, "'ghost'").startswith("content/site.yaml:")
    (mini / "content/pages/extra.md").write_text(PAGE.replace("id: mini", "id: extra"))
    lines = problems_of(mini, site=SITE)
    assert only(lines, "missing from the navigation").startswith("content/pages/extra.md:1:")


def test_example_that_raises_names_the_example_and_the_model_line(mini):
    line = only(problems_of(mini, PAGE.replace("mini:compare", "mini:explode")), "example mini:explode raised")
    assert "ModelInputError" in line and "model/transformer.py:" in line
    assert line.startswith("content/pages/mini.md:18:")



def test_one_error_the_package_raises_is_one_line_for_all_that_follow_from_it(tmp_path):
    """A required parameter added to a model function: every example that reaches it raises the
    same TypeError, and the values they would give are missing. One line, at the model's line."""
    examples = EXAMPLE + "\n\ndef explode_again():\n    return explode()\n\n\ndef facts():\n    return explode()\n"
    page = PAGE.replace("      - {title: One comparison, run: \"mini:compare\"}",
                        "      - {title: One comparison, run: \"mini:explode\"}\n"
                        "      - {title: Again, run: \"mini:explode_again\"}")
    page = page.replace("The body, with", "The body says {{mini:facts.n}} and {{mini:facts.m}}, with")
    root = mini_repo(tmp_path, SITE, page, {"mini": examples})
    lines = problems_of(root)
    raised = [l for l in lines if "ModelInputError" in l]
    assert len(raised) == 1 and raised[0].startswith("model/transformer.py:"), lines
    assert "it stopped 3 run(s)" in raised[0] and "the first asked for at content/pages/mini.md:" in raised[0]
    assert "4 more line(s) that follow from it are not listed" in raised[0], raised
    assert not [l for l in lines if "no value for" in l or "example mini:" in l], lines


def test_an_error_that_stops_one_example_stays_its_own_line(mini):
    lines = problems_of(mini, PAGE.replace("mini:compare", "mini:explode"))
    assert [l for l in lines if "ModelInputError" in l][0].startswith("content/pages/mini.md:18: example mini:explode")

def test_broken_link_and_anchor_fail_check_only(mini):
    page = PAGE.replace("[link](mini.html#mini)", "[link](mini.html#nowhere) and [gone](gone.html) and [line](source/model/gradcheck.py.html#L9999)")
    lines = problems_of(mini, page)
    only(lines, "has no anchor '#nowhere'")
    only(lines, "gone.html")
    only(lines, "#L9999")
    build(mini, mini / "site", strict=False, cache_dir=shared_cache())     # a normal build still passes


def test_all_problems_are_listed_together(mini):
    page = PAGE.replace("    why:", "    whyy:").replace("title: Relative error", "titel: Relative error")
    lines = problems_of(mini, page)
    only(lines, "'whyy'")
    only(lines, "'titel'")


def test_command_line_prints_one_line_per_problem_and_no_traceback(mini):
    (mini / "content/pages/mini.md").write_text(PAGE.replace("\\frac{", "\\frca{").replace("    why:", "    whyy:"))
    run = subprocess.run([sys.executable, "build_site.py", "check", "--no-cache"], cwd=mini, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    problems = [l for l in run.stderr.splitlines() if l.startswith("content/")]
    assert problems and all(": " in l for l in problems)
    assert "build failed:" in run.stderr.splitlines()[-1]
    assert not (mini / "site").exists()
    # No site was there before, so there is no "last good site" to speak of.
    assert run.stderr.splitlines()[-1].endswith(f"nothing was written to {mini / 'site'}"), run.stderr


@pytest.mark.parametrize("edit, expected", [
    (lambda t: t.replace("{% block main %}\n", "{% block main %}\n{{ nosuch.attr }}\n", 1),
     "templates/page.html:4: UndefinedError: 'nosuch' is undefined (fix the template)"),
    (lambda t: t.replace("{% block main %}\n", "{% block main %}\n{{ 1|nosuchfilter }}\n", 1),
     "templates/page.html:4: TemplateAssertionError: No filter named 'nosuchfilter'. (fix the template)"),
    (lambda t: t + "{{ oops(\n", "templates/page.html:"),
])
def test_a_broken_template_is_one_line_at_its_file_and_line(tmp_path, edit, expected):
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE}, copy=("templates",))
    page = root / "templates" / "page.html"
    page.write_text(edit(page.read_text()))
    lines = problems_of(root)
    assert len(lines) == 1 and lines[0].startswith(expected), lines
    assert "internal error" not in lines[0]


def test_a_script_that_does_not_parse_fails_the_build_at_its_line(tmp_path):
    """Joined into one bundle per page, one syntax error would stop every script on the page."""
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE}, copy=("static",))
    theme = root / "static" / "js" / "theme.js"
    lines_before = theme.read_text().count("\n")
    theme.write_text(theme.read_text() + "function ( {\n")
    assert problems_of(root) == [f"static/js/theme.js:{lines_before + 1}: JavaScript SyntaxError: function name expected "
                                 f"(fix the script; every page that loads it would lose all its scripts)"]


def test_a_missing_static_file_or_template_names_it(tmp_path):
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE}, copy=("static", "templates"))
    (root / "templates" / "source.html").unlink()
    assert problems_of(root) == ["templates/source.html: template not found: source.html (restore it (git checkout -- templates))"]
    (root / "templates" / "source.html").write_text((ROOT / "templates" / "source.html").read_text())
    (root / "static" / "site.css").unlink()
    assert problems_of(root) == ["static/site.css: cannot read static/site.css: No such file or directory "
                                 "(restore it (git checkout -- static templates))"]


def test_a_page_saved_with_a_byte_order_mark_builds(mini):
    # Windows editors save UTF-8 with a BOM; site.yaml and examples already accept it
    (mini / "content/pages/mini.md").write_bytes(b"\xef\xbb\xbf" + PAGE.encode("utf-8"))
    build(mini, mini / "site", strict=False, cache_dir=shared_cache())
    assert "Relative error" in (mini / "site" / "mini.html").read_text(encoding="utf-8")


def test_a_bad_byte_after_a_byte_order_mark_names_its_own_line(mini):
    bad = PAGE.replace("How far apart", "How f\xe9r apart").encode("latin-1")
    (mini / "content/pages/mini.md").write_bytes(b"\xef\xbb\xbf" + bad)
    line = only(problems_of(mini), "not UTF-8")
    assert line.startswith("content/pages/mini.md:7: ") and "column 16 " in line


def test_a_function_outside_the_documented_code_is_one_short_line_at_the_concept(mini):
    page = PAGE.replace("model.gradcheck.rel_error", "json.dumps").replace("function: json.dumps, snippet", "snippet")
    lines = [l for l in problems_of(mini, page) if "json.dumps" in l]
    assert len(lines) == 1, lines
    [line] = lines
    assert line.startswith("content/pages/mini.md:6: ") and len(line) < 250, line
    assert "model/ and tests/" in line and "indexed modules" not in line and "update the snippet" not in line


def test_a_concept_whose_function_is_not_found_gets_one_line_not_its_followers(mini):
    """Every symbol, shape and reference of a concept with no function fails too; those lines
    (a probe to declare, a local that is not there) proposed wrong fixes and hid the cause."""
    for cited, said in [("json.dumps", "is not in the documented code"), ("model.gradcheck.rel_eror", "did you mean")]:
        page = PAGE.replace("model.gradcheck.rel_error", cited)
        lines = [l for l in problems_of(mini, page) if l.startswith("content/pages/mini.md:")]
        assert len(lines) == 1, lines
        assert lines[0].startswith("content/pages/mini.md:6: ") and said in lines[0], lines[0]
        assert "more problem(s) of this section follow from it" in lines[0] and "probe" not in lines[0]
        assert "snippet" not in lines[0], lines[0]      # a newcomer's typo was told to "update the snippet"


@pytest.mark.parametrize("timeout", ["0", "-5"])
def test_a_timeout_that_is_not_positive_says_so_not_quote_text(mini, timeout):
    page = PAGE.replace('run: "mini:compare"}', f'run: "mini:compare", timeout: {timeout}}}')
    line = only(problems_of(mini, page), "'timeout'")
    assert f"got {timeout} " in line and "positive number of seconds" in line and "quote text" not in line, line


def test_a_function_cited_by_no_page_names_the_command_that_writes_its_section(mini):
    from site_builder import COMMAND
    line = only(problems_of(mini), "model.transformer.forward")
    assert f"{COMMAND} new-concept model.transformer.forward --page PAGE" in line, line
