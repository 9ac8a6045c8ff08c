"""Stage 6: write the site atomically, under a lock.

Everything is rendered in memory first. The files go to a temporary folder beside the
output, which then replaces the output with two renames: a reader (or `serve`) sees the old
site or the new one, never half of each, and a failed build never gets this far, so the last
good site stays. A lock file beside the output keeps two builds from writing at once; the
second waits a bounded time, then refuses with a message naming the lock.
"""
import fcntl
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path


class OutputLocked(Exception):
    pass


@contextmanager
def output_lock(out: Path, wait_seconds=120.0):
    out.parent.mkdir(parents=True, exist_ok=True)
    lock_path = out.parent / f".{out.name}.lock"
    with open(lock_path, "w") as lock:
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
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write_site(files: dict, out: Path, after_write=None):
    """files: {relative posix path: bytes}. Swaps the new tree into `out`.
    after_write(tmp_folder), if given, runs on the complete new tree before the swap (the
    search index is built there); if it raises, the new tree is removed and `out` is untouched."""
    out = out.resolve()
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    for rel in sorted(files):
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[rel])
    if after_write is not None:
        try:
            after_write(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    if out.exists():
        os.rename(out, old)
    os.rename(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
