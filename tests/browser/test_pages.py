"""Every page of the build, visited once: it loads with no console error, no uncaught
exception and no failed request, shows no raw TeX, and has no serious or critical axe-core
violation. A page opened from file:// throws nothing either, and a page without JavaScript
still shows the whole stepper and flow diagram.

Speed: axe-core is most of the cost, and its color-contrast rule alone is more than half of
it (it computes the background behind every text node: seconds on a page of 10,000 elements).
So every page runs every other axe rule, and color-contrast runs on the pages of FULL_CONTRAST,
in the light theme and in the dark one. Colour is decided by one stylesheet for the whole
site, and those pages hold every kind of part it styles (equations, symbol and example tables,
the stepper, the flow diagram, notes and badges, code listings with cited and current lines,
the call map); tests/test_contrast.py checks every token colour of static/pygments.css against
every background code sits on. Set BROWSER_TESTS_FULL_AXE=1 to run color-contrast on every
page, in both themes (minutes, not seconds). Two tabs run axe at once, each on its own page:
Chromium gives each tab its own renderer, so both cores work. Axe is started from a timer, so
the test opens the other tab's page while the first runs axe's synchronous start (back to back
at load 4-7: 55 s before, 47 s after).

Axe runs on every page but the source pages: they are all made by one template, so axe runs on
the one of FULL_CONTRAST (source/model/transformer.py.html, the package's biggest) and on no
other. The tests' source pages were half of axe's time (37 of 66 pages, 28 of 60 s alone on a
quiet machine, 2026-12-03); the package's other 12 were about 9 s of the rest (2026-12-04).
Every page still loads with no console error, no failed request and no raw TeX. The larger
size (TBH_LARGE=1, tests/sizes.py) and BROWSER_TESTS_FULL_AXE=1 run axe on every page.

Nothing is cut off either: no page scrolls sideways, and every line of code is either fully
visible or inside a box that scrolls (which then shows it: site.css, site.js), at a phone's
width (390 px) and at the desktop layout's (1280 px). Each page is opened once per width, and
every check of that width reads that one load (the `visits` fixture): the desktop load is the
one axe runs on, measured before axe starts. A page load is most of a browser test's cost
(0.5-1 s of Chromium's CPU for a concept page, 2026-12-07), and the overflow checks loaded every
page at 1280 px a second time when they were a module of their own.
"""
import os
import re
from dataclasses import dataclass

import pytest
from axe_playwright_python.sync_playwright import Axe

from site_builder.gather.project import load_project
from tests.browser.conftest import CHROMIUM_ARGS
from tests.conftest import ROOT
from tests.sizes import LARGE

# Raw TeX: a control word, $$, or $...$ left in the text a reader sees.
TEX_WORDS = ("frac dfrac mathrm mathbf mathbb mathcal operatorname text textbf hat tilde bar vec sum prod "
             "partial left right sqrt cdot odot otimes times top qquad quad alpha beta gamma delta epsilon "
             "varepsilon lambda mu sigma log exp max min begin end infty le ge leq geq to Rightarrow lVert "
             "rVert dots ldots cdots overline underbrace mathit htmlClass")
RAW_TEX = re.compile(r"\\(?:" + "|".join(TEX_WORDS.split()) + r")\b|\$\$|(?<![\w$])\$[^$\s][^$\n]{0,60}[\\^_][^$\n]{0,60}\$|(?<![\w$])\$[A-Za-z]\$")
FULL_CONTRAST = ("index.html", "block.html", "source/model/transformer.py.html")
EVERY_PAGE_CONTRAST = os.environ.get("BROWSER_TESTS_FULL_AXE") == "1"
TABS = 2
PACKAGE_SOURCE = f"source/{load_project(ROOT).package}/"


WIDTHS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}

# For one page: the document's overflow, and the code lines that are cut off with no scroll
# box around them. A code line is a listing's code cell or any <code> in the page; it is cut
# when its box reaches past the nearest ancestor that clips (overflow other than visible), or
# past the viewport when none does, or when it clips its own text.
OVERFLOW = """() => {
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


def runs_axe(name: str) -> bool:
    """Whether axe checks the page (see the module doc): all but the source pages, one of which
    (in FULL_CONTRAST) stands for their template."""
    return EVERY_PAGE_CONTRAST or LARGE or not name.startswith("source/") or name in FULL_CONTRAST

# Runs inside the page (axe allows one run at a time, so the runs are chained); the serious and
# critical violations land in window.__axe.
START_AXE = """([full]) => {
  window.__axe = null;
  const keep = (r) => r.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")),
                  summary: (v.nodes[0] && v.nodes[0].failureSummary || "").slice(0, 300)}));
  const only = (ids) => ({runOnly: {type: "rule", values: ids}, resultTypes: ["violations"]});
  // Started from a timer: axe's first steps are synchronous (seconds on a big page), and the
  // test would wait on them before opening the other tab's page instead of working beside it.
  setTimeout(() => (async () => {
    const found = [];
    // td-has-header is experimental in axe, so off by default; Lighthouse runs it, and so do we.
    found.push(...keep(await axe.run(document, {rules: {"color-contrast": {enabled: full}, "td-has-header": {enabled: true}},
                                                resultTypes: ["violations"]})));
    if (full) {
      document.documentElement.dataset.theme = "dark";
      found.push(...keep(await axe.run(document, only(["color-contrast"]))).map((v) => ({...v, id: v.id + " (dark)"})));
      delete document.documentElement.dataset.theme;
    }
    window.__axe = found;
  })().catch((e) => { window.__axe = [{id: "axe crashed", impact: "critical", help: String(e), nodes: [], summary: ""}]; }), 0);
}"""

VISIBLE_TEXT = """() => {
  const main = document.querySelector("main").cloneNode(true);
  main.querySelectorAll("code, pre, .listing, annotation, template, script, style").forEach((e) => e.remove());
  return main.textContent;
}"""


class Tab:
    """One browser tab and what went wrong on the page it shows."""

    def __init__(self, page, base):
        self.page, self.base, self.name, self.log = page, base, None, []
        page.on("console", lambda m: m.type == "error" and self.log.append(f"console error: {m.text}"))
        page.on("pageerror", lambda e: self.log.append(f"uncaught exception: {e}"))
        page.on("requestfailed", lambda r: self.log.append(f"failed request: {r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and self.log.append(f"HTTP {r.status}: {r.url}"))

    def open(self, name, axe_script) -> dict:
        """Load the page, log what is wrong in it, start axe on it; returns its OVERFLOW
        measurement, taken before axe starts."""
        self.name, self.log = name, []
        self.page.goto(self.base + name, wait_until="load")
        self.page.evaluate("document.fonts.ready.then(() => true)")
        text = self.page.evaluate(VISIBLE_TEXT)
        for m in list(RAW_TEX.finditer(text))[:3]:
            self.log.append(f"raw TeX shown: ...{text[max(0, m.start() - 30):m.end() + 30]!r}...")
        errors = self.page.locator(".tex-error, .katex-error").count()
        if errors:
            self.log.append(f"{errors} TeX error(s) rendered")
        overflow = self.page.evaluate(OVERFLOW)
        if not runs_axe(name):
            self.page.evaluate("window.__axe = []")
            return overflow
        self.page.evaluate(axe_script)
        self.page.evaluate(START_AXE, [EVERY_PAGE_CONTRAST or name in FULL_CONTRAST])
        return overflow

    def finish(self):
        self.page.wait_for_function("window.__axe !== null", timeout=180_000, polling=100)
        for v in self.page.evaluate("window.__axe"):
            self.log.append(f"axe {v['impact']} {v['id']}: {v['help']} at {v['nodes']} {v['summary']}")
        return [f"{self.name}: {line}" for line in self.log]


@dataclass
class Visits:
    problems: list                 # what went wrong on the desktop loads, a line each
    overflow: dict                 # {width name: {page: OVERFLOW's measurement}}


@pytest.fixture(scope="module")
def visits(browser, site_url, site_pages) -> Visits:
    """Every page opened once at each width of WIDTHS: at the desktop width in two tabs, each
    load checked for errors and raw TeX, measured (OVERFLOW) and then checked by axe; at the
    phone width in one tab, measured."""
    axe_script = Axe().axe_script
    axed = [name for name in site_pages if runs_axe(name)]
    assert "index.html" in axed and any(name.startswith(PACKAGE_SOURCE) for name in axed), axed
    context = browser.new_context(viewport=WIDTHS["desktop"])
    tabs = [Tab(context.new_page(), site_url) for _ in range(TABS)]
    found = Visits([], {width: {} for width in WIDTHS})
    for i in range(0, len(site_pages), TABS):
        batch = list(zip(tabs, site_pages[i:i + TABS]))
        for tab, name in batch:
            found.overflow["desktop"][name] = tab.open(name, axe_script)
        for tab, _ in batch:
            found.problems += tab.finish()
    context.close()
    for width in (w for w in WIDTHS if w != "desktop"):
        context = browser.new_context(viewport=WIDTHS[width])
        page = context.new_page()
        for name in site_pages:
            page.goto(site_url + name, wait_until="load")
            found.overflow[width][name] = page.evaluate(OVERFLOW)
        context.close()
    return found


def test_every_page_loads_cleanly(visits):
    assert not visits.problems, f"{len(visits.problems)} problem(s):\n" + "\n".join(visits.problems)


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways(visits, width):
    wide = {p: f"{m['scrollWidth']} > {m['clientWidth']}" for p, m in visits.overflow[width].items()
            if m["scrollWidth"] > m["clientWidth"]}
    assert visits.overflow[width] and not wide, f"pages wider than the {width} viewport: {wide}"


@pytest.mark.parametrize("width", WIDTHS)
def test_every_code_line_is_visible_or_scrolls_in_its_box(visits, width):
    cut = {p: (m["cutCount"], m["cut"]) for p, m in visits.overflow[width].items() if m["cutCount"]}
    assert not cut, f"code cut off with no scroll box around it at {width} width: {cut}"


def test_pages_opened_from_files_throw_nothing(browser, built_site):
    """file:// (a reader double-clicking a page): no module-CORS error, no search crash."""
    page = browser.new_page()
    log = []
    page.on("console", lambda m: m.type == "error" and log.append(m.text))
    page.on("pageerror", lambda e: log.append(str(e)))
    for name in ("index.html", "block.html"):
        page.goto((built_site / name).as_uri(), wait_until="load")
        page.fill("#search-input", "block")
        page.wait_for_selector(".search-status:has-text('served')")
        page.keyboard.press("Escape")
        page.locator(".stepper-next").first.click() if name == "block.html" else None
    page.close()
    assert not log, log


def test_without_javascript_everything_is_listed(browser, site_url):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(site_url + "block.html")
    stepper = page.locator(".stepper").first
    steps = stepper.locator(".stepper-step")
    assert steps.count() >= 2 and steps.nth(steps.count() - 1).is_visible()
    assert "Step 1 of" in steps.first.inner_text()
    current = stepper.locator(".stepper-code tr.current")            # the first step's line, marked
    assert current.count() == 1
    assert page.locator("ol.flow li.flow-step").first.is_visible()
    assert page.locator(".flow-detail").first.is_hidden()            # needs JS: not shown half-working
    assert page.locator(".copy-link").first.is_hidden()
    assert page.locator("#search input").count() == 0
    context.close()


def test_an_anchor_far_down_the_longest_page_lands_on_its_target(browser, site_url, built_site):
    """Listings, equations and tables far off screen are not laid out until they come near it
    (content-visibility, site.css), and long reference parts are collapsed: a link to the
    last listing of the longest page must still land on it, and stay there once the parts
    around it are drawn."""
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
