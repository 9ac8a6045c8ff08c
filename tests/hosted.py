"""The built site served as GitHub Pages serves a project site: under a sub-path
(https://USER.github.io/REPO/ is http://127.0.0.1:PORT/REPO/ here), with the site's 404.html
and status 404 for a missing URL at any depth under it, and a bare 404 for anything outside
it (so a link that escapes the sub-path fails). The sub-path is the path of content/site.yaml's
site_url, the one the 404 page's links start with (site_builder/publish/hosting.py).

The standard library's threaded server, not `serve`: that one injects its live-reload script
and serves the site at `/`.
"""
import functools
import io
import threading
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from site_builder.publish.hosting import NOT_FOUND, root_path, site_url

ROOT = Path(__file__).resolve().parent.parent


def site_path() -> str:
    """The sub-path the repository's site is hosted at: `/REPO/`, or `/` without a site_url."""
    site = yaml.safe_load((ROOT / "content" / "site.yaml").read_text(encoding="utf-8"))
    return root_path(site_url(site))


class QuietHandler(SimpleHTTPRequestHandler):
    """The standard library's static server, with the types browsers insist on, and no log."""
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript",
                      ".wasm": "application/wasm"}

    def log_message(self, *args):
        pass


class SubPathHandler(QuietHandler):
    """Serves `directory` at `prefix` (which starts and ends with /)."""

    def __init__(self, *args, prefix, **kwargs):
        self.prefix = prefix
        super().__init__(*args, **kwargs)

    def send_head(self):
        path = urlsplit(self.path).path
        if path + "/" == self.prefix:                   # /REPO -> /REPO/, as Pages redirects
            self.send_response(301)
            self.send_header("Location", self.prefix)
            self.end_headers()
            return None
        if not path.startswith(self.prefix):
            self.send_error(404, "outside the site's sub-path")
            return None
        rest = self.path[len(self.prefix) - 1:]          # "/..." with its query, as if at the root
        file = Path(self.translate_path(rest))
        if file.is_dir() and path.endswith("/"):
            file = file / "index.html"
        if not file.is_file():                          # Pages: the site's 404.html, status 404
            return self.not_found()
        self.path = rest
        return super().send_head()

    def not_found(self):
        body = (Path(self.directory) / NOT_FOUND).read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


@contextmanager
def served_under(folder: Path, prefix: str):
    """Serve `folder` at http://127.0.0.1:PORT{prefix} in a thread; yields that base URL."""
    handler = functools.partial(SubPathHandler, prefix=prefix, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs=dict(poll_interval=0.1), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}{prefix}"
    finally:
        server.shutdown()
        server.server_close()
