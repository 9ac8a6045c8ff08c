"""Render TeX to HTML at build time with KaTeX, run inside Python.

How: the vendored ``static/vendor/katex/katex.min.js`` is evaluated once per
process in QuickJS, an embedded JavaScript engine (the ``quickjs`` package
from PyPI: a small wheel with no Node.js needed), and ``katex.renderToString``
is called for each equation. The pages then ship only ``katex.min.css`` and
the woff2 fonts: no math JavaScript runs in the reader's browser, so math is
there on first paint, with JavaScript off, and in feeds and print. KaTeX's
default ``htmlAndMathml`` output is kept so screen readers get MathML beside
the visual HTML.

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

A QuickJS context is not thread-safe, so the one shared context is guarded
by a lock; rendering is CPU-bound anyway, so threads would not speed it up.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import quickjs

KATEX_DIR = Path(__file__).resolve().parent.parent / "static" / "vendor" / "katex"
KATEX_JS = KATEX_DIR / "katex.min.js"

# QuickJS's default 256 KiB stack overflows at ~15 nested \frac; 2 MiB allows
# ~130 and stays well inside the 8 MiB stack of Linux threads.
_STACK_BYTES = 2 * 1024 * 1024

# Returns a JSON string so that errors cross into Python as plain data.
_RENDER_JS = r"""
(function (tex, display, symbolClasses) {
  var options = {
    displayMode: display,
    output: "htmlAndMathml",
    throwOnError: true,
    // \\htmlClass is an HTML extension: allowed only when the build marks symbols.
    strict: function (code) {
      return symbolClasses && code === "htmlExtension" ? "ignore" : "error";
    },
    trust: function (context) {
      if (symbolClasses && context.command === "\\htmlClass" && /^sym-[0-9]+$/.test(context.class)) {
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
    """What the memo is keyed on: the vendored KaTeX file itself (its version and any edit)."""
    return (KATEX_DIR / "katex.min.js").stat().st_size, (KATEX_DIR / "VERSION").read_text()


# Successful renders, keyed on the input; the build loads and saves it with its cache
# (keyed on the KaTeX version), so an unchanged equation is never rendered twice.
MEMO: dict = {}


def render_tex(tex: str, display: bool, symbol_classes: bool = False) -> str:
    """KaTeX HTML (with MathML) for ``tex``; raises TexError on bad input.

    symbol_classes=True trusts exactly ``\\htmlClass{sym-<digits>}{...}``, which
    site_builder.symbols inserts to mark a concept's symbols; nothing else is trusted."""
    key = (tex, bool(display), bool(symbol_classes))
    if key in MEMO:
        return MEMO[key]
    html = _render(tex, display, symbol_classes)
    MEMO[key] = html
    return html


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
