"""Stage 5c: the math font, cut down to the glyphs the built pages use.

The vendored Latin Modern Math (static/vendor/latinmodern-math/) carries every glyph of the
font, about 390 KB as WOFF2, while the pages' MathML uses a few hundred characters. The
shipped copy is a subset made with fontTools' subsetter (the library the font world uses for
this; it knows the OpenType MATH table, so the subset keeps the TeX metrics, the glyph
variants and the stretchy-delimiter assemblies of the glyphs it keeps).

Which characters. Every character of the text inside <math> on any page (the TeX source in
<annotation> is not shown and is not counted), the styled forms (Mathematical Alphanumeric
Symbols) a browser may draw instead (math italic for a single-letter <mi>, MathML Core's
`text-transform: math-auto`), the glyphs an element's layout draws that are no character of
its text (a root's radical, LAYOUT_GLYPHS), and the space, which decides which font lays the
line out (ALWAYS). The MATH table's size variants and assemblies of every glyph kept (the sizes
of a stretched delimiter, a root or a large operator, and the parts they are built from) come
along through the subsetter's MATH closure, and the `ssty`/`dtls` alternates are added here.
Whether that is all a page can reach is not argued but measured: tests/browser/
test_math_drawing.py draws every formula of the site in this subset and in the full font, and
the two must give the same boxes and the same pixels.

Determinism. The same font bytes and the same characters give the same bytes: the `head`
table's modification time is not set to the clock (recalcTimestamp off) and WOFF2's Brotli
output is a function of its input. So an incremental build equals a clean one. The result is
cached on (font bytes, characters, fontTools and Brotli versions, this file), so a build
whose pages use no new character does not subset again.

Trade-off: a character that reaches the page after the build (none does: no script writes
math) would fall back to the system's math font.
"""
import hashlib
import io
import re
from html.parser import HTMLParser
from pathlib import Path

from site_builder.render import mathrender

FONT_FILE = "latinmodern-math.woff2"
MATH_BLOCK = re.compile(r"<math[\s>].*?</math>", re.S)
# Where MathML draws a child smaller (MathML Core's math-depth, from its user agent style
# sheet): the scripts of these (every child but the first) go one level deeper; the children
# of a fraction go one level deeper when the fraction is already compact (inline math, or a
# fraction inside a fraction or a script). The browser then draws depth 1 with the font's
# first script-size alternate (ssty 1) and deeper with the second.
SCRIPTED = {"msub", "msup", "msubsup", "munder", "mover", "munderover", "mmultiscripts", "mroot"}
# What the layout of an element draws that is no character of its text: a root's radical sign
# (MathML Core draws <msqrt> and <mroot> with U+221A, its size variants and its assembly,
# which the subsetter's MATH closure adds once the base glyph is in). Without it Chromium drew
# every root with no sign at all.
LAYOUT_GLYPHS = {"msqrt": {"\u221a"}, "mroot": {"\u221a"}}
# The browser lays a line out with the metrics of the "first available font": the first of the
# family list that has a space (Chromium's primary font). A subset without U+0020 gave every
# formula the fallback font's line height, one to three pixels off.
ALWAYS = {" ", "\u00a0"}
# The GSUB features the math layout uses: script-size alternates and dotless forms under
# accents. `aalt` (every alternate of every glyph) would pull in most of the font.
FEATURES = ["ssty", "dtls"]


class MathText(HTMLParser):
    """The characters drawn inside <math> elements (outside <annotation>), with the styled
    forms a browser may draw instead: a single-letter <mi> in math italic (MathML Core's
    `text-transform: math-auto`), and text under a `mathvariant` in that variant."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []                  # [tag, mathvariant, math-depth, compact, children so far]
        self.annotation_depth = 0
        self.chars = set()
        self.by_depth = {1: set(), 2: set()}   # drawn at script size 1, and 2 or smaller

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "math" and not self.stack:
            self.stack.append([tag, attrs.get("mathvariant"), 0, attrs.get("display") != "block", 0])
            return
        if not self.stack:
            return
        parent = self.stack[-1]
        index, parent[4] = parent[4], parent[4] + 1
        depth, compact = parent[2], parent[3]
        if parent[0] in SCRIPTED and index >= 1:       # MathML Core: math-depth add(1), compact
            depth, compact = depth + 1, True
        elif parent[0] == "mfrac":                     # auto-add: one deeper if already compact
            depth, compact = depth + (1 if compact else 0), True
        self.stack.append([tag, attrs.get("mathvariant"), depth, compact, 0])
        if tag in LAYOUT_GLYPHS:
            self.chars |= LAYOUT_GLYPHS[tag]
        if tag.startswith("annotation"):
            self.annotation_depth += 1

    def handle_endtag(self, tag):
        if not self.stack:
            return
        while self.stack:                # close up to the matching tag (HTML may omit end tags)
            open_tag = self.stack.pop()[0]
            if open_tag.startswith("annotation"):
                self.annotation_depth -= 1
            if open_tag == tag:
                break

    def handle_data(self, data):
        if not self.stack or self.annotation_depth:
            return
        drawn = set(data)
        variant = next((entry[1] for entry in reversed(self.stack) if entry[1]), None)
        if variant is None and self.stack[-1][0] == "mi" and len(data.strip()) == 1:
            variant = "italic"
        drawn |= {mathrender.styled_letter(ch, variant) for ch in data}
        self.chars |= drawn
        depth = self.stack[-1][2]
        if depth:
            self.by_depth[min(depth, 2)] |= drawn


def page_math(html) -> tuple:
    """(characters, those at script level 1, those at level 2+) that one page's math draws."""
    html = html.decode() if isinstance(html, bytes) else html
    # Only the <math> elements are parsed: the HTML parser over every page (source pages
    # included) was a tenth of a build whose examples were cached.
    parser = MathText()
    for block in MATH_BLOCK.findall(html):
        parser.feed(block)
    return parser.chars, parser.by_depth[1], parser.by_depth[2]


_SCANNED = {}     # sha256 of a page's bytes -> page_math, found where the page was rendered


def remember_pages(found):
    """Keep {sha256 of a page: page_math(page)} that a forked child sent back, for this build."""
    _SCANNED.update(found)


def math_characters(pages, cache=None) -> tuple:
    """(every character the pages' math draws, those drawn at script level 1, those drawn at
    level 2 or deeper), each sorted (pages: HTML as bytes or str). A page's scan is kept in the
    cache (`memo`) under its bytes: a page taken from the cache is not scanned again."""
    chars, depth1, depth2 = set(), set(), set()
    for html in pages:
        sha = hashlib.sha256(html).hexdigest() if isinstance(html, bytes) else None
        scan = lambda: (_SCANNED.get(sha) if sha else None) or page_math(html)     # a child's scan, else here
        known = cache.remembered("memo", hashlib.sha256(f"page math {sha}".encode()).hexdigest(), scan) \
            if sha and cache is not None else scan()
        every, level1, level2 = known
        chars |= every
        depth1 |= level1
        depth2 |= level2
    _SCANNED.clear()
    blank = set("\t\r\n")
    return tuple("".join(sorted(c - blank)) for c in (chars | ALWAYS, depth1 - ALWAYS, depth2 - ALWAYS))


def subset_key(font: bytes, chars) -> str:
    """What the subset is made of: the font, the characters, the tools and this recipe."""
    import brotli
    import fontTools
    h = hashlib.sha256()
    for part in (font, repr(chars).encode(), fontTools.version.encode(), brotli.__version__.encode(),
                 Path(__file__).read_bytes()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def alternates(tt, glyphs: set, features, which=None) -> set:
    """The glyphs that the GSUB `features` of the font substitute for `glyphs` (single and
    alternate substitutions, the kinds ssty and dtls are made of); `which` picks one of the
    alternates by position (ssty: 0 for script size, 1 for script-script size)."""
    gsub = tt["GSUB"].table if "GSUB" in tt else None
    found = set()
    if gsub is None:
        return found
    for record in gsub.FeatureList.FeatureRecord:
        if record.FeatureTag not in features:
            continue
        for index in record.Feature.LookupListIndex:
            for table in gsub.LookupList.Lookup[index].SubTable:
                table = getattr(table, "ExtSubTable", table)
                if hasattr(table, "mapping"):
                    found |= {v for k, v in table.mapping.items() if k in glyphs}
                elif hasattr(table, "alternates"):
                    found |= {a for k, alts in table.alternates.items() if k in glyphs
                              for i, a in enumerate(alts) if which is None or i == min(which, len(alts) - 1)}
    return found


def subset_font(font: bytes, chars) -> bytes:
    """The WOFF2 font cut down to `chars` = (all, script level 1, level 2+): the glyphs of
    all the characters, the script-size alternates (ssty) of those drawn in scripts at their
    level, the dotless forms (dtls) of all, and what the MATH table reaches from them, with
    the MATH table.

    Layout closure is off: with it the subsetter would add the script alternates of every
    glyph, which doubled the font; the alternates a page can use are added here instead."""
    from fontTools import subset
    from fontTools.ttLib import TTFont
    every, level1, level2 = chars
    tt = TTFont(io.BytesIO(font), recalcTimestamp=False)
    cmap = tt.getBestCmap()
    glyphs_of = lambda text: {cmap[ord(c)] for c in text if ord(c) in cmap}  # noqa: E731
    extra = (alternates(tt, glyphs_of(level1), {"ssty"}, 0) | alternates(tt, glyphs_of(level2), {"ssty"}, 1)
             | alternates(tt, glyphs_of(every), {"dtls"}))
    options = subset.Options()
    options.layout_features = FEATURES
    options.layout_closure = False
    options.flavor = "woff2"
    options.name_IDs = ["*"]               # the licence and copyright names stay with the font
    options.notdef_outline = True
    options.recalc_timestamp = False       # bytes must not depend on the clock
    # CFF hints stay (12 % of the bytes): Chromium's FreeType draws glyphs hinted, and glyphs
    # without hints had other ink boxes, so 547 formulas came out a pixel taller or shorter
    options.desubroutinize = True          # Brotli packs the plain charstrings better (3 %)
    # MATH is the reason for this font; FFTM (FontForge's timestamps) is not needed
    options.drop_tables = [t for t in options.drop_tables if t != "MATH"] + ["FFTM"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in every], glyphs=sorted(extra))
    subsetter.subset(tt)
    out = io.BytesIO()
    tt.flavor = "woff2"
    tt.save(out, reorderTables=True)
    return out.getvalue()


class MathFontSubsets:
    """The subsets of the shipped math fonts in `files` for `pages`, from the cache or made
    now; with background=True made in a forked child (site_builder/base/parallel.py) while the
    build checks its links and writes the site, and `result()` waits for them. A child that
    fails leaves the subset to be made in this process, so an error is raised here as
    before. `stop()` kills the child (a build that fails before it needs the fonts)."""

    def __init__(self, files: dict, pages, cache=None, background=False):
        self.cache, self.done, self.todo, self.children = cache, {}, {}, None
        chars = None
        for rel in [r for r in files if r.endswith("/" + FONT_FILE)]:
            if chars is None:
                chars = math_characters(pages, cache)
            key = subset_key(files[rel], chars)
            data = cache.get("font", key) if cache else None
            if data is None:
                self.todo[rel] = (key, files[rel], chars)
            else:
                self.done[rel] = data
        if background and self.todo:
            from site_builder.base import parallel
            self.children = parallel.start({rel: (lambda font=font, chars=chars: subset_font(font, chars))
                                            for rel, (_, font, chars) in self.todo.items()})

    def result(self) -> dict:
        """{path: subset bytes} of every shipped copy of the font."""
        made = {}
        if self.children is not None:
            made = {o.name: o.value for o in self.children.wait() if o.status == "ok"}
        for rel, (key, font, chars) in self.todo.items():
            self.done[rel] = made[rel] if rel in made else subset_font(font, chars)
            if self.cache:
                self.cache.put("font", key, self.done[rel])
        self.todo = {}
        return dict(self.done)

    def stop(self):
        if self.children is not None:
            self.children.stop()
