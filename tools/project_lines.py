"""How much a project writes for the builder: the lines of its `project:` block and of its hooks' code.

    python3 tools/project_lines.py [PROJECT_ROOT]     (default: this repository)

The block's lines are those between `project:` and the next top-level key, blank lines and
comments left out; the hooks' lines are the lines holding code, docstrings, comments and blank
lines left out (tokenize for the code, ast for the docstrings).
"""
import ast
import io
import sys
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from site_builder.gather.project import SITE_FILE, load_project  # noqa: E402


def block_lines(site_yaml: Path) -> int:
    lines = site_yaml.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("project:"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in ("", " ", "#")), len(lines))
    return sum(1 for line in lines[start:end] if line.strip() and not line.strip().startswith("#"))


def docstring_lines(tree) -> set:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            found |= set(range(body[0].lineno, body[0].end_lineno + 1))
    return found


def code_lines(path: Path) -> int:
    source = path.read_text(encoding="utf-8")
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    code = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skipped:
            code |= set(range(tok.start[0], tok.end[0] + 1))
    return len(code - docstring_lines(ast.parse(source)))


def main(argv):
    root = Path(argv[1] if len(argv) > 1 else Path(__file__).resolve().parents[1])
    project = load_project(root)
    hooks = code_lines(root / project.hooks) if project.hooks else 0
    print(f"{root}: {block_lines(root / SITE_FILE)} lines of configuration (the project: block), "
          f"{hooks} lines of hook code ({project.hooks or 'no hooks file'})")


if __name__ == "__main__":
    main(sys.argv)
