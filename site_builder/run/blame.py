"""What a failed run blames: the line of the documented package that raised.

Kept out of site_builder/run/examples.py, which every example imports (so whatever it imports
is an input of every example's result): this reads the project block, to know which folder is
the package.
"""
import traceback
from pathlib import Path

from site_builder.gather.project import project_folders


def raising_line(exc, root: Path):
    """file:line of the deepest frame in the documented package (else in the repository) that raised."""
    bases = [root.resolve(), Path(__file__).resolve().parents[2]]

    def relative(filename):
        path = Path(filename).resolve()
        for base in bases:
            if path.is_relative_to(base):
                return path.relative_to(base).as_posix()
        return None

    frames = [(relative(f.filename), f.lineno) for f in traceback.extract_tb(exc.__traceback__)]
    inside = [(rel, n) for rel, n in frames if rel]
    folders = project_folders(root)          # the package first; none if the block cannot be read
    package = [(rel, n) for rel, n in inside if folders and rel.startswith(folders[0] + "/")]
    rel, n = (package or inside or [(frames[-1][0] or "?", frames[-1][1])])[-1]
    return f"{rel}:{n}"
