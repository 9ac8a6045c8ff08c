"""Stage 5: render. One Jinja2 environment, Markdown for prose, Pygments for code, KaTeX for math.

Prose is Markdown with two additions, both handled before Markdown sees the text so that it
cannot mangle them: `$...$` / `$$...$$` math (rendered by the vendored KaTeX at build time),
and `[[pkg.module.function]]` / `[[pkg.module.function | snippet]]` code references,
which the resolver turns into links to the source page. Rendering never fails halfway: a
TeX error or an unresolved reference becomes a Problem carrying the content file and line.

Source files are highlighted once per build and split into lines; Pygments closes its spans
at every newline, so each line's HTML stands alone and can be sliced into any listing.
"""
import html
import re
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

import markdown
from jinja2 import Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from site_builder import COMMAND
from site_builder.base.cache import digest
from site_builder.render.mathrender import render_tex, TexError
from site_builder.render.links import LINK_ATTRIBUTES, srcset_urls
from site_builder.base.problems import Problem
from site_builder.gather.resolve import resolve_snippet, resolve_function, ResolveError
from site_builder.gather import prose

ROLE_LABELS = {"computes": "Computes it", "inline": "Written inline", "tests": "Tests it",
               "derived": "Derived from implementation"}
MATH_RE = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)
PLACEHOLDER = "\u2063KX{}\u2063"       # an invisible separator Markdown leaves alone


_ENVIRONMENTS = {}
# Highlighted files (digest of a file's text -> its HTML lines), for the whole process like
# mathrender.MEMO: highlighting depends on the text and Pygments only, so builds in one process
# share it (the test session's many small builds highlight the same package and tests files).
# A build with a cache loads its stored table into it and saves it back (build/memos.py).
CODE_MEMO: dict = {}


def make_environment(root: Path, bytecode_dir: Path = None) -> Environment:
    """The one Jinja2 environment of a build. It is kept for the process (serve rebuilds reuse
    its compiled templates; Jinja2 recompiles a template whose file changed), and with
    bytecode_dir compiled templates are also kept on disk for the next process."""
    key = (str(root), str(bytecode_dir))
    if key not in _ENVIRONMENTS:
        env = Environment(loader=FileSystemLoader(str(root / "templates")), autoescape=True,
                          undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                          keep_trailing_newline=True,
                          bytecode_cache=FileSystemBytecodeCache(str(bytecode_dir)) if bytecode_dir else None)
        env.filters["role_label"] = lambda role: ROLE_LABELS[role]
        env.filters["plain_text"] = plain_text
        env.globals["build_command"] = COMMAND
        env.globals["cards_on_a_phone"] = cards_on_a_phone
        _ENVIRONMENTS[key] = env
    return _ENVIRONMENTS[key]


# Elements whose content a reader does not see as text: a math's TeX source (KaTeX's
# <annotation>), and scripts or styles an author's Markdown passed through.
UNSEEN_CONTENT = re.compile(r"<(annotation|script|style)\b[^>]*>.*?</\1\s*>", re.S | re.I)


def plain_text(fragment) -> str:
    """The text a reader sees in an HTML fragment, for an attribute (a page's meta
    description): tags stripped, entities decoded, and no TeX source beside the math."""
    return Markup(UNSEEN_CONTENT.sub("", str(fragment))).striptags()


# About the characters of a table row a 390 px phone shows in the site's code font, less the
# cell padding: a wider table is a stack of cards below 700 px (static/site.css), each cell under
# its column's name, rather than a box whose computed columns are off-screen (issue 27).
PHONE_CHARACTERS = 40
LINE_BREAK = re.compile(r"<br\s*/?>|\n", re.I)


def cards_on_a_phone(headers, rows, keys=None) -> bool:
    """Whether a table's widest lines, column by column, add up to more than a phone shows.
    `rows` are sequences of cells, or mappings read at `keys`; a cell's width is its longest
    line of visible text, a header's its longest word (headers wrap)."""
    import html as html_module

    def width(cell):
        text = UNSEEN_CONTENT.sub("", str(cell))
        return max((len(html_module.unescape(re.sub(r"<[^>]+>", "", line)).strip()) for line in LINE_BREAK.split(text)), default=0)
    cells = [[row[k] for k in keys] if keys else list(row) for row in rows]
    columns = max([len(headers)] + [len(r) for r in cells])
    total = 0
    for j in range(columns):
        head = str(headers[j]) if j < len(headers) else ""
        total += max([max((len(w) for w in head.split()), default=0)] + [width(r[j]) for r in cells if j < len(r)])
    return total + 2 * (columns - 1) > PHONE_CHARACTERS


def source_url(file):
    """Where the source page of a repository file lives, relative to the site root."""
    return f"source/{file}.html"


def line_anchor(start, end=None):
    return f"L{start}" if end in (None, start) else f"L{start}-L{end}"


def short_file(file, package):
    """A file as a page names it: without the documented package's folder (`layers.py`)."""
    return file.split("/", 1)[1] if file.startswith(package + "/") else file


def cite_authors(authors):
    """'Vaswani, Shazeer, ...' or 'Vaswani and others' -> 'Vaswani et al.'; 'Hendrycks and
    Gimpel' or 'Hendrycks, Gimpel' -> 'Hendrycks and Gimpel'; one author stays one. Surnames as
    written. Citations and quotations both name their source this way."""
    names = [n.strip() for part in authors.split(",") for n in part.split(" and ") if n.strip()]
    if any(n in ("...", "et al.", "et al", "others") for n in names) or len(names) > 2:
        return f"{names[0]} et al."
    return " and ".join(names)


def spoken_list(items):
    """[12] -> '12'; [12, 19] -> '12 and 19'; [1, 2, 3] -> '1, 2 and 3'."""
    items = [str(x) for x in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class Renderer:
    """Holds what every page shares: the index, the problems list, the math cache."""

    def __init__(self, root, index, problems, code_memo=None):
        self.root, self.index, self.problems = root, index, problems
        self.code_memo = {} if code_memo is None else code_memo   # digest of a file -> its HTML lines
        self.math_cache = {}
        self.cited = set()          # qualnames that prose references resolved
        self.citations = []         # (qualname, Resolved, file, line) of every prose code reference
        self.values = []            # every computed value rendered: dict(file, line, example, key, format, text)
        self.value_source = None    # (module:function, file, line) -> ExampleResult or None; set by PageBuilder
        self.sources = {}           # site.yaml's papers and sources, for quotations
        self._source_lines = {}     # content file -> its lines, to find the line of a link

    # -- math and prose -------------------------------------------------------------------
    def tex(self, tex, display, file, line):
        """A formula's MathML; bad TeX is a problem at every place that uses it (only
        successes are remembered, so a second page with the same typo is reported too)."""
        key = (tex, display)
        if key not in self.math_cache:
            try:
                self.math_cache[key] = render_tex(tex, display)
            except TexError as e:
                pos = f" at position {e.position}" if e.position is not None else ""
                self.problems.append(Problem(file, line, f"TeX error{pos} in '{tex.strip()}': {e.message}",
                                             "fix the formula; KaTeX's message says what it could not parse"))
                return Markup(f'<code class="tex-error">{html.escape(tex)}</code>')
        return Markup(self.math_cache[key])

    def code_ref(self, qualname, snippet, file, line, prefix):
        """[[f]] -> a link to the function; [[f | snippet]] -> 'layers.py:113' linked to the line."""
        try:
            r = resolve_snippet(self.index, qualname, snippet) if snippet else resolve_function(self.index, qualname)
        except ResolveError as e:
            self.problems.append(Problem(file, self.line_of(file, line, qualname), str(e), "update the reference in the prose"))
            return f"<code>{html.escape(qualname)}</code>"
        self.cited.add(qualname)
        self.citations.append((qualname, r, file, self.line_of(file, line, qualname)))
        href = f"{prefix}{source_url(r.file)}#{line_anchor(r.start, r.end)}"
        origin = html.escape(f"{file}:{self.line_of(file, line, qualname)}")
        if snippet:
            label = f"{short_file(r.file, self.index.package)}:{r.start}" + (f"-{r.end}" if r.end != r.start else "")
            return f'<a class="line-ref" href="{href}" data-origin="{origin}" title="{html.escape(r.code.strip())}">{label}</a>'
        return f'<a class="fn-ref" href="{href}" data-origin="{origin}"><code>{html.escape(qualname.split(".")[-1])}</code></a>'

    def md(self, text, file, line, prefix="", inline=False, check_numbers=True):
        """Markdown with math, code references, computed values and quotations (their syntax
        and the number rule: site_builder/gather/prose.py); inline=True drops the wrapping <p>."""
        if not text:
            return Markup("")
        stash = []

        def keep(fragment):
            stash.append(fragment)
            return PLACEHOLDER.format(len(stash) - 1)

        text = str(text)
        if check_numbers:
            self.check_numbers(text, file, line)
        text = prose.replace_code_refs(text, lambda q, s: keep(self.code_ref(q, s, file, line, prefix)))
        text = prose.QUOTE_RE.sub(lambda m: keep(self.quote(m.group(1), m.group(2), file, line, prefix)), text)

        def math(m):
            tex = prose.VALUE_RE.sub(lambda v: self.value(v, file, line, plain=True), m.group(1) or m.group(2))
            return keep(self.tex(tex, m.group(1) is not None, file, line))
        text = MATH_RE.sub(math, text)
        text = prose.VALUE_RE.sub(lambda v: keep(self.value(v, file, line)), text)
        self.check_leftover_braces(text, file, line)
        out = _markdown().reset().convert(text)
        if inline and out.startswith("<p>") and out.endswith("</p>") and out.count("<p>") == 1:
            out = out[3:-4]
        out = re.sub("\u2063KX(\\d+)\u2063", lambda m: stash[int(m.group(1))], out)
        return Markup(self.mark_origins(out, file, line))

    # -- computed values, quotations, typed numbers ---------------------------------------
    def check_leftover_braces(self, text, file, line):
        """What is left of the prose once values, quotations, math and code references are
        replaced must hold no {{ or }}: a value or quotation that did not parse (no closing
        braces, no '|' after a quote's key, a format with braces) would show as raw text."""
        bare = re.sub(r"`[^`]*`", "", text)              # code spans may show the syntax itself
        found = [m.group(0) for m in re.finditer(r"\{\{[^\n]{0,40}", bare)] \
            or [m.group(0) for m in re.finditer(r"[^\n{]{0,40}\}\}", bare)]
        for bad in found:
            self.problems.append(Problem(file, self.line_of(file, line, bad.strip()[:20]),
                                         f"'{bad.strip()}' is neither a computed value nor a quotation",
                                         "write {{module:function.key | format}} or {{quote KEY | text}}, "
                                         "and close it with }}"))

    def value(self, m, file, line, plain=False):
        """{{module:function.key | format}} -> the formatted value (a marked span in prose,
        plain text inside TeX), recorded in self.values; a value that cannot be had is a
        problem at the content line that asks for it."""
        ref, path, spec = m.group(1), m.group(2) or "", m.group(3)
        at = self.line_of(file, line, m.group(0)) if "\n" not in m.group(0) else line
        at = at if at != line else self.line_of(file, line, ref)
        result = self.value_source(ref, file, at) if self.value_source else None
        if result is None:
            if self.value_source:      # the example's own problem says why
                self.problems.append(Problem(file, at, f"no value for {m.group(0).strip()}: the example {ref} gave no result",
                                             "fix the example; its own problem line says what went wrong",
                                             follows=(ref,)))
            return "?"
        data = result.data or {}
        try:
            if not path:
                if len(data) != 1:
                    raise KeyError(f"name a key of its data: {', '.join(sorted(data)) or 'it has none'}")
                path = "." + next(iter(data))
            text = prose.format_value(prose.dig(data, path), spec)
        except (KeyError, IndexError, TypeError, ValueError) as e:
            self.problems.append(Problem(file, at, f"cannot compute {m.group(0).strip()}: {e.args[0] if e.args else e}",
                                         f"return the value in the data of {ref}, or correct the key or the format"))
            return "?"
        self.values.append(dict(file=file, line=at, example=ref, key=path.lstrip("."),
                                format=(spec or "").strip(), text=text))
        if plain:
            return text
        return (f'<span class="computed" title="computed at build time: {html.escape(ref + path)}">'
                f'{html.escape(text)}</span>')

    def quote(self, key, body, file, line, prefix=""):
        """{{quote SOURCE | text}} -> the text as a quotation, with whose it is beside it."""
        papers = self.sources.get("papers") or {}
        others = self.sources.get("sources") or {}
        if key in papers:
            entry = papers[key]
            who = f"{cite_authors(str(entry.get('authors', key)))} {entry.get('year', '')}".strip()
        elif key in others:
            who = str(others[key])
        else:
            self.problems.append(Problem(file, self.line_of(file, line, "quote " + key), f"unknown source '{key}' of a quotation",
                                         f"use a key of 'papers' or 'sources' in content/site.yaml: "
                                         f"{', '.join(list(papers) + list(others))}"))
            who = key
        inner = self.md(body, file, line, prefix, inline=True, check_numbers=False)
        return (f'<q class="quoted" data-source="{html.escape(key)}">{inner}</q>'
                f'<span class="quoted-source"> ({html.escape(who)})</span>')

    def check_numbers(self, text, file, line):
        """One strict problem per typed number in prose (the rule: site_builder/gather/prose.py)."""
        for token in prose.typed_numbers(text):
            words = text.split(token)[0].split()
            near = f"{words[-1]} {token}" if words else token
            at = self.line_of(file, line, near)
            if at == line and near != token:
                at = self.line_of(file, line, token)
            problem = Problem(
                file, at, f"typed number '{token}' in prose",
                "compute it with {{module:function.key}}, say it without a number, put it in $TeX$ or `code`, "
                "or mark it as a source's with {{quote KEY | ...}}", strict=True)
            if problem not in self.problems:        # a field rendered twice (a cache row's holds) is one problem
                self.problems.append(problem)

    # -- where links come from ------------------------------------------------------------
    def _lines(self, file):
        """The lines of a content file (none if it cannot be read)."""
        if file not in self._source_lines:
            try:
                self._source_lines[file] = (self.root / file).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError, TypeError):
                self._source_lines[file] = []
        return self._source_lines[file]

    def line_of(self, file, line, needle):
        """The first line of `file`, from `line` on, that contains `needle`; else `line`. A
        Markdown field starts at `line` (its key, or the first line of a page's body); the link
        is on that line or one of the next."""
        lines = self._lines(file)
        start = line if isinstance(line, int) and line > 0 else 1
        for n in range(start, len(lines) + 1):
            if needle and needle in lines[n - 1]:
                return n
        return line

    def link_line(self, file, line, url, written, after):
        """(line, position to search on from) of a link of the Markdown field at `line`, found
        by how it is written: `](url` or `]: url` (a reference) for Markdown's links, the
        attribute as written (`href="&#110;ope.html"`) for an author's HTML. The search starts
        at `after`, just past the field's previous link, so the same URL twice gives two lines
        and a code span (`nope.html`) is never taken for the link; else the first line holding
        the URL at all, as line_of."""
        lines = self._lines(file)
        reference = f"]: {url}"
        needles = [f"]({url}", f"](<{url}>", reference] + ([written] if written else [])
        field = (line if isinstance(line, int) and line > 0 else 1, 0)
        for row, col in dict.fromkeys((after, field)):
            for n in range(row, len(lines) + 1):
                text = lines[n - 1]
                # a hit inside a code span (`[q](nope.html)`, an odd number of backticks before
                # it on its line) is text, not a link
                hits = sorted((i, needle) for needle in needles for i in _all_finds(text, needle, col if n == row else 0)
                              if text.count("`", 0, i) % 2 == 0)
                if hits:
                    i, needle = hits[0]
                    # a reference's definition may stand anywhere (often at the field's end):
                    # the links written after this one are still searched from here
                    return n, (after if needle == reference else (n, i + 1))
        return self.line_of(file, line, url), after

    def mark_origins(self, fragment, file, line):
        """Give every tag of a rendered Markdown fragment that links somewhere (href, src, srcset, action) a
        `data-origin="file:line"`: the content line that wrote it. site_builder/render/links.py reads
        it to report a broken link at that line. Tags are found with html.parser, so an
        author's own HTML (`<a href=nope.html>`) is marked too."""
        if "href" not in fragment and "src" not in fragment and "action" not in fragment:
            return fragment
        finder = _LinkTags()
        finder.feed(fragment)
        finder.close()
        if not finder.found:
            return fragment
        starts = [0] + [i + 1 for i, ch in enumerate(fragment) if ch == "\n"]
        out, done = [], 0
        after = (line if isinstance(line, int) and line > 0 else 1, 0)     # the field's first line
        for (row, col), name_length, url, written in finder.found:
            at = starts[row - 1] + col + 1 + name_length          # just after "<a"
            found, after = self.link_line(file, line, url, written, after)
            origin = html.escape(f"{file}:{found}")
            out += [fragment[done:at], f' data-origin="{origin}"']
            done = at
        return "".join(out) + fragment[done:]

    # -- code -----------------------------------------------------------------------------
    def code_key(self, file):
        return code_key(self.index.files[file])

    def highlighted_lines(self, file):
        """The file as a list of HTML lines (index 0 is line 1). Not memoised here: a page asks
        the index for the file's lines each time (render/pages/reads.py); the highlighting is
        memoised on their text (highlight_into)."""
        return highlight_into(self.code_memo, self.index.files[file])

    def listing(self, file, start, end, cited=None, prefix=""):
        """Lines start..end, each with its number linking to the source page; cited: line -> [links]."""
        cited = cited or {}
        recorded = getattr(self.index, "highlighted", None)      # a page's reads (render/pages/reads.py)
        html_lines = recorded(file, start - 1, end) if recorded else self.highlighted_lines(file)[start - 1:end]
        rows = []
        for n in range(start, end + 1):
            rows.append(dict(n=n, html=html_lines[n - start], cited=cited.get(n, []),
                             href=f"{prefix}{source_url(file)}#L{n}"))
        return rows


def source_rows(html_lines, cited, root) -> Markup:
    """The rows of a source page's code table, one a line: its anchor `L{n}`, its number, its
    highlighted HTML and the links of the pages that cite it (cited: {n: [(href, label)]},
    hrefs from the site root). Made here, not by a loop of templates/source.html: a source
    page is up to a thousand rows, and the template's loop (attribute look-ups and escapes
    per field) took 0.05 s for the site's 42 source pages, this 0.004 s. Escaped as the
    template's autoescape would (markupsafe); tests/test_source_rows.py holds the two equal."""
    root = escape(root)
    rows = []
    for n, code in enumerate(html_lines, 1):
        cites = cited.get(n)
        if cites:
            links = ", ".join(f'<a href="{root}{escape(href)}">{escape(label)}</a>' for href, label in cites)
            rows.append(f'<tr id="L{n}" class="cited"><td class="ln">{n}</td><td class="code">{code}</td>'
                        f'<td class="cites">{links}</td></tr>\n')
        else:
            rows.append(f'<tr id="L{n}"><td class="ln">{n}</td><td class="code">{code}</td></tr>\n')
    return Markup("".join(rows))


def _all_finds(text, needle, start):
    """Every index of needle in text at or after start."""
    found, i = [], text.find(needle, start)
    while i >= 0:
        found.append(i)
        i = text.find(needle, i + 1)
    return found


def code_key(lines) -> str:
    """The highlighting memo's key of a file's lines (source_index.SourceIndex.files)."""
    return digest("\n".join(lines), UNSTYLED_TOKENS.pattern)


def highlight_into(memo, lines) -> list:
    """The lines as HTML lines, from memo ({code_key: HTML lines}) or highlighted into it."""
    key = code_key(lines)
    if key not in memo:
        out = highlight("\n".join(lines), PythonLexer(stripnl=False, ensurenl=False), HtmlFormatter(nowrap=True))
        out = UNSTYLED_TOKENS.sub(r"\1", out)
        memo[key] = out.split("\n")[:len(lines)]
    return memo[key]


@lru_cache(maxsize=None)
def _markdown():
    """One Markdown converter per process, reset before each text: building one per call
    (its parser and ~40 inline patterns) took longer than converting a paragraph."""
    return markdown.Markdown(extensions=["tables", "sane_lists"], output_format="html")


class _LinkTags(HTMLParser):
    """The start tags of a fragment that carry a link and no data-origin yet:
    [((line, column) of the "<", length of the tag's name, the link, its attribute as written
    in the tag, e.g. `href='&#110;ope.html'`)]."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found = []

    def handle_starttag(self, tag, attrs):
        names = [name for name, _ in attrs]
        name, url = next(((name, value) for name, value in attrs if name in LINK_ATTRIBUTES and value),
                         next((("srcset", urls[0]) for name, value in attrs if name == "srcset"
                               for urls in [srcset_urls(value or "")] if urls), (None, None)))
        if url is not None and "data-origin" not in names and tag != "base":
            raw = self.get_starttag_text() or ""
            m = re.match(r"<\s*([^\s/>]+)", raw)
            if m and m.start(1) == 1:
                written = re.search(r"(?<![\w:-])%s\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+)" % re.escape(name), raw, re.I)
                self.found.append((self.getpos(), len(m.group(1)), url.strip(), written and written.group(0)))


# Punctuation and whitespace take the text colour in both themes: their spans would be a
# tenth of the site's bytes for no colour at all.
UNSTYLED_TOKENS = re.compile(r'<span class="(?:p|w)">([^<]*)</span>')


def pygments_css():
    """Token colours for light, and for dark either chosen or from the system preference.
    Each colour is then darkened (light) or lightened (dark) just enough to keep a contrast of
    4.5:1 (WCAG AA) on every background code sits on in static/site.css."""
    light_bg, dark_bg = code_backgrounds()

    def rules(style, prefix, backgrounds, dark):
        lines = HtmlFormatter(style=style).get_style_defs(prefix).splitlines()
        css = "\n".join(l for l in lines if l.startswith(prefix + " .") and not l.startswith(prefix + " .hll"))
        return re.sub(r"(?<![-\w])color: (#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3})\b",
                      lambda m: "color: " + readable(m.group(1), backgrounds, dark), css)
    dark = ':root[data-theme="dark"] .hl'
    system = ':root:not([data-theme="light"]) .hl'
    return (rules("friendly", ".hl", light_bg, False) + "\n" + rules("monokai", dark, dark_bg, True) +
            "\n@media (prefers-color-scheme: dark) {\n" + rules("monokai", system, dark_bg, True) + "\n}\n")


CODE_BACKGROUNDS = ("--bg", "--code-bg", "--cited", "--current", "--sym-bg")


def code_backgrounds():
    """([light backgrounds], [dark backgrounds]) of code, read from the variables of site.css."""
    css = (Path(__file__).resolve().parents[2] / "static" / "site.css").read_text(encoding="utf-8")

    def block(selector):
        m = re.search(re.escape(selector) + r"\s*\{(.*?)\}", css, re.S)
        found = dict(re.findall(r"(--[\w-]+):\s*(#[0-9a-fA-F]{3,6})\b", m.group(1))) if m else {}
        return [found[v] for v in CODE_BACKGROUNDS if v in found]
    return block(":root") or ["#ffffff"], block(':root[data-theme="dark"]') or ["#000000"]


def _luminance(color):
    h = color.lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    def channel(c):
        c = int(c, 16) / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(h[i:i + 2]) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    la, lb = _luminance(a), _luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def readable(color, backgrounds, dark, target=4.6):
    """color, mixed toward white (dark themes) or black just enough for `target` on every background."""
    h = color.lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    rgb = [int(h[i:i + 2], 16) for i in (0, 2, 4)]
    goal = 255 if dark else 0
    for step in range(21):
        t = step / 20
        mixed = "#" + "".join(f"{round(c + (goal - c) * t):02x}" for c in rgb)
        if all(contrast(mixed, bg) >= target for bg in backgrounds):
            return mixed if step else color
    return "#ffffff" if dark else "#000000"
