"""Stage 5: render. One Jinja2 environment, Markdown for prose, Pygments for code, KaTeX for math.

Prose is Markdown with two additions, both handled before Markdown sees the text so that it
cannot mangle them: `$...$` / `$$...$$` math (rendered by the vendored KaTeX at build time),
and `[[model.module.function]]` / `[[model.module.function | snippet]]` code references,
which the resolver turns into links to the source page. Rendering never fails halfway: a
TeX error or an unresolved reference becomes a Problem carrying the content file and line.

Source files are highlighted once per build and split into lines; Pygments closes its spans
at every newline, so each line's HTML stands alone and can be sliced into any listing.
"""
import html
import re
from functools import lru_cache
from pathlib import Path

import markdown
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from site_builder.mathrender import render_tex, TexError
from site_builder.problems import Problem
from site_builder.resolve import resolve_snippet, resolve_function, ResolveError

ROLE_LABELS = {"computes": "Computes it", "inline": "Written inline", "tests": "Tests it",
               "derived": "Derived from implementation"}
MATH_RE = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)
CODE_REF_RE = re.compile(r"\[\[\s*([\w.]+)\s*(?:\|\s*(.+?)\s*)?\]\]", re.S)
PLACEHOLDER = "\u2063KX{}\u2063"       # an invisible separator Markdown leaves alone


def make_environment(root: Path) -> Environment:
    env = Environment(loader=FileSystemLoader(str(root / "templates")), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True)
    env.filters["role_label"] = lambda role: ROLE_LABELS[role]
    return env


def source_url(file):
    """Where the source page of a repository file lives, relative to the site root."""
    return f"source/{file}.html"


def line_anchor(start, end=None):
    return f"L{start}" if end in (None, start) else f"L{start}-L{end}"


def short_file(file):
    return file.split("/", 1)[1] if file.startswith("model/") else file


class Renderer:
    """Holds what every page shares: the index, the problems list, the math cache."""

    def __init__(self, root, index, problems):
        self.root, self.index, self.problems = root, index, problems
        self.math_cache = {}
        self.cited = set()          # qualnames that prose references resolved

    # -- math and prose -------------------------------------------------------------------
    def tex(self, tex, display, file, line):
        key = (tex, display)
        if key not in self.math_cache:
            try:
                self.math_cache[key] = render_tex(tex, display)
            except TexError as e:
                pos = f" at position {e.position}" if e.position is not None else ""
                self.problems.append(Problem(file, line, f"TeX error{pos} in '{tex.strip()}': {e.message}",
                                             "fix the formula; KaTeX's message says what it could not parse"))
                self.math_cache[key] = f'<code class="tex-error">{html.escape(tex)}</code>'
        return Markup(self.math_cache[key])

    def code_ref(self, qualname, snippet, file, line, prefix):
        """[[f]] -> a link to the function; [[f | snippet]] -> 'transformer.py:113' linked to the line."""
        try:
            r = resolve_snippet(self.index, qualname, snippet) if snippet else resolve_function(self.index, qualname)
        except ResolveError as e:
            self.problems.append(Problem(file, line, str(e), "update the reference in the prose"))
            return f"<code>{html.escape(qualname)}</code>"
        self.cited.add(qualname)
        href = f"{prefix}{source_url(r.file)}#{line_anchor(r.start, r.end)}"
        if snippet:
            label = f"{short_file(r.file)}:{r.start}" + (f"-{r.end}" if r.end != r.start else "")
            return f'<a class="line-ref" href="{href}" title="{html.escape(r.code.strip())}">{label}</a>'
        return f'<a class="fn-ref" href="{href}"><code>{html.escape(qualname.split(".")[-1])}</code></a>'

    def md(self, text, file, line, prefix="", inline=False):
        """Markdown with math and code references; inline=True drops the wrapping <p>."""
        if not text:
            return Markup("")
        stash = []

        def keep(fragment):
            stash.append(fragment)
            return PLACEHOLDER.format(len(stash) - 1)

        text = CODE_REF_RE.sub(lambda m: keep(self.code_ref(m.group(1), m.group(2), file, line, prefix)), str(text))
        text = MATH_RE.sub(lambda m: keep(self.tex(m.group(1) or m.group(2), m.group(1) is not None, file, line)), text)
        out = markdown.markdown(text, extensions=["tables", "sane_lists"], output_format="html")
        if inline and out.startswith("<p>") and out.endswith("</p>") and out.count("<p>") == 1:
            out = out[3:-4]
        return Markup(re.sub("\u2063KX(\\d+)\u2063", lambda m: stash[int(m.group(1))], out))

    # -- code -----------------------------------------------------------------------------
    @lru_cache(maxsize=None)
    def highlighted_lines(self, file):
        """The file as a list of HTML lines (index 0 is line 1)."""
        text = "\n".join(self.index.files[file])
        out = highlight(text, PythonLexer(stripnl=False, ensurenl=False), HtmlFormatter(nowrap=True))
        lines = out.split("\n")
        return lines[:len(self.index.files[file])]

    def listing(self, file, start, end, cited=None, prefix=""):
        """Lines start..end, each with its number linking to the source page; cited: line -> [links]."""
        cited = cited or {}
        html_lines = self.highlighted_lines(file)
        rows = []
        for n in range(start, end + 1):
            rows.append(dict(n=n, html=html_lines[n - 1], cited=cited.get(n, []),
                             href=f"{prefix}{source_url(file)}#L{n}"))
        return rows


def pygments_css():
    """Token colours for light, and for dark either chosen or from the system preference."""
    def rules(style, prefix):
        lines = HtmlFormatter(style=style).get_style_defs(prefix).splitlines()
        return "\n".join(l for l in lines if l.startswith(prefix + " .") and not l.startswith(prefix + " .hll"))
    dark = ':root[data-theme="dark"] .hl'
    system = ':root:not([data-theme="light"]) .hl'
    return (rules("friendly", ".hl") + "\n" + rules("monokai", dark) +
            "\n@media (prefers-color-scheme: dark) {\n" + rules("monokai", system) + "\n}\n")
