"""What a cached result read: recorded while it is computed, checked before it is reused.

A cache is only as good as its keys, and a key listed by hand forgets something (the text
file an example opens, another file added next year, a package upgraded underneath). So, like
Bazel and Nix think of hermeticity, the inputs of an example are *recorded* as it runs, in
the child process that runs it:

* every file it opens for reading, and every folder it lists, inside the repository
  (Python's audit hooks see `open`, `os.listdir` and `os.scandir` wherever they are called
  from: NumPy's `np.load`, `Path.read_text`, a glob), and every path whose existence it
  checks (`os.stat` is wrapped while it runs: no audit event covers that);
* every repository module it imports (the audit hook sees the loader open it), plus the
  static import closure of its module, which covers modules the builder had imported before
  the fork;
* every installed package it has loaded, as the file the import system resolves it to and
  that file's size and time: an upgrade, an uninstall or a shadowing module on the path
  changes it.

* which functions of the project's code it entered (`note_entered`, from the profile hook it
  runs under) and which of the project's files it read as *text* rather than importing them
  (an `open` outside the import system, or `linecache`, which `inspect` and tracebacks read
  through): a file only imported is keyed on the functions entered and its module-level code
  (site_builder/gather/function_keys.py), a file read as text on its bytes. The tracer's own
  reads of the lines it traced (`quiet_source`) are of functions entered, and do not count.
* which files it read only for their *syntax tree* (`syntax_tree_read`: a training run's key,
  site_builder/run/training_run.py): keyed on the tree without positions, so a comment or a
  moved function leaves it, as it leaves the run. Without this kind a run's readers were keyed
  on every package file's bytes, and a comment in one function ran 89 examples again.
* which files it read only for their *project block* (`project_block_read`: the builder
  reading content/site.yaml's `project:` block, gather/project.py): keyed on that block's
  values, so a new description or nav entry leaves it. Every example that reads a training
  run reads the block (the package to fingerprint), and an edit of the site's description
  ran all 33 examples of the test fixture again. (These two are *parts* of a file: `part_read`.)

The recorded set is stored next to the result. A later build reuses the result only if
every recorded input still has the digest it had (`Inputs.valid`). Files are hashed, not
timed: a checkout or a revert changes times, not content. Inputs outside the repository
other than installed packages (a file under /etc, the network) are not tracked: examples
must not read them.
"""
import hashlib
import importlib.util
import linecache
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from site_builder.base.cache import digest
from site_builder.base.code_paths import code_file
from site_builder.gather import function_keys

# Top-level folders of the repository that are outputs or bookkeeping, never inputs.
IGNORED_TOP = {".git", ".build_cache", "site", ".pytest_cache", "test-results", "runs"}

_active = []          # the Recorder running in this process, if any (audit hooks cannot be removed)
_quiet = [0]          # > 0 while the tracer reads the lines of the functions it traced
_part = []            # the kinds of part_read open, innermost last


class quiet_source:
    """While the tracer reads the text of a function the run entered (its statements' spans, a
    step's line): not a read of the whole file as text, since the function's text and first line
    are in the key already."""

    def __enter__(self):
        _quiet[0] += 1

    def __exit__(self, *exc):
        _quiet[0] -= 1
        return False


class part_read:
    """While a file is read only for one part of it (PARTS names the kinds): an input on that
    part's digest, not on the file's bytes."""

    def __init__(self, kind: str):
        self.kind = kind

    def __enter__(self):
        _part.append(self.kind)

    def __exit__(self, *exc):
        _part.pop()
        return False


def syntax_tree_read():
    """While a file is read only to take its syntax tree (`syntax_tree`)."""
    return part_read("tree")


def project_block_read():
    """While content/site.yaml is read only for its `project:` block (`project_block`)."""
    return part_read("project")


# sha256 of a source's bytes -> syntax_tree of them, for the process and the children it forks
# after filling it (example_plan.training_step parses the package before a run's readers fork).
_TREES = {}


def syntax_tree(data: bytes) -> str:
    """A Python source's syntax tree without positions (comments, blank lines and moved code
    leave it); the text itself if it does not parse. Memoised on the bytes (_TREES)."""
    key = hashlib.sha256(data).digest()
    if key not in _TREES:
        if len(_TREES) > 1024:             # serve: the trees of files edited away since
            _TREES.clear()
        _TREES[key] = _parsed_tree(data)
    return _TREES[key]


def _parsed_tree(data: bytes) -> str:
    import ast
    text = data.decode("utf-8", "replace")
    try:
        return ast.dump(ast.parse(text), include_attributes=False)
    except SyntaxError:
        return text


def project_block(data: bytes) -> str:
    """The values of a site.yaml's `project:` block (not its lines: a line added above it leaves
    them); the text itself if the file does not parse as YAML."""
    import json
    import yaml
    text = data.decode("utf-8", "replace")
    try:
        # libyaml when present: the pure-Python loader took 40 ms a parse, in every example's process
        loaded = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return text
    block = loaded.get("project") if isinstance(loaded, dict) else None
    return json.dumps(block, sort_keys=True, default=repr)


PARTS = {"tree": syntax_tree, "project": project_block}


def note_entered(first_lines):
    """In the child: the (code file, first line, qualname) of every code object the run entered, for the
    Recorder running, if any (a run that never says leaves its files keyed on their bytes)."""
    if _active:
        recorder = _active[-1]
        recorder.entered = set() if recorder.entered is None else recorder.entered
        by_file = {}
        for file, line, qualname in first_lines:
            by_file.setdefault(file, set()).add((line, qualname))
        for file, lines in by_file.items():        # thousands of code objects, a few hundred files
            rel = recorder._inside(file, code_file(file)) if file.endswith(".py") else None
            if rel:
                recorder.entered.update((rel, line, qualname) for line, qualname in lines)


def _audit(event, args):
    if not _active:
        return
    recorder = _active[-1]
    if event == "open":
        path, mode, flags = args
        if isinstance(path, (str, bytes, os.PathLike)) and _is_read(mode, flags):
            if _part:
                recorder.note_part(os.fsdecode(path), _part[-1])
            else:
                recorder.note_file(os.fsdecode(path), as_text=not _quiet[0] and not _from_import_system())
    elif event in ("os.listdir", "os.scandir"):
        path = args[0] if args else "."
        if isinstance(path, (str, bytes, os.PathLike)) and not _from_import_system():
            recorder.note_dir(os.fsdecode(path))


def _is_read(mode, flags) -> bool:
    if isinstance(mode, str):
        return "r" in mode or "+" in mode
    return isinstance(flags, int) and (flags & os.O_ACCMODE) != os.O_WRONLY


def _from_import_system() -> bool:
    """Whether the listing is the import system filling its path caches (not an input)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith(("importlib", "_frozen_importlib")):
            return True
        frame = frame.f_back
    return False


class Recorder:
    """Collects the repository files and folders one computation reads (see the module doc)."""

    def __init__(self, root: Path, ignore=()):
        self.roots = {os.path.abspath(root), os.path.realpath(root)}
        self.ignore = [os.path.realpath(p) for p in ignore]
        self.root = os.path.abspath(root)
        self.files, self.dirs, self.stats = set(), set(), set()
        self.missing = set()          # top-level modules an import looked for and did not find
        self.text_reads = set()       # files read other than by importing them
        self.part_reads = set()       # (file, kind) of files read for one part alone (part_read)
        self.entered = None           # (file, first line) of the code objects run, once note_entered says
        self.busy = False

    def _inside(self, path: str, real: str = None):
        """path relative to the root (posix), or None when it is not a repository input. A
        path through a symbolic link inside the repository counts as that path. `real` is
        its resolved path, when the caller has it."""
        real = os.path.realpath(path) if real is None else real
        if any(real == i or real.startswith(i + os.sep) for i in self.ignore):
            return None
        for full in (os.path.abspath(path), real):
            base = next((r for r in self.roots if full.startswith(r + os.sep)), None)
            if base:
                parts = full[len(base) + 1:].split(os.sep)
                if parts[0] in IGNORED_TOP or "__pycache__" in parts:
                    return None
                return "/".join(parts)
        return None

    def note_file(self, path: str, as_text=False):
        rel = self._inside(path)
        if rel and os.path.isfile(path):     # not a name tried and missed (linecache tries "<string>")
            self.files.add(rel)
            if as_text:
                self.text_reads.add(rel)

    def note_part(self, path: str, kind: str):
        rel = self._inside(path)
        if rel and os.path.isfile(path):
            self.part_reads.add((rel, kind))

    def note_dir(self, path: str):
        rel = self._inside(path)
        if rel:
            self.dirs.add(rel)

    def note_stat(self, path):
        if self.busy or not isinstance(path, (str, bytes, os.PathLike)):
            return
        self.busy = True           # _inside calls realpath, which calls lstat
        try:
            rel = self._inside(os.fsdecode(path))
            if rel:
                self.stats.add(rel)
        finally:
            self.busy = False

    def __enter__(self):
        if not getattr(sys, "_site_builder_audit", False):
            sys.addaudithook(_audit)
            sys._site_builder_audit = True
        _active.append(self)
        sys.meta_path.append(self)          # asked last: by then no finder found the module
        # No audit event tells that a file exists (os.path.exists, Path.is_file): wrap os.stat,
        # which they call. The import system keeps its own reference, so imports do not count.
        self.saved = os.stat, os.lstat
        real_stat, real_lstat = self.saved

        def stat(path, *args, **kwargs):
            self.note_stat(path)
            return real_stat(path, *args, **kwargs)

        def lstat(path, *args, **kwargs):
            self.note_stat(path)
            return real_lstat(path, *args, **kwargs)
        os.stat, os.lstat = stat, lstat
        # linecache keeps what it read, maybe before the fork: a read through it is a read of the
        # file as text whether or not it opens the file now (inspect.getsource, a traceback).
        self.saved_getlines = real_getlines = linecache.getlines

        def getlines(filename, module_globals=None):
            if not _quiet[0] and isinstance(filename, str):
                self.note_file(filename, as_text=True)
            return real_getlines(filename, module_globals)
        linecache.getlines = getlines
        return self

    def __exit__(self, *exc):
        linecache.getlines = self.saved_getlines
        os.stat, os.lstat = self.saved
        sys.meta_path.remove(self)
        _active.remove(self)
        return False

    def find_spec(self, name, path=None, target=None):
        """As the last finder: a module no finder found. `try: import x / except ImportError`
        then depends on x staying missing, so installing it must count as a change."""
        if "." not in name:
            self.missing.add(name)
        return None

    def packages(self) -> tuple:
        found = loaded_packages(self.root)
        names = {p[0] for p in found}
        return found + tuple((name, "missing", 0, 0, ()) for name in sorted(self.missing - names))


def loaded_packages(root) -> tuple:
    """(name, file, size, mtime) of every top-level installed package loaded in this process
    (not the standard library, not an alias a package registered under another name)."""
    out = []
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
    for name in sorted({m.partition(".")[0] for m in list(sys.modules)}):
        module = sys.modules.get(name)
        if (name in sys.stdlib_module_names or name.startswith(("content_examples_", "_")) or module is None
                or getattr(module, "__name__", None) != name):
            continue
        file = getattr(module, "__file__", None)
        if file and code_file(file).startswith(stdlib) and "site-packages" not in file:
            continue
        if root and (Path(root) / name).is_dir():
            continue        # a folder of the project (content/, the package): its files are inputs already,
            #                 wherever this process happened to import it from
        identity = package_identity(name, str(root))
        if identity is not None:
            out.append((name,) + identity + (_module_files(name),))
    return tuple(out)


def _module_files(name: str) -> tuple:
    """(file, size, mtime) of every loaded module of package `name`: an edit inside a package
    (not only of its __init__.py) is a change."""
    files = set()
    for module_name, module in list(sys.modules.items()):
        if module_name == name or module_name.startswith(name + "."):
            file = getattr(module, "__file__", None)
            if file:
                files.add(file)
    return tuple((f,) + _stat(f) for f in sorted(files))


def _stat(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_size, st.st_mtime_ns)


def packages_unchanged(packages, state=None) -> bool:
    """Whether every package (name, file, size, mtime, module files) still resolves to the same
    file and every module file of it has the same size and time."""
    for name, *rest in packages:
        identity, files = tuple(rest[:3]), rest[3] if len(rest) > 3 else ()
        now = state.package(name) if state else package_identity(name, "/nonexistent")
        stat = state.stat if state else _stat
        if tuple(now or ()) != identity or any(stat(f) != (size, mtime) for f, size, mtime in files):
            return False
    return True


def package_identity(name: str, root: str):
    """(file, size, mtime) of the file `import name` resolves to now, None for the
    repository's own packages and built-in modules, ("missing", 0, 0) if it does not resolve."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return ("missing", 0, 0)
    origin = spec.origin if spec.origin not in (None, "built-in", "frozen") else None
    if origin is None:
        locations = list(spec.submodule_search_locations or [])
        if not locations:
            return None
        origin = locations[0]
    full = os.path.realpath(origin)
    if full.startswith(os.path.realpath(root) + os.sep):
        return None
    try:
        st = os.stat(full)
    except OSError:
        return ("missing", 0, 0)
    return (full, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class Inputs:
    """A recorded set of inputs with the digests they had: files and folder listings
    (repository-relative) and packages (name, file, size, mtime)."""
    files: tuple
    dirs: tuple
    packages: tuple          # (name, file, size, mtime, ((module file, size, mtime), ...))
    kinds: tuple = ()        # (relative path, "file" / "dir" / "missing") of paths it looked at
    functions: tuple = ()    # (relative path, def paths, digest): files keyed on the functions entered
    parts: tuple = ()        # (relative path, kind, digest): files read for one part alone (part_read)

    def valid(self, state: "InputState") -> bool:
        return (all(state.file(rel) == d for rel, d in self.files)
                and all(state.part(rel, kind) == d for rel, kind, d in self.parts)
                and all(state.functions(rel, paths) == d for rel, paths, d in self.functions)
                and all(state.listing(rel) == d for rel, d in self.dirs)
                and all(state.kind(rel) == k for rel, k in self.kinds)
                and packages_unchanged(self.packages, state))

    def key(self) -> str:
        return digest(self.files, self.dirs, self.packages, self.kinds, self.functions, self.parts)


def _starts_at(o, path: str, line: int) -> bool:
    """Whether the def `path` of the Outline starts at `line`."""
    return line in o.starts and o.spans[o.starts.index(line)][2] == path


class InputState:
    """The current digest of any input, each computed at most once per build (files are
    hashed every build: ~5 MB, a few milliseconds, and immune to edits that keep a time)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.files, self.dirs, self.packages, self.stats = {}, {}, {}, {}
        self.sources, self.outlines, self.function_parts, self.file_parts = {}, {}, {}, {}

    def file(self, rel: str) -> str:
        if rel not in self.files:
            try:
                data = (self.root / rel).read_bytes()
            except OSError:
                data = None
            self.files[rel] = hashlib.sha256(data).hexdigest() if data is not None else "missing"
            if rel.endswith(".py"):           # outlined, when asked, from the very bytes hashed
                self.sources[rel] = data
        return self.files[rel]

    def part(self, rel: str, kind: str) -> str:
        """The digest of one part of the file (PARTS[kind]), "missing" if it is gone."""
        if (rel, kind) not in self.file_parts:
            try:
                self.file_parts[rel, kind] = digest(PARTS[kind]((self.root / rel).read_bytes()))
            except OSError:
                self.file_parts[rel, kind] = "missing"
        return self.file_parts[rel, kind]

    def outline(self, rel: str):
        """The file's Outline (site_builder/gather/function_keys.py), None if missing or unparsable."""
        if rel not in self.outlines:
            self.file(rel)
            data = self.sources.get(rel)
            self.outlines[rel] = function_keys.outline_of(data) if data is not None else None
        return self.outlines[rel]

    def functions(self, rel: str, paths) -> str:
        """What the file gives the key of a result that entered the defs `paths` of it."""
        if (rel, paths) not in self.function_parts:
            o = self.outline(rel)
            self.function_parts[rel, paths] = function_keys.key_part(o, paths) if o is not None else "unparsable"
        return self.function_parts[rel, paths]

    def listing(self, rel: str) -> str:
        if rel not in self.dirs:
            try:
                self.dirs[rel] = digest(sorted(os.listdir(self.root / rel)))
            except OSError:
                self.dirs[rel] = "missing"
        return self.dirs[rel]

    def kind(self, rel: str) -> str:
        path = self.root / rel
        return "dir" if path.is_dir() else "file" if path.exists() else "missing"

    def stat(self, path: str) -> tuple:
        """(size, mtime) of a package's module file, once per build: every example that loaded
        NumPy lists its ~170 module files, and a build checks 400 of those lists."""
        if path not in self.stats:
            self.stats[path] = _stat(path)
        return self.stats[path]

    def package(self, name: str):
        if name not in self.packages:
            self.packages[name] = package_identity(name, str(self.root))
        return self.packages[name]

    def freeze(self, files, dirs, packages, looked_at=(), entered=None, text_reads=(), code_folders=(), part_reads=()) -> Inputs:
        """The Inputs of a computation that read `files` and `dirs` (relative), loaded
        `packages`, and asked whether the paths `looked_at` exist. With `entered`, the
        (file, first line) of the code it ran: the Python files of `code_folders` it did not
        read as text (`text_reads`) are keyed on the functions entered, not on their bytes."""
        # a function entered in a file no import was seen to load (imported before the fork by a
        # module outside the example's closure) is an input all the same
        files = sorted(set(files) | {rel for rel, _, _ in entered or () if rel.split("/")[0] in code_folders})
        by_functions = self._by_functions(files, entered, set(text_reads), code_folders)
        return Inputs(files=tuple((f, self.file(f)) for f in files if f not in by_functions),
                      dirs=tuple((d, self.listing(d)) for d in sorted(set(dirs))),
                      packages=tuple(sorted(set(packages))),
                      kinds=tuple((p, self.kind(p)) for p in sorted(set(looked_at) - set(files))),
                      functions=tuple((rel, paths, self.functions(rel, paths)) for rel, paths in by_functions.items()),
                      parts=tuple((rel, kind, self.part(rel, kind)) for rel, kind in sorted(set(part_reads))))

    def _by_functions(self, files, entered, text_reads, code_folders) -> dict:
        """{file: def paths} of the files keyed on their functions (function_keys)."""
        if entered is None:
            return {}
        outlines = {f: self.outline(f) for f in files if f.endswith(".py")
                    and (f.split("/")[0] in code_folders or f.startswith("content/"))}
        eligible = {f: o for f, o in outlines.items() if o is not None and f not in text_reads
                    and f.split("/")[0] in code_folders}
        # names module-level code of the content's files mentions (the example module, the hooks)
        others = frozenset().union(*(o.names for f, o in outlines.items() if o is not None and f not in eligible
                                     and f.startswith("content/")))
        chosen = function_keys.import_time(eligible, others)
        lines = {}
        for rel, line, qualname in entered:
            o = eligible.get(rel)
            if o is not None and qualname in o.defs and not _starts_at(o, qualname, line):
                return {}      # the code that ran is not the file's text now (imported before an edit)
            lines.setdefault(rel, []).append(line)
        return {f: tuple(sorted(chosen[f] | function_keys.paths_at(o, lines.get(f, ())))) for f, o in eligible.items()}
