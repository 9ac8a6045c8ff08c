"""The build cache: results of expensive work (examples, the training run) keyed on
everything they depend on, so a rebuild reruns only what a change touched.

A key is a SHA-256 over named parts (source texts, config reprs, library versions). Entries
are pickles written atomically (temp file, then rename), so a build killed halfway leaves
either the old entry or the new one. A corrupt or unreadable entry counts as a miss: the
cache can only ever cost a rerun, never a wrong page.
"""
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

    def put(self, kind, key, value):
        if self.folder is None:
            return
        path = self.path(kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
