"""Stage 6b: the search index. Pagefind reads the finished HTML and writes `pagefind/` beside it.

How: `index_site(folder)` runs the Pagefind binary that the PyPI package `pagefind[bin]`
ships (the `pagefind_bin` module): nothing is downloaded at build time and no Node.js is
needed. It runs on the temporary folder the writer fills, before that folder is swapped into
place (site_builder.publish.write.write_site's `after_write`), so a site is never served without its
index, and a failed indexing leaves the last good site untouched like any failed build.

What gets indexed (the templates decide, with Pagefind's data attributes):
- `<main data-pagefind-body>` of every page: the concept pages and the source pages. The
  sidebar, the header, the table of contents and the footer are left out, and so are the
  duplicated listings of the interactive widgets (`data-pagefind-ignore`).
- Weights: a concept's function name (`data-pagefind-weight="10"`, in the line under
  "What is it?"), equation names (5) and the code names of symbols (3), so a search for a
  function name (`dense_backward`) ranks the concept that documents it above the pages
  that merely call it. Headings with ids become Pagefind sub-results; the search box
  (static/js/search.js) links to the sub-result with the most weighted hits, and a concept's
  "What is it?" heading to the concept itself.
- `data-pagefind-meta="kind:..."` labels each result as a concept page or a source file.
- A concept's page carries the meta `fn-<name>: <concept id>` for the function it documents.
  When the query looks like a function name, the search box lists the results holding that
  meta first, linked to the concept itself. Ranking alone would not promise it: Pagefind
  favours short pages, so a test file that calls a function ten times outscored the long page
  documenting it, and a page that calls it and cites it often can come close. Hence also the
  weights: 10 on the function name, 0.3 on source listings.
- No `data-pagefind-filter`: Pagefind writes its filter files in hash-map order, which changes
  from run to run, and that would break the byte-identical builds. Without filters two runs
  give identical bundles.
- Math is not indexed (`--exclude-selectors .katex`): KaTeX's MathML holds the raw TeX and its
  HTML is glyph soup, both useless in a result and ugly in an excerpt.
- Nor are buttons (an equation's "Copy link" read in excerpts of the text beside it), nor a
  source page's line numbers (`.ln`): indexed, every number up to a file's length
  matched every source page, and an excerpt of a source file read "1. The primitives ... 2. 3. Every".

Trade-offs:
- Underscores are left out of `--include-characters`: Pagefind then indexes
  `dense_backward` both whole and as its parts, so `dense backward` finds it too.
- The bundle Pagefind writes also holds its prebuilt UIs (pagefind-ui.js and friends, about
  400 KB). The site uses a small box of its own on top of `pagefind.js` (themeable with the
  site's CSS, no extra stylesheet, and it keeps working without JavaScript errors from
  file://), so those files are deleted after indexing.
- Determinism: Pagefind's output depends only on the HTML it reads (checked: two runs on the
  same pages give byte-identical bundles, and file names carry content hashes), so two builds
  of one commit stay byte-identical with the index included. `--force-language en` keeps the
  language from being guessed.
- Indexing takes well under a second for this site; it runs on every build, `serve` included.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
from pathlib import Path

from site_builder.base import worker
from site_builder.base.worker import die_with_parent

BUNDLE = "pagefind"
# The prebuilt UIs of the bundle, unused by static/js/search.js.
UNUSED = ("pagefind-ui.js", "pagefind-ui.css", "pagefind-modular-ui.js", "pagefind-modular-ui.css",
          "pagefind-component-ui.js", "pagefind-component-ui.css", "pagefind-highlight.js")
TIMEOUT_SECONDS = 120
# Rendered math: its MathML holds the raw TeX and its HTML is glyph soup ("LN1back"); neither
# helps a search, and both would show in excerpts. Equation names and symbols' code names stay.
# Source pages' line numbers: words of no use that split every excerpt of code. Buttons (an
# equation's "Copy link"): their label is not the page's text, but was in every excerpt near one.
EXCLUDE = (".katex", ".ln", "button")


class SearchUnavailable(Exception):
    """The Pagefind binary is not installed; the site builds without a search index."""


class SearchIndexError(Exception):
    """Pagefind ran and failed."""


def _run_pagefind(cmd, exe):
    """(exit status or "stopped", stdout, stderr) of one Pagefind run. Watched as the build's
    own children are (worker.StopWatch): one stopped from outside is killed at once rather than
    waited for until TIMEOUT_SECONDS. The indexed folder is a temporary one, gone by the time
    anyone reads a message, so no message names it."""
    try:
        # dies with the build: a SIGKILLed build left pagefind running on its temporary folder
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=functools.partial(die_with_parent, os.getpid()))
    except OSError as e:
        raise SearchIndexError(f"could not run {exe}: {e}") from e
    watch, deadline = worker.StopWatch(), time.monotonic() + TIMEOUT_SECONDS
    with proc:
        while True:
            try:
                stdout, stderr = proc.communicate(timeout=0.1)
                return proc.returncode, stdout, stderr
            except subprocess.TimeoutExpired:
                pass
            stopped = watch.stalled(proc.pid)
            if stopped or time.monotonic() > deadline:
                proc.kill()
                proc.communicate()
                if stopped:
                    return "stopped", "", ""
                raise SearchIndexError(f"pagefind took over {TIMEOUT_SECONDS} s indexing the site's pages "
                                       f"and was killed")


def pagefind_executable() -> Path:
    try:
        import pagefind_bin
    except ImportError as e:
        raise SearchUnavailable("the search index was not built: the pagefind binary is missing "
                                "(pip install 'pagefind[bin]', part of the 'site' extra)") from e
    try:
        return Path(pagefind_bin.get_executable())
    except (FileNotFoundError, OSError) as e:
        raise SearchUnavailable(f"the search index was not built: {e}") from e


def options_key():
    """What, besides the pages, decides the bundle: for a build cache's key."""
    try:
        from importlib.metadata import version
        pagefind = version("pagefind_bin")
    except Exception:
        pagefind = "unknown"
    return ("pagefind", pagefind, BUNDLE, EXCLUDE, UNUSED)


def index_site(folder: Path, bundle: Path = None) -> Path:
    """Index the built site in `folder`; returns the bundle folder (`bundle`, by default
    `folder/pagefind`; the bundle holds no path of its own, so it can be written aside and
    moved into place)."""
    folder = Path(folder)
    bundle = Path(bundle) if bundle else folder / BUNDLE
    exe = pagefind_executable()
    cmd = [str(exe), "--site", str(folder), "--output-path", str(bundle.resolve()), "--force-language", "en",
           "--silent"] + [arg for selector in EXCLUDE for arg in ("--exclude-selectors", selector)]
    returncode, stdout, stderr = _run_pagefind(cmd, exe)
    if returncode == "stopped":                 # stopped from outside: once more, in a fresh process,
        shutil.rmtree(bundle, ignore_errors=True)   # on an empty bundle (no file of the killed run stays)
        returncode, stdout, stderr = _run_pagefind(cmd, exe)
    if returncode == "stopped":
        raise SearchIndexError(f"pagefind was stopped from outside (state T for {worker.STOPPED_SECONDS:g} s) "
                               f"twice, and killed each time")
    if returncode != 0 or not (bundle / "pagefind.js").is_file():
        message = (stderr or stdout).strip() or f"exit status {returncode}"
        raise SearchIndexError(f"pagefind failed: {message}")
    for name in UNUSED:
        (bundle / name).unlink(missing_ok=True)
    shutil.rmtree(bundle / "playground", ignore_errors=True)
    return bundle
