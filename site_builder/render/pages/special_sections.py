"""The sections that are not a concept: a caches section (what a forward function's cache holds,
where it is built and where the backward pass reads it, from the syntax tree) and a params
section (one block's parameters, from a run of the project's init_params at the documented
config).

A mixin of PageBuilder (builder.py): it reads the builder's index, root, renderer, site info
and problems, and calls its fn_link, cite_function, md and run_problem.
"""
import warnings

import numpy as np

from site_builder.base.problems import Problem
from site_builder.render.html import short_file, source_url


class SpecialSections:
    """PageBuilder's caches and params sections."""

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
            if pb is None:
                # Not a sub-cache but an array the forward function holds itself (mha_forward's
                # Qh): described under its own key, built where fwd binds it (a parameter: its
                # def line), read by bwd itself unless bwd passes it on.
                producer_fn, pb_line = fwd, self.binding_line(fwd, var, build.line)
                described = [key]
            else:
                pb_line, described = pb.line, pb.keys
            items = []
            for k in described:
                if k not in holds:
                    whose = f"the cache of {producer_fn} holds" if pb else f"{fwd}'s cache holds"
                    self.problems.append(Problem(page.file, s.line_of("holds"), f"{whose} '{k}', "
                                                 "but 'holds' does not describe it", f"add '{k}: ...' under holds"))
                items.append(dict(key=k if pb else None, html=self.r.md(holds.get(k, ""), page.file, s.line_of("holds"), inline=True)))
            read = reads.get(key)
            pf = self.index.function(producer_fn)
            self.cite_function("caches", producer_fn, s["id"], pb_line, cache=key, action="builds")
            if read:
                self.cite_function("caches", bwd, s["id"], read.line, cache=key, action="reads")
            rows.append(dict(
                key=key, held=items,
                built=dict(label=f"{short_file(pf.file, self.project.package)}:{pb_line}", href=source_url(pf.file) + f"#L{pb_line}"),
                producer=self.fn_link(producer_fn),
                reader=self.fn_link(read.passed_to or bwd) if read else None,
                read_at=dict(label=f"{short_file(self.index.function(bwd).file, self.project.package)}:{read.line}",
                             href=source_url(self.index.function(bwd).file) + f"#L{read.line}") if read else None))
        # In the order the backward pass reads them: the order a reader follows the gradient in.
        rows.sort(key=lambda row: (reads[row["key"]].line if row["key"] in reads else float("inf")))
        return dict(kind="caches", id=s["id"], title=s["title"], rows=rows,
                    intro=self.md(s, "intro"), after=self.md(s, "after"))

    def binding_line(self, fn, var, fallback):
        """The line where `fn` last binds `var` before its cache is built, or its def line when
        `var` is a parameter; `fallback` (the cache's own line) for an expression."""
        places = [first for first, _ in self.index.assignments(fn).get(var, ()) if first <= fallback]
        if places:
            return places[-1]
        return self.index.function(fn).start if var.isidentifier() else fallback

    def cache_builder(self, fn):
        """The function whose return statement builds the cache: fn itself, or the function
        it hands its work to (a wrapper that returns its helper's cache)."""
        if self.index.cache_builds(fn) is not None:
            return fn
        return next((q for q in self.index.calls(fn) if self.index.cache_builds(q) is not None), fn)

    def params(self, page, s):
        """A params section: the rows of one block (`block:`, default the project's first
        block_prefix; every parameter without one), each with its role from `roles`."""
        from site_builder.gather.project import load_project
        from site_builder.run.params import NoInitParams, param_rows
        project = load_project(self.root)
        rows = []
        roles = s.get("roles") or {}
        prefix = s.get("block", (project.block_prefixes or ("",))[0])
        if self.read_log is not None:
            self.read_log.package_run()      # init_params runs here: the table reads every package file
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")      # shapes and counts only: no NaN warning to print
                all_rows = param_rows(self.site_info["config"], project)
        except NoInitParams as e:    # the project block names no init_params for the config
            self.problems.append(Problem(page.file, s.line_of("type"), f"cannot build the parameter table: {e}",
                                         "set the config's init_params in the project block of content/site.yaml"))
            all_rows, roles = [], {}
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
                             href=source_url(row.file) + f"#L{row.line}", at=f"{short_file(row.file, self.project.package)}:{row.line}"))
        for short in roles:
            if not any(r["row"].pattern == prefix + short for r in rows):
                self.problems.append(Problem(page.file, s.line_of("roles"), f"'{short}' is not a parameter of one block",
                                             "remove it from roles"))
        return dict(kind="params", id=s["id"], title=s["title"], rows=rows,
                    intro=self.md(s, "intro"), after=self.md(s, "after"))
