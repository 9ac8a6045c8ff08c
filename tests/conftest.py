"""Shared fixtures. The site is built once per test session, into a temporary folder, with the
repository's build cache so the training run and the examples are not recomputed per test."""
import os
import re
import signal
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

# One BLAS thread: the model's matrices are small, and tests and builds share 2 cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
threadpool_limits(1)

# A suite started in the background by a shell without job control inherits SIGINT ignored,
# and so would every child it starts: the Ctrl-C tests' children would never see their Ctrl-C
# (measured: three tests of test_cli_model.py failed so, after 60 s each). A handler here
# becomes the default again in each child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent

from site_builder.gather.project import load_project  # noqa: E402  (after the thread limits)


def project_block(site_yaml=ROOT / "content" / "site.yaml") -> str:
    """The `project:` block of the real site.yaml (what the builder knows of the package,
    site_builder/gather/project.py), for the small repositories the tests make: appended to
    their site.yaml, it documents the real package with the real hooks."""
    lines = site_yaml.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("project:"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in (" ", "#", "\n")), len(lines))
    return "".join(lines[start:end])


PROJECT_BLOCK = project_block()
PROJECT = load_project(ROOT)
PROJECT_FOLDERS = PROJECT.folders      # what PROJECT_BLOCK names: the package, its tests, its inputs

# The second package's own tests run inside a copy of it (tests/second_project.py), where
# `mlp` and their `tests` package are at the root; here they would import neither.
collect_ignore = ["second_package"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a skip is a failure, unless it is declared on the test (`skipif` or
    `skip` with that reason: a machine without node, without /proc, an opt-out variable).
    A test that calls pytest.skip or importorskip ("no page documents X yet", pagefind missing)
    would otherwise pass CI in exactly the case it exists for: the real site is broken."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") != "true" or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    declared = {m.kwargs.get("reason", "") for m in item.iter_markers("skipif")}
    declared |= {m.kwargs.get("reason", m.args[0] if m.args else "") for m in item.iter_markers("skip")}
    if reason in declared:
        return
    report.outcome = "failed"
    report.longrepr = f"skipped under CI=true, where a skip would hide a failure of the real site: {reason}"


SHARED_SITE = "built_site"       # under the folder every xdist worker's temporary folder sits in


def build_shared_site(shared: Path) -> Path:
    """The session's site in shared/site, built once for every process of the run: the first
    to take the lock builds it, the others wait for it and read it."""
    import fcntl
    from site_builder.build import build
    shared.mkdir(parents=True, exist_ok=True)
    out = shared / "site"
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)            # released when the file closes
        if not (shared / "built").exists():
            build(ROOT, out, strict=False, cache_dir=ROOT / ".build_cache")
            (shared / "built").write_text("")
    return out


# Test files that run long with few tests, need no site and read no repository cache: under
# xdist they start first (LongFilesFirst), while the site is built, instead of coming last by
# their test count and running alone at the end.
FIRST_FILES = ("tests/test_differential.py", "tests/test_mutation.py")


_configs = []


def pytest_configure(config):
    _configs.append(config)


def shared_cache() -> Path:
    """A build cache the small repositories of one test process share, for the builds of tests
    that are not about the cache (an error's problem lines, a page's parts): a cache entry is
    keyed on what its computation read, so the shape probes, the call map and any example that
    one small repository shares with another are run once per process, not once per build
    (a build of the mini repository of tests/test_build_errors.py: about 2 s of CPU with no
    cache, 0.4 s with this one warm). The tests of the cache itself (test_build_cache.py,
    test_incremental.py, test_differential.py) start from empty caches, and the differential
    test is what shows that a cached build equals a clean one."""
    return _configs[-1]._tmp_path_factory.getbasetemp() / "shared_build_cache"


def pytest_xdist_make_scheduler(config, log):
    """xdist's file scheduling (`--dist loadfile`: the files with the most tests first), with
    FIRST_FILES moved to the front. (Every file in an order of its own, the files that need no
    site first, was tried on 2026-12-03 and measured no faster: files that read the repository's
    build cache then ran before it was warm, and did the build's work again.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongFilesFirst(LoadFileScheduling):
        def _assign_work_unit(self, node):
            if not getattr(self, "reordered", False):
                for scope in reversed(FIRST_FILES):
                    if scope in self.workqueue:
                        self.workqueue.move_to_end(scope, last=False)
                self.reordered = True
            super()._assign_work_unit(node)

    return LongFilesFirst(config, log)


def pytest_sessionstart(session):
    """Under pytest-xdist, running the whole suite, the controller (which runs no test) starts
    the session's site build at once, in a process of its own: the workers run other tests
    meanwhile, instead of one waiting for the other (a test that needs the site before it is
    built waits for it)."""
    config = session.config
    if (not getattr(config.option, "numprocesses", None) or os.environ.get("PYTEST_XDIST_WORKER")
            or config.args_source != pytest.Config.ArgsSource.TESTPATHS):
        return
    import subprocess
    import sys
    shared = config._tmp_path_factory.getbasetemp() / SHARED_SITE
    shared.mkdir(parents=True, exist_ok=True)
    with open(shared / "build.log", "w") as log:
        config.site_prefetch = subprocess.Popen(
            [sys.executable, "-c", "import sys; from pathlib import Path; from tests.conftest import build_shared_site; "
                                   "build_shared_site(Path(sys.argv[1]))", str(shared)],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


def pytest_sessionfinish(session):
    prefetch = getattr(session.config, "site_prefetch", None)
    if prefetch is not None and prefetch.poll() is None:
        prefetch.terminate()
        prefetch.wait(30)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """The output folder of one real build of the whole site (strict problems allowed), read by
    every test that needs it and written by none. Under pytest-xdist the workers share one
    build (build_shared_site, in the folder all their temporary folders sit in; the controller
    starts it, pytest_sessionstart): two cold builds side by side on 2 cores would each take
    twice as long."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return build_shared_site(tmp_path_factory.getbasetemp().parent / SHARED_SITE)
    from site_builder.build import build
    out = tmp_path_factory.mktemp("site") / "site"
    build(ROOT, out, strict=False, cache_dir=ROOT / ".build_cache")
    return out


@pytest.fixture(scope="session")
def play_server(built_site):
    """`serve`'s HTTP server on the session's build, with its playground (/__play), on 127.0.0.1."""
    from site_builder.serve.play import PlayPool
    from site_builder.serve.site_http import make_server
    server = make_server(built_site, host="127.0.0.1", port=0)
    server.play = PlayPool(ROOT, ROOT / ".build_cache")
    server.start()
    yield server
    server.play.close()
    server.stop()


@pytest.fixture(scope="session")
def site_page(built_site):
    """site_page('block') -> the HTML text of block.html."""
    def read(slug):
        return (built_site / f"{slug}.html").read_text(encoding="utf-8")
    return read


def concept_section(html, sid):
    """The HTML of one concept's <section> on a built page."""
    start = html.index(f'<section class="concept" id="{sid}"')
    return html[start:html.index("</section>", start)]


def assert_sections(html, sid, headings):
    """The concept is on the page with each of its headings and rendered equations."""
    section = concept_section(html, sid)
    for heading in headings:
        assert heading in section, f"{sid} lacks '{heading}'"
    assert 'class="equation"' in section and "katex" in section


def with_project(site: str) -> str:
    """A small repository's site.yaml: `site`, with the repository's `project:` block
    (PROJECT_BLOCK) added at its end if it has none."""
    if re.search(r"^project:", site, re.M):
        return site
    return site.rstrip("\n") + "\n" + PROJECT_BLOCK


def reaching_tests(folder: Path) -> Path:
    """`folder`/reaching_tests: links to the real tests folder's files that a page can show
    or an example read, made once per folder: those that reach the package
    (SourceIndex.test_modules_reaching_the_package), the project's fixtures module (what a
    declarative example's inputs name), and what they import from the tests folder.

    A build reads every file of the tests folder into its source index; the rest test the
    builder. Small repositories link this instead of the whole folder: their index holds 55
    modules, not 131, and costs about half the CPU (a suite run with a first cut of 50 modules,
    2026-12-07: 0.54 s against 1.24 s a build, in 39 builds). tests/test_source_index.py checks
    that every function of the package keeps its tests."""
    from tests.fixture_project import _test_modules
    linked = folder / "reaching_tests"
    if not linked.exists():
        from site_builder.build.gather_step import reused_index
        index = reused_index(ROOT)
        files = {index.modules[m].file for m in index.test_modules_reaching_the_package()}
        if PROJECT.fixtures:
            files.add(PROJECT.fixtures.replace(".", "/") + ".py")
        texts = [(ROOT / rel).read_text(encoding="utf-8") for rel in sorted(files)]
        files |= {f"{PROJECT.tests}/{name}.py" for name in _test_modules(texts)}
        staging = folder / f".reaching_tests-{os.getpid()}"
        for rel in sorted(files):
            target = staging / Path(rel).relative_to(PROJECT.tests)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(ROOT / rel)
        staging.rename(linked)
    return linked


def tests_folder_for(texts) -> Path:
    """The tests folder a small repository links: reaching_tests, unless its page or examples
    (`texts`) name a module of the tests folder that reaching_tests leaves out."""
    from tests.fixture_project import _test_modules
    shared = reaching_tests(shared_cache().parent)
    named = _test_modules(texts)
    return shared if all((shared / f"{name}.py").exists() for name in named) else ROOT / PROJECT.tests


def mini_repo(tmp_path, site, page, examples, copy=("",), landing_map=False):
    """A small repository: the real templates, static files and builder (linked), one page, and
    the given example modules. `copy` names folders copied rather than linked, for tests that edit them.
    A site without a `project:` block gets the real one (PROJECT_BLOCK), with the real hooks file.
    The block's `call_map_root` (the landing page's map) is left out unless landing_map=True:
    the map is a traced training step, about 1.5 s of CPU in every build with a cold cache, and
    only the tests of the map read it (tests/test_page_index.py, the map's tests elsewhere).
    The tests folder, unless copied, is the real one's files that a page can show or an
    example read (tests_folder_for): every page of a small repository lists the same tests."""
    import shutil
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("templates", "static", "site_builder") + PROJECT_FOLDERS:
        if name in copy:
            shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif name == PROJECT.tests:
            (root / name).symlink_to(tests_folder_for([site, page, *examples.values()]))
        else:
            (root / name).symlink_to(ROOT / name)
    shutil.copy(ROOT / "build_site.py", root / "build_site.py")
    (root / "content" / "pages").mkdir(parents=True)
    (root / "content" / "examples").mkdir()
    shutil.copy(ROOT / "content" / "hooks.py", root / "content" / "hooks.py")
    site = with_project(site)
    (root / "content" / "site.yaml").write_text(site if landing_map else re.sub(r"(?m)^  call_map_root: .*\n", "", site))
    (root / "content" / "pages" / "mini.md").write_text(page)
    for name, text in examples.items():
        (root / "content" / "examples" / f"{name}.py").write_text(text)
    return root


class KeyRecorder(dict):
    """A cache dict that remembers which keys were read: a backward function must read every one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)


def assert_anchored_sections(html, concepts, with_shapes):
    """Each concept has its anchored parts (what, math, example, code, connection, used) and,
    for those with shapes, a Tensor shapes part."""
    for cid in concepts:
        assert f'id="{cid}"' in html
        for part in ("what", "math", "example", "code", "connection", "used"):
            assert f'id="{cid}--{part}"' in html, (cid, part)
    for cid in with_shapes:
        assert f'id="{cid}--shapes"' in html
    for heading in ("What is it?", "Mathematics", "Actual implementation",   # the example heading
                    "Code and math connection", "Where is it used?"):    # varies: pages/example_sections.py examples_heading
        assert html.count(heading) >= len(concepts), heading
    assert html.count("Tensor shapes") >= len(with_shapes)


@pytest.fixture
def quick_settle(monkeypatch):
    """serve collects garbage after every build (site_builder/serve/rebuild.py settle_memory): in serve
    that walks a small heap, in the test process it walks every earlier test's objects (6-8 s a
    build late in the suite, against 0.4 s alone). Tests of the rebuild logic skip it."""
    monkeypatch.setattr("site_builder.serve.rebuild.settle_memory", lambda: None)


def _content_modules() -> dict:
    import sys
    return {k: v for k, v in sys.modules.items()
            if k == "content" or k.startswith(("content.", "content_examples_"))}


@pytest.fixture(autouse=True)
def restore_content_modules():
    """A test that builds another project in this process imports its `content.hooks` and
    examples under the repository's names; put the repository's back after it, so a later
    test (in any order, or another xdist split) never reads the other project's hooks."""
    import sys
    before = _content_modules()
    yield
    for name, module in _content_modules().items():
        if before.get(name) is not module:
            if name in before:
                sys.modules[name] = before[name]
            else:
                del sys.modules[name]
