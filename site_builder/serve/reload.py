"""What serve watches to know that the Python it runs has changed.

A fingerprint of (path, mtime, size) of every .py file under code_dirs(root): cheap enough to
take before every rebuild and every playground request, so an edit to the documented package,
the builder or the content's examples is picked up by the next build (the server re-imports)
and the next play request (a fresh play process). Shared by the server and the playground.
"""
from pathlib import Path

from site_builder.gather.project import project_folders

# A .py edit under these means: re-import before building. content/ holds the example modules
# (site_builder.run.examples keeps them in sys.modules, and they hold the builder's classes).
BUILDER_CODE_DIRS = ("site_builder", "content")


def code_dirs(root: Path) -> tuple:
    """The folders whose Python a build imports: the project's (its block: the package, its
    tests, its input folders; none while the block cannot be read) and the builder's."""
    return tuple(project_folders(root)) + BUILDER_CODE_DIRS


def code_fingerprint(root: Path):
    files = []
    for d in code_dirs(root):
        for p in sorted((root / d).rglob("*.py")):
            if "__pycache__" in p.parts:
                continue
            try:
                st = p.stat()
            except OSError:
                continue
            files.append((str(p), st.st_mtime_ns, st.st_size))
    return tuple(files)
