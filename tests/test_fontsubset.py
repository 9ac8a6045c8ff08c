"""The shipped math font is the vendored one cut down to what the pages draw
(site_builder/publish/fontsubset.py): every character of the built pages' math is in it, its MATH
table is kept, and the same input gives the same bytes."""
import io

import pytest

from site_builder.publish import fontsubset
from site_builder.render import mathrender
from tests.conftest import ROOT

fontTools = pytest.importorskip("fontTools")
from fontTools.ttLib import TTFont  # noqa: E402

FONT = ROOT / "static" / "vendor" / "latinmodern-math" / fontsubset.FONT_FILE
SHIPPED = "static/vendor/latinmodern-math/" + fontsubset.FONT_FILE


def pages_of(site):
    return [p.read_bytes() for p in sorted(site.rglob("*.html"))]


def test_the_shipped_font_has_every_character_the_math_draws_and_the_math_table(built_site):
    shipped = (built_site / SHIPPED).read_bytes()
    assert len(shipped) < FONT.stat().st_size / 3, "the subset should be a fraction of the full font"
    font = TTFont(io.BytesIO(shipped))
    assert "MATH" in font and font["MATH"].table.MathVariants is not None
    every, level1, level2 = fontsubset.math_characters(pages_of(built_site))
    cmap = font.getBestCmap()
    missing = [c for c in every if ord(c) not in cmap]
    assert not missing, f"characters the pages' math draws but the font lacks: {missing}"
    # characters in a script come with their script-size alternate (ssty)
    assert level1 and fontsubset.alternates(font, {cmap[ord(c)] for c in level1}, {"ssty"}, 0)
    # a stretchy delimiter keeps its size variants (the MATH table's reason to be)
    if "(" in every:
        assert cmap[ord("(")] in font["MATH"].table.MathVariants.VertGlyphCoverage.glyphs


def test_the_subset_is_deterministic_and_follows_the_characters():
    font = FONT.read_bytes()
    html = ('<p>x</p><math display="block"><semantics><msub><mi>W</mi><mn>1</mn></msub><mo>(</mo>'
            '<mi mathvariant="double-struck">R</mi><annotation encoding="application/x-tex">\\alpha</annotation>'
            '</semantics></math>')
    chars = fontsubset.math_characters([html])
    assert chars[0] == "".join(sorted("W1(R\U0001d44a\u211d \u00a0"))   # italic W, double-struck R, spaces; no TeX
    assert chars[1] == "1" and chars[2] == ""                       # the subscript is at script level 1
    first, second = fontsubset.subset_font(font, chars), fontsubset.subset_font(font, chars)
    assert first == second
    assert fontsubset.subset_key(font, chars) == fontsubset.subset_key(font, chars)
    other = fontsubset.math_characters([html.replace("<mi>W</mi>", "<mi>V</mi>")])
    assert fontsubset.subset_key(font, other) != fontsubset.subset_key(font, chars)
    assert ord("\U0001d44a") in TTFont(io.BytesIO(first)).getBestCmap()


@pytest.mark.parametrize("char, variant, styled", [("h", "italic", "\u210e"), ("R", "double-struck", "\u211d"),
                                                    ("L", "script", "\u2112"), ("x", "bold", "\U0001d431"),
                                                    ("+", "bold", None), ("a", None, None)])
def test_styled_letters_fill_the_holes_of_the_alphanumeric_block(char, variant, styled):
    assert mathrender.styled_letter(char, variant) == (styled or char)
