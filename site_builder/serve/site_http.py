"""The HTTP side of serve: the request handler and the server, live reload, and the overlay
that shows a failed build's problems on every page.

Trade-offs, and why:
- Standard library server. `http.server.ThreadingHTTPServer` (a thread per connection) plus
  `watchfiles` for change events (site_builder/serve/rebuild.py), no framework. It is meant for
  one person previewing on their own machine, not for production: no TLS, no caching beyond
  `Cache-Control: no-cache`, no range requests. It binds 127.0.0.1 unless `--host` says
  otherwise, and warns loudly when the address is not a loopback one (hosts.py). Which file a
  path is, is site_builder/serve/paths.py's to say.
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
- Quiet: no line per request.
"""
import html
import json
import os
import secrets
import shutil
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

from site_builder.serve.paths import content_type, resolve_request_path

POLL_SECONDS = 15.0

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
        self.polls = 0               # long-polls held now (a test waits for one, not a sleep)

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
            self.polls += 1
            try:
                while self._token() == since and not self._closed:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
            finally:
                self.polls -= 1
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
            if not os.path.isdir(out) and self.server.site_missing is not None:
                self.server.site_missing()      # deleted while serving: build it again
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
        self.site_missing = None     # called when a request finds no output folder (serve: a rebuild)
        self._thread = None
        # Connections accepted, and those being handled now: what a test waits for, not a sleep.
        self.accepted = self.answering = 0
        self._counting = threading.Lock()
        super().__init__((host, port), SiteHandler)

    def process_request(self, request, client_address):
        with self._counting:
            self.accepted += 1
            self.answering += 1
        try:
            super().process_request(request, client_address)     # starts the connection's thread
        except BaseException:
            self._answered()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._answered()

    def _answered(self):
        with self._counting:
            self.answering -= 1

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
