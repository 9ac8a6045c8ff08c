"""What a missing function was renamed to: the function of its module, new since the last
commit, whose text is the committed function's under another name.

A page that cites `pkg.ops.row_sums` after the function was renamed to `sum_rows` gets "no
function pkg.ops.row_sums". Spelling alone then suggests the wrong neighbour (`row_max` is
closer to `row_sums` than `sum_rows` is), so the suggestion asks the history first: git's HEAD
version of the module file, where the function still has its old name. Its text (the `def`
line's name left out) is compared with each function of the module that HEAD does not have;
the closest, if at least RENAMED_SIMILARITY alike, is the rename.

Trade-offs: one `git show` per missing name (only when a build already has a problem to
report); nothing without git, a commit, or a committed version of the name, and then the
caller falls back to spelling. A function renamed and rewritten at once is not found; the
suggestion is then no worse than before. The index is shared by trees with the same code
(gather_step.reused_index), so `root` may be another copy of it: the same files, so the same
answer unless their histories differ, and it is only a hint.
"""
from __future__ import annotations

import ast
import difflib
import subprocess
from pathlib import Path
from typing import Optional

RENAMED_SIMILARITY = 0.8      # a rename keeps the body; an edit along with it may change a line or two


def committed_text(root: Path, file: str) -> Optional[str]:
    """`file` (repository-relative) as HEAD has it, or None (no git, no commit, not tracked)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "show", f"HEAD:./{file}"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None


def function_texts(source: str) -> dict:
    """{def path ("f", "Class.method"): its text with its own name blanked} of a module's source."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    texts = {}

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                texts[prefix + node.name] = _nameless(ast.get_source_segment(source, node) or "", node.name)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")
    visit(tree.body, "")
    return texts


def _nameless(text: str, name: str) -> str:
    return text.replace(f"def {name}(", "def (", 1)


def renamed_to(root: Path, module_file: str, source: str, missing: str) -> Optional[str]:
    """The def path ("f", "Class.method") that `missing`, a def path of the module in
    `module_file`, was renamed to since HEAD; `source` is the module's text now. None if none is."""
    committed = committed_text(root, module_file)
    if committed is None:
        return None
    old = function_texts(committed)
    if missing not in old:
        return None
    best, score = None, RENAMED_SIMILARITY
    for path, text in function_texts(source).items():
        if path in old:                   # not new since the commit: another function
            continue
        ratio = difflib.SequenceMatcher(None, old[missing], text).ratio()
        if ratio >= score:
            best, score = path, ratio
    return best
