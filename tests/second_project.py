"""A second project for the real site builder: the MLP classifier of tests/second_package/
(its package mlp/, its tests/ and its content/), documented at full depth by
tests/test_second_package.py.

`make_second_project(dest)` copies the builder (tests/fixture_project.py's copy_builder: no
model/, no data/) and the second package's tree into `dest`, and commits it the way the
fixture project is committed (fixed names and dates, so the commit the pages cite is the same
for the same sources).

Why a copy and not a build of tests/second_package/ in place: the builder reads
`content/`, the package and `tests/` at the project root, and writes a cache beside them; a
copy keeps the repository's tree clean and lets a test edit a page (a wrong declared shape)
without touching the original. The package's own tests run in the copy too (`python3 -m
pytest tests` there): the repository's suite does not collect them (tests/conftest.py), since
their `tests` package is the copy's, not this one.
"""
import shutil
from pathlib import Path

from tests.fixture_project import IGNORE, copy_builder, git_commit, new_folder

SECOND = Path(__file__).resolve().parent / "second_package"
TREE = ("mlp", "tests", "content")      # the project's folders, copied to the copy's root


def make_second_project(dest) -> Path:
    """Create the second project in `dest` (created if missing; must be empty) and return it."""
    dest = new_folder(dest)
    copy_builder(dest)
    for folder in TREE:
        shutil.copytree(SECOND / folder, dest / folder, ignore=IGNORE)
    git_commit(dest)
    return dest


if __name__ == "__main__":      # python3 -m tests.second_project DEST: make one to look at
    import sys
    print(make_second_project(Path(sys.argv[1])))
