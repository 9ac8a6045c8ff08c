"""Figures, measured in the browser: no two text boxes of a figure overlap, no tick label is cut
off by its SVG's viewBox, every heatmap has a colour scale, line plots fit their column without
scrolling (a phone sees the plot drawn for it) and so do architecture diagrams at desktop width,
and a value can be read off a heatmap cell by hovering and off a line plot by keyboard. Every
page with a figure, in both themes, at phone and desktop width (one load per width, measured
in each theme); each page's figures are measured in one evaluate call (a drawing hidden at that
width is not measured)."""
import re

import pytest

FIGURES = "svg.chart, svg.heatmap, svg.arch-svg"
SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}
SCHEMES = ("light", "dark")

# For each figure: its text boxes that overlap (by more than half a pixel each way), and its
# tick labels whose box in the SVG's own units leaves the viewBox.
MEASURE = """(sel) => [...document.querySelectorAll(sel)].filter((svg) => svg.getClientRects().length).map((svg, k) => {
  const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim());
  const boxes = texts.map((t) => t.getBoundingClientRect());
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (w > 0.5 && h > 0.5) overlaps.push([texts[i].textContent, texts[j].textContent]);
  }
  const vb = svg.viewBox.baseVal;
  const clipped = [...svg.querySelectorAll("text.tick, text.axis-label, text.arch-label, text.arch-out")]
    .filter((t) => { const b = t.getBBox();
      return t.transform.baseVal.numberOfItems === 0 &&
        (b.x < vb.x - 0.5 || b.y < vb.y - 0.5 || b.x + b.width > vb.x + vb.width + 0.5 || b.y + b.height > vb.y + vb.height + 0.5); })
    .map((t) => t.textContent);
  const outer = svg.getBoundingClientRect();
  const rotated = [...svg.querySelectorAll("text[transform]")].filter((t) => {
    const b = t.getBoundingClientRect();
    return b.left < outer.left - 0.5 || b.top < outer.top - 0.5 || b.right > outer.right + 0.5 || b.bottom > outer.bottom + 0.5;
  }).map((t) => t.textContent);
  const box = svg.parentElement;
  return {k, cls: svg.getAttribute("class"), label: svg.getAttribute("aria-label"), texts: texts.length,
          scrolls: box.scrollWidth > box.clientWidth + 1,
          overlaps, clipped: clipped.concat(rotated),
          scale: svg.classList.contains("heatmap") ? svg.querySelectorAll("g.scale text.tick").length : null};
})"""


@pytest.fixture(scope="module")
def figure_pages(pages_with):
    pages = sorted(set(pages_with('<svg class="chart"') + pages_with('<svg class="heatmap"') + pages_with('<svg class="arch-svg"')))
    assert {"training.html", "attention.html", "positions.html", "warmup.html", "block.html", "model.html",
            "seq2seq.html"} <= set(pages), pages
    return pages


@pytest.mark.parametrize("size", list(SIZES))
def test_no_text_overlaps_or_is_clipped_and_every_heatmap_has_a_scale(page, site_url, figure_pages, size):
    """Each page loaded once per size and measured in each theme: the theme is the system's
    (prefers-color-scheme, emulated), which site.css follows live, so the load is measured
    again after the switch rather than loaded again (a load is most of the cost)."""
    page.set_viewport_size(SIZES[size])
    problems, counted = [], dict.fromkeys(SCHEMES, 0)
    for path in figure_pages:
        page.goto(site_url + path)
        page.evaluate("document.fonts.ready.then(() => true)")
        for scheme in SCHEMES:
            page.emulate_media(color_scheme=scheme)
            assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (scheme == "dark")
            for fig in page.evaluate(MEASURE, FIGURES):
                counted[scheme] += 1
                where = f"{path} figure {fig['k']} ({fig['label']}), {scheme} theme"
                assert fig["texts"] > 0, where
                if fig["overlaps"]:
                    problems.append(f"{where}: overlapping text {fig['overlaps'][:3]}")
                if fig["clipped"]:
                    problems.append(f"{where}: text outside the viewBox {fig['clipped'][:3]}")
                if fig["scale"] is not None and fig["scale"] < 2:
                    problems.append(f"{where}: a heatmap without a labelled colour scale")
                fits = fig["cls"].startswith("chart") or (fig["cls"] == "arch-svg" and size == "desktop")
                if fits and fig["scrolls"]:
                    problems.append(f"{where}: scrolls sideways in its box at {size} width")
    assert min(counted.values()) >= 20, counted
    assert not problems, "\n".join(problems)


def test_hovering_a_heatmap_cell_shows_its_value(page, site_url):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(site_url + "attention.html")
    svg = page.locator("svg.heatmap").first
    svg.scroll_into_view_if_needed()
    x0, y0, cell, rows, cols = map(float, svg.get_attribute("data-grid").split())
    r, c = int(rows) - 1, 0                          # the last row's first cell: never masked
    values = svg.locator("g.cells").nth(r).get_attribute("data-v").split()
    tip = page.locator("figure .fig-tip").first

    def hover(x, y, expect):
        """Move the pointer over the SVG point (x, y) until the read-out says `expect`: the
        sections around a jump render a frame later (content-visibility) and the math font
        may arrive, so the heatmap can move after its position was read; read it again."""
        for _ in range(10):
            point = page.evaluate("""([svg, x, y]) => { const m = svg.getScreenCTM();
                const p = new DOMPoint(x, y).matrixTransform(m); return [p.x, p.y]; }""",
                                  [svg.element_handle(), x, y])
            page.mouse.move(*point)
            try:
                page.wait_for_function("([tip, expect]) => !tip.hidden && tip.textContent.endsWith(expect)",
                                       arg=[tip.element_handle(), expect], timeout=1000)
                return tip.text_content()
            except Exception:
                page.mouse.move(0, 0)
        raise AssertionError(f"no read-out ending {expect!r}; last: {tip.text_content()!r}")

    assert values[c] != "m"
    text = hover(x0 + c * cell + cell / 2, y0 + r * cell + cell / 2, values[c])
    assert re.search(r"query: character t .+, key: character s .+: weight ", text), text
    # A masked cell (above the diagonal) says so.
    hover(x0 + (cols - 1) * cell + cell / 2, y0 + cell / 2, "hidden by the causal mask")


def test_a_line_plot_reads_out_by_keyboard(page, site_url):
    page.goto(site_url + "training.html")
    chart = page.locator("svg.chart").first
    line = chart.locator("polyline.line").first
    xs, ys = line.get_attribute("data-x").split(), line.get_attribute("data-y").split()
    chart.focus()
    tip = page.locator("figure .fig-tip").first
    tip.wait_for(state="visible")
    assert tip.text_content().endswith(f"{ys[0]} at step {xs[0]}")
    page.keyboard.press("ArrowRight")
    assert tip.text_content().endswith(f"{ys[1]} at step {xs[1]}")
    page.keyboard.press("End")
    assert tip.text_content().endswith(f"{ys[-1]} at step {xs[-1]}")
    assert tip.get_attribute("role") == "status"
