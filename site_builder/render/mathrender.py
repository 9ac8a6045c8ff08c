"""Render TeX to MathML at build time with KaTeX, run inside Python.

How: the vendored ``static/vendor/katex/katex.min.js`` is evaluated once per
process in QuickJS, an embedded JavaScript engine (the ``quickjs`` package
from PyPI: a small wheel with no Node.js needed), and ``katex.renderToString``
is called for each equation with ``output: "mathml"``. The browser lays the
MathML out itself, in the vendored Latin Modern Math font (a font with an
OpenType MATH table, static/vendor/latinmodern-math/): no math JavaScript and
no math stylesheet is shipped, so math is there on first paint, with
JavaScript off, in print, and for screen readers, which read MathML.

Why MathML and not KaTeX's HTML: the HTML output positions every glyph with
nested spans and inline styles, and it needs katex.min.css (22 KB) on every
page. Measured on this site, KaTeX's HTML was about five times the bytes of
the MathML it came with, and the largest single part of the heavy pages.
MathML Core is laid out natively by Chromium (109+), Firefox and Safari.

Why KaTeX and not latex2mathml (pure Python, no JS at all): latex2mathml
draws some equations wrong without saying so (unsupported constructs come out
mangled rather than as errors), and a documentation build must fail loudly on
bad math instead of publishing it. KaTeX rejects what it cannot typeset.

Why QuickJS and not mini-racer (V8): V8 renders several times faster, but the
wheel is ~80 MB and it has been seen to hang at interpreter exit. QuickJS is
slower yet small and simple: loading KaTeX takes ~25 ms and a typical
equation ~1 ms, which is plenty for a site of hundreds of equations.

Strictness: ``throwOnError`` makes unknown commands and broken syntax raise
instead of rendering red text; ``strict: "error"`` also rejects input that
real LaTeX would not accept (e.g. accented letters in math mode);
``trust: false`` with a trust callback that throws makes ``\\href``,
``\\includegraphics`` and friends fail rather than silently render as red
text. Each failure becomes a :class:`TexError` with KaTeX's message and the
offset into the TeX source.

Linked symbols: KaTeX's MathML drops ``\\htmlClass``, so a symbol mark
``\\htmlClass{sym-<n>}{...}`` (site_builder/render/symbols.py) is rendered as
``\\href{#sym-<n>}{...}``, whose MathML keeps its target as an attribute, and
that attribute becomes ``class="sym-<n>"``. Only that exact form is trusted.

Styled letters: MathML Core, and so Chromium, ignores ``mathvariant`` (but for
``normal`` on ``<mi>``), and KaTeX marks ``\\mathbb{E}``, ``\\mathbf{1}``, ``\\mathcal{L}`` and
``\\texttt`` with it: Chromium drew an italic E, a plain 1 and an italic L. So a styled element's
letters and digits are rewritten to their Mathematical Alphanumeric code points (𝔼, 𝟏, ℒ), which
every MathML Core browser draws from the math font, and the attribute is dropped
(:func:`styled_letters`). Temml, a converter written for MathML Core, emits those code points
itself; it was measured against KaTeX on this site's 788 distinct equations (both render all):
Temml's output is 4 % smaller, its rendering 30 % slower (0.41 s against 0.31 s), and it has no
``\\htmlClass`` or ``\\href`` (symbol marks need ``\\class``, refused under ``strict``), its
classes want its stylesheet and its prime its own font. The rewrite here is one small pass
whose result the drawing test (tests/browser/test_math_drawing.py) checks, so KaTeX stays.

Negative spaces: KaTeX writes ``\\!`` as a thin space and an invisible separator, which MathML
Core draws as a thin space, so ``\\min\\!\\big(`` had two spaces where TeX has none; Chromium
clamps a negative ``<mspace>`` to 0, so the negative space cancels the space before it, or is
dropped (:func:`negative_spaces`).

A QuickJS context is not thread-safe, so the one shared context is guarded
by a lock; rendering is CPU-bound anyway, so threads would not speed it up.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from pathlib import Path

import quickjs

KATEX_DIR = Path(__file__).resolve().parents[2] / "static" / "vendor" / "katex"
KATEX_JS = KATEX_DIR / "katex.min.js"

# QuickJS's default 256 KiB stack overflows at ~15 nested \frac; 2 MiB allows
# ~130 and stays well inside the 8 MiB stack of Linux threads.
_STACK_BYTES = 2 * 1024 * 1024

# Returns a JSON string so that errors cross into Python as plain data.
_RENDER_JS = r"""
(function (tex, display, symbolClasses) {
  var options = {
    displayMode: display,
    output: "mathml",
    throwOnError: true,
    strict: "error",
    // A symbol mark, \\href{#sym-<n>}: allowed only when the build marks symbols.
    trust: function (context) {
      if (symbolClasses && context.command === "\\href" && /^#sym-[0-9]+$/.test(context.url)) {
        return true;
      }
      throw new katex.ParseError(
        "Untrusted command " + context.command + " is not allowed");
    },
  };
  try {
    return JSON.stringify({html: katex.renderToString(tex, options)});
  } catch (e) {
    if (e instanceof katex.ParseError) {
      var position = typeof e.position === "number" ? e.position : null;
      if (position === null && /^Untrusted command /.test(e.rawMessage)) {
        var at = tex.indexOf(e.rawMessage.split(" ")[2]);
        position = at >= 0 ? at : null;
      }
      return JSON.stringify({parse_error: e.rawMessage, position: position});
    }
    return JSON.stringify({internal_error: String(e)});
  }
})
"""


class TexError(Exception):
    """KaTeX rejected a TeX source.

    ``message`` is KaTeX's own message, ``position`` the character offset in
    ``tex`` that KaTeX points at (None when it gives none).
    """

    def __init__(self, message: str, position: int | None, tex: str):
        self.message = message
        self.position = position
        self.tex = tex
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"{message}{where} in TeX: {tex}")


_lock = threading.Lock()
_render_fn = None
_context = None


def _renderer():
    """The JS render function, creating the shared context on first use."""
    global _context, _render_fn
    if _render_fn is None:
        context = quickjs.Context()
        context.set_max_stack_size(_STACK_BYTES)
        context.eval(KATEX_JS.read_text(encoding="utf-8"))
        if context.eval('typeof katex === "object" && typeof katex.renderToString') != "function":
            raise RuntimeError(f"{KATEX_JS} did not define katex.renderToString")
        _render_fn = context.eval(_RENDER_JS)
        _context = context  # the function is only valid while its context lives
    return _render_fn


def _python_index(tex: str, utf16_offset: int) -> int:
    # KaTeX counts UTF-16 code units; characters beyond the BMP (e.g. 𝟙) take two.
    return len(tex.encode("utf-16-le")[: 2 * utf16_offset].decode("utf-16-le", "ignore"))


def KATEX_VERSION_KEY():
    """What the memo is keyed on: the vendored KaTeX file itself (its version and any edit),
    and this module, which post-processes what KaTeX returns."""
    return ((KATEX_DIR / "katex.min.js").stat().st_size, (KATEX_DIR / "VERSION").read_text(),
            Path(__file__).read_bytes())


# Successful renders, keyed on the input; the build loads and saves it with its cache
# (keyed on the KaTeX version), so an unchanged equation is never rendered twice.
MEMO: dict = {}


def render_tex(tex: str, display: bool, symbol_classes: bool = False) -> str:
    """KaTeX's MathML for ``tex`` (in ``<span class="katex">``, display math also in
    ``<span class="katex-display">``); raises TexError on bad input.

    symbol_classes=True marks exactly ``\\htmlClass{sym-<digits>}{...}``, which
    site_builder.render.symbols inserts to mark a concept's symbols, as ``class="sym-<digits>"``
    in the MathML; nothing else is trusted."""
    key = (tex, bool(display), bool(symbol_classes))
    if key in MEMO:
        return MEMO[key]
    if symbol_classes:
        html = _render(SYMBOL_MARK.sub(r"\\href{#sym-\1}", tex), display, True)
        html = SYMBOL_TARGET.sub(r'class="sym-\1"', html)
        html = NESTED_OPERATOR.sub(r'<mo class="\2"\1>\3</mo>', html)
        html = SYMBOL_HREF.sub("", html)       # the annotation keeps the author's TeX only
    else:
        html = _render(tex, display, False)
    html = html.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "", 1)   # implied in HTML
    html = negative_spaces(space_operators(core_layout(styled_letters(html), tex)))
    if display:
        html = f'<span class="katex-display">{html}</span>'
    MEMO[key] = html
    return html


SYMBOL_MARK = re.compile(r"\\htmlClass\{sym-([0-9]+)\}")
SYMBOL_TARGET = re.compile(r'href="#sym-([0-9]+)"')
# \mathbin{\href..{+}} comes out as <mo lspace=..><mo class=..>+</mo></mo>: one operator, spaced.
NESTED_OPERATOR = re.compile(r'<mo((?: [a-z]+="[^"]*")*)><mo class="(sym-[0-9]+)">([^<]*)</mo></mo>')
SYMBOL_HREF = re.compile(r"\\href\{#sym-[0-9]+\}")


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


# How a letter's name begins -> how its styled name goes on after the variant ("GREEK LUNATE
# EPSILON SYMBOL" is "MATHEMATICAL ITALIC EPSILON SYMBOL"; the symbols of MathML Core's
# italic table, the nabla and the partial sign, included).
LETTER_NAMES = (("LATIN CAPITAL LETTER ", "CAPITAL "), ("LATIN SMALL LETTER ", "SMALL "),
                ("GREEK CAPITAL LETTER ", "CAPITAL "), ("GREEK SMALL LETTER ", "SMALL "),
                ("GREEK CAPITAL THETA SYMBOL", "CAPITAL THETA SYMBOL"), ("GREEK LUNATE ", ""), ("GREEK ", ""),
                ("DIGIT ", "DIGIT "), ("NABLA", "NABLA"), ("PARTIAL DIFFERENTIAL", "PARTIAL DIFFERENTIAL"))


def styled_letter(ch: str, variant) -> str:
    """The Mathematical Alphanumeric code point of a letter or digit in a mathvariant (𝔼 for
    E in double-struck), or `ch` itself where the block has none (other characters)."""
    if variant not in VARIANTS:
        return ch
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return ch
    for prefix, short in LETTER_NAMES:
        if name.startswith(prefix):
            full = f"{VARIANTS[variant]} {short}{name[len(prefix):]}"
            break
    else:
        return ch
    for styled, hole in ((full, full),) + HOLE_NAMES:
        if full.startswith(styled):
            try:
                return unicodedata.lookup(hole + full[len(styled):])
            except KeyError:
                continue
    return ch


# A leaf element with a mathvariant other than normal (KaTeX's MathML puts it on <mi>, <mn>,
# <mo> and <mtext> leaves).
STYLED = re.compile(r'<(m[a-z]+)((?: [a-z]+="[^"]*")*?) mathvariant="(?!normal")([a-z-]+)"((?: [a-z]+="[^"]*")*)>([^<]*)</\1>')
LEFT_STYLED = re.compile(r'mathvariant="(?!normal")([a-z-]+)"')


def styled_letters(html: str) -> str:
    """KaTeX's MathML with each styled leaf's letters as their styled code points and no
    mathvariant but normal left (MathML Core draws the code point, ignores the attribute)."""
    html = STYLED.sub(lambda m: f"<{m[1]}{m[2]}{m[4]}>"
                                f"{''.join(styled_letter(ch, m[3]) for ch in m[5])}</{m[1]}>", html)
    left = LEFT_STYLED.search(html)
    if left:      # a styled element with children: a KaTeX output this pass was not written for
        raise RuntimeError(f"KaTeX's MathML has mathvariant={left[1]!r} on an element that is not a leaf; "
                           "site_builder/mathrender.styled_letters cannot draw it in MathML Core")
    return html


# KaTeX writes what Latin Modern Math can stretch in MathML Core with a character it cannot, or
# leaves a stretch to the operator dictionary, which stretches no bar: (KaTeX's, drawn right).
# Each was seen wrong in Chromium (an \\underline under the middle third of "xyz", \\left| at
# text size beside a fraction, \\overset{!}{=} as "=!") and is drawn right after the change, which
# tests/browser/test_math_drawing.py measures.
CORE_REPAIRS = (('<mo stretchy="true">\u203e</mo></munder>', '<mo stretchy="true">\u0332</mo></munder>'),  # \\underline
                # \\bar: KaTeX's accent is the modifier letter macron, which the math font lacks
                # (a fallback font drew it); the font's own macron is the same accent
                ('<mo>\u02c9</mo></mover>', '<mo>\u00af</mo></mover>'))
FENCE_BAR = re.compile('<mo fence="true">([|\u2223\u2225\u2016])</mo>')           # \\left| ... \\right\\|
# An <mo> holding elements (\\overset{!}{=}, \\stackrel, \\mathop{x}\\limits): no MathML Core operator
WRAPPING_OPERATOR = re.compile(r'<mo((?: [a-z]+="[^"]*")*)>(?=<m)')
# What no rewrite makes right here, refused as KaTeX refuses what it cannot typeset:
# (KaTeX's MathML, the TeX commands that write it, why, what to write instead)
UNDRAWABLE = (("<menclose", (r"\boxed", r"\fbox", r"\cancel", r"\bcancel", r"\xcancel", r"\sout", r"\colorbox",
                             r"\fcolorbox", r"\angl", r"\phase"),
               "draws no box or stroke in MathML Core browsers (KaTeX writes <menclose>, which they do not draw)",
               "leave it out, or say it in words"),
              ('<mo stretchy="true">\u203e</mo></mover>', (r"\overline",),
               "draws its bar over one character only (the math font has no overline that stretches)",
               r"write \bar{x} over one letter"),
              ('<mo stretchy="true">~</mo></mover>', (r"\widetilde",),
               "draws its tilde over one character only (the math font has no tilde that stretches in MathML Core)",
               r"write \tilde{x} over one letter"))


def core_layout(html: str, tex: str) -> str:
    """KaTeX's MathML made to draw in MathML Core as TeX draws it (CORE_REPAIRS, stretchy bars
    for \\left| and \\left\\|, an <mrow> for an <mo> that holds elements), or a TexError naming
    the command that it cannot draw (UNDRAWABLE)."""
    for markup, commands, why, fix in UNDRAWABLE:
        if markup in html:
            command = next((c for c in commands if c in tex), commands[0])
            at = tex.find(command)
            raise TexError(f"{command} {why}; {fix}", at if at >= 0 else None, tex)
    for katex, drawn in CORE_REPAIRS:
        html = html.replace(katex, drawn)
    html = FENCE_BAR.sub(r'<mo fence="true" stretchy="true" symmetric="true">\1</mo>', html)
    for m in reversed(list(WRAPPING_OPERATOR.finditer(html))):   # innermost first: spans stay valid
        end = _element_end(html, m.start())
        html = f"{html[:m.start()]}<mrow{m[1]}>{html[m.end():end - len('</mo>')]}</mrow>{html[end:]}"
    return html


APPLY = "<mo>\u2061</mo>"          # KaTeX's "function application" after \tanh, \max, \operatorname
SCRIPTS = ("<munder>", "<msub>", "<munderover>", "<msubsup>", "<msup>", "<mover>")
THIN_SPACE = '<mspace width="0.1667em"></mspace>'
_TAG = re.compile(r"<(/?)([a-z]+)[^>]*?(/?)>")


# KaTeX's MathML for \\! (and \\negmedspace, \\negthickspace): the positive space of that width
# and an invisible separator, which MathML Core draws as the positive space.
NEGATIVE_SPACE = re.compile(f"({re.escape(THIN_SPACE)})?<mtext>([\u2009\u205f\u2005])\u2063</mtext>")


def negative_spaces(html: str) -> str:
    """TeX's negative spaces, which MathML Core cannot draw (Chromium clamps a negative mspace
    to 0): where one follows the thin space after an operator name (its use here,
    `\\sin\\!\\left(`) the two cancel; elsewhere it is dropped. KaTeX's text drew a space where
    the author took one away: "min" and its "(" were two spaces apart."""
    return NEGATIVE_SPACE.sub("", html)


def _element_end(html: str, start: int) -> int:
    """The index just after the element that opens at `start`."""
    depth = 0
    for m in _TAG.finditer(html, start):
        if m.group(3):
            continue
        depth += -1 if m.group(1) else 1
        if depth == 0:
            return m.end()
    return len(html)


def space_operators(html: str) -> str:
    """TeX puts a thin space between an operator name and an argument that is not in
    brackets (`\\tanh u`, `\\max_j z_{ij}`); MathML's function application character has none,
    so the browser drew "tanhu" and "maxz". Insert the space where TeX has it: after the
    operator (or after its limits), before anything that is not an operator, a bracket or
    the end of a group."""
    out, pos = [], 0
    at = html.find(APPLY)
    while at >= 0:
        end = at + len(APPLY)
        if html.startswith("</mrow>", end):
            base = max(html.rfind("<mrow>", 0, at), html.rfind("<mrow class=", 0, at))
            parent = next((t for t in SCRIPTS if html.endswith(t, 0, base)), None)
            if parent:                                # \max_j: the name is the base of a script
                end = _element_end(html, base - len(parent))
            elif html.startswith("<mrow class=", base):   # a marked symbol's name
                end = _element_end(html, base)
            else:
                end = -1
        if end > 0 and html.startswith("<m", end) and not html.startswith(("<mo", "<mspace"), end) \
                and end >= pos:
            out.append(html[pos:end])
            out.append(THIN_SPACE)
            pos = end
        at = html.find(APPLY, at + len(APPLY))
    out.append(html[pos:])
    return "".join(out)


def _render(tex, display, symbol_classes):
    with _lock:
        result = json.loads(_renderer()(tex, bool(display), bool(symbol_classes)))
    if "html" in result:
        return result["html"]
    if "parse_error" in result:
        position = result["position"]
        if position is not None:
            position = _python_index(tex, position)
        # A message may quote half a surrogate pair, which no codec can print.
        message = result["parse_error"].encode("utf-8", "backslashreplace").decode("utf-8")
        raise TexError(message, position, tex)
    if "stack overflow" in result["internal_error"]:
        raise TexError("Expression is nested too deeply to render", None, tex)
    raise RuntimeError(f"KaTeX failed on {tex!r}: {result['internal_error']}")


def katex_version() -> str:
    """Version of the vendored KaTeX, as the loaded JS reports it."""
    with _lock:
        _renderer()
        return _context.eval("katex.version")
