"""The lesson first: each concept's evidence (the tests that reach it, the code-and-math
connection) is one closed disclosure a click away; phones and narrow desktops keep the parts
that matter on screen."""
import pytest

CLOSE_ALL = "for (const d of document.querySelectorAll('details')) d.open = false"

# Links to tests a reader sees with every disclosure closed, other than an equation's own
# "Tests it" link and the prose's: the listings of tests the disclosure holds.
VISIBLE_TEST_LISTINGS = """() => [...document.querySelectorAll('main section.concept a[href*="source/tests/"]')]
  .filter(a => a.checkVisibility() && !a.closest('.eq-refs, p, li, .example, .note'))
  .map(a => a.textContent)"""


def concept_pages(site_pages, built_site):
    return [p for p in site_pages if "/" not in p and 'class="concept"' in (built_site / p).read_text(encoding="utf-8")]


def test_no_test_listing_is_visible_with_the_disclosures_closed(page, site_url, site_pages, built_site):
    """With every disclosure closed, no concept lists its tests: the count links into it."""
    pages = concept_pages(site_pages, built_site)
    assert len(pages) >= 10
    for name in pages:
        page.goto(site_url + name)
        page.evaluate(CLOSE_ALL)
        assert page.evaluate(VISIBLE_TEST_LISTINGS) == [], name
        counts = page.locator("dl.used a.to-evidence")
        assert counts.count() >= 1, name


def test_the_test_count_opens_the_evidence(page, site_url):
    page.goto(site_url + "block.html")
    evidence = page.locator("#ffn-forward--evidence")
    assert evidence.evaluate("d => d.open") is False
    assert not page.locator("#ffn-forward--tests").is_visible()
    page.locator("#ffn-forward--used + dl.used a.to-evidence").click()
    assert evidence.evaluate("d => d.open") is True
    assert page.locator("#ffn-forward--tests").is_visible()
    page.evaluate("document.querySelector('#ffn-forward--evidence').open = false")
    page.locator("#ffn-forward--used + dl.used a.to-evidence").click()     # the same hash again: no hashchange
    assert evidence.evaluate("d => d.open") is True


def test_a_link_to_an_anchor_inside_opens_it(page, site_url):
    page.goto(site_url + "block.html#block-forward--connection")
    assert page.locator("#block-forward--evidence").evaluate("d => d.open") is True
    assert page.locator("#block-forward--connection").is_visible()


def test_printing_opens_the_evidence(page, site_url):
    page.goto(site_url + "block.html")
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    assert page.evaluate("[...document.querySelectorAll('details.provenance')].every(d => d.open)")
    page.evaluate("window.dispatchEvent(new Event('afterprint'))")
    assert page.evaluate("[...document.querySelectorAll('details.provenance')].every(d => !d.open)")
