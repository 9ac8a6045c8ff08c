import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from site_builder.mathrender import KATEX_DIR, TexError, katex_version, render_tex


def test_inline_and_display_fraction():
    inline = render_tex(r"\frac{a}{b}", display=False)
    display = render_tex(r"\frac{a}{b}", display=True)
    assert 'class="katex"' in inline
    assert "katex-display" not in inline
    assert "katex-display" in display
    # htmlAndMathml: screen readers get MathML, with the source as annotation.
    assert "<math" in inline and "<mfrac>" in inline
    assert r'<annotation encoding="application/x-tex">\frac{a}{b}</annotation>' in inline


@pytest.mark.parametrize(
    "tex, expected",
    [
        (r"\begin{bmatrix}1&0\\0&1\end{bmatrix}", "<mtable"),
        (r"\operatorname{ReLU}(x)", "ReLU"),
        (r"\mathbb{1}", 'mathvariant="double-struck"'),
        (r"a \odot b", "⊙"),
        (r"\mathrm{Ff}", "Ff"),
        (r"\tfrac{1}{2}", "<mfrac>"),
        (r"\text{branch}", "<mtext>branch</mtext>"),
    ],
)
def test_constructs_used_in_the_docs(tex, expected):
    html = render_tex(tex, display=False)
    assert expected in html
    assert "katex-error" not in html


def test_unknown_command_raises_with_message_and_position():
    with pytest.raises(TexError) as info:
        render_tex(r"x + \foo{x}", display=False)
    err = info.value
    assert r"\foo" in err.message
    assert err.position == 4
    assert err.tex == r"x + \foo{x}"
    assert r"\foo" in str(err)


@pytest.mark.parametrize("tex", [r"\frac{a}{b", r"a_{1", "x}", r"\left( x"])
def test_unbalanced_input_raises(tex):
    with pytest.raises(TexError) as info:
        render_tex(tex, display=True)
    assert isinstance(info.value.position, int)


@pytest.mark.parametrize(
    "tex",
    [
        "x é",  # strict: accented letter in math mode
        r"\href{https://example.com}{a}",  # trust: false must fail, not render red text
        r"\includegraphics{x.png}",
    ],
)
def test_strict_and_untrusted_input_raises(tex):
    with pytest.raises(TexError):
        render_tex(tex, display=False)


def test_position_counts_python_characters_after_astral_ones():
    # KaTeX reports UTF-16 offsets; the emoji in the comment is two of them.
    tex = "x % \N{GRINNING FACE} note\n+ \\foo"
    with pytest.raises(TexError) as info:
        render_tex(tex, display=False)
    assert tex[info.value.position :].startswith(r"\foo")


def test_deep_nesting_is_a_tex_error_not_a_crash():
    assert "katex" in render_tex(r"\frac{" * 40 + "x" + "}{y}" * 40, display=False)
    with pytest.raises(TexError, match="nested too deeply"):
        render_tex(r"\frac{" * 500 + "x" + "}{y}" * 500, display=False)
    assert "<mfrac>" in render_tex(r"\frac{a}{b}", display=False)  # context still usable


def test_output_is_deterministic():
    tex = r"\operatorname{softmax}\left(\frac{QK^\top}{\sqrt{d_k}}\right)V"
    assert render_tex(tex, display=True) == render_tex(tex, display=True)


def test_threads_share_the_context_safely():
    texs = [rf"x_{{{i}}} + \frac{{{i}}}{{2}}" for i in range(20)]
    expected = [render_tex(t, display=False) for t in texs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(lambda t: render_tex(t, display=False), texs)) == expected


def test_katex_version():
    assert re.fullmatch(r"0\.16\.\d+", katex_version())
    assert (KATEX_DIR / "VERSION").read_text().splitlines()[0] == katex_version()


def test_css_urls_point_at_vendored_files():
    css = (KATEX_DIR / "katex.min.css").read_text(encoding="utf-8")
    urls = re.findall(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)", css)
    assert urls, "expected @font-face urls in katex.min.css"
    missing = [u for u in urls if not (KATEX_DIR / u).is_file()]
    assert missing == []
    assert all(u.endswith(".woff2") for u in urls)


def test_every_vendored_font_is_referenced():
    css = (KATEX_DIR / "katex.min.css").read_text(encoding="utf-8")
    fonts = sorted(p.name for p in (KATEX_DIR / "fonts").iterdir())
    assert fonts and all(f.endswith(".woff2") for f in fonts)
    assert [f for f in fonts if f"fonts/{f}" not in css] == []
