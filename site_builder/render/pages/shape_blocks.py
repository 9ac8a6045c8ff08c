"""The shapes blocks of a concept (each name's shape from the probe run, at the default config
or at an example's), and what a page says when a shape probe raised.

A probe that raised leaves the functions it reaches without shapes; another probe's shapes
of a function both reach (a helper, at the other's sizes) must not stand in for them, so the
page reports the failed probe at the block or the row that needed it (failed_probe, by the
index's call graph). A probe a concept declares (`probe:`) that could not run is reported
once per build.

A mixin of PageBuilder (builder.py): it reads the builder's shapes, index, root and problems,
and calls its resolve, cite, md and example_result.
"""
from site_builder.base.problems import Problem
from site_builder.render.html import short_file, source_url, spoken_list


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


class ShapeBlocks:
    """PageBuilder's shapes blocks and failed shape probes."""

    def failed_probe(self, fn):
        """The first shape probe that raised and whose entry point reaches fn (by the index's
        call graph), or None. Its shapes are missing, and another probe's shapes of a function
        they share (a helper both entry points call, at the other's sizes) must not stand in for them."""
        order = list(getattr(self.shapes, "order", ()))
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
        names the probe, the error and the package's line that raised."""
        self.probe_failures_reported = True
        self.problems.append(Problem(file, line, f"{what}: {failure.describe()}",
                                     f"fix the package's code at {failure.where}, which the build runs to find the shapes"
                                     if failure.where else "fix the package's code that raised"))

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
        """The package's functions fn calls, directly or not."""
        return {q for q in self.reachable(fn) if self.project.owns(q)} - {fn}

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
        from site_builder.gather.project import load_project
        from site_builder.run.shapes import declared_letters, example_input_shape
        project = load_project(self.root)
        letters, shape = declared_letters(project), example_input_shape(project)
        entries = ", ".join(f"{name}: ..." for name in arrays)
        axes = ", ".join(letters) + " or numbers" if letters else "numbers"
        example = f" such as '{shape}'" if shape else ""
        return (f"declare its inputs on the concept: probe: {{{entries}}}, each a shape{example} (axes {axes}) "
                f"or a number; or give the concept an example that calls it")

    def shape_blocks(self, page, c):
        from site_builder.run.shapes import legend_text
        out = []
        for s in c.get("shapes") or []:
            fn = s.get("function", c["function"])
            sizes = self.example_sizes(page, s) if s.get("config") and not s.get("run") else None
            at = self.resolve(fn, s["at"], page.file, s.line_of("at")) if s.get("at") else None
            if at:
                self.cite("shapes", at, c["id"])
            if s.get("run"):
                infos = self.run_shapes(page, c, s, fn)
                if infos is None:
                    continue                    # the example failed, or never called fn: said at its line
                failed = None
            else:
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
                    seen_by = f"the example {s['run']}'s run" if s.get("run") else "the probe"
                    self.problems.append(Problem(page.file, s.line_of("names"),
                                                 f"no shape recorded for '{name}' in {fn} "
                                                 f"(names {seen_by} saw: {saw or 'none'})",
                                                 f"use one of those names" if saw else
                                                 self.probe_fix(dict(function=fn), block=True)))
                    continue
                label = str(name) if not str(name).startswith("return") else \
                    "out" if sum(str(n).startswith("return") for n in s["names"]) == 1 else "out" + str(name)[6:]
                if sizes is not None:
                    info = self.info_at(info, sizes, str(name), page, s)
                rows.append(dict(name=label, symbolic=info.symbolic, concrete=info.concrete_str, info=info))
            out.append(dict(title=s["title"], rows=rows, note=self.md(s, "note"),
                            sized_at="At the example's config" if sizes is not None else
                            "In the example's run" if s.get("run") else "At the default config",
                            names_from=names_apart(sizes["config"], s["config"]) if sizes is not None else "",
                            legend=legend_text([r.pop("info") for r in rows]),
                            at=dict(label=f"{short_file(at.file, self.project.package)}:{at.start}", href=source_url(at.file) + f"#L{at.start}") if at else None))
        return out

    def run_shapes(self, page, c, s, fn):
        """{name: ShapeInfo} of a shapes block with `run: module:function`: what that example's
        run of fn held (its first call), each axis named by the letter of its size among the
        concept's scalar symbol rows and the config the run used (example_shapes.run_letters).
        None, with a problem at the block's `run:` line, when the example failed or never called fn."""
        from site_builder.run.example_shapes import run_letters, run_shape_infos
        from site_builder.render.pages.symbol_rows import tex_name
        ref, line = str(s["run"]), s.line_of("run")
        if s.get("config"):
            self.problems.append(Problem(page.file, s.line_of("config"), "a shapes block with 'run:' is sized by that "
                                         "run: 'config:' says nothing more", "remove 'config:'"))
        result = self.example_result(ref, page.file, line)
        if result is None:
            return None                         # its failure is a problem already
        names = (result.shapes or {}).get(fn)
        if names is None:
            ran = ", ".join(sorted(q.rpartition(".")[2] for q in result.shapes or {})) or "none"
            self.problems.append(Problem(page.file, line, f"the example {ref} never calls {fn}, so its run "
                                         f"sizes no shapes of it (the package functions it ran: {ran})",
                                         f"name an example whose run calls {fn.rpartition('.')[2]}"))
            return None
        self.site.references.append(dict(page=self.page_slug, concept=c["id"], equation=None, role="shapes-run",
                                          function=ref, file=page.file if ref.startswith("declared:")
                                          else f"content/examples/{ref.partition(':')[0]}.py",
                                          start=None, end=None, code=None))
        scalars = [(tex_name(str(r["tex"])), str(r["code"])) for r in c.get("symbols") or []
                   if r.get("code") and not str(r.get("shape", "")).strip().startswith("(")]
        letters = run_letters(names, result.data, self.project, scalars)
        return run_shape_infos(names, letters, fn, ref)

    def example_sizes(self, page, s):
        """The sizes a shapes block with `config: module:function` is shown at: the config
        (data["config"]) and the sequence lengths (data["lengths"]) that example ran with."""
        from site_builder.gather.project import load_project
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
        project, config = load_project(self.root), data["config"]
        return dict(sizes=sizes_of(config, project.axes_for(config), data.get("lengths"), project.lengths), config=config,
                    spec=project.config_spec(type(config).__name__))

    def info_at(self, info, sizes, name, page, s):
        """info with its concrete shape and legend at the example's config. A letter several
        fields share is sized by the field the config's `axes_by_name` picks for the array's name."""
        import dataclasses as dc
        from site_builder.run.shapes import at_config, sized_for_name
        found = at_config(info, sized_for_name(sizes["sizes"], sizes["config"], sizes["spec"], name))
        if found is None:
            self.problems.append(Problem(page.file, s.line_of("config"),
                                         f"cannot size {info.symbolic} of '{name}' at the config of {s['config']}",
                                         "return its sequence lengths in data['lengths'], or drop 'config'"))
            return info
        return dc.replace(info, concrete_str=found[0], legend=found[1])
