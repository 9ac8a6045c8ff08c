"""Wall-clock time of the site build, cold and incremental, against a Sphinx build of `model/`.

    python benchmarks/build_speed.py                  # 5 runs per case (3 for the cold build)
    python benchmarks/build_speed.py --runs 3 --skip-sphinx
    python benchmarks/build_speed.py --check-edits --runs 5   # only the three `check` cases below

What it measures. Every case times the whole command, interpreter start included
(`subprocess.run([sys.executable, "build_site.py", "--out", ...])` between two
`time.perf_counter()` calls), and reports the median, min and max over its runs:

  cold build      a fresh --cache-dir and a fresh output folder every run: every example
                  and the training run the site shows are computed again
  no-op rebuild   the same command again, nothing changed
  content edit    one sentence appended to the Markdown body of content/pages/block.md
                  (a different sentence every run, so every run really changes the file)
  content edit, served
                  the same edit with `build_site.py serve` running (a warm process, started
                  once on the same cache): the time from writing the file until the server
                  answers a request for block.html with the new sentence in it (polled
                  every 10 ms). That is what a maintainer previewing an edit waits for. serve
                  brings the search index up to date just after (see site_builder/serve/rebuild.py).
  model edit      one comment line appended to model/ops.py (different every run). The
                  training run is cached on the syntax tree of model/*.py, so a comment does
                  not retrain it; the examples are cached on file bytes, so the examples that
                  import ops.py run again. That is expected.

  check cases (`--check-edits`: these alone, after one warm-up `check` that fills the cache)
                  `build_site.py check` five ways, taking turns run by run:
                  - no edit: the same check again (the stamp's no-op path);
                  - one-function model edits, of three functions of model/: a comment on the
                    function's last line, another each run (a new text of one function, the
                    same line count, so the pages' snippets still match its lines). Which
                    functions is computed from the input sets the warm-up check stored (how many
                    examples' keys read each function: those that entered it, and those keyed
                    on its file's bytes): the one nearest the six examples of issue 26's
                    example, the median one, and model.ops.smoothed_targets (the case measured
                    before). Examples are keyed on the functions their run entered
                    (site_builder/gather/function_keys.py), pages on what they asked the
                    source index (site_builder/render/pages/reads.py), so only the examples
                    that reached the function run again, and only the pages that read its
                    lines or show those examples are gathered again. Goal: <= 10 s on a quiet
                    machine.
                  - module-level model edit: a new constant at the end of model/ops.py: every
                    example that imports ops.py runs again, which is what any edit of ops.py did
                    before examples were keyed on functions (today's behaviour, for comparison).

  builder overhead
                  a cold build with the caches of the code the site runs already filled: a
                  fresh output folder and a fresh --cache-dir holding only the kinds
                  `examples`, `example-inputs`, `training` and `shapes` (the examples, the two
                  training runs and the shape probes, as the cold build of the same turn left
                  them); everything else (pages, HTML, math, highlighting, search index, font
                  subset, templates, stamps) is cold. This is the work the builder does that
                  Sphinx also does (read the code, render pages), so it is the case compared
                  with Sphinx's cold autodoc build. Goal: <= 1.0x.
  examples        all the examples and both training runs, with nothing cached, through the
                  builder's own runner (site_builder.run.example_runner.run_examples, one worker per
                  core, as the build runs them) in a child process: its wall time against its
                  CPU time (its own and its children's, from getrusage) divided by the cores.
                  Parallel efficiency = CPU / cores / wall. Goal: >= 90 %.

The cold build is not compared with Sphinx as a goal any more: Sphinx runs none of the code,
while the cold build runs 146 examples and two training runs; the ratio is printed for
reference only.

How. The script never builds in the checkout it lives in: it copies the files git tracks
(`git -C ROOT ls-files`; with --with-untracked also untracked files that .gitignore does not
exclude; benchmarks/sphinx/ always) into a temporary folder, builds there, and deletes the
folder at the end (--keep keeps it). Each run's own summary line (the last line the build prints) is shown as it
finishes. A build that fails stops the benchmark: timing a failed build measures nothing.

Sphinx. In the same temporary copy, Sphinx builds the same `model/` package with autodoc,
viewcode and MathJax (benchmarks/sphinx/: conf.py, and index.rst with one automodule per
module, :members: and :undoc-members:) as `python3 -m sphinx -b html -q -E` into a fresh
output folder per run (cold), then without -E into the last one (no-op, for reference). The
two tools take turns run by run (cold builds, then no-op rebuilds, before any edit), so
both see the same load; the ratio ours/Sphinx compares their medians. Sphinx is a
benchmark-only extra (`pip install -e ".[bench]"`); if it is not importable, that part is
skipped.

Every subprocess (both tools) runs with OPENBLAS_NUM_THREADS=1. The machine may be shared:
the load average is printed before and after, and the spread (min, max) says how noisy the
runs were.
"""
import argparse
import contextlib
import importlib.util
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPHINX_DIR = Path("benchmarks") / "sphinx"
CONTENT_FILE = Path("content") / "pages" / "block.md"
MODEL_FILE = Path("model") / "ops.py"
ISSUE_REACH = 6                  # issue 26: "a change to one function that six examples use"
GOAL_ONE_FUNCTION_S = 10.0
GOAL_NOOP_S = 0.3
GOAL_CONTENT_S = 0.5
GOAL_OVERHEAD_RATIO = 1.0
GOAL_EFFICIENCY = 0.90
CODE_CACHE_KINDS = ("examples", "example-inputs", "training", "shapes")
# Run in the copy: every example and both training runs, uncached, as the build runs them.
EXAMPLES_SCRIPT = """
import json, os, resource, sys, time
from pathlib import Path
from site_builder.build.example_plan import example_requests, training_step
from site_builder.base.cache import BuildCache
from site_builder.gather.content import load_content
from site_builder.run.example_runner import ExampleStore, run_examples
root, problems = Path.cwd(), []
content = load_content(root, problems)
requests = example_requests(root, content)
store = ExampleStore(root, BuildCache(Path(sys.argv[1])))
cores = os.cpu_count() or 1
cpu = lambda who: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(who))
before = cpu(resource.RUSAGE_SELF) + cpu(resource.RUSAGE_CHILDREN)
start = time.perf_counter()
out = run_examples(root, requests, problems, store, cores, shared=training_step(root, {r.ref for r in requests}))
wall = time.perf_counter() - start
used = cpu(resource.RUSAGE_SELF) + cpu(resource.RUSAGE_CHILDREN) - before
print(json.dumps(dict(wall=wall, cpu=used, cores=cores, examples=len(out.results),
                      failed=sum(1 for p in problems if not getattr(p, "warning", False)))))
"""


def subprocess_env():
    """The environment of every timed command: one BLAS thread, for both tools."""
    return dict(os.environ, OPENBLAS_NUM_THREADS="1")


def tracked_files(root: Path, with_untracked: bool):
    """Paths (relative to root) that git tracks; optionally untracked, not ignored, ones too."""
    cmd = ["git", "-C", str(root), "ls-files", "-z", "--cached"]
    if with_untracked:
        cmd += ["--others", "--exclude-standard"]
    out = subprocess.run(cmd, capture_output=True, check=True).stdout
    return sorted({Path(p.decode()) for p in out.split(b"\0") if p})


def copy_repository(root: Path, dest: Path, with_untracked: bool):
    """Copy the repository's files into dest (files deleted in the checkout are skipped)."""
    count = 0
    for rel in tracked_files(root, with_untracked):
        src = root / rel
        if not src.is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
        count += 1
    if not (dest / SPHINX_DIR).is_dir() and (root / SPHINX_DIR).is_dir():
        shutil.copytree(root / SPHINX_DIR, dest / SPHINX_DIR)  # this benchmark's own config, tracked or not
    return count


def timed(cmd, cwd: Path):
    """(seconds, completed process) for one command, interpreter start included."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=subprocess_env(), capture_output=True, text=True)
    return time.perf_counter() - start, proc


def last_line(text: str):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def run_build(work: Path, out: Path, cache: Path):
    """Seconds and summary line of one `build_site.py` run; exits if the build fails."""
    seconds, proc = timed([sys.executable, "build_site.py", "--out", str(out), "--cache-dir", str(cache)], work)
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr[-4000:])
        sys.exit(f"the build failed (exit {proc.returncode}): nothing to time")
    return seconds, last_line(proc.stdout)


def append_text(path: Path, text: str):
    """Append text to a file, on a line of its own."""
    body = path.read_text(encoding="utf-8")
    path.write_text(body + ("" if body.endswith("\n") else "\n") + text, encoding="utf-8")


def edit_content(work: Path, i: int):
    append_text(work / CONTENT_FILE, f"\nBenchmark sentence number {i}, added to change the page.\n")


def edit_model(work: Path, i: int):
    append_text(work / MODEL_FILE, f"# benchmark comment number {i}\n")


def function_end(path: Path, def_path: str) -> int:
    """The last line (1-based) of the function `def_path` ("f", "Class.method") of a file."""
    import ast
    body = ast.parse(path.read_text(encoding="utf-8")).body
    node = None
    for name in def_path.split("."):
        node = next(n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and n.name == name)
        body = node.body
    return node.end_lineno


def function_editor(work: Path, rel: str, def_path: str):
    """edit(i): a comment on the last line of the function, another each run: a new text of that
    one function, the same line count (the pages' snippets still match its lines)."""
    path = work / rel
    n = function_end(path, def_path)
    original = path.read_text(encoding="utf-8").splitlines(keepends=True)

    def edit(i):
        lines = list(original)
        lines[n - 1] = lines[n - 1].rstrip("\n") + f"  # benchmark edit {i}\n"
        path.write_text("".join(lines), encoding="utf-8")
    return edit


def function_reach(work: Path, cache: Path, folder: str = "model") -> dict:
    """{(file, def path): the examples whose key reads that function}, from the input sets the
    warm-up check stored: the examples that entered it, and those keyed on its file's bytes."""
    import collections
    import pickle
    sys.path.insert(0, str(work))        # the copy's classes, to unpickle its cache
    entered, whole = collections.defaultdict(set), collections.defaultdict(set)
    for n, entry in enumerate(sorted((cache / "example-inputs").rglob("*.pickle"))):
        for k, inputs in enumerate(pickle.loads(entry.read_bytes())):
            for rel, paths, _ in inputs.functions:
                for def_path in paths:
                    entered[(rel, def_path)].add((n, k))
            for rel, _ in inputs.files:
                whole[rel].add((n, k))
    return {(rel, p): len(who | whole[rel]) for (rel, p), who in entered.items() if rel.startswith(folder + "/")}


def chosen_functions(reach: dict) -> list:
    """(file, def path, reach) of the functions the one-function cases edit: the one whose reach
    is nearest the issue's six examples, the median one, and smoothed_targets (the case measured
    before, for comparison)."""
    ranked = sorted(reach.items(), key=lambda item: (item[1], item[0]))
    near = min(ranked, key=lambda item: (abs(item[1] - ISSUE_REACH), item[1]))
    median = ranked[len(ranked) // 2]
    old = ((MODEL_FILE.as_posix(), "smoothed_targets"), reach.get((MODEL_FILE.as_posix(), "smoothed_targets")))
    return [(rel, p, r) for (rel, p), r in dict.fromkeys([near, median, old])]


def run_check(work: Path, out: Path, cache: Path):
    """Seconds and summary line of one `build_site.py check` run; exits if the check fails."""
    seconds, proc = timed([sys.executable, "build_site.py", "check", "--out", str(out), "--cache-dir", str(cache)], work)
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout[-4000:])
        sys.stderr.write(proc.stderr[-4000:])
        sys.exit(f"the check failed (exit {proc.returncode}): nothing to time")
    return seconds, last_line(proc.stdout)


def one_function_case(function, reach) -> str:
    return f"check after a one-function model edit: {function} (reached by {reach} examples)"


def check_steps(work: Path, scratch: Path, functions):
    """The `check` cases, sharing one output folder and cache; functions: (file, def path,
    reach) of the one-function edits."""
    out, cache = scratch / "site-check", scratch / "cache-check"
    edits = {one_function_case(rel[:-3].replace("/", ".") + "." + p, r): function_editor(work, rel, p)
             for rel, p, r in functions}
    return {"check, no edit": lambda i: run_check(work, out, cache),
            **{name: (lambda i, edit=edit: (edit(i), run_check(work, out, cache))[1]) for name, edit in edits.items()},
            "check after a module-level model edit (every example of ops.py, as any edit before)":
                lambda i: (append_text(work / MODEL_FILE, f"_BENCHMARK_CONSTANT_{i} = {i}\n"),
                           run_check(work, out, cache))[1]}


def measure(steps: dict, runs: int):
    """{name: [seconds]}: for i in 0..runs-1, call every step(i) in turn (so cases measured
    together take turns and share the machine's noise). A step returns (seconds, summary)."""
    times = {name: [] for name in steps}
    for i in range(runs):
        for name, step in steps.items():
            seconds, summary = step(i)
            times[name].append(seconds)
            print(f"  {name} {i + 1}/{runs}: {seconds:.2f} s | {summary}", flush=True)
    return times


def site_steps(work: Path, scratch: Path):
    """The four cases as {name: step(i)}, in the order they must run: all share one output
    folder and cache, so the no-op and the edits start from the last cold build."""
    out, cache = scratch / "site", scratch / "cache"

    def cold(i):
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
        return run_build(work, out, cache)

    def noop(i):
        return run_build(work, out, cache)

    def content(i):
        edit_content(work, i)
        return run_build(work, out, cache)

    def model(i):
        edit_model(work, i)
        return run_build(work, out, cache)

    def overhead(i):
        # the cold build just before (same turn) filled `cache`; keep only the code's kinds
        filled = scratch / "cache-code-only"
        shutil.rmtree(filled, ignore_errors=True)
        shutil.rmtree(scratch / "site-overhead", ignore_errors=True)
        for kind in CODE_CACHE_KINDS:
            if (cache / kind).is_dir():
                shutil.copytree(cache / kind, filled / kind)
        for marker in cache.glob("*"):
            if marker.is_file():
                shutil.copy2(marker, filled / marker.name)
        return run_build(work, scratch / "site-overhead", filled)

    return {"cold build": cold, "builder overhead": overhead, "no-op rebuild": noop,
            f"edit {CONTENT_FILE.as_posix()}": content, f"edit {MODEL_FILE.as_posix()}": model}


def examples_step(work: Path, scratch: Path, record: list):
    """{name: step(i)}: every example and training run, uncached, in a child; `record` gets
    each run's {wall, cpu, cores, ...}."""
    import json

    def examples(i):
        cache = scratch / "cache-examples"
        shutil.rmtree(cache, ignore_errors=True)
        seconds, proc = timed([sys.executable, "-c", EXAMPLES_SCRIPT, str(cache)], work)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-4000:])
            sys.exit(f"running the examples failed (exit {proc.returncode})")
        run = json.loads(last_line(proc.stdout))
        record.append(run)
        efficiency = run["cpu"] / run["cores"] / run["wall"]
        return run["wall"], (f"{run['examples']} examples and the training runs: wall {run['wall']:.1f} s, "
                             f"CPU {run['cpu']:.1f} s on {run['cores']} cores, efficiency {efficiency:.0%}")

    return {"examples (all, uncached)": examples}


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str):
    """The body of a GET, or None while the server is not answering."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode("utf-8", "replace")
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def wait_for(condition, timeout: float, poll: float):
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if condition():
            return True
        time.sleep(poll)
    return False


def served_steps(work: Path, scratch: Path, stack):
    """{name: step(i)} for an edit under `serve`; the server is stopped by `stack` at the end."""
    out, cache, port = scratch / "site", scratch / "cache", free_port()
    server = subprocess.Popen([sys.executable, "build_site.py", "serve", "--out", str(out), "--cache-dir", str(cache),
                               "--port", str(port)], cwd=work, env=subprocess_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stack.callback(lambda: (server.terminate(), server.wait(30)))
    url = f"http://127.0.0.1:{port}/{CONTENT_FILE.stem}.html"
    if not wait_for(lambda: fetch(url) is not None, 300, 0.2):
        sys.exit("build_site.py serve did not answer within 300 s")

    def content(i):
        sentence = f"Served sentence number {i}, added to change the page."
        time.sleep(2)   # untimed: edits come at a person's pace, after the last search refresh
        start = time.perf_counter()
        append_text(work / CONTENT_FILE, f"\n{sentence}\n")
        if not wait_for(lambda: sentence in (fetch(url) or ""), 60, 0.01):
            sys.exit("serve did not show the edit within 60 s")
        return time.perf_counter() - start, "served with the new sentence"

    return {f"edit {CONTENT_FILE.as_posix()}, served": content}


def sphinx_available():
    return importlib.util.find_spec("sphinx") is not None


def sphinx_version():
    proc = subprocess.run([sys.executable, "-m", "sphinx", "--version"], capture_output=True, text=True)
    return last_line(proc.stdout or proc.stderr)


def missing_automodules(work: Path):
    """Modules of model/ that benchmarks/sphinx/index.rst does not document (should be none)."""
    index = (work / SPHINX_DIR / "index.rst").read_text(encoding="utf-8")
    modules = sorted(p.stem for p in (work / "model").glob("*.py") if p.stem != "__init__")
    return [m for m in modules if f".. automodule:: model.{m}\n" not in index]


def run_sphinx(work: Path, out: Path, fresh: bool):
    """Seconds and a one-line note (warning count) for one Sphinx build; exits if it fails."""
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q"] + (["-E"] if fresh else [])
    seconds, proc = timed(cmd + [str(SPHINX_DIR), str(out)], work)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        sys.exit(f"the Sphinx build failed (exit {proc.returncode})")
    warnings = sum(1 for line in proc.stderr.splitlines() if "WARNING" in line or "ERROR" in line)
    return seconds, f"{warnings} docstring warning(s)/error(s) from Sphinx"


def sphinx_steps(work: Path, scratch: Path):
    """{name: step(i)}: cold (-E, fresh output folder), then no-op (the last output again)."""
    out = scratch / "sphinx"

    def cold(i):
        shutil.rmtree(out, ignore_errors=True)
        return run_sphinx(work, out, fresh=True)

    def noop(i):
        return run_sphinx(work, out, fresh=False)

    return {"Sphinx cold build": cold, "Sphinx no-op rebuild": noop}


def run_all(work: Path, scratch: Path, runs: int, cold_runs: int, with_sphinx: bool):
    """(site results, Sphinx results or None), each {case: [seconds]}. The two tools take
    turns run by run, cold builds first, then no-op rebuilds (before any edit, so Sphinx's
    no-op has nothing to reread either); then the site's two edit cases, one after the other."""
    site = site_steps(work, scratch)
    sphinx = sphinx_steps(work, scratch) if with_sphinx else {}
    results = {}
    for case, n in (("cold build", cold_runs), ("no-op rebuild", runs)):
        pair = {case: site.pop(case)}
        if case == "cold build":        # needs the cache the cold build of its turn filled
            pair["builder overhead"] = site.pop("builder overhead")
        if sphinx:
            pair[f"Sphinx {case}"] = sphinx.pop(f"Sphinx {case}")
        results.update(measure(pair, n))
    for name, step in site.items():  # the edits: each case starts from the state the last one left
        results.update(measure({name: step}, runs))
    with contextlib.ExitStack() as stack:
        results.update(measure(served_steps(work, scratch, stack), runs))
    examples_runs = []
    results.update(measure(examples_step(work, scratch, examples_runs), cold_runs))
    site_results = {k: v for k, v in results.items() if not k.startswith("Sphinx")}
    sphinx_results = {k: v for k, v in results.items() if k.startswith("Sphinx")}
    return site_results, (sphinx_results or None), examples_runs


def table(results):
    rows = ["| case | median s | min | max | runs |", "|---|---:|---:|---:|---:|"]
    for name, times in results.items():
        rows.append(f"| {name} | {statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f} | {len(times)} |")
    return "\n".join(rows)


def goal(text, value, limit, limit_name="goal"):
    """One goal as a markdown list item: met when the median value <= limit (seconds)."""
    return f"- {text}: {'met' if value <= limit else 'not met'} (median {value:.2f} s; {limit_name} {limit:.2f} s)"


def efficiency(runs):
    """Median parallel efficiency (CPU / cores / wall) of the examples runs."""
    return statistics.median(r["cpu"] / r["cores"] / r["wall"] for r in runs)


def goal_lines(site, sphinx, examples_runs):
    """One line per goal, with the medians it was judged on."""
    med = {name: statistics.median(times) for name, times in site.items()}
    if sphinx:
        s_cold = statistics.median(sphinx["Sphinx cold build"])
        ratio = med["builder overhead"] / s_cold
        overhead = (f"- builder overhead (code caches filled) no slower than Sphinx's cold autodoc build: "
                    f"{'met' if ratio <= GOAL_OVERHEAD_RATIO else 'not met'} (median {med['builder overhead']:.2f} s "
                    f"/ Sphinx {s_cold:.2f} s = {ratio:.2f}x; goal <= {GOAL_OVERHEAD_RATIO:.1f}x)")
    else:
        overhead = "- builder overhead no slower than Sphinx's cold autodoc build: not measured (Sphinx skipped)"
    eff = efficiency(examples_runs)
    examples = (f"- examples and training runs in parallel: {'met' if eff >= GOAL_EFFICIENCY else 'not met'} "
                f"(median parallel efficiency {eff:.0%}; goal >= {GOAL_EFFICIENCY:.0%})")
    return "\n".join([
        overhead,
        examples,
        goal(f"no-op rebuild within {GOAL_NOOP_S} s", med["no-op rebuild"], GOAL_NOOP_S),
        goal(f"one content file within {GOAL_CONTENT_S} s (build command, fresh process)",
             med[f"edit {CONTENT_FILE.as_posix()}"], GOAL_CONTENT_S),
        goal(f"one content file within {GOAL_CONTENT_S} s (serve, edit to served page)",
             med[f"edit {CONTENT_FILE.as_posix()}, served"], GOAL_CONTENT_S),
    ])


def sphinx_comparison(site, sphinx):
    cold = statistics.median(site["cold build"])
    noop = statistics.median(site["no-op rebuild"])
    s_cold = statistics.median(sphinx["Sphinx cold build"])
    s_noop = statistics.median(sphinx["Sphinx no-op rebuild"])
    overhead = statistics.median(site["builder overhead"])
    return (f"Sphinx ({sphinx_version()}, autodoc + viewcode + mathjax, `-b html -q -E`, fresh output folder):\n"
            f"- builder overhead (code caches filled): ours {overhead:.2f} s / Sphinx {s_cold:.2f} s = **{overhead / s_cold:.2f}x**\n"
            f"- cold, for reference (ours runs every example and both training runs, Sphinx runs no code): "
            f"ours {cold:.2f} s / Sphinx {s_cold:.2f} s = {cold / s_cold:.2f}x\n"
            f"- no-op (for reference): ours {noop:.2f} s / Sphinx {s_noop:.2f} s = {noop / s_noop:.2f}x")


def load_average():
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs per case (default 5)")
    parser.add_argument("--cold-runs", type=int, default=None, help="runs of the cold builds (default min(3, --runs))")
    parser.add_argument("--skip-sphinx", action="store_true", help="do not time Sphinx")
    parser.add_argument("--with-untracked", action="store_true",
                        help="copy untracked files that .gitignore does not exclude too (default: tracked files only)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy and print where it is")
    parser.add_argument("--check-edits", action="store_true",
                        help="time only `check`: no edit, a one-function model edit, a module-level model edit")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    args.cold_runs = args.cold_runs or min(3, args.runs)
    return args


def check_edits(work: Path, scratch: Path, runs: int):
    """--check-edits: a warm-up check (it fills the cache), then the three check cases in turns."""
    seconds, summary = run_check(work, scratch / "site-check", scratch / "cache-check")
    print(f"  warm-up check (cache filled): {seconds:.2f} s | {summary}", flush=True)
    reach = function_reach(work, scratch / "cache-check")
    counts = sorted(reach.values())
    print(f"  examples per function of model/ (those whose key reads it), over {len(counts)} functions: "
          f"min {counts[0]}, median {counts[len(counts) // 2]}, max {counts[-1]}", flush=True)
    functions = chosen_functions(reach)
    results = measure(check_steps(work, scratch, functions), runs)
    print(f"\nLoad average (1, 5, 15 min) after: {load_average()}\n")
    print(table(results))
    print("\nGoals:")
    for rel, p, r in functions:
        name = one_function_case(rel[:-3].replace("/", ".") + "." + p, r)
        print(goal(name, statistics.median(results[name]), GOAL_ONE_FUNCTION_S))
    return 0


def main(argv=None):
    args = parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="build-speed-"))
    work = scratch / "repo"
    try:
        n = copy_repository(ROOT, work, args.with_untracked)
        print(f"# Build speed\n\nCopied {n} {'tracked and untracked' if args.with_untracked else 'tracked'} "
              f"files of {ROOT} into {work}.")
        print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; "
              f"every subprocess runs with OPENBLAS_NUM_THREADS=1.")
        print(f"Load average (1, 5, 15 min) before: {load_average()}\n", flush=True)
        with_sphinx = not args.skip_sphinx and sphinx_available()
        if args.skip_sphinx:
            print("Sphinx: skipped (--skip-sphinx).")
        elif not with_sphinx:
            print('Sphinx: not importable, skipped (pip install -e ".[bench]" to compare).')
        elif missing_automodules(work):
            print(f"note: benchmarks/sphinx/index.rst has no automodule for "
                  f"model.{', model.'.join(missing_automodules(work))}")
        if args.check_edits:
            return check_edits(work, scratch, args.runs)
        site, sphinx, examples_runs = run_all(work, scratch, args.runs, args.cold_runs, with_sphinx)
        print(f"\nLoad average (1, 5, 15 min) after: {load_average()}\n")
        print(table({**site, **(sphinx or {})}))
        if sphinx:
            print("\n" + sphinx_comparison(site, sphinx))
        print("\nGoals:\n" + goal_lines(site, sphinx, examples_runs))
    finally:
        if args.keep:
            print(f"\nkept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
