"""`python3 build_site.py serve`: serve the built site locally and rebuild it on every change.

The command (`serve`) ties together the parts of this package, each of which says its
trade-offs: the HTTP server, live reload and the problem overlay (site_http), which request
path is which file (paths), the rebuild loop, the re-import of changed code and the watcher
(rebuild), the builder process that runs every build (builder), and stopping at once on
Ctrl-C or SIGTERM with the output left whole (stopping). The playground's POST /__play is
play's.
"""
import errno
import os
import signal
import sys
import threading
from pathlib import Path

from site_builder.serve.builder import BuilderProcess
from site_builder.serve.hosts import host_warning
from site_builder.serve.rebuild import Rebuilder, Watcher
from site_builder.serve.site_http import SiteState, make_server
from site_builder.serve.stopping import STOPPING, abandon, say

# Only a watch that hangs takes this long (it is up before the first build ends); serve then serves anyway.
WATCH_READY_SECONDS = 30


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
    server.site_missing = rebuilder.site_missing
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
        if watcher is not None:
            watcher.ready.wait(WATCH_READY_SECONDS)    # the line below promises the watch is up
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
