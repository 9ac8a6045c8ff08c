"""The companion PDF: the whole site as one typeset document, and each page's pointers into it.

What: every page of `nav`, in order, as a numbered section (its concepts numbered under it),
with its prose, numbered display equations, tables, listings and figures, after a title page
and a table of contents, and before the bibliography of the papers in site.yaml. Headings are
the PDF's outline (bookmarks); every section and equation is a named destination, `slug:id`.

Why Typst (the `typst` wheel from PyPI, a self-contained compiler: ~30 MB, no TeX
installation, a few seconds for the whole site) and not LaTeX or Chromium's print: Debian's
TeX Live is hundreds of MB outside pip, which the README's one install command could not
bring; Chromium's print draws the site's MathML well but its outline and named destinations
need DevTools calls and a PDF reader to find where anything landed. Typst reports where
every label landed itself (`query`), so the page numbers on the HTML are the typesetter's
own record, never an estimate. Its cost: Typst's math is not TeX, so each formula is
converted from the page's TeX by tex2typst (site_builder/publish/pdfmath.py).

Numbering shared with the pages: the document numbers sections and equations, and the build
writes those numbers into the HTML (`fill_numbers`): templates leave `<!--pdf-...:id-->`
placeholders (the section number in each concept's heading, the equation number in each
equation's caption, the "PDF: Section 4.5, Eq. 51, p. 11" line at each concept's end), filled
from Typst's record. A page's cached HTML holds the placeholders, so the cache stays keyed on
the page alone, and the numbers follow any other page's edit.

Typeset in parts, joined: the front matter (title page, contents), each page, and the
references are typeset as separate documents, each cached on its Typst source and started from
the section and equation counts of the parts before it (`part_source`); pikepdf joins them,
draws every page's number over it (`page_numbers`), copies every part's named destinations and
bookmarks, and makes a link into another part a link to its named destination
(pdfmarkup.OTHER_PAGE). Why: one document was typeset whole on every change that touched any
page (8.1 s of a 13.4 s `check` after a one-line edit of a model function three pages list);
now an edit typesets its own page again and no other (a page that grows moves the later pages'
numbers, which are drawn at the join), and the parts are typeset two at a time. The contents,
which states every part's pages, is typeset last, after a first typesetting with its page
numbers 0 has given its length. The cost: each part carries its own subsets of the fonts
(object streams keep the file smaller than the one document was: 3.2 MB against 3.9).

Deterministic bytes: the document's date is none (Typst then writes no date and derives the
file's ID from its content; the join's ID is derived from its content too), and only the fonts
bundled in the Typst wheel are used, never the machine's (New Computer Modern, the OpenType
Computer Modern that Latin Modern also descends from, and its math companion).
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from site_builder.base.cache import digest
from site_builder.publish.pdfmarkup import OTHER_PAGE, PageMarkup, escape, string, svg_stylesheet

# The page, in every part and in the page numbers (NUMBERS), which are drawn over the joined pages.
PAGE = '#set page(paper: "a4", margin: (x: 2.1cm, top: 2.2cm, bottom: 2.4cm))\n#set text(font: "New Computer Modern", size: 10pt, lang: "en")'

# Every page's number but the title page's, one page each, as the parts' pages will be numbered.
NUMBERS = PAGE + r"""
#set page(footer: context if counter(page).get().first() > 1 { align(center, text(size: 9pt, counter(page).display())) })
"""

PREAMBLE = r"""
#set document(title: TITLE, date: none)
""" + PAGE + r"""
#set par(justify: true, leading: 0.58em)
#set heading(numbering: (..n) => if n.pos().len() <= 2 { numbering("1.1", ..n) })
#show heading.where(level: 1): it => { pagebreak(weak: true); v(0.5em); text(size: 17pt, it); v(0.6em) }
#show heading.where(level: 2): it => { v(0.8em); text(size: 13pt, it); v(0.3em) }
#show raw: set text(font: "DejaVu Sans Mono", size: 0.86em)
#show link: it => if type(it.dest) == str and not it.dest.starts-with("pdf-dest:") { underline(stroke: 0.3pt, it) } else { text(fill: rgb("#1a4a8a"), it) }
#set math.equation(numbering: "(1)")
#show math.equation: set text(font: "New Computer Modern Math")
#let anchor(name) = place(hide[#heading(level: 6, numbering: none, outlined: false, bookmarked: false)[]#label(name)])
#let page-section(name, title) = [#heading(level: 1, title)#label(name)]
#let section(name, title) = [#heading(level: 2, title)#label(name)]
#let subhead(body) = block(above: 1.1em, below: 0.55em, sticky: true, text(weight: "bold", size: 10.5pt, body))
#let caption(body) = block(above: 0.7em, below: 0.35em, sticky: true, text(size: 8.5pt, fill: luma(60), body))
#let badge(body) = box(inset: (x: 2pt), outset: (y: 1.5pt), radius: 2pt, stroke: 0.4pt + luma(150), text(size: 7pt, body))
#let note(body) = block(width: 100%, inset: (left: 8pt, y: 4pt), stroke: (left: 1.2pt + luma(150)), text(size: 9pt, body))
#let eqrefs(body) = block(above: 0.2em, text(size: 7.5pt, fill: luma(70), body))
#let equation(name, title, body) = block(breakable: false, width: 100%, above: 0.9em, below: 0.9em)[
  #anchor(name)#text(size: 8.5pt, weight: "bold", fill: luma(60), title)
  #body
]
#let toc(level, dest, number, title, page) = block(above: 0.65em, below: 0pt,
  link(dest, text(fill: black)[#h((level - 1) * 1em)#number #title #box(width: 1fr, repeat(gap: 0.15em)[.]) #page]))
#let svgfig(src, w) = align(center, block(image(bytes(src), format: "svg", width: w)))
#let datatable(kind, n, ..cells) = block(width: 100%, {
  set text(size: if kind == "numbers" { 7.5pt } else { 8.5pt })
  set par(justify: false)
  table(columns: n, stroke: 0.4pt + luma(185), inset: (x: 4pt, y: 3pt), ..cells)
})
#let listing(file, rows) = block(width: 100%, fill: luma(248), inset: 5pt, radius: 2pt, {
  set text(size: 7.4pt)
  set par(justify: false)
  grid(columns: (auto, 1fr, auto), column-gutter: 7pt, row-gutter: 3pt,
    ..rows.map(((n, cited, code, cites)) => (
      text(fill: luma(120), n),
      if cited { highlight(fill: rgb("#fff1b8"), raw(code, lang: "python")) } else { raw(code, lang: "python") },
      if cited { block(width: 10em, text(size: 6.6pt, fill: luma(60))[#file.split("/").last():#n #cites]) } else [],
    )).flatten())
})
"""

# Where every labelled heading of a part landed (a page's, a section's, an equation's anchor): its
# page in the part, its section number, the number of the equation after it; and the part's pages
# and last equation number: one query at the end of the part, which costs one more layout pass
# (a record beside each label cost one pass per record: 3 times as long).
RECORDS = r"""
#context {
  let out = ()
  for h in query(heading) {
    if h.has("label") {
      let loc = h.location()
      let n = counter(heading).at(loc)
      out.push((name: str(h.label), kind: if h.level == 1 { "page" } else if h.level == 2 { "sec" } else { "eq" },
                page: loc.page(), section: n.slice(0, calc.min(2, n.len())).map(str).join("."),
                equation: str(counter(math.equation).at(loc).first() + 1)))
    }
  }
  [#metadata((records: out, last_page: counter(page).final().first(),
              equations: counter(math.equation).final().first()))<pdf-records>]
}
"""

REFERENCES = "references:"     # the references' label: no page's (a page's labels are slug or slug:id)

# Where the templates leave what only the PDF knows (templates/partials/concept.html).
PLACEHOLDER = re.compile(r"<!--pdf-(number|eq|line):([^>]*?)-->")


class TypesetError(Exception):
    """Typst rejected the document: `message`, and `line` of the generated source it points at."""

    def __init__(self, message, line):
        super().__init__(message)
        self.message, self.line = message, line


@dataclass
class Companion:
    """The built PDF, its file name, and {label: record} (kind, number, page) from Typst."""
    name: str
    pdf: bytes | None
    records: dict = field(default_factory=dict)
    order: list = field(default_factory=list)      # labels in document order
    problems: list = field(default_factory=list)   # (content file, line, message, fix)


def file_name(title: str) -> str:
    """The PDF's name: the site's title as a slug ("My project, by hand" -> my-project-by-hand.pdf)."""
    return (re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "site") + ".pdf"


def bibliography(papers: dict) -> str:
    """The references section: the papers of site.yaml in the order it gives them."""
    items = []
    for key, p in papers.items():
        bits = [escape(p.get("authors", "")), f"#emph[{escape(p.get('title', key))}]",
                escape(", ".join(str(x) for x in (p.get("venue"), p.get("year")) if x))]
        url = p.get("url")
        items.append(". ".join(b for b in bits if b) + "." + (f" #link({string(url)})[{escape(url)}]" if url else ""))
    if not items:
        return ""
    return (f"#heading(level: 1, numbering: none)[References]#label({string(REFERENCES)})\n\n"
            + "#enum(numbering: \"[1]\", " + ", ".join(f"[{i}]" for i in items) + ")")


def page_markup(slug, labels, style, html, cache=None) -> tuple[str, list, list]:
    """(a page's Typst markup, its math problems, its sections [(label, title markup)]), from the
    cache when the page's HTML, the site's labels and the figures' stylesheet are unchanged:
    converting every page took about 1.5 s of a rebuild that changed one of them."""
    from site_builder.publish.pdfmath import VERSION_KEY
    from site_builder.publish import pdfmarkup
    converter = [Path(m.__file__).read_bytes() for m in (pdfmarkup, sys.modules[__name__])]
    key = digest("pdf page", slug, sorted(labels), style, html, VERSION_KEY(), converter)

    def convert():
        markup = PageMarkup(slug, labels, style)
        return markup.convert(html), list(markup.math_problems), list(markup.sections)
    return cache.remembered("pdf", key, convert) if cache else convert()


@dataclass
class Part:
    """One separately typeset piece of the document: the front matter, a page, the references."""
    file: str                   # the content file its problems are reported at
    body: str                   # Typst markup, without the preamble and the counters it starts from
    entries: list = field(default_factory=list)     # (level, label, title markup) for the contents


@dataclass
class Typeset:
    """A part as Typst set it: its PDF, where its labels landed, and the counters it ends on."""
    pdf: bytes
    records: list
    last_page: int
    equations: int


def parts(pages, meta: dict, cache=None) -> tuple[list, list]:
    """([Part] of the pages [(slug, title, content file, html)] in nav order and the references,
    [(content file, tex, message)] for TeX tex2typst could not read). meta: title, description,
    built_from, papers, css (the site's stylesheet, for the figures)."""
    labels = set()
    for slug, _, _, html in pages:
        labels.add(slug)
        labels.update(f"{slug}:{m[1]}" for m in re.finditer(r'<(?:section|figure)\b[^>]*?\bid="([^"]+)"', html))
    style = svg_stylesheet(meta.get("css", ""))
    out, math_problems = [], []
    for slug, title, file, html in pages:
        body, problems, sections = page_markup(slug, labels, style, html, cache)
        out.append(Part(file, f"#page-section({string(slug)}, [{escape(title)}])\n\n{body}",
                        [(1, slug, escape(title))] + [(2, label, t) for label, t in sections]))
        math_problems += [(file, tex, message) for tex, message in problems]
    references = bibliography(meta.get("papers") or {})
    if references:
        out.append(Part("content/site.yaml", references, [(1, REFERENCES, "References")]))
    return out, math_problems


def part_source(title: str, body: str, sections: int, equations: int) -> str:
    """The Typst source of one part: the preamble, the section and equation counters the parts
    before it end on (so they are numbered as in one document), its body, its record. Its
    pages are numbered when the parts are joined (NUMBERS), so a part that grows by a page
    changes no other part's source."""
    return "\n".join([PREAMBLE.replace("TITLE", string(title)), f"#counter(heading).update({sections})",
                      f"#counter(math.equation).update({equations})", body, RECORDS]) + "\n"


def front_matter(meta, entries) -> str:
    """The title page and the contents: entries [(level, label, number, title markup, page)],
    each linked to its label (pdf-dest:, joined later: the label is in another part)."""
    lines = [f"#toc({level}, {string(OTHER_PAGE + label)}, [{number}], [{title}], [{page}])"
             for level, label, number, title, page in entries]
    return (f"#align(center + horizon)[#text(size: 26pt, weight: \"bold\")[{escape(meta['title'])}]\n\n"
            f"#v(1em)#text(size: 12pt)[{escape(meta.get('description', ''))}]\n\n"
            f"#v(2em)#text(size: 9pt, fill: luma(80))[{escape(meta.get('built_from', ''))}. Every number, "
            f"line reference and shape in it was computed by the build that wrote it.]]\n"
            f"#pagebreak()\n#heading(level: 1, numbering: none, outlined: false, bookmarked: false)[Contents]\n"
            + "\n".join(lines) + "\n")


def typeset(source: str) -> Typeset:
    """One part typeset, with only the wheel's fonts."""
    pdf, value = _compiled(source, "<pdf-records>")
    return Typeset(pdf, value["records"], value["last_page"], value["equations"])


def _compiled(source: str, query=None) -> tuple:
    """(PDF bytes, the value of the metadata `query` selects, if one is given) of a Typst
    source, with only the wheel's fonts; TypesetError if Typst rejects it."""
    import tempfile
    import typst
    # a file, not bytes: the wheel's query cannot find a source given as bytes
    with tempfile.TemporaryDirectory(prefix="site-pdf-") as folder:
        main = Path(folder) / "main.typ"
        main.write_text(source, encoding="utf-8")
        compiler = typst.Compiler(str(main), root=folder, ignore_system_fonts=True)
        try:
            # untagged: tags made the file 4 times the size (11 MB against 2.9 MB)
            pdf = compiler.compile(format="pdf", timestamp=0, pdf_tags=False)
        except typst.TypstError as e:
            raise TypesetError(e.message, _error_line(e, source)) from None
        value = json.loads(compiler.query(query, field="value"))[0] if query else None      # laid out already
    return pdf, value


def _error_line(e, source: str):
    """The line of the generated source a Typst diagnostic names, if it names one."""
    text = " ".join(str(x) for x in (getattr(e, "diagnostic", ""), getattr(e, "trace", ""), e))
    m = re.search(r"main\.typ:(\d+):\d+", text)
    return int(m[1]) if m else None


def compiler_version() -> str:
    import typst
    return getattr(typst, "__version__", "?")


class PartError(Exception):
    """A part Typst rejected: the part, its source, and Typst's error."""

    def __init__(self, part, source, error):
        super().__init__(error.message)
        self.part, self.source, self.error = part, source, error


NUMBERED_EQUATION = '#math.equation(block: true, numbering: "(1)"'     # pdfmarkup's, for each numbered one


def typeset_parts(title, body_parts, meta, cache) -> tuple[list, list, list]:
    """([Typeset] of the front matter then each part, the keys they are cached under, every
    part's records in document order with its pages counted from the PDF's first). The parts
    are independent: each starts from the section and equation counts of the parts before it
    (known from their markup) and none from their pages, so an edit typesets its own part
    again and no other, and the parts are typeset side by side (Typst lets go of the GIL: two
    threads take about two thirds of one's time on 2 cores). The contents, which states every
    part's pages, is typeset last, after a first typesetting with its page numbers 0 has given
    its length (digits do not change its lines)."""
    from concurrent.futures import ThreadPoolExecutor
    from site_builder.publish.pdfmath import VERSION_KEY
    version = (compiler_version(), VERSION_KEY())

    def typeset_cached(part, source):
        key = digest("pdf part", source, version)

        def run():
            try:
                return typeset(source)
            except TypesetError as e:
                raise PartError(part, source, e) from None
        return (cache.remembered("pdf", key, run) if cache else run()), key

    def contents(records, with_pages=True):      # records: [record], pages counted from the PDF's first
        placed = {r["name"]: r for r in records}
        entries = [(level, label, "" if label == REFERENCES else placed[label]["section"], text,
                    placed[label]["page"] if with_pages else 0)
                   for part in body_parts for level, label, text in part.entries]
        front = Part("content/site.yaml", front_matter(meta, entries))
        return typeset_cached(front, part_source(title, front.body, 0, 0))

    jobs, equations = [], 0     # (part, its source, the equations before it, its own)
    for n, part in enumerate(body_parts):
        own = part.body.count(NUMBERED_EQUATION)
        jobs.append((part, part_source(title, part.body, n, equations), equations, own))
        equations += own
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda job: typeset_cached(job[0], job[1]), jobs))
    for (part, _, before, own), (result, _) in zip(jobs, done):
        if result.equations != before + own:       # a numbered equation pdfmarkup did not write
            raise RuntimeError(f"{part.file}: its part of the PDF numbers {result.equations - before} equations, "
                               f"its markup {own}")
    parts_typeset, keys = [t for t, _ in done], [k for _, k in done]
    front_pages = contents(placed_records(parts_typeset, 0), with_pages=False)[0].last_page
    for _ in range(3):      # a contents that grows a page when its numbers are filled: once more
        records = placed_records(parts_typeset, front_pages)
        front, front_key = contents(records)
        if front.last_page == front_pages:
            return [front] + parts_typeset, [front_key] + keys, records
        front_pages = front.last_page
    raise RuntimeError("the companion PDF's contents changed length on every try")


def placed_records(parts_typeset, before: int) -> list:
    """The parts' records in document order, each page counted from the PDF's first page, when
    `before` pages come before the first part."""
    out = []
    for t in parts_typeset:
        out += [dict(r, page=before + r["page"]) for r in t.records]
        before += t.last_page
    return out


def companion(pages, meta: dict, cache=None) -> Companion:
    """Build the companion PDF of `pages` ([(slug, title, content file, html)] in nav order):
    each part (site_builder/publish/pdf.py Part) typeset on its own, or taken from the cache
    when its Typst source is unchanged, and the parts joined into one file."""
    name = file_name(meta["title"])
    body_parts, math_problems = parts(pages, meta, cache)
    if math_problems:
        return Companion(name, None, problems=[(file, _tex_line(meta.get("root"), file, tex),
                                                f"the PDF cannot typeset the TeX {tex!r}: {msg}",
                                                "write it in TeX that KaTeX and tex2typst both read")
                                               for file, tex, msg in math_problems])
    try:
        typeset_all, keys, records = typeset_parts(meta["title"], body_parts, meta, cache)
    except PartError as e:
        file = e.part.file
        line, tex = _content_line(meta.get("root"), file, e.source, e.error.line)
        what = f" (in the TeX {tex!r})" if tex else ""
        return Companion(name, None, problems=[(file, line, f"the PDF cannot be typeset: {e.error.message}{what}",
                                                "write it so that Typst reads it (site_builder/publish/pdf.py "
                                                "and pdfmath.py say what the page goes through)")])
    joined = digest("pdf joined", keys, meta["title"], Path(__file__).read_bytes(), compiler_version())

    def join():
        return join_parts([t.pdf for t in typeset_all], meta["title"])
    pdf = cache.remembered("pdf", joined, join) if cache else join()
    return Companion(name, pdf, {r["name"]: r for r in records}, [r["name"] for r in records])


def join_parts(pdfs: list, title: str) -> bytes:
    """The parts' PDFs as one file (pikepdf, qpdf's Python binding: it joins the 370 pages in
    about a second where pypdf took five): their pages in order, each with its number drawn
    over it (page_numbers), every part's named destinations and outline (bookmarks) pointing at
    the joined pages, each pdf-dest: link made a link to its named destination, and the first
    part's language and metadata."""
    import io
    import warnings
    import pikepdf
    out = pikepdf.Pdf.new()
    dests, outline = {}, []
    for n, data in enumerate(pdfs):
        src = pikepdf.Pdf.open(io.BytesIO(data))
        base = len(out.pages)
        with warnings.catch_warnings():     # that it carries no named destination: they are copied below, all
            warnings.simplefilter("ignore", pikepdf.PageCopyWarning)
            out.pages.extend(src.pages)
        joined = {page.obj.objgen: out.pages[base + i].obj for i, page in enumerate(src.pages)}

        def moved(dest):            # [page, /XYZ, left, top, zoom], or a dictionary holding it as /D
            dest = dest.get("/D") if isinstance(dest, pikepdf.Dictionary) else dest
            return pikepdf.Array([joined[dest[0].objgen], *dest[1:]])
        names = src.Root.get("/Names", {}).get("/Dests")
        if names is not None:
            for key, dest in pikepdf.NameTree(names).items():
                dests[str(key)] = moved(dest)
        with src.open_outline() as tree:
            outline += [_moved_item(item, moved) for item in tree.root]
        if n == 0:
            if "/Lang" in src.Root:
                out.Root.Lang = pikepdf.String(str(src.Root.Lang))
            if "/ViewerPreferences" in src.Root:      # direct objects: copied by value
                out.Root.ViewerPreferences = pikepdf.Dictionary(dict(src.Root.ViewerPreferences.items()))
            out.docinfo["/Creator"] = pikepdf.String(str(src.docinfo.get("/Creator", "Typst")))
    numbers = pikepdf.Pdf.open(io.BytesIO(page_numbers(len(out.pages))))
    for page, number in zip(out.pages, numbers.pages):
        # what page.add_overlay does, under a fixed name (it draws a random one: other bytes each time)
        page.add_resource(out.copy_foreign(number.as_form_xobject()), pikepdf.Name.XObject,
                          name=pikepdf.Name("/PageNumber"), replace_existing=False)
        page.contents_add(pikepdf.Stream(out, b"q\n"), prepend=True)
        page.contents_add(pikepdf.Stream(out, b"\nQ q /PageNumber Do Q\n"))
        for annot in page.obj.get("/Annots", []):
            uri = annot.get("/A", {}).get("/URI")
            if uri is not None and str(uri).startswith(OTHER_PAGE):
                del annot["/A"]
                annot.Dest = pikepdf.String(str(uri)[len(OTHER_PAGE):])
    tree = pikepdf.NameTree.new(out)
    for key in sorted(dests):
        tree[key] = dests[key]
    out.Root.Names = pikepdf.Dictionary(Dests=tree.obj)
    with out.open_outline() as tree:
        tree.root.extend(outline)
    out.docinfo["/Title"] = pikepdf.String(title)
    buffer = io.BytesIO()
    # object streams: 3.2 MB where the parts' objects as they were came to 5.0 (one document was 3.9)
    out.save(buffer, deterministic_id=True, object_stream_mode=pikepdf.ObjectStreamMode.generate)
    return buffer.getvalue()


def page_numbers(count: int) -> bytes:
    """A PDF of `count` pages holding only their numbers, in the parts' page (NUMBERS)."""
    return _compiled(NUMBERS + "#pagebreak()\n" * (count - 1))[0]


def _moved_item(item, moved):
    """An outline item of a part, and its children, pointing at the joined pages."""
    import pikepdf
    copy = pikepdf.OutlineItem(item.title)
    if isinstance(item.destination, pikepdf.Array):
        copy.destination = moved(item.destination)
    copy.children = [_moved_item(child, moved) for child in item.children]
    return copy


def _content_line(root, file, source, line) -> tuple:
    """(line of `file`, TeX) of the formula on the generated source's `line`, found by its TeX
    in the content file; (0, None) when the line holds no formula or the TeX is not found."""
    from site_builder.publish.pdfmath import MEMO
    text = source.splitlines()[line - 1] if line and line <= source.count("\n") + 1 else ""
    tex = next((t for t, typst in MEMO.items() if typst and f"$ {typst} $" in text or f"${typst}$" in text), None)
    return (_tex_line(root, file, tex) if tex is not None else 0), tex


def _tex_line(root, file, tex) -> int:
    """The line of content file `file` where `tex` is written (0 if not found)."""
    if root is None:
        return 0
    try:
        lines = (Path(root) / file).read_text(encoding="utf-8").splitlines()
    except OSError:
        return 0
    # as the page has it, and without the symbol marks {{...}} the build may have put in
    for probe in dict.fromkeys((" ".join(tex.split())[:40], " ".join(tex.replace("{{", "").replace("}}", "").split())[:40])):
        for n, content_line in enumerate(lines, 1):
            if probe and probe in " ".join(content_line.split()):
                return n
    return 0


def fill_numbers(html: str, slug: str, result: Companion) -> str:
    """A page's HTML with its placeholders replaced: section and equation numbers, and each
    concept's PDF line (nothing where the PDF could not be built)."""
    def replace(m):
        kind, ident = m[1], m[2]
        rec = result.records.get(f"{slug}:{ident}")
        if rec is None or result.pdf is None:
            return ""
        if kind == "number":
            return f'<span class="sec-number">{rec["section"]}</span> '
        if kind == "eq":
            return f' <span class="eq-number">({rec["equation"]})</span>'
        return pdf_line(slug, ident, result)
    return PLACEHOLDER.sub(replace, html)


def pdf_line(slug: str, ident: str, result: Companion) -> str:
    """'PDF: Section 4.5, Eq. 51, p. 11', linked to the named destination of the section's
    first equation (of the section itself when it has none), all from Typst's record."""
    name = f"{slug}:{ident}"
    sec = result.records[name]
    first = first_equation(name, result)
    target = result.records[first] if first else sec
    words = f"Section {sec['section']}" + (f", Eq. {target['equation']}" if first else "") + f", p. {target['page']}"
    return (f'<p class="pdf-ref">PDF: <a href="{result.name}#nameddest={first or name}" '
            f'data-pdf-page="{target["page"]}">{words}</a></p>')


def first_equation(section: str, result: Companion):
    """The label of the first equation after `section` in the document and before the next section."""
    at = result.order.index(section)
    for name in result.order[at + 1:]:
        kind = result.records[name]["kind"]
        if kind == "eq":
            return name
        if kind in ("sec", "page"):
            return None
    return None
