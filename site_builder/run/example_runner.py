"""Stage 4, run: every example in a child process of its own, under a time limit, with its
inputs recorded, and its result cached only while those inputs are unchanged.

The cache holds, per example (`module:function`), the last few sets of inputs it was seen
to read (site_builder/gather/inputs.py) and, per set, the result. A build reuses a result only if
every input of its set still has the recorded digest: the example's module and everything
it imports, the data files it opened, the folders it listed, the packages it loaded. So a new
data file is covered without anyone listing it, and an edit and its revert both find their
result. A failed example stores nothing.

Everything an example can do wrong is one problem line naming the content file and line
that asked for it: it raises (with the package's line that raised), it does not import (once
per module, with what to install), it runs past its time limit (with the line it was
executing), it calls `sys.exit` or `os._exit`, its process is killed, it returns something
that is not an `ExampleResult`, or its result is too big. The build goes on and collects
every other problem.

The training runs the pages show (the hook `training_runs`) are shared work: the examples that
read them wait until they are done (each in a child too), and the trained runs are handed back
to this process, so every later child inherits them instead of reading them again.
"""
import dataclasses
import functools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from site_builder.base.cache import canonical, digest
from site_builder.run.blame import raising_line
from site_builder.run.examples import ExampleResult, _imports, _stamp, dependency_files, load_example
from site_builder.gather.inputs import InputState, Inputs, Recorder, note_entered
from site_builder.gather.project import load_project
from site_builder.gather.playground import split_ref
from site_builder.base.problems import Problem
from site_builder.base.worker import Call, run_calls

DEFAULT_TIMEOUT = 60.0           # seconds; the slowest example took 2.9 s on 2 cores at load average 5
RUN_TIMEOUT = 900.0              # a training run the pages read
VARIANTS_KEPT = 8                # input sets remembered per example (an edit and its revert)
BLOCK_KINDS = {"steps", "matrix", "gradcheck", "table", "svg", "stepper"}
# The recording code itself: input sets recorded by another version of it are not trusted.
_BUILDER = Path(__file__).parents[1]
RECORDING = digest(*[(_BUILDER / n).read_bytes()
                     for n in ("gather/inputs.py", "gather/function_keys.py", "base/worker.py", "run/example_runner.py",
                               "run/shape_recorder.py")])
INSTALL_HINTS = {"pytest": "the tests' extra: python3 -m pip install -e \".[test]\"",
                 "hypothesis": "the tests' extra: python3 -m pip install -e \".[test]\""}


@dataclass
class Request:
    ref: str                      # module:function
    file: str                     # the content file that asks for it
    line: int
    timeout: float = DEFAULT_TIMEOUT


@dataclass
class SharedStep:
    """Work some examples need done before they run (the training runs), done once, each
    run in a child of its own. runs: {name: callable returning what to hand back};
    adopt(value) takes a run's value in this process so later children inherit it.
    needed_by: the refs that wait, or a function returning them, called only if an example
    must run (finding the readers parses every example's imports). before_readers(): what
    every waiting example would compute for itself, computed once in this process before they
    are forked (so each child inherits it), when more than one waits."""
    runs: dict
    needed_by: object
    adopt: object = None
    before_readers: object = None


@dataclass
class Outcomes:
    results: dict = field(default_factory=dict)      # ref -> (ExampleResult or None, from_cache)
    identities: dict = field(default_factory=dict)   # ref -> its valid result's identity (ExampleStore.identity)


class ExampleStore:
    """Results keyed on the inputs they read. `lookup` finds a valid one without loading it."""

    def __init__(self, root: Path, cache, state: InputState = None):
        self.root, self.cache = Path(root), cache
        self.state = state or InputState(root)
        self._variants = {}
        self.used = {}           # ref -> the Inputs of the result this build uses

    def _slot(self, ref):
        """Where the input sets of `ref` are kept; how they are recorded is part of the key."""
        return digest("example inputs", ref, RECORDING)

    def variants(self, ref) -> list:
        if ref not in self._variants:
            stored = self.cache.get("example-inputs", self._slot(ref)) if self.cache is not None else None
            self._variants[ref] = [v for v in (stored or []) if isinstance(v, Inputs)]
        return self._variants[ref]

    def lookup(self, ref):
        """The key of a stored result whose inputs are all unchanged, or None."""
        for inputs in self.variants(ref):
            if inputs.valid(self.state):
                key = digest(ref, RECORDING, inputs.key())
                if self.cache.has("examples", key):
                    self.used[ref] = inputs
                    return key
        return None

    def identity(self, key):
        """What a page is keyed on for the result stored under `key`: a digest of the result
        itself, so an example that ran again (a function it entered was edited) and gave the
        same result leaves its pages cached; the key itself for a result stored without one."""
        if key is None or self.cache is None:
            return key
        return self.cache.get("example-digests", key) or key

    def load(self, key):
        return self.cache.get("examples", key) if self.cache is not None else None

    def store(self, ref, inputs: Inputs, result) -> str:
        key = digest(ref, RECORDING, inputs.key())
        self.used[ref] = inputs
        if self.cache is not None:
            self.cache.put("examples", key, result)
            self.cache.put("example-digests", key, digest("result", canonical(result)))
            kept = [inputs] + [v for v in self.variants(ref) if v != inputs][:VARIANTS_KEPT - 1]
            self._variants[ref] = kept
            self.cache.put("example-inputs", self._slot(ref), kept)
        return key


def run_examples(root: Path, requests, problems: list, store: ExampleStore = None, jobs=1,
                 shared: SharedStep = None, rerun=frozenset()) -> Outcomes:
    """requests: Requests. Valid cached results are taken; the rest run in at most `jobs`
    children, those that read `shared` after it is done."""
    root = Path(root)
    store = store or ExampleStore(root, None)
    out = Outcomes()
    unique = list({r.ref: r for r in requests}.values())
    misses = []
    for request in unique:
        key = store.lookup(request.ref) if store.cache is not None and request.ref not in rerun else None
        result = store.load(key) if key else None
        if result is not None:
            out.results[request.ref], out.identities[request.ref] = (result, True), store.identity(key)
        else:
            misses.append(request)
    if not misses:
        return out
    _prehash(root, misses, store.state)
    failed_modules = {}           # module -> (message, fix) of the import that failed
    by_ref = {r.ref: r for r in misses}
    needed = (shared.needed_by() if callable(shared.needed_by) else shared.needed_by) if shared else set()
    waiting = [r for r in misses if r.ref in needed]
    first = [_example_call(root, r, store) for r in misses if r not in waiting]
    shared_calls = [Call(f"run:{name}", fn, RUN_TIMEOUT, where=_blame(root))
                    for name, fn in shared.runs.items()] if shared and waiting else []
    pending = {c.name for c in shared_calls}
    shared_failed = []

    def more():
        if waiting and not pending:
            if shared.before_readers and len(waiting) > 1 and not shared_failed:
                shared.before_readers()
            calls = [_example_call(root, r, store) for r in waiting]
            waiting.clear()
            return [] if shared_failed else calls
        return []

    def done(outcome):
        if outcome.name.startswith("run:"):
            pending.discard(outcome.name)
            if outcome.status == "ok":
                if shared.adopt:
                    shared.adopt(outcome.value)
            else:
                shared_failed.append(outcome)
                asker = waiting[0] if waiting else next(iter(by_ref.values()))
                problems.append(_run_problem(root, outcome, asker, tuple(r.ref for r in waiting)))
            return
        request = by_ref[outcome.name]
        result, inputs, problem = _interpret(root, outcome, request, failed_modules, store.state)
        if problem:
            problems.append(dataclasses.replace(problem, refs=(request.ref,)))
        out.results[request.ref] = (result, False)
        if result is not None and inputs is not None:
            out.identities[request.ref] = store.identity(store.store(request.ref, inputs, result))

    run_calls(shared_calls + first, jobs, on_done=done, more=more)
    for module, (message, fix) in failed_modules.items():     # at the first request, whichever ran first
        asker = next(r for r in misses if r.ref.partition(":")[0] == module)
        problems.append(Problem(asker.file, asker.line, message, fix))
    for request in misses:               # examples that never ran: their shared step failed
        out.results.setdefault(request.ref, (None, False))
    return out


def recorded(root: Path, store: ExampleStore, name: str, fn, module: Path, timeout=RUN_TIMEOUT, by_functions=False):
    """fn() for the build itself (the shape probes), cached like an example: run in a child
    with its inputs recorded (`module`'s import closure, and what it reads and loads), reused
    while they are unchanged. Returns the value, or None if the child failed. `fn` returns
    (value, keep): a value it says not to keep (a probe that failed) is not cached. `module`
    may be a list of modules: fn runs the hooks, say, and their closure counts too.
    by_functions: the package's files are keyed on the functions fn entered, as an example's
    are (not for the shape probes, whose own profile hook records their shapes)."""
    key = store.lookup(name)
    value = store.load(key) if key else None
    if value is not None:
        return value
    if by_functions:
        fn = functools.partial(_entering, root, fn)
    [outcome] = run_calls([Call(name, lambda: _recording(root, store, fn, module), timeout, where=_blame(root))], 1)
    if outcome.status != "ok":
        return None
    (value, keep), inputs = outcome.value
    if keep:
        store.store(name, inputs, value)
    return value


def _entering(root: Path, fn):
    """fn(), the code objects it entered noted for the Recorder (as _run_here does for an example)."""
    from site_builder.run.shape_recorder import record_entered
    with record_entered(set()) as entered:
        value = fn()
    _note_entered(root, entered)
    return value


def _recording(root: Path, store: ExampleStore, fn, module):
    """In a child: (fn(), the Inputs it read), the static import closure of `module` (a path or
    a list of them) included."""
    with Recorder(root, [store.cache.folder] if store.cache is not None and store.cache.folder else []) as recorder:
        value = fn()
    static = {f.relative_to(root).as_posix() for m in ([module] if isinstance(module, Path) else module)
              for f in static_inputs(root, m)}
    return value, store.state.freeze(recorder.files | static, recorder.dirs, recorder.packages(), recorder.stats,
                                     entered=recorder.entered, text_reads=recorder.text_reads,
                                     code_folders=_code_folders(root), part_reads=recorder.part_reads)


def _code_folders(root) -> tuple:
    """The project's code folders (the package, its tests): their files may be keyed on the
    functions a run entered. None for a bare folder of examples."""
    from site_builder.gather.project import ProjectError
    try:
        return load_project(root).code_folders
    except ProjectError:
        return ()


def static_inputs(root: Path, path: Path) -> list:
    """The file and the repository modules it imports, transitively (dependency_files), and the
    project's hooks file with its own imports when one of those imports the hooks by their
    dotted name (`from content.hooks import trained_run`): the hooks live outside the folders
    dependency_files follows, and a module imported before the fork is not seen opened."""
    from site_builder.gather.project import hooks_name, load_project
    files = dependency_files(root, path)
    project = load_project(root)
    hooks = root / project.hooks if project.hooks else None
    if hooks is None or hooks in files or not any(_imports_module(f, hooks_name(project)) for f in files):
        return files
    return sorted(set(files) | set(dependency_files(root, hooks)))


def _imports_module(path: Path, name: str) -> bool:
    return any(n == name or n.startswith(name + ".") for n in _imports(path, _stamp(path)))


def run_example(root: Path, request: Request, problems: list, store: ExampleStore = None):
    """One example (from the cache if valid): (result or None, from_cache)."""
    return run_examples(root, [request], problems, store).results[request.ref]


def _prehash(root, requests, state):
    """Hash, before any example runs, the files they are likely to read: a file edited while
    they run then fails its check next time (a rerun) instead of being recorded as read."""
    from site_builder.gather.project import load_project
    code_folders = _code_folders(root)
    for module in {r.ref.partition(":")[0] for r in requests}:
        for f in static_inputs(root, root / "content" / "examples" / f"{module}.py"):
            rel = f.relative_to(root).as_posix()
            state.file(rel)
            if rel.split("/")[0] in code_folders or rel.startswith("content/"):
                state.outline(rel)           # parsed once here, not in every child
    for folder in load_project(root).inputs:
        for p in sorted((root / folder).rglob("*")) if (root / folder).is_dir() else []:
            if p.is_file():
                state.file(p.relative_to(root).as_posix())


def _blame(root):
    """The line to name for a stopped example: the deepest frame in content/ or the package."""
    from site_builder.gather.project import ProjectError, load_project
    base = os.path.realpath(root) + os.sep
    try:
        ours_folders = ("content" + os.sep, load_project(root).package + os.sep)
    except ProjectError:                 # a bare folder of examples (the playground's tests): content/ alone
        ours_folders = ("content" + os.sep,)

    def where(frames):
        inside = [(os.path.realpath(f)[len(base):], n) for f, n in frames if os.path.realpath(f).startswith(base)]
        ours = [(f, n) for f, n in inside if f.startswith(ours_folders)]
        f, n = (ours or inside or [("?", 0)])[-1]
        return f"{f.replace(os.sep, '/')}:{n}"
    return where


def _example_call(root, request, store):
    module = root / "content" / "examples" / f"{request.ref.partition(':')[0]}.py"
    package = load_project(root).package       # read here: the settings are no input of the example
    return Call(request.ref, lambda: _recording(root, store, lambda: _run_here(root, request.ref, package), module),
                request.timeout, where=_blame(root))


def _run_here(root, ref, record=None):
    """In the child: ("ok", result) or ("failed", message, fix). Never raises. With `record`,
    the documented package's name, the result carries the shapes each of its functions held
    (site_builder/run/shape_recorder.py); the playground, which only shows the blocks, does without."""
    from site_builder.run.declarative import load_declared
    from site_builder.run.shape_recorder import record_entered, record_shapes
    # An example module imported before this child started ran its module-level code unseen.
    entered = {None} if f"content_examples_{ref.partition(':')[0]}" in sys.modules else set()
    try:
        with record_entered(entered):
            fn = load_declared(root, ref) if ref.startswith("declared:") else load_example(root, ref)
    except LookupError as e:
        return "failed", str(e), "check the 'run:' value: module:function"
    except ImportError as e:
        return "import", _import_message(root, ref, e)
    except BaseException as e:
        return "failed", f"example module of {ref} raised {type(e).__name__}: {e} at {raising_line(e, root)}", \
            "run the example module by hand to debug it"
    from site_builder.run import training_run
    from site_builder.gather.declared import DeclaredError
    shapes = {}
    training_run.clear_runs_read()
    try:
        with record_shapes(root, shapes, record, entered) if record else record_entered(entered):
            result = fn(**split_ref(ref)[1])
    except DeclaredError as e:
        return "failed", f"declarative example: {e}", e.fix or "correct its steps or inputs on the page"
    except SystemExit as e:
        return "failed", f"example {ref} called sys.exit({e.code!r}) at {raising_line(e, root)}", \
            "return an ExampleResult instead of exiting; call the library function, not a command-line main()"
    except KeyboardInterrupt as e:
        return "failed", f"example {ref} raised KeyboardInterrupt at {raising_line(e, root)}", \
            "do not raise KeyboardInterrupt in an example"
    except BaseException as e:
        cause = e.__cause__ or e
        if ref.startswith("declared:"):          # no example function to run by hand: the page gave the inputs
            return "failed", f"declarative example: {split_ref(ref)[1].get('function')} raised " \
                f"{type(cause).__name__}: {cause} at {raising_line(cause, root)}", \
                "check its inputs on the page: each reaches the function as written (a list as an array)"
        return "failed", f"example {ref} raised {type(cause).__name__}: {cause} at {raising_line(cause, root)}", \
            "run the example function by hand to debug it"
    wrong = _wrong_result(result)
    if wrong:
        return "failed", f"example {ref} returned {wrong}", "return ExampleResult(blocks, source) from site_builder.run.examples"
    result.shapes = shapes
    result.runs = tuple(sorted(training_run.runs_read()))
    # A training run read here ran code this child may not have seen, but its key read the
    # syntax tree of every package file (training_run.code_fingerprints), which is in this
    # result's inputs (inputs.syntax_tree_read). A module of the project's code imported from
    # another folder ran code that is not the files the key reads.
    _note_entered(root, entered)
    return "ok", result


def _note_entered(root, entered):
    """Tell the Recorder which code objects the run entered, unless some ran unseen (None:
    module-level code imported before the run) or from another checkout of the package."""
    if None not in entered and not _ran_from_elsewhere(root, entered):
        note_entered((code.co_filename, code.co_firstlineno, code.co_qualname) for code in entered)


def _ran_from_elsewhere(root, codes) -> bool:
    """Whether code of a module named like a code folder of the project (`pkg.ops`) ran from a
    file outside `root` (imported from another checkout): not the code the key reads."""
    folders = set(_code_folders(root))
    files = {getattr(m, "__file__", None): name for name, m in list(sys.modules.items())
             if name.partition(".")[0] in folders}
    bases = {os.path.abspath(root) + os.sep, os.path.realpath(root) + os.sep}
    return any(code.co_filename in files and not any(code.co_filename.startswith(b) for b in bases)
               for code in codes)


def _wrong_result(result):
    """What is wrong with an example's return value, or None."""
    if not isinstance(result, ExampleResult):
        name = type(result).__name__
        return f"{'an' if name[0] in 'aeiou' else 'a'} {name}, not an ExampleResult"
    if not isinstance(result.blocks, list):
        return f"blocks of type {type(result.blocks).__name__}, not a list"
    for i, b in enumerate(result.blocks):
        if not isinstance(b, dict) or b.get("kind") not in BLOCK_KINDS:
            kind = b.get("kind") if isinstance(b, dict) else type(b).__name__
            return f"block {i} of kind {kind!r}, not one of {', '.join(sorted(BLOCK_KINDS))} (made by the helpers in site_builder.run.examples)"
    if not isinstance(result.source, str) or not isinstance(result.data, dict):
        return "a source that is not text or data that is not a dict"
    return None


def _import_message(root, ref, e):
    module = ref.partition(":")[0]
    missing = getattr(e, "name", None) or "?"
    where = raising_line(e, root)
    if isinstance(e, ModuleNotFoundError):
        top = missing.partition(".")[0]
        hint = INSTALL_HINTS.get(top, f"install it (python3 -m pip install {top}) or remove the import")
        return f"content/examples/{module}.py cannot be imported: no module named '{missing}' (imported at {where})", hint
    return f"content/examples/{module}.py cannot be imported: {e} (at {where})", "fix the import"


def _interpret(root, outcome, request, failed_modules, state):
    """(result or None, Inputs or None, Problem or None) for one finished example call."""
    at = (request.file, request.line)
    if outcome.status == "timeout":
        where = f" while executing {outcome.detail}" if outcome.detail else ""
        return None, None, Problem(*at, f"example {request.ref} was stopped after {request.timeout:g} s{where}",
                                   "make it faster, or give it more time with 'timeout: SECONDS' on this example")
    if outcome.status == "died":
        return None, None, Problem(*at, f"example {request.ref} {outcome.detail}",
                                   "an example must return its result, not end its process")
    if outcome.status == "too big":
        return None, None, Problem(*at, f"example {request.ref} returned {outcome.detail}, more than the builder takes",
                                   "show fewer values: a page cannot carry that much")
    if outcome.status == "error":
        return None, None, Problem(*at, f"example {request.ref} raised {outcome.detail}",
                                   "run the example function by hand to debug it")
    if outcome.status != "ok":
        return None, None, Problem(*at, f"example {request.ref} returned a value that cannot be sent back: {outcome.detail}",
                                   "return only the blocks of site_builder.run.examples")
    (kind, *rest), inputs = outcome.value
    if kind == "ok":
        return rest[0], inputs, None
    if kind == "import":                     # reported once per module, after every example ran
        failed_modules.setdefault(request.ref.partition(":")[0], rest[0])
        return None, None, None
    message, fix = rest
    return None, None, Problem(*at, message, fix)


def _run_problem(root, outcome, asker, readers=()):
    """A training run the pages read failed: one line, at the first example that asked for it;
    `readers`, the examples that were not run for it."""
    name = outcome.name.partition(":")[2]
    if outcome.status == "timeout":
        what = f"was stopped after {RUN_TIMEOUT:g} s" + (f" while executing {outcome.detail}" if outcome.detail else "")
    elif outcome.status == "error":
        what = f"raised {outcome.detail}"
    else:
        what = f"failed: {outcome.status} {outcome.detail}"
    return Problem(asker.file, asker.line, f"the {name} training run that {asker.ref} reads {what}",
                   "the examples that read it were not run", refs=tuple(readers))
