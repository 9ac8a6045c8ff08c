"""The CPU floor of the builder-overhead case: the libraries' own work alone, against Sphinx.

    python3 benchmarks/library_floor.py              # 5 turns
    python3 benchmarks/library_floor.py --runs 3

Why. `benchmarks/build_speed.py` compares a cold build whose example and training caches are
filled (the "builder overhead") with Sphinx's cold autodoc build, with a goal of <= 1.0x. This
script asks whether that goal can be reached at all on this machine while the site keeps what
it shows: it times only the calls into the libraries the build cannot do without, on exactly
the inputs one build gives them, and nothing of the builder's own code.

  imports       a fresh interpreter importing what the build imports (numpy, jinja2,
                markdown, pygments, yaml, fontTools.subset, quickjs)
  Pygments      highlighting every source file the site shows (model/ and the cited tests),
                as site_builder/render.highlight_into calls it, once each
  KaTeX         rendering every distinct equation of the site in QuickJS
                (site_builder/mathrender._render), KaTeX's load included
  fontTools     the math-font subset for the glyphs the pages draw (fontsubset.subset_font)
  Pagefind      indexing the built site (site_builder/search.index_site)
  syntax trees  CPython's own parser (`ast.parse`) on every file the source index reads
                (the project's package and tests, as source_index.build_index reads them), once each: the
                line numbers, callers and reaches of every page come from these trees

The site's own work (reading the content, analysing the trees, building the view models,
running the templates, the link check, writing ~200 files) comes on top and is not timed here.

Each library case runs in a fresh process and reports the CPU time (user + system, its child
processes included: Pagefind is one) of the calls alone, its imports excluded; the imports
case is the whole interpreter. Their sum is CPU the build must spend; divided by the cores it
is the shortest wall time even a perfectly parallel build could take, before reading any
content, building the source index, running a template or writing a file. Sphinx's cold
build (as build_speed.py runs it) takes turns with the cases, so both see the same load.

How the inputs are found. In a copy of the repository (build_speed.copy_repository): one
cold build fills the caches, then a build with only the code's caches (the builder-overhead
case) runs in one process (--jobs 1) with the three library functions wrapped to record their
arguments. Pagefind indexes that build's output. The names wrapped are the builder's own; if
one is renamed, this script says which and stops.
"""
import argparse
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_speed  # noqa: E402  (the copy, the Sphinx run and the environment are shared)

ROOT = build_speed.ROOT

# Run in the copy: the builder-overhead build, recording what the libraries are given.
RECORD_SCRIPT = """
import pickle, sys
from site_builder.publish import fontsubset
from site_builder.render import mathrender, html as render
calls = dict(tex=[], font=[], highlight=[])
def recording(module, name, kind):
    real = getattr(module, name)
    def wrapper(*args):
        calls[kind].append(args)
        return real(*args)
    setattr(module, name, wrapper)
recording(mathrender, "_render", "tex")
recording(fontsubset, "subset_font", "font")
recording(render, "highlight_into", "highlight")
inputs = sys.argv[3]
sys.argv = ["build_site.py", "--jobs", "1", "--out", sys.argv[1], "--cache-dir", sys.argv[2]]
import build_site
try:
    status = build_site.main()
finally:
    with open(inputs, "wb") as f:
        pickle.dump(dict(tex=calls["tex"], font=calls["font"],
                         highlight=[lines for _, lines in calls["highlight"]]), f)
sys.exit(status)
"""

# Run in the copy: one library case; prints {"cpu": seconds} of the calls alone.
CASE_SCRIPT = """
import json, pickle, resource, sys
def cpu():
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))
case, inputs = sys.argv[1], pickle.load(open(sys.argv[2], "rb"))
if case == "Pygments":
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    work = lambda: [highlight("\\n".join(lines), PythonLexer(stripnl=False, ensurenl=False), HtmlFormatter(nowrap=True))
                    for lines in inputs["highlight"]]
elif case == "KaTeX":
    from site_builder.render import mathrender
    work = lambda: [mathrender._render(*call) for call in inputs["tex"]]
elif case == "fontTools":
    from site_builder.publish import fontsubset
    import fontTools.subset, fontTools.ttLib
    work = lambda: [fontsubset.subset_font(*call) for call in inputs["font"]]
elif case == "syntax trees":
    import ast
    from site_builder.gather.project import load_project
    from site_builder.gather.source_syntax import read_source, source_files
    texts = [read_source(".", rel) for package in load_project(Path(".")).code_folders for rel in source_files(".", package)]
    work = lambda: [ast.parse(text) for text in texts]
elif case == "Pagefind":
    import tempfile
    from site_builder.publish.search import index_site
    work = lambda: index_site(sys.argv[3], tempfile.mkdtemp() + "/pagefind")
start = cpu()
work()
print(json.dumps(dict(cpu=cpu() - start)))
"""

IMPORTS = "import numpy, jinja2, markdown, pygments, yaml, fontTools.subset, quickjs"
CASES = ("imports", "Pygments", "KaTeX", "fontTools", "Pagefind", "syntax trees")


def record_inputs(work: Path, scratch: Path) -> Path:
    """The pickled library inputs of one builder-overhead build in `work`."""
    cache, code_cache, out = scratch / "cache", scratch / "cache-code", scratch / "site"
    build_speed.run_build(work, scratch / "site-cold", cache)
    for kind in build_speed.CODE_CACHE_KINDS:
        if (cache / kind).is_dir():
            shutil.copytree(cache / kind, code_cache / kind)
    inputs = scratch / "inputs.pkl"
    seconds, proc = build_speed.timed([sys.executable, "-c", RECORD_SCRIPT, str(out), str(code_cache), str(inputs)],
                                      work)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        sys.exit(f"the recording build failed (exit {proc.returncode}); if a wrapped function was renamed, "
                 "update RECORD_SCRIPT in benchmarks/library_floor.py")
    found = pickle.loads(inputs.read_bytes())
    for kind, calls in found.items():
        if not calls:
            sys.exit(f"the recording build made no '{kind}' call: the wrapped function may have been renamed; "
                     "update RECORD_SCRIPT in benchmarks/library_floor.py")
    print(f"Inputs of one builder-overhead build: {len(found['highlight'])} files highlighted "
          f"({sum(len(lines) for lines in found['highlight'])} lines), {len(found['tex'])} equations, "
          f"{len(found['font'])} font subset(s); recorded in a --jobs 1 build of {seconds:.2f} s.")
    return inputs


def run_case(work: Path, case: str, inputs: Path, site: Path) -> float:
    """CPU seconds of one case in a fresh process."""
    if case == "imports":
        import resource
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", IMPORTS], cwd=work, env=build_speed.subprocess_env(), check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    proc = subprocess.run([sys.executable, "-c", CASE_SCRIPT, case, str(inputs), str(site)], cwd=work,
                          env=build_speed.subprocess_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        sys.exit(f"the {case} case failed (exit {proc.returncode})")
    return json.loads(build_speed.last_line(proc.stdout))["cpu"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="turns of every case and of Sphinx (default 5)")
    args = parser.parse_args()
    if not build_speed.sphinx_available():
        sys.exit("Sphinx is not importable: pip install -e '.[bench]' (this script compares with it)")
    cores = os.cpu_count() or 1
    print("# The libraries' CPU floor of the builder-overhead case\n")
    print(f"Load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {cores} cores.")
    with tempfile.TemporaryDirectory(prefix="library-floor-") as tmp:
        work, scratch = Path(tmp) / "repo", Path(tmp) / "scratch"
        build_speed.copy_repository(ROOT, work, with_untracked=False)
        scratch.mkdir()
        inputs = record_inputs(work, scratch)
        cpu = {case: [] for case in CASES}
        sphinx = []
        for turn in range(args.runs):
            for case in CASES:
                cpu[case].append(run_case(work, case, inputs, scratch / "site"))
            shutil.rmtree(scratch / "sphinx", ignore_errors=True)
            sphinx.append(build_speed.run_sphinx(work, scratch / "sphinx", fresh=True)[0])
            print(f"  turn {turn + 1}/{args.runs}: " + ", ".join(f"{c} {cpu[c][-1]:.2f} s" for c in CASES)
                  + f"; Sphinx cold build {sphinx[-1]:.2f} s wall", flush=True)
    print(f"Load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| case | CPU s (median) | min | max |\n|---|---:|---:|---:|")
    medians = {}
    for case in CASES:
        medians[case] = statistics.median(cpu[case])
        print(f"| {case} | {medians[case]:.2f} | {min(cpu[case]):.2f} | {max(cpu[case]):.2f} |")
    total, s_cold = sum(medians.values()), statistics.median(sphinx)
    print(f"| **sum** | **{total:.2f}** | | |\n")
    print(f"Shortest wall time of these calls alone on {cores} cores, perfectly parallel: {total / cores:.2f} s.")
    print(f"Sphinx's whole cold build (wall, median of {len(sphinx)}): {s_cold:.2f} s.")
    print(f"Floor / Sphinx = {total / cores / s_cold:.2f}x: the builder-overhead goal (<= 1.0x) "
          + ("cannot be met with these libraries on this machine." if total / cores > s_cold
             else "is not ruled out by the libraries alone."))


if __name__ == "__main__":
    main()
