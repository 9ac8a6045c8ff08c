#!/usr/bin/env python3
"""Build the documentation site (`--help` lists the commands: USAGE, below)."""
import argparse
import os
import sys

# The model's matrices are small: one BLAS thread is faster, and on a shared machine several
# threads per process oversubscribe the cores (measured: 0.06 s against 3.4 s for one evaluate).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from site_builder import COMMAND  # noqa: E402  (the package's __init__ only: no heavy import)

USAGE = [("[--out DIR]", "build into site/ (or DIR)"),
         ("check [--out DIR]", "build strictly: every problem listed, exit 1 if any"),
         ("serve [--port N]", "serve on 127.0.0.1 and rebuild on change"),
         ("check --page SLUG", "check only these pages (repeat --page), their links too, but an anchor of "
                               "another page only by the full check; writes nothing"),
         ("new-concept model.ops.gelu_forward --page model [--after model-relu]",
          "write a concept section that needs only prose and TeX"),
         ("new-page dropout --title Dropout [--after SLUG]",
          "start a page: its front matter, its place in nav, its page test")]


def description():
    """--help's list of commands, in columns (a command too long for its column has its own line)."""
    width = len(f"  {COMMAND} check [--out DIR]  ")
    lines = ["Build the documentation site.", ""]
    for args, what in USAGE:
        command = f"  {COMMAND} {args}"
        lines += [f"{command:<{width}}{what}"] if len(command) < width else [command, " " * width + what]
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message):       # one line, no usage block: `error: ...`, exit status 2
        print(f"error: {message} (see {COMMAND} --help)", file=sys.stderr)
        sys.exit(2)


def port_number(text):
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a port number; give 0 to 65535 (0: any free port)")
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number; give 0 to 65535 (0: any free port)")
    return port


def worker_count(text):
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of workers; give 1 or more")
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"{jobs} workers cannot run anything; give 1 or more")
    return jobs


def _stop_on_interrupt(out):
    """Ctrl-C (or SIGTERM) during a build or check: kill its workers, leave the last good site
    as it was, print one line, exit 130 (143). Forked workers inherit this handler and leave
    Ctrl-C to this process, which kills them (site_builder/serve/stopping.py: abandon)."""
    import signal
    # Imported now, not in the handler: a second signal during that import re-entered it and
    # found the module half initialised (issue 30). The module is looked up at the signal, so
    # what is called is what site_builder.serve.stopping holds then.
    from site_builder.serve import stopping
    main_pid = os.getpid()

    def stop(signum, frame):
        if os.getpid() != main_pid:                    # a forked worker
            if signum == signal.SIGINT:
                return
            os._exit(128 + signum)
        for sig in (signal.SIGINT, signal.SIGTERM):    # a second signal: this one is already stopping
            signal.signal(sig, signal.SIG_IGN)
        abandon, say = stopping.abandon, stopping.say
        try:
            clause = abandon(out)
        except Exception as e:
            clause = f"could not clean up after the build ({type(e).__name__}: {e})"
        say(f"{'interrupted' if signum == signal.SIGINT else 'terminated'}; {clause}")
        os._exit(128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)


def new_concept_command(args):
    for flag, given, which in (("--page", args.page, "the one page to add to"),
                               ("--after", args.after, "the one section the new one follows")):
        if len(given) > 1:
            print(f"error: new-concept takes one {flag}, got {len(given)} ({', '.join(given)}); name {which}",
                  file=sys.stderr)
            return 2
    if not args.function or not args.page:
        print(f"error: new-concept needs a function and one --page, e.g. {COMMAND} new-concept "
              "model.ops.gelu_forward --page model --after model-relu", file=sys.stderr)
        return 2
    from site_builder.scaffold import ScaffoldError, new_concept
    try:
        for line in new_concept(ROOT, args.function, args.page[0], args.after[0] if args.after else None):
            print(line)
    except ScaffoldError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def new_page_command(args):
    if not args.function or len(args.after) > 1 or args.page:
        print(f"error: new-page needs one slug and a --title, e.g. {COMMAND} new-page dropout --title Dropout "
              "[--after SLUG]", file=sys.stderr)
        return 2
    from site_builder.scaffold import ScaffoldError, new_page
    try:
        for line in new_page(ROOT, args.function, args.title or "", args.after[0] if args.after else None):
            print(line)
    except ScaffoldError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def check_pages_command(args):
    """check --page: one page's problems, in seconds, without building the site."""
    import time
    t0 = time.perf_counter()
    from site_builder.build.page_check import UnknownPages, check_pages
    from site_builder.publish.write import cannot_write
    slugs = list(dict.fromkeys(args.page))
    try:
        failing, warnings, counts = check_pages(ROOT, slugs, args.cache_dir, args.jobs)
    except UnknownPages as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        refused = cannot_write(e, args.out, args.cache_dir)
        if not refused:
            raise
        print(f"error: {refused}", file=sys.stderr)
        return 2
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    for p in failing:
        print(p, file=sys.stderr)
    if failing:
        print(f"check failed: {len(failing)} problem(s) on {', '.join(slugs)}", file=sys.stderr)
        return 1
    print(f"checked {counts['pages']} page(s) ({', '.join(slugs)}): {counts['references']} references, "
          f"{counts['examples']} examples, {counts['links']} links (an #anchor of another "
          f"page only by the full check), no problem, in {time.perf_counter() - t0:.2f} s (nothing written)")
    return 0


def missing_package(error):
    """The one line for a package this Python lacks (None for any other error): not the
    builder's bug but an install step not run, e.g. the machine's python3 outside the venv."""
    if not isinstance(error, ModuleNotFoundError) or not error.name:
        return None
    top = error.name.split(".")[0]
    if (ROOT / top).exists() or (ROOT / f"{top}.py").exists():     # a module of this repository: a real bug
        return None
    return (f"the package '{top}' is not installed in {sys.executable} (No module named '{error.name}'); "
            f"install what the build needs with: cd {ROOT} && {sys.executable} -m pip install -e \".[site]\"")


def main(argv=None):
    parser = _Parser(prog=COMMAND, description=description(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="build", choices=("build", "check", "serve", "new-concept", "new-page"))
    parser.add_argument("function", nargs="?", help="new-concept: the function to document, e.g. model.ops.gelu_forward; "
                                                    "new-page: the page's slug")
    parser.add_argument("--title", help="new-page: the page's title")
    parser.add_argument("--page", action="append", default=[], help="new-concept: the page to add to; check: check only this page")
    parser.add_argument("--after", action="append", default=[],
                        help="new-concept: the section id to put the new section after (default: last); "
                             "new-page: the page to put the new one after in nav")
    parser.add_argument("--out", type=Path, default=ROOT / "site", help="output folder (default: site/)")
    parser.add_argument("--port", type=port_number, default=8000, help="port for serve (default 8000)")
    parser.add_argument("--host", default="127.0.0.1", help="address for serve (default 127.0.0.1)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--no-cache", action="store_true", help="run every example; read and write no cache")
    parser.add_argument("--clean", action="store_true", help="delete the build cache first")
    parser.add_argument("--jobs", type=worker_count, default=None, help="worker processes for examples (default: one per core)")
    parser.add_argument("--retrain", action="store_true", help="train the runs the site shows again, and rerun the examples that read them")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / ".build_cache", help="the build cache (default .build_cache/)")
    args = parser.parse_args(argv)
    if args.command == "new-concept":
        return new_concept_command(args)
    if args.command == "new-page":
        return new_page_command(args)
    if args.title:
        parser.error("--title is for new-page")
    if args.function:
        parser.error(f"unexpected argument '{args.function}'")
    if args.after:
        parser.error("--after is for new-concept")
    if args.page and args.command != "check":
        parser.error("--page is for check and new-concept")
    if args.command != "serve":      # serve stops its own way (site_builder/serve/server.py)
        _stop_on_interrupt(args.out)

    from site_builder.base.problems import BuildFailed
    from site_builder.publish.write import OutputLocked, OutputRefused, cannot_write, check_output, remove_stale
    try:     # build, check and serve: the output folder is the builder's alone (site_builder/publish/write.py)
        check_output(args.out, ROOT)
    except OutputRefused as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    remove_stale(args.out)      # the temporary folders of builds that were killed
    from site_builder.base.cache import CacheRefused, check_cache_dir
    from site_builder.gather.project import project_folders
    try:     # the cache folder is the builder's too: --clean deletes it whole
        check_cache_dir(args.cache_dir, ROOT, project_folders)
    except CacheRefused as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.clean:
        import shutil
        shutil.rmtree(args.cache_dir, ignore_errors=True)     # check_cache_dir said it is a cache
    if args.command == "check" and args.page:
        return check_pages_command(args)
    if args.command == "serve":
        from site_builder.serve.server import serve
        return serve(ROOT, args.out, args.host, args.port, cache_dir=args.cache_dir)
    from site_builder.gather import fingerprint
    use_cache = not args.no_cache and not args.retrain
    if use_cache:
        previous = fingerprint.up_to_date(args.cache_dir, args.out, ROOT,
                                          dict(command=args.command, out=str(args.out.resolve())))
        if previous:
            summary, warnings = previous
            if args.command == "check":
                for w in warnings:
                    print(f"warning: {w}", file=sys.stderr)
            print(f"up to date: nothing changed since the last build ({summary})")
            return 0
    had_site = args.out.is_dir() and any(args.out.iterdir())
    try:
        from site_builder.build import build
        result = build(ROOT, args.out, strict=args.command == "check", cache_dir=args.cache_dir,
                       use_cache=not args.no_cache, retrain=args.retrain, jobs=args.jobs)
    except BuildFailed as e:
        for p in e.problems:
            print(p, file=sys.stderr)
        kept = f"the last good site in {args.out} is untouched" if had_site else f"nothing was written to {args.out}"
        print(f"build failed: {len(e.problems)} problem(s); {kept}", file=sys.stderr)
        return 1
    except OutputLocked as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OutputRefused as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a bug in the builder: say so in one line unless --debug
        refused = cannot_write(e, args.out, args.cache_dir) or missing_package(e)   # or the environment's: a full disk, ...
        if refused:
            print(f"error: {refused}", file=sys.stderr)
            return 2
        if args.debug:
            raise
        print(f"internal error: {type(e).__name__}: {e} (rerun with --debug for the traceback)", file=sys.stderr)
        return 1
    if args.command == "check":
        for w in result.warnings:
            print(f"warning: {w}", file=sys.stderr)
    elif result.warnings:
        print(f"{len(result.warnings)} warning(s); `{COMMAND} check` lists them", file=sys.stderr)
    print(result.summary())
    return 0


if __name__ == "__main__":
    try:
        status = main()
    except KeyboardInterrupt:      # Ctrl-C before a handler was installed
        print("interrupted", file=sys.stderr)
        status = 130
    # Skip the interpreter's teardown: freeing the build's millions of objects one by one took
    # 0.5 s of a 2 s rebuild. Everything the build writes is closed and renamed into place by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
