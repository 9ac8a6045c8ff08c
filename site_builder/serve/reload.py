"""What serve watches to know that the Python it runs has changed.

A fingerprint of (path, mtime, size) of every .py file under CODE_DIRS: cheap enough to take
before every rebuild and every playground request, so an edit to the model, the builder or the
content's examples is picked up by the next build (the server re-imports) and the next play
request (a fresh play process). Shared by the server and the playground.
"""
from pathlib import Path

CODE_DIRS = ("model", "site_builder", "tests", "content")


def code_fingerprint(root: Path):
    files = []
    for d in CODE_DIRS:
        for p in sorted((root / d).rglob("*.py")):
            if "__pycache__" in p.parts:
                continue
            try:
                st = p.stat()
            except OSError:
                continue
            files.append((str(p), st.st_mtime_ns, st.st_size))
    return tuple(files)
