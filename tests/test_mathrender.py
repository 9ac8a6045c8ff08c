import re
from concurrent.futures import ThreadPoolExecutor
from html import unescape as html_unescape

import pytest

from site_builder.render.mathrender import KATEX_DIR, TexError, katex_version, render_tex, styled_letter


def test_inline_and_display_fraction():
    inline = render_tex(r"\frac{a}{b}", display=False)
    display = render_tex(r"\frac{a}{b}", display=True)
    assert 'class="katex"' in inline
    assert "katex-display" not in inline
    assert "katex-display" in display
    # MathML only: the browser lays it out; the source stays as annotation.
    assert "<math>" in inline and "<mfrac>" in inline
    assert "katex-html" not in display and "style=" not in display
    assert '<math display="block">' in display
    assert r'<annotation encoding="application/x-tex">\frac{a}{b}</annotation>' in inline


@pytest.mark.parametrize(
    "tex, expected",
    [
        (r"\begin{bmatrix}1&0\\0&1\end{bmatrix}", "<mtable"),
        (r"\operatorname{ReLU}(x)", "ReLU"),
        (r"\mathbb{1}", "<mn>\U0001d7d9</mn>"),
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


def test_symbol_marks_become_classes_and_leave_the_annotation():
    html = render_tex(r"\htmlClass{sym-3}{x} + \mathbin{\htmlClass{sym-12}{\odot}} y", display=True, symbol_classes=True)
    assert '<mi class="sym-3">x</mi>' in html and '<mo class="sym-12" lspace="0.22em" rspace="0.22em">⊙</mo>' in html
    assert "href" not in html and "htmlClass" not in html


def test_symbol_mark_is_not_trusted_in_author_tex():
    with pytest.raises(TexError, match="Untrusted command"):
        render_tex(r"\href{#sym-1}{x}", display=False)


def test_math_font_is_shipped_and_referenced_by_the_stylesheet():
    root = KATEX_DIR.parent.parent
    css = (root / "site.css").read_text(encoding="utf-8")
    urls = re.findall(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)", css)
    assert "vendor/latinmodern-math/latinmodern-math.woff2" in urls
    assert all((root / u).is_file() for u in urls)
    assert (root / "vendor/latinmodern-math/latinmodern-math.woff2").read_bytes()[:4] == b"wOF2"


def test_a_meta_description_with_math_reads_as_the_math_is_seen():
    # base.html puts a page's rendered summary into <meta name="description"> through
    # render.plain_text: the TeX source KaTeX keeps in <annotation> must not follow the math
    from markupsafe import Markup
    from site_builder.render.html import plain_text
    summary = Markup("The rate scaled by " + render_tex(r"d_{\text{model}}^{-1/2}", display=False)
                     + ', "quoted" <script>alert(2)</script>&amp; done.')
    assert "<annotation" in summary
    text = plain_text(summary)
    assert "\\text" not in text and "{" not in text and "alert" not in text
    assert text.startswith("The rate scaled by dmodel") and text.endswith(', "quoted" & done.')


# TeX's style commands and the mathvariant KaTeX gives them
STYLE_COMMANDS = {"mathbb": "double-struck", "mathbf": "bold", "mathcal": "script", "mathscr": "script",
                  "boldsymbol": "bold-italic", "mathfrak": "fraktur", "mathsf": "sans-serif",
                  "mathtt": "monospace", "texttt": "monospace", "mathit": "italic"}
STYLED_TEX = re.compile(r"\\(" + "|".join(STYLE_COMMANDS) + r")\{([^{}]*)\}")


@pytest.mark.parametrize("tex, drawn", [(r"\mathbb{E}", "<mi>\U0001d53c</mi>"), (r"\mathbb{1}", "<mn>\U0001d7d9</mn>"),
                                        (r"\mathbf{1}", "<mn>\U0001d7cf</mn>"), (r"\mathcal{L}", "<mi>\u2112</mi>"),
                                        (r"\boldsymbol{x}", "<mi>\U0001d499</mi>"), (r"\mathbb{R}", "<mi>\u211d</mi>"),
                                        (r"\texttt{b0.w}", "<mtext>\U0001d68b\U0001d7f6.\U0001d6a0</mtext>")])
def test_styled_letters_are_their_code_points_not_a_mathvariant(tex, drawn):
    # MathML Core (Chromium) ignores mathvariant: KaTeX's <mi mathvariant="double-struck">E</mi>
    # was drawn as an italic E
    html = render_tex(tex, display=False)
    assert drawn in html and "mathvariant" not in html


def test_a_marked_symbol_keeps_its_style_and_its_class():
    html = render_tex(r"\htmlClass{sym-2}{\mathcal{L}} = \mathbb{E}[\ell]", display=True, symbol_classes=True)
    assert '<mi class="sym-2">\u2112</mi>' in html and "<mi>\U0001d53c</mi>" in html
    assert set(re.findall(r'mathvariant="([^"]*)"', html)) <= {"normal"}


def test_a_negative_space_takes_the_operator_space_away():
    # KaTeX's \! is a thin space and an invisible separator, drawn as a thin space
    html = render_tex(r"\min\!\big(x\big) + \sin\!\left(x\right) + x^{\!\top}", display=False)
    assert "\u2063" not in html and "<mspace" not in html
    assert '<mi>min</mi><mo>\u2061</mo><mo fence="false"' in html and "<mi>sin</mi><mo>\u2061</mo><mrow><mo fence" in html


@pytest.mark.parametrize("tex, drawn", [
    (r"a \overset{!}{=} b", '<mrow><mover><mrow><mo>=</mo></mrow>'),           # no <mo> holding elements
    (r"\left| \frac{a}{b} \right|", '<mo fence="true" stretchy="true" symmetric="true">\u2223</mo>'),
    (r"\underline{xy}", '<mo stretchy="true">\u0332</mo></munder>'),
    (r"\bar{M}", '<mo>\u00af</mo></mover>')])                                      # the font's macron
def test_what_mathml_core_draws_otherwise_is_rewritten(tex, drawn):
    html = render_tex(tex, display=False)
    assert drawn in html and not re.search(r"<mo(?: [^>]*)?><m", html)


@pytest.mark.parametrize("tex, command", [(r"x + \boxed{y}", r"\boxed"), (r"\cancel{x}", r"\cancel"),
                                          (r"a + \overline{x+y}", r"\overline"), (r"\widetilde{ab}", r"\widetilde")])
def test_what_mathml_core_cannot_draw_is_refused_at_its_command(tex, command):
    with pytest.raises(TexError) as e:
        render_tex(tex, display=False)
    assert e.value.message.startswith(command) and e.value.position == tex.index(command)


def test_the_built_math_has_no_mathvariant_but_normal_and_every_styled_letter_drawn(built_site):
    pages = sorted(built_site.glob("*.html"))
    variants, missing, styled_seen = set(), [], 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        variants |= set(re.findall(r'mathvariant="([^"]*)"', text))
        for block in re.findall(r"<math[\s>].*?</math>", text, re.S):
            shown, _, tex = block.partition('<annotation encoding="application/x-tex">')
            tex = html_unescape(tex)
            for command, letters in STYLED_TEX.findall(tex):
                for ch in letters:
                    styled = styled_letter(ch, STYLE_COMMANDS[command])
                    if styled != ch:
                        styled_seen += 1
                        if styled not in shown:
                            missing.append(f"{page.name}: \\{command}{{{letters}}} has no {styled} in its MathML")
    assert variants <= {"normal"}, f"mathvariant other than normal in the output: {sorted(variants - {'normal'})}"
    assert styled_seen > 50, "the site's TeX should hold the styled letters this test is for"
    assert not missing, "\n".join(missing[:20])
