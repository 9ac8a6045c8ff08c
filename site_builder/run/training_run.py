"""The training runs the pages read: the machinery that trains each once, caches it, and hands it
to every example that reads it. What to train, on what, and how a page names a run is the
project's recipe, in its hooks file (the hook `training_runs`, content/README.md).

A run is made by a function of the hooks: it computes its key with `run_key` (the syntax trees
of the documented package, of the hooks file and of this module, NumPy's version, and whatever
else the run reads, such as its data and configs, which the recipe passes), and trains through
`cached_run(kind, key, compute)`, which holds the run in memory for the process and stores it
in the build cache. A normal build does not pay for training: a run trains again when one of
its inputs changes, or when the build is asked to (`--retrain`, once per run and build). The
build trains each run in a child of its own beside the examples that do not read it, and
hands the result to this process (`held_runs`, `adopt`), so the children forked after that
read it from memory.

Trade-offs:
- The key is on whole files' syntax trees: a comment or a moved function does not retrain, but
  an edit of the hooks that has nothing to do with training does (a finer key would have to
  know what a recipe calls).
- The helpers a recipe shares (`in_segments`, `read_rows`) are small on purpose: a run that is
  stopped and resumed at each snapshot, and the JSON lines it logs without the wall-clock
  fields that would make two builds differ, are how any run the pages read stays reproducible.
"""
import json
from pathlib import Path

import numpy as np

from site_builder.base.cache import BuildCache, digest

_state = {"cache": BuildCache(None), "retrain": False}


def configure(cache: BuildCache, retrain: bool = False):
    """Called by the build: where the runs are cached, and whether to ignore the cache."""
    _state["cache"], _state["retrain"], _state["retrained"] = cache, retrain, set()


def _retrain(kind: str) -> bool:
    """--retrain ignores the cache for each run once per build, not once per example."""
    return _state["retrain"] and kind not in _state.setdefault("retrained", set())


def code_fingerprint(path: Path) -> str:
    """The source's syntax tree without positions: comments, blank lines and moved code
    leave it unchanged, so they do not retrain (nothing the run shows depends on line numbers).
    Read as a tree, so an example that reads the run is keyed on the tree too, not the bytes."""
    from site_builder.gather.inputs import syntax_tree, syntax_tree_read
    with syntax_tree_read():
        data = path.read_bytes()
    return syntax_tree(data)


def code_fingerprints(root: Path) -> list:
    """The syntax trees of the documented package's modules and of the hooks file, by path, and of
    this file: what every training run depends on. Reading the hooks file here also makes it an
    input of the example that asked (site_builder/gather/inputs.py records the files a child opens)."""
    from site_builder.gather.project import load_project
    root = Path(root)
    project = load_project(root)
    files = sorted(p for p in (root / project.package).rglob("*.py") if "__pycache__" not in p.parts)
    if project.hooks:
        files.append(root / project.hooks)
    return [(p.relative_to(root).as_posix(), code_fingerprint(p)) for p in files] + \
        [("training_run.py", code_fingerprint(Path(__file__)))]


def run_key(root: Path, kind: str, *inputs) -> str:
    """The cache key of a run of this kind: the code it runs (code_fingerprints), NumPy's version,
    and the other inputs the recipe names (its data's bytes, its configs, its prompt...)."""
    return digest(kind, *code_fingerprints(root), np.__version__, *inputs)


def training_runs(root: Path) -> dict:
    """{kind: (how a page names it, fn(root))}: the hook `training_runs`, or {} without it."""
    from site_builder.gather.project import call_hook, load_project
    return dict(call_hook(root, load_project(root), "training_runs") or {})


def run_names(root: Path) -> dict:
    """{kind: how a page names that run}."""
    return {kind: name for kind, (name, _) in training_runs(root).items()}


def runs_read() -> set:
    """The kinds of run read in this process since the last clear_runs_read() (the example
    runner asks, per example)."""
    return set(_state.setdefault("read", set()))


def clear_runs_read():
    _state["read"] = set()


def cached_run(kind: str, key: str, compute):
    """compute() once per key: held in memory for the process (one run per kind), stored in the
    build cache; --retrain ignores both once per kind and build."""
    _state.setdefault("read", set()).add(kind)
    held = _state.setdefault("held", {})
    if kind in held and held[kind][0] == key and not _retrain(kind):
        return held[kind][1]
    run = None if _retrain(kind) else _state["cache"].get("training", key)
    if run is None:
        run = compute()
        _state["cache"].put("training", key, run)
        _state.setdefault("retrained", set()).add(kind)
    held[kind] = (key, run)
    return run


def held_runs() -> dict:
    """The runs held in this process, {kind: (key, run)}: what a child that trained them
    hands back to the build (site_builder/run/example_runner.py)."""
    return dict(_state.get("held", {}))


def adopt(held: dict):
    """Hold runs trained in a child, so the children forked after this read them from memory;
    a run adopted under --retrain counts as retrained for this build."""
    _state.setdefault("held", {}).update(held)
    if _state["retrain"]:
        _state.setdefault("retrained", set()).update(held)


def in_segments(stops, run_to) -> dict:
    """{stop: run_to(stop, resume)} for each stop in order: one run, stopped at each stop and
    resumed from there (resume is False for the first), so what each stop records comes from
    the same run as what the last one does."""
    return {stop: run_to(stop, i > 0) for i, stop in enumerate(stops)}


def read_rows(path: Path, drop=()) -> list:
    """The rows of a JSON-lines log, without the fields `drop` names (wall-clock times: they
    would make two builds differ)."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line]
    for row in rows:
        for name in drop:
            row.pop(name, None)
    return rows
