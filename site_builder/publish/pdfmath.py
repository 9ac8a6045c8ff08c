"""TeX to Typst math for the companion PDF, with tex2typst run in QuickJS.

How: the vendored ``static/vendor/tex2typst/tex2typst.min.js`` (npm `tex2typst`, Apache-2.0) is
evaluated once per process in the same embedded engine that runs KaTeX for the pages
(site_builder/render/mathrender.py), and ``tex2typst`` is called for each equation's TeX. The
pages' TeX is the one source: the PDF's equations are converted from it at every build, never
written twice.

Why tex2typst and not mitex (a Typst package that parses TeX inside Typst, with a wasm plugin):
mitex is published on Typst's own package index, which a build cannot reach, and its npm build
(`mitex-wasm`) is a browser module without the Typst side; tex2typst is 63 KB of plain
JavaScript, converts this site's 788 distinct equations in about 2 s in QuickJS (memoised in the
build cache like KaTeX's output), and every one of them typesets.

What tex2typst does not cover is given to it as TeX macros (MACROS: TeX's manual delimiter sizes,
which Typst's `lr` sizes itself, and the paired-bar spellings) or renamed after it (RENAMED:
symbol names Typst has since changed). A TeX source it cannot read is a PdfMathError, which the
build reports at the page's content file.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

import quickjs

TEX2TYPST_DIR = Path(__file__).resolve().parents[2] / "static" / "vendor" / "tex2typst"
TEX2TYPST_JS = TEX2TYPST_DIR / "tex2typst.min.js"

# QuickJS of the quickjs wheel predates Array.prototype.at (ES2022), which tex2typst calls.
_POLYFILL = r"""
function __at(n) { n = Math.trunc(n) || 0; if (n < 0) n += this.length;
                   return n < 0 || n >= this.length ? undefined : this[n]; }
[Array.prototype, String.prototype].forEach(function (p) {
  if (!p.at) Object.defineProperty(p, "at", {value: __at, writable: true, configurable: true});
});
"""

# TeX that tex2typst passes through as names Typst does not know, said in TeX it converts.
MACROS = {r"\big": "{}", r"\Big": "{}", r"\bigg": "{}", r"\Bigg": "{}", r"\bigl": "{}", r"\bigr": "{}",
          r"\Bigl": "{}", r"\Bigr": "{}", r"\lVert": r"\|", r"\rVert": r"\|", r"\lvert": "|", r"\rvert": "|",
          r"\texttt": r"\mathtt"}
# Typst symbol names that tex2typst writes as an older Typst spelled them.
RENAMED = (("dot.circle", "dot.o"),)

_CONVERT_JS = r"""
(function (tex, macros) {
  try {
    return JSON.stringify({typst: tex2typst(tex, {fracToSlash: false, customTexMacros: JSON.parse(macros)})});
  } catch (e) {
    return JSON.stringify({error: String(e && e.message || e)});
  }
})
"""


class PdfMathError(Exception):
    """tex2typst could not read a TeX source."""


_lock = threading.Lock()
_convert = None
_context = None


def _converter():
    global _context, _convert
    if _convert is None:
        context = quickjs.Context()
        context.set_max_stack_size(2 * 1024 * 1024)
        context.eval(_POLYFILL)
        context.eval(TEX2TYPST_JS.read_text(encoding="utf-8"))
        _convert = context.eval(_CONVERT_JS)
        _context = context          # the function is only valid while its context lives
    return _convert


def VERSION_KEY():
    """What converted math depends on: the vendored converter and this module."""
    return (TEX2TYPST_JS.read_bytes(), Path(__file__).read_bytes())


# {tex: typst}; the build loads and saves it with its cache (site_builder/publish/pdf.py).
MEMO: dict = {}


def tex_to_typst(tex: str) -> str:
    """Typst math for a TeX formula (without the $ delimiters); PdfMathError if unreadable."""
    if tex in MEMO:
        return MEMO[tex]
    with _lock:
        result = json.loads(_converter()(tex, json.dumps(MACROS)))
    if "error" in result:
        raise PdfMathError(result["error"])
    typst = result["typst"]
    for old, new in RENAMED:
        typst = typst.replace(old, new)
    MEMO[tex] = typst
    return typst
