"""Nothing is cut off: no page scrolls sideways, and every line of code is either fully
visible or inside a box that scrolls (which then shows it: site.css, site.js).

Every page of the build is opened once per width (a phone, 390 px, and the desktop layout,
1280 px) in one tab, and both checks read that one load: the results are collected in a
module fixture and the two tests assert on them."""
import pytest

WIDTHS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 800}}

# For one page: the document's overflow, and the code lines that are cut off with no scroll
# box around them. A code line is a listing's code cell or any <code> in the page; it is cut
# when its box reaches past the nearest ancestor that clips (overflow other than visible), or
# past the viewport when none does, or when it clips its own text.
MEASURE = """() => {
  const doc = document.documentElement;
  const cut = [];
  for (const el of document.querySelectorAll("main td.code, main code")) {
    if (el.closest("template, details:not([open]), [hidden]")) continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;          // not drawn (display: none)
    let clip = null;
    for (let a = el.parentElement; a && a !== doc; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox !== "visible") { clip = [a, ox]; break; }
    }
    if (clip && (clip[1] === "auto" || clip[1] === "scroll")) continue;   // scrolls in its own box
    const right = clip ? clip[0].getBoundingClientRect().right : doc.clientWidth;
    const own = el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible";
    if (box.right > right + 1 || own) cut.push(el.textContent.trim().slice(0, 60));
  }
  return {scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, cut: cut.slice(0, 5), cutCount: cut.length};
}"""


@pytest.fixture(scope="module")
def overflow(browser, site_url, site_pages):
    """{width name: {page: measurement}} for every page at both widths."""
    results = {}
    for name, viewport in WIDTHS.items():
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        results[name] = {}
        for path in site_pages:
            page.goto(site_url + path, wait_until="load")
            results[name][path] = page.evaluate(MEASURE)
        context.close()
    return results


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways(overflow, width):
    wide = {p: f"{m['scrollWidth']} > {m['clientWidth']}" for p, m in overflow[width].items()
            if m["scrollWidth"] > m["clientWidth"]}
    assert overflow[width] and not wide, f"pages wider than the {width} viewport: {wide}"


@pytest.mark.parametrize("width", WIDTHS)
def test_every_code_line_is_visible_or_scrolls_in_its_box(overflow, width):
    cut = {p: (m["cutCount"], m["cut"]) for p, m in overflow[width].items() if m["cutCount"]}
    assert not cut, f"code cut off with no scroll box around it at {width} width: {cut}"


def test_an_anchor_far_down_the_longest_page_lands_on_its_target(browser, site_url, built_site):
    """Listings, equations and tables far off screen are not laid out until they come near it
    (content-visibility, site.css), and long reference parts are collapsed: a link to the
    last listing of the longest page must still land on it, and stay there once the parts
    around it are drawn."""
    import re
    longest = max(built_site.glob("*.html"), key=lambda p: p.stat().st_size)
    target = re.findall(r'id="([^"]+--code)"', longest.read_text(encoding="utf-8"))[-1]
    for viewport in WIDTHS.values():
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        page.goto(f"{site_url}{longest.name}#{target}")
        top = f"document.getElementById('{target}').getBoundingClientRect().top"
        padding = "parseFloat(getComputedStyle(document.documentElement).scrollPaddingTop)"
        try:        # waited for, not slept on: the page settles (fonts, figures), then scrolls again
            page.wait_for_function(f"scrollY > 0 && Math.abs(({top}) - ({padding})) <= 2", timeout=10_000)
        except Exception:
            pytest.fail(f"{longest.name}#{target}: top {page.evaluate(top):.1f} px, scroll padding "
                        f"{page.evaluate(padding):.1f} px, scrollY {page.evaluate('scrollY')}")
        context.close()
