"""Search: Pagefind's index of the built site, through the search box. A function name lands
on the concept that documents it."""
import pytest

from tests.browser.conftest import concept_of


def search(page, query):
    page.fill("#search-input", query)
    page.wait_for_selector(f"#search-results[data-query='{query}']", timeout=20_000)
    return page.locator("#search-results a").evaluate_all("links => links.map(a => a.getAttribute('href'))")


@pytest.mark.parametrize("function", ["model.ops.layer_norm_backward", "model.transformer.block_backward"])
def test_a_function_name_lands_on_its_concept(page, site_url, site_path, built_site, function):
    where = concept_of(built_site, function)
    if where is None:
        pytest.skip(f"no page documents {function} in this build yet")
    slug, concept = where
    page.goto(site_url + "index.html")
    hrefs = search(page, function.split(".")[-1])
    assert hrefs and hrefs[0] == f"{site_path}{slug}#{concept}", hrefs
    page.locator("#search-results a").first.click()
    page.wait_for_url(f"**/{slug}#{concept}")
    assert page.locator(f"section#{concept}").is_visible()


def test_layer_norm_backward_is_found(page, site_url):
    page.goto(site_url + "block.html")
    hrefs = search(page, "layer_norm_backward")
    assert any("#" in h for h in hrefs)


def test_titles_equation_names_and_symbols_are_indexed(page, site_url, site_path):
    page.goto(site_url + "index.html")
    assert any(h.startswith(site_path + "block.html") for h in search(page, "Second residual add"))   # an equation's name
    assert any(h.startswith(site_path + "block.html") for h in search(page, "Transformer Block"))     # a title
    assert any(h.startswith(site_path + "block.html") for h in search(page, "dX1_branch"))            # a symbol's code name
    # keyboard: Down reaches the results, Escape closes them
    page.focus("#search-input")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.closest('#search-results') !== null")
    page.keyboard.press("Escape")
    assert page.locator("#search-results").is_hidden()
    page.keyboard.press("Escape")
    page.locator("main").click()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "search-input"
