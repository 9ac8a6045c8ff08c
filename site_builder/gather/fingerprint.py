"""The no-op fast path: a stamp of every input of the last build and of every file it wrote,
so that an unchanged repository with an untouched site is not built again.

Make's trick, with content hashes instead of times (a checkout or a touch changes times, not
content). The inputs are every file the build reads (content, templates, static, the builder
itself, and the project's folders: its package, its tests and the input folders the project
block names, gather/project.py), any other repository file an example was seen to read, the
commit the pages cite, the Python version, the options, and every installed package the build
loaded, as the file an import resolves to (an upgrade or a shadowing module changes it;
site_builder/gather/inputs.py).

Every builder keeps the stamp: `build_site.py`, `check` and `serve` alike. A build removes
the stamp of its output folder before it swaps a new site in, and writes a new one only
after the site (and its search index) is complete, so a failed, killed or still-indexing
build never leaves a stamp that vouches for the wrong site. The stamp also lists what the
build wrote, with sizes, times and hashes: a page deleted or overwritten since makes the
site out of date (sizes and times are compared first; a file whose size or time differs,
or was written within two seconds of the stamp, is hashed).

This module imports nothing heavy: the check has to cost less than the interpreter's start.
So the no-op check does not read the project block (that needs the YAML parser): the stamp
keeps the folders the build read, and content/site.yaml, which names them, is among the
inputs, so a changed block changes the key before the folders could be out of date.
"""
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# The builder's own input folders; the project's come between them (input_dirs), in the order
# the keys have always been taken in, so a cache stays valid.
CONTENT_DIRS = ("content", "templates", "static")
BUILDER_DIRS = ("site_builder",)
INPUT_FILES = ("build_site.py", "pyproject.toml")
RACY_SECONDS = 2.0     # a file this close to the stamp may change without changing its time


def input_dirs(root: Path) -> tuple:
    """Every folder the build reads: the builder's, the project's code, and its input folders."""
    from site_builder.gather.project import load_project
    project = load_project(root)
    return CONTENT_DIRS + project.code_folders + BUILDER_DIRS + tuple(project.inputs)


def input_files(root: Path, dirs):
    for name in dirs:
        for p in sorted((root / name).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith((".pyc", "~", ".swp")):
                yield p
    for name in INPUT_FILES:
        if (root / name).is_file():
            yield root / name


def head_commit(root: Path):
    """The checkout's HEAD commit, or None outside a git checkout of its own: a project copied
    into another repository's folder is not that repository's commit."""
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel", "HEAD"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.split("\n")
    if out.returncode != 0 or len(lines) < 2 or os.path.realpath(lines[0]) != os.path.realpath(root):
        return None
    return lines[1].strip() or None


def uncommitted_files(root: Path) -> frozenset:
    """Repository paths whose working copy is not HEAD's (modified, added or untracked): a
    GitHub link at HEAD's commit would show other lines for them. Determined by HEAD and the
    files' bytes, which the keys already hold."""
    try:
        out = subprocess.run(["git", "-C", str(root), "status", "--porcelain=v1", "-z", "--untracked-files=all"],
                             capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    if out.returncode != 0:
        return frozenset()
    paths, entries = set(), out.stdout.decode("utf-8", "surrogateescape").split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        if len(entry) > 3:
            paths.add(entry[3:])
            if entry[0] in "RC" and i + 1 < len(entries):    # a rename's old path follows on its own
                i += 1
                paths.add(entries[i])
        i += 1
    return frozenset(paths)


def _sha(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


def input_digests(root: Path, dirs=None) -> list:
    """[(relative path, sha256 hex)] of every file of the input folders (default: input_dirs);
    a build takes it once and keys both its stamp and its pages on it."""
    return [(p.relative_to(root).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
            for p in input_files(root, dirs if dirs is not None else input_dirs(root))]


def fingerprint(root: Path, options: dict, digests=None, dirs=None) -> str:
    """The digest of every file of the input folders (`digests`, if taken already), the
    commit, the Python version and the options (another interpreter or import path shows in
    the packages it loads)."""
    h = hashlib.sha256()
    for rel, sha in digests if digests is not None else input_digests(root, dirs):
        h.update(f"{rel}\0{sha}".encode())
    h.update(json.dumps([head_commit(root), sys.version, options],
                        sort_keys=True, default=str).encode())
    return h.hexdigest()


def with_extra(key: str, extra: dict) -> str:
    """The key with the files examples read outside the input folders ({relative: sha256})."""
    return hashlib.sha256(json.dumps([key, sorted(extra.items())]).encode()).hexdigest()


def outside_input_dirs(rel: str, dirs) -> bool:
    return rel.split("/")[0] not in dirs and rel not in INPUT_FILES


def stamp_path(cache_dir: Path, out: Path) -> Path:
    return Path(cache_dir) / "stamps" / hashlib.sha256(str(Path(out).resolve()).encode()).hexdigest()[:16]


def written_files(out: Path) -> dict:
    """{relative path: [size, mtime_ns, sha256]} of every file under `out`."""
    files = {}
    for folder, _, names in os.walk(out):
        for name in names:
            p = Path(folder) / name
            st = p.stat()
            files[p.relative_to(out).as_posix()] = [st.st_size, st.st_mtime_ns, _sha(p)]
    return files


def _site_intact(out: Path, manifest: dict, stamped_at: float) -> bool:
    """Whether every file the last build wrote is still there with the same bytes."""
    for rel, (size, mtime, sha) in manifest.items():
        p = out / rel
        try:
            st = p.stat()
        except OSError:
            return False
        racy = mtime / 1e9 >= stamped_at - RACY_SECONDS
        if st.st_size != size or (st.st_mtime_ns != mtime or racy) and _sha(p) != sha:
            return False
    return True


def _packages_unchanged(packages) -> bool:
    from site_builder.gather.inputs import packages_unchanged
    return packages_unchanged([(name, *identity[:3], [tuple(f) for f in (identity[3] if len(identity) > 3 else ())])
                               for name, *identity in packages])


def up_to_date(cache_dir: Path, out: Path, root: Path, options: dict):
    """(summary, warnings) of the last build if nothing changed since, else None."""
    try:
        stored = json.loads(stamp_path(cache_dir, out).read_text())
        extra = {rel: _sha(root / rel) for rel in stored.get("extra", {})}
        key = with_extra(fingerprint(root, options, dirs=tuple(stored["dirs"])), extra)
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return None
    if stored.get("key") != key or not Path(out).is_dir():
        return None
    if not _packages_unchanged(stored.get("packages", ())):
        return None
    if not _site_intact(Path(out), stored.get("written", {}), stored.get("time", 0.0)):
        return None
    return stored.get("summary", ""), stored.get("warnings", [])


def forget(cache_dir: Path, out: Path):
    """Before a build changes `out`: no stamp may vouch for it until the build is complete."""
    try:
        stamp_path(cache_dir, out).unlink()
    except FileNotFoundError:
        pass


def record(cache_dir: Path, out: Path, key: str, summary: str, warnings=(), extra=None, packages=(), dirs=()):
    """After a complete build: its input key (taken when it started, on the input folders
    `dirs`; `extra`: {relative path: sha256} of the files examples read outside them, as they
    read them), what it wrote, and the packages it loaded."""
    extra = extra or {}
    key = with_extra(key, extra)
    path = stamp_path(cache_dir, out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps({"key": key, "dirs": list(dirs), "summary": summary, "warnings": [str(w) for w in warnings],
                               "extra": extra, "packages": [list(p) for p in packages],
                               "written": written_files(Path(out)), "time": time.time()}))
    tmp.replace(path)
