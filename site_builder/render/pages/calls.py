"""What calls what, as the pages show it, from the source index and one traced call: a
function's callers, callees and tests (direct, or through a chain of calls), its flow steps,
its data-flow diagram, and the landing page's map of a real call.

A mixin of PageBuilder (builder.py): it reads the builder's index, content, renderer, the
traced call (`step_calls`) and the site model's cited lines, and calls its fn_link, cite_function
and md.
"""
from site_builder.base.problems import Problem
from site_builder.gather.content import concepts
from site_builder.gather.resolve import resolve_function, ResolveError
from site_builder.render.html import line_anchor, short_file, source_url, spoken_list


def call_ratio(calls, caller_calls):
    """How many times a function was called per call of its caller, as the map prints it:
    None for once, '×2', or '3 times in 2 calls' when the calls do not divide evenly."""
    if calls == caller_calls:
        return None
    return f"×{calls // caller_calls}" if calls % caller_calls == 0 else f"{calls} times in {caller_calls} calls"


class CallSections:
    """PageBuilder's called-by, tested-by, flow, diagram and call map."""

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
        called_by = [dict(lines=lines, lines_text=spoken_list(lines), test=self.is_test(caller), **self.fn_link(caller))
                     for caller, lines in grouped.items()]
        calls = [self.fn_link(q) for q in self.index.calls(fn)]
        direct, routes = [], {}
        for link in self.index.tested_by(fn):
            if link.direct:
                direct.append(self.fn_link(link.test))
            else:
                routes.setdefault(tuple(link.path[1:-1]), []).append(self.index.function(link.test).file)
        through = [self.test_route(via, files, concept, fn) for via, files in routes.items()]
        # The page shows the package's callers; the tests' part is folded into the section's
        # provenance disclosure, and the visible line links to it with the count.
        return dict(called_by=[c for c in called_by if not c["test"]],
                    called_by_tests=[c for c in called_by if c["test"]], calls=calls, tested_direct=direct,
                    tested_through=through, tests=len(direct) + sum(r["tests"] for r in through))

    def is_test(self, qualname):
        try:
            return self.index.function(qualname).file.startswith(self.project.tests + "/")
        except KeyError:
            return False

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
                    files=[dict(label=short_file(f, self.project.package), href=source_url(f), count=n) for f, n in counts.items()])

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
                        label=f"{short_file(f.file, self.project.package)}:{st.line}", callee=None, callee_lines=None,
                        grad_lines=list(st.grad_lines), function=fn, callee_listing=None)
            if st.callee:
                step["callee"] = self.fn_link(st.callee)
                try:
                    g = self.index.function(st.callee)
                    step["callee_lines"] = f"{short_file(g.file, self.project.package)}:{g.start}-{g.end}"
                    step["callee_listing"] = self.r.listing(g.file, g.start, g.end)
                except KeyError:
                    pass
            steps.append(step)
        return steps

    def diagram(self, page, c):
        """The data-flow diagram a concept declares (`diagram: {function, expand}`), drawn from
        the syntax tree by site_builder/render/diagrams.py. A call's box links to the concept section of
        the function it calls; an add's box to the equation of this page that cites its line;
        else to the line itself. With `links: page`, every box links to this page's equation that
        cites its line first (a page that walks through the function section by section, whose
        sections come before the diagram's), then to this page's earlier section whose function
        is the one the box calls, or the one the box is a line of, and only then as above."""
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
        if d.get("links") not in (None, "page"):
            self.problems.append(Problem(page.file, d.line_of("links") or c.line_of("diagram"),
                                         f"diagram: links is '{d.get('links')}', but the only choice is 'page'",
                                         "write links: page, or remove it"))
        if missing:
            return None
        self.site.documented.add(fn)
        nodes = dataflow(self.index, fn, expand)
        earlier = self.sections_before(page, c)
        for n in nodes:
            eq = next((href for href, _ in self.site.cited.get((n.file, n.line), [])
                       if href.startswith(f"{page.slug}.html#")), None)
            link = self.fn_link(n.callee) if n.callee else None
            section = earlier.get(n.callee) or earlier.get(n.function) if n.line else None
            if eq and d.get("links") == "page":
                n.href = eq
            elif section and d.get("links") == "page":
                n.href = f"{page.slug}.html#{section}"
            elif n.kind == "call" and link and link["href"] and n.callee in self.fn_pages:
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

    @staticmethod
    def sections_before(page, c) -> dict:
        """{function: id of the first concept section documenting it} over the sections of
        `page` above `c`: the ones a reader has already passed."""
        out = {}
        for section in concepts(page):
            if section.get("id") == c.get("id"):
                break
            out.setdefault(section.get("function"), section.get("id"))
        return out

    def call_map(self):
        """The landing page's map: what one real call of call_map_root called (site_builder/run/call_map.py),
        in the order it first called it. Under each caller, one box per function it called, with
        how many times per call of the caller, and the names of the equations of the caller's
        concept that cite those calls. A function's calls are drawn at its first box; a later box
        of it says "again". {} when the call could not run (its problem is reported); None when
        the project asks for no map."""
        if self.step_calls is None:
            return None
        if self.step_calls.problem:
            self.problems.append(self.step_calls.problem)
            return {}
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
