"""The folders the builder must never write into, replace or delete, and the mark on its own.

Both the output folder (site_builder/publish/write.py) and the build cache
(site_builder/base/cache.py) are checked against them before anything is written.
"""
import os
from pathlib import Path

MARKER = ".built-by-site-builder"
# The repository's own folders: an output may be none of them, hold none and sit in none.
SOURCE_FOLDERS = ("content", "model", "tests", "templates", "static", "site_builder", "data", ".git",
                  "benchmarks", "tools", ".ci")


def default_roots():
    """The repository this module belongs to, as imported and with links resolved."""
    here = Path(os.path.abspath(__file__)).parents[2]
    return {here, Path(os.path.realpath(here))}
