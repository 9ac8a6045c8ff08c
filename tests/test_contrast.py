"""Colour contrast of the two themes, computed from the stylesheets (WCAG AA: 4.5:1 for text).
The browser tests run axe-core's color-contrast on a few pages; this covers every token
colour of the code highlighting and every text colour of the palette, on every background."""
import re

import pytest

from site_builder.render.html import pygments_css, code_backgrounds, contrast
from tests.conftest import ROOT

CSS = (ROOT / "static" / "site.css").read_text(encoding="utf-8")


def palette(selector):
    m = re.search(re.escape(selector) + r"\s*\{(.*?)\}", CSS, re.S)
    return dict(re.findall(r"(--[\w-]+):\s*(#[0-9a-fA-F]{3,6})\b", m.group(1)))


THEMES = {"light": palette(":root"), "dark": palette(':root[data-theme="dark"]')}
TEXT = ("--fg", "--muted", "--accent", "--good", "--warn")
SURFACES = ("--bg", "--soft", "--code-bg", "--accent-soft", "--cited", "--current", "--sym-bg")


@pytest.mark.parametrize("theme", THEMES)
def test_palette_text_on_every_surface(theme):
    colours = THEMES[theme]
    bad = [(t, s, round(contrast(colours[t], colours[s]), 2)) for t in TEXT for s in SURFACES
           if contrast(colours[t], colours[s]) < 4.5]
    assert not bad, bad


def test_the_system_dark_theme_is_the_chosen_dark_theme():
    system = CSS[CSS.index("@media (prefers-color-scheme: dark)"):]
    assert palette(':root:not([data-theme="light"])') == THEMES["dark"] or \
        dict(re.findall(r"(--[\w-]+):\s*(#[0-9a-fA-F]{3,6})\b", system[:system.index("}\n}")])) == THEMES["dark"]


def test_every_code_colour_on_every_code_background():
    css = pygments_css()
    light, dark = code_backgrounds()
    dark_css = css[css.index(':root[data-theme="dark"]'):]
    for part, backgrounds in ((css[:css.index(':root[data-theme="dark"]')], light), (dark_css, dark)):
        for colour in set(re.findall(r"(?<![-\w])color: (#[0-9a-fA-F]{3,6})\b", part)):
            worst = min(contrast(colour, bg) for bg in backgrounds)
            assert worst >= 4.5, (colour, worst)
