"""`python3 build_site.py serve`: serve the built site locally and rebuild it on every change.

Trade-offs, and why this module makes the choices it does:

- Standard library server. `http.server.ThreadingHTTPServer` (a thread per connection) plus
  `watchfiles` for change events, no framework. It is meant for one person previewing on
  their own machine, not for production: no TLS, no caching beyond `Cache-Control: no-cache`,
  no range requests. It binds 127.0.0.1 unless `--host` says otherwise, and warns loudly
  when the address is not a loopback one.
- Refuse, don't normalise. A request path with `..` or `.` segments, empty segments (`//`),
  an encoded slash or backslash (`%2f`, `%5c`), a backslash, a NUL byte or invalid UTF-8 is
  a 404 outright (browsers normalise dot segments before sending, so no real link needs
  them). What remains is joined to the output folder, its *real* path is resolved (following
  every symlink) and it must lie inside the real output folder. Only regular files are
  served; a folder serves its index.html or nothing (no listings).
- The build runs in one child process, one build at a time, for as long as serve runs (the
  "builder"). That keeps rebuilds fast (NumPy, Jinja2, the JavaScript engine for KaTeX, the
  source index and the memos stay loaded between builds), at a price: Python caches imported
  modules, so after a `.py` file under `model/`, `site_builder/`, `tests/` or `content/`
  (the examples) changes, the builder drops those modules from `sys.modules` before the next
  build, so the site documents and runs the code as it is now, and no module holds a class
  from an older import of another. This module itself is never reloaded: edit serve.py, restart.
  Changes during a build schedule exactly one more build after it. If the builder dies, the
  build is reported as failed and the next change starts a new one.
- A stuck example never blocks the next rebuild. A build still running ABANDON_AFTER (2 s)
  after it began, with a change waiting (arrived at any time during it), is abandoned: the
  builder and everything under it are killed as on Ctrl-C, its half-done output is undone
  (`abandon_output`, so nothing half-written is published), one line says so, and a new
  builder builds the new tree at once. Younger builds are left to finish: a warm one-page
  rebuild takes 0.3 to 0.7 s, while a new builder pays the interpreter, NumPy, the KaTeX
  engine and the source index again (measured on the real site, 2 loaded cores: 2.05 s for
  a fresh builder's build of an unchanged tree against 0.7 s for the warm one), so quick
  successive saves are cheaper queued. A build past 2 s has outlived a whole fresh build: it
  is running many examples (a model edit: 6 s) or is stuck (up to its 60 s time limit), on a
  tree that is already out of date; the examples it finished are cached, so abandoning it
  costs about the restart. The grace period is per build, not per change: a save 0.5 s into
  a build that then hangs abandons it at 2 s, not at 60.
- Ctrl-C (or SIGTERM) stops serve at once, at any moment, even in the middle of a build: the
  builder is a process of its own (its own process group, so a terminal's Ctrl-C reaches only
  serve, and no worker prints a traceback), and stopping kills it and every process under it
  (frozen with SIGSTOP first, so none can fork past the kill), undoes a half-done swap of the
  output folder (`abandon_output`), prints one line and exits 130 (143 for SIGTERM). A build in
  a thread of this process, as before, could not be stopped: a thread cannot be killed, so
  Ctrl-C waited for it (the process pool it used then finished its whole queue: 10 s and more
  of a cold build), and a cleanup racing a live thread could not know what it had written.
  Killing a process freezes the output folder in a state `abandon_output` can read.
  `build_site.py build` and `check` stop the same way (`abandon`).
- The search index comes last. A rebuild goes live (and the page reloads) with the previous
  Pagefind bundle, then Pagefind indexes the new pages and that bundle is swapped in
  (`build(defer_search=True)`): Pagefind was a third of a one-page rebuild, and a search
  that is a second out of date is harmless while previewing. `build_site.py build` never
  defers: its site always goes out with its own index.
- Live reload is injected by the server into HTML responses (the files on disk stay as
  built, so two builds stay byte-identical). The injected script long-polls `/__reload`,
  which answers at once if the site state changed since the page was served, or after
  about 15 s otherwise. Long-polling needs nothing beyond plain HTTP/1.1; its cost, shared
  with EventSource, is one held connection per tab against the browser's limit of about six
  per host, so only visible tabs poll. When the server goes away the script backs off
  quietly (up to 10 s between tries) and never touches the page.
- A failed build leaves the last good site in place (the writer swaps folders by rename)
  and the server renders the problem list into every HTML page as a fixed, dismissable box,
  escaped, on the server side, so it shows without JavaScript too. The state token the
  script compares covers both "a new good build" and "the problem list changed", so the
  page reloads for either; `/__errors` serves the same list as JSON for tools.
- Quiet: no line per request; one line per build, and before the line of a failed one its
  problems, one a line, as `build` prints them (the overlay alone left a terminal user guessing).
"""
import errno
import gc
import html
import importlib
import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote

from site_builder import COMMAND
from site_builder.serve.hosts import host_warning, is_loopback
from site_builder.serve.reload import CODE_DIRS, code_fingerprint


WATCHED_DIRS = ("content", "templates", "static", "model", "tests", "site_builder", "data")
# A .py edit under these means: re-import before building. content/ holds the example modules
# (site_builder.run.examples keeps them in sys.modules, and they hold the builder's classes).
POLL_SECONDS = 15.0

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8", ".json": "application/json", ".map": "application/json",
    ".txt": "text/plain; charset=utf-8", ".xml": "application/xml",
    ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf",
    ".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
    ".gif": "image/gif", ".webp": "image/webp", ".ico": "image/x-icon", ".wasm": "application/wasm",
}

# Served at /__reload.js; the page gets <script src="/__reload.js" data-token="..."> (an external
# script, so it keeps working if the site ever adds a Content-Security-Policy).
RELOAD_JS = """\
// Injected by `python3 build_site.py serve`; not part of the built site.
(() => {
  const token = document.currentScript.dataset.token, key = "serve-dismissed";
  const box = document.getElementById("serve-overlay");
  if (box) {
    let gone = null; try { gone = sessionStorage.getItem(key); } catch (e) {}
    if (gone === token) box.remove();
    else box.querySelector("button").addEventListener("click", () => {
      box.remove(); try { sessionStorage.setItem(key, token); } catch (e) {}
    });
  }
  let busy = false, delay = 1000;
  const poll = () => {
    if (busy || document.hidden) return;
    busy = true;
    fetch("/__reload?since=" + encodeURIComponent(token), {cache: "no-store"})
      .then(r => r.ok ? r.json() : Promise.reject(r.status))
      .then(s => { busy = false; delay = 1000; if (s.token !== token) location.reload(); else poll(); })
      .catch(() => { busy = false; setTimeout(poll, delay); delay = Math.min(2 * delay, 10000); });
  };
  document.addEventListener("visibilitychange", poll);
  poll();
})();
"""

NOT_FOUND_HTML = ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Not found</title></head>"
                  "<body><h1>Not found</h1><p>{message}</p><p><a href=\"/\">Home</a></p></body></html>\n")

OVERLAY_STYLE = ("position:fixed;z-index:2147483647;left:1rem;right:1rem;bottom:1rem;max-height:60vh;"
                 "overflow:auto;box-sizing:border-box;margin:0;padding:.9rem 1.1rem;background:#fff4f4;"
                 "color:#3a0606;border:2px solid #b00020;border-radius:6px;box-shadow:0 6px 24px rgba(0,0,0,.35);"
                 "font:14px/1.45 system-ui,sans-serif;text-align:left")
OVERLAY_BUTTON_STYLE = ("float:right;margin:0 0 .5rem 1rem;padding:.15rem .6rem;font:inherit;cursor:pointer;"
                        "color:#3a0606;background:#fff;border:1px solid #b00020;border-radius:4px")
OVERLAY_LIST_STYLE = ("margin:.5rem 0 0;padding-left:1.6rem;font:13px/1.4 ui-monospace,Menlo,Consolas,monospace;"
                      "white-space:pre-wrap;overflow-wrap:anywhere")


# Set once serve (or a build) is stopping: from then on nothing more is logged or started.
STOPPING = threading.Event()


def _log(line):
    if not STOPPING.is_set():
        print(line, flush=True)


# ---------------------------------------------------------------------------------------------
# Which host is safe, and which path is which file


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_request_path(out, raw_path: str):
    """Map a request path (query already removed) to ("file", real path), ("redirect", location) or None.

    None means 404: anything that is not a plain path to a regular file (or a folder with an
    index.html) whose real path is inside the real output folder.
    """
    if not raw_path.startswith("/") or "\\" in raw_path or "\x00" in raw_path:
        return None
    lowered = raw_path.lower()
    if "%2f" in lowered or "%5c" in lowered or "%00" in lowered:
        return None
    try:
        path = unquote(raw_path, errors="strict")
    except UnicodeDecodeError:
        return None
    if "\\" in path or "\x00" in path:
        return None
    parts = path[1:].split("/")
    trailing_slash = len(parts) > 1 and parts[-1] == ""
    if parts[-1] == "":
        parts = parts[:-1]
    if any(p in ("", ".", "..") for p in parts):
        return None
    root = os.path.realpath(out)
    target = os.path.realpath(os.path.join(root, *parts))
    if not _inside(target, root):
        return None
    if os.path.isdir(target):
        if parts and not trailing_slash:
            return ("redirect", "/" + "/".join(quote(p) for p in parts) + "/")
        target = os.path.realpath(os.path.join(target, "index.html"))
        if not _inside(target, root):
            return None
    elif trailing_slash:
        return None
    if not os.path.isfile(target):
        return None
    return ("file", target)


def content_type(path: str) -> str:
    return CONTENT_TYPES.get(os.path.splitext(path)[1].lower(), "application/octet-stream")


# ---------------------------------------------------------------------------------------------
# What the pages should show: the build generation and the current problems


class SiteState:
    """Thread-safe: the count of good builds, the problems of the last failed one, and a token
    that changes whenever either changes (plus a per-process part, so a restarted server
    reloads open pages)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._instance = secrets.token_hex(4)
        self.generation = 0          # incremented after each successful build
        self.problems = []           # problem lines of the last build, if it failed
        self._errors_version = 0     # incremented when the problem list changes
        self._closed = False

    def _token(self):
        return f"{self._instance}-{self.generation}-{self._errors_version}"

    def snapshot(self) -> dict:
        with self._cond:
            return dict(token=self._token(), generation=self.generation, problems=list(self.problems))

    def succeeded(self):
        with self._cond:
            self.generation += 1
            if self.problems:
                self.problems = []
                self._errors_version += 1
            self._cond.notify_all()

    def failed(self, lines):
        with self._cond:
            lines = list(lines)
            if lines != self.problems:
                self.problems = lines
                self._errors_version += 1
                self._cond.notify_all()

    def wait_for_change(self, since: str, timeout: float) -> dict:
        """Block until the token differs from `since` (or timeout, or close), then snapshot."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._token() == since and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        return self.snapshot()

    @property
    def closed(self):
        return self._closed

    def close(self):
        """Release every waiting long-poll (used when the server stops)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()


def overlay_html(problems, no_site=False) -> str:
    n = len(problems)
    head = (f"The last build failed with {n} problem{'s' if n != 1 else ''}. "
            + ("No site has been built yet." if no_site else "You are seeing the last good build."))
    items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
    return (f'<div id="serve-overlay" role="alert" style="{OVERLAY_STYLE}">'
            f'<button type="button" aria-label="Dismiss the build problems" style="{OVERLAY_BUTTON_STYLE}">Dismiss</button>'
            f"<strong>{html.escape(head)}</strong>"
            f'<ol style="{OVERLAY_LIST_STYLE}">{items}</ol>'
            f"<p style=\"margin:.5rem 0 0;font-size:12px\">Fix them and save: the page reloads after the next good build.</p>"
            f"</div>\n")


def inject(page: bytes, snippet: str) -> bytes:
    """Insert `snippet` before the last </body> (or at the end when there is none)."""
    data = snippet.encode()
    at = page.lower().rfind(b"</body>")
    return page + data if at < 0 else page[:at] + data + page[at:]


# ---------------------------------------------------------------------------------------------
# HTTP


class SiteHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "build_site-serve"
    sys_version = ""
    timeout = 60              # drop idle keep-alive connections
    disable_nagle_algorithm = True   # headers and body are separate writes: don't wait 40 ms for an ACK

    def log_message(self, format, *args):   # quiet: no line per request
        pass

    def version_string(self):
        return self.server_version

    def do_GET(self):
        self._respond(body=True)

    def do_HEAD(self):
        self._respond(body=False)

    def do_POST(self):
        # Only the playground takes a POST (site_builder/serve/play.py); anything else is a 405.
        if self.path.partition("?")[0] == "/__play":
            from site_builder.serve import play as play_server
            return play_server.answer(self)
        self._not_allowed()

    def __getattr__(self, name):
        # http.server looks up do_<METHOD>; every method but GET and HEAD is a 405.
        if name.startswith("do_"):
            return self._not_allowed
        raise AttributeError(name)

    def _not_allowed(self):
        self.close_connection = True          # any request body is left unread
        allowed = "POST" if self.path.partition("?")[0] == "/__play" else "GET, HEAD"
        self._send(405, f"405 method not allowed: only {allowed.replace(', ', ' and ')}\n".encode(), "text/plain; charset=utf-8",
                   body=self.command != "HEAD", extra={"Allow": allowed, "Connection": "close"})

    def _send(self, status, data: bytes, ctype: str, body=True, extra=None, cache="no-cache"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", cache)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _decorations(self, snapshot) -> str:
        """What goes before </body> of every HTML response: the overlay (if any) and the script."""
        out = ""
        if snapshot["problems"]:
            out += overlay_html(snapshot["problems"], no_site=not os.path.isdir(self.server.out))
        return out + f'<script src="/__reload.js" data-token="{html.escape(snapshot["token"])}"></script>\n'

    def _respond(self, body):
        raw, _, query = self.path.partition("?")
        raw = raw.partition("#")[0]
        state = self.server.state
        if state.closed:
            self.close_connection = True       # stopping: let keep-alive clients go
        if raw == "/__reload":
            since = parse_qs(query).get("since", [""])[0]
            snap = state.wait_for_change(since, self.server.poll_seconds if body else 0)
            return self._send(200, json.dumps(snap).encode(), "application/json", body, cache="no-store")
        if raw == "/__errors":
            return self._send(200, json.dumps(state.snapshot()).encode(), "application/json", body, cache="no-store")
        if raw == "/__play":                  # the playground takes only a POST
            return self._not_allowed()
        if raw == "/__reload.js":
            return self._send(200, RELOAD_JS.encode(), "text/javascript; charset=utf-8", body)
        out = self.server.out
        if not os.path.isdir(out):
            time.sleep(0.05)   # the writer swaps folders with two renames; let it finish
        found = resolve_request_path(out, raw)
        if found and found[0] == "redirect":
            return self._send(301, b"", "text/plain; charset=utf-8", body, extra={"Location": found[1]})
        if found:
            try:
                return self._send_file(found[1], body)
            except (FileNotFoundError, IsADirectoryError, PermissionError):
                pass   # vanished (a rebuild swapped the folder) or unreadable: a 404
        self._not_found(body)

    def _not_found(self, body):
        no_site = not os.path.isdir(self.server.out)
        message = "No site has been built yet." if no_site else "There is no such file in the built site."
        page = NOT_FOUND_HTML.format(message=message).encode()
        page = inject(page, self._decorations(self.server.state.snapshot()))
        self._send(404, page, "text/html; charset=utf-8", body)

    def _send_file(self, path, body):
        ctype = content_type(path)
        with open(path, "rb") as f:
            if ctype.startswith("text/html"):
                page = inject(f.read(), self._decorations(self.server.state.snapshot()))
                return self._send(200, page, ctype, body)
            size = os.fstat(f.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(size))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            if body:
                shutil.copyfileobj(f, self.wfile, 64 * 1024)


class SiteServer(ThreadingHTTPServer):
    """Serves `out` with the given SiteState. Port 0 picks a free port (see `.port`, `.url`)."""
    daemon_threads = True
    allow_reuse_address = True     # quick restarts; on Linux this never shares a port in use
    allow_reuse_port = False
    request_queue_size = 128

    def __init__(self, out, state=None, host="127.0.0.1", port=0, poll_seconds=POLL_SECONDS):
        self.out = str(Path(out).absolute())
        self.state = state if state is not None else SiteState()
        self.poll_seconds = poll_seconds
        self._thread = None
        super().__init__((host, port), SiteHandler)

    def server_bind(self):
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS lookup that can take seconds.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def handle_error(self, request, client_address):
        # A browser that navigates away mid-response (or drops a held long-poll) is normal:
        # stay quiet. Anything else is one line, not socketserver's traceback.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        print(f"warning: error answering a request: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        host = self.server_address[0]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/"

    def start(self):
        """Serve in a background thread (for tests and embedding); returns the thread."""
        self._thread = threading.Thread(target=self.serve_forever, kwargs=dict(poll_interval=0.05),
                                        name="serve-http", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self):
        """Stop serve_forever (if started with start()), close the socket, release long-polls."""
        if self._thread is not None:
            self.shutdown()
            self._thread.join(5)
            self._thread = None
        self.server_close()
        self.state.close()


class SiteServer6(SiteServer):
    address_family = socket.AF_INET6


def make_server(out, state=None, host="127.0.0.1", port=0, poll_seconds=POLL_SECONDS) -> SiteServer:
    """Bind (raises OSError, e.g. EADDRINUSE) and return a server; call .start() or .serve_forever()."""
    cls = SiteServer6 if ":" in host.strip("[]") else SiteServer
    return cls(out, state, host.strip("[]"), port, poll_seconds)


# ---------------------------------------------------------------------------------------------
# Building: one at a time, in the builder process (BuilderProcess) or, for tests, in this one


def problem_lines(exc, root=None):
    """The overlay lines for a failed build: each Problem of a BuildFailed, or one line for a crash."""
    problems = getattr(exc, "problems", None)      # site_builder.base.problems.BuildFailed (duck-typed:
    if isinstance(problems, (list, tuple)):        # the module may have been re-imported)
        return [str(p) for p in problems] or [f"the build failed without naming a problem: {exc}"]
    file, line = "site_builder", 0
    if isinstance(exc, SyntaxError) and exc.filename:
        file, line = exc.filename, exc.lineno or 0
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in frames if root and _inside(os.path.realpath(f.filename), os.path.realpath(root))]
        if ours or frames:
            file, line = (ours or frames)[-1].filename, (ours or frames)[-1].lineno
    if root:
        try:
            file = Path(file).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            pass
    where = f"{file}:{line}" if line else file
    return [f"{where}: internal error: {type(exc).__name__}: {exc} "
            f"(an exception rather than a reported problem; `{COMMAND} --debug` shows the traceback)"]


def _forget_modules(root: Path):
    """Drop the project's modules (except this one and the site_builder package) from sys.modules."""
    dirs = [os.path.realpath(root / d) for d in CODE_DIRS]
    keep = {__name__, "site_builder"}
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if name in keep or not f:
            continue
        if any(_inside(os.path.realpath(f), d) for d in dirs):
            del sys.modules[name]
    importlib.invalidate_caches()


class FreshBuild:
    """The real build, `site_builder.build.build(root, out, strict=False)`, with the project's
    modules re-imported first whenever a .py file under one of CODE_DIRS changed."""

    def __init__(self, root: Path, cache_dir=None):
        self.root = Path(root)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._seen = code_fingerprint(self.root)

    def __call__(self, root, out):
        now = code_fingerprint(self.root)
        if now != self._seen:
            _forget_modules(self.root)
            self._seen = now
        build = importlib.import_module("site_builder.build").build
        return build(Path(root), Path(out), strict=False, defer_search=True, cache_dir=self.cache_dir)


def settle_memory():
    """After a build, off the critical path: collect the last build's garbage, then freeze what
    is left (the source index, the memos) so the collector skips it during the next build.
    Measured on a one-page rebuild: median 0.30 s without, 0.20 s with."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


# A change that arrives while a build runs waits for it (one more build after it, as before) only
# while that build is younger than this; a build older than this, or one that reaches this age
# with a change waiting, is abandoned and the new tree is built at once (see the module docstring).
ABANDON_AFTER = 2.0


class BuildAbandoned(Exception):
    """A build stopped on purpose because the tree changed under it (Rebuilder.request): not a
    failure, nothing to report on the pages; the next build follows at once."""


class Rebuilder:
    """Runs `build(root, out)` one at a time and records the outcome in `state`.

    run_once() builds now (waiting for a running build first); request() asks the background
    thread (start()) for a build: requests that arrive while a build runs are merged into one
    more build after it. A build function with a `cancelled` attribute (a threading.Event:
    BuilderProcess) can also be abandoned: when changes have arrived during a build that has
    run for `abandon_after` seconds, the event is set, the build raises BuildAbandoned, one line
    is logged and the next build starts. The event is set only while that build runs and is
    cleared when it returns, so it never reaches the next one.
    """

    def __init__(self, build, root, out, state, log=_log, abandon_after=ABANDON_AFTER):
        self.build, self.root, self.out, self.state, self.log = build, Path(root), Path(out), state, log
        self.abandon_after = abandon_after
        self.builds = 0              # builds that finished, good or failed
        self.abandoned = 0           # builds abandoned for a newer tree
        self.running = False         # a build (or its search index) is under way
        self._build_lock = threading.Lock()
        self._cond = threading.Condition()
        self._pending = False
        self._changed = set()
        self._stopping = False
        self._thread = None
        self._serial = 0             # counts build calls; a timer names the build it was set for
        self._started = None         # when the build call in progress began (monotonic), else None
        self._arrived = []           # changes requested since it began
        self._waiting = False        # whether any request came since it began
        self._abandon_for = None     # the changes it was abandoned for, once it is
        self._timed = 0              # the build a grace-period timer is already set for

    def run_once(self, reason="") -> bool:
        with self._build_lock:
            self.running = True
            try:
                return self._run(reason)
            finally:
                self.running = False

    def _run(self, reason):
        cancelled = getattr(self.build, "cancelled", None)
        with self._cond:
            self._serial += 1
            self._started, self._arrived, self._waiting, self._abandon_for = time.monotonic(), [], False, None
        try:
            result = self.build(self.root, self.out)
        except BuildAbandoned:
            self.abandoned += 1
            with self._cond:
                what = self._names(self._abandon_for or self._arrived) or "the sources"
            self.log(f"{time.strftime('%H:%M:%S')} build abandoned: {what} changed; rebuilding")
            return False
        except (Exception, SystemExit) as e:
            self.builds += 1
            lines = problem_lines(e, self.root)
            self.state.failed(lines)
            serving = ("still serving the last good site" if self.out.is_dir() else "no site to serve yet")
            ok, what = False, (f"build failed: {len(lines)} problem{'s' if len(lines) != 1 else ''}; "
                               f"{serving}, with the problems shown on every page")
        else:
            self.builds += 1
            self.state.succeeded()
            summary = getattr(result, "summary", None)
            ok, what = True, (summary() if callable(summary) else "built")
        finally:
            with self._cond:
                self._started = None
                if cancelled is not None:
                    cancelled.clear()
        for line in ([] if ok else lines):   # as `build` prints them: file:line: what (fix), one a line
            self.log(line)
        self.log(f"{time.strftime('%H:%M:%S')} {reason}{what}")
        finish = getattr(result, "finish", None) if ok else None
        if callable(finish):     # the page has reloaded; now the search index catches up
            try:
                finish()
            except Exception as e:
                self.log(f"{time.strftime('%H:%M:%S')} search index not updated ({type(e).__name__}: {e}); "
                         "search shows the previous build")
        settle_memory()
        return ok

    def request(self, changed=()):
        with self._cond:
            self._pending = True
            self._changed.update(changed)
            self._cond.notify()
            if self._started is not None:
                self._arrived.extend(changed)
                self._waiting = True
                age = time.monotonic() - self._started
                if age >= self.abandon_after:
                    self._abandon(self._serial)
                elif self._timed != self._serial and getattr(self.build, "cancelled", None) is not None:
                    # A grace period: the build may still finish (no builder restart); if it
                    # has not by the time it is abandon_after old, it is abandoned then.
                    timer = threading.Timer(self.abandon_after - age + 0.01, self._grace_over, (self._serial,))
                    timer.daemon = True
                    try:
                        timer.start()
                        self._timed = self._serial
                    except RuntimeError:     # no thread to be had: the next change decides instead
                        pass

    def _grace_over(self, serial):
        try:
            with self._cond:
                self._abandon(serial)
        except Exception:        # never a traceback from a timer thread; the build just goes on
            pass

    def _abandon(self, serial):
        """(Holding _cond.) Ask build `serial` to stop, if it is still the one running, has
        changes waiting and is old enough; the build raises BuildAbandoned."""
        cancelled = getattr(self.build, "cancelled", None)
        if (cancelled is None or serial != self._serial or self._started is None or not self._waiting
                or self._abandon_for is not None or self._stopping or STOPPING.is_set()):
            return
        if time.monotonic() - self._started < self.abandon_after:
            return
        self._abandon_for = sorted(set(self._arrived))
        cancelled.set()

    def start(self):
        self._thread = threading.Thread(target=self._loop, name="serve-rebuild", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, wait=0.0):
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread is not None and wait:
            self._thread.join(wait)

    def _loop(self):
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping or STOPPING.is_set():
                    return
                changed, self._pending, self._changed = sorted(self._changed), False, set()
            self.run_once(self._describe(changed))

    def _names(self, changed):
        """'content/x.md' or 'content/x.md and 2 more', paths shown relative to the root."""
        if not changed:
            return ""
        try:
            first = Path(changed[0]).resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            first = str(changed[0])
        return first + (f" and {len(changed) - 1} more" if len(changed) > 1 else "")

    def _describe(self, changed):
        return f"{self._names(changed)} changed: " if changed else ""


# ---------------------------------------------------------------------------------------------
# The builder: one child process that runs every build of a serve session


class RemoteBuildFailed(Exception):
    """A build in the builder failed; `problems` are its lines (problem_lines reads them as they are)."""

    def __init__(self, problems):
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = list(problems)


class _BuilderDied(Exception):
    pass


class _BuilderStopped(Exception):
    """The builder was stopped from outside (worker.StopWatch) while we waited for its answer."""


class _Built:
    """What the builder reported for a good build: summary() and, with a deferred search
    index, finish(), which waits until the builder has indexed the new pages."""

    def __init__(self, summary, finish=None):
        self._summary, self.finish = summary, finish

    def summary(self):
        return self._summary


# The builder's entry point, run as `python -c BUILDER_BOOT root out cache_dir reply_fd serve_pid`.
BUILDER_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
                "from site_builder.serve.server import builder_main; builder_main(sys.argv[1:])")


class BuilderProcess:
    """The real build (FreshBuild) in a child process that stays up between builds, so a
    rebuild finds everything the last one loaded; called like a build function (it is the
    `build` of the Rebuilder). Requests go to the builder's stdin, one JSON line each; its
    answers come back on a pipe of their own, so what the build prints reaches the terminal.

    The builder leads a process group of its own (a terminal's Ctrl-C reaches serve only),
    ignores SIGINT, and dies with serve (PR_SET_PDEATHSIG). A builder that dies is a failed
    build; the next build starts a new one. `pids` lists every builder started, whose
    half-written output abandon_output removes.

    `cancelled` (set by the Rebuilder from another thread) abandons the build in progress: the
    thread waiting for its answer notices within 0.1 s, kills the builder and every process
    under it as Ctrl-C does, undoes its half-done output (abandon_output) and raises
    BuildAbandoned; the next build starts a new builder. Only the waiting thread touches the
    process, so no signal can reach a pid that was already reaped and reused.

    A builder stopped from outside (`kill -STOP`; state T for worker.STOPPED_SECONDS, the test
    the build applies to its own children) would never answer: it is killed like an abandoned
    one, one line is logged, and the build runs again in a fresh builder (once; stopped again,
    the build fails with one line)."""

    def __init__(self, root, out, cache_dir=None, log=_log):
        self.root, self.out, self.cache_dir, self.log = Path(root), Path(out), cache_dir, log
        self.cancelled = threading.Event()
        self.proc = None
        self.pids = []
        self._rfd = None
        self._buf = b""
        self._finish_pending = False

    def start(self):
        if STOPPING.is_set():
            raise _BuilderDied("serve is stopping")
        self.close()
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", BUILDER_BOOT, str(self.root), str(self.out),
                 str(self.cache_dir or ""), str(w), str(os.getpid())],
                cwd=str(self.root), stdin=subprocess.PIPE, pass_fds=(w,), start_new_session=True)
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
        self.pids.append(self.proc.pid)
        self._rfd, self._buf, self._finish_pending = r, b"", False

    def group(self) -> tuple:
        """The builder's process group, while the builder is running (not yet reaped, so its
        pid, which is also the group's id, cannot belong to anyone else)."""
        return (self.proc.pid,) if self.proc is not None and self.proc.returncode is None else ()

    def close(self):
        if self._rfd is not None:
            os.close(self._rfd)
            self._rfd = None
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def __call__(self, root, out):
        try:
            if self._finish_pending:                    # an unread "search index done" answer
                self._finish()
        except Exception:
            pass
        try:
            answer = self._build()
        except _BuilderStopped:
            self._kill_builder()
            self.log(f"{time.strftime('%H:%M:%S')} {self._stopped_text()}: killed; building again in a fresh one")
            try:
                answer = self._build()
            except _BuilderStopped:
                self._kill_builder()
                raise RemoteBuildFailed([f"site_builder/serve/server.py: {self._stopped_text()} twice, and killed; "
                                         f"the next change starts a new one"]) from None
        if not answer.get("ok"):
            raise RemoteBuildFailed(answer.get("problems") or ["the build failed without naming a problem"])
        self._finish_pending = bool(answer.get("finish"))
        return _Built(answer.get("summary", "built"), self._finish if self._finish_pending else None)

    def _build(self) -> dict:
        """One build request and its answer; raises _BuilderStopped for a stopped builder."""
        try:
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            self.proc.stdin.write(b'{"build": true}\n')
            self.proc.stdin.flush()
            return self._answer(cancellable=True)
        except (_BuilderDied, OSError) as e:
            raise RemoteBuildFailed([self._died(e)]) from None

    @staticmethod
    def _stopped_text():
        from site_builder.base.worker import STOPPED_SECONDS
        return f"the build process was stopped from outside (state T for {STOPPED_SECONDS:g} s)"

    def _finish(self):
        self._finish_pending = False
        try:
            error = self._answer().get("finished")
        except (_BuilderDied, OSError) as e:
            raise RuntimeError(self._died(e)) from None
        except _BuilderStopped:
            self._kill_builder()
            raise RuntimeError(f"{self._stopped_text()} and killed; the next change starts a new one") from None
        if error:
            raise RuntimeError(error)

    def _died(self, e):
        """One line for a builder that is gone (and a new one next time)."""
        _park_if_stopping()
        code = self.proc.poll() if self.proc is not None else None
        self.close()
        how = (f"killed by signal {-code}" if code is not None and code < 0 else
               f"exit status {code}" if code is not None else f"{type(e).__name__}: {e}")
        return (f"site_builder/serve/server.py: the build process stopped in the middle of a build ({how}); "
                f"the next change starts a new one")

    def _answer(self, cancellable=False) -> dict:
        """The builder's next answer. Waits in short steps (the main thread must get back to
        Python often, or a Ctrl-C delivered to another thread would wait for the build; and
        a build that is `cancelled` is abandoned within a step, one stopped from outside too)."""
        from site_builder.base.worker import StopWatch
        watch = StopWatch()
        while b"\n" not in self._buf:
            ready, _, _ = select.select([self._rfd], [], [], 0.1)
            if not ready:                              # an answer already sent is read first
                if cancellable and self.cancelled.is_set():
                    self._abandon_build()
                if self.proc.poll() is not None:
                    raise _BuilderDied("gone")
                if watch.stalled(self.proc.pid):       # not reaped (poll above): still our builder
                    raise _BuilderStopped()
                continue
            chunk = os.read(self._rfd, 1 << 16)
            if not chunk:
                raise _BuilderDied("gone")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def _abandon_build(self):
        """Kill the builder in the middle of its build and every process under it (frozen first,
        so none forks past the kill: kill_descendants, as on Ctrl-C), undo what it left half
        written, and raise BuildAbandoned. The next call starts a new builder."""
        self._kill_builder()
        raise BuildAbandoned()

    def _kill_builder(self):
        """Kill the builder (abandoned, or stopped from outside) and undo its half-done output."""
        _park_if_stopping()
        pid = self.proc.pid
        if self.proc.poll() is None:                   # not reaped: the pid is still the builder's
            try:
                os.kill(pid, signal.SIGSTOP)           # it starts no worker from now on
            except OSError:
                pass
            kill_descendants(pid, groups=(pid,))       # its workers, and itself (its group)
        self.close()                                   # reap it
        _park_if_stopping()                            # Ctrl-C meanwhile: the handler cleans up
        try:
            abandon_output(self.out, pid)
        except OSError:
            pass         # left for the next build: the writer removes a dead pid's folders itself


def _park_if_stopping():
    """A thread that finds the builder killed because serve is stopping waits for the exit, silently."""
    if STOPPING.is_set():
        threading.Event().wait()


def builder_main(argv):
    """The builder process: a build per request line on stdin, the answers on the reply fd."""
    root, out, cache_dir, reply_fd, parent = argv
    from site_builder.base.worker import die_with_parent
    die_with_parent(int(parent))
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # serve handles Ctrl-C, and kills this process
    root, out = Path(root), Path(out)
    replies = os.fdopen(int(reply_fd), "w", encoding="utf-8", buffering=1)

    def answer(**fields):
        replies.write(json.dumps(fields) + "\n")
        replies.flush()

    build = FreshBuild(root, cache_dir or None)
    for _ in sys.stdin.buffer:
        try:
            result = build(root, out)
        except (Exception, SystemExit) as e:
            answer(ok=False, problems=problem_lines(e, root))
        else:
            finish, summary = getattr(result, "finish", None), getattr(result, "summary", None)
            answer(ok=True, summary=summary() if callable(summary) else "built", finish=callable(finish))
            if callable(finish):
                try:
                    finish()
                except Exception as e:
                    answer(finished=f"{type(e).__name__}: {e}")
                else:
                    answer(finished=None)
        settle_memory()
    sys.stdout.flush()
    os._exit(0)


# ---------------------------------------------------------------------------------------------
# Stopping: every process under this one, and the output of a build that was cut short


def _processes():
    """{pid: (parent pid, process group, state)} of every process, from /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()      # after "pid (comm) "
        table[int(name)] = (int(fields[1]), int(fields[2]), fields[0].decode())
    return table


def descendants(pid: int, groups=()) -> list:
    """The live processes under `pid` (children, theirs, ...) and in the process groups
    `groups`, parents before children. Zombies are dead already and not listed."""
    table = _processes()
    kids = {}
    for p, (ppid, _, _) in table.items():
        kids.setdefault(ppid, []).append(p)
    found, todo = [], list(kids.get(pid, []))
    todo += [p for p, (_, pgid, _) in table.items() if pgid in groups and p != pid]
    while todo:
        p = todo.pop(0)
        if p in found or p == pid or table.get(p, (0, 0, "Z"))[2] in "ZX":
            continue
        found.append(p)
        todo += kids.get(p, [])
    return found


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:][:1] not in (b"Z", b"X")


def kill_descendants(pid=None, groups=(), wait=1.5) -> list:
    """SIGKILL every process under `pid` (default: this one) and in `groups`. Each is stopped
    (SIGSTOP) first and the tree walked again until no new process appears, so none can fork a
    child that escapes; then all are killed, and we wait (up to `wait` s) until they are gone.
    Returns their pids."""
    pid = os.getpid() if pid is None else pid
    stopped = []
    for _ in range(50):
        new = [p for p in descendants(pid, groups) if p not in stopped]
        if not new:
            break
        for p in new:
            try:
                os.kill(p, signal.SIGSTOP)
            except OSError:
                pass
        stopped += new
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass
    for p in stopped:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + wait
    while True:
        for p in stopped:                                # reap our own children
            try:
                os.waitpid(p, os.WNOHANG)
            except OSError:
                pass
        if not any(alive(p) for p in stopped) or time.monotonic() > deadline:
            return stopped
        time.sleep(0.01)


def abandon_output(out, pid: int) -> str:
    """Undo what process `pid`, killed while building `out`, left half done, by the names
    site_builder/publish/write.py and build.refresh_search write under (`.<out>.tmp-<pid>`, `.old-`,
    `.search-`, `.search-old-`). Returns "untouched" (out is the last good site, as before),
    "none" (there is no site) or "complete" (the new site was already in place, whole)."""
    outcome = "untouched"
    for target in sorted({Path(os.path.abspath(out)), Path(os.path.realpath(out))}):
        def aside(kind, target=target):
            return target.parent / f".{target.name}.{kind}-{pid}"
        old, stale = aside("old"), aside("search-old")
        if os.path.lexists(old):
            if os.path.lexists(target):     # swapped: the new site is whole; old may be half deleted
                shutil.rmtree(old, ignore_errors=True)
                outcome = "complete"
            else:                           # between the two renames: put the last good site back
                os.rename(old, target)
        if os.path.lexists(stale):          # the search bundle, likewise
            bundle = target / "pagefind"
            if target.is_dir() and not os.path.lexists(bundle):
                os.rename(stale, bundle)
            else:
                shutil.rmtree(stale, ignore_errors=True)
        for kind in ("tmp", "search"):
            shutil.rmtree(aside(kind), ignore_errors=True)
    return "none" if not os.path.isdir(out) else outcome


def site_clause(out, outcomes) -> str:
    """What became of the output, for the one line printed on stopping."""
    if not os.path.isdir(out):
        return f"no site was written to {out}"
    if "complete" in outcomes:
        return f"the new site in {out} was already complete and stays"
    return f"the last good site in {out} is untouched"


def abandon(out, writers=(), groups=()) -> str:
    """Stop a build of `out` now: kill every process under this one (and in `groups`), undo
    the half-done output of each writer pid (default: this process), and return the clause
    saying what is in `out`. For the Ctrl-C handlers of `build_site.py` and `serve`."""
    STOPPING.set()
    kill_descendants(groups=groups)
    outcomes = []
    for pid in (writers or (os.getpid(),)):
        try:
            outcomes.append(abandon_output(out, pid))
        except OSError:
            outcomes.append("untouched")
    return site_clause(out, outcomes)


def say(line):
    """Print one line to stderr from a signal handler: straight to the file descriptor (the
    interrupted code may hold the lock of sys.stderr), on a line of its own on a terminal."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    prefix = "\n" if os.isatty(2) else ""
    try:
        os.write(2, (prefix + line + "\n").encode(errors="replace"))
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# Watching


EXTRA_IGNORED = (r"^4913$", r"^#.*#$", r"\.tmp$", r"\.bak$", r"\.orig$", r"\.kate-swp$")


class Watcher:
    """Calls on_change(paths) for changes under root's WATCHED_DIRS, ignoring __pycache__, editor
    temp files and the output folder (with the writer's temporary and lock files beside it)."""

    def __init__(self, root, out, on_change, dirs=WATCHED_DIRS, log=_log):
        import watchfiles
        self._watchfiles = watchfiles
        self.root = Path(root).resolve()
        self.out = os.path.realpath(out)
        self.on_change = on_change
        self.log = log
        self.paths = [self.root / d for d in dirs if (self.root / d).is_dir()]
        self._stop = threading.Event()
        self._thread = None
        base = watchfiles.DefaultFilter
        self._filter = base(ignore_dirs=tuple(base.ignore_dirs) + (".build_cache",),
                            ignore_entity_patterns=tuple(base.ignore_entity_patterns) + EXTRA_IGNORED)
        name = re.escape(os.path.basename(self.out))
        self._writer_files = re.compile(rf"^\.{name}\.(tmp-\d+|old-\d+|lock)$")

    def wanted(self, change, path: str) -> bool:
        if not self._filter(change, path):
            return False
        real = os.path.realpath(path)
        if _inside(real, self.out) or _inside(os.path.abspath(path), self.out):
            return False
        parent = os.path.dirname(self.out)
        rel = os.path.relpath(os.path.abspath(path), parent)
        return not self._writer_files.match(rel.split(os.sep)[0])

    def lasting(self, changes):
        """The changed paths, less files that came and went within the batch (an editor's or
        `sed -i`'s temporary file, written and renamed over the real one)."""
        added = {path for change, path in changes if change == self._watchfiles.Change.added}
        return sorted({path for _, path in changes if path not in added or os.path.lexists(path)})

    def start(self):
        if not self.paths:
            return None
        self._thread = threading.Thread(target=self._run, name="serve-watch", daemon=True)
        self._thread.start()
        return self._thread

    def _run(self):
        try:
            for changes in self._watchfiles.watch(*self.paths, watch_filter=self.wanted, stop_event=self._stop,
                                                  debounce=1600, step=50, raise_interrupt=False):
                paths = self.lasting(changes)
                if paths:
                    self.on_change(paths)
        except Exception as e:   # the server keeps running; only rebuild-on-change is lost
            self.log(f"warning: stopped watching for changes: {type(e).__name__}: {e}")

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)


# ---------------------------------------------------------------------------------------------
# The command


def serve(root, out, host="127.0.0.1", port=8000, build=None, cache_dir=None) -> int:
    """Build once, then serve `out` on host:port and rebuild on change until Ctrl-C (exit
    status 130) or SIGTERM (143). `build` (tests): a build function run in this process instead
    of the builder process. Returns the exit status, or exits from the signal handler."""
    root = Path(root).resolve()
    out = Path(out).absolute()
    warning = host_warning(host)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    state = SiteState()
    try:
        server = make_server(out, state, host, port)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            msg = f"port {port} is already in use on {host}; pick another with --port, e.g. --port {port + 1}"
        elif e.errno == errno.EACCES:
            msg = f"not allowed to use port {port} on {host} (ports below 1024 need root); try --port 8000"
        else:
            msg = f"cannot serve on {host}:{port}: {e.strerror or e}"
        print(f"error: {msg}", file=sys.stderr, flush=True)
        return 2                     # a port the user chose: bad input, like --port 99999
    builder = BuilderProcess(root, out, cache_dir) if build is None else None
    rebuilder = Rebuilder(build or builder, root, out, state)
    from site_builder.serve.play import PlayPool
    server.play = PlayPool(root, cache_dir)            # free input (/__play), started on first use

    def stop(signum, frame):
        """Ctrl-C or SIGTERM, at any moment: kill the builder and everything under it, undo a
        half-done write, one line, exit. Runs in the main thread, which never waits long."""
        if STOPPING.is_set():
            return                                      # a second Ctrl-C while stopping
        building = rebuilder.running
        server.play.close()                             # it and its workers: a process group of its own
        try:
            clause = abandon(out, builder.pids if builder else (), builder.group() if builder else ())
            line = f"stopped; the build in progress was abandoned: {clause}" if building else "stopped"
        except Exception as e:                          # still one line, still an exit
            line = f"stopped; could not clean up after the build ({type(e).__name__}: {e})"
        say(line)
        os._exit(128 + signum)

    main_thread = threading.current_thread() is threading.main_thread()   # only it may set handlers
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)} if main_thread else {}
    watcher = None
    try:
        rebuilder.start()
        try:
            watcher = Watcher(root, out, rebuilder.request)
            watcher.start()
        except Exception as e:
            print(f"warning: not watching for changes ({type(e).__name__}: {e}); restart to rebuild",
                  file=sys.stderr, flush=True)
        rebuilder.run_once()
        watching = ", ".join(p.name + "/" for p in watcher.paths) if watcher else "nothing"
        print(f"serving {out} at {server.url} (watching {watching}; Ctrl-C to stop)", flush=True)
        server.serve_forever(poll_interval=0.25)
    finally:
        if watcher is not None:
            watcher.stop()
        rebuilder.stop()
        state.close()
        server.server_close()
        if builder is not None:
            builder.close()
        server.play.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
