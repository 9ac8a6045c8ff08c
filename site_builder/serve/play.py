"""`serve`'s playground: POST /__play runs a playable example on the reader's own input.

The page (static/js/play.js) sends {page, example, args}; the answer is the example's body
rendered by the same template as the built page ({html, seconds}) or one line saying what
is wrong ({error}). The endpoint is never a way to run code:
- it answers only on a server bound to a loopback address, to a request whose Host is this
  server (a DNS-rebinding page has another Host) and whose Origin is this server's (another
  site's page cannot post to it; a browser always sends Origin on a POST), with a JSON body
  of at most MAX_BODY bytes (JSON also forces a cross-origin preflight, which gets a 405);
- it names an example by page slug and example id: the function is the one that content
  file's `run:` declares, and an example without `playable:` is refused;
- every argument is checked against the declaration (site_builder/gather/playground.py) before
  anything runs, and reaches the function as a literal;
- the call runs in a forked worker under PLAY_TIMEOUT (site_builder/base/worker.py), which is
  killed past it, so no request can hang the server or leave a process behind.

Where it runs: PLAY_PROCESSES "play processes", each started on first use and kept (NumPy, the
documented package, the trained run, the source index and the templates stay loaded, so a
request costs one fork and the example itself: about 30 ms for a small example of this
repository's), single-threaded so
that forking is safe (serve's HTTP threads are not). Each takes one request at a time; more
wait in a queue, so the number of workers is bounded whatever the number of clients. After a
.py edit a process is started afresh before its next request, so it runs the code as it is
now; a content edit is read again by its file's size and time.
"""
import json
import os
import queue
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from site_builder import COMMAND


PLAY_PROCESSES = 2             # requests answered at once (the machine this was written on has 2 cores)
PLAY_TIMEOUT = 10.0            # seconds for one example call; the slowest playable takes ~0.3 s
STARTUP_TIMEOUT = 180.0        # the first request also starts the process (and may train the run)
MAX_BODY = 8192
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}\Z")
EXAMPLE_ID = re.compile(r"[A-Za-z0-9_-]{1,160}\Z")
PLAY_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
             "from site_builder.serve.play import play_main; play_main(sys.argv[1:])")


# ------------------------------------------------------------------ the HTTP side (serve process)

def refusal(headers, server_address, loopback: bool):
    """(status, message) for a request the endpoint must not answer, or None."""
    if not loopback:
        return 403, "the playground answers only when serve is bound to a loopback address (the default, 127.0.0.1)"
    port = server_address[1]
    bound = server_address[0]
    hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"{bound}:{port}", f"[{bound}]:{port}"}
    host = headers.get("Host", "")
    if host not in hosts:
        return 403, f"refused: Host {host!r} is not this server (expected e.g. 127.0.0.1:{port})"
    origin = headers.get("Origin")
    if origin != f"http://{host}":
        return 403, f"refused: a request from another origin ({origin or 'no Origin header'}); only pages of http://{host} may ask"
    ctype = headers.get("Content-Type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        return 415, "the body must be JSON (Content-Type: application/json)"
    return None


# no parameter's bound is past the largest float, so a longer integer is refused unread
MAX_DIGITS = len(str(int(sys.float_info.max)))


class _TooManyDigits(ValueError):
    pass


def _whole_number(text):
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise _TooManyDigits(f"a number in the request has {digits} digits; no parameter takes more than {MAX_DIGITS}")
    return int(text)


def parse_request(body: bytes):
    """-> (request, None) or (None, one line saying why the body is refused)."""
    try:
        return json.loads(body, parse_int=_whole_number), None
    except _TooManyDigits as e:
        return None, str(e)
    except RecursionError:
        return None, "the request body is nested too deeply; it must be {page, example, args}"
    except (ValueError, UnicodeDecodeError):
        return None, "the request body is not JSON"


def answer(handler):
    """POST /__play, for serve's SiteHandler."""
    from site_builder.serve.hosts import is_loopback
    server = handler.server
    client = getattr(server, "play", None)

    def send(status, payload):
        handler.close_connection = status >= 400
        handler._send(status, json.dumps(payload).encode(), "application/json", True, cache="no-store")

    if client is None:
        return send(404, dict(error=f"free input needs `{COMMAND} serve`; this server has no playground"))
    refused = refusal(handler.headers, server.server_address, is_loopback(server.server_address[0]))
    if refused:
        return send(refused[0], dict(error=refused[1]))
    try:
        length = int(handler.headers.get("Content-Length", ""))
    except ValueError:
        return send(411, dict(error="the request needs a Content-Length"))
    if not 0 < length <= MAX_BODY:
        return send(413, dict(error=f"the request body must be 1 to {MAX_BODY} bytes, got {length}"))
    request, error = parse_request(handler.rfile.read(length))
    if error:
        return send(400, dict(error=error))
    reply = client.ask(request)
    send(200 if "html" in reply else reply.pop("status", 400), reply)


class _PlayStopped(Exception):
    """The play process was stopped from outside (worker.StopWatch) while we waited for it."""


class PlayClient:
    """The serve process's handle on the play process: one request at a time, a fresh process
    after a code edit or a failure. A play process stopped from outside (`kill -STOP`: state T
    for worker.STOPPED_SECONDS, as the build tests its own children) is killed and the request
    sent once more to a fresh one, rather than waited for until its time limit."""

    def __init__(self, root, cache_dir=None):
        self.root, self.cache_dir = Path(root), cache_dir
        self.lock = threading.Lock()
        self.proc, self._seen, self._buf = None, None, b""
        self.pids = []
        self._keeper = None

    def _start(self):
        """Start the process from a thread that lives as long as serve: the kernel's
        parent-death signal (PR_SET_PDEATHSIG) follows the thread that forked, and serve's
        HTTP threads end with their connection."""
        if self._keeper is None:
            self._orders = queue.Queue()
            self._keeper = threading.Thread(target=self._keep, name="play-starter", daemon=True)
            self._keeper.start()
        done = queue.Queue()
        self._orders.put(done)
        error = done.get()
        if error:
            raise error

    def _keep(self):
        while True:
            done = self._orders.get()
            try:
                self._spawn()
                done.put(None)
            except OSError as e:
                done.put(e)

    def _spawn(self):
        self.close()
        self.proc = subprocess.Popen([sys.executable, "-c", PLAY_BOOT, str(self.root), str(self.cache_dir or ""),
                                      str(os.getpid())], cwd=str(self.root), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, start_new_session=True)
        self.pids.append(self.proc.pid)
        self._buf = b""
        self._fresh = True

    def ask(self, request) -> dict:
        with self.lock:
            for _ in range(2):
                try:
                    return self._ask(request)
                except _PlayStopped:
                    self.close()
                except (OSError, ValueError, TimeoutError) as e:
                    self.close()
                    return dict(status=500, error=f"the playground process failed ({type(e).__name__}: {e}); "
                                                  f"the next request starts a new one")
            from site_builder.base.worker import STOPPED_SECONDS
            return dict(status=500, error=f"the playground process was stopped from outside (state T for "
                                          f"{STOPPED_SECONDS:g} s) twice, and killed; the next request starts a new one")

    def _ask(self, request) -> dict:
        from site_builder.serve.reload import code_fingerprint
        now = code_fingerprint(self.root)
        if self.proc is None or self.proc.poll() is not None or now != self._seen:
            self._start()
            self._seen = now
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        line = self._line(STARTUP_TIMEOUT if self._fresh else PLAY_TIMEOUT + 20)
        self._fresh = False
        return json.loads(line)

    def _line(self, timeout):
        from site_builder.base.worker import StopWatch
        deadline, watch = time.monotonic() + timeout, StopWatch()
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer in {timeout:g} s")
            ready, _, _ = select.select([fd], [], [], min(left, 0.1))
            if not ready and watch.stalled(self.proc.pid):     # not reaped: still our play process
                raise _PlayStopped()
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise OSError("it exited")
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def close(self):
        """Kill the play process and its workers (its own process group)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.proc = None


# ------------------------------------------------------------------ the play process

class Playground:
    """In the play process: find the declaration, check the arguments, run, render."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._pages = {}

    def declaration(self, slug, example_id):
        from site_builder.gather.content import concepts, load_page
        from site_builder.gather.playground import InvalidInput, check_declaration
        from site_builder.run.text_rules import text_rules
        if not isinstance(slug, str) or not SLUG.match(slug):
            raise InvalidInput("'page' must be a page's name, like 'layers'")
        if not isinstance(example_id, str) or not EXAMPLE_ID.match(example_id):
            raise InvalidInput("'example' must be an example's id, like 'layers-dense--ex-2'")
        path = self.root / "content" / "pages" / f"{slug}.md"
        try:
            st = path.stat()
        except OSError:
            raise InvalidInput(f"there is no page '{slug}' (content/pages/{slug}.md)") from None
        stamp = (st.st_mtime_ns, st.st_size)
        if self._pages.get(slug, (None,))[0] != stamp:
            problems = []
            page = load_page(path, slug, problems)
            if page is None or any(not p.warning for p in problems):
                raise InvalidInput(f"content/pages/{slug}.md has problems; `{COMMAND} check` lists them")
            self._pages[slug] = (stamp, page)
        page = self._pages[slug][1]
        for c in concepts(page):
            for n, e in enumerate(c.get("examples") or [], 1):
                if f"{c['id']}--ex-{n}" == example_id:
                    if not e.get("playable"):
                        raise InvalidInput(f"example {example_id} ({e['run']}) is not playable: "
                                           f"content/pages/{slug}.md declares no 'playable' parameters for it")
                    wrong = []            # what its texts name (a config field, a vocabulary), now that the project is known
                    check_declaration(e, f"content/pages/{slug}.md", wrong, text_rules(self.root))
                    if wrong:
                        raise InvalidInput(f"content/pages/{slug}.md has problems; `{COMMAND} check` lists them")
                    return e
        raise InvalidInput(f"there is no example '{example_id}' on page '{slug}'")

    def handle(self, request) -> dict:
        from site_builder.gather.playground import InvalidInput, call_ref, checked_arguments
        from site_builder.run.text_rules import text_rules
        try:
            if not isinstance(request, dict) or set(request) - {"page", "example", "args", "typed"}:
                raise InvalidInput("the request must be {page, example, args} (and typed, the names the reader typed)")
            example = self.declaration(request.get("page"), request.get("example"))
            args = checked_arguments(example, request.get("args", {}), text_rules(self.root))
            typed = request.get("typed", [])
            if not isinstance(typed, list) or not all(isinstance(n, str) and n in args for n in typed):
                raise InvalidInput("'typed' must list names among the request's args")
        except InvalidInput as e:
            return dict(status=400, error=str(e))
        ref = call_ref(example["run"], args)
        return self.run(request["example"], ref, typed)

    def run(self, example_id, ref, typed=()) -> dict:
        from site_builder.run.example_runner import _blame, _run_here
        from site_builder.run.examples import load_example
        from site_builder.base.worker import Call, run_calls
        try:
            load_example(self.root, ref)      # imported here once, so each fork starts with it loaded
        except BaseException:
            pass                              # the worker meets the same error and reports it
        [outcome] = run_calls([Call(ref, lambda: _run_here(self.root, ref, record=False), PLAY_TIMEOUT, where=_blame(self.root))], 1)
        if outcome.status == "timeout":
            return dict(status=504, error=f"{ref} ran past {PLAY_TIMEOUT:g} s and was stopped"
                                          + (f" (at {outcome.detail})" if outcome.detail else ""))
        if outcome.status != "ok":
            return dict(status=500, error=f"{ref} failed: {outcome.status} {outcome.detail}".strip())
        kind, *rest = outcome.value
        if kind != "ok":
            message = rest[0][0] if kind == "import" else rest[0]
            return dict(status=500, error=message)
        return dict(html=self.render(example_id, rest[0], typed), seconds=round(outcome.seconds, 3))

    def render(self, example_id, result, typed=()) -> str:
        from site_builder.render.pages.example_sections import prepare_blocks
        from site_builder.render.html import make_environment
        index, renderer = self.source_index() if any(b.get("kind") == "stepper" for b in result.blocks) else (None, None)
        blocks = prepare_blocks(result.blocks, index, renderer)
        env = make_environment(self.root)
        return env.get_template("partials/example_fragment.html").render(
            ex=dict(id=example_id, blocks=blocks, source=result.source, typed=list(typed)), root="").strip()


    def source_index(self):
        """The source index and a renderer, for a stepper's listing: read once per process, since
        a code edit starts a new process (PlayClient.ask)."""
        if not hasattr(self, "_index"):
            from site_builder.build.gather_step import reused_index
            from site_builder.render.html import Renderer
            index = reused_index(self.root)
            self._index = (index, Renderer(self.root, index, []))
        return self._index


class PlayPool:
    """PLAY_PROCESSES play processes, each taking one request at a time: a request goes to the
    first idle one, so two requests run at once on two cores and more wait their turn."""

    def __init__(self, root, cache_dir=None, size=None):
        self.clients = [PlayClient(root, cache_dir) for _ in range(size or PLAY_PROCESSES)]
        self.idle = queue.Queue()
        for c in self.clients:
            self.idle.put(c)

    def ask(self, request) -> dict:
        client = self.idle.get()
        try:
            return client.ask(request)
        finally:
            self.idle.put(client)

    def pids(self) -> list:
        """The play processes running now."""
        return [c.proc.pid for c in self.clients if c.proc is not None and c.proc.poll() is None]

    def close(self):
        for c in self.clients:
            c.close()


def play_main(argv):
    """The play process: one JSON request per stdin line, one JSON answer per stdout line."""
    root, cache_dir, parent = argv
    from site_builder.base.worker import die_with_parent
    die_with_parent(int(parent))
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # serve handles Ctrl-C, and kills this process
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)                                     # a stray print must not corrupt an answer
    from site_builder.run import training_run
    from site_builder.base.cache import BuildCache
    root = Path(root)
    training_run.configure(BuildCache(Path(cache_dir) if cache_dir else root / ".build_cache"))
    playground = Playground(root)
    for line in sys.stdin:
        try:
            reply = playground.handle(json.loads(line))
        except Exception as e:                        # a bug here is one answer, not a dead process
            reply = dict(status=500, error=f"internal error in the playground: {type(e).__name__}: {e}")
        replies.write(json.dumps(reply) + "\n")
    os._exit(0)
