"""The shipped math font draws every formula of the site exactly as the full font does.

The site ships Latin Modern Math cut down to what its pages use (site_builder/publish/fontsubset.py).
A subset that lacks a glyph the MathML layout reaches (the radical of <msqrt>, a size variant
of a stretched delimiter, a part of a stretchy assembly) changes what the reader sees while
every character of the text is still in the font. So this compares drawings, not markup:
every distinct <math> element of the built site is drawn in Chromium twice, once in the
shipped subset and once in the full vendored font (no fallback font in either), and

- every element's box must be the same in both, and
- every element holding a radical, a stretchy or a large operator, or an accent, must be
  drawn with the same pixels in both.

The elements sit in blocks of whole-pixel heights, the same in both drawings, so a block's
pixels depend on nothing but its own math; the blocks are compared in groups (one screenshot
each), and only a group that differs is compared element by element, to name them.
"""
import functools
import html
import re
import threading
from http.server import ThreadingHTTPServer

import pytest

from site_builder.publish import fontsubset
from site_builder.render.mathrender import render_tex
from tests.browser.conftest import QuietHandler
from tests.conftest import ROOT

MATH_ELEMENT = re.compile(r"<math[\s>].*?</math>", re.S)
FONT_DIR = "static/vendor/latinmodern-math/"
# What MathML layout draws beyond the characters of the text: radicals, stretched or large
# operators (a fence or a large operator stretches by the operator dictionary unless
# stretchy="false"), and accents over or under a base.
STRETCHY_TEXT = set("()[]{}|‖∥⌈⌉⌊⌋⟨⟩∑∏∫∮⋃⋂⨁⨂←→↔⇐⇒⇔↦‾_^~ˆ˜⏞⏟⏜⏝")
OPERATOR = re.compile(r"<mo(?P<attrs>[^>]*)>(?P<text>[^<]*)</mo>")
GROUP = 40
# constructs whose MathML mathrender.core_layout rewrites for MathML Core
CONSTRUCTS = {"overset": r"a \overset{!}{=} b", "bars": r"\left| \dfrac{a}{b} \right|", "vec": r"\vec{v}",
              "widehat": r"\widehat{xyz}", "underline": r"\underline{xyz}"}
# one delimiter at each size TeX's \big commands set, and a bar (KaTeX writes \Big| as U+2223)
SIZED = [r"f(x)", r"f\big(x\big)", r"f\Big(x\Big)", r"f\bigg(x\bigg)", r"f\Bigg(x\Bigg)", r"f|x|", r"f\Big|x\Big|",
         r"\min(x)", r"\min\!\big(x\big)", r"\sin\!\left(x\right)"]


def distinct_math(site):
    """Every distinct <math> element of the built pages, in a stable order."""
    found = {}
    for page in sorted(site.rglob("*.html")):
        for block in MATH_ELEMENT.findall(page.read_text(encoding="utf-8")):
            found.setdefault(block, page.relative_to(site).as_posix())
    return sorted((page, block) for block, page in found.items())


def draws_beyond_text(block):
    """Whether the layout of `block` reaches glyphs that are not characters of its text."""
    if re.search(r"<(msqrt|mroot)[\s>]|accent(under)?=\"true\"", block):
        return True
    for m in OPERATOR.finditer(block):
        text = html.unescape(m.group("text")).strip()
        stretchy = 'stretchy="true"' in m.group("attrs") or (
            'stretchy="false"' not in m.group("attrs") and text in STRETCHY_TEXT)
        if stretchy or 'largeop="true"' in m.group("attrs"):
            return True
    return False


def test_the_selection_finds_radicals_fences_and_stretchy_operators():
    # the selection must see the constructs it exists for
    assert draws_beyond_text("<math><msqrt><mi>x</mi></msqrt></math>")
    assert draws_beyond_text('<math><mo fence="true">(</mo></math>')
    assert draws_beyond_text('<math><mo stretchy="true">⏟</mo></math>')
    assert not draws_beyond_text('<math><mo stretchy="false">(</mo><mi>x</mi></math>')


@pytest.fixture(scope="module")
def drawing_page(built_site, tmp_path_factory):
    """A page holding every distinct math element of the site, and the two fonts, served on
    127.0.0.1; yields (url, [(page, element), ...])."""
    folder = tmp_path_factory.mktemp("math-drawing")
    (folder / "subset.woff2").write_bytes((built_site / FONT_DIR / fontsubset.FONT_FILE).read_bytes())
    (folder / "full.woff2").write_bytes((ROOT / FONT_DIR / fontsubset.FONT_FILE).read_bytes())
    cases = distinct_math(built_site)
    body = "\n".join(f'<div class="case" id="case-{i}">{block}</div>' for i, (_, block) in enumerate(cases))
    (folder / "index.html").write_text(f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>math drawing</title><style>
@font-face {{ font-family: "Shipped subset"; src: url(subset.woff2) format("woff2"); }}
@font-face {{ font-family: "Full font"; src: url(full.woff2) format("woff2"); }}
body {{ margin: 0; width: 900px; background: #fff; color: #000; }}
body.subset math {{ font-family: "Shipped subset"; }}
body.full math {{ font-family: "Full font"; }}
math {{ font-size: 22px; }}
.case {{ display: flow-root; padding: 4px 8px; overflow: hidden; }}
</style></head><body class="full">{body}</body></html>""", encoding="utf-8")
    sizes = "".join(f'<p class="sized">{render_tex(tex, display=False)}</p>' for tex in SIZED) + "".join(
        f'<p class="construct" id="{name}">{render_tex(tex, display=False)}</p>' for name, tex in CONSTRUCTS.items())
    (folder / "delimiters.html").write_text(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>delimiters</title><style>'
        '@font-face { font-family: "Full font"; src: url(full.woff2) format("woff2"); }'
        f'math {{ font-family: "Full font"; font-size: 22px; }} .construct {{ padding: 12px 44px; }} .construct math {{ font-size: 44px; }}</style></head><body>{sizes}</body></html>',
        encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs=dict(poll_interval=0.1), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/index.html", cases
    server.shutdown()
    server.server_close()


BOXES_JS = """mode => {
  document.body.className = mode;
  return [...document.querySelectorAll(".case")].map(c => {
    const math = c.querySelector("math").getBoundingClientRect();
    return [c.getBoundingClientRect().height, math.width, math.height];
  });
}"""


def draw(page, mode):
    """The boxes of every case with `mode`'s font (after the font has loaded)."""
    page.evaluate("mode => { document.body.className = mode; }", mode)
    page.evaluate("() => document.fonts.ready")
    family = "Shipped subset" if mode == "subset" else "Full font"
    assert page.evaluate(f"() => document.fonts.check('22px \"{family}\"')"), f"{family} did not load"
    return page.evaluate(BOXES_JS, mode)


def test_every_formula_is_drawn_in_the_shipped_font_as_in_the_full_font(page, drawing_page):
    url, cases = drawing_page
    page.set_viewport_size({"width": 900, "height": 900})
    page.goto(url)
    page.evaluate("() => Promise.all([...document.fonts].map(f => f.load()))")
    full, subset = draw(page, "full"), draw(page, "subset")
    where = lambda i: f"{cases[i][0]}: {re.sub(r'<annotation.*', '', cases[i][1])[:160]}..."  # noqa: E731
    boxes = [f"{where(i)}\n    full font {f[1]:.2f}x{f[2]:.2f}, shipped {s[1]:.2f}x{s[2]:.2f}"
             for i, (f, s) in enumerate(zip(full, subset)) if abs(f[1] - s[1]) > 0.01 or abs(f[2] - s[2]) > 0.01]
    # whole-pixel block heights, the same in both drawings, so pixels compare block by block
    heights = [int(max(f[0], s[0])) + 2 for f, s in zip(full, subset)]
    page.evaluate("hs => document.querySelectorAll('.case').forEach((c, i) => c.style.height = hs[i] + 'px')",
                  heights)
    drawn = [i for i, (_, block) in enumerate(cases) if draws_beyond_text(block)]
    assert drawn, "no formula of the site holds a radical, a stretchy or large operator, or an accent"
    pixels = []
    for start in range(0, len(drawn), GROUP):
        group = drawn[start:start + GROUP]
        shots = {}
        for mode in ("full", "subset"):
            draw(page, mode)
            page.evaluate("ids => document.querySelectorAll('.case').forEach((c, i) => "
                          "c.hidden = !ids.includes(i))", group)
            shots[mode] = page.locator("body").screenshot(animations="disabled")
        if shots["full"] == shots["subset"]:
            continue
        for i in group:                      # name the elements that differ
            one = {}
            for mode in ("full", "subset"):
                draw(page, mode)
                one[mode] = page.locator(f"#case-{i}").screenshot(animations="disabled")
            if one["full"] != one["subset"]:
                pixels.append(where(i))
    page.evaluate("() => document.querySelectorAll('.case').forEach(c => c.hidden = false)")
    problems = ([f"{len(boxes)} formulas have another box in the shipped font:"] + boxes[:20] if boxes else []) + (
        [f"{len(pixels)} formulas are drawn with other pixels in the shipped font:"] + pixels[:20] if pixels else [])
    assert not problems, "\n".join(problems)


def test_delimiters_sized_by_big_are_drawn_at_their_size(page, drawing_page):
    url, _ = drawing_page
    page.goto(url.replace("index.html", "delimiters.html"))
    page.evaluate("() => Promise.all([...document.fonts].map(f => f.load()))")
    # [height of the first delimiter, gap between the first <mi> and it] for each formula
    drawn = page.evaluate("""() => [...document.querySelectorAll('.sized math')].map(m => {
        const name = m.querySelector('mi').getBoundingClientRect();
        const open = [...m.querySelectorAll('mo, mi')].find(e => /^[(|\u2223]$/.test(e.textContent))
                     .getBoundingClientRect();
        return [open.height, open.left - name.right];
    })""")
    heights = {tex: h for tex, (h, _) in zip(SIZED, drawn)}
    gaps = {tex: g for tex, (_, g) in zip(SIZED, drawn)}
    sizes = [heights[t] for t in SIZED[:5]]
    assert sizes == sorted(sizes) and len(set(sizes)) == 5, f"delimiter heights {sizes}"
    assert heights[r"f\Big|x\Big|"] > 1.3 * heights["f|x|"], heights
    # TeX sets \big( as an ordinary symbol, and \! takes the operator's thin space away: no gap
    assert all(abs(gaps[t] - gaps["f(x)"]) < 0.5 for t in SIZED[:5]), gaps
    assert all(abs(gaps[t] - gaps[r"\min(x)"]) < 0.5 for t in SIZED[7:]), gaps


def test_what_mathml_core_draws_otherwise_is_drawn_as_tex_draws_it(page, drawing_page):
    url, _ = drawing_page
    page.goto(url.replace("index.html", "delimiters.html"))
    page.evaluate("() => Promise.all([...document.fonts].map(f => f.load()))")
    box = lambda selector: page.locator(selector).first.bounding_box()  # noqa: E731
    bang, equals = box("#overset mover > :nth-child(2)"), box("#overset mover > :first-child")
    assert bang["y"] + bang["height"] <= equals["y"] + 1, "\\overset{!}{=}: the ! should sit above the ="
    line, bar, fraction = box("#bars"), box("#bars mo"), box("#bars mfrac")
    columns = lambda b: (b["x"] - line["x"], b["x"] + b["width"] - line["x"])  # noqa: E731
    bar_ink, fraction_ink = (ink_span(page, "#bars", (0, None), columns(b), vertical=True) for b in (bar, fraction))
    assert bar_ink[1] - bar_ink[0] >= 0.9 * (fraction_ink[1] - fraction_ink[0]), \
        f"\\left| should stretch to the fraction: rows {bar_ink} beside {fraction_ink}"
    for name in ("vec", "widehat", "underline"):
        line, script = box(f"#{name}"), box(f"#{name} :is(mover, munder)")
        letters = box(f"#{name} :is(mover, munder) > :first-child")
        top, bottom = letters["y"] - line["y"], letters["y"] + letters["height"] - line["y"]
        # the accent: the rows of the script above the base's box (below it, for an underline),
        # the whole line wide (a misplaced accent leaves the script's box); the base: its rows
        over = (bottom, script["y"] + script["height"] - line["y"]) if name == "underline" else (script["y"] - line["y"], top)
        accent, base = ink_span(page, f"#{name}", over), ink_span(page, f"#{name}", (top, bottom))
        assert accent and base, f"{name}: nothing drawn ({accent}, {base})"
        width, slack = base[1] - base[0], 11          # slack: a quarter of the 44 px em
        assert accent[0] >= base[0] - slack and accent[1] <= base[1] + slack, \
            f"{name}: the accent (columns {accent}) is off its base (columns {base})"
        if name != "vec":
            assert accent[1] - accent[0] >= 0.8 * width, f"{name}: {accent} should cover its base {base}"


INK_JS = """async ([png, rows, columns, vertical]) => {
    const image = new Image();
    image.src = "data:image/png;base64," + png;
    await image.decode();
    const canvas = document.createElement("canvas");
    [canvas.width, canvas.height] = [image.width, image.height];
    const context = canvas.getContext("2d");
    context.drawImage(image, 0, 0);
    const data = context.getImageData(0, 0, image.width, image.height).data;
    const from = Math.max(0, Math.round(rows[0])), to = Math.min(image.height, Math.round(rows[1] ?? image.height));
    const [x0, x1] = columns ? [Math.max(0, Math.round(columns[0])), Math.min(image.width, Math.round(columns[1]))] : [0, image.width];
    let first = null, last = null;
    for (let y = from; y < to; y++) for (let x = x0; x < x1; x++) {
        if (data[4 * (y * image.width + x)] < 128) {
            const at = vertical ? y : x;
            first = first === null ? at : Math.min(first, at);
            last = last === null ? at : Math.max(last, at);
        }
    }
    return first === null ? null : [first, last];
}"""


def ink_span(page, selector, rows, columns=None, vertical=False):
    """(first, last) column (vertical: row) of dark pixels in rows (from, to) and columns
    (from, to) of the drawn element (to None: its last): what a reader sees, which an element's
    box does not tell (a combining accent's box is 0 wide however far it is stretched, and a
    bar's box is as tall as the font's line whether the bar stretched or not)."""
    import base64
    png = base64.b64encode(page.locator(selector).first.screenshot(animations="disabled")).decode()
    return page.evaluate(INK_JS, [png, rows, columns, vertical])
