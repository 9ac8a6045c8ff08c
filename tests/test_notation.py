"""One notation across the site: a symbol two pages declare for two things is a `check`
warning naming both lines (site_builder/render/symbols.py notation_clashes)."""
from site_builder.build.gather_step import notation_problems
from site_builder.gather.content import load_content
from site_builder.render.symbols import notation_clashes
from tests.conftest import ROOT


class Row(dict):
    def __init__(self, line, **kw):
        super().__init__(**kw)
        self.line = line

    def line_of(self, key):
        return self.line


def test_two_meanings_on_two_pages_name_both_lines():
    mask = Row(7, tex="M", meaning="The mask", code="causal_mask(T)", shape="(T, T)")
    memory = Row(9, tex="M", meaning="The memory", code="memory", shape="(S, d)")
    row_of_memory = Row(3, tex="M", meaning="One row of the memory", code="memory", shape="(d,)")
    assert notation_clashes([("a.md", [mask]), ("b.md", [memory])]) == [
        ("M", ("a.md", 7, "The mask"), ("b.md", 9, "The memory"))]
    # one array at another length, or one row of it, is one meaning
    assert notation_clashes([("b.md", [memory]), ("c.md", [row_of_memory])]) == []


def test_the_site_writes_the_additive_mask_one_way():
    """attention.html and the 2017 step both write the 0 / minus infinity array as M-bar, and the
    boolean mask M: no warning pairs the two pages on either letter."""
    problems = notation_problems(load_content(ROOT, []))
    assert all(p.warning for p in problems)
    pair = {"content/pages/attention.md", "content/pages/seq2seq-step.md"}
    for p in problems:
        other = p.message.rsplit(" at ", 1)[1].split(":")[0]
        assert {str(p.file), other} != pair, p.message
    text = (ROOT / "content/pages/seq2seq-step.md").read_text()
    assert r"\bar{M}_{ts} = \begin{cases} 0 & s \le t \\ -\infty" in text


def test_a_letter_the_project_reuses_knowingly_is_not_warned(tmp_path):
    content = load_content(ROOT, [])
    content.site["notation_reused"] = []
    assert any("symbol 'Z'" in p.message for p in notation_problems(content))
    assert notation_problems(load_content(ROOT, [])) == []


def test_the_memory_is_one_symbol_and_not_the_mask():
    """M is the boolean mask (attention.html); the encoder's memory is ENC on every page, so M
    needs no exception in site.yaml."""
    content = load_content(ROOT, [])
    assert "M" not in content.site["notation_reused"]
    content.site["notation_reused"] = []
    assert not any("symbol 'M'" in p.message for p in notation_problems(content))


def test_check_page_warns_of_a_clash_its_page_is_in_on_either_side():
    """A newcomer met the clash only in the full check: check --page now names it too, whether
    the checked page comes before or after the other in the reading order."""
    content = load_content(ROOT, [])
    content.site["notation_reused"] = []
    clashes = notation_problems(content)
    first = str(clashes[0].file)
    second = clashes[0].message.rsplit(" at ", 1)[1].split(":")[0]
    for file in (first, second):
        assert clashes[0] in notation_problems(content, {file})
    unrelated = {str(p.file) for p in content.pages.values()} - {str(p.file) for p in clashes} - {
        p.message.rsplit(" at ", 1)[1].split(":")[0] for p in clashes}
    assert unrelated and notation_problems(content, unrelated) == []
