"""A line range in a source page's address marks exactly those rows."""
import pytest


@pytest.fixture
def source_url(site_url):
    return f"{site_url}/source/model/transformer.py.html"


def test_a_range_marks_its_rows_and_a_single_line_is_the_target(page, source_url):
    page.goto(f"{source_url}#L10-L13")
    marked = page.eval_on_selector_all("tr.in-range", "rows => rows.map(r => r.id)")
    assert marked == ["L10", "L11", "L12", "L13"]
    page.goto(f"{source_url}#L20-L21")
    assert page.eval_on_selector_all("tr.in-range", "rows => rows.map(r => r.id)") == ["L20", "L21"]
    page.goto(f"{source_url}#L5")
    assert page.eval_on_selector_all("tr.in-range", "rows => rows.length") == 0
    assert page.evaluate("document.querySelector(':target').id") == "L5"
