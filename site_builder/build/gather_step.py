"""The gather step: everything the pages need, read and run with no file written: the content,
the source index, the documented config and the site info, the shape probes, the examples
and training runs, and every page's view model (site_builder/render/pages/).

Content that does not load stops the build here: the rest of it trusts validated content.
What the step reuses: the source index within one process (reused_index, keyed on the files'
bytes), the probe shapes from the cache like an example's result (cached_shapes,
with_declared_shapes), each page's view model from the page cache, and the highlighting
done beside it: with 2+ jobs the package's files, and the test files the pages likely cite,
are highlighted in forked children while the content and the index are read
(highlight_beside).
"""
import os
import re
from pathlib import Path

from site_builder.gather import fingerprint
from site_builder.base.cache import BuildCache, digest
from site_builder.gather.content import load_content
from site_builder.gather.project import load_project
from site_builder.publish import hosting
from site_builder.render.pages.builder import PageBuilder
from site_builder.render.pages.caching import cached_page_key
from site_builder.render.pages.reads import Answers
from site_builder.base.problems import Problem
from site_builder.render.html import Renderer
from site_builder.gather.source_index import build_index, unimportable_test_imports
from site_builder.gather.source_records import SourceError
from site_builder.build.example_plan import (declared_probes, example_requests, page_keys, shared_page_key,
                                           training_readers, training_step)
from site_builder.build.memos import shared_memos


def gather(root: Path, problems: list, cache=None, jobs=1, memos=None, retrain=False, input_digests=None):
    """Everything the pages need, with no file written: content, index, shapes, view models."""
    code_memo = memos.code if memos else {}
    highlighting = highlight_beside(root, code_memo, jobs)
    try:
        return _gather(root, problems, cache, jobs, retrain, input_digests, code_memo, highlighting)
    finally:
        for started in highlighting:
            started.stop()


def notation_problems(content, files=None):
    """A warning per symbol two pages declare for two things (site_builder/render/symbols.py
    notation_clashes), naming both lines; none for a letter site.yaml's `notation_reused` lists.
    With `files`, only the clashes one of these page files is in (check --page)."""
    from site_builder.gather.content import concepts
    from site_builder.render.symbols import notation_clashes
    pages = [(p.file, [s for c in concepts(p) for s in c.get("symbols") or []]) for p in content.pages.values()]
    reused = set(content.site.get("notation_reused") or ())      # letters the project reuses knowingly
    return [Problem(a[0], a[1], f"symbol '{sym}' means \"{a[2]}\" here and \"{b[2]}\" at {b[0]}:{b[1]}",
                    "rename it on one of the two pages, so each symbol has one meaning across the site", warning=True)
            for sym, a, b in notation_clashes(pages)
            if sym not in reused and (files is None or a[0] in files or b[0] in files)]


def _gather(root, problems, cache, jobs, retrain, input_digests, code_memo, highlighting):
    content = load_content(root, problems)
    if any(not p.warning for p in problems):
        return None           # the rest of the pipeline trusts validated content: stop here
    problems.extend(notation_problems(content))
    index = readable_index(root, problems)
    if index is None:
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



def readable_index(root, problems):
    """The source index, or None with the problems that stop a build before any example runs:
    a source file that does not parse, a test file whose imports are not installed."""
    try:
        index = reused_index(root)
    except SourceError as e:
        problems.append(Problem(e.file, e.line, e.message, e.fix))
        return None
    unrunnable = unimportable_test_imports(index)
    problems.extend(Problem(e.file, e.line, e.message, e.fix) for e in unrunnable)
    return None if unrunnable else index

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
                                                  input_digests or fingerprint.input_digests(root), shapes, step)
        identities = {r.ref: store.identity(store.lookup(r.ref)) for r in requests if r.ref not in retrained}
        keys = page_keys(root, content, site_info["shared_key"], identities)
    # A page whose view model is cached needs none of its examples' results.
    answers = Answers(index, root, renderer.code_memo, site_info["uncommitted"])
    stale = [slug for slug in content.pages
             if not ((key := cached_page_key(cache, keys.get(slug), answers)) and cache.has("pages", key))]
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
    site = PageBuilder(root, content, index, renderer, shapes, problems, site_info, cache, results, step,
                       answers).build(keys, jobs, shared_memos(renderer))
    merge_highlighted(test_files, renderer.code_memo, wait=False)     # for the source pages of tests/
    site.example_inputs = list(store.used.values())
    site.examples_cached = sum(1 for _, from_cache in results.values() if from_cache)
    site.examples_run = len(results) - site.examples_cached
    site.documented |= renderer.cited
    return content, index, renderer, site, site_info


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


def imports_of(package: str):
    """A test file that imports the package: its tests can reach the package's code, so the
    "tested by" lists and snippets of the pages may cite it and its source page may be made."""
    return re.compile(rf"^\s*(?:from|import)\s+{re.escape(package)}\b", re.M)


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


def documented_config(root: Path):
    """(the config the site documents, what the landing page says of it): the hook
    `documented_config`; without it the first of `configs` at its defaults; (None, "") without
    configs (the pages then show no size table and no parameter table)."""
    from site_builder.gather.project import SITE_FILE, ProjectError, call_hook, check_names, hook, resolve
    project = load_project(root)
    check_names(project)            # every name the block gives is there, before anything runs
    if hook(root, project, "documented_config") is not None:
        return call_hook(root, project, "documented_config")
    if not project.config:
        return None, ""
    try:
        return resolve(project.config.class_name, project, "configs[0].class")(), ""
    except TypeError as e:               # a field with no default: the project must say its value
        raise ProjectError([Problem(SITE_FILE, project.lines.get("configs", 1), f"project.configs[0], {project.config.class_name}, "
                                    f"cannot be made at its defaults: {e}", "give its fields defaults, or define the "
                                    f"hook documented_config() in {project.hooks or 'a hooks file'} returning (config, words)")])


def default_config(root: Path):
    """The config the site documents (documented_config, without its words)."""
    return documented_config(root)[0]


def site_info_for(root: Path, content, cfg, config_note: str = "") -> dict:
    """What every page says of where it was built: the repository, the commit and the files
    that differ from it (their GitHub links would show other lines), and the config (with what
    the landing page says of it after its fields)."""
    commit = fingerprint.head_commit(root)
    return dict(repo_url=str(content.site.get("repo_url", "")).rstrip("/"), branch=content.site.get("branch", "main"),
                site_url=hosting.site_url(content.site), commit=commit,
                uncommitted=fingerprint.uncommitted_files(root) if commit else frozenset(), config=cfg,
                config_note=config_note)


def quotation_sources(content):
    """What {{quote KEY | ...}} may name: site.yaml's papers and sources."""
    return dict(papers=content.site.get("papers") or {}, sources=content.site.get("sources") or {})


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
    shapes = recorded(root, store, f"shape probes at {cfg!r} for the project block {project.key}", probe,
                      root / "site_builder" / "run" / "shapes.py")
    return shapes if shapes is not None else infer_shapes(root, project, cfg)


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
    found = recorded(root, store, f"declared shape probes {key} at {cfg!r} for the project block {project.key}", run,
                     root / "site_builder" / "run" / "declared_probes.py")
    table, errors = found if found is not None else infer_declared(declared, project, cfg)
    return shapes.with_declared(table, errors)
