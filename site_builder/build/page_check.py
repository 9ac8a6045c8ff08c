"""`check --page SLUG`: the strict check of some pages without building the site. Every page
is loaded and validated, the listed pages are gathered in full and rendered, and their links
checked as far as they can be without the other pages; nothing is written. It runs the parts
of the gather, render and write steps these pages need, not the steps whole.
"""
import os
from dataclasses import replace
from pathlib import Path

import jinja2

from site_builder.run import training_run
from site_builder.base.cache import BuildCache
from site_builder.gather.content import load_content, concepts
from site_builder.gather.project import ProjectError
from site_builder.publish.assets import bundle_path, insert_scripts, page_scripts
from site_builder.render.links import check_links
from site_builder.render.pages.builder import PageBuilder
from site_builder.base.problems import collapse_causes, did_you_mean
from site_builder.render.html import Renderer, make_environment, source_url
from site_builder.build.example_plan import example_requests, training_step
from site_builder.build.gather_step import (cached_shapes, documented_config, notation_problems, quotation_sources,
                                          readable_index, site_info_for, with_declared_shapes)
from site_builder.build.memos import Memos
from site_builder.build.render_step import page_html, play_fragments, rendering_problem, shared_context, shipped_static
from site_builder.build.write_step import uncited


class UnknownPages(ValueError):
    """check --page named a page the content does not have: a mistake on the command line."""

    def __init__(self, unknown, pages):
        hint = did_you_mean(unknown[0], pages)
        super().__init__(f"--page {unknown[0]}: no such page ({hint + '; ' if hint else ''}pages: {', '.join(pages)})")


def check_pages(root: Path, slugs, cache_dir=None, jobs=None):
    """`check --page SLUG`: the strict check of some pages without building the site. Every
    page is still loaded and validated (TeX traps, schema, ids), the shapes are probed, and
    the listed pages are gathered in full (references, symbols, shapes, TeX, their examples),
    and their links are checked as far as they can be without the other pages (check_page_links),
    but nothing is written.
    The public functions of the modules these pages document must be named on some page.
    Caches are read and written as by a build. Returns (problems that fail, warnings, counts)."""
    problems = []
    cache = BuildCache(Path(cache_dir or root / ".build_cache"))
    training_run.configure(cache, False)
    memos = Memos(cache)
    content = load_content(root, problems)
    problems = others_unfinished_as_warnings(problems, content, slugs)
    # content that does not load comes first: a page that failed to load is not "no such page"
    if any(not p.warning for p in problems):
        return [p for p in problems if not p.warning], [p for p in problems if p.warning], {}
    unknown = [s for s in slugs if s not in content.pages]
    if unknown and content.pages:
        raise UnknownPages(unknown, list(content.pages))
    # a symbol these pages give a meaning another page gives another: a warning the full check prints too
    problems.extend(notation_problems(content, {content.pages[s].file for s in slugs}))
    index_problems = []
    try:
        index = readable_index(root, index_problems)
    except ProjectError as e:
        return list(e.problems), [], {}
    if index is None:
        return index_problems, [], {}
    cfg, config_note = documented_config(root)
    from site_builder.run.example_runner import ExampleStore, run_examples
    store = ExampleStore(root, cache)
    shapes = with_declared_shapes(root, cfg, store, cached_shapes(root, cfg, store), content)
    site_info = site_info_for(root, content, cfg, config_note)
    renderer = Renderer(root, index, problems, memos.code)
    renderer.sources = quotation_sources(content)         # {{quote KEY | ...}} names these
    requests = example_requests(root, content, slugs)
    outcomes = run_examples(root, requests, problems, store, jobs or os.cpu_count() or 1,
                            shared=training_step(root, {r.ref for r in requests}))
    builder = PageBuilder(root, content, index, renderer, shapes, problems, site_info, None, outcomes.results)
    order = list(content.pages)
    for slug in slugs:
        builder.merge(builder.build_page(slug, order.index(slug), order))
    try:
        links_checked = check_page_links(root, content, index, builder.site, site_info, problems)
    except (jinja2.TemplateError, OSError) as e:
        problems.append(rendering_problem(root, e))
        links_checked = 0
    documented = builder.site.documented | renderer.cited
    page_text = "\n".join((root / p.file).read_text(encoding="utf-8") for p in content.pages.values())
    files = {index.function(c["function"]).file for s in slugs for c in concepts(content.pages[s])
             if c.get("function") in index.functions}
    for qualname in index.public_functions():
        f = index.function(qualname)
        if f.kind == "function" and f.file in files and qualname not in documented and qualname not in page_text:
            problems.append(uncited(f, qualname))
    memos.save()
    failing = sorted(collapse_causes([p for p in problems if not p.warning]))
    return failing, [p for p in problems if p.warning], dict(pages=len(slugs), references=len(builder.site.references),
                                                            examples=len(requests), links=links_checked)


def others_unfinished_as_warnings(problems, content, slugs):
    """check --page A is about A: a strict-only problem of another page (a TODO new-concept left
    there, an unfinished section) is a warning here, which the full check still fails on. What
    would break the site (a page that does not load, a bad id) still fails."""
    others = {str(page.file) for slug, page in content.pages.items() if slug not in slugs}
    return [replace(p, warning=True, fix=(p.fix + "; " if p.fix else "") + "another page's: the full check fails on it")
            if p.strict and not p.warning and str(p.file) in others else p for p in problems]


def check_page_links(root, content, index, site, site_info, problems):
    """check --page: the links of the pages checked, each page rendered as a build renders it
    (and not written). A link must point at a file the build produces, and a #fragment of
    the page itself at one of its anchors. The anchors of the other pages are not known
    without rendering them, so a link into another page is checked as far as that page
    exists; the full `check` checks its #fragment. Returns how many links were checked."""
    env = make_environment(root, None)
    common = shared_context(content, index, site, site_info)
    files, origin, bundles = {}, {}, set()
    for page in site.pages:
        path = f"{page['slug']}.html"
        html = page_html(env, page, common).decode()
        bundles.add(bundle_path(page_scripts(html)))
        files[path], origin[path] = insert_scripts(html, "").encode(), page["file"]
    produced = ({f"{slug}.html" for slug in content.pages} | {"index.html", "references.json", "static/pygments.css"}
                | {source_url(f) for f in common["source_files"]} | {rel for rel, _ in shipped_static(root)}
                | bundles | set(play_fragments(env, site.pages)))
    return check_links(files, origin, problems, unread=produced - set(files))
