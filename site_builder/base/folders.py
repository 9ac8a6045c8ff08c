"""The folders the builder must never write into, replace or delete, and the mark on its own.

Both the output folder (site_builder/publish/write.py) and the build cache
(site_builder/base/cache.py) are checked against them before anything is written: the
builder's own folders and the repository's tooling (BUILDER_FOLDERS), and the project's, which
the project block names (its package, tests and input folders: gather/project.py). This module
reads no configuration (base imports nothing of the builder): the callers pass the project's.
"""
import os
from pathlib import Path

MARKER = ".built-by-site-builder"
# An output may be none of these, hold none and sit in none; nor any folder of the project.
BUILDER_FOLDERS = ("content", "templates", "static", "site_builder", ".git", "benchmarks", "tools", ".ci", ".github")


def source_folders(project_folders=()) -> tuple:
    """The repository's folders no output may touch: the builder's, then the project's."""
    return BUILDER_FOLDERS + tuple(f for f in project_folders if f not in BUILDER_FOLDERS)


def default_roots():
    """The repository this module belongs to, as imported and with links resolved."""
    here = Path(os.path.abspath(__file__)).parents[2]
    return {here, Path(os.path.realpath(here))}
