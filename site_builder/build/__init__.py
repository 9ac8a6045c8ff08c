"""The orchestration, after MkDocs' build(): gather everything, render everything in memory,
validate links and anchors in a separate pass, and only then write.

Problems from every stage are collected into one list. A normal build fails on errors
(a reference that no longer resolves, a TeX error, an example that raises); `check`
(strict) also fails on broken links, undocumented public functions and equations with no
code. Either way the report lists every problem, and nothing is written unless it passed.

What a rebuild reuses (benchmarks/build_speed.py measures it), from the build cache on disk:
the examples (keyed on their code and what it imports), the training runs (on the syntax
trees of the package and the hooks, and the inputs the recipe names), each page's view model
and HTML (on its inputs: a cached page reads none of its examples' results), each source
page's HTML, the probe shapes, KaTeX's output, highlighted files, parsed YAML, import lists,
compiled templates and the search bundle. Within one process (serve) also the source index,
the Jinja2 environment, the link scan and what the hooks memoize (the documented config). A
cold build trains the runs in workers beside the examples that do not read them.

What runs beside what (with 2+ jobs; site_builder/base/parallel.py forks the children):
the package's source files are highlighted in a child while the content and the index are read,
and the test files the source pages will likely show in a low-priority child that takes the
core this process leaves idle meanwhile (highlight_beside);
the pages to gather are shared out by size, one share here and one in a child; the pages
and source pages to render likewise (each share also scans its pages for the link check and
the font subset; one of them writes references.json); the math font is subset in a child
while the links are checked, the site is written and Pagefind indexes it. Every share's
results are merged in the order a one-process build makes them, so the output is the same
bytes with --jobs 1 or any other.

The cyclic garbage collector is off while a build runs, on again after it and in the children
forked meanwhile (parallel.collector_paused, whose module says why: 0.45 s less CPU of 4.8 s on
the builder-overhead case with --jobs 1, the same peak memory; `serve` also collects after
each build, serve.settle_memory).

The steps, one module each, each importing only the ones above it; build() below runs them in
order and writes nothing before every file is rendered and checked:
  example_plan  which examples run, the training runs beside them, each page's cache key
  memos         the render memos (KaTeX, highlighting, imports, YAML) loaded from the cache, saved back
  gather_step   content, source index, config, shapes, the examples' runs, every page's view model
  render_step   every file of the site in memory: pages, source pages, landing page, static files
  write_step    the link and strict checks, then the write, the search index and the stamp
  page_check    `check --page`: the strict check of some pages, nothing written
"""
import os
import time
from pathlib import Path

import jinja2

from site_builder.gather import fingerprint
from site_builder.run import training_run
from site_builder.base.cache import BuildCache
from site_builder.publish import hosting
from site_builder.base.problems import BuildFailed
from site_builder.build.gather_step import gather
from site_builder.build.memos import Memos
from site_builder.build.render_step import render_all, rendering_problem
from site_builder.build.write_step import _check_and_write


def build(root: Path, out: Path, strict=False, cache_dir=None, use_cache=True, retrain=False, jobs=None,
          defer_search=False):
    """Build the site into `out`. Raises BuildFailed with every problem; writes nothing then.
    cache_dir defaults to .build_cache/ beside the sources; use_cache=False runs everything.

    defer_search (serve): the new site goes live with the previous search bundle, and the
    result's `finish()` indexes it afresh, so the browser reloads without waiting on Pagefind
    (the slowest step of a one-page rebuild).

    The garbage collector is off in this process meanwhile (parallel.collector_paused)."""
    from site_builder.base.parallel import collector_paused
    with collector_paused():
        return _build(root, out, strict, cache_dir, use_cache, retrain, jobs, defer_search)


def _build(root, out, strict, cache_dir, use_cache, retrain, jobs, defer_search):
    t0 = time.perf_counter()
    problems = []
    cache_dir = Path(cache_dir or root / ".build_cache")
    # The stamp's key is taken before anything is read: an edit made during the build
    # leaves the stamp out of date, and the next build does the work again.
    options = dict(command="check" if strict else "build", out=str(Path(out).resolve()))
    digests = fingerprint.input_digests(root) if use_cache else None
    start_key = fingerprint.fingerprint(root, options, digests) if use_cache else None
    cache = BuildCache(cache_dir if use_cache else None)
    training_run.configure(cache, retrain)
    memos = Memos(cache if use_cache else None)
    jobs = jobs or os.cpu_count() or 1
    gathered = gather(root, problems, cache, jobs, memos, retrain, digests)
    if gathered is None:
        raise BuildFailed(problems)
    content, index, renderer, site, site_info = gathered
    # The font subset is made beside the link check and the write (a child, with 2+ jobs).
    try:
        files, origin, fonts = render_all(root, content, index, renderer, site, site_info, cache if use_cache else None,
                                          background=jobs > 1, problems=problems)
    except (jinja2.TemplateError, OSError) as e:
        raise BuildFailed([rendering_problem(root, e)]) from None
    try:
        return _check_and_write(root, out, strict, problems, files, origin, fonts, index, site, cache, memos,
                                cache_dir, start_key, defer_search, t0, mounted=hosting.mounted(site_info["site_url"]))
    finally:
        fonts.stop()
