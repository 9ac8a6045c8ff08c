"""The Transformer Block page: every section of the seed page is there, and its numbers are the
model's numbers (each example value recomputed here by a direct call)."""
import json
import re
import sys

import numpy as np
import pytest

from model.transformer import ffn_forward, ffn_backward, block_forward, block_backward
from site_builder.run.examples import load_example, fmt_array, fmt_number
from tests.conftest import ROOT, assert_sections, concept_section
from tests.fixtures import ffn_worked_params, FFN_WORKED_XN, FFN_WORKED_DOUT

CONCEPTS = ["ffn-forward", "ffn-backward", "block-forward", "block-backward"]
HEADINGS = ["What is it?", "Why does the model need it?", "Mathematics", "What does each symbol mean?",
            "Tiny numerical example", "Tensor shapes", "Actual implementation", "Code and math connection",
            "Where is it used?"]


def example(name):
    return load_example(ROOT, f"block:{name}")()


def block_examples():
    """The example module itself, for its hand-picked inputs and tiny config."""
    return sys.modules[load_example(ROOT, "block:tiny_params").__module__]


@pytest.mark.parametrize("concept", CONCEPTS)
def test_every_concept_has_every_section(site_page, concept):
    assert_sections(site_page("block"), concept, HEADINGS)


def test_page_level_sections(site_page):
    html = site_page("block")
    for needle in ['id="caches"', 'id="params"', "Gradient flow, in the order of", "Only the identity path",
                   "Checking the backward numerically", "How this reaches a parameter update",
                   "Reaches it through", "Note · general", "Note · measured", "Hand-picked inputs"]:
        assert needle in html, needle


def test_ffn_forward_table_equals_a_direct_call():
    rows = next(b for b in example("ffn_forward_worked").blocks if b["kind"] == "steps")["rows"]
    params = ffn_worked_params()
    out, cache = ffn_forward(FFN_WORKED_XN, params, "b0.")
    Z = FFN_WORKED_XN @ params["b0.ff1_w"] + params["b0.ff1_b"]
    assert [r["value"] for r in rows] == [fmt_array(FFN_WORKED_XN), fmt_array(Z), fmt_array(cache["A"]), fmt_array(out)]
    assert rows[1]["value"] == "[[1.0000, -0.5000, -1.0000]]" and rows[3]["value"] == "[[1.0000, 2.0000]]"


def test_ffn_worked_example_shows_the_weights_z_is_made_of():
    """W1, b1, W2, b2 are on the page, so Z = Xn W1 + b1 can be checked by hand from what it shows."""
    blocks = example("ffn_forward_worked").blocks
    shown = {b["name"].split(" ")[0]: np.array(b["rows"], dtype=float) for b in blocks if b["kind"] == "matrix"}
    params = ffn_worked_params()
    for label, name in (("W1", "ff1_w"), ("b1", "ff1_b"), ("W2", "ff2_w"), ("b2", "ff2_b")):
        np.testing.assert_array_equal(shown[label], np.atleast_2d(params["b0." + name]))
    Z = next(b for b in blocks if b["kind"] == "steps")["rows"][1]["value"]
    assert Z == fmt_array(np.array(FFN_WORKED_XN) @ shown["W1"] + shown["b1"][0])


def test_caches_table_is_in_the_order_block_backward_reads_them(site_page):
    """The intro says block_backward reads the caches in reverse; the table lists them as it reads them."""
    html = site_page("block")
    table = html[html.index('<table class="caches">'):]
    table = table[:table.index("</table>")]
    read_lines = [int(n) for n in re.findall(r', at <a [^>]*>transformer\.py:(\d+)</a>', table)]
    _, cache = block_forward(block_examples().X_HAND.copy(), block_examples().tiny_params(), 0, block_examples().TINY)
    assert len(read_lines) == len(cache) == example("facts").data["caches"]
    assert read_lines == sorted(read_lines)
    assert "in the reverse of the order they were built" in html


def test_params_table_has_the_decay_column_its_intro_names(site_page):
    from model.optim import decays
    html = site_page("block")
    table = html[html.index('<table class="params cards">'):]
    table = table[:table.index("</table>")]
    assert '<th scope="col">Weight decay</th>' in table
    names = re.findall(r"<tr><td[^>]*><code>(b\{l\}\.\w+)</code>", table)
    cells = re.findall(r'<td data-label="Weight decay">(yes|no)</td></tr>', table)
    assert names and cells == ["yes" if decays(n.replace("{l}", "0")) else "no" for n in names]


def declared_example(page, title):
    """Run the declarative example titled `title` on content/pages/PAGE.md as the build does."""
    from site_builder.gather.content import concepts, load_content
    from site_builder.gather.playground import split_ref
    from site_builder.run.declarative import load_declared
    problems = []
    content = load_content(ROOT, problems)
    [e] = [e for c in concepts(content.pages[page]) for e in c.get("examples") or [] if e["title"] == title]
    return load_declared(ROOT, e["run"])(**split_ref(e["run"])[1])


def test_ffn_backward_table_equals_a_direct_call():
    rows = declared_example("block", "The same row, backward").blocks[0]["rows"]
    params = ffn_worked_params()
    _, cache = ffn_forward(FFN_WORKED_XN, params, "b0.")
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dXn = ffn_backward(FFN_WORKED_DOUT, cache, params, "b0.", grads)
    assert rows[-1]["value"] == fmt_array(dXn) == "[[2.0000, 0.0000]]"
    assert rows[1]["value"] == "[[2.0000, 0.5000, 0.5000]]" and rows[2]["value"] == "[[2.0000, 0.0000, 0.0000]]"


def _block(params):
    mod = block_examples()
    X, dY = mod.X_HAND.copy(), mod.DY_HAND.copy()
    Y, cache = block_forward(X, params, 0, mod.TINY)
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    return Y, block_backward(dY, cache, params, 0, grads), grads, mod


def test_block_backward_parameter_gradients_equal_a_direct_call():
    """The backward example shows what the stepper does not: the parameter gradients, whole."""
    blocks = example("block_backward_parameter_gradients").blocks
    mod = block_examples()
    _, _, grads, _ = _block(mod.tiny_params())
    matrices = {b["name"]: b["rows"] for b in blocks if b["kind"] == "matrix"}
    assert list(matrices) == [f"grads['b0.{k}']" for k in ("wq", "wk", "wv", "wo", "ff1_w", "ff2_w")]
    for name, rows in matrices.items():
        assert rows == [[fmt_number(x) for x in row] for row in grads[name[7:-2]]]
    steps = example("block_backward_steps").blocks[0]["steps"]
    assert not {s["name"] for s in steps} & {name[7:-2] for name in matrices}     # no array in both


def test_identity_path_returns_dy_exactly():
    blocks = example("block_backward_identity_only").blocks
    mod = block_examples()
    params = mod.tiny_params()
    params["b0.ln1_g"][:] = 0
    params["b0.ln2_g"][:] = 0
    _, dX, _, _ = _block(params)
    assert np.array_equal(dX, mod.DY_HAND)
    assert blocks[-1]["rows"] == [[fmt_number(x) for x in row] for row in mod.DY_HAND]


def test_stepper_adds_show_both_terms_and_their_sum():
    steps = example("block_forward_steps").blocks[0]["steps"]
    assert len(steps) == 7
    for st in steps:
        if "terms" in st:
            a, b = (np.array(t["row"], dtype=float) for t in st["terms"])
            assert np.allclose(a + b, np.array(st["after"], dtype=float), atol=1e-4)


def test_gradcheck_gaps_are_tiny():
    for name in ("ffn_backward_gradcheck", "block_backward_gradcheck"):
        for row in example(name).blocks[0]["rows"]:
            assert float(row["gap"]) < 1e-8, (name, row["name"], row["gap"])


def test_a_gradient_check_is_closed_and_its_summary_gives_the_verdict(site_page):
    """Issue 27: the check's table (each gradient twice) is folded away; its summary counts the
    gradients and gives the largest of the table's own gaps."""
    html = site_page("block")
    checks = re.findall(r'<details class="reference gradcheck"><summary>(.*?)</summary>\s*'
                        r'<div class="scroll"><table class="gradcheck cards">(.*?)</table>', html, re.S)
    assert len(checks) == html.count('<table class="gradcheck'), "a gradient check outside its disclosure"
    assert len(checks) >= 2
    for summary, table in checks:
        gaps = re.findall(r'<td data-label="Largest gap"><code>(.*?)</code>', table)
        worst = max(gaps, key=float)
        assert summary == f"Checked against central differences: {len(gaps)} gradients, largest gap {worst}", summary


def test_references_json_matches_the_source(built_site):
    refs = json.loads((built_site / "references.json").read_text())
    assert refs["references"], "no references recorded"
    for r in refs["references"]:
        assert r["role"] in ("computes", "inline", "tests", "derived", "concept", "listing", "example",
                             "called-by", "tested-by", "prose", "shapes", "shapes-config", "shapes-run", "caches", "value"), r
        if r["start"] is not None:
            lines = (ROOT / r["file"]).read_text().split("\n")
            assert "\n".join(lines[r["start"] - 1:r["end"]]) == r["code"], r
        else:
            assert (ROOT / r["file"]).is_file(), r
    block = [r for r in refs["references"] if r["page"] == "block"]
    assert {r["concept"] for r in block} >= set(CONCEPTS)


def test_references_json_lists_every_kind_of_citation_of_the_block_page(built_site):
    """Which pages cite ffn_forward, and how: its concept, the lines that call it, its direct
    tests, the example that traces it, and the block page's computed values with their source."""
    refs = [r for r in json.loads((built_site / "references.json").read_text())["references"] if r["page"] == "block"]
    roles = {r["role"] for r in refs if r.get("function") == "model.transformer.ffn_forward"}
    assert {"concept", "example"} <= roles
    called_by = {r["function"] for r in refs if r["role"] == "called-by" and r.get("calls") == "model.transformer.ffn_forward"}
    assert "model.transformer.block_forward" in called_by
    assert any(r["role"] == "tested-by" and r["function"] == "tests.test_transformer.test_ffn_worked_example" for r in refs)
    assert any(r["role"] == "caches" for r in refs) and any(r["role"] == "prose" for r in refs)
    values = [r for r in refs if r["role"] == "value"]
    caches = next(r for r in values if r["key"] == "caches")
    assert caches["function"] == "block:facts" and caches["file"] == "content/examples/block.py"
    assert caches["value"] == ["zero", "one", "two", "three", "four", "five"][example("facts").data["caches"]]
    assert caches["origin"].startswith("content/pages/block.md:")


def test_source_pages_have_line_anchors_and_marks(built_site):
    html = (built_site / "source/model/transformer.py.html").read_text()
    n = len((ROOT / "model/transformer.py").read_text().splitlines())
    assert f'id="L{n}"' in html and 'id="L1"' in html
    assert re.search(r'<tr id="L\d+" class="cited">', html)
    assert "block.html#ffn-forward--relu" in html


def test_block_forward_is_its_six_statements():
    from model.attention import attention_forward
    from model.ops import layer_norm_forward
    mod = block_examples()
    params, X, cfg = mod.tiny_params(), mod.X_HAND.copy(), mod.TINY
    Y, _ = block_forward(X, params, 0, cfg)
    Xn = layer_norm_forward(X, params["b0.ln1_g"], params["b0.ln1_b"], cfg.ln_eps)[0]
    att = attention_forward(Xn, params, "b0.", cfg)[0]
    X1 = X + att
    Xn2 = layer_norm_forward(X1, params["b0.ln2_g"], params["b0.ln2_b"], cfg.ln_eps)[0]
    ff = ffn_forward(Xn2, params, "b0.")[0]
    np.testing.assert_array_equal(Y, X1 + ff)


def test_forward_stepper_says_each_step_and_shows_the_stream_before_each_add():
    """Issue 16: one sentence per step; at a residual add "before" is the stream being added to
    (X, then X1), not the branch output of the step before; the reader's row and block."""
    fn = load_example(ROOT, "block:block_forward_steps")
    for row, layer in ((1, 0), (2, 1)):
        block = fn(row=row, layer=layer).blocks[0]
        assert block["row"] == row and f"block {layer}" in block["note"]
        for st in block["steps"]:
            assert st["says"].endswith(".") and st["says"].count(". ") == 0, st["says"]
            if st.get("terms"):
                assert st["before_name"] == st["terms"][0]["name"] and st["before"] == st["terms"][0]["row"]
        assert [st["before_name"] for st in block["steps"] if st.get("terms")] == ["X", "X1"]
    typed = fn(row=0, values=[1.0, -2.0, 0.5, 3.0]).blocks[0]["steps"][0]
    assert typed["after"] == ["1.0000", "-2.0000", "0.5000", "3.0000"], "free input replaces the chosen row of X"


def test_the_intro_names_no_source_that_some_example_lacks(site_page):
    """Issue 24: the intro said every number came from init_params, while the feed-forward
    examples use the hand-picked weights of a test. A source the intro names must be every
    example's; where they differ, each example's own provenance line says it."""
    html = site_page("block")
    intro = re.search(r'<div class="intro">(.*?)</div>', html, re.S).group(1)
    sources = re.findall(r'<p class="provenance">Computed by this build from (.*?)\.</p>', html, re.S)
    assert len(sources) >= 8
    for name in ("init_params", "fixtures", "hand-picked weights"):
        if name in intro:
            assert all(name in s for s in sources), name
    assert "Illustrative example" in intro and "Hand-picked inputs" in intro


def test_block_forward_update_says_how_it_reaches_a_parameter_update(site_page):
    """Issue 24: the heading held only a sentence about cfg.ln_eps, with a typed count."""
    from tests.conftest import concept_section
    section = concept_section(site_page("block"), "block-forward")
    update = section.split('id="block-forward--update"', 1)[1].split("<h3", 1)[0]
    assert "block_backward" in update and "grads" in update and "loss_and_grads" in update
    assert "All three" not in section


def test_an_add_step_shows_each_row_once(site_page):
    """Without JavaScript (and in print) an add's step shows its first term once, as "before",
    then the other term and the sum: never the same row twice."""
    html = concept_section(site_page("block"), "block-forward")
    step = html[html.index("Step 4 of 7: First residual add"):]
    step = step[:step.index("</table>")]
    assert step.count("<code>X[1]</code>") == 1, step
    assert "before: <code>X[1]</code>" in step and "+ <code>att[1]</code>" in step


def test_heads_are_numbered_once_per_example(site_page):
    """The 2017 step's attention example says how heads are numbered once (its table's caption),
    not again in the example's caption right above it; the concept's note says it once more, and
    the cross-attention backward example, which has heads of its own, once."""
    html = site_page("seq2seq-step")
    examples = html.split('<div class="example"')[1:]
    assert [e.count("Heads are numbered from 0") for e in examples if "Heads are numbered" in e] == [1, 1]
    assert html.split('<div class="example"')[0].count("Heads are numbered from 0") == 1      # the note
