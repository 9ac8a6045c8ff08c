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
"""
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import jinja2

from site_builder import COMMAND
from site_builder.gather import fingerprint
from site_builder.run import training_run
from site_builder.base.cache import BuildCache, digest
from site_builder.gather.content import load_content, concepts
from site_builder.gather.project import ProjectError, load_project
from site_builder.publish.fontsubset import MathFontSubsets, page_math, remember_pages
from site_builder.publish.assets import (bundle_path, insert_scripts, minify, page_scripts, prune_token_rules,
                                 script_bundles, used_token_classes)
from site_builder.publish import hosting
from site_builder.render import links
from site_builder.render.links import check_links
from site_builder.render.pages import PageBuilder
from site_builder.base.problems import Problem, BuildFailed, did_you_mean
from site_builder.render.html import Renderer, make_environment, pygments_css, source_rows, source_url
from site_builder.gather.source_index import build_index
from site_builder.gather.source_records import SourceError
from site_builder.publish.write import write_site, output_lock

SHIPPED_STATIC = ("site.css",)
SHIPPED_FONTS = ("vendor/latinmodern-math/",)


@dataclass
class BuildResult:
    pages: int
    source_pages: int
    references: int
    examples_run: int
    examples_cached: int
    seconds: float
    warnings: list
    pages_cached: int = 0
    finish: object = None      # with defer_search: call it to bring the search index up to date

    def summary(self):
        return (f"built {self.pages} pages ({self.pages_cached} from cache) and {self.source_pages} source pages, "
                f"{self.references} references, {self.examples_run} examples run ({self.examples_cached} from cache) "
                f"in {self.seconds:.2f} s")


def site_info_for(root: Path, content, cfg, config_note: str = "") -> dict:
    """What every page says of where it was built: the repository, the commit and the files
    that differ from it (their GitHub links would show other lines), and the config (with what
    the landing page says of it after its fields)."""
    commit = fingerprint.head_commit(root)
    return dict(repo_url=str(content.site.get("repo_url", "")).rstrip("/"), branch=content.site.get("branch", "main"),
                site_url=hosting.site_url(content.site), commit=commit,
                uncommitted=fingerprint.uncommitted_files(root) if commit else frozenset(), config=cfg,
                config_note=config_note)


def documented_config(root: Path):
    """(the config the site documents, what the landing page says of it): the hook
    `documented_config`; without it the first of `configs` at its defaults; (None, "") without
    configs (the pages then show no size table and no parameter table)."""
    from site_builder.gather.project import SITE_FILE, ProjectError, call_hook, hook, resolve
    project = load_project(root)
    if hook(root, project, "documented_config") is not None:
        return call_hook(root, project, "documented_config")
    if not project.config:
        return None, ""
    try:
        return resolve(project.config.class_name)(), ""
    except TypeError as e:               # a field with no default: the project must say its value
        raise ProjectError([Problem(SITE_FILE, project.lines.get("configs", 1), f"project.configs[0], {project.config.class_name}, "
                                    f"cannot be made at its defaults: {e}", "give its fields defaults, or define the "
                                    f"hook documented_config() in {project.hooks or 'a hooks file'} returning (config, words)")])


def default_config(root: Path):
    """The config the site documents (documented_config, without its words)."""
    return documented_config(root)[0]


def shipped_static(root: Path):
    """[(shipped path, file)] of the static files shipped as they are (minified)."""
    static = root / "static"
    shipped = []
    for entry in SHIPPED_STATIC + SHIPPED_FONTS:
        base = static / entry
        paths = sorted(p for p in base.rglob("*") if p.is_file()) if entry.endswith("/") else [base]
        shipped += [("static/" + p.relative_to(static).as_posix(), p) for p in paths]
    return shipped


def static_files(root: Path, token_classes: set, bundles=()):
    """The shipped static files, minified; pygments.css only for the token classes in use; the
    scripts as the bundles the pages load (site_builder/publish/assets.py)."""
    files = {}
    for rel, p in shipped_static(root):
        files[rel] = minify(rel, p.read_bytes())
    files["static/pygments.css"] = minify(".css", prune_token_rules(pygments_css(), token_classes).encode())
    files.update(script_bundles(root / "static" / "js", bundles))
    return files


def _train_and_hand_back(run):
    """In a child: train (or read from the cache) one run, and hand it back to the build.
    Only what this child changed: the child may have been forked before the build adopted
    the other run, and must not hand back the copy it inherited (under --retrain, the old one)."""
    before = training_run.held_runs()
    run()
    return {kind: held for kind, held in training_run.held_runs().items() if before.get(kind) is not held}


def training_readers(root: Path, refs) -> set:
    """The examples among refs whose modules can read a training run: they import
    site_builder/run/training_run.py, or the hooks that import it."""
    from site_builder.run.example_runner import static_inputs
    run_file = root / "site_builder" / "run" / "training_run.py"
    modules = {ref.partition(":")[0] for ref in refs}
    readers = {m for m in modules if run_file in static_inputs(root, root / "content" / "examples" / f"{m}.py")}
    return {r for r in refs if r.partition(":")[0] in readers}


def training_step(root: Path, refs):
    """The training runs (the hook `training_runs`) as a SharedStep of the examples that read
    them: each trains in a child beside the examples that do not read them, and is handed back
    to this process."""
    from site_builder.run.example_runner import SharedStep
    runs = {kind: functools.partial(_train_and_hand_back, functools.partial(train, root))
            for kind, (_, train) in training_run.training_runs(root).items()}
    return SharedStep(runs=runs, needed_by=functools.partial(training_readers, root, refs), adopt=training_run.adopt)


def example_requests(root, content, slugs=None):
    """Every example the pages run (or the pages `slugs` run), as Requests. An example whose
    choices name a parameter its function does not take runs nothing: the page says so once."""
    from site_builder.run.example_runner import Request, DEFAULT_TIMEOUT
    from site_builder.gather.playground import call_ref, combinations, parameters_missing
    shown = [Request(call_ref(e["run"], combo), page.file, e.line_of("run"), float(e.get("timeout") or DEFAULT_TIMEOUT))
             for slug, page in content.pages.items() if slugs is None or slug in slugs
             for c in concepts(page) for e in c.get("examples") or []
             if not parameters_missing(root, e["run"], list(e.get("choices") or {}))
             for combo in combinations(e.get("choices"))]
    sizing = [Request(str(b["config"]), page.file, b.line_of("config"))
              for slug, page in content.pages.items() if slugs is None or slug in slugs
              for c in concepts(page) for b in c.get("shapes") or [] if isinstance(b, dict) and b.get("config")]
    extra = {r.ref: r for r in value_requests(content, slugs) + sizing if r.ref not in {s.ref for s in shown}}
    return shown + list(extra.values())


def value_requests(content, slugs=None):
    """The examples whose data a page's prose computes values from ({{module:function.key}}),
    one Request each, at the first line that asks. Found in the page's text, so the page's
    key (its file and the keys of these results) sees them."""
    from site_builder.run.example_runner import Request
    from site_builder.gather.prose import VALUE_RE
    out = {}
    for slug, page in content.pages.items():
        if slugs is not None and slug not in slugs:
            continue
        text = page.text or ""
        for m in VALUE_RE.finditer(text):
            out.setdefault((slug, m.group(1)), Request(m.group(1), page.file, text.count("\n", 0, m.start()) + 1))
    return list(out.values())


def shared_page_key(root: Path, content, index, site_info, input_digests):
    """What every page is made from: every input of the build (fingerprint.input_digests) but
    the pages and examples themselves, every page's title, summary and concept functions
    (navigation and cross-page links), the commit and the config."""
    own = ("content/pages/", "content/examples/")
    return digest(
        [(rel, sha) for rel, sha in input_digests if not rel.startswith(own)], sorted((f, "\n".join(lines)) for f, lines in index.files.items()),
        [(slug, str(p.meta.get("title")), str(p.meta.get("summary")),
          [str(c.get("function")) + ":" + str(c.get("id")) for c in concepts(p)]) for slug, p in content.pages.items()],
        sorted(declared_probes(content).items()),     # a page's probe gives shapes to other pages' functions
        site_info["commit"], sorted(site_info["uncommitted"] & set(index.files)), repr(site_info["config"]))


def page_keys(root: Path, content, shared: str, identities: dict, slugs=None):
    """{slug: key}: the shared key, the page's file and the keys of the valid results of the
    examples it shows; None for a page one of whose examples has no valid result."""
    keys = {}
    for slug, page in content.pages.items():
        if slugs is not None and slug not in slugs:
            continue
        shown = [identities.get(r.ref) for r in example_requests(root, content, [slug])]
        keys[slug] = None if None in shown else digest(shared, (root / page.file).read_bytes(), shown)
    return keys


_INDEX_MEMO = {}


def reused_index(root: Path):
    """The source index, built again only when a file it reads changed. Within one process
    (serve) an edit to content reuses it; `serve` re-imports this module after a code edit.

    The key is the files' repository-relative paths and bytes, not where the repository is:
    build_index reads nothing else and the index keeps no path but its unused `root`, so two
    trees with the same package and tests share one. The test session builds many small
    repositories whose package and tests link to this one's: each used to parse and analyse
    them again (0.75 s of CPU a build). The folders are the project block's (gather/project.py)."""
    project = load_project(root)
    files = sorted(p for d in project.code_folders for p in (root / d).rglob("*.py") if "__pycache__" not in p.parts)
    key = digest(project.code_folders, project.tests, [(p.relative_to(root).as_posix(), p.read_bytes()) for p in files])
    if key not in _INDEX_MEMO:
        _INDEX_MEMO.clear()
        _INDEX_MEMO[key] = build_index(root)
    return _INDEX_MEMO[key]


def cached_shapes(root: Path, cfg, store):
    """The probe runs (site_builder/run/shapes.py) at the documented config `cfg`, in a child
    with their inputs recorded and cached like an example's: the package, the hooks that name
    the probes, the builder's code, and the packages they load. A run in which a probe failed
    is not cached; if the child itself fails, the probes run here."""
    from site_builder.gather.project import load_project
    from site_builder.run.example_runner import recorded
    from site_builder.run.shapes import infer_shapes
    project = load_project(root)

    def probe():
        table = infer_shapes(root, project, cfg)
        return table, not table.failures
    shapes = recorded(root, store, f"shape probes at {cfg!r}", probe,
                      root / "site_builder" / "run" / "shapes.py")
    return shapes if shapes is not None else infer_shapes(root, project, cfg)


def declared_probes(content):
    """{qualname: {parameter: shape}} of every `probe:` a concept declares."""
    return {str(c["function"]): {str(k): str(v) for k, v in c["probe"].items()}
            for page in content.pages.values() for c in concepts(page) if isinstance(c.get("probe"), dict)}


def with_declared_shapes(root: Path, cfg, store, shapes, content):
    """The probe shapes plus those of the probes concepts declare (for functions no probe
    entry point reaches), run in a child and cached on the declarations like the probes.
    The probe entry points win where both reach a function."""
    from site_builder.gather.project import load_project
    from site_builder.run.declared_probes import infer_declared
    from site_builder.run.example_runner import recorded
    declared = declared_probes(content)
    if not declared:
        return shapes
    key = digest(sorted(declared.items()))
    project = load_project(root)

    def run():
        return infer_declared(declared, project, cfg), True
    found = recorded(root, store, f"declared shape probes {key} at {cfg!r}", run,
                     root / "site_builder" / "run" / "declared_probes.py")
    table, errors = found if found is not None else infer_declared(declared, project, cfg)
    return shapes.with_declared(table, errors)


class Memos:
    """The render memos (KaTeX output, highlighted files) loaded from the cache for one build
    and saved back only if the build added to them. They are module dicts, kept for the
    process: a second build in it (serve, the tests) reuses what the first computed, with or
    without a cache (each entry is keyed on everything its value depends on)."""

    def __init__(self, cache):
        import pygments
        import yaml
        from site_builder.gather import content
        from site_builder.render import mathrender
        from site_builder.run import examples
        self.cache, self.content = cache, content
        # name -> (the module dict it fills, what its entries depend on besides their key)
        self.memos = dict(math=(mathrender.MEMO, mathrender.KATEX_VERSION_KEY()),
                          imports=(examples.IMPORTS_MEMO, Path(examples.__file__).read_bytes()),
                          yaml=(content.YAML_MEMO, (yaml.__version__, Path(content.__file__).read_bytes())))
        self.keys = {name: digest(name, depends) for name, (_, depends) in self.memos.items()}
        self.keys["code"] = digest("pygments", pygments.__version__)
        from site_builder.render.html import CODE_MEMO
        CODE_MEMO.update(cache.table("memo", self.keys["code"]) if cache else {})
        self.code = CODE_MEMO
        for name, (memo, _) in self.memos.items():
            memo.update(cache.table("memo", self.keys[name]) if cache else {})
        self.sizes = self.current_sizes()
        content.YAML_USED.clear()

    def current_sizes(self):
        return [len(memo) for memo, _ in self.memos.values()] + [len(self.code)]

    def save(self):
        if self.cache and self.current_sizes() != self.sizes:
            for name, (memo, _) in self.memos.items():
                keep = dict(memo) if name != "yaml" else {k: v for k, v in memo.items() if k in self.content.YAML_USED}
                self.cache.put("memo", self.keys[name], keep)
            self.cache.put("memo", self.keys["code"], self.code)


def shared_memos(renderer):
    """The in-memory memos the pages fill, which a forked child sends back (KaTeX's output,
    highlighted files, import lists, parsed YAML and the YAML keys a build used)."""
    from site_builder.gather import content
    from site_builder.render import mathrender
    from site_builder.run import examples
    return [renderer.code_memo, mathrender.MEMO, examples.IMPORTS_MEMO, content.YAML_MEMO, content.YAML_USED]


def gather(root: Path, problems: list, cache=None, jobs=1, memos=None, retrain=False, input_digests=None):
    """Everything the pages need, with no file written: content, index, shapes, view models."""
    code_memo = memos.code if memos else {}
    highlighting = highlight_beside(root, code_memo, jobs)
    try:
        return _gather(root, problems, cache, jobs, retrain, input_digests, code_memo, highlighting)
    finally:
        for started in highlighting:
            started.stop()


def imports_of(package: str):
    """A test file that imports the package: its tests can reach the package's code, so the
    "tested by" lists and snippets of the pages may cite it and its source page may be made."""
    return re.compile(rf"^\s*(?:from|import)\s+{re.escape(package)}\b", re.M)


def highlight_beside(root: Path, memo: dict, jobs):
    """The source files not highlighted yet, highlighted in forked children while the content
    and the source index are read: (package files, test files), two parallel.Started.

    The package (the listings and source pages need it): the pages wait for it. The tests: only
    the source pages of the test files the pages cite need them, and which those are is known
    once the pages are gathered, so the files that import the package are highlighted on a guess
    (measured: 30 of those 37 files were cited, 0.43 s of highlighting that rendering did
    before), in a child of low priority (nice 10) that takes the core this process leaves idle
    while it reads the content and builds the index. It is taken only if it is done when the
    pages are: on a loaded machine it may not be, and waiting for it would make this process
    wait on work done at low priority; it is stopped, and the render highlights what it
    needs as before. A wrong guess costs only that idle core, and the memo is keyed on a
    file's text, so a file read differently would only be highlighted again, never shown
    wrong."""
    from site_builder.base import parallel
    from site_builder.render.html import code_key, highlight_into
    from site_builder.gather.source_records import SourceError
    from site_builder.gather.source_syntax import read_source, source_files, split_lines

    def unhighlighted(package, wanted=lambda text: True):
        todo = []
        for rel in source_files(root, package) if jobs > 1 and (root / package).is_dir() else []:
            try:
                text = read_source(root, rel)
            except (OSError, SourceError):
                continue                # the index reports it
            lines = split_lines(text)
            if wanted(text) and code_key(lines) not in memo:
                todo.append(lines)
        return todo

    def highlight(todo, priority=0):
        if priority:
            os.nice(priority)
        for lines in todo:
            highlight_into(memo, lines)
        return parallel.memo_additions([memo], snapshot)
    project = load_project(root)
    imports = imports_of(project.package)
    package, tests = unhighlighted(project.package), unhighlighted(project.tests, lambda text: imports.search(text))
    snapshot = parallel.memo_snapshot([memo])
    return (parallel.start({"highlight": lambda: highlight(package)} if package else {}),
            parallel.start({"highlight tests": lambda: highlight(tests, 10)} if tests else {}))


def merge_highlighted(started, memo, wait=True):
    """Take what a highlight_beside child highlighted into the memo (a child that failed,
    or with wait=False one still working, is stopped and leaves its files to whoever needs
    them)."""
    from site_builder.base import parallel
    if not wait and not started.sending():
        started.stop()
        return
    for outcome in started.wait():
        if outcome.status == "ok":
            parallel.merge_memos([memo], outcome.value)


def _gather(root, problems, cache, jobs, retrain, input_digests, code_memo, highlighting):
    content = load_content(root, problems)
    if any(not p.warning for p in problems):
        return None           # the rest of the pipeline trusts validated content: stop here
    try:
        index = reused_index(root)
    except SourceError as e:
        problems.append(Problem(e.file, e.line, e.message, e.fix))
        return None
    cfg, config_note = documented_config(root)
    from site_builder.run.example_runner import ExampleStore
    store = ExampleStore(root, cache if cache is not None else BuildCache(None))
    shapes = with_declared_shapes(root, cfg, store, cached_shapes(root, cfg, store), content)
    from site_builder.run.call_map import step_calls
    step = step_calls(root, store)
    site_info = site_info_for(root, content, cfg, config_note)
    renderer = Renderer(root, index, problems, code_memo)
    renderer.sources = quotation_sources(content)
    return _gather_pages(root, problems, cache, jobs, retrain, input_digests, content, index, store, shapes,
                         site_info, renderer, highlighting, step)


def _gather_pages(root, problems, cache, jobs, retrain, input_digests, content, index, store, shapes, site_info,
                  renderer, highlighting, step):
    """gather, once the content, index, shapes and the traced step (the landing page's map)
    are there: the examples and the pages."""
    from site_builder.run.example_runner import run_examples
    requests = example_requests(root, content)
    # --retrain: the runs train again, and every example that reads them runs again.
    retrained = training_readers(root, {r.ref for r in requests}) if retrain else set()
    keys, identities = {}, {}
    if cache is not None and cache.folder is not None:
        site_info["shared_key"] = shared_page_key(root, content, index, site_info,
                                                  input_digests or fingerprint.input_digests(root))
        identities = {r.ref: store.lookup(r.ref) for r in requests if r.ref not in retrained}
        keys = page_keys(root, content, site_info["shared_key"], identities)
    # A page whose view model is cached needs none of its examples' results.
    stale = [slug for slug in content.pages if not (keys.get(slug) and cache.has("pages", keys[slug]))]
    stale_requests = example_requests(root, content, stale)
    outcomes = run_examples(root, stale_requests, problems, store, jobs, rerun=retrained,
                            shared=training_step(root, {r.ref for r in stale_requests}))
    if keys:                    # pages whose examples just ran are keyed on their new results
        identities.update({ref: key for ref, key in outcomes.identities.items() if ref not in retrained})
        keys.update(page_keys(root, content, site_info["shared_key"], identities, stale))
    results = outcomes.results
    # The highlighted package files before the pages (their listings read them): the child
    # has had the content, the index and the examples' look-ups to do it in.
    package_files, test_files = highlighting
    merge_highlighted(package_files, renderer.code_memo)
    site = PageBuilder(root, content, index, renderer, shapes, problems, site_info, cache, results, step).build(
        keys, jobs, shared_memos(renderer))
    merge_highlighted(test_files, renderer.code_memo, wait=False)     # for the source pages of tests/
    site.example_inputs = list(store.used.values())
    site.examples_cached = sum(1 for _, from_cache in results.values() if from_cache)
    site.examples_run = len(results) - site.examples_cached
    site.documented |= renderer.cited
    return content, index, renderer, site, site_info


def shared_context(content, index, site, site_info):
    """What every page's template is given: the site, the navigation, the source files shipped."""
    commit = site_info["commit"]
    changed = sorted(site_info["uncommitted"] & set(index.files))
    built_from = (f"Built outside a git checkout: no commit to cite, so the GitHub links point at the branch "
                  f"{site_info['branch']}, which may have moved on" if not commit else f"Built from commit {commit[:12]}"
                  + (f", with uncommitted changes to {', '.join(changed[:3])}" if changed else "")
                  + (f" and {len(changed) - 3} more files" if len(changed) > 3 else ""))
    source_files = sorted(f for f in index.files if f.startswith(index.package + "/")) + sorted(site.cited_files)
    nav = [dict(slug=p["slug"], title=p["title"], summary=p["summary"]) for p in site.pages]
    return dict(site=dict(title=content.site.get("title", "Documentation"), description=content.site.get("description", ""),
                          labels=content.labels, url=site_info["site_url"]),
                nav=nav, source_files=source_files, built_from=built_from,
                github_branch=None if commit else site_info["branch"])     # templates/partials/macros.html


def page_html(env, page, common) -> bytes:
    """A content page as rendered, before its script tag is put in (insert_scripts)."""
    titles = {p["slug"]: p["title"] for p in common["nav"]}
    return env.get_template("page.html").render(
        page=page, title=page["title"], description=page["summary"], root="", current=page["slug"],
        url=hosting.page_url(common["site"]["url"], f"{page['slug']}.html"),
        prev_href=f"{page['prev']}.html" if page["prev"] else "index.html",
        prev_title=titles.get(page["prev"], "Overview"),
        next_href=f"{page['next']}.html" if page["next"] else None, next_title=titles.get(page["next"]),
        **common).encode()


def render_all(root, content, index, renderer, site, site_info, cache=None, background=False):
    """-> ({relative path: bytes}, {relative path: content file it came from}, the math-font
    subsets: MathFontSubsets, whose result() replaces the full fonts in the first dict; with
    background=True they are made in a child meanwhile)."""
    jinja_dir = cache.folder / "jinja" if cache and cache.folder else None
    if jinja_dir:
        jinja_dir.mkdir(parents=True, exist_ok=True)
    env = make_environment(root, jinja_dir)
    commit = site_info["commit"]
    common = shared_context(content, index, site, site_info)
    source_files, nav = common["source_files"], common["nav"]
    files, origin, todo = {}, {}, {}     # todo: {path: (render it, cache key, cost)}

    def render_page(page):
        return page_html(env, page, common)

    def render_source(f):
        depth = f.count("/") + 1
        lines = renderer.highlighted_lines(f)
        cited = {n: cites for n, cites in cites_by_file.get(f, ()) if cites}
        github = f"{site_info['repo_url']}/blob/{commit or site_info['branch']}/{f}"
        return env.get_template("source.html").render(
            file=f, rows=source_rows(lines, cited, "../" * depth), line_count=len(lines), commit=commit, github=github,
            uncommitted=f in site_info["uncommitted"], branch=site_info["branch"],
            cited_count=sum(1 for n in cited if n <= len(lines)), title=f, description=f"Source of {f}",
            root="../" * depth, current="source:" + f, url=hosting.page_url(common["site"]["url"], source_url(f)),
            prev_href=None, next_href=None, **common).encode()

    for page in site.pages:
        path = f"{page['slug']}.html"
        origin[path] = page["file"]
        html_key = digest(page["key"], source_files) if page.get("key") else None
        cached = cache.get("html", html_key) if cache and html_key else None
        if cached is not None:
            files[path] = cached
        else:
            files[path] = None          # the order of the pages, rendered below
            todo[path] = (functools.partial(render_page, page), html_key, (root / page["file"]).stat().st_size)
    cites_by_file = {}
    for (f, n), cites in sorted(site.cited.items()):
        cites_by_file.setdefault(f, []).append((n, cites))
    for f in source_files:
        # A source page is made of its file, the lines pages cite, and what every page shares.
        source_key = digest(site_info["shared_key"], f, source_files, repr(cites_by_file.get(f))) \
            if cache and site_info.get("shared_key") else None
        cached = cache.get("html", source_key) if source_key else None
        files[source_url(f)] = cached
        if cached is None:
            # in the units of a page's cost (its file's bytes): measured, a line costs about 10
            # to render and 70 more to highlight
            cost = len(index.files[f]) * (10 if renderer.code_key(f) in renderer.code_memo else 80)
            todo[source_url(f)] = (functools.partial(render_source, f), source_key, cost)
    # references.json too (the same units; measured, a reference costs what 8 bytes of a page
    # do with their scans: 50 had put it at a fifth of the render and unbalanced the shares)
    refs = dict(commit=commit, references=site.references)
    files["references.json"] = None
    todo["references.json"] = (lambda: (json.dumps(refs, indent=1, sort_keys=True) + "\n").encode(), None,
                               8 * len(site.references))
    files.update(render_shares(todo, renderer, cache, background))
    project = load_project(root)
    files["index.html"] = env.get_template("index.html").render(
        title="Overview", description=common["site"]["description"], root="", current="index",
        url=hosting.page_url(common["site"]["url"], "index.html"),
        size=landing_size(root, site_info), call_map=site.call_map, package=project.package,
        words=landing_words(project, site.call_map),
        prev_href=None, next_href=f"{nav[0]['slug']}.html" if nav else None,
        next_title=nav[0]["title"] if nav else None, **common).encode()
    origin["index.html"] = "content/site.yaml"
    files.update(play_fragments(env, site.pages))
    files.update(hosting.hosted_files(env, common, files))       # 404.html, sitemap.xml
    origin[hosting.NOT_FOUND] = "templates/404.html"
    html_paths = [p for p in files if p.endswith(".html")]
    bundles = set()
    for path in html_paths:
        html = files[path].decode()
        bundles.add(tuple(page_scripts(html)))
        files[path] = insert_scripts(html, "../" * path.count("/")).encode()
    pages = [files[p] for p in html_paths]
    files.update(static_files(root, used_token_classes(pages), bundles))
    fonts = MathFontSubsets(files, pages, cache, background)
    files["references.json"] = files.pop("references.json")     # last, as it always was
    return files, origin, fonts


def render_shares(todo, renderer, cache, background):
    """{path: bytes} of todo ({path: (render, cache key, cost)}), each stored in the cache
    under its key. With background=True the paths are shared out by cost and one share is
    rendered in a forked child (site_builder/base/parallel.py) while this process renders the
    other; the child sends back its bytes and the files it highlighted."""
    from site_builder.base import parallel
    from site_builder.render.pages import share_out
    paths = list(todo)
    shares = share_out(paths, lambda p: todo[p][2], 2) if background and len(paths) > 1 else [paths]
    snapshot = parallel.memo_snapshot([renderer.code_memo])

    def render_share(share):
        rendered = {p: todo[p][0]() for p in share}
        # What the link check and the font subset read of each page as it will be written
        # (site_builder/render/links.py, fontsubset.py), found here: in a child, beside the other share
        final = {p: insert_scripts(data.decode(), "../" * p.count("/")).encode()
                 for p, data in rendered.items() if p.endswith(".html")}
        scans = ({p: links.scan_final(p, data) for p, data in final.items()},
                 {hashlib.sha256(data).hexdigest(): page_math(data) for data in final.values()})
        return rendered, parallel.memo_additions([renderer.code_memo], snapshot), scans
    out = {}
    with parallel.start({f"render:{len(share)} files": (lambda share=share: render_share(share))
                         for share in shares[1:]}) as children:
        rendered, _, (scans, math) = render_share(shares[0])
        out.update(rendered)
        links.remember_scans(scans)
        remember_pages(math)
        for outcome in children.wait():
            if outcome.status == "ok":       # else rendered here, below
                rendered, additions, (scans, math) = outcome.value
                out.update(rendered)
                parallel.merge_memos([renderer.code_memo], additions)
                links.remember_scans(scans)
                remember_pages(math)
    for p in paths:
        if p not in out:
            out[p] = todo[p][0]()
        if cache and todo[p][1]:
            cache.put("html", todo[p][1], out[p])
    return out


def play_fragments(env, pages):
    """The combinations of every example with choices but the first (which its page shows),
    each a script the page loads when the reader picks it (site_builder/gather/playground.py)."""
    files = {}
    for page in pages:
        for s in page["sections"]:
            for ex in s.get("examples") or [] if s.get("kind") == "concept" else []:
                play = ex.get("play")
                for key, variant in (play["variants"].items() if play else ()):
                    if key == play["default"]:
                        continue
                    body = env.get_template("partials/example_fragment.html").render(
                        ex=dict(id=ex["id"], **variant), root="")
                    files[f"play/{ex['id']}/{key}.js"] = (
                        f"playFragment({json.dumps(ex['id'])}, {json.dumps(key)}, {json.dumps(body.strip())});\n").encode()
    return files


def landing_words(project, call_map) -> dict:
    """The project's words for the landing page (`landing`), as HTML text (quotes stay as they
    are: they need no escaping in a text), the map's caption split around the traced call's
    name: (before, after), its `{source}` said."""
    import html
    from markupsafe import Markup
    text = lambda words: Markup(html.escape(words, quote=False))
    caption = project.landing["map_caption"].replace("{source}", (call_map or {}).get("source", ""))
    before, _, after = caption.partition("{call}")
    return {**{key: text(words) for key, words in project.landing.items()}, "caption": (text(before), text(after))}


def landing_size(root: Path, site_info) -> dict | None:
    """The landing page's size table: the documented config with its fields and what the
    project says of it, its parameters by group (none without groups: the total alone); None
    without a config or an init_params for it."""
    from site_builder.run.examples import config_fields
    from site_builder.run.params import count_by_group
    cfg, note = site_info["config"], site_info.get("config_note")
    if cfg is None:
        return None
    groups = count_by_group(cfg, load_project(root), quiet=True)
    if groups is None:
        return None
    fields = ", ".join(f"{k}={v}" for k, v in config_fields(cfg).items())
    return dict(config=f"{type(cfg).__name__}({fields})" + (f", {note}." if note else "."),
                groups=list(groups.items()) if load_project(root).param_groups else [], total=sum(groups.values()))


def uncited(f, qualname) -> Problem:
    return Problem(f.file, f.start, f"public function {qualname} is cited by no page",
                   f"document it on a page ({COMMAND} new-concept {qualname} --page PAGE writes its section), "
                   "or make it private with a leading underscore", strict=True)


def strict_checks(index, site, problems):
    for qualname in index.public_functions():
        if index.function(qualname).kind != "function":    # top-level functions; methods ride with their class
            continue
        if qualname not in site.documented:
            f = index.function(qualname)
            problems.append(uncited(f, qualname))


def search_index(folder: Path, problems: list, cache=None, bundle_dir: Path = None):
    """Pagefind indexes the written pages (site_builder/publish/search.py) into bundle_dir (by default
    folder/pagefind). A missing binary is a warning (the site works, its search box does
    not); a failing one fails the build. The index is cached on the pages' bytes: unchanged
    pages are not indexed again."""
    from site_builder.publish.search import index_site, SearchUnavailable, SearchIndexError, BUNDLE, options_key
    bundle_dir = bundle_dir or folder / BUNDLE
    pages = sorted(p for p in folder.rglob("*.html") if BUNDLE not in p.relative_to(folder).parts[:1])
    key = digest(options_key(), *[(p.relative_to(folder).as_posix(), p.read_bytes()) for p in pages])
    bundle = cache.get("search", key) if cache else None
    if bundle is not None:
        for rel, data in bundle.items():
            (bundle_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (bundle_dir / rel).write_bytes(data)
        return
    try:
        out = index_site(folder, bundle_dir)
        if cache:
            cache.put("search", key, {p.relative_to(out).as_posix(): p.read_bytes()
                                      for p in sorted(out.rglob("*")) if p.is_file()})
    except SearchUnavailable as e:
        problems.append(Problem("site_builder/publish/search.py", 0, str(e), "install the 'site' extra", warning=True))
    except SearchIndexError as e:
        raise BuildFailed([Problem("site_builder/publish/search.py", 0, str(e), f"run `{COMMAND}` again")])


def carry_search_bundle(out: Path, tmp: Path):
    """Give the new tree the current search bundle (hard links where the file system has
    them: no bytes copied)."""
    from site_builder.publish.search import BUNDLE

    def link_or_copy(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
    shutil.copytree(out / BUNDLE, tmp / BUNDLE, copy_function=link_or_copy)


def refresh_search(out: Path, cache=None):
    """Index the site in `out` again and swap the new bundle in (two renames). Until then the
    bundle carried over from the previous build keeps the search box working."""
    from site_builder.publish.search import BUNDLE
    problems, fresh = [], out.parent / f".{out.name}.search-{os.getpid()}"
    with output_lock(out):
        shutil.rmtree(fresh, ignore_errors=True)
        try:
            search_index(out, problems, cache, bundle_dir=fresh)
            if fresh.is_dir():
                stale = out.parent / f".{out.name}.search-old-{os.getpid()}"
                os.rename(out / BUNDLE, stale)
                os.rename(fresh, out / BUNDLE)
                shutil.rmtree(stale, ignore_errors=True)
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
    return problems


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
                                          background=jobs > 1)
    except (jinja2.TemplateError, OSError) as e:
        raise BuildFailed([rendering_problem(root, e)]) from None
    try:
        return _check_and_write(root, out, strict, problems, files, origin, fonts, index, site, cache, memos,
                                cache_dir, start_key, defer_search, t0, mounted=hosting.mounted(site_info["site_url"]))
    finally:
        fonts.stop()


def rendering_problem(root: Path, e: Exception) -> Problem:
    """One problem line for a template or static file that cannot be rendered or read: the
    template's file:line (Jinja keeps template lines in its tracebacks), else the file."""
    import traceback
    templates = os.path.realpath(root / "templates") + os.sep
    if isinstance(e, jinja2.TemplateNotFound):
        return Problem(f"templates/{e.name}", 0, f"template not found: {e.name}", "restore it (git checkout -- templates)")
    if isinstance(e, OSError):
        rel = os.path.relpath(e.filename, root) if getattr(e, "filename", None) else "static/"
        return Problem(rel, 0, f"cannot read {rel}: {e.strerror}", "restore it (git checkout -- static templates)")
    file, line = getattr(e, "filename", None), getattr(e, "lineno", None)
    if not file:
        for frame in reversed(traceback.extract_tb(e.__traceback__)):
            if os.path.realpath(frame.filename).startswith(templates):
                file, line = frame.filename, frame.lineno
                break
    rel = os.path.relpath(os.path.realpath(file), os.path.realpath(root)) if file else "templates/"
    return Problem(rel, line or 0, f"{type(e).__name__}: {e.message or e}", "fix the template")


def _check_and_write(root, out, strict, problems, files, origin, fonts, index, site, cache, memos, cache_dir,
                     start_key, defer_search, t0, mounted=None):
    """The rest of build: check links, fail or write the site with its search index and the
    font subsets, record the stamp."""
    check_links(files, origin, problems, mounted=mounted)
    strict_checks(index, site, problems)
    failing = [p for p in problems if not p.warning and (strict or not p.strict)]
    if failing:
        raise BuildFailed(failing)
    from site_builder.publish.search import BUNDLE
    deferred = defer_search and (out / BUNDLE).is_dir()
    warnings = [p for p in problems if p.warning or (p.strict and not strict)]
    result = BuildResult(pages=len(site.pages) + 1, source_pages=sum(1 for f in files if f.startswith("source/")),
                         references=len(site.references), examples_run=site.examples_run,
                         examples_cached=site.examples_cached, seconds=0.0,
                         pages_cached=sum(1 for p in site.pages if p.get("from_cache")), warnings=warnings)

    def after_write(tmp, deferred):
        if deferred:
            carry_search_bundle(out, tmp)
        else:
            search_index(tmp, problems, cache)         # Pagefind, while the fonts are subset
        for rel, data in fonts.result().items():
            (tmp / rel).write_bytes(data)

    def stamp():
        if start_key:
            extra, packages = stamp_inputs(root, site.example_inputs)
            fingerprint.record(cache_dir, out, start_key, result.summary(), warnings, extra, packages,
                               fingerprint.input_dirs(root))
    with output_lock(out):
        fingerprint.forget(cache_dir, out)
        write_site(files, out, after_write=lambda tmp: after_write(tmp, deferred))
    memos.save()
    result.seconds = time.perf_counter() - t0
    if deferred:
        def finish():
            found = refresh_search(out, cache)
            stamp()
            return found
        result.finish = finish
    else:
        stamp()
    return result


def stamp_inputs(root: Path, example_inputs):
    """What the stamp must check besides the input folders: the files examples read outside
    them ({relative: sha256 as read}), and every package this build or its examples loaded."""
    from site_builder.gather.inputs import loaded_packages
    extra, packages, dirs = {}, set(loaded_packages(root)), fingerprint.input_dirs(root)
    for inputs in example_inputs:
        extra.update((rel, sha) for rel, sha in inputs.files if fingerprint.outside_input_dirs(rel, dirs))
        packages.update(inputs.packages)
    return extra, sorted(packages)


def quotation_sources(content):
    """What {{quote KEY | ...}} may name: site.yaml's papers and sources."""
    return dict(papers=content.site.get("papers") or {}, sources=content.site.get("sources") or {})


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
    # content that does not load comes first: a page that failed to load is not "no such page"
    if any(not p.warning for p in problems):
        return [p for p in problems if not p.warning], [p for p in problems if p.warning], {}
    unknown = [s for s in slugs if s not in content.pages]
    if unknown and content.pages:
        raise UnknownPages(unknown, list(content.pages))
    try:
        index = reused_index(root)
    except SourceError as e:
        return [Problem(e.file, e.line, e.message, e.fix)], [], {}
    except ProjectError as e:
        return list(e.problems), [], {}
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
    failing = [p for p in problems if not p.warning]
    return failing, [p for p in problems if p.warning], dict(pages=len(slugs), references=len(builder.site.references),
                                                            examples=len(requests), links=links_checked)


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
