"""Sphinx configuration for the comparison in benchmarks/build_speed.py (not the project's docs).

The same `model/` package documented the way most Python projects do it: autodoc for the API,
viewcode for highlighted source pages, MathJax for math. Sphinx is a benchmark-only extra
(`pip install -e ".[bench]"`); nothing else in the repository uses this folder.

    python3 -m sphinx -b html -q -E benchmarks/sphinx /tmp/sphinx-out
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # benchmarks/sphinx/conf.py -> the repository
sys.path.insert(0, str(ROOT))

project = "transformer-by-hand"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "sphinx.ext.mathjax",
]
html_theme = "alabaster"
exclude_patterns = []
