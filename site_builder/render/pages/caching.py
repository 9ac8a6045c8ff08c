"""Every page's view model in navigation order, each from the page cache where it can be.

A page whose key (build/example_plan.py page_keys: its file, what every page shares, its
examples' results) and whose answers from the source index (reads.py: stored under that key,
asked again) are cached is not gathered again: its view model and everything it added to
the site (references, cited lines, problems) come back with it. A page with an error is not
cached, so the next build reports it again.

With more than one job, the pages to gather are shared out by the size of their text, one
share gathered here and each other in a forked child (site_builder/base/parallel.py); the
children send back their parts and what they added to the memos, and the parts are merged
in navigation order, so the site is the same bytes with one job or several. Not when a shape
probe failed or a declared probe could not run: that is reported once per build, and each
process would report it.

A mixin of PageBuilder (builder.py): it reads the builder's content, cache, shapes, probe
failures, problems and renderer, and calls its build_page, merge and call_map.
"""
from site_builder.base.parallel import share_out
from site_builder.base.problems import Problem
from site_builder.base.cache import canonical, digest

READ_SETS_KEPT = 4        # per page key: an edit and its revert both find their page


def read_key(key: str, reads: dict) -> str:
    """The page cache's key: the page's key known before gathering, and what it read."""
    return digest(key, sorted((canonical(q), d) for q, d in reads.items()))


def cached_page_key(cache, key, answers):
    """The page cache's key of the page whose key before gathering is `key`, if one of the read
    sets stored under it still holds against the current index (`answers`), else None."""
    if not key or cache is None:
        return None
    for reads in cache.get("page-reads", key) or ():
        if answers.still(reads):
            return read_key(key, reads)
    return None


def remember_reads(cache, key, reads: dict) -> str:
    """Store what a page read under its key before gathering; -> its page cache key."""
    kept = [r for r in cache.get("page-reads", key) or () if r != reads][:READ_SETS_KEPT - 1]
    cache.put("page-reads", key, [reads] + kept)
    return read_key(key, reads)


class PageCache:
    """PageBuilder's build: every page, from the cache or gathered, here or in children."""

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
            key = cached_page_key(self.cache, (page_keys or {}).get(slug), self.answers)
            cached[slug] = self.cache.get("pages", key) if key else None
        built = self.build_shared([s for s in slugs if cached[s] is None], slugs, jobs, memos)
        for i, slug in enumerate(slugs):
            key = (page_keys or {}).get(slug)
            part = cached[slug]
            if part is None:
                part = built[slug] if slug in built else self.build_page(slug, i, slugs)
                part.pages[0]["key"] = None
                if key and self.cache and not any(not p.warning and not p.strict for p in part.problems):
                    part.pages[0]["key"] = remember_reads(self.cache, key, part.reads)
                    self.cache.put("pages", part.pages[0]["key"], part)
            else:
                part.pages[0]["from_cache"] = True
            self.merge(part)
        if self.probe_failures and not self.probe_failures_reported:
            # No page needed the failed probe's shapes; the package is broken all the same.
            for f in self.probe_failures:
                self.problems.append(Problem(f.file or "site_builder/run/shapes.py", f.line or 1, f.describe(),
                                             "fix the package's code that raised; the build runs it to find the shapes"))
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
