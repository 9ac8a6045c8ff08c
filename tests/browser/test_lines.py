"""A line range in a source page's address marks exactly those rows."""
import pytest
from playwright.sync_api import expect


@pytest.fixture
def source_url(site_url):
    return f"{site_url}/source/model/transformer.py.html"


def test_a_range_marks_its_rows_and_a_single_line_is_the_target(page, source_url):
    page.goto(f"{source_url}#L10-L13")
    marked = page.eval_on_selector_all("tr.in-range", "rows => rows.map(r => r.id)")
    assert marked == ["L10", "L11", "L12", "L13"]
    # The same page at another hash: lines.js marks it on hashchange, a task that may run after
    # goto returns, so the rows are waited for.
    page.goto(f"{source_url}#L20-L21")
    expect(page.locator("tr.in-range")).to_have_count(2, timeout=10000)
    assert page.eval_on_selector_all("tr.in-range", "rows => rows.map(r => r.id)") == ["L20", "L21"]
    page.goto(f"{source_url}#L5")
    expect(page.locator("tr.in-range")).to_have_count(0, timeout=10000)
    assert page.evaluate("document.querySelector(':target').id") == "L5"


def test_a_line_number_opens_its_line(page, site_url, source_url):
    """Line numbers are plain text in the HTML; site.js makes a click open that line: on a
    source page it becomes the address's line, in a page's listing the source page's line."""
    page.goto(source_url)
    page.click("tr#L12 td.ln")
    assert page.evaluate("location.hash") == "#L12"
    page.goto(f"{site_url}/block.html")
    row = page.locator("table.code-table[data-src] tr[data-line]").first
    line = row.get_attribute("data-line")
    src = row.evaluate("r => r.closest('table').dataset.src")
    row.locator("td.ln").click()
    page.wait_for_url(f"**/{src}#L{line}")
    assert page.evaluate("document.querySelector(':target').id") == f"L{line}"
