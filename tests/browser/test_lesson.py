"""The lesson first: each concept's evidence (the tests that reach it, the code-and-math
connection) is one closed disclosure a click away; phones and narrow desktops keep the parts
that matter on screen."""
import pytest
from playwright.sync_api import expect

from tests.timing import within

CLOSE_ALL = "for (const d of document.querySelectorAll('details')) d.open = false"

# Links to tests a reader sees with every disclosure closed, other than an equation's own
# "Tests it" link and the prose's: the listings of tests the disclosure holds.
VISIBLE_TEST_LISTINGS = """() => [...document.querySelectorAll('main section.concept a[href*="source/tests/"]')]
  .filter(a => a.checkVisibility() && !a.closest('.eq-refs, p, li, .example, .note'))
  .map(a => a.textContent)"""


def concept_pages(site_pages, built_site):
    return [p for p in site_pages if "/" not in p and 'class="concept"' in (built_site / p).read_text(encoding="utf-8")]


# Per concept section: whether its evidence disclosure comes before "Where is it used?".
EVIDENCE_BEFORE_USED = """() => [...document.querySelectorAll('section.concept')].map(s => {
    const ev = s.querySelector(':scope > details.provenance'), used = s.querySelector(':scope > h3[id$="--used"]');
    return !ev || !used || !!(ev.compareDocumentPosition(used) & Node.DOCUMENT_POSITION_FOLLOWING); })"""


@pytest.fixture(scope="module")
def concept_visits(browser, site_url, site_pages, built_site):
    """{page: what the two tests below read}, every concept page loaded once (a load is most of
    a browser test's cost): first what a reader meets as the page opens (the evidence's place,
    the first equations' copy buttons), then the page with every disclosure closed."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    visits = {}
    for name in concept_pages(site_pages, built_site):
        page.goto(site_url + name)
        buttons = page.locator("figure.equation .copy-link")
        copy = [(b.inner_text().strip(), b.get_attribute("aria-label"))
                for b in (buttons.nth(i) for i in range(min(buttons.count(), 3)))]
        order = page.evaluate(EVIDENCE_BEFORE_USED)
        page.evaluate(CLOSE_ALL)
        visits[name] = dict(order=order, copy=copy, listings=page.evaluate(VISIBLE_TEST_LISTINGS),
                            counts=page.locator("dl.used a.to-evidence").count())
    context.close()
    return visits


def test_no_test_listing_is_visible_with_the_disclosures_closed(concept_visits):
    """With every disclosure closed, no concept lists its tests: the count links into it."""
    assert len(concept_visits) >= 10
    for name, seen in concept_visits.items():
        assert seen["listings"] == [], name
        assert seen["counts"] >= 1, name


def test_the_evidence_follows_the_code_and_each_equation_is_copied_by_an_icon(concept_visits):
    """What a reader meets before the first thing to open: in every concept the evidence
    disclosure sits where the connection table did (after the listing, before "Where is it
    used?"), and an equation's copy button is an icon named for screen readers, not two
    words repeated under every equation."""
    for name, seen in concept_visits.items():
        assert all(seen["order"]), name
        for text, label in seen["copy"]:
            assert text == "" and label.startswith("Copy link to "), name


def test_the_test_count_opens_the_evidence(page, site_url):
    page.goto(site_url + "block.html")
    evidence = page.locator("#ffn-forward--evidence")
    assert evidence.evaluate("d => d.open") is False
    assert not page.locator("#ffn-forward--tests").is_visible()
    # The link's own click event, not a pointer click at where it was: on a loaded machine the
    # page laid out sections coming into view (content-visibility) between Playwright finding the
    # link and clicking, and the click landed beside it (one loaded run of the suite; test_flow.py
    # met the same). A pointer click is still tested: test_flow.py's URL test.
    page.locator("#ffn-forward--used + dl.used a.to-evidence").dispatch_event("click")
    # waited for: the first click opens it in the hashchange handler, a task queued after the
    # click returns (one loaded run of the suite read it still closed)
    expect(evidence).to_have_js_property("open", True, timeout=within(10) * 1000)
    assert page.locator("#ffn-forward--tests").is_visible()
    page.evaluate("document.querySelector('#ffn-forward--evidence').open = false")
    page.locator("#ffn-forward--used + dl.used a.to-evidence").dispatch_event("click")   # the same hash again: no hashchange
    expect(evidence).to_have_js_property("open", True, timeout=within(10) * 1000)


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


PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture
def at(page):
    """at(viewport, scheme='light') -> the test's page at that size, in that scheme."""
    def open_(viewport, scheme="light"):
        page.set_viewport_size(viewport)
        page.emulate_media(color_scheme=scheme)
        return page
    return open_


def test_the_2017_steps_computed_columns_are_on_a_phone(at, site_url):
    page = at(PHONE)
    page.goto(site_url + "seq2seq-step.html#seq2seq-step-enc-attention--example")
    cells = page.locator('#seq2seq-step-enc-attention table.cards td[data-label^="This code"]')
    assert cells.count() >= 2
    for i in range(2):
        cell = cells.nth(i)
        cell.scroll_into_view_if_needed()
        box = cell.bounding_box()
        assert box["width"] > 100 and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
        assert cell.evaluate("td => getComputedStyle(td, '::before').content").startswith('"This code')



# Every table of computed values, every disclosure opened and every part laid out: (page, where, how much wider than its
# box). A matrix of numbers (table.numbers) scrolls in its box by design: its columns are indices.
TABLES_WIDER_THAN_THEIR_BOX = """async () => {
  for (const d of document.querySelectorAll('details')) d.open = true;
  // Far off screen, a table's box is not laid out (content-visibility, site.css): lay out all.
  const all = document.createElement('style');
  all.textContent = '* { content-visibility: visible !important; }';
  document.head.append(all);
  await document.fonts.ready;
  for (let i = 0; i < 2; i++) await new Promise(requestAnimationFrame);      // laid out after the opening
  return [...document.querySelectorAll('main table.steps, main table.generic, main table.gradcheck, main table.params')]
    .filter(t => t.checkVisibility())
    .map(t => [t.closest('[id]').id, t.className, Math.round(t.getBoundingClientRect().right - document.documentElement.clientWidth),
               Math.round(t.scrollWidth - t.clientWidth)])
    .filter(([, , beyond, hidden]) => beyond > 1 || hidden > 1);
}"""


@pytest.mark.parametrize("name", ["block.html", "attention.html", "seq2seq-step.html", "model.html", "layernorm.html", "tokens.html"])
def test_every_table_of_computed_values_fits_a_phone(at, site_url, name):
    """At 390 px no table of steps, values, gradient checks or parameters reaches past the
    screen or hides a column in a sideways-scrolling box: a table too wide for a phone is a
    stack of cards there (site_builder/render/html.py cards_on_a_phone)."""
    page = at(PHONE)
    page.goto(site_url + name)
    assert page.evaluate(TABLES_WIDER_THAN_THEIR_BOX) == []


def test_a_gradient_check_shows_both_computations_on_a_phone(at, site_url):
    """Both columns a gradient check compares, the formula's and central differences', are on
    screen at 390 px, once its closed disclosure is opened: the table is a stack of cards there,
    as the comparison tables are."""
    page = at(PHONE)
    page.goto(site_url + "seq2seq-step.html#seq2seq-step-cross-back")
    check = page.locator("#seq2seq-step-cross-back details.gradcheck").first
    assert check.evaluate("d => d.open") is False
    check.locator("summary").click()
    for label in ("From the backward formula", "From central differences", "Largest gap"):
        cell = page.locator(f'#seq2seq-step-cross-back table.gradcheck td[data-label="{label}"]').first
        cell.scroll_into_view_if_needed()
        box = cell.bounding_box()
        assert box["width"] > 200 and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (label, box)


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_an_anchor_lands_below_the_header(at, site_url, viewport):
    """The header wraps to two rows on a phone: a target must not land under it."""
    page = at(viewport)
    for target in ("layernorm-forward--tests", "layernorm-forward--connection", "layernorm-forward--what"):
        page.goto(site_url + f"layernorm.html#{target}")
        gap = f"""document.getElementById('{target}').getBoundingClientRect().top
                  - document.querySelector('.topbar').getBoundingClientRect().bottom"""
        try:        # the header settles (theme.js sets its button's label), then the page scrolls again
            page.wait_for_function(f"({gap}) >= 0", timeout=10_000)
        except Exception:
            pytest.fail(f"#{target} stays {page.evaluate(gap):.0f} px under the header")

def test_symbol_tables_keep_their_shape_column_on_a_phone(at, site_url):
    page = at(PHONE)
    page.goto(site_url + "block.html#ffn-forward--symbols")
    for table in page.locator("table.symbols").all()[:3]:
        shape = table.locator("th").nth(3)
        shape.scroll_into_view_if_needed()
        box = shape.bounding_box()
        assert box["x"] + box["width"] <= PHONE["width"] + 0.5, box
        assert table.evaluate("t => t.parentElement.scrollWidth <= t.parentElement.clientWidth + 1")


def test_heatmap_labels_are_at_least_11px_and_the_title_fits_on_a_phone(at, site_url):
    page = at(PHONE)
    page.goto(site_url + "attention.html")
    scales = page.evaluate("""[...document.querySelectorAll('svg.heatmap')].map(s =>
        s.getBoundingClientRect().width / s.viewBox.baseVal.width)""")
    assert scales and min(scales) >= 0.999, scales            # drawn at 11 px labels, never shrunk
    assert page.evaluate("(() => { const b = document.querySelector('.brand'); return b.scrollWidth <= b.clientWidth"
                         " && b.getBoundingClientRect().right <= innerWidth; })()")


def test_code_listings_get_the_full_column_at_1280(at, site_url):
    page = at(DESKTOP)
    page.goto(site_url + "block.html")
    assert not page.locator("nav.toc").is_visible()
    main = page.locator("main").evaluate("m => m.clientWidth")
    width = page.locator('.listing[aria-labelledby="block-forward--code"]').first.evaluate("l => l.getBoundingClientRect().width")
    assert width >= main - 1 and main >= 900, (width, main)
    clipped = page.evaluate("""[...document.querySelectorAll('.sidebar a')]
        .filter(a => a.scrollWidth > a.clientWidth + 1).map(a => a.textContent)""")
    assert clipped == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_masked_heatmap_cells_recede(at, site_url, scheme):
    """A masked cell is the background, hatched: never brighter (dark) or darker (light) than
    the faintest weight, which is the background at some opacity of the weight's colour."""
    page = at(DESKTOP, scheme)
    page.goto(site_url + "attention.html")
    fill, bg, hatched = page.evaluate("""(() => { const r = document.querySelector('svg.heatmap .cells rect.masked');
        return [getComputedStyle(r).fill, getComputedStyle(document.body).backgroundColor,
                r.nextElementSibling.classList.contains('hatch')]; })()""")
    assert fill == bg and hatched, (fill, bg)


def test_the_phone_header_takes_two_rows_and_the_whole_title(at, site_url):
    """At 390 px the title, Menu and the theme button share the first row (the button says
    "Dark" or "Light"; its accessible name is the whole sentence) and search has the second."""
    page = at(PHONE)
    page.goto(site_url + "seq2seq-step.html")
    toggle = page.locator(".theme-toggle")
    page.wait_for_function("!document.querySelector('.theme-toggle').hidden")      # theme.js labelled it
    box = {el: page.locator(el).bounding_box() for el in (".nav-toggle", ".brand", ".theme-toggle", ".search")}
    middle = [b["y"] + b["height"] / 2 for b in box.values()]
    assert max(middle[:3]) - min(middle[:3]) < 4, box                      # one row: Menu, title, theme
    assert box[".search"]["y"] >= max(b["y"] + b["height"] for b in list(box.values())[:3]), box
    brand = page.locator(".brand")
    assert brand.evaluate("b => b.scrollWidth <= b.clientWidth"), "the title is cut"
    assert page.locator(".topbar").bounding_box()["height"] <= 100
    assert toggle.inner_text() in ("Dark", "Light")
    assert toggle.get_attribute("aria-label") == f"Switch to {toggle.inner_text().lower()} theme"


def test_visible_words_counts_the_closed_page_and_the_words_before_the_first_disclosure(page, tmp_path):
    """benchmarks/visible_words.py, the measure of issue 27: a closed disclosure is its summary;
    the words before the first disclosure stop at it, and a page with none is all of them."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "visible_words.py"
    spec = importlib.util.spec_from_file_location("visible_words", path)
    visible_words = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(visible_words)
    (tmp_path / "a.html").write_text("<main><section><p>one two</p><details open><summary>three</summary>"
                                     "<p>folded away</p></details></section><p>four <a href='source/tests/t.html'>five</a>"
                                     "</p></main>", encoding="utf-8")
    (tmp_path / "b.html").write_text("<main><p>one <a href='source/tests/t.html'>two</a></p></main>", encoding="utf-8")
    (tmp_path / "404.html").write_text("<main><p>not measured</p></main>", encoding="utf-8")
    assert visible_words.measure_in(page, tmp_path) == {"a.html": [5, 2, 1], "b.html": [2, 2, 1]}
