"""Turn loaded content plus the source index into view models: plain dicts the templates print.

This is where the one rule of the site is kept: every line number comes from the resolver,
every shape from a probe run, every called-by list from the index, every number from an
example that ran. Content supplies prose, TeX and references only. Each concept is gathered
completely (and its problems recorded with the content file and line) before anything is
rendered, so one build reports every problem at once.
"""
import html
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from site_builder.gather.content import concepts, section_kind
from site_builder.gather.project import load_project
from site_builder.run.example_runner import DEFAULT_TIMEOUT, ExampleStore, Request, run_example
from site_builder.base.problems import Problem
from site_builder.render.html import ROLE_LABELS, cite_authors, source_url, line_anchor, short_file
from site_builder.gather.resolve import resolve_snippet, resolve_function, ResolveError, asserts_nothing
from site_builder.render.symbols import render_equation, code_links


def examples_heading(examples) -> str:
    """The heading over a concept's examples, from what they read: a tiny example is one that
    read no training run (site_builder/run/training_run.py records which ones each example read)."""
    from site_builder.run.training_run import RUN_NAMES
    runs = sorted({r for ex in examples for r in ex["runs"]})
    if not runs:
        return "Tiny numerical example"
    trained = " and ".join(RUN_NAMES.get(r, f"the {r} run") for r in runs)
    if all(ex["runs"] for ex in examples):
        return f"Computed with {trained}"
    return f"Numerical examples: a tiny model, and {trained}"


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


def tex_tokens(tex):
    """TeX as tokens (commands, single characters), so 'X' does not match inside 'X_n'... by position."""
    return re.findall(r"\\[A-Za-z]+|\\.|[^\s]", tex)


def contains(haystack, needle):
    n = len(needle)
    return n > 0 and any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def split_top_level(tex):
    """'W_1, b_1' -> ['W_1', 'b_1']; commas inside braces stay."""
    parts, depth, cur = [], 0, ""
    for ch in tex:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [x.strip() for x in parts + [cur] if x.strip()]


def tex_name(tex):
    """The name a TeX symbol would have in code: `Z` -> Z, `X_n` / `X_{n}` -> Xn,
    `\\mathrm{Ff}` -> Ff, `\\hat{x}` -> xhat, `\\mu` -> mu."""
    t = re.sub(r"\\(hat|bar|tilde)\s*\{([^{}]*)\}", lambda m: m.group(2) + m.group(1), tex)
    t = re.sub(r"\\(mathrm|operatorname|mathbf|mathit|text|boldsymbol)\s*\{([^{}]*)\}", r"\2", t)
    t = re.sub(r"\\([A-Za-z]+)", r"\1", t)
    return re.sub(r"[\s{}_^']", "", t)


# What a symbol row's ✓ says when pointed at (templates/partials/concept.html)
PROBE_CHECKED = "checked against a probe run of the code"
EXAMPLE_CHECKED = "checked against this section's example run"


def spoken_list(items):
    """[12] -> '12'; [12, 19] -> '12 and 19'; [1, 2, 3] -> '1, 2 and 3'."""
    items = [str(x) for x in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def names_apart(config, ref):
    """What a shapes block sized at `ref`'s config says when that config flips a switch of the
    default's: its names are the probe's, found at the default, and may not be the example's."""
    from site_builder.run.shapes import switches_apart
    apart = switches_apart(config)
    if not apart:
        return ""
    default = spoken_list(f"{name} = {was}" for name, was, _ in apart)
    runs = spoken_list(f"{name} = {now}" for name, _, now in apart)
    return (f"Names as at the default config, where the shape probe runs ({default}); "
            f"{ref} runs {runs}, so an array of its own may have another name.")


def call_ratio(calls, caller_calls):
    """How many times a function was called per call of its caller, as the map prints it:
    None for once, '×2', or '3 times in 2 calls' when the calls do not divide evenly."""
    if calls == caller_calls:
        return None
    return f"×{calls // caller_calls}" if calls % caller_calls == 0 else f"{calls} times in {caller_calls} calls"


def function_pages(content):
    """qualname -> (page slug, section id) for every concept's main function."""
    out = {}
    for page in content.pages.values():
        for c in concepts(page):
            out.setdefault(c.get("function"), (page.slug, c.get("id")))
    return out


def prepare_blocks(blocks, index, renderer):
    """An example's blocks as the template draws them: source links, and a stepper's listing.
    Also what `serve` does to a result computed on the reader's input (site_builder/serve/play.py)."""
    for block in blocks:
        if block.get("file"):
            block["href"] = source_url(block["file"])
        if block.get("kind") == "stepper":       # the stepper shows the traced function's lines
            try:
                f = index.function(block["function"])
                block["listing"] = renderer.listing(f.file, f.start, f.end)
            except KeyError:
                block["listing"] = []
    return blocks


def share_out(items, cost, n):
    """items in n shares of about equal cost (longest first, each to the lightest share),
    each share in the items' order; the same items always give the same shares."""
    shares, totals = [[] for _ in range(n)], [0] * n
    for item in sorted(items, key=lambda x: (-cost(x), items.index(x))):
        lightest = totals.index(min(totals))
        shares[lightest].append(item)
        totals[lightest] += cost(item)
    return [sorted(share, key=items.index) for share in shares if share]


class PageBuilder:
    def __init__(self, root, content, index, renderer, shapes, problems, site_info, cache=None, example_results=None,
                 step_calls=None):
        self.root, self.content, self.index, self.r, self.cache = root, content, index, renderer, cache
        self.step_calls = step_calls        # the traced training step the landing page maps (call_map.py)
        self.example_results = example_results or {}
        self.shapes, self.problems, self.site_info = shapes, problems, site_info
        self.site = SiteModel()
        self.project = load_project(root)
        self.fn_pages = function_pages(content)
        # The shape probes that raised (site_builder/run/shapes.py), and whether a page reported them.
        self.probe_failures = list(getattr(shapes, "failures", None) or ())
        self.probe_failures_reported = False
        self._reach = {}
        self._outside_reported = set()       # (page file, qualname) already reported as outside the index

    # -- helpers --------------------------------------------------------------------------
    def short_file(self, file):
        """A file as a page names it: without the documented package's folder."""
        return short_file(file, self.project.package)

    def resolve(self, qualname, snippet, file, line):
        try:
            r = resolve_snippet(self.index, qualname, snippet) if snippet else resolve_function(self.index, qualname)
        except ResolveError as e:
            if e.fix:                        # outside the documented code: one line per page says so
                if (file, qualname) in self._outside_reported:
                    return None
                self._outside_reported.add((file, qualname))
            self.problems.append(Problem(file, line, str(e), e.fix or "update the snippet or the function name"))
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
        link would show other lines)."""
        if file in self.site_info["uncommitted"]:
            return None
        base, commit = self.site_info["repo_url"], self.site_info["commit"] or self.site_info["branch"]
        return f"{base}/blob/{commit}/{file}#{line_anchor(start, end)}"

    def md(self, obj, key, inline=False):
        return self.r.md(obj.get(key), obj.file, obj.line_of(key), inline=inline)

    # -- pages ----------------------------------------------------------------------------
    def build(self, page_keys=None, jobs=1, memos=()):
        """Every page's view model, in navigation order. With page_keys ({slug: key}) and a
        cache, a page whose key is cached is not gathered again: its view model and everything
        it adds to the site (references, cited lines, problems) come back from the cache.

        jobs > 1: the pages to gather are shared out, one share gathered here and the others
        in forked children (site_builder/base/parallel.py), which send back their parts and what
        they added to `memos` (dicts or sets: the KaTeX and highlighting memos); the parts
        are merged in navigation order, as if gathered here one by one."""
        slugs = list(self.content.pages)
        cached = {}
        for slug in slugs:
            key = (page_keys or {}).get(slug)
            cached[slug] = self.cache.get("pages", key) if key and self.cache else None
        built = self.build_shared([s for s in slugs if cached[s] is None], slugs, jobs, memos)
        for i, slug in enumerate(slugs):
            key = (page_keys or {}).get(slug)
            part = cached[slug]
            if part is None:
                part = built[slug] if slug in built else self.build_page(slug, i, slugs)
                part.pages[0]["key"] = key
                if key and self.cache and not any(not p.warning and not p.strict for p in part.problems):
                    self.cache.put("pages", key, part)
            else:
                part.pages[0]["from_cache"] = True
            self.merge(part)
        if self.probe_failures and not self.probe_failures_reported:
            # No page needed the failed probe's shapes; the model is broken all the same.
            for f in self.probe_failures:
                self.problems.append(Problem(f.file or "site_builder/run/shapes.py", f.line or 1, f.describe(),
                                             "fix the model code that raised; the build runs it to find the shapes"))
        self.site.call_map = self.call_map()
        return self.site

    def build_shared(self, stale, slugs, jobs, memos):
        """{slug: part} of the pages of `stale` that other processes gathered (the rest are
        gathered by build, here, in order). Only where nothing is reported once per build
        (a failed shape probe): with several processes each would report it."""
        if jobs < 2 or len(stale) < 2 or self.probe_failures or getattr(self.shapes, "declared_errors", None):
            return {}
        from site_builder.base import parallel
        shares = share_out(stale, lambda slug: len(self.content.pages[slug].text or ""), jobs)
        snapshot = parallel.memo_snapshot(memos)

        def gather_share(share):
            parts = {slug: self.build_page(slug, slugs.index(slug), slugs) for slug in share}
            return parts, parallel.memo_additions(memos, snapshot), self.r.cited
        built = {}
        with parallel.start({f"pages:{','.join(share)}": (lambda share=share: gather_share(share))
                             for share in shares[1:]}) as children:
            for slug in shares[0]:       # this process's share, in order, as the serial build
                built[slug] = self.build_page(slug, slugs.index(slug), slugs)
            for outcome in children.wait():
                if outcome.status == "ok":       # else build gathers that share here
                    parts, additions, cited = outcome.value
                    built.update(parts)
                    parallel.merge_memos(memos, additions)
                    self.r.cited |= cited
        return built

    def failed_probe(self, fn):
        """The first shape probe that raised and whose entry point reaches fn (by the index's
        call graph), or None. Its shapes are missing, and another probe's shapes of a function
        they share (relu_forward at the encoder-decoder's sizes) must not stand in for them."""
        from site_builder.run.shapes import PROBES
        order = list(PROBES)
        infos = self.shapes.get(fn) or {}
        supplied = next(iter(infos.values())).probe if infos else None
        for f in self.probe_failures:
            if supplied in order and f.probe in order and order.index(supplied) < order.index(f.probe):
                continue        # an earlier probe, which ran, supplied fn's shapes
            if f.entry not in self.index.functions:
                return f                # the entry point itself is gone: nothing it reached has shapes
            if f.entry not in self._reach:
                self._reach[f.entry] = self.reachable(f.entry)
            if fn in self._reach[f.entry]:
                return f
        return None

    def declared_probe_failed(self, page, c):
        """Report (once per build) a `probe:` declared on c that could not run; True if it failed."""
        error = (getattr(self.shapes, "declared_errors", None) or {}).get(c["function"])
        if error and "probe" in c:
            if c["function"] not in getattr(self, "_declared_reported", set()):
                self._declared_reported = getattr(self, "_declared_reported", set()) | {c["function"]}
                self.problems.append(Problem(page.file, c.line_of("probe"), f"the probe declared for {c['function']} "
                                             f"could not run: {error}", "correct the declared input shapes"))
            return True
        return False

    def probe_problem(self, failure, file, line, what):
        """`what` could not be done because a shape probe raised: one problem at file:line that
        names the probe, the error and the model line that raised."""
        self.probe_failures_reported = True
        self.problems.append(Problem(file, line, f"{what}: {failure.describe()}",
                                     f"fix the model code at {failure.where}, which the build runs to find the shapes"
                                     if failure.where else "fix the model code that raised"))

    def run_problem(self, file, line, what, exc):
        """The builder ran the model for what file:line asked for, and it raised exc: one problem
        naming the error and the model line that raised (the build goes on)."""
        from site_builder.run.trace import raising_location
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        where = raising_location(exc) or raising_location(cause)
        at = f" at {where[0]}:{where[1]} ({where[2]})" if where else ""
        error = " ".join(f"{type(cause).__name__}: {cause}".split())
        self.problems.append(Problem(file, line, f"{what}: {error}{at}",
                                     f"fix the model code at {where[0]}:{where[1]}" if where
                                     else "run it by hand to see why"))

    def build_page(self, slug, i, slugs):
        """One page, gathered into a SiteModel of its own (so the page cache can keep it)."""
        outer, outer_problems, outer_cited = self.site, self.problems, self.r.cited
        self.site, self.problems, self.r.cited = SiteModel(), [], set()
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
            return part
        finally:
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
            what=self.md(c, "what"), why=self.md(c, "why"),
            notes=[dict(kind=k, html=self.r.md(v, page.file, n.line)) for n in c.get("notes") or [] for k, v in n.items()],
            math=eqs, after_math=self.md(c, "after_math"),
            symbols=symbols,
            examples=examples, examples_heading=examples_heading(examples),
            shapes=self.shape_blocks(page, c),
            listing=self.r.listing(main.file, main.start, main.end, cited) if main else [],
            listing_info=dict(file=main.file, short=self.short_file(main.file), href=source_url(main.file) + f"#{line_anchor(main.start, main.end)}",
                              github=self.github(main.file, main.start, main.end), start=main.start, end=main.end) if main else None,
            listings=self.extra_listings(page, c),
            connection=rows,
            implemented=[x for x in rows if x["role"] != "tests"],
            used=self.used(fn, c["id"]),
            flow=self.flow(fn) if c.get("flow") else None,
            diagram=self.diagram(page, c) if c.get("diagram") else None,
            reaches_update=self.md(c, "update"),
            paper=self.paper(page, c),
        )

    def call_map(self):
        """The landing page's map: what one real training step called (site_builder/run/call_map.py),
        in the order it first called it. Under each caller, one box per function it called, with
        how many times per call of the caller, and the names of the equations of the caller's
        concept that cite those calls. A function's calls are drawn at its first box; a later box
        of it says "again". None when the step could not run (its problem is reported)."""
        if self.step_calls is None:
            return None
        if self.step_calls.problem:
            self.problems.append(self.step_calls.problem)
            return None
        expanded = set()

        def box(function, sites, caller, caller_calls):
            calls = sum(s.calls for s in sites)
            inside = [c for s in sites for c in s.children]
            repeat = bool(inside) and function in expanded
            entry = dict(self.fn_link(function), qualname=function, times=call_ratio(calls, caller_calls),
                         repeat=repeat, cites=self.call_cites(sites, caller), children=[])
            if inside and not repeat:
                expanded.add(function)
                by_function = {}
                for c in inside:
                    by_function.setdefault(c.function, []).append(c)
                entry["children"] = [box(f, group, function, calls) for f, group in by_function.items()]
            return entry
        root = self.step_calls.root
        return dict(box(root.function, [root], None, root.calls), source=self.step_calls.source)

    def call_cites(self, sites, caller):
        """[{label, href}]: for each line of the call sites, the first equation that cites it on
        the page of `caller`'s concept, that concept's own first (one name per line keeps the
        map readable), in line order."""
        if caller is None or caller not in self.fn_pages:
            return []
        slug, sid = self.fn_pages[caller]
        try:
            file = self.index.function(caller).file
        except KeyError:
            return []
        title = f"{self.content.pages[slug].meta['title']}: "
        found = {}
        for line in sorted({s.line for s in sites}):
            on_page = [(h, l) for h, l in self.site.cited.get((file, line), []) if h.startswith(f"{slug}.html#")]
            on_page.sort(key=lambda cite: not cite[0].startswith(f"{slug}.html#{sid}--"))    # stable: page order kept
            if on_page:
                found.setdefault(on_page[0][0], on_page[0][1].removeprefix(title))
        return [dict(href=href, label=label) for href, label in found.items()]

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

    def symbol_code(self, page, c, s, parts, locals_):
        """A symbol row's `code`: as written, or the name its TeX uses when that is a local of
        the concept's function (`Z` -> Z, `X_n` -> Xn, `\\hat{x}` -> xhat)."""
        if "code" in s:
            self.stale_code(page, c, s, str(s["code"]))
            return str(s["code"])
        names = [tex_name(p) for p in parts]
        if names and all(n in locals_ for n in names):
            return ", ".join(names)
        missing = next(n for n in names if n not in locals_) if names else str(s["tex"])
        self.problems.append(Problem(page.file, s.line, f"symbol '{s['tex']}' has no 'code:', and '{missing}' "
                                     f"is not a local of {c['function']}",
                                     f"add code: NAME (its locals: {', '.join(locals_) or 'none'})"))
        return ""

    def stale_code(self, page, c, s, code):
        """A `check` problem for a symbol row whose `code` spells what the code does not."""
        from site_builder.base.problems import did_you_mean
        from site_builder.render.symbols import code_misses
        scopes = self.code_scopes(c, s)
        misses = code_misses(code, [w for _, w in scopes], self.index.class_attributes())
        if not misses:
            return
        part, word = misses[0]
        own = scopes[0][1]
        shown = sorted(set().union(*(w.names | w.attrs | w.keys for _, w in scopes)))
        hint = did_you_mean(word.strip("'."), shown, containing=True)
        calls = ", ".join(own.calls[:10]) or "nothing"
        self.problems.append(Problem(
            page.file, s.line_of("code"),
            f"symbol '{s['tex']}': code '{part}' spells {word}, which neither {c['function']} nor the code it "
            f"calls, its callers or the concept's references spell; {hint or f'it calls {calls}'}",
            "write the name the code has (a local, a parameter, a call or a key), 'NAME (inside FUNCTION)' "
            "for another function's, or words when the code does not name it", strict=True))

    def code_scopes(self, c, s):
        """[(where, CodeWords)] of the code a symbol row may name: the concept's function first,
        its class's methods, the model functions it reaches and its direct callers, the model
        functions the concept's equations and listings cite (its tests aside: a test's own
        names are not the code's), a function the row names with `(inside FUNCTION)` and what
        it reaches, and the concept's examples."""
        fn = c["function"]
        try:
            info = self.index.function(fn)
        except KeyError:
            return []                       # the missing function is reported where it is cited
        named = [fn] + [q for q, g in self.index.functions.items() if info.class_name and g.class_name == info.class_name]
        named += sorted(self.callees(fn))
        named += [x.caller for x in self.index.called_by(fn) if self.project.owns(x.caller)]
        for item in c.get("math") or []:
            named += [str(r["function"]) for r in item.get("refs") or [] if r.get("function") and r.get("role") != "tests"]
        named += [str(x["function"]) for x in c.get("listings") or [] if x.get("function")]
        for text in (str(s.get("code", "")), str(s.get("shape_of", ""))):
            for inside in re.findall(r"\(inside\s+([\w.]+)\)", text):
                for q in self.index.functions:
                    if q == inside or q.endswith("." + inside):
                        named += [q] + sorted(self.callees(q))
        scopes = [(q, self.index.code_words(q)) for q in dict.fromkeys(named) if q in self.index.functions]
        return scopes + [(e["run"], w) for e in c.get("examples") or [] if (w := self.example_words(e["run"]))]

    def example_words(self, ref):
        """CodeWords of the example function `ref` names ('block:ffn_forward_worked'), read
        with `ast` (not run); None when it cannot be read (the example's own problem says why)."""
        import ast
        from site_builder.gather.source_syntax import code_words_of
        module, _, name = str(ref).partition(":")
        path = self.root / "content" / "examples" / f"{module}.py"
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            return None
        name = name.partition("(")[0]
        found = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
        return code_words_of(found[0]) if found else None

    def probe_fix(self, c, block=False):
        """How to give shapes to a function nothing runs: a `probe:` of its inputs when every
        parameter without a default takes an array, else an example that calls it (a
        parameter dict, a config, a path or an rng cannot be made from a shape)."""
        from site_builder.run.example_shapes import array_params
        try:
            f = self.index.function(c["function"])
            arrays, others = array_params(self.index.files[f.file][f.first_line - 1:f.end])
        except (KeyError, SyntaxError):
            arrays, others = ["x"], []
        if (others or not arrays) and block:        # a shapes block needs the probe's symbols
            return (f"a probe cannot build {', '.join(others) or 'its parameters'} from shapes: show these arrays as "
                    f"symbol rows instead (the concept's example run checks them), or the shapes of a function a probe "
                    f"reaches (function: ...)")
        if others or not arrays:
            return (f"give the concept an example that calls {c['function']} (its run records the shapes: "
                    f"{', '.join(others) or 'its parameters'} cannot be built from a shape); or write the shape in words")
        entries = ", ".join(f"{name}: ..." for name in arrays)
        return (f"declare its inputs on the concept: probe: {{{entries}}}, each a shape such as '(T, d)' "
                f"(axes T, d, F, V, h, dk, L or numbers) or a number; or give the concept an example that calls it")

    def example_checks(self, c, rows):
        """The concept's symbol rows that are not one recorded name: checked against the probe's
        shapes where a probe reaches the function, the rest against the concept's examples' own
        runs (each example recorded the first call of every model function it reached).
        Returns ({line: message}, {line checked: how}, {line: why a row could not be checked},
        reached: an example ran the function)."""
        from site_builder.run.example_shapes import check_rows, declared_shapes, from_probe
        fn = c["function"]
        wrong, checked, unknown, reached = {}, {}, {}, False
        if self.shapes.get(fn) and not self.failed_probe(fn):
            # the probe reaches it: its shapes, at sizes where every letter differs, decide
            if getattr(self, "_probe_recording", None) is None:
                self._probe_recording = from_probe(self.shapes)         # once per build: the table is large
            calls, sizes = self._probe_recording
            wrong, ok, unknown = check_rows(rows, calls.get(fn, {}), calls, {}, f"the probe run of {fn}", sizes)
            checked = {line: PROBE_CHECKED for line in ok}
            rows = [r for r in rows if r.line in unknown or not declared_shapes(r.declared)]   # the rest: the examples'
        for ref, result in getattr(self, "_recordings", []):
            recorded = getattr(result, "shapes", None) or {}
            names = recorded.get(fn)
            reached |= names is not None
            w, ok, why = check_rows(rows, names or {}, recorded, result.data, f"the example {ref}'s run of {fn}")
            for line, message in w.items():
                wrong.setdefault(line, message)
            for line in ok:
                checked.setdefault(line, EXAMPLE_CHECKED)
            for line, message in why.items():
                unknown.setdefault(line, message)
        # `NAME (inside FUNC)` of a FUNC no example calls (init_params' rows about mha_forward's
        # arrays): the probe's recording of FUNC, where a probe reaches it, decides
        inside = [r for r in rows if " (inside " in r.code and r.line in unknown and r.line not in checked
                  and r.line not in wrong and declared_shapes(r.declared)]
        if inside and self.shapes:
            if getattr(self, "_probe_recording", None) is None:
                self._probe_recording = from_probe(self.shapes)
            calls, sizes = self._probe_recording
            w, ok, _ = check_rows(inside, calls.get(fn, {}), calls, {}, f"the probe run", sizes)
            wrong.update(w)
            checked.update({line: PROBE_CHECKED for line in ok})
        return wrong, {line: how for line, how in checked.items() if line not in wrong}, unknown, reached

    def reachable(self, fn) -> set:
        """fn and every function it calls, directly or not (by the index's call graph)."""
        seen, todo = set(), [fn]
        while todo:
            q = todo.pop()
            if q in seen:
                continue
            seen.add(q)
            try:
                todo.extend(self.index.calls(q))
            except KeyError:
                pass
        return seen

    def callees(self, fn):
        """The model functions fn calls, directly or not."""
        return {q for q in self.reachable(fn) if self.project.owns(q)} - {fn}

    def callee_checks(self, c, rows, lines):
        """Rows (at `lines`) whose code names arrays of a function the concept's function
        calls, or of one that calls it (`S` of mha_forward on the gradient-check page, `Q` of
        mha_forward under split_heads): checked against each such function
        whose recording holds them, the probe's where it reaches them, else the examples'.
        Returns {line: how} of the rows a callee agrees with and none disagrees with. A
        disagreement is no problem: a callee's recording is its first call, which may be
        another caller's (layer_norm_forward of the language model, not of the encoder), so
        such a row stays unmarked, as a row in words does."""
        from site_builder.run.example_shapes import check_rows, from_probe
        if not lines:
            return {}
        if getattr(self, "_probe_recording", None) is None:
            self._probe_recording = from_probe(self.shapes)
        calls, sizes = self._probe_recording
        try:            # and its direct model callers: split_heads' rows name mha_forward's Q, K, V
            callers = {x.caller for x in self.index.called_by(c["function"]) if self.project.owns(x.caller)}
        except KeyError:
            callers = set()
        callees = sorted(self.callees(c["function"]) | callers)
        runs = [(calls, sizes, {}, "the probe run", PROBE_CHECKED)]
        runs += [(getattr(r, "shapes", None) or {}, None, r.data, f"the example {ref}'s run", EXAMPLE_CHECKED)
                 for ref, r in getattr(self, "_recordings", [])]
        verdicts = {line: ([], []) for line in lines}            # line -> (agreeing, disagreeing)
        for recorded, letters, data, where, how in runs:
            open_lines = [line for line, v in verdicts.items() if not v[0] and not v[1]]   # the probe's verdict stands
            for q in callees:
                names = recorded.get(q)
                if not names or not open_lines:
                    continue
                w, ok, _ = check_rows(rows, names, recorded, data, f"{where} of {q}", letters)
                for line in open_lines:
                    if line in ok:
                        verdicts[line][0].append(how)
                    elif line in w:
                        verdicts[line][1].append(w[line])
        return {line: v[0][0] for line, v in verdicts.items() if v[0] and not v[1]}

    def symbols(self, page, c, examples=()):
        from site_builder.run.example_shapes import Row, declared_shapes, names_own
        from site_builder.run.shapes import check_declared
        out = []
        unprobed = self.failed_probe(c["function"]) if c.get("symbols") else None
        failed_declared = self.declared_probe_failed(page, c)
        fn_shapes = {} if unprobed else self.shapes.get(c["function"], {})
        math = [tex_tokens(str(i["tex"])) for i in c.get("math") or [] if "eq" in i]
        dims = " ".join(str(s["shape"]) for s in c.get("symbols") or [])
        locals_ = self.local_names(c["function"])
        rows = []
        for s in c.get("symbols") or []:
            parts = [x for x in split_top_level(str(s["tex"]))]
            code = self.symbol_code(page, c, s, parts, locals_)
            unused = [x for x in parts if not any(contains(eq, tex_tokens(x)) for eq in math)
                      and not re.search(rf"(?<![\\\w]){re.escape(x.strip())}(?!\w)", dims)]
            if unused:
                self.problems.append(Problem(page.file, s.line_of("tex"),
                                             f"symbol '{unused[0].strip()}' is declared but no equation of '{c['id']}' uses it",
                                             "use it in an equation, correct its TeX, or remove the row"))
            rows.append((s, code, Row(s.line_of("shape"), str(s.get("shape_of", code)), str(s["shape"]),
                                      tex_name(str(s["tex"])) if len(parts) == 1 else "")))
        wrong, by_example, why_not, reached = self.example_checks(c, [r for _, _, r in rows])
        others = [r.line for s, code, r in rows if r.line not in wrong and r.line not in by_example
                  and fn_shapes.get(code) is None and declared_shapes(r.declared) is not None
                  and not names_own(r.code, locals_)]
        by_example.update(self.callee_checks(c, [r for _, _, r in rows], others))
        for s, code, row in rows:
            declared = str(s["shape"])
            info = fn_shapes.get(code)
            checked = ""
            if unprobed and declared.startswith("("):
                self.probe_problem(unprobed, page.file, s.line_of("shape"),
                                   f"cannot check the declared shape {declared} of '{code}' in {c['function']}")
                unprobed = None             # once per concept: every symbol has the same cause
            elif info is not None and declared.startswith("("):
                err = check_declared(declared, info)
                if err:
                    self.problems.append(Problem(page.file, s.line_of("shape"), err, "correct the declared shape"))
                checked = PROBE_CHECKED
            elif row.line in wrong:
                self.problems.append(Problem(page.file, s.line_of("shape"), wrong[row.line], "correct the declared shape"))
            elif row.line in by_example:
                checked = by_example[row.line]
            elif declared_shapes(declared) is not None and not failed_declared:
                self.problems.append(Problem(page.file, s.line_of("shape"), *self.unchecked(c, row.code, declared, fn_shapes,
                                                                                           reached, why_not.get(row.line),
                                                                                           names_own(row.code, locals_)),
                                             strict=True))
            out.append(dict(tex=self.r.tex(str(s["tex"]), False, page.file, s.line_of("tex")),
                            meaning=self.r.md(s["meaning"], page.file, s.line_of("meaning"), inline=True),
                            code=code, shape=declared, checked=checked,
                            n=len(out), tex_src=str(s["tex"]), **code_links(code)))
        return out

    def unchecked(self, c, code, declared, fn_shapes, reached, why, own=True):
        """(message, fix) for a declared shape that nothing checks."""
        fn = c["function"]
        head = f"nothing checks the declared shape {declared} of '{code}'"
        if not own and not reached and not fn_shapes and " (inside " not in code:
            return (f"{head}: it is not an array of {fn}, and no run of the concept records it",
                    "say whose it is with shape_of: 'NAME (inside FUNCTION)' for a function this concept's example "
                    "calls, or write the shape in words")
        if reached:
            names = sorted({n for _, result in self._recordings for n, (kind, _) in
                            ((result.shapes or {}).get(fn) or {}).items() if kind == "a"})
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            return (f"{head}: {why or 'the example run records no such array'} in {fn}",
                    f"name an array it holds in code: ({shown or 'none'}; a callee's as NAME (inside FUNCTION)), "
                    "or write the shape in words")
        if fn_shapes:
            return (f"{head}: {why or 'the probe runs record no such array'} in {fn}",
                    f"name one of the arrays they record ({', '.join(sorted(fn_shapes)[:12])}), "
                    "or give the concept an example that calls it, or write the shape in words")
        if why and " (inside " in code:
            return f"{head}: {why}", "name an array that function holds, or write the shape in words"
        return f"{head}: no probe run and no example of the concept reaches {fn}", self.probe_fix(c)

    def examples(self, page, c):
        from site_builder.gather.playground import call_ref, combinations, combo_key, controls, parameters_missing
        out = []
        self._recordings = []            # (ref, ExampleResult): their recorded shapes check the symbols
        for n, e in enumerate(c.get("examples") or [], 1):
            choices = e.get("choices") or {}
            declared = [("choices", k) for k in choices] + [("playable", k) for k in e.get("playable") or {}]
            missing = parameters_missing(self.root, e["run"], [k for _, k in declared])
            for key, name in dict.fromkeys((key, name) for key, name in declared if name in missing):
                self.problems.append(Problem(page.file, e.line_of(key), f"'{name}' in {key} is not a parameter of {e['run']}",
                                             f"name one of its parameters, or add '{name}' to the function"))
            if missing:
                continue
            variants = {}
            for combo in combinations(choices):
                ref = call_ref(e["run"], combo)
                result, cached = self.example_results.get(ref) or run_example(
                    self.root, Request(ref, page.file, e.line_of("run"), float(e.get("timeout") or DEFAULT_TIMEOUT)),
                    self.problems, ExampleStore(self.root, self.cache))
                self.site.examples_cached += cached
                self.site.examples_run += not cached
                module = e["run"].partition(":")[0]
                self.site.references.append(dict(page=page.slug, concept=c["id"], equation=None, role="example",
                                                  function=ref, file=f"content/examples/{module}.py",
                                                  start=None, end=None, code=None))
                if result is not None:
                    self._recordings.append((ref, result))
                    for block in result.blocks:
                        if block.get("function"):       # the model function the example traced
                            self.cite_function("example", block["function"], c["id"], example=ref)
                    variants[combo_key(choices, combo) if choices else ""] = dict(
                        source=result.source, blocks=self.example_blocks(result.blocks), runs=result.runs)
            if len(variants) < len(combinations(choices)):
                continue                     # a failed combination is a problem already
            first = next(iter(variants.values()))
            ex_id = f"{c['id']}--ex-{n}"
            out.append(dict(title=e["title"], hand_picked=self.md(e, "hand_picked"), caption=self.md(e, "caption"),
                            source=first["source"], blocks=first["blocks"], id=ex_id,
                            runs=sorted({r for v in variants.values() for r in v["runs"]}),
                            play=controls(e, page.slug, ex_id, variants) if choices or e.get("playable") else None))
        return out

    def example_blocks(self, blocks):
        return prepare_blocks(blocks, self.index, self.r)

    def shape_blocks(self, page, c):
        from site_builder.run.shapes import legend_text
        out = []
        for s in c.get("shapes") or []:
            fn = s.get("function", c["function"])
            sizes = self.example_sizes(page, s) if s.get("config") else None
            at = self.resolve(fn, s["at"], page.file, s.line_of("at")) if s.get("at") else None
            if at:
                self.cite("shapes", at, c["id"])
            failed = self.failed_probe(fn)
            infos = {} if failed else self.shapes.get(fn, {})
            rows = []
            if failed:                          # once for the block: every name has the same cause
                self.probe_problem(failed, page.file, s.line_of("names"), f"no shapes for {fn}")
            for name in s["names"]:
                info = infos.get(str(name))
                if info is None and failed:
                    continue
                if info is None:
                    saw = ", ".join(sorted(infos))
                    self.problems.append(Problem(page.file, s.line_of("names"),
                                                 f"no shape recorded for '{name}' in {fn} "
                                                 f"(names the probe saw: {saw or 'none'})",
                                                 f"use one of those names" if saw else
                                                 self.probe_fix(dict(function=fn), block=True)))
                    continue
                label = "out" if str(name).startswith("return") else str(name)
                if sizes is not None:
                    info = self.info_at(info, sizes, str(name), page, s)
                rows.append(dict(name=label, symbolic=info.symbolic, concrete=info.concrete_str, info=info))
            out.append(dict(title=s["title"], rows=rows, note=self.md(s, "note"),
                            sized_at="At the example's config" if sizes is not None else "At the default config",
                            names_from=names_apart(sizes["config"], s["config"]) if sizes is not None else "",
                            legend=legend_text([r.pop("info") for r in rows]),
                            at=dict(label=f"{self.short_file(at.file)}:{at.start}", href=source_url(at.file) + f"#L{at.start}") if at else None))
        return out

    def example_sizes(self, page, s):
        """The sizes a shapes block with `config: module:function` is shown at: the config
        (data["config"]) and the sequence lengths (data["lengths"]) that example ran with."""
        from site_builder.run.shapes import sizes_of
        ref = str(s["config"])
        result = self.example_result(ref, page.file, s.line_of("config"))
        data = result.data if result is not None else {}
        if result is not None and "config" not in data:
            self.problems.append(Problem(page.file, s.line_of("config"), f"the example {ref} returns no 'config' in its data",
                                         "return data=dict(config=cfg, lengths={'S': ..., 'T': ...}) from it"))
        if "config" not in data:
            return None
        self.site.references.append(dict(page=self.page_slug, concept=None, equation=None, role="shapes-config",
                                          function=ref, file=f"content/examples/{ref.partition(':')[0]}.py",
                                          start=None, end=None, code=None))
        return dict(sizes=sizes_of(data["config"], data.get("lengths")), config=data["config"])

    def info_at(self, info, sizes, name, page, s):
        """info with its concrete shape and legend at the example's config. The encoder-decoder's
        V is the target's vocabulary unless the array belongs to the source (its name says src)."""
        import dataclasses as dc
        from site_builder.run.shapes import at_config
        table = dict(sizes["sizes"])
        cfg = sizes["config"]
        side = "src_vocab_size" if "src" in name else "tgt_vocab_size"
        if hasattr(cfg, side):
            table["V"] = (side, getattr(cfg, side))
        found = at_config(info, table)
        if found is None:
            self.problems.append(Problem(page.file, s.line_of("config"),
                                         f"cannot size {info.symbolic} of '{name}' at the config of {s['config']}",
                                         "return its sequence lengths in data['lengths'], or drop 'config'"))
            return info
        return dc.replace(info, concrete_str=found[0], legend=found[1])

    def extra_listings(self, page, c):
        out = []
        for item in c.get("listings") or []:
            r = self.resolve(item["function"], item.get("snippet"), page.file, item.line)
            if r:
                self.cite("listing", r, c["id"])
                out.append(dict(caption=self.md(item, "caption"), file=r.file, short=self.short_file(r.file),
                                function=item["function"].split(".")[-1],
                                href=source_url(r.file) + f"#{line_anchor(r.start, r.end)}",
                                github=self.github(r.file, r.start, r.end),
                                rows=self.r.listing(r.file, r.start, r.end)))
        return out

    def used(self, fn, concept=None):
        try:
            self.index.function(fn)
        except KeyError:
            return None
        grouped = {}                    # one entry per calling function, with all its lines
        for caller, line in self.index.called_by(fn):
            grouped.setdefault(caller, []).append(line)
            self.cite_function("called-by", caller, concept, line, calls=fn)
        for link in self.index.tested_by(fn):       # the page names the direct tests; the others by file
            if link.direct:
                self.cite_function("tested-by", link.test, concept, tests=fn)
        called_by = [dict(lines=lines, lines_text=spoken_list(lines), **self.fn_link(caller))
                     for caller, lines in grouped.items()]
        calls = [self.fn_link(q) for q in self.index.calls(fn)]
        direct, routes = [], {}
        for link in self.index.tested_by(fn):
            if link.direct:
                direct.append(self.fn_link(link.test))
            else:
                routes.setdefault(tuple(link.path[1:-1]), []).append(self.index.function(link.test).file)
        return dict(called_by=called_by, calls=calls, tested_direct=direct,
                    tested_through=[self.test_route(via, files, concept, fn) for via, files in routes.items()])

    def test_route(self, via, test_files, concept=None, fn=None):
        """Tests that reach a function through the same chain of calls, counted per test file:
        the chain is what a reader needs; the tests' names are a click away in their file."""
        counts = {f: test_files.count(f) for f in dict.fromkeys(test_files)}
        self.site.cited_files.update(counts)      # the page links to their source pages
        for f, n in counts.items():
            self.site.references.append(dict(page=self.page_slug, concept=concept, equation=None, role="tested-by",
                                              function=None, file=f, start=None, end=None, code=None,
                                              tests=fn, through=list(via), count=n))
        return dict(via=[self.fn_link(q) for q in via], tests=len(test_files),
                    files=[dict(label=self.short_file(f), href=source_url(f), count=n) for f, n in counts.items()])

    def flow(self, fn):
        try:
            self.index.function(fn)
        except KeyError:
            return None          # the concept's function is not indexed: resolving it reported that
        steps = []
        for st in self.index.flow_steps(fn):
            f = self.index.function(fn)
            step = dict(line=st.line, end=st.end_line, text=st.text, kind=st.kind, grads=list(st.grads),
                        href=source_url(f.file) + f"#{line_anchor(st.line, st.end_line)}",
                        label=f"{self.short_file(f.file)}:{st.line}", callee=None, callee_lines=None,
                        grad_lines=list(st.grad_lines), function=fn, callee_listing=None)
            if st.callee:
                step["callee"] = self.fn_link(st.callee)
                try:
                    g = self.index.function(st.callee)
                    step["callee_lines"] = f"{self.short_file(g.file)}:{g.start}-{g.end}"
                    step["callee_listing"] = self.r.listing(g.file, g.start, g.end)
                except KeyError:
                    pass
            steps.append(step)
        return steps

    def diagram(self, page, c):
        """The data-flow diagram a concept declares (`diagram: {function, expand}`), drawn from
        the syntax tree by site_builder/render/diagrams.py. A call's box links to the concept section of
        the function it calls; an add's box to the equation of this page that cites its line;
        else to the line itself."""
        from site_builder.render.diagrams import dataflow, render, describe, column_titles, legend
        d = c["diagram"]
        fn, expand = d.get("function", c["function"]), list(d.get("expand") or [])
        missing = False
        for q in [fn] + expand:
            try:
                resolve_function(self.index, q)
            except ResolveError as e:
                missing = True
                self.problems.append(Problem(page.file, d.line_of("expand" if q in expand else "function") or c.line_of("diagram"),
                                             f"diagram: {e}", "correct the name, or remove it from the diagram"))
        if missing:
            return None
        self.site.documented.add(fn)
        nodes = dataflow(self.index, fn, expand)
        for n in nodes:
            eq = next((href for href, _ in self.site.cited.get((n.file, n.line), [])
                       if href.startswith(f"{page.slug}.html#")), None)
            link = self.fn_link(n.callee) if n.callee else None
            if n.kind == "call" and link and link["href"] and n.callee in self.fn_pages:
                n.href = link["href"]
            elif eq:
                n.href = eq
            elif n.line:
                n.href = source_url(n.file) + f"#L{n.line}"
        title = f"Data flow of {fn.split('.')[-1]}, drawn from its syntax tree"
        columns = column_titles(self.index, fn, expand)
        return dict(id=f"{c['id']}--diagram", function=fn, short=fn.split(".")[-1], title=title,
                    caption=self.md(d, "caption"), legend=legend(nodes, columns),
                    svg=render(nodes, title, columns), steps=describe(nodes))

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

    # -- special sections -----------------------------------------------------------------
    def caches(self, page, s):
        rows = []
        fwd, bwd = s["forward"], s["backward"]
        unknown = []
        for key, name in (("forward", fwd), ("backward", bwd)):
            try:
                self.index.function(name)
            except KeyError as e:
                unknown.append(Problem(page.file, s.line_of(key), f"{key}: {e}", f"name a function of {self.project.package}/"))
        if unknown:
            self.problems.extend(unknown)
            return dict(kind="caches", id=s["id"], title=s["title"], rows=[], intro="", after="")
        reads = {r.key: r for r in self.index.cache_reads(bwd)}
        build = self.index.cache_builds(fwd)
        assigned = {a[0]: a for a in self.index.cache_assignments(fwd)}
        if build is None:
            self.problems.append(Problem(page.file, s.line_of("forward"), f"{fwd} returns no cache dict",
                                         "name a forward function whose return statement builds dict(...)"))
            return dict(kind="caches", id=s["id"], title=s["title"], rows=[], intro="", after="")
        self.site.documented.update({fwd, bwd})
        holds = s.get("holds") or {}
        for key, var in build.key_vars:
            producer = assigned.get(var)
            producer_fn = self.cache_builder(producer[1]) if producer else None
            pb = self.index.cache_builds(producer_fn) if producer_fn else None
            items = []
            for k in (pb.keys if pb else ()):
                if k not in holds:
                    self.problems.append(Problem(page.file, s.line_of("holds"), f"the cache of {producer_fn} holds '{k}', "
                                                 "but 'holds' does not describe it", f"add '{k}: ...' under holds"))
                items.append(dict(key=k, html=self.r.md(holds.get(k, ""), page.file, s.line_of("holds"), inline=True)))
            read = reads.get(key)
            pf = self.index.function(producer_fn) if producer_fn else None
            if pb:
                self.cite_function("caches", producer_fn, s["id"], pb.line, cache=key, action="builds")
            if read:
                self.cite_function("caches", bwd, s["id"], read.line, cache=key, action="reads")
            rows.append(dict(
                key=key, held=items,
                built=dict(label=f"{self.short_file(pf.file)}:{pb.line}", href=source_url(pf.file) + f"#L{pb.line}") if pb else None,
                producer=self.fn_link(producer_fn) if producer_fn else None,
                reader=self.fn_link(read.passed_to) if read and read.passed_to else None,
                read_at=dict(label=f"{self.short_file(self.index.function(bwd).file)}:{read.line}",
                             href=source_url(self.index.function(bwd).file) + f"#L{read.line}") if read else None))
        # In the order the backward pass reads them: the order a reader follows the gradient in.
        rows.sort(key=lambda row: (reads[row["key"]].line if row["key"] in reads else float("inf")))
        return dict(kind="caches", id=s["id"], title=s["title"], rows=rows,
                    intro=self.md(s, "intro"), after=self.md(s, "after"))

    def cache_builder(self, fn):
        """The function whose return statement builds the cache: fn itself, or the function
        it hands its work to (attention_forward returns mha_forward's cache)."""
        if self.index.cache_builds(fn) is not None:
            return fn
        return next((q for q in self.index.calls(fn) if self.index.cache_builds(q) is not None), fn)

    def params(self, page, s):
        from site_builder.run.params import param_rows
        rows = []
        roles = s.get("roles") or {}
        prefix = s.get("block", "b{l}.")
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")      # shapes and counts only: no NaN warning to print
                all_rows = param_rows(self.site_info["config"])
        except Exception as e:       # init_params raised, or no longer builds its dict as param_rows reads it
            self.run_problem(page.file, s.line_of("type"), "cannot build the parameter table: running init_params raised", e)
            all_rows = []
            roles = {}
        for row in all_rows:
            if not row.pattern.startswith(prefix):
                continue
            short = row.pattern[len(prefix):]
            if short not in roles:
                self.problems.append(Problem(page.file, s.line_of("roles"), f"no role for parameter '{row.pattern}'",
                                             f"add '{short}: ...' under roles"))
            rows.append(dict(row=row, role=self.r.md(roles.get(short, ""), page.file, s.line_of("roles"), inline=True),
                             href=source_url(row.file) + f"#L{row.line}", at=f"{self.short_file(row.file)}:{row.line}"))
        for short in roles:
            if not any(r["row"].pattern == prefix + short for r in rows):
                self.problems.append(Problem(page.file, s.line_of("roles"), f"'{short}' is not a parameter of one block",
                                             "remove it from roles"))
        return dict(kind="params", id=s["id"], title=s["title"], rows=rows,
                    intro=self.md(s, "intro"), after=self.md(s, "after"))
