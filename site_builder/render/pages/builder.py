"""PageBuilder: one page's view model from its content, and the citations it makes.

The core of the page builder: a page's sections in order, a concept's equations with the
lines they cite and its listing, and the references.json entries every part records. The
parts of a concept with a job of their own (examples, shapes, symbols, what calls what,
caches and params) and the gathering of every page (its cache, its children) are mixins
from the modules beside this one: PageBuilder is their sum, and this module the only one
that imports them, so the parts stay independent of each other and of this core.

A page is gathered into a SiteModel of its own (build_page), so the page cache can keep it
and a forked child can send it back; `merge` adds it to the site's, in navigation order.
"""
import re
from dataclasses import dataclass, field, replace

from site_builder.gather.content import concepts, section_kind
from site_builder.gather.project import load_project
from site_builder.run.example_runner import DEFAULT_TIMEOUT, ExampleStore, Request, run_example
from site_builder.base.problems import Problem
from site_builder.render.html import cite_authors, source_url, line_anchor, short_file
from site_builder.gather.resolve import resolve_snippet, resolve_function, ResolveError, asserts_nothing
from site_builder.render.symbols import render_equation
from site_builder.render.pages.caching import PageCache
from site_builder.render.pages.calls import CallSections
from site_builder.render.pages.example_sections import ExampleSections, examples_heading
from site_builder.render.pages.reads import Answers, ReadLog, RecordingIndex
from site_builder.render.pages.shape_blocks import ShapeBlocks
from site_builder.render.pages.special_sections import SpecialSections
from site_builder.render.pages.symbol_rows import SymbolRows


@dataclass
class SiteModel:
    pages: list = field(default_factory=list)          # page view models, in nav order
    references: list = field(default_factory=list)     # references.json entries
    cited: dict = field(default_factory=dict)          # (file, line) -> [(href, label)]
    cited_files: set = field(default_factory=set)      # test files a page cites
    documented: set = field(default_factory=set)       # qualnames a page cites
    examples_run: int = 0
    examples_cached: int = 0
    call_map: dict = None
    problems: list = field(default_factory=list)       # one page's, when cached on its own
    reads: dict = field(default_factory=dict)          # one page's questions to the index (reads.py)


def function_pages(content):
    """qualname -> (page slug, section id) for every concept's main function."""
    out = {}
    for page in content.pages.values():
        for c in concepts(page):
            out.setdefault(c.get("function"), (page.slug, c.get("id")))
    return out


class PageBuilder(PageCache, ExampleSections, ShapeBlocks, SymbolRows, CallSections, SpecialSections):
    """A page's view model (build_page), every page's (build, in caching.py): the parts
    of a concept come from the mixins it is made of."""

    def __init__(self, root, content, index, renderer, shapes, problems, site_info, cache=None, example_results=None,
                 step_calls=None, answers=None):
        self.root, self.content, self.index, self.r, self.cache = root, content, index, renderer, cache
        self.step_calls = step_calls        # the traced call the landing page maps (call_map.py)
        self.example_results = example_results or {}
        self.shapes, self.problems, self.site_info = shapes, problems, site_info
        self.site = SiteModel()
        self.project = load_project(root)
        self.fn_pages = function_pages(content)
        # The shape probes that raised (site_builder/run/shapes.py), and whether a page reported them.
        self.probe_failures = list(getattr(shapes, "failures", None) or ())
        self.probe_failures_reported = False
        self._reach = {}
        # the index's answers, for the pages' read logs (reads.py); the build's own if it asked already
        self.answers = answers or Answers(index, root, renderer.code_memo, site_info["uncommitted"])
        self.read_log = None                 # the page being gathered's (build_page)
        self._outside_reported = set()       # (page file, qualname) already reported as outside the index

    def resolve(self, qualname, snippet, file, line):
        try:
            r = resolve_snippet(self.index, qualname, snippet) if snippet else resolve_function(self.index, qualname)
        except ResolveError as e:
            if e.fix:                        # outside the documented code: one line per page says so
                if (file, qualname) in self._outside_reported:
                    return None
                self._outside_reported.add((file, qualname))
            self.problems.append(Problem(file, line, str(e), e.fix or ("correct the function's name" if e.no_function
                                                                       else "update the snippet or the function name")))
            return None
        self.site.documented.add(qualname)
        if r.file.startswith(self.project.tests + "/"):
            self.site.cited_files.add(r.file)
        return r

    def fn_link(self, qualname):
        """A function name linked to the page that documents it, else to its source lines."""
        short = ".".join(qualname.split(".")[-2:])
        if qualname in self.fn_pages:
            slug, sid = self.fn_pages[qualname]
            return dict(label=short, href=f"{slug}.html#{sid}")
        try:
            f = self.index.function(qualname)
        except KeyError:
            return dict(label=short, href=None)
        if f.file.startswith(self.project.tests + "/"):
            self.site.cited_files.add(f.file)
        return dict(label=short, href=source_url(f.file) + f"#{line_anchor(f.start, f.end)}")

    def github(self, file, start, end=None):
        """The line's permalink on GitHub, or None when the file differs from the commit (the
        link would show other lines). Asked through the page's read log: it is part of the page's key."""
        if self.read_log.ask(("uncommitted", file)):
            return None
        base, commit = self.site_info["repo_url"], self.site_info["commit"] or self.site_info["branch"]
        return f"{base}/blob/{commit}/{file}#{line_anchor(start, end)}"

    def md(self, obj, key, inline=False):
        return self.r.md(obj.get(key), obj.file, obj.line_of(key), inline=inline)

    def run_problem(self, file, line, what, exc):
        """The builder ran the package's code for what file:line asked for, and it raised exc: one problem
        naming the error and the package's line that raised (the build goes on)."""
        from site_builder.run.trace import raising_location
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        where = raising_location(exc) or raising_location(cause)
        at = f" at {where[0]}:{where[1]} ({where[2]})" if where else ""
        error = " ".join(f"{type(cause).__name__}: {cause}".split())
        self.problems.append(Problem(file, line, f"{what}: {error}{at}",
                                     f"fix the package's code at {where[0]}:{where[1]}" if where
                                     else "run it by hand to see why"))

    def build_page(self, slug, i, slugs):
        """One page, gathered into a SiteModel of its own (so the page cache can keep it)."""
        outer, outer_problems, outer_cited = self.site, self.problems, self.r.cited
        self.site, self.problems, self.r.cited = SiteModel(), [], set()
        # The page reads the index through its log: its key is what it was seen to read (reads.py).
        real_index, self.read_log = self.index, ReadLog(self.answers)
        self.index = self.r.index = RecordingIndex(real_index, self.read_log)
        self._reach = {}                     # no answer of the index carried over from another page
        self.r.problems = self.problems
        self.r.values, self.r.citations = [], []
        self.r.value_source = self.example_result
        try:
            page = self.content.pages[slug]
            self.page_slug = slug
            sections = []
            for s in page.meta.get("sections") or []:
                if not isinstance(s, dict):
                    continue
                kind = section_kind(s)
                if kind == "concept":
                    sections.append(self.concept(page, s))
                elif kind == "caches":
                    sections.append(self.caches(page, s))
                elif kind == "params":
                    sections.append(self.params(page, s))
                elif kind == "text":
                    sections.append(dict(kind="text", id=s["id"], title=s["title"], body=self.md(s, "body")))
            self.site.pages.append(dict(
                slug=slug, title=page.meta.get("title", slug), file=page.file,
                summary=self.r.md(page.meta.get("summary"), page.file, page.meta.line_of("summary"), inline=True),
                intro=self.r.md(page.body, page.file, page.body_line),
                sections=sections,
                prev=slugs[i - 1] if i > 0 else None, next=slugs[i + 1] if i + 1 < len(slugs) else None))
            self.check_plain_text(page.meta, page.file)
            self.prose_references(page)
            part = self.site
            part.problems = self.problems
            part.documented |= self.r.cited
            part.reads = self.read_log.reads
            return part
        finally:
            self.index = self.r.index = real_index
            self.read_log = None
            self.site, self.problems, self.r.cited = outer, outer_problems, outer_cited | self.r.cited
            self.r.problems = self.problems

    def check_plain_text(self, obj, file):
        """The number rule for the YAML text fields printed as plain text (titles, names), which
        cannot hold a computed value: a digit there is a typed number."""
        if isinstance(obj, dict):
            for key, value in obj.items():
                if key in ("title", "name") and isinstance(value, str):
                    self.r.check_numbers(value, file, obj.line_of(key))
                else:
                    self.check_plain_text(value, file)
        elif isinstance(obj, list):
            for item in obj:
                self.check_plain_text(item, file)

    def example_result(self, ref, file, line):
        """The ExampleResult of module:function (already run for this build, else run now)."""
        result, cached = self.example_results.get(ref) or run_example(
            self.root, Request(ref, file, line, DEFAULT_TIMEOUT), self.problems, ExampleStore(self.root, self.cache))
        return result

    def cite(self, role, r, concept=None, equation=None, **extra):
        """One references.json entry: a citation the page makes of the lines r."""
        self.site.references.append(dict(page=self.page_slug, concept=concept, equation=equation, role=role,
                                          function=r.function or None, file=r.file, start=r.start, end=r.end,
                                          code=r.code, **extra))

    def cite_function(self, role, qualname, concept=None, line=None, **extra):
        """Cite a function by name (whole, or its line `line`), if the index knows it."""
        try:
            f = self.index.function(qualname)
        except KeyError:
            return
        start, end = (line, line) if line else (f.start, f.end)
        code = "\n".join(self.index.files[f.file][start - 1:end])
        self.site.references.append(dict(page=self.page_slug, concept=concept, equation=None, role=role,
                                          function=qualname, file=f.file, start=start, end=end, code=code, **extra))

    def prose_references(self, page):
        """The page's prose code references and computed values, into references.json."""
        for qualname, r, file, line in self.r.citations:
            self.cite("prose", r, origin=f"{file}:{line}")
            if r.file.startswith(self.project.tests + "/"):     # the prose links to its source page
                self.site.cited_files.add(r.file)
        for v in self.r.values:
            module, _, function = v["example"].partition(":")
            self.site.references.append(dict(
                page=self.page_slug, concept=None, equation=None, role="value", function=v["example"],
                file=f"content/examples/{module}.py", start=None, end=None, code=None,
                key=v["key"], format=v["format"], value=v["text"], origin=f"{v['file']}:{v['line']}"))

    def merge(self, part):
        self.site.pages += part.pages
        self.site.references += part.references
        for where, entries in part.cited.items():
            self.site.cited.setdefault(where, []).extend(entries)
        self.site.cited_files |= part.cited_files
        self.site.documented |= part.documented
        self.site.examples_run += part.examples_run
        self.site.examples_cached += part.examples_cached
        self.problems.extend(part.problems)

    def concept(self, page, c):
        before = len(self.problems)
        section = self._concept(page, c)
        if section["main"] is None:              # its function did not resolve: the rest follows from that
            self._keep_the_cause(before)
        return section

    def _keep_the_cause(self, before):
        """The concept's first problem (its function's) in place of every later one: with no
        function, each symbol, shape and reference of the concept fails, and 27 lines proposing
        a probe hid the one that mattered (json.dumps cited as a concept)."""
        cause, follows = self.problems[before:before + 1], self.problems[before + 1:]
        if not follows:
            return
        del self.problems[before:]
        if cause:                                # (none: said once already, for another concept of the page)
            self.problems.append(replace(cause[0], message=f"{cause[0].message}; {len(follows)} more problem(s) of this "
                                                         f"section follow from it"))

    def _concept(self, page, c):
        sid, fn = c["id"], c["function"]
        main = self.resolve(fn, None, page.file, c.line_of("function"))
        if main:
            self.cite("concept", main, c["id"])
        examples = self.examples(page, c)        # before the symbols: their traces give shapes
        symbols = self.symbols(page, c, examples)  # before the equations: they mark these symbols
        eqs, rows, cited = [], [], {}
        for item in c.get("math") or []:
            if "eq" not in item:
                eqs.append(dict(kind="text", html=self.md(item, "text")))
                continue
            anchor = f"{sid}--{item['eq']}"
            refs = []
            for ref in item.get("refs") or []:
                ref_fn = str(ref.get("function", fn))       # default: the concept's own function
                r = self.resolve(ref_fn, ref["snippet"], page.file, ref.line)
                if not r:
                    continue
                if ref["role"] == "tests" and (miss := asserts_nothing(self.index, r)):
                    self.problems.append(Problem(page.file, ref.line, *miss, strict=True))
                refs.append(dict(role=ref["role"], file=r.file, start=r.start, end=r.end, code=r.code,
                                 function=ref_fn, href=source_url(r.file) + f"#{line_anchor(r.start, r.end)}",
                                 github=self.github(r.file, r.start, r.end)))
                self.cite(ref["role"], r, sid, item["eq"])
                for n in range(r.start, r.end + 1):
                    self.site.cited.setdefault((r.file, n), []).append(
                        (f"{page.slug}.html#{anchor}", f"{page.meta['title']}: {item['name']}"))
                    if main and r.file == main.file:
                        cited.setdefault(n, []).append(dict(href=f"#{anchor}", label=item["name"]))
            if not any(x["role"] in ("computes", "inline", "derived") for x in refs):
                self.problems.append(Problem(page.file, item.line, f"equation '{item['eq']}' has no 'computes', "
                                             "'inline' or 'derived' reference", "cite the line that computes it",
                                             strict=True))
            if not any(x["role"] == "tests" for x in refs):
                self.problems.append(Problem(page.file, item.line, f"equation '{item['eq']}' has no 'tests' reference",
                                             "cite a test line that checks it", warning=True))
            eqs.append(dict(kind="eq", id=item["eq"], anchor=anchor, name=item["name"], derived=bool(item.get("derived")),
                            html=render_equation(self.r, item["tex"], symbols, page.file, item.line_of("tex")), refs=refs))
            rows += [dict(eq=item["name"], anchor=anchor, **x) for x in refs]
        return dict(
            kind="concept", id=sid, title=c["title"], name=c.get("name", c["title"]), group=c.get("group", ""),
            function=fn, short=fn.split(".")[-1], main=main,
            status=self.status(fn),
            what=self.md(c, "what"), why=self.md(c, "why"), why_heading=self.why_heading(fn),
            notes=[dict(kind=k, html=self.r.md(v, page.file, n.line)) for n in self.checked_notes(page, c) for k, v in n.items()],
            math=eqs, after_math=self.md(c, "after_math"),
            symbols=symbols,
            examples=examples, examples_heading=examples_heading(examples, self.root),
            shapes=self.shape_blocks(page, c),
            listing=self.r.listing(main.file, main.start, main.end, cited) if main else [],
            listing_info=dict(file=main.file, short=short_file(main.file, self.project.package), href=source_url(main.file) + f"#{line_anchor(main.start, main.end)}",
                              github=self.github(main.file, main.start, main.end), start=main.start, end=main.end) if main else None,
            listings=self.extra_listings(page, c),
            connection=rows,
            used=self.used(fn, c["id"]),
            flow=self.flow(fn) if c.get("flow") else None,
            diagram=self.diagram(page, c) if c.get("diagram") else None,
            reaches_update=self.md(c, "update"),
            paper=self.paper(page, c),
        )

    def extra_listings(self, page, c):
        out = []
        for item in c.get("listings") or []:
            r = self.resolve(item["function"], item.get("snippet"), page.file, item.line)
            if r:
                self.cite("listing", r, c["id"])
                out.append(dict(caption=self.md(item, "caption"), file=r.file, short=short_file(r.file, self.project.package),
                                function=item["function"].split(".")[-1],
                                href=source_url(r.file) + f"#{line_anchor(r.start, r.end)}",
                                github=self.github(r.file, r.start, r.end),
                                rows=self.r.listing(r.file, r.start, r.end)))
        return out

    def paper(self, page, c):
        p = c.get("paper")
        if not p:
            return None
        papers = self.content.site.get("papers") or {}
        entry = papers.get(p["key"])
        if entry is None:
            self.problems.append(Problem(page.file, p.line_of("key"), f"unknown paper '{p['key']}'",
                                         f"add it under 'papers' in content/site.yaml; known: {', '.join(papers)}"))
            return None
        cite = cite_authors(str(entry["authors"]))
        where = ", ".join(x for x in (f"Section {p['section']}" if p.get("section") else "",
                                       f"Eq. {p['equation']}" if p.get("equation") else "",
                                       f"p. {p['page']}" if p.get("page") else "") if x)
        return dict(cite=f"{cite} {entry['year']}", title=entry["title"], url=entry.get("url"), where=where)

    def checked_notes(self, page, c):
        """The concept's notes; a `measured:` note needs a test that asserts it on its example's
        data (content/README.md, "Examples"): one that loads an example of this page's modules
        (`load_example(ROOT, "MODULE:function")`). Without one it is a problem at the note."""
        notes = c.get("notes") or []
        measured = [n for n in notes if isinstance(n, dict) and "measured" in n]
        if measured and not self.page_example_tested(page):
            tests = self.project.tests
            for n in measured:
                self.problems.append(Problem(page.file, n.line, "a measured: note, and no test of "
                                             f"{tests}/ loads an example of this page to assert it",
                                             f"assert what the note says on its example's data in {tests}/test_page_"
                                             f"{page.slug.replace('-', '_')}.py (load_example(ROOT, \"MODULE:function\")), "
                                             "or make it a general: note", strict=True))
        return notes

    def page_example_tested(self, page) -> bool:
        """Some file of the tests folder names an example module of the page (`"MODULE:`)."""
        text = (self.root / page.file).read_text(encoding="utf-8")
        modules = set(re.findall(r"run:\s*['\"]?(\w+):", text)) | set(re.findall(r"\{\{\s*(\w+):", text))
        prefix = self.project.tests + "/"
        return any(self.index.files_quoting(prefix, f"{m}:") for m in sorted(modules))

    def why_heading(self, fn):
        """The site's `why` label ("Why does the model need it?") for a function the package
        calls; for one only its tests call, the builder's own words, which claim no use."""
        from site_builder.gather.content import LABELS
        try:
            callers = [q for q, _ in self.index.called_by(fn) if self.index.function(q).kind != "test"]
        except KeyError:
            callers = []
        return None if callers else LABELS["why"]

    def status(self, fn):
        try:
            self.index.function(fn)
        except KeyError:
            return "Missing"
        return "Implemented, tested" if self.index.tested_by(fn) else "Implemented, no test reaches it"

    def local_names(self, qualname):
        try:
            return self.index.local_names(qualname)
        except KeyError:
            return []
