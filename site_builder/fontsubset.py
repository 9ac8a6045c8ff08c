"""Stage 5c: the math font, cut down to the glyphs the built pages use.

The vendored Latin Modern Math (static/vendor/latinmodern-math/) carries every glyph of the
font, about 390 KB as WOFF2, while the pages' MathML uses a few hundred characters. The
shipped copy is a subset made with fontTools' subsetter (the library the font world uses for
this; it knows the OpenType MATH table, so the subset keeps the TeX metrics, the glyph
variants and the stretchy-delimiter assemblies of the glyphs it keeps).

Which characters. Every character of the text inside <math> on any page (the TeX source in
<annotation> is not shown and is not counted), and the styled forms (Mathematical
Alphanumeric Symbols) a browser may draw instead: math italic for a single-letter <mi>
(MathML Core's `text-transform: math-auto`), and the `mathvariant` of the text's element.
The MATH table's size variants and assemblies and the `ssty`/`dtls` alternates of those
glyphs come along through the subsetter's closure.

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
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

FONT_FILE = "latinmodern-math.woff2"
# mathvariant -> the prefix of its characters' names in the Mathematical Alphanumeric Symbols.
VARIANTS = {"italic": "MATHEMATICAL ITALIC", "bold": "MATHEMATICAL BOLD", "bold-italic": "MATHEMATICAL BOLD ITALIC",
            "double-struck": "MATHEMATICAL DOUBLE-STRUCK", "script": "MATHEMATICAL SCRIPT",
            "bold-script": "MATHEMATICAL BOLD SCRIPT", "fraktur": "MATHEMATICAL FRAKTUR",
            "bold-fraktur": "MATHEMATICAL BOLD FRAKTUR", "sans-serif": "MATHEMATICAL SANS-SERIF",
            "bold-sans-serif": "MATHEMATICAL SANS-SERIF BOLD", "monospace": "MATHEMATICAL MONOSPACE"}
# Where the block has a hole because a letterlike symbol existed already (U+210E for italic h,
# U+211D for double-struck R, ...), the letterlike symbol's name is the styled name without
# "MATHEMATICAL " (fraktur's are BLACK-LETTER).
HOLE_NAMES = (("MATHEMATICAL ITALIC SMALL H", "PLANCK CONSTANT"), ("MATHEMATICAL FRAKTUR", "BLACK-LETTER"),
              ("MATHEMATICAL ", ""))
# The GSUB features the math layout uses: script-size alternates and dotless forms under
# accents. `aalt` (every alternate of every glyph) would pull in most of the font.
FEATURES = ["ssty", "dtls"]


class MathText(HTMLParser):
    """The characters drawn inside <math> elements (outside <annotation>), with the styled
    forms a browser may draw instead: a single-letter <mi> in math italic (MathML Core's
    `text-transform: math-auto`), and text under a `mathvariant` in that variant."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []                  # (tag, mathvariant) of the open elements inside <math>
        self.annotation_depth = 0
        self.chars = set()

    def handle_starttag(self, tag, attrs):
        if tag == "math" or self.stack:
            self.stack.append((tag, dict(attrs).get("mathvariant")))
        if tag.startswith("annotation") and self.stack:
            self.annotation_depth += 1

    def handle_endtag(self, tag):
        if not self.stack:
            return
        while self.stack:                # close up to the matching tag (HTML may omit end tags)
            open_tag, _ = self.stack.pop()
            if open_tag.startswith("annotation"):
                self.annotation_depth -= 1
            if open_tag == tag:
                break

    def handle_data(self, data):
        if not self.stack or self.annotation_depth:
            return
        self.chars.update(data)
        variant = next((v for _, v in reversed(self.stack) if v), None)
        if variant is None and self.stack[-1][0] == "mi" and len(data.strip()) == 1:
            variant = "italic"
        for ch in data:
            self.chars |= styled_forms(ch, variant)


def styled_forms(ch: str, variant) -> set:
    """The form of a letter or digit in a mathvariant (none for other characters)."""
    if variant not in VARIANTS:
        return set()
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return set()
    for prefix, short in (("LATIN CAPITAL LETTER ", "CAPITAL "), ("LATIN SMALL LETTER ", "SMALL "),
                          ("GREEK CAPITAL LETTER ", "CAPITAL "), ("GREEK SMALL LETTER ", "SMALL "),
                          ("DIGIT ", "DIGIT ")):
        if name.startswith(prefix):
            full = f"{VARIANTS[variant]} {short}{name[len(prefix):]}"
            break
    else:
        return set()
    for styled, hole in ((full, full),) + HOLE_NAMES:
        if full.startswith(styled):
            try:
                return {unicodedata.lookup(hole + full[len(styled):])}
            except KeyError:
                continue
    return set()


def math_characters(pages) -> str:
    """The sorted characters the pages' math needs (pages: HTML as bytes or str)."""
    chars = set()
    for html in pages:
        parser = MathText()
        parser.feed(html.decode() if isinstance(html, bytes) else html)
        chars |= parser.chars
    chars -= set(" \t\r\n")
    return "".join(sorted(chars))


def subset_key(font: bytes, chars: str) -> str:
    """What the subset is made of: the font, the characters, the tools and this recipe."""
    import brotli
    import fontTools
    h = hashlib.sha256()
    for part in (font, chars.encode(), fontTools.version.encode(), brotli.__version__.encode(),
                 Path(__file__).read_bytes()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def subset_font(font: bytes, chars: str) -> bytes:
    """The WOFF2 font cut down to `chars` (and what they reach), with its MATH table."""
    from fontTools import subset
    from fontTools.ttLib import TTFont
    options = subset.Options()
    options.layout_features = FEATURES
    options.flavor = "woff2"
    options.name_IDs = ["*"]               # the licence and copyright names stay with the font
    options.notdef_outline = True
    options.recalc_timestamp = False       # bytes must not depend on the clock
    options.hinting = False                # CFF hints: 10 % of the bytes, for low-resolution screens
    options.desubroutinize = True          # Brotli packs the plain charstrings better (3 %)
    # MATH is the reason for this font; FFTM (FontForge's timestamps) is not needed
    options.drop_tables = [t for t in options.drop_tables if t != "MATH"] + ["FFTM"]
    tt = TTFont(io.BytesIO(font), recalcTimestamp=False)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in chars])
    subsetter.subset(tt)
    out = io.BytesIO()
    tt.flavor = "woff2"
    tt.save(out, reorderTables=True)
    return out.getvalue()


def subset_math_fonts(files: dict, pages, cache=None) -> None:
    """Replace every shipped copy of the math font in `files` with its subset for `pages`."""
    chars = None
    for rel in [r for r in files if r.endswith("/" + FONT_FILE)]:
        if chars is None:
            chars = math_characters(pages)
        key = subset_key(files[rel], chars)
        data = cache.get("font", key) if cache else None
        if data is None:
            data = subset_font(files[rel], chars)
            if cache:
                cache.put("font", key, data)
        files[rel] = data
