"""Stage 6: write the site atomically, under a lock, into a folder that is the builder's alone.

Everything is rendered in memory first. The files go to a temporary folder beside the
output, which then replaces the output with two renames: a reader (or `serve`) sees the old
site or the new one, never half of each, and a failed build never gets this far, so the last
good site stays. A lock file beside the output keeps two builds from writing at once; the
second waits a bounded time, then refuses with a message naming the lock.

The output folder is the builder's alone, and nothing else is ever deleted:

- `check_output` refuses an output that is, holds or sits inside the repository's sources
  (the root itself, content/, templates/, ..., .git, and the folders the project block names:
  the package, its tests, its input folders), a file, a folder inside another
  build's output, and a non-empty folder the builder did not make. The builder's folders
  carry a marker file, MARKER, whose bytes never change; a folder built before the marker
  existed is recognised by what every build writes (index.html, references.json, pagefind/).
- Every build also writes MANIFEST, the list of the files it wrote. A file in the old
  output that the previous build did not write (a CNAME, notes) is carried into the new
  output, never deleted; if the new build writes that very path, the build refuses.
- `remove_stale` deletes the temporary folders (`.site.tmp-<pid>`, `.site.old-<pid>`, ...) of
  processes that are gone, and restores the last good site from a `.site.old-<pid>` when a
  build was killed between its two renames.
"""
import errno
import fcntl
import os
import re
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from site_builder.base.folders import MARKER, default_roots, source_folders
from site_builder.gather.project import project_folders

MARKER_TEXT = (b"This folder is the output of build_site.py (site_builder/write.py); every build replaces it.\n"
               b"The files the last build wrote are listed in .built-by-site-builder.files. Any other file\n"
               b"put here is carried into the next build, never deleted. This marker never changes.\n")
MANIFEST = ".built-by-site-builder.files"
BUNDLE = "pagefind"        # the search bundle (site_builder/publish/search.py): rewritten in place by `serve`
# What every build writes, to recognise an output folder built before the marker existed.
LEGACY_FILES, LEGACY_FOLDERS = ("index.html", "references.json"), (BUNDLE,)
WRITER_FOLDER = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old|search|search-old)-(?P<pid>\d+)$")


# Write failures that are the environment's, not the builder's: a full disk or quota, a file
# size limit (ulimit -f), a read-only or forbidden folder.
ENVIRONMENT_ERRNOS = {errno.ENOSPC: "free space there", errno.EDQUOT: "free space there (or raise the quota)",
                      errno.EFBIG: "raise the file size limit (ulimit -f)",
                      errno.EROFS: "make it writable", errno.EACCES: "make it writable"}


def cannot_write(error, out, cache_dir):
    """The one line for a write the environment refused (None for any other error): the file,
    why, and what to do, naming the option (--out or --cache-dir) that moves the write."""
    if not isinstance(error, OSError) or error.errno not in ENVIRONMENT_ERRNOS:
        return None
    where = Path(os.path.abspath(error.filename)) if error.filename else None
    in_cache = where is not None and _inside(where, Path(os.path.abspath(cache_dir)))
    option, folder = ("--cache-dir", cache_dir) if in_cache else ("--out", out)
    return (f"cannot write {where or folder}: {error.strerror}; {ENVIRONMENT_ERRNOS[error.errno]}, or choose "
            f"another {option} (the last good site in {out}, if any, is untouched)")


class OutputLocked(Exception):
    pass


class OutputRefused(Exception):
    """The output folder is not the builder's to replace. One line, with how to proceed."""

    def __init__(self, message):
        super().__init__(message)
        self.problems = [message]       # serve's overlay lists a failed build's `problems`


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def is_builder_folder(folder: Path) -> bool:
    """Made by the builder: it carries the marker, or looks like a build from before the marker."""
    folder = Path(folder)
    if (folder / MARKER).is_file():
        return True
    return (all((folder / f).is_file() for f in LEGACY_FILES)
            and all((folder / d).is_dir() for d in LEGACY_FOLDERS))


def check_output(out, root=None):
    """Raise OutputRefused unless `out` may be replaced by a build. `root`: the repository
    (default: the one this module is in; both are checked when they differ)."""
    shown = str(out)
    out = Path(os.path.abspath(out))
    real = Path(os.path.realpath(out))
    roots = default_roots() | ({Path(os.path.abspath(root)), Path(os.path.realpath(root))} if root else set())
    for repo in sorted(roots):
        real_repo = Path(os.path.realpath(repo))
        if real == real_repo:
            raise OutputRefused(f"--out {shown} is the repository itself, and a build replaces its output folder "
                                f"whole (choose a new folder, e.g. {repo / 'site'})")
        if _inside(real_repo, real):
            raise OutputRefused(f"--out {shown} contains the repository {repo}, and a build replaces its output "
                                f"folder whole (choose a new folder, e.g. {repo / 'site'})")
        for name in source_folders(project_folders(repo)):
            source = Path(os.path.realpath(repo / name))
            if not os.path.lexists(repo / name):
                continue
            if _inside(real, source) or _inside(source, real):
                where = ("is" if real == source else "is inside" if _inside(real, source) else "contains")
                raise OutputRefused(f"--out {shown} {where} the source folder {repo / name} (choose a folder "
                                    f"outside the sources, e.g. {repo / 'site'})")
    for parent in real.parents:
        if (parent / MARKER).is_file():
            raise OutputRefused(f"--out {shown} is inside {parent}, the output folder of a build, which the next "
                                f"build of it would replace (choose a folder outside it)")
    if os.path.ismount(real):     # its own file system: it cannot be renamed away (EBUSY at the swap)
        raise OutputRefused(f"--out {shown} is a mount point, and a build replaces its output folder whole by "
                            f"renaming it, which a mount point refuses (build into a folder inside it, e.g. "
                            f"--out {Path(shown) / 'site'}, and serve that)")
    home = next(p for p in real.parents if p.exists())      # where the lock and the temporary folder go
    if not os.access(home, os.W_OK | os.X_OK):              # a read-only mount: refused before a 90 s build, not after
        raise OutputRefused(f"--out {shown} cannot be written: {home} is read-only to this user (make it writable, "
                            f"or choose another --out)")
    if os.path.lexists(out) and os.path.exists(real) and not real.is_dir():
        raise OutputRefused(f"--out {shown} is a file, not a folder (choose a new folder, or move the file away)")
    if real.is_dir():
        with os.scandir(real) as it:
            names = sorted(e.name for e in it)
        if names and not is_builder_folder(real):
            held = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise OutputRefused(f"--out {shown} is a folder this builder did not make, and it is not empty "
                                f"(it holds {held}); a build replaces its output folder whole (choose an empty "
                                f"or new folder, or delete {shown} yourself)")


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True           # someone else's process
    except (OverflowError, ValueError, OSError):
        return False
    return True


def remove_stale(out, restore=False):
    """Delete the writer's temporary folders beside `out` left by processes that are gone.
    restore (only under the output lock): if `out` itself is missing, a build was killed
    between its two renames, and the newest stale `.<out>.old-<pid>` is put back as `out`."""
    out = Path(os.path.abspath(out))
    removed = []
    for target in sorted({out, Path(os.path.realpath(out))}):
        try:
            entries = list(os.scandir(target.parent))
        except OSError:
            continue
        stale = []
        for e in entries:
            m = WRITER_FOLDER.match(e.name)
            if not m or m["name"] != target.name:
                continue
            pid = int(m["pid"])
            if pid == os.getpid() or pid_alive(pid):
                continue
            stale.append((m["kind"], e))
        if restore and not os.path.lexists(target):
            olds = sorted((e for kind, e in stale if kind == "old" and e.is_dir(follow_symlinks=False)),
                          key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns)
            if olds:
                os.rename(olds[-1].path, target)
                stale = [(k, e) for k, e in stale if e.path != olds[-1].path]
        for _, e in stale:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path, ignore_errors=True)
            else:
                try:
                    os.unlink(e.path)
                except OSError:
                    pass
            removed.append(e.path)
    return removed


def lock_path_of(out: Path) -> Path:
    """The lock file of an output folder, beside the folder it resolves to: `--out www` and
    `--out link-to-www` take the same lock."""
    real = Path(os.path.realpath(out))
    return real.parent / f".{real.name}.lock"


def open_lock(lock_path: Path):
    """Open (creating) the lock file without following a symlink; anything else at its path
    (a folder, a link, a dangling link) is refused in one line rather than locked through."""
    try:
        fd = os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EISDIR) or os.path.islink(lock_path) or os.path.isdir(lock_path):
            kind = "a symlink" if os.path.islink(lock_path) else "a folder"
            raise OutputRefused(f"{lock_path} is {kind}, not the build's lock file; remove it "
                                f"(no build is using it) and build again") from None
        raise
    return os.fdopen(fd, "w")


@contextmanager
def output_lock(out: Path, wait_seconds=120.0, root=None):
    check_output(out, root)
    lock_path = lock_path_of(out)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock_file = open_lock(lock_path)
    except OSError as e:
        if e.errno in ENVIRONMENT_ERRNOS:
            raise                           # cannot_write's line names the file and what to do
        # A folder that holds no files of ours (/proc, /sys, a path under a file): say so once.
        raise OutputRefused(f"--out {out}: cannot create {e.filename or lock_path} ({e.strerror}); "
                            f"choose an --out in a folder you can write files to") from None
    with lock_file as lock:
        deadline = time.monotonic() + wait_seconds
        announced = False
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OutputLocked(f"another build has been writing {out} for over {wait_seconds:.0f} s "
                                       f"(lock {lock_path}); wait for it, or stop it")
                if not announced:
                    print(f"another build is writing {out}; waiting for it to finish", flush=True)
                    announced = True
                time.sleep(0.1)
        try:
            remove_stale(out, restore=True)
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _tree_files(folder: Path):
    """Relative posix paths of the files (and links) under folder; links to folders are not entered."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        rel = Path(dirpath).relative_to(folder)
        for d in list(dirnames):
            if os.path.islink(os.path.join(dirpath, d)):
                dirnames.remove(d)
                filenames.append(d)
        found.extend((rel / f).as_posix() for f in filenames)
    return sorted(found)


def foreign_files(out: Path):
    """The files in the output folder `out` that no build wrote (per its MANIFEST). A folder
    without a manifest (built before there was one) is all the builder's."""
    try:
        owned = set((out / MANIFEST).read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return []
    return [rel for rel in _tree_files(out)
            if rel not in owned and rel not in (MARKER, MANIFEST) and rel.split("/")[0] != BUNDLE]


def _link_or_copy(src: Path, dst: Path):
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)


def write_site(files: dict, out: Path, after_write=None, root=None):
    """files: {relative posix path: bytes}. Swaps the new tree into `out`.
    after_write(tmp_folder), if given, runs on the complete new tree before the swap (the
    search index is built there); if it raises, the new tree is removed and `out` is untouched.
    Files in `out` that no build wrote are carried into the new tree."""
    check_output(out, root)
    shown = str(out)
    out = out.resolve()
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    keep = foreign_files(out) if out.is_dir() else []
    written_dirs = {p for rel in files for p in Path(rel).parents}
    for rel in keep:
        clash = rel in files or Path(rel) in written_dirs or any(p.as_posix() in files for p in Path(rel).parents)
        if clash:
            raise OutputRefused(f"{shown}/{rel} was not written by a build, and this build writes that path "
                                f"(move it out of {shown}; nothing was changed)")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for rel in sorted(files):
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                path.write_bytes(files[rel])
            except OSError as e:
                e.filename = e.filename or str(path)        # a failed write() names no file
                raise
        (tmp / MARKER).write_bytes(MARKER_TEXT)
        if after_write is not None:
            after_write(tmp)
        # The search bundle is one entry: serve swaps a new bundle in after the write, and the
        # manifest must be what a build that indexed at once writes.
        owned = sorted({rel if rel.split("/")[0] != BUNDLE else f"{BUNDLE}/" for rel in _tree_files(tmp)} - {MANIFEST})
        (tmp / MANIFEST).write_text("".join(f"{rel}\n" for rel in owned), encoding="utf-8")
        for rel in keep:
            if os.path.lexists(out / rel) and not os.path.lexists(tmp / rel):
                _link_or_copy(out / rel, tmp / rel)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        if out.exists():
            os.rename(out, old)
        os.rename(tmp, out)
    except BaseException:        # the swap failed: the last good site back, the new tree gone
        if os.path.lexists(old) and not os.path.lexists(out):
            os.rename(old, out)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
