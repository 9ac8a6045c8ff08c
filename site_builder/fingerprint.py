"""The no-op fast path: a fingerprint of every input of a build, so that an unchanged
repository is not built again.

Make's trick, with content hashes instead of times (a checkout or a touch changes times, not
content). The inputs are every file the build reads (content, templates, static, the model,
the tests, the builder itself, the corpus), the commit the pages cite, the versions of the
libraries that shape the output, and the options. If the fingerprint equals the one stored
after the last successful build of the same output folder, and that folder is still there,
the build is done. This module imports nothing heavy: the check has to cost less than the
interpreter's start.
"""
import hashlib
import json
import subprocess
from importlib import metadata
from pathlib import Path

INPUT_DIRS = ("content", "templates", "static", "model", "tests", "site_builder", "data")
INPUT_FILES = ("build_site.py", "pyproject.toml")
LIBRARIES = ("numpy", "jinja2", "markdown", "pygments", "pyyaml", "quickjs", "pagefind", "rcssmin", "rjsmin")


def input_files(root: Path):
    for name in INPUT_DIRS:
        for p in sorted((root / name).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith((".pyc", "~", ".swp")):
                yield p
    for name in INPUT_FILES:
        if (root / name).is_file():
            yield root / name


def head_commit(root: Path):
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def fingerprint(root: Path, options: dict) -> str:
    h = hashlib.sha256()
    for p in input_files(root):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    for lib in LIBRARIES:
        try:
            h.update(f"{lib}={metadata.version(lib)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{lib}=none".encode())
    h.update(json.dumps([head_commit(root), options], sort_keys=True, default=str).encode())
    return h.hexdigest()


def stamp_path(cache_dir: Path, out: Path) -> Path:
    return Path(cache_dir) / "stamps" / hashlib.sha256(str(Path(out).resolve()).encode()).hexdigest()[:16]


def up_to_date(cache_dir: Path, out: Path, key: str):
    """(summary, warnings) of the last build if nothing changed since, else None."""
    try:
        stored = json.loads(stamp_path(cache_dir, out).read_text())
    except (OSError, ValueError):
        return None
    if stored.get("key") != key or not Path(out).is_dir():
        return None
    return stored.get("summary", ""), stored.get("warnings", [])


def record(cache_dir: Path, out: Path, key: str, summary: str, warnings=()):
    path = stamp_path(cache_dir, out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "summary": summary, "warnings": [str(w) for w in warnings]}))
    tmp.replace(path)
