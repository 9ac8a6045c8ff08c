"""Reading the source files and walking their syntax trees: what the source index stands on.

The index reads each file once, as this module says: every `*.py` under a folder, sorted,
hidden folders and __pycache__ aside (`source_files`), decoded as UTF-8 (`read_source`), split
into lines on `\\n`, `\\r\\n` and `\\r` only (`split_lines`: exactly what the tokenizer counts,
so `lines[line - 1]` is the line `ast` reports). The rest are small, pure helpers over `ast`
nodes: the exact source of a node, dotted names, the statements of a body in code order, the
names a statement binds, a function's parameters, decorators and imports. None keeps state.

Trade-off: the walks are written out (`_children`, `preorder`) rather than `ast.walk`, because
analysing every function walks the whole repository's trees, and the generators and the
Load/Store markers of `ast.iter_child_nodes` were a fifth to a half of building the index.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterator, Optional

from site_builder.gather.source_records import CodeWords, SourceError


def module_name(rel: str) -> str:
    """"pkg/layers.py" -> "pkg.layers"; a package's __init__.py is the package."""
    name = rel[:-3].replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def read_source(root: Path, rel: str) -> str:
    """The text of a source file as the index reads it (SourceError if it is not UTF-8);
    `split_lines` of it is what `SourceIndex.files[rel]` holds."""
    raw = (Path(root) / rel).read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise SourceError(rel, line, f"not valid UTF-8: {e.reason}") from None


def source_files(root: Path, package: str) -> list:
    """The files of `package` the index reads: every *.py under it, hidden folders and
    __pycache__ aside, sorted."""
    paths = []
    for path in (Path(root) / package).rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if not any(part.startswith(".") or part == "__pycache__" for part in rel.split("/")):
            paths.append(rel)
    return sorted(paths)


_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
CACHE_NAME = re.compile(r"^(c|cache|c_\w+|cache_\w+|\w+_cache)$")
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ()) + ((ast.Match,) if hasattr(ast, "Match") else ())


def split_lines(text: str) -> list:
    lines = _LINE_SPLIT.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def segment(lines: list, node: ast.AST) -> str:
    """Exact source of a node (col offsets are UTF-8 byte offsets)."""
    l0, l1 = node.lineno, node.end_lineno
    c0, c1 = node.col_offset, node.end_col_offset
    if l0 == l1:
        return lines[l0 - 1].encode()[c0:c1].decode(errors="replace")
    first = lines[l0 - 1].encode()[c0:].decode(errors="replace")
    last = lines[l1 - 1].encode()[:c1].decode(errors="replace")
    return "\n".join([first, *lines[l0:l1 - 1], last])


def dotted_parts(node: ast.AST) -> Optional[list]:
    """`a.b.c` -> ["a", "b", "c"]; anything else -> None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _is_main_guard(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"
            and len(t.comparators) == 1 and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value == "__main__")


def module_defs(body) -> Iterator[ast.stmt]:
    """Function and class definitions at the top of a body, also inside top-level if/try/with
    (e.g. an ImportError fallback), never inside `if __name__ == "__main__":`."""
    for s in body:
        if isinstance(s, DEFS + (ast.ClassDef,)):
            yield s
        elif isinstance(s, ast.If):
            if not _is_main_guard(s):
                yield from module_defs(s.body)
                yield from module_defs(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            yield from module_defs(s.body)
        elif isinstance(s, COMPOUND) and hasattr(s, "handlers"):
            yield from module_defs(s.body)
            for h in s.handlers:
                yield from module_defs(h.body)
            yield from module_defs(s.orelse)
            yield from module_defs(s.finalbody)


def _children(node: ast.AST) -> list:
    """ast.iter_child_nodes(node) as a list, without its two generators (the index walks
    every function's tree; this was a fifth of building it), and without the Load/Store/Del
    markers every name carries (a quarter of the nodes, and nothing here looks for them;
    `n.ctx` is still there to read)."""
    out = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, list):
            out += [v for v in value if isinstance(v, ast.AST)]
        elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
            out.append(value)
    return out


def walk_scope(node: ast.AST, into_nested: bool = True) -> Iterator[ast.AST]:
    """Every node under `node` (not `node` itself); nested scopes only if into_nested."""
    stack = _children(node)[::-1]
    while stack:
        n = stack.pop()
        yield n
        if into_nested or not isinstance(n, SCOPES):
            stack.extend(_children(n)[::-1])


def walk_stmt(stmt: ast.AST) -> Iterator[ast.AST]:
    yield stmt
    yield from walk_scope(stmt)


def preorder(roots) -> list:
    """The nodes of the trees `roots`, each root then its descendants, depth first: what
    walk_stmt yields for each root, as one list (one loop, no generators: analysing every
    function walks the whole repository's trees once, and that walk was half of it)."""
    out, stack = [], list(roots)[::-1]
    node_type, context = ast.AST, ast.expr_context
    while stack:
        node = stack.pop()
        out.append(node)
        kids = []
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                kids += [v for v in value if isinstance(v, node_type)]
            elif isinstance(value, node_type) and not isinstance(value, context):
                kids.append(value)
        stack += kids[::-1]
    return out


def simple_statements(body, within=()) -> Iterator[tuple]:
    """(statement, enclosing header lines) in code order; compound statements are opened,
    nested def/class statements are yielded whole."""
    for s in body:
        if isinstance(s, COMPOUND):
            inner = within + (s.lineno,)
            if hasattr(ast, "Match") and isinstance(s, ast.Match):
                for case in s.cases:
                    yield from simple_statements(case.body, inner)
                continue
            yield from simple_statements(s.body, inner)
            for h in getattr(s, "handlers", ()):
                yield from simple_statements(h.body, inner)
            yield from simple_statements(getattr(s, "orelse", ()), inner)
            yield from simple_statements(getattr(s, "finalbody", ()), inner)
        else:
            yield s, within


def body_without_docstring(fn: ast.AST) -> list:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def code_words_of(fn: ast.AST) -> CodeWords:
    """CodeWords of one function's source (docstring aside, nested functions included)."""
    names, attrs, keys, ops, calls, returns = {fn.name, *parameter_names(fn)}, set(), set(), set(), [], False
    doc = fn.body[0].value if fn.body != body_without_docstring(fn) else None
    for n in walk_scope(fn):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            attrs.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n is not doc:
            keys.add(n.value)
        elif isinstance(n, ast.keyword) and n.arg:
            keys.add(n.arg)
        elif isinstance(n, (ast.BinOp, ast.AugAssign)):
            ops.add(type(n.op).__name__)
        elif isinstance(n, DEFS):
            names.add(n.name)
        elif isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, ast.Call) and dotted_parts(n.func):
            calls.append(dotted_parts(n.func)[-1])
        returns |= isinstance(n, ast.Return)
    return CodeWords(frozenset(names), frozenset(attrs), frozenset(keys), frozenset(ops),
                     tuple(dict.fromkeys(calls)), returns)


def flat_targets(targets) -> Iterator[ast.expr]:
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            yield from flat_targets(t.elts)
        elif isinstance(t, ast.Starred):
            yield from flat_targets([t.value])
        else:
            yield t


def stmt_targets(stmt) -> list:
    if isinstance(stmt, ast.Assign):
        return list(flat_targets(stmt.targets))
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return list(flat_targets([stmt.target]))
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return list(flat_targets([stmt.target]))
    return []


def stmt_value(stmt) -> Optional[ast.expr]:
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)):
        return stmt.value
    return None


def parameter_names(fn: ast.AST) -> list:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args]
    if a.vararg:
        names.append(a.vararg.arg)
    names += [x.arg for x in a.kwonlyargs]
    if a.kwarg:
        names.append(a.kwarg.arg)
    return names


def decorator_names(fn: ast.AST) -> list:
    out = []
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        parts = dotted_parts(target)
        if parts:
            out.append(".".join(parts))
    return out


def is_fixture(fn: ast.AST) -> bool:
    return any(n == "fixture" or n.endswith(".fixture") for n in decorator_names(fn))


def is_static(fn: ast.AST) -> bool:
    return any(n.split(".")[-1] == "staticmethod" for n in decorator_names(fn))


def _abs_module(current: str, is_package: bool, level: int, module: Optional[str]) -> str:
    if level == 0:
        return module or ""
    parts = current.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[:max(0, len(parts) - (level - 1))]
    base = ".".join(parts)
    if module:
        return f"{base}.{module}" if base else module
    return base


def import_bindings(node, current: str, is_package: bool) -> Iterator[tuple]:
    """(local name, fully qualified target) for one import statement; star imports give ("*", module)."""
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:
                yield a.asname, a.name
            else:
                head = a.name.split(".")[0]
                yield head, head
    elif isinstance(node, ast.ImportFrom):
        base = _abs_module(current, is_package, node.level, node.module)
        for a in node.names:
            if a.name == "*":
                yield "*", base
            else:
                yield a.asname or a.name, f"{base}.{a.name}" if base else a.name
