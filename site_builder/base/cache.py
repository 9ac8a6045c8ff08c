"""The build cache: results of expensive work (examples, the training run) keyed on
everything they depend on, so a rebuild reruns only what a change touched.

A key is a SHA-256 over named parts (source texts, config reprs, library versions). Entries
are pickles written atomically (temp file, then rename), so a build killed halfway leaves
either the old entry or the new one. A corrupt or unreadable entry counts as a miss: the
cache can only ever cost a rerun, never a wrong page.
"""
import dataclasses
import hashlib
import os
import pickle
import tempfile
from pathlib import Path


def digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else repr(part).encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def canonical(value) -> str:
    """A text of `value` that does not depend on the process: sets sorted, dataclasses by field."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return repr(value)
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(canonical(v) for v in value)) + "}"
    if isinstance(value, dict):
        items = "{" + ",".join(f"{canonical(k)}:{canonical(v)}" for k, v in value.items()) + "}"
        extra = getattr(value, "__dict__", None)          # a dict subclass's own attributes
        return items + (canonical(dict(sorted(extra.items()))) if extra else "")
    if hasattr(value, "__array__") and hasattr(value, "dtype"):
        import numpy as np
        a = np.ascontiguousarray(value)
        return f"array({a.dtype},{a.shape},{hashlib.sha256(a.tobytes()).hexdigest()})"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__}(" + ",".join(canonical(v) for v in value) + ")"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value).__name__ + canonical(tuple(getattr(value, f.name) for f in dataclasses.fields(value)))
    if isinstance(value, BaseException):
        return f"{type(value).__name__}:{value}"
    if getattr(value, "__dict__", None) is not None and not callable(value):   # not a default repr's address
        return type(value).__name__ + canonical(dict(sorted(vars(value).items())))
    return f"{type(value).__name__}:{value!r}"


CACHE_MARKER = ".site-builder-cache"
# What a cache folder holds: a folder of only these (from before the marker) is a cache too.
CACHE_KINDS = {"example-digests", "example-inputs", "examples", "html", "jinja", "memo", "page-reads", "pages", "pdf", "search", "shapes", "stamps",
               "training", CACHE_MARKER}


class CacheRefused(Exception):
    """A --cache-dir the builder may not write into or delete: one line saying why."""


def check_cache_dir(folder: Path, root: Path, project_folders=lambda repo: ()):
    """Raise CacheRefused unless `folder` may hold the build cache (and be deleted by --clean):
    not the repository, nor a folder holding it, nor a source or output folder, nor a non-empty
    folder that is not a cache. `project_folders(repo)`: the folders of the project there
    (gather.project.project_folders; base reads no configuration)."""
    from site_builder.base.folders import MARKER, default_roots, source_folders
    shown = str(folder)
    real = Path(os.path.realpath(folder))
    for repo in sorted(default_roots() | {Path(os.path.realpath(root))}):
        repo = Path(os.path.realpath(repo))
        if real == repo or repo.is_relative_to(real):
            raise CacheRefused(f"--cache-dir {shown} is or holds the repository {repo} (choose a folder of its own, "
                               f"e.g. {repo / '.build_cache'})")
        for name in source_folders(project_folders(repo)):
            source = Path(os.path.realpath(repo / name))
            if os.path.lexists(repo / name) and (real.is_relative_to(source) or source.is_relative_to(real)):
                raise CacheRefused(f"--cache-dir {shown} is, holds or sits in the source folder {repo / name} "
                                   f"(choose a folder of its own, e.g. {repo / '.build_cache'})")
    if any((p / MARKER).is_file() for p in [real, *real.parents]):
        raise CacheRefused(f"--cache-dir {shown} is in a build's output folder, which each build replaces "
                           f"(choose a folder of its own)")
    if real.is_dir():
        names = set(os.listdir(real))
        if names and CACHE_MARKER not in names and not names <= CACHE_KINDS:
            held = ", ".join(sorted(names)[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise CacheRefused(f"--cache-dir {shown} is a folder that is not a build cache and not empty (it holds "
                               f"{held}); choose an empty or new folder, or delete it yourself")
    elif os.path.lexists(folder):
        raise CacheRefused(f"--cache-dir {shown} is not a folder (choose a folder)")


class BuildCache:
    def __init__(self, folder: Path | None):
        self.folder = Path(folder) if folder else None
        self.hits = self.misses = 0

    def path(self, kind, key) -> Path:
        return self.folder / kind / key[:2] / f"{key}.pickle"

    def get(self, kind, key):
        """The stored value, or None on a miss (or with the cache off)."""
        if self.folder is None:
            self.misses += 1
            return None
        try:
            with open(self.path(kind, key), "rb") as f:
                value = pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def has(self, kind, key) -> bool:
        """Whether an entry is stored (not counted as a hit or a miss; get may still miss on a
        damaged entry, and callers must cope with that)."""
        return self.folder is not None and self.path(kind, key).is_file()

    def table(self, kind, key) -> dict:
        """A dict stored whole (math, highlighted files): one read per build, not one per entry."""
        value = self.get(kind, key)
        return dict(value) if isinstance(value, dict) else {}

    def remembered(self, kind, key, compute):
        """The value stored under key, else compute()'s, stored (a memo kept across builds)."""
        value = self.get(kind, key)
        if value is None:
            value = compute()
            self.put(kind, key, value)
        return value

    def put(self, kind, key, value):
        if self.folder is None:
            return
        if not (self.folder / CACHE_MARKER).is_file():
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / CACHE_MARKER).write_text("the build cache of site_builder: --clean deletes this folder\n")
        path = self.path(kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException as e:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            if isinstance(e, OSError) and e.filename is None:     # a failed write() names no file
                e.filename = str(path)
            raise
