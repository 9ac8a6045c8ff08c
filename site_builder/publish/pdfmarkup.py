"""A rendered page's HTML as Typst markup, for the companion PDF (site_builder/publish/pdf.py).

Why from the HTML and not from the page's view model: the HTML is what the reader is shown,
with every computed value, table, listing and figure already in it, and its default state
is what a printed page must show (hidden variants, buttons and form fields are left out; a
choice prints as its selected option). Reading the view model again would be a second copy
of every template. The cost: this module knows the site's element classes (code-table,
equation, note, ...), which the templates own; an element it does not know is typeset as its
text, so a new template part still prints, plainly, rather than vanishing.

How: html.parser (what the link check reads pages with) builds a small tree; each element
becomes Typst markup. Math is read back from the TeX annotation KaTeX keeps in its MathML and
converted by tex2typst (site_builder/publish/pdfmath.py); figures stay vector (their SVG is
embedded as it is); code listings keep their line numbers and print each cited line's file:line.
Labels are `slug:id`, the PDF's named destinations; a link to an element the PDF has no label
for prints as its text. Each page is typeset on its own (pdf.py), so a link to another page's
label cannot name it to Typst: it is written as a link to `pdf-dest:<label>` (OTHER_PAGE), which
the join of the pages turns into a link to that named destination.
"""
from __future__ import annotations

import html as htmllib
import json
import re
from html.parser import HTMLParser

from site_builder.publish.pdfmath import PdfMathError, tex_to_typst

TEXT_WIDTH_PT = 476
OTHER_PAGE = "pdf-dest:"      # a link to a label typeset in another part of the PDF (pdf.join_parts)
VOID = {"br", "img", "input", "meta", "link", "hr", "wbr", "col", "source", "area", "base", "embed", "param", "track"}
SKIP_TAGS = {"button", "script", "style", "nav", "template", "input", "textarea", "noscript", "h1", "img"}
SKIP_CLASSES = {"anchor", "copy-link", "play-note", "play-status", "summary", "visually-hidden", "skip"}


class Node:
    __slots__ = ("tag", "attrs", "children")

    def __init__(self, tag, attrs):
        self.tag, self.attrs, self.children = tag, attrs, []

    def classes(self):
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


class _Tree(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: (v if v is not None else "") for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, {k: (v if v is not None else "") for k, v in attrs}))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


MATH = re.compile(r'<math( display="block")?>.*?</math>', re.S)
ANNOTATION = re.compile(r'<annotation encoding="application/x-tex">(.*?)</annotation>', re.S)
SVG_OPEN = re.compile(r"<svg\b")
MAIN = re.compile(r"<main\b[^>]*>(.*)</main>", re.S)


def _lift(html: str, svgs: list) -> str:
    """The page's HTML with each MathML formula as a <tex-math> holding its TeX and each
    outermost SVG as an <svg-ref> to its markup in `svgs` (parsed as a tree, both would lose
    what they are)."""
    def math(m):
        tex = ANNOTATION.search(m[0])
        return (f'<tex-math data-display="{"block" if m[1] else "inline"}" '
                f'data-tex="{htmllib.escape(htmllib.unescape(tex[1]) if tex else "")}"></tex-math>')
    html = MATH.sub(math, html)
    out, pos = [], 0
    for m in SVG_OPEN.finditer(html):
        if m.start() < pos:
            continue
        end = _svg_end(html, m.start())
        out.append(html[pos:m.start()])
        out.append(f'<svg-ref data-n="{len(svgs)}"></svg-ref>')
        svgs.append(html[m.start():end])
        pos = end
    out.append(html[pos:])
    return "".join(out)


def _svg_end(html: str, start: int) -> int:
    depth = 0
    for m in re.finditer(r"<(/?)svg\b[^>]*?(/?)>", html[start:]):
        if m[2]:
            continue
        depth += -1 if m[1] else 1
        if depth == 0:
            return start + m.end()
    return len(html)


FIGURE_CLASSES = re.compile(r"\.(chart|heatmap|arch-)")


def svg_stylesheet(css: str) -> str:
    """A <style> for the site's SVG figures from the site's stylesheet: the rules that style
    them, with its light theme's variables put in (Typst's SVG renderer reads class rules but
    not CSS variables; without them every shape was drawn black)."""
    root = re.search(r":root\s*\{(.*?)\}", css, re.S)
    values = dict(re.findall(r"(--[\w-]+)\s*:\s*([^;]+);", root[1])) if root else {}
    resolve = lambda text: re.sub(r"var\((--[\w-]+)\)", lambda m: values.get(m[1], "currentColor"), text)
    top_level = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", css)
    rules = [f"{sel.strip()} {{{resolve(body)}}}" for sel, body in re.findall(r"([^{}]+)\{([^{}]*)\}", top_level)
             if FIGURE_CLASSES.search(sel) and ":" not in sel]
    return f"<style>svg {{ color: {values.get('--fg', '#000')} }} {' '.join(rules)}</style>"


def escape(text: str) -> str:
    """Text as Typst markup prints it: each character Typst gives a meaning, escaped."""
    return re.sub(r"([\\#*_`$<>@\[\]~/=+\-'\"])", r"\\\1", text)


def string(text: str) -> str:
    """A Typst string literal."""
    return json.dumps(re.sub(r"[\x00-\x08\x0b-\x1f]", "", text), ensure_ascii=False)


class PageMarkup:
    """One page's <main> as Typst markup. `labels`: every label the document has (`slug:id`), so
    that links to them become internal links; `math_problems` collects (tex, message) for TeX
    tex2typst could not read; `sections` (label, title markup) for the contents."""

    def __init__(self, slug: str, labels: set, svg_style: str = ""):
        self.slug, self.labels, self.svg_style = slug, labels, svg_style
        self.svgs, self.math_problems, self.sections = [], [], []

    def convert(self, html: str) -> str:
        main = MAIN.search(html)
        tree = _Tree()
        tree.feed(_lift(main[1] if main else html, self.svgs))
        return self.blocks(tree.root)

    # -- inline ---------------------------------------------------------------------------------
    def inline(self, node) -> str:
        return "".join(self.inline_one(c) for c in node.children)

    def inline_one(self, c) -> str:
        if isinstance(c, str):
            return escape(re.sub(r"\s+", " ", c))
        if self.skipped(c):
            return ""
        tag = c.tag
        if tag in ("strong", "b"):
            return f"#strong[{self.inline(c)}]"
        if tag in ("em", "i"):
            return f"#emph[{self.inline(c)}]"
        if tag == "code":
            return f"#raw({string(c.text())})"
        if tag == "br":
            return "#linebreak()"
        if tag == "a":
            return self.link(c)
        if tag == "tex-math":
            return self.math(c.attrs.get("data-tex", ""), False)
        if tag == "select":
            chosen = [o for o in c.children if isinstance(o, Node) and o.tag == "option" and "selected" in o.attrs]
            return f"#raw({string(chosen[0].text() if chosen else '')})"
        if tag == "svg-ref":
            return self.figure(c)
        if tag in ("sub", "sup"):
            return f"#{tag}[{self.inline(c)}]"
        if tag == "span" and "badge" in c.classes():
            return f"#badge[{self.inline(c)}]"
        return self.inline(c)

    def link(self, a) -> str:
        body = self.inline(a)
        target = self.target(a.attrs.get("href", ""))
        if target is None:
            return body
        return f"#link({target})[{body}]"

    def target(self, href: str):
        """A label `<slug:id>` or an external address for a link, None if the PDF has no such place."""
        if href.startswith(("http://", "https://")):
            return string(href)
        page, _, frag = href.partition("#")
        slug = page[:-5] if page.endswith(".html") and "/" not in page else (self.slug if not page else None)
        if slug is None:
            return None
        name = f"{slug}:{frag}" if frag else slug
        if name not in self.labels:
            return None
        # Typst code for the target: a label of this page, or another page's, joined later
        return f"label({string(name)})" if slug == self.slug else string(OTHER_PAGE + name)

    def math(self, tex: str, display: bool, numbered=False) -> str:
        try:
            typst = tex_to_typst(tex)
        except PdfMathError as e:
            self.math_problems.append((tex, str(e)))
            return f"#raw({string(tex)})"
        if not display:
            return f"${typst}$"
        numbering = '"(1)"' if numbered else "none"
        return f"#math.equation(block: true, numbering: {numbering}, $ {typst} $)"

    def figure(self, node) -> str:
        svg = self.svgs[int(node.attrs["data-n"])]
        if re.match(r'<svg class="[^"]*\bnarrow\b', svg):
            return ""              # the phone-width copy of a chart the page also has wide
        svg = re.sub(r"(<svg\b[^>]*>)", lambda m: m[1] + self.svg_style, svg, count=1)
        width = re.search(r'\bwidth="([0-9.]+)"', svg[:400])
        # a CSS pixel is 0.75 pt; no wider than the text (A4 less the margins: 476 pt)
        size = f"{min(float(width[1]) * 0.75, TEXT_WIDTH_PT):.1f}pt" if width else "100%"
        return f"#svgfig({string(svg)}, {size})"

    # -- blocks ---------------------------------------------------------------------------------
    def skipped(self, node) -> bool:
        return node.tag in SKIP_TAGS or "hidden" in node.attrs or bool(node.classes() & SKIP_CLASSES)

    def blocks(self, node) -> str:
        out, run = [], []
        for c in node.children:
            if isinstance(c, str) or (not self.skipped(c) and self.is_inline(c)):
                run.append(self.inline_one(c))
                continue
            if run:
                out.append("".join(run).strip())
                run = []
            if not self.skipped(c):
                out.append(self.block(c))
        if run:
            out.append("".join(run).strip())
        return "\n\n".join(x for x in out if x)

    def is_inline(self, c) -> bool:
        return c.tag in ("a", "strong", "b", "em", "i", "code", "br", "span", "tex-math", "sub", "sup", "label",
                         "select", "abbr", "kbd", "small", "time", "svg-ref") \
            and not (c.tag == "tex-math" and c.attrs.get("data-display") == "block") \
            and not (c.tag == "svg-ref")

    def block(self, c) -> str:
        tag, classes = c.tag, c.classes()
        if tag == "section":
            return self.section(c)
        if tag == "h2":
            return f"#heading(level: 2)[{self.inline(c).strip()}]"
        if tag in ("h3", "h4", "h5"):
            return f"#subhead[{self.inline(c).strip()}]"
        if tag == "p":
            if "listing-head" in classes or "shapes-title" in classes or "example-title" in classes \
                    or "matrix-name" in classes:
                return f"#caption[{self.inline(c).strip()}]"
            return self.inline(c).strip()
        if tag in ("ul", "ol"):
            items = [f"[{self.blocks(li)}]" for li in c.children if isinstance(li, Node) and li.tag == "li"]
            return f"#{'enum' if tag == 'ol' else 'list'}({', '.join(items)})" if items else ""
        if tag == "aside":
            return f"#note[{self.blocks(c)}]"
        if tag == "figure" and "equation" in classes:
            return self.equation(c)
        if tag == "tex-math":
            return self.math(c.attrs.get("data-tex", ""), True)
        if tag == "svg-ref":
            return self.figure(c)
        if tag == "table":
            return self.listing(c) if "code-table" in classes else self.table(c)
        if tag == "pre":
            return f"#raw(block: true, {string(c.text())})"
        if tag == "details":
            return self.blocks(c)
        if tag == "summary":
            return f"#caption[{self.inline(c).strip()}]"
        if tag == "figcaption":
            return f"#caption[{self.inline(c).strip()}]"
        if tag == "form":
            return self.form(c)
        if tag == "dt":
            return f"#block(above: 0.8em, below: 0.3em, sticky: true, strong[{self.inline(c).strip()}])"
        if tag == "dd":
            return f"#pad(left: 1.2em)[{self.blocks(c)}]"
        if tag == "blockquote":
            return f"#quote(block: true)[{self.blocks(c)}]"
        return self.blocks(c)

    def section(self, c) -> str:
        sid = c.attrs.get("id")
        parts = []
        for child in c.children:
            if isinstance(child, Node) and child.tag == "h2" and sid:
                title = self.inline(child).strip()
                self.sections.append((f"{self.slug}:{sid}", title))
                parts.append(f"#section({string(self.slug + ':' + sid)})[{title}]")
            elif isinstance(child, str):
                if child.strip():
                    parts.append(escape(child.strip()))
            elif not self.skipped(child):
                wrapper = Node("div", {})
                wrapper.children = [child]
                parts.append(self.blocks(wrapper))
        return "\n\n".join(p for p in parts if p)

    def equation(self, c) -> str:
        anchor = c.attrs.get("id", "")
        name, tex, rest = "", None, []
        for child in c.children:
            if not isinstance(child, Node):
                continue
            if child.tag == "figcaption":
                name = self.inline(child).strip()
            elif child.tag == "div" and "math" in child.classes():
                found = _find(child, "tex-math")
                tex = found.attrs.get("data-tex", "") if found else ""
            elif not self.skipped(child):
                rest.append(self.block(child))
        label = f"{self.slug}:{anchor}"
        body = self.math(tex or "", True, numbered=True)
        refs = "".join(f"\n#eqrefs[{r}]" for r in rest if r)
        return f"#equation({string(label)}, [{name}], [{body}]){refs}"

    def form(self, c) -> str:
        """An example's choices, printed as what the page shows first."""
        choices = []
        for label in _find_all(c, "label"):
            if self.skipped(label) or not _find(label, "select"):
                continue
            choices.append(self.inline(label).strip())
        return f"#caption[{', '.join(choices)}]" if choices else ""

    def listing(self, table) -> str:
        src = table.attrs.get("data-src", "")
        file = src[len("source/"):-len(".html")] if src.startswith("source/") and src.endswith(".html") else ""
        rows = []
        for tr in _find_all(table, "tr"):
            cells = {next(iter(td.classes()), ""): td for td in tr.children if isinstance(td, Node) and td.tag == "td"}
            line = tr.attrs.get("data-line") or (cells["ln"].text().strip() if "ln" in cells else "")
            code = cells["code"].text() if "code" in cells else ""
            cites = self.inline(cells["cites"]).strip() if "cites" in cells else ""
            cited = "cited" in tr.classes()
            rows.append(f"({string(line)}, {'true' if cited else 'false'}, {string(code)}, [{cites}])")
        return f"#listing({string(file)}, ({', '.join(rows)},))" if rows else ""

    def table(self, table) -> str:
        rows = []
        for in_head, tr in _rows(table, False):
            cells = [td for td in tr.children if isinstance(td, Node) and td.tag in ("td", "th") and not self.skipped(td)]
            if cells:
                rows.append((in_head, cells))
        if not rows:
            return ""
        ncols = max(sum(int(td.attrs.get("colspan", 1) or 1) for td in cells) for _, cells in rows)
        out = []
        for in_head, cells in rows:
            row = []
            for td in cells:
                body = self.blocks(td) if any(isinstance(x, Node) and not self.is_inline(x) for x in td.children) \
                    else self.inline(td).strip()
                span = int(td.attrs.get("colspan", 1) or 1)
                cell = f"[{body}]" if td.tag == "td" else f"[#strong[{body}]]"
                row.append(f"table.cell(colspan: {span}, {cell})" if span > 1 else cell)
            row += ["[]"] * (ncols - sum(int(td.attrs.get("colspan", 1) or 1) for td in cells))
            out.append(("head", row) if in_head else ("body", row))
        heads = [r for kind, r in out if kind == "head"]
        bodies = [r for kind, r in out if kind == "body"]
        head = f"table.header({', '.join(c for r in heads for c in r)}), " if heads else ""
        cls = "numbers" if "numbers" in table.classes() else "plain"
        return (f"#datatable({string(cls)}, {ncols}, {head}{', '.join(c for r in bodies for c in r)})")


def _find(node, tag):
    for c in node.children:
        if isinstance(c, Node):
            if c.tag == tag:
                return c
            found = _find(c, tag)
            if found:
                return found
    return None


def _find_all(node, tag):
    for c in node.children:
        if isinstance(c, Node):
            if c.tag == tag:
                yield c
            if c.tag != tag or tag != "tr":
                yield from _find_all(c, tag)


def _rows(node, in_head):
    """(in a thead, tr) of a table, in order."""
    for c in node.children:
        if isinstance(c, Node):
            if c.tag == "tr":
                yield in_head, c
            elif c.tag != "table":
                yield from _rows(c, in_head or c.tag == "thead")
