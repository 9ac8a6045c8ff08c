"""The check-and-write step: the link check and the strict checks over the rendered files;
then, only if nothing fails, the site written atomically with its search index and its font
subsets, and the stamp of what it was built from (site_builder/gather/fingerprint.py).

Pagefind indexes the written pages (search_index, cached on their bytes). Under `serve`
(defer_search) the new site goes live with the previous search bundle, and the result's
finish() indexes it afresh and swaps the new bundle in (refresh_search).
"""
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from site_builder import COMMAND
from site_builder.gather import fingerprint
from site_builder.base.cache import digest
from site_builder.render.links import check_links
from site_builder.base.problems import Problem, BuildFailed
from site_builder.publish.write import write_site, output_lock


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


def _check_and_write(root, out, strict, problems, files, origin, fonts, index, site, cache, memos, cache_dir,
                     start_key, defer_search, t0, mounted=None):
    """The rest of build: check links, fail or write the site with its search index and the
    font subsets, record the stamp."""
    check_links(files, origin, problems, mounted=mounted, cache=cache)
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


def strict_checks(index, site, problems):
    for qualname in index.public_functions():
        if index.function(qualname).kind != "function":    # top-level functions; methods ride with their class
            continue
        if qualname not in site.documented:
            f = index.function(qualname)
            problems.append(uncited(f, qualname))


def uncited(f, qualname) -> Problem:
    return Problem(f.file, f.start, f"public function {qualname} is cited by no page",
                   f"document it on a page ({COMMAND} new-concept {qualname} --page PAGE writes its section), "
                   "or make it private with a leading underscore", strict=True)


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


def stamp_inputs(root: Path, example_inputs):
    """What the stamp must check besides the input folders: the files examples read outside
    them ({relative: sha256 as read}), and every package this build or its examples loaded."""
    from site_builder.gather.inputs import loaded_packages
    extra, packages, dirs = {}, set(loaded_packages(root)), fingerprint.input_dirs(root)
    for inputs in example_inputs:
        extra.update((rel, sha) for rel, sha in inputs.files if fingerprint.outside_input_dirs(rel, dirs))
        packages.update(inputs.packages)
    return extra, sorted(packages)
