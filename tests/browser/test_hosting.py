"""The site under its sub-path, as GitHub Pages serves it (every browser test runs there:
conftest.py's site_url). Here the one page the host serves at URLs of its own choosing: a missing
URL deep under the sub-path gets the 404 page, which loads its stylesheet and scripts, and
whose search finds pages and leads to them."""
import pytest

from tests.browser.test_search import search


@pytest.mark.parametrize("missing", ["no-such-page.html", "a/b/c/no-such-page.html"])
def test_the_404_page_works_at_any_depth(page, site_url, site_path, missing):
    failed = []
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 and r.url != site_url + missing else None)
    response = page.goto(site_url + missing)
    assert response.status == 404
    assert page.locator("h1").inner_text() == "Page not found"
    # The stylesheet applied: the layout's grid and the theme toggle its script shows.
    assert page.locator(".layout").evaluate("e => getComputedStyle(e).display") == "grid"
    assert page.locator(".theme-toggle").is_visible()
    hrefs = search(page, "layer_norm_backward")
    assert hrefs and all(h.startswith(site_path) for h in hrefs), hrefs
    assert not any("404" in h for h in hrefs), "the 404 page is not indexed"
    page.locator("#search-results a").first.click()
    page.wait_for_load_state("load")
    assert page.url.startswith(site_url) and page.locator("section.concept").first.is_visible()
    assert failed == []
