"""Tests for `python3 build_site.py serve` (site_builder/serve/server.py).

Everything runs on 127.0.0.1 (port 0, or a port the OS just handed out), against a temporary
output folder and a fake build function; two subprocess tests run the real command on the real
site, and fail when it does not build. Ctrl-C and SIGTERM at every moment: tests/test_interrupt.py.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from site_builder.base.problems import BuildFailed, Problem
from site_builder.serve import reload
from site_builder.serve.hosts import host_warning, is_loopback
from site_builder.serve.paths import resolve_request_path
from site_builder.serve.rebuild import Rebuilder, Watcher
from site_builder.serve.server import serve
from site_builder.serve.site_http import SiteState, make_server
from site_builder.publish.write import write_site
from tests.timing import wait_for, within

pytestmark = pytest.mark.usefixtures("quick_settle")      # see tests/conftest.py

ROOT = Path(__file__).resolve().parent.parent

PAGE = "<!doctype html>\n<html><head><title>v{v}</title></head>\n<body><p>version {v}</p></body>\n</html>\n"
FILES = {
    "static/site.css": (b"body{color:#111}\n", "text/css"),
    "static/js/app.js": (b"export const x = 1;\n", "text/javascript"),
    "references.json": (b'{"references": []}\n', "application/json"),
    "static/vendor/katex/fonts/KaTeX_Main-Regular.woff2": (b"wOF2\x00\x01fake", "font/woff2"),
    "static/logo.svg": (b'<svg xmlns="http://www.w3.org/2000/svg"></svg>\n', "image/svg+xml"),
    "static/logo.png": (b"\x89PNG\r\n\x1a\nfake", "image/png"),
}


class Summary:
    def __init__(self, text):
        self.text = text

    def summary(self):
        return self.text


class FakeBuild:
    """Writes a tiny site through the real write_site, or fails with the problems in .fail."""

    def __init__(self):
        self.version = 0
        self.fail = None
        self.calls = 0

    def __call__(self, root, out):
        self.calls += 1
        if isinstance(self.fail, BaseException):
            raise self.fail
        if self.fail:
            raise BuildFailed(self.fail)
        self.version += 1
        files = {rel: data for rel, (data, _) in FILES.items()}
        files["index.html"] = PAGE.format(v=self.version).encode()
        files["page.html"] = PAGE.format(v=f"{self.version}-page").encode()
        write_site(files, out)
        return Summary(f"built version {self.version}")


class Site:
    def __init__(self, tmp_path, first_build=True, poll_seconds=0.3):
        self.root = tmp_path
        self.out = tmp_path / "site"
        self.build = FakeBuild()
        self.state = SiteState()
        self.logs = []
        self.rebuilder = Rebuilder(self.build, self.root, self.out, self.state, log=self.logs.append)
        if first_build:
            assert self.rebuilder.run_once()
        self.server = make_server(self.out, self.state, "127.0.0.1", 0, poll_seconds=poll_seconds)
        self.server.start()

    def request(self, path, method="GET", body=None, headers=None, timeout=5):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def raw(self, request_line: bytes):
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=5) as s:
            s.sendall(request_line + b"\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        return int(data.split(b" ", 2)[1]), data


@pytest.fixture
def site(tmp_path):
    s = Site(tmp_path)
    yield s
    s.server.stop()


# --- files, types, methods ---------------------------------------------------------------------

def test_normal_files_have_the_right_content_type(site):
    for rel, (data, ctype) in FILES.items():
        status, headers, body = site.request("/" + rel)
        assert status == 200, rel
        assert headers["content-type"].split(";")[0] == ctype, rel
        assert headers["x-content-type-options"] == "nosniff"
        assert body == data
    status, headers, body = site.request("/index.html?cache=bust")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert b"version 1" in body


def test_folders_serve_their_index_and_never_a_listing(site):
    status, _, body = site.request("/")
    assert status == 200 and b"version 1" in body
    status, headers, _ = site.request("/static")
    assert status == 301 and headers["location"] == "/static/"
    status, _, body = site.request("/static/")           # no index.html there: 404, not a listing
    assert status == 404 and b"site.css" not in body
    assert site.request("/index.html/")[0] == 404


def test_traversal_and_escapes_are_404(site, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.html").write_text("<p>TOP SECRET</p>")
    (site.out / "leak.txt").symlink_to(secret)
    (site.out / "static" / "elsewhere").symlink_to(outside)
    (site.out / "alias.css").symlink_to(site.out / "static" / "site.css")    # inside: allowed
    bad = ["/../x", "/%2e%2e/x", "/static/%2e%2e/%2e%2e/etc/passwd", "/..%2fx", "/..%2Fsecret.txt",
           "/../secret.txt", "/static/../../secret.txt", "/%2E%2E/secret.txt", "/static/%2e%2e%2f%2e%2e%2fsecret.txt",
           "/leak.txt", "/static/elsewhere/x.html", "/static/elsewhere/", "/..\\secret.txt", "/static\\site.css",
           "/%5c..%5csecret.txt", "/static/%00site.css", "//etc/passwd", "/%2fetc/passwd", "/./index.html",
           "/static//site.css", "/%ff%fe", "http://127.0.0.1/index.html", "/etc/passwd"]
    for path in bad:
        status, _, body = site.request(path)
        assert status == 404, path
        assert b"TOP SECRET" not in body and b"root:" not in body, path
    for line in (b"GET /static/\x00site.css HTTP/1.1", b"GET //" + str(secret).encode() + b" HTTP/1.1",
                 b"GET /" + b"../" * 10 + b"etc/passwd HTTP/1.1"):
        status, data = site.raw(line)
        assert status in (400, 404), line
        assert b"TOP SECRET" not in data and b"root:" not in data
    status, headers, body = site.request("/alias.css")
    assert status == 200 and body == FILES["static/site.css"][0]


def test_resolve_request_path_unit(tmp_path):
    out = tmp_path / "out"
    (out / "a").mkdir(parents=True)
    (out / "a" / "index.html").write_text("x")
    (out / "f.css").write_text("x")
    assert resolve_request_path(out, "/f.css") == ("file", os.path.realpath(out / "f.css"))
    assert resolve_request_path(out, "/a/") == ("file", os.path.realpath(out / "a" / "index.html"))
    assert resolve_request_path(out, "/a") == ("redirect", "/a/")
    for p in ("", "f.css", "/a/../f.css", "/a/%2e%2e/f.css", "/missing", tmp_path.as_posix()):
        assert resolve_request_path(out, p) is None, p


def test_only_get_and_head(site):
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"):
        status, headers, _ = site.request("/index.html", method=method, body=b"x=1" if method == "POST" else None)
        assert status == 405, method
        assert headers["allow"] == "GET, HEAD"
    status, headers, body = site.request("/static/site.css", method="HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) == len(FILES["static/site.css"][0])
    for method in ("GET", "HEAD", "PUT", "DELETE", "OPTIONS"):       # the playground takes only a POST
        status, headers, body = site.request("/__play", method=method)
        assert (status, headers["allow"]) == (405, "POST"), method
        assert body == (b"" if method == "HEAD" else b"405 method not allowed: only POST\n"), method


# --- live reload ---------------------------------------------------------------------------------

def test_reload_script_only_in_html_and_never_on_disk(site):
    on_disk = (site.out / "index.html").read_bytes()
    status, headers, body = site.request("/index.html")
    assert status == 200
    assert b'<script src="/__reload.js"' in body
    assert body.index(b"/__reload.js") < body.index(b"</body>")
    assert int(headers["content-length"]) == len(body)
    assert body.replace(body[body.index(b"<script src=\"/__reload.js\""):body.index(b"</body>")], b"") == on_disk
    assert (site.out / "index.html").read_bytes() == on_disk == PAGE.format(v=1).encode()
    assert b"__reload" not in on_disk
    for rel in FILES:
        assert b"__reload" not in site.request("/" + rel)[2], rel
    status, headers, body = site.request("/index.html", method="HEAD")
    assert body == b"" and int(headers["content-length"]) > len(on_disk)
    status, headers, js = site.request("/__reload.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    assert b"/__reload?since=" in js and b"location.reload()" in js and len(js) < 2000


def test_long_poll_returns_when_a_build_finishes(site):
    token = json.loads(site.request("/__errors")[2])["token"]
    t0 = time.perf_counter()
    same = json.loads(site.request(f"/__reload?since={token}")[2])       # nothing changed: waits 0.3 s
    assert same["token"] == token and time.perf_counter() - t0 >= 0.25
    got = {}

    def poll():
        got["answer"] = json.loads(site.request(f"/__reload?since={token}", timeout=70)[2])
        got["at"] = time.perf_counter()

    # Longer than any build on a loaded machine (in the whole suite, run_once once took 7 s: the
    # collector it runs walks the test process's heap), and the client waits longer still.
    site.server.poll_seconds = 60.0
    t = threading.Thread(target=poll)
    t.start()
    wait_for(lambda: site.state.polls == 1, 60, "the long-poll held by the server")
    assert site.rebuilder.run_once()
    done = time.perf_counter()
    t.join(60)
    assert got["answer"]["token"] != token and got["answer"]["generation"] == 2
    assert got["at"] - done < 30.0           # answered by the build, not at the poll's end (60 s)
    stale = json.loads(site.request("/__reload?since=stale")[2])          # stale token: answers at once
    assert stale["token"] == got["answer"]["token"]
    assert b"version 2" in site.request("/")[2]


NODE_HARNESS = """
const events = [];
let dismiss = null;
globalThis.sessionStorage = {getItem: () => null, setItem: (k, v) => events.push("dismissed")};
globalThis.location = {reload: () => { events.push("reload"); console.log(JSON.stringify(events)); process.exit(0); }};
const box = {remove: () => events.push("removed"), querySelector: () => ({addEventListener: (e, f) => { dismiss = f; }})};
globalThis.document = {currentScript: {dataset: {token: process.argv[2]}}, hidden: false,
  getElementById: id => (id === "serve-overlay" ? box : null), addEventListener: () => {}};
const realFetch = fetch;
globalThis.fetch = (url, opts) => { events.push("poll"); return realFetch("http://127.0.0.1:" + process.argv[3] + url, opts); };
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed: the reload script is not run")
def test_reload_script_runs_dismisses_and_reloads_after_a_build(tmp_path):
    """Runs the served script in Node with a stub DOM against the real server."""
    s = Site(tmp_path, poll_seconds=5.0)
    try:
        s.build.fail = PROBLEMS
        s.rebuilder.run_once()
        token = json.loads(s.request("/__errors")[2])["token"]
        script = NODE_HARNESS + s.request("/__reload.js")[2].decode() + "dismiss();"
        script += 'setTimeout(() => { console.log("TIMEOUT " + JSON.stringify(events)); process.exit(1); }, 8000);'
        (tmp_path / "harness.js").write_text(script)
        node = subprocess.Popen(["node", str(tmp_path / "harness.js"), token, str(s.server.port)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: s.state.polls == 1, 60, "the script's long-poll held by the server")
        s.build.fail = None
        s.rebuilder.run_once()
        out, err = node.communicate(timeout=15)
    finally:
        s.server.stop()
    assert node.returncode == 0, out + err
    assert json.loads(out) == ["poll", "removed", "dismissed", "reload"]


def test_a_client_that_went_away_is_not_a_traceback(site, capfd):
    token = json.loads(site.request("/__errors")[2])["token"]
    site.server.poll_seconds = 60.0
    for held in range(1, 4):
        s = socket.create_connection(("127.0.0.1", site.server.port), timeout=5)
        s.sendall(f"GET /__reload?since={token} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        wait_for(lambda: site.state.polls == held, 60, "the long-poll held by the server")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))   # close with a reset
        s.close()
    accepted = site.server.accepted
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", site.server.port), timeout=5)
        s.sendall(b"GET /static/vendor/katex/fonts/KaTeX_Main-Regular.woff2 HTTP/1.1\r\nHost: x\r\n\r\n")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    site.rebuilder.run_once()                  # answers the held polls, to closed sockets
    wait_for(lambda: site.server.accepted == accepted + 3 and site.server.answering == 0, 60,
             "every connection answered (or given up on)")
    assert site.request("/")[0] == 200
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "Exception" not in captured.err, captured.err


# --- failing builds ------------------------------------------------------------------------------

PROBLEMS = [Problem("content/pages/attention.md", 12, "no line of ffn_forward contains <relu(Z)>", "check the snippet"),
            Problem("model/layers.py", 3, "syntax error", "fix the syntax error")]


def test_failing_rebuild_keeps_the_old_site_and_shows_the_overlay(site):
    assert b"serve-overlay" not in site.request("/")[2]
    site.build.fail = PROBLEMS
    assert not site.rebuilder.run_once()
    assert "build failed: 2 problems" in site.logs[-1]
    for path in ("/", "/page.html", "/no-such-page.html"):
        status, _, body = site.request(path)
        assert status == (404 if "no-such" in path else 200)
        assert b'id="serve-overlay"' in body and b"Dismiss" in body, path
        for p in PROBLEMS:
            assert str(p).replace("<", "&lt;").replace(">", "&gt;").encode() in body
        assert b"<relu(Z)>" not in body                                    # escaped
    assert b"version 1" in site.request("/")[2]                            # the last good site
    assert b"serve-overlay" not in site.request("/static/site.css")[2]
    errors = json.loads(site.request("/__errors")[2])
    assert errors["problems"] == [str(p) for p in PROBLEMS] and errors["generation"] == 1
    site.build.fail = None
    assert site.rebuilder.run_once()
    body = site.request("/")[2]
    assert b"serve-overlay" not in body and b"version 2" in body
    assert json.loads(site.request("/__errors")[2])["problems"] == []


def test_a_failed_build_prints_its_problems_in_the_terminal_as_build_does(site):
    site.build.fail = PROBLEMS
    before = len(site.logs)
    assert not site.rebuilder.run_once()
    printed = site.logs[before:]
    # `build` prints each problem as str(Problem) (build_site.py), then one summary line
    assert printed[:-1] == [str(p) for p in PROBLEMS], printed
    assert "build failed: 2 problems" in printed[-1]
    site.build.fail = None
    before = len(site.logs)
    assert site.rebuilder.run_once()
    assert len(site.logs) == before + 1                                    # a good build: one line


def test_first_build_fails_with_no_site_still_serves_the_overlay(tmp_path):
    s = Site(tmp_path, first_build=False)
    try:
        s.build.fail = PROBLEMS[:1]
        assert not s.rebuilder.run_once()
        status, headers, body = s.request("/")
        assert status == 404 and headers["content-type"].startswith("text/html")
        assert b"No site has been built yet" in body and b"serve-overlay" in body and b"attention.md:12" in body
        s.build.fail = None
        assert s.rebuilder.run_once()
        status, _, body = s.request("/")
        assert status == 200 and b"version 1" in body and b"serve-overlay" not in body
    finally:
        s.server.stop()



def test_a_site_deleted_while_serving_is_built_again_on_the_next_request(site):
    site.server.site_missing = site.rebuilder.site_missing       # as serve() wires it
    site.rebuilder.start()
    try:
        before = site.state.snapshot()["token"]
        shutil.rmtree(site.out)
        status, _, body = site.request("/")       # the rebuild it asks for may beat the answer
        assert (status, b"No site has been built yet" in body) == (404, True) or b"version 2" in body
        snap = site.state.wait_for_change(before, 60)    # the rebuild's new state, not a sleep
        assert snap["problems"] == [] and snap["generation"] == 2 and site.build.calls == 2
        status, _, body = site.request("/")
        assert status == 200 and b"version 2" in body
    finally:
        site.rebuilder.stop()


def test_a_deleted_site_is_not_rebuilt_over_and_over_while_its_build_fails(site):
    site.build.fail = PROBLEMS[:1]
    assert not site.rebuilder.run_once()
    shutil.rmtree(site.out)
    site.server.site_missing = site.rebuilder.site_missing
    site.rebuilder.start()
    try:
        for _ in range(3):
            assert site.request("/")[0] == 404
        assert site.build.calls == 2 and not site.rebuilder._pending     # the failed build's problems stay
    finally:
        site.rebuilder.stop()

def test_a_crashing_build_is_one_problem_line(site):
    site.build.fail = RuntimeError("boom <b>")
    assert not site.rebuilder.run_once()
    lines = json.loads(site.request("/__errors")[2])["problems"]
    assert len(lines) == 1 and "internal error: RuntimeError: boom <b>" in lines[0]
    assert "test_serve.py:" in lines[0]                                    # the frame that raised
    assert b"boom &lt;b&gt;" in site.request("/")[2]


def test_rebuilds_never_overlap_and_changes_during_a_build_cause_one_more(tmp_path):
    running, most, calls = [0], [0], []
    lock = threading.Lock()

    def slow_build(root, out):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        calls.append(time.perf_counter())
        time.sleep(0.15)
        with lock:
            running[0] -= 1
        return Summary("ok")

    logs = []
    r = Rebuilder(slow_build, tmp_path, tmp_path / "site", SiteState(), log=logs.append)
    r.start()
    try:
        r.request(["a"])
        wait_for(lambda: calls, 60, "the first build running")
        for i in range(10):
            r.request([f"content/{i}.md"])
        direct = threading.Thread(target=r.run_once)  # a direct build waits for the running one
        direct.start()
        direct.join(60)
        wait_for(r.idle, 60, "the rebuilder idle")    # and nothing more comes after
    finally:
        r.stop(wait=2)
    assert most[0] == 1
    assert r.builds == 3, logs
    assert any("and 9 more changed" in line for line in logs), logs


def test_the_search_index_catches_up_after_the_site_goes_live(tmp_path):
    """build(defer_search=True) returns finish(): the rebuilder marks the site built (the
    browser reloads) first, then calls it; a failing finish is one log line, the site stays good."""
    order, state = [], SiteState()

    def build_with_finish(fail):
        def finish():
            order.append(("finish", None))
            if fail:
                raise RuntimeError("pagefind broke")
        result = Summary("built")
        result.finish = finish
        return lambda root, out: result

    for fail in (False, True):
        logs = []
        r = Rebuilder(build_with_finish(fail), tmp_path, tmp_path / "site", state, log=logs.append)
        original = state.succeeded
        state.succeeded = lambda: (order.append(("live", None)), original())[1]
        assert r.run_once() is True
        state.succeeded = original
        assert [o for o, _ in order[-2:]] == ["live", "finish"]
        assert any("search index not updated (RuntimeError: pagefind broke)" in line for line in logs) == fail


def test_code_changes_make_the_real_build_reimport_the_project(tmp_path, monkeypatch):
    from site_builder.serve import rebuild
    (tmp_path / "content").mkdir()
    (tmp_path / "content" / "site.yaml").write_text("title: t\nnav: []\nproject:\n  package: pkg\n  tests: checks\n")
    (tmp_path / "checks").mkdir()
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "zz_serve_probe.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(pkg))
    import zz_serve_probe
    assert zz_serve_probe.VALUE == 1
    before = reload.code_fingerprint(tmp_path)
    (pkg / "zz_serve_probe.py").write_text("VALUE = 22\n")
    assert reload.code_fingerprint(tmp_path) != before
    rebuild._forget_modules(tmp_path)
    assert "zz_serve_probe" not in sys.modules and "site_builder.serve.rebuild" in sys.modules
    import zz_serve_probe as again
    assert again.VALUE == 22
    sys.modules.pop("zz_serve_probe", None)


# --- watching ------------------------------------------------------------------------------------

PROJECT_BLOCK = "title: t\nnav: []\nproject:\n  package: {package}\n  tests: checks\n"


def project_tree(root, package):
    """A tree with a project block naming `package` (and its folders), and a folder it does not name."""
    for d in ("content", "static", package, "checks", "notes"):
        (root / d).mkdir(exist_ok=True)
    (root / package / "__init__.py").write_text("")
    (root / "content" / "site.yaml").write_text(PROJECT_BLOCK.format(package=package))


def test_the_watcher_watches_the_folders_the_project_block_names(tmp_path):
    project_tree(tmp_path, "lib")
    logs = []
    w = Watcher(tmp_path, tmp_path / "site", lambda paths: None, log=logs.append)
    assert [p.name for p in w.paths] == ["content", "static", "lib", "checks"]
    assert not w.moved()
    project_tree(tmp_path, "lib2")               # the block now names another package
    assert w.moved() and [p.name for p in w.paths] == ["content", "static", "lib2", "checks"]
    assert logs == ["watching content/, static/, lib2/, checks/ now"]


def test_watcher_ignores_caches_editor_files_and_the_output(tmp_path):
    from watchfiles import Change
    project_tree(tmp_path, "model")
    out = tmp_path / "static" / "_site"
    seen = []
    w = Watcher(tmp_path, out, seen.append)
    wanted = lambda rel: w.wanted(Change.modified, str(tmp_path / rel))
    assert wanted("content/pages/a.md") and wanted("model/layers.py") and wanted("static/site.css")
    for rel in ("model/__pycache__/layers.cpython-311.pyc", "content/.a.md.swp", "content/a.md~", "content/4913",
                "content/.#a.md", "content/#a.md#", "static/_site/index.html", "static/._site.tmp-123/x.html",
                "static/._site.lock", "static/._site.old-9/index.html"):
        assert not wanted(rel), rel
    (tmp_path / "model" / "__pycache__").mkdir()
    out.mkdir()

    def write_all(n):
        """Every ignored file, then the one wanted, written; returns: has a batch come since?"""
        batches = len(seen)
        (tmp_path / "model" / "__pycache__" / "x.pyc").write_bytes(b"x%d" % n)
        (tmp_path / "content" / ".a.md.swp").write_text(f"x{n}")
        (out / "index.html").write_text(f"x{n}")
        (tmp_path / "content" / "a.md").write_text(f"hello {n}")
        return lambda: len(seen) > batches

    # The watcher says when its watch is up (Watcher.ready); then every file is written once.
    w.start()
    try:
        assert w.ready.wait(60), "the watch was not up in 60 s"
        wait_for(write_all(1), 60, "the watcher's batch for the write after its watch was up")
    finally:
        w.stop()
    changed = {p for batch in seen for p in batch}
    assert changed == {str(tmp_path / "content" / "a.md")}
    gone = str(tmp_path / "content" / "sedX1y2Z3")                       # `sed -i` writes, then renames
    assert w.lasting({(Change.added, gone), (Change.deleted, gone), (Change.modified, str(tmp_path / "content" / "a.md"))}) \
        == [str(tmp_path / "content" / "a.md")]
    assert w.lasting({(Change.added, gone), (Change.deleted, gone)}) == []


# --- load ----------------------------------------------------------------------------------------

def test_2000_requests_from_20_threads(site):
    expected = {"/": b"version 1", "/page.html": b"version 1-page", "/static/site.css": FILES["static/site.css"][0],
                "/static/js/app.js": FILES["static/js/app.js"][0], "/references.json": b'"references"'}
    paths = list(expected)
    errors, done = [], [0]
    lock = threading.Lock()
    port = site.server.port

    def client(n):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10) if n % 2 == 0 else None
        ok = 0
        try:
            for i in range(100):
                path = paths[(n + i) % len(paths)]
                try:
                    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                    try:                                       # even threads: keep-alive on one connection;
                        c.request("GET", path)                 # odd threads: a new connection per request
                        r = c.getresponse()
                        status, body = r.status, r.read()
                    finally:
                        if conn is None:
                            c.close()
                    if status != 200 or expected[path] not in body:
                        raise AssertionError(f"{path}: {status}")
                    ok += 1
                except Exception as e:
                    with lock:
                        errors.append(f"{path}: {type(e).__name__}: {e}")
        finally:
            if conn is not None:
                conn.close()
            with lock:
                done[0] += ok

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    elapsed = time.perf_counter() - t0
    assert errors == [], errors[:5]
    assert done[0] == 2000
    assert elapsed < within(10), elapsed          # 10 s on a quiet machine, stretched by the load


# --- host and port -------------------------------------------------------------------------------

def test_non_loopback_hosts_get_a_warning():
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"):
        assert is_loopback(host) and host_warning(host) is None, host
    warning = host_warning("0.0.0.0")
    assert "serving on 0.0.0.0: anyone on your network can read these files" in warning
    for host in ("", "::", "192.168.1.20", "10.0.0.1", "2001:db8::1"):
        assert "anyone on your network" in host_warning(host), host


def test_port_in_use_is_one_line_and_exit_2(tmp_path, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        build = FakeBuild()
        assert serve(tmp_path, tmp_path / "site", "127.0.0.1", port, build=build) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"port {port} is already in use" in err and "--port" in err
    assert build.calls == 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_port_in_use(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        p = subprocess.run([sys.executable, str(ROOT / "build_site.py"), "serve", "--port", str(port),
                            "--out", str(tmp_path / "site")], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "--port" in p.stderr, p.stderr
    assert not (tmp_path / "site").exists()


class CLIServer:
    """`python3 build_site.py serve` in a subprocess, its stdout read by a thread."""

    def __init__(self, out):
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-u", str(ROOT / "build_site.py"), "serve", "--port",
                                      str(self.port), "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stdout.readline, "")),
                                       daemon=True)
        self.reader.start()

    def text(self):
        return "".join(self.lines)

    def wait_serving(self, timeout=900):
        """Serving (after its first build: a cold one, with an empty cache, takes minutes)."""
        return wait_for(lambda: any(line.startswith("serving ") for line in self.lines), timeout, "serving", self)

    def get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    server = CLIServer(tmp_path_factory.mktemp("cli") / "site")
    yield server
    server.stop()


def test_cli_serves_the_real_site(cli):
    assert cli.wait_serving(), "".join(cli.lines)
    errors = json.loads(cli.get("/__errors")[2])
    if errors["problems"]:                                 # the case this test exists for: a failure
        pytest.fail(f"the real site does not build under serve: {len(errors['problems'])} problem(s), "
                    f"first: {errors['problems'][0]}", pytrace=False)
    status, headers, body = cli.get("/")
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    assert b'<script src="/__reload.js"' in body and b"serve-overlay" not in body
    assert cli.get("/static/site.css")[1]["Content-Type"].startswith("text/css")
    assert cli.get("/../build_site.py")[0] == 404


def test_cli_ctrl_c_exits_130_in_2_s_with_one_line_and_no_process_left(cli):
    assert cli.wait_serving(), "".join(cli.lines)
    from tests.test_interrupt import running, tree
    under = tree(cli.proc.pid)
    assert under, "serve runs its builds in a builder process"
    printed = len(cli.lines)
    deadline = within(2)                     # 2 s on a quiet machine, stretched by the load
    t0 = time.monotonic()
    cli.proc.send_signal(signal.SIGINT)
    assert cli.proc.wait(deadline) == 130
    took = time.monotonic() - t0
    cli.reader.join(5)
    while any(running(p) for p in under) and time.monotonic() - t0 < deadline:
        time.sleep(0.01)
    assert not [p for p in under if running(p)]
    lines = cli.lines[printed:]
    assert len(lines) == 1 and lines[0].startswith("stopped") and "Traceback" not in lines[0], lines
    print(f"serve: exit {took:.3f} s after Ctrl-C")
