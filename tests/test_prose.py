"""Prose: typed numbers fail `check`, computed values and quotations render and are recorded,
and an inline code reference renders exactly its snippet's place, whatever characters it holds."""
import html
import json
import re
from pathlib import Path

import pytest

from site_builder.build import build
from site_builder.base.problems import BuildFailed
from site_builder.gather.prose import code_refs, format_value, typed_numbers
from tests.conftest import ROOT, mini_repo, shared_cache
from tests.test_build_errors import EXAMPLE, PAGE, SITE

PROBLEM = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+): (?P<what>.*)$")


# -- the rule ----------------------------------------------------------------------------

@pytest.mark.parametrize("text, caught", [
    ("the model has 31444 parameters", ["31444"]),
    ("nudges by h = 1e-5 each way", ["1e-5"]),
    ("8 times smaller", ["8"]),
    ("a 2x speed-up", ["2"]),
    ("56 % of it, 1/5623 of the first", ["56", "5623"]),
    ("each row sums to 1 and hidden weights are exactly 0.0", []),
    ("the 2nd pair, the 3rd head", []),
    ("Vaswani et al. 2017 (Section 3.2.1, Eq. 4 and Algorithm 2, §5.4)", []),
    ("float64, W1, LN2, seq2seq.py, UTF-8 and SHA-256", []),
    ("inside $h = 10^{-5}$ and `cfg.seq_len = 16`", []),
    ("a value {{block:facts.caches | words}} and {{quote vaswani2017 | eps = 0.1}}", []),
    ("[[model.transformer.ffn_backward | c[\"positive\"]]] cites line 3", ["3"]),
    ("1. first\n2. second\n3. third", []),
    ("about ½ of the weight, 2¾ times more", ["½", "2¾"]),
    ("<a href=\"x.html#L12\">link</a> and [text](page.html#L40)", []),
])
def test_the_rule_catches_digits_and_lets_through_what_it_says(text, caught):
    assert typed_numbers(text) == caught


def test_formats():
    assert format_value(4, "words") == "four" and format_value(4, "Words") == "Four"
    assert format_value(1e-5, "") == "1e-5" and format_value(35332.9, ",.0f") == "35,333"
    assert format_value(0.5623, ".0%") == "56%" and format_value(31444, "") == "31,444"
    with pytest.raises(ValueError):
        format_value(2.5, "words")


# -- computed values and quotations ---------------------------------------------------------

VALUES = EXAMPLE + '''

def sizes():
    return ExampleResult([], "three numbers", data=dict(n=3, h=1e-5, share=0.5623))
'''


def test_a_computed_value_renders_where_it_is_written_and_is_recorded(tmp_path):
    page = PAGE.replace("The body, with a [link](mini.html#mini).",
                        "It checks {{mini:sizes.n | words}} gradients at h = {{mini:sizes.h}}, "
                        "$s = {{mini:sizes.share | .2f}}$, and the paper says {{quote vaswani2017 | eps = 0.1}}.")
    root = mini_repo(tmp_path, SITE, page, {"mini": VALUES})
    build(root, root / "site", cache_dir=shared_cache())
    out = (root / "site/mini.html").read_text(encoding="utf-8")
    assert re.search(r'It checks <span class="computed"[^>]*>three</span> gradients at h = <span class="computed"[^>]*>1e-5</span>', out)
    assert "<mn>0.56</mn>" in out                                    # inside TeX: plain text, rendered by KaTeX
    assert re.search(r'<q class="quoted" data-source="vaswani2017">eps = 0.1</q><span class="quoted-source"> \(Vaswani et al. 2017\)</span>', out)
    refs = json.loads((root / "site/references.json").read_text())["references"]
    values = [r for r in refs if r["role"] == "value"]
    line = next(i for i, l in enumerate(page.split("\n"), 1) if "It checks" in l)
    assert sorted((r["function"], r["key"], r["value"], r["origin"]) for r in values) == [
        ("mini:sizes", "h", "1e-5", f"content/pages/mini.md:{line}"),
        ("mini:sizes", "n", "three", f"content/pages/mini.md:{line}"),
        ("mini:sizes", "share", "0.56", f"content/pages/mini.md:{line}")]
    assert all(r["file"] == "content/examples/mini.py" for r in values)


def test_check_fails_on_a_typed_number_in_prose_at_its_line(tmp_path):
    """A page that passes check, with one sentence of typed prose and one value that cannot be
    had: check fails, naming the page and the line of each, in the one-line format."""
    page = PAGE.replace("The body, with a [link](mini.html#mini).",
                        "The body, with a [link](mini.html#mini).\n\nFor scale, the model has 31444 parameters.\n\n"
                        "Gone: {{mini:sizes.missing}}.\n\nBad format: {{mini:sizes.n | .2z}}.\n\nUnclosed: {{mini:sizes.d and on.\n\n"
                        "No bar: {{quote vaswani2017 the words}}.")
    root = mini_repo(tmp_path, SITE, page, {"mini": VALUES})
    with pytest.raises(BuildFailed) as e:
        build(root, root / "site", strict=True, cache_dir=shared_cache())
    lines = [str(p) for p in e.value.problems]
    at = {needle: next(i for i, l in enumerate(page.split("\n"), 1) if needle in l)
          for needle in ("31444", "Gone:", "Bad format:", "Unclosed:", "No bar:")}
    typed = [l for l in lines if "typed number" in l]
    assert len(typed) == 1 and PROBLEM.match(typed[0]), lines
    assert typed[0].startswith(f"content/pages/mini.md:{at['31444']}: typed number '31444' in prose (")
    assert typed[0].endswith(")") and "\n" not in typed[0]
    missing = [l for l in lines if "missing" in l]
    assert missing and missing[0].startswith(f"content/pages/mini.md:{at['Gone:']}: cannot compute {{{{mini:sizes.missing}}}}: no 'missing'")
    bad = [l for l in lines if "mini:sizes.n |" in l]    # Python's own message, its quotes whole
    assert bad == [f"content/pages/mini.md:{at['Bad format:']}: cannot compute {{{{mini:sizes.n | .2z}}}}: "
                   f"Unknown format code 'z' for object of type 'int' (return the value in the data of mini:sizes, "
                   f"or correct the key or the format)"], lines
    # Braces that parse as neither a value nor a quotation would show raw on the page: one line each.
    raw = [l for l in lines if "is neither a computed value nor a quotation" in l]
    assert [l.split(":")[1] for l in raw] == [str(at["Unclosed:"]), str(at["No bar:"])], lines


# -- code references render exactly their snippet --------------------------------------------

def test_every_inline_code_reference_in_content_renders_alone():
    """Every `[[function | snippet]]` of every page, rendered alone, is one link and nothing else:
    no stray `]` or `)` from a snippet that holds brackets."""
    from site_builder.render.html import Renderer
    from site_builder.gather.source_index import build_index
    renderer = Renderer(ROOT, build_index(ROOT), [])
    seen = 0
    for path in sorted((ROOT / "content/pages").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for start, end, qualname, snippet in code_refs(text):
            written = text[start:end]
            assert written.startswith("[[") and written.endswith("]]")
            if snippet:
                assert written.rstrip("]").endswith(snippet.rstrip("]")) or snippet in written
            out = str(renderer.md(written, f"content/pages/{path.name}", 1, inline=True, check_numbers=False))
            assert re.fullmatch(r'<a class="(line-ref|fn-ref)" [^>]*>.*?</a>', out, re.S), (path.name, written, out)
            label = html.unescape(re.sub(r"<[^>]+>", "", out))
            assert re.fullmatch(r"[\w/]+\.py:\d+(-\d+)?" if snippet else r"\w+", label), (path.name, written, label)
            seen += 1
    assert not renderer.problems, renderer.problems[:3]
    assert seen > 100


def test_a_snippet_with_brackets_keeps_them():
    text = ('a [[model.seq2seq.embed_backward | grads[c["table"]] += embedding_backward(]]) b '
            '[[model.seq2seq.embed_backward | dE = dX * c["scale"]]] c [[model.transformer.forward]]')
    found = [(q, s) for _, _, q, s in code_refs(text)]
    assert found == [("model.seq2seq.embed_backward", 'grads[c["table"]] += embedding_backward('),
                     ("model.seq2seq.embed_backward", 'dE = dX * c["scale"]'),
                     ("model.transformer.forward", None)]


def test_check_fails_on_a_typed_number_inserted_into_a_real_page(tmp_path, built_site):
    """The issue's own case, on a copy of the repository: one sentence typed into the Full Model
    page's prose, and `check --page model` fails on that file and line, and only there. The
    copy's cache is seeded from the repository's (which the session's build, `built_site`,
    filled for this very tree): the page's examples are not what this is about, and run from a
    cold cache they were most of its 13 s."""
    import subprocess
    import sys
    from tests.fixture_project import make_repo_copy, seed_build_cache
    root = make_repo_copy(tmp_path / "repo")
    seed_build_cache(root)
    page = root / "content" / "pages" / "model.md"
    lines = page.read_text(encoding="utf-8").split("\n")
    body = lines.index("---", 1) + 1                      # the first line after the front matter
    lines.insert(body, "For scale, the model has 31444 parameters.")
    page.write_text("\n".join(lines), encoding="utf-8")
    run = subprocess.run([sys.executable, "build_site.py", "check", "--page", "model"], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr
    problems = [line for line in run.stderr.splitlines() if PROBLEM.match(line)]
    assert problems == [f"content/pages/model.md:{body + 1}: typed number '31444' in prose "
                        + problems[0].partition(" in prose ")[2]], run.stderr
    assert "{{module:function.key}}" in problems[0] and "Traceback" not in run.stderr
