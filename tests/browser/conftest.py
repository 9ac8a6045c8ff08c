"""Browser tests: pytest-playwright driving Debian's Chromium (/usr/bin/chromium), never a
browser Playwright downloads itself.

The site is the session's one build (`built_site` of tests/conftest.py), served over HTTP on
127.0.0.1 by the standard library's server under the sub-path GitHub Pages serves it at
(http://127.0.0.1:PORT/transformer-by-hand/, tests/hosted.py), so every test here also checks
that the site works there. Not `site_builder.serve.server`: that server injects its live-reload
script, whose long-poll a navigating page cancels, and a cancelled request is what these tests
look for. One browser serves the whole session (pytest-playwright's `browser`).

Where Chromium (or Playwright) is missing, every test here is skipped with the reason; under
CI=true it fails instead, so CI cannot pass without having run them.
"""
import importlib.util
import os
import re
import urllib.parse
from pathlib import Path

import pytest

from tests import hosted
from tests.hosted import QuietHandler  # noqa: F401 (tests/browser/test_math_drawing.py serves its folders with it)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HERE = Path(__file__).resolve().parent


def unavailable():
    """Why the browser tests cannot run here, or None."""
    for module, package in (("playwright", "playwright"), ("pytest_playwright", "pytest-playwright"),
                            ("axe_playwright_python", "axe-playwright-python")):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed (pip install -e '.[test]')"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (Debian: apt-get install -y chromium)"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before any fixture: a missing plugin would otherwise be a "fixture not found" error.
    if HERE not in Path(str(item.fspath)).resolve().parents:
        return
    reason = unavailable()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests cannot run under CI=true: {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch options, pointed at Debian's Chromium."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


class ModuleTab:
    """One tab for a module's tests (the `page` fixture), opened when a test first asks. A new
    tab costs Chromium about 0.8 s of CPU more than a navigation in an open one (a new renderer
    process: 8 loads of block.html took 9.0-10.7 s of CPU in new tabs or contexts, 3.8 s in one
    tab, 2026-12-07). Listeners a test adds with page.on stay on the tab: they must only record."""

    def __init__(self, browser, context_args):
        self.browser, self.context_args, self.context, self.tab = browser, context_args, None, None
        self.origins = set()            # the http origins the tab has shown since its last reset

    def open(self):
        if self.tab is None or self.tab.is_closed():
            self.close()
            self.context = self.browser.new_context(**self.context_args)
            self.tab = self.context.new_page()
            self.tab.on("framenavigated", self._visited)
        return self.tab

    def _visited(self, frame):
        if frame.parent_frame is None and frame.url.startswith("http"):
            self.origins.add(urllib.parse.urlsplit(frame.url)[:2])

    def reset(self):
        """Undo what a test may have changed: other tabs it opened, offline mode, cookies,
        permissions, routes, what the site stores (the theme choice), the document, the
        viewport, emulated media. A tab that showed more than one origin (whose storage a
        script on one cannot clear), or that cannot be reset (closed, crashed), is closed with
        its context, and the next test gets a new one."""
        tab, context = self.tab, self.context
        origins, self.origins = self.origins, set()
        if len(origins) > 1:
            self.close()
            return
        try:
            for other in context.pages:
                if other is not tab:
                    other.close()
            context.set_offline(False)
            context.clear_cookies()
            context.clear_permissions()
            tab.unroute_all()
            tab.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }")
            tab.goto("about:blank")
            tab.set_viewport_size(self.context_args.get("viewport") or {"width": 1280, "height": 720})
            tab.emulate_media(media="null", color_scheme="null")
        except Exception:
            self.close()

    def close(self):
        if self.context is not None:
            try:
                self.context.close()
            except Exception:       # the browser is gone already: nothing to close
                pass
        self.context = self.tab = None


@pytest.fixture(scope="module")
def module_tab(browser, browser_context_args):
    tabs = ModuleTab(browser, browser_context_args)
    yield tabs
    tabs.close()


@pytest.fixture
def page(request, module_tab):
    """pytest-playwright's `page`, as the module's tab (ModuleTab), reset after each test. A test
    that adds what no reset removes (an init script) takes `own_page`, and so does one marked
    with browser_context_args."""
    if next(request.node.iter_markers("browser_context_args"), None):
        yield request.getfixturevalue("own_page")
        return
    yield module_tab.open()
    module_tab.reset()


@pytest.fixture
def own_page(new_context):
    """A tab in a context of its own, closed after the test (pytest-playwright's `page`)."""
    return new_context().new_page()


@pytest.fixture(scope="session")
def site_path():
    """The sub-path the site is served at here, as on GitHub Pages: /transformer-by-hand/."""
    return hosted.site_path()


@pytest.fixture(scope="session")
def site_url(built_site, site_path):
    """http://127.0.0.1:<port>/transformer-by-hand/ serving the session's build."""
    with hosted.served_under(built_site, site_path) as url:
        yield url


@pytest.fixture(scope="session")
def site_pages(built_site):
    """Every HTML page of the build, as paths relative to the site root, index first."""
    pages = sorted(p.relative_to(built_site).as_posix() for p in built_site.rglob("*.html"))
    return sorted(pages, key=lambda p: (p != "index.html", p.startswith("source/"), p))


@pytest.fixture(scope="session")
def pages_with(built_site, site_pages):
    """pages_with('class="stepper"') -> the pages whose HTML contains that text."""
    def find(needle):
        return [p for p in site_pages if needle in (built_site / p).read_text(encoding="utf-8")]
    return find


def concept_of(built_site, function):
    """(page, concept id) of the concept documenting `function` (a qualname), or None."""
    pattern = re.compile(r'<section class="concept" id="([^"]+)" data-function="' + re.escape(function) + '"')
    for path in sorted(built_site.glob("*.html")):
        m = pattern.search(path.read_text(encoding="utf-8"))
        if m:
            return path.name, m.group(1)
    return None
