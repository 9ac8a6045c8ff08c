"""Stage 2 of the site build: index the source of `model/` and `tests/`.

One job: read the Python files once, with the standard library's `ast`, and answer every
question a page asks about the code without running it. Which lines a function spans, what
it calls and what calls it, which tests reach it and through which chain, which cache keys
a forward function builds and which backward line reads them, which `grads[...]` entries a
statement fills. Pages never type any of these (the one rule of the site); they ask here.

Trade-offs, and why:

- **Static analysis, not tracing.** Running the code would find calls exactly, but only the
  ones a given input happens to take, and only after the model is importable. Reading the
  AST is fast (the whole repository in well under a second), deterministic, and covers
  every branch. The price is precision: Python is dynamic, so the resolver understands the
  forms this codebase actually uses and says "not resolved" for the rest, rather than guess:
  module-level and function-level imports (absolute and relative, with `as`), re-exports
  through a package's `__init__`, same-module names, `self.method` / `cls.method` (through
  indexed base classes), `x = SomeClass(...); x.method()`, parameters annotated with an
  indexed class, and calls to a class (which run its `__init__`). An unresolved call keeps
  the dotted text as written (`np.zeros`), so nothing is silently dropped.
- **A call inside a nested function or a lambda belongs to the enclosing indexed function.**
  Tests hand closures to `numerical_grad`; the test is what reaches the model through them.
  Nested functions are therefore not indexed themselves.
- **"Tested by" follows calls, references and fixtures.** A test that passes `relu_forward`
  to a helper, names it in `@pytest.mark.parametrize`, or requests a pytest fixture that
  builds parameters, reaches that code as surely as one that calls it. Paths are shortest
  call chains (breadth-first, neighbours in code order), so they are stable between builds.
- **Caches and gradient keys are read by convention, not by types.** A cache variable is one
  named `c`, `cache`, `c_*`, `cache_*` or `*_cache`, or the second target of
  `out, cache = something_forward(...)`; a gradient write is an assignment to
  `grads[...]`. Key expressions are rendered as patterns: `grads[p + "ff2_w"]`, with
  `p = f"b{l}."` assigned by the caller, becomes `b{l}.ff2_w`. A parameter is resolved
  through the specific call site when we walk down from a statement (`grads_filled`), and
  through *all* callers when they agree (`grads_written`); when they disagree or cannot be
  read, the expression stays visible as `{p}ff2_w` instead of being guessed.
- **Line numbers are the file's own.** Files are split on `\\n`, `\\r\\n` and `\\r` only
  (exactly what the tokenizer counts), so `files[path][line - 1]` is the line `ast` reports.
- **One index, immutable after `build_index`.** Answers that need a graph walk (tested_by,
  parameter patterns) are computed lazily and memoised; everything else is computed once.

A file that does not parse raises `SourceError` with `file:line: message`: a site built from
code that cannot be imported would document nothing true.
"""
from __future__ import annotations

import ast
import dataclasses
import difflib
import re
import warnings
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, NamedTuple, Optional

__all__ = [
    "SourceError", "NotIndexed", "Call", "CallerRef", "TestLink", "FunctionInfo", "ClassInfo",
    "ModuleInfo", "CacheRead", "CacheBuild", "CacheAssign", "GradWrite", "FlowStep", "CodeWords", "Assertion",
    "SourceIndex", "build_index", "code_words_of",
]


# --------------------------------------------------------------------------------------
# Errors and records
# --------------------------------------------------------------------------------------

class SourceError(Exception):
    """A source file that cannot be indexed (syntax error, undecodable bytes, missing package).
    `line` is 1-based, or 0 when no line applies."""

    def __init__(self, file: str, line: Optional[int], message: str):
        self.file, self.line, self.message = file, int(line or 0), message
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")


class NotIndexed(KeyError):
    """A qualname the index does not know. `str()` is the plain message, with suggestions."""

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message)
        self.message = message
        self.fix = fix                 # how to fix it, when that is not "correct the name"

    def __str__(self):
        return self.message


class Call(NamedTuple):
    """One call site inside a function. `callee` is an indexed qualname when resolved, else
    the dotted text as written (`np.zeros`). `text` is the exact source of the whole call."""
    callee: str
    line: int
    text: str


class CallerRef(NamedTuple):
    """A direct caller of a function: `for caller, line in index.called_by(q)`."""
    caller: str
    line: int


class TestLink(NamedTuple):
    """A test that reaches a function: directly (path = (test, target)) or through the
    shortest chain of indexed functions (path = (test, ..., target))."""
    __test__ = False  # not a pytest test class
    test: str
    direct: bool
    path: tuple


class CacheRead(NamedTuple):
    """`c["key"]` read at `line`; `passed_to` is the callee when the read is a call argument."""
    key: str
    line: int
    passed_to: Optional[str]
    var: str = "c"


class CacheBuild(NamedTuple):
    """The cache dict a function returns: `return out, dict(Xn=Xn, A=A)`.
    `key_vars` pairs each key with the source text of its value (a variable name, usually)."""
    keys: tuple
    line: int
    end_line: int
    key_vars: tuple


class CacheAssign(NamedTuple):
    """`Xn, c_ln1 = layer_norm_forward(...)`: var "c_ln1", producer (qualname, or the dotted
    text when not indexed), line, and the key of the returned cache dict it is stored under
    (None if not stored). `in_list` when it is appended to a list stored under `key`."""
    var: str
    producer: str
    line: int
    key: Optional[str]
    in_list: bool = False


class Assertion(NamedTuple):
    """What a test checks: an `assert`, a call of an `assert*` function (`np.testing.assert_allclose`,
    a helper `assert_close`), a `pytest.approx`, or a `with pytest.raises/warns(...)` block,
    lines start..end; `reads` the names it reads."""
    start: int
    end: int
    reads: frozenset


class GradWrite(NamedTuple):
    """A `grads[...] +=` / `grads[...] =` in a function, its key rendered as a pattern."""
    key: str
    line: int


@dataclass(frozen=True)
class FunctionInfo:
    qualname: str                 # "model.transformer.ffn_forward", "model.optim.AdamW.step"
    module: str                   # "model.transformer"
    name: str                     # "ffn_forward"
    file: str                     # "model/transformer.py" (repo-relative, posix)
    start: int                    # the `def` line (decorators excluded)
    end: int                      # the last line
    doc: Optional[str]            # the docstring, cleaned, or None
    is_public: bool
    kind: str                     # "function" | "method" | "test"
    calls: tuple = ()             # tuple[Call, ...] in code order (resolved and not)
    class_name: Optional[str] = None   # qualname of the class, for methods
    params: tuple = ()            # parameter names, in order (self included)
    first_line: int = 0           # first decorator line, else `start`
    refs: tuple = ()              # tuple[Call, ...]: indexed functions named but not called
    fixtures: tuple = ()          # qualnames of pytest fixtures the function requests


@dataclass(frozen=True)
class ClassInfo:
    qualname: str
    module: str
    name: str
    file: str
    start: int
    end: int
    doc: Optional[str]
    is_public: bool
    bases: tuple = ()             # qualnames of indexed base classes


@dataclass(frozen=True)
class ModuleInfo:
    name: str                     # "model.transformer"; a package's __init__ is "model"
    file: str
    doc: Optional[str]


@dataclass(frozen=True)
class FlowStep:
    """One statement of a function body, in code order, for the flow diagram."""
    line: int
    end_line: int
    text: str                     # exact source of the statement
    callee: Optional[str]         # the indexed function it calls, if any
    kind: str                     # "call" | "add" | "other"
    grads: tuple = ()             # grads keys it fills (its own line, plus folded writes)
    calls: tuple = ()             # every indexed function the statement calls, in order
    grad_lines: tuple = ()        # lines of `grads[k] += v` folded into this step
    within: tuple = ()            # header lines of the enclosing for/if/with/while/try


@dataclass(frozen=True)
class CodeWords:
    """What a function's own source spells (nested functions and lambdas included, callees
    not): what a page may say the function names. `names` include its own name and parameters;
    `keys` are its string constants and the keyword names of its calls (`dict(P=P)` makes the
    key "P"); `ops` the class names of its binary operators (`Mult` for `*`); `calls` the name
    of each function it calls (`row_max`, `reshape`), in code order."""
    names: frozenset
    attrs: frozenset
    keys: frozenset
    ops: frozenset
    calls: tuple
    returns: bool


# --------------------------------------------------------------------------------------
# Small AST helpers
# --------------------------------------------------------------------------------------

_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
_CACHE_NAME = re.compile(r"^(c|cache|c_\w+|cache_\w+|\w+_cache)$")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ()) + ((ast.Match,) if hasattr(ast, "Match") else ())


def _split_lines(text: str) -> list:
    lines = _LINE_SPLIT.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _segment(lines: list, node: ast.AST) -> str:
    """Exact source of a node (col offsets are UTF-8 byte offsets)."""
    l0, l1 = node.lineno, node.end_lineno
    c0, c1 = node.col_offset, node.end_col_offset
    if l0 == l1:
        return lines[l0 - 1].encode()[c0:c1].decode(errors="replace")
    first = lines[l0 - 1].encode()[c0:].decode(errors="replace")
    last = lines[l1 - 1].encode()[:c1].decode(errors="replace")
    return "\n".join([first, *lines[l0:l1 - 1], last])


def _dotted(node: ast.AST) -> Optional[list]:
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


def _module_defs(body) -> Iterator[ast.stmt]:
    """Function and class definitions at the top of a body, also inside top-level if/try/with
    (e.g. an ImportError fallback), never inside `if __name__ == "__main__":`."""
    for s in body:
        if isinstance(s, _DEFS + (ast.ClassDef,)):
            yield s
        elif isinstance(s, ast.If):
            if not _is_main_guard(s):
                yield from _module_defs(s.body)
                yield from _module_defs(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            yield from _module_defs(s.body)
        elif isinstance(s, _COMPOUND) and hasattr(s, "handlers"):
            yield from _module_defs(s.body)
            for h in s.handlers:
                yield from _module_defs(h.body)
            yield from _module_defs(s.orelse)
            yield from _module_defs(s.finalbody)


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


def _walk_scope(node: ast.AST, into_nested: bool = True) -> Iterator[ast.AST]:
    """Every node under `node` (not `node` itself); nested scopes only if into_nested."""
    stack = _children(node)[::-1]
    while stack:
        n = stack.pop()
        yield n
        if into_nested or not isinstance(n, _SCOPES):
            stack.extend(_children(n)[::-1])


def _walk_stmt(stmt: ast.AST) -> Iterator[ast.AST]:
    yield stmt
    yield from _walk_scope(stmt)


def _preorder(roots) -> list:
    """The nodes of the trees `roots`, each root then its descendants, depth first: what
    _walk_stmt yields for each root, as one list (one loop, no generators: analysing every
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


def _simple_statements(body, within=()) -> Iterator[tuple]:
    """(statement, enclosing header lines) in code order; compound statements are opened,
    nested def/class statements are yielded whole."""
    for s in body:
        if isinstance(s, _COMPOUND):
            inner = within + (s.lineno,)
            if hasattr(ast, "Match") and isinstance(s, ast.Match):
                for case in s.cases:
                    yield from _simple_statements(case.body, inner)
                continue
            yield from _simple_statements(s.body, inner)
            for h in getattr(s, "handlers", ()):
                yield from _simple_statements(h.body, inner)
            yield from _simple_statements(getattr(s, "orelse", ()), inner)
            yield from _simple_statements(getattr(s, "finalbody", ()), inner)
        else:
            yield s, within


def _body_without_docstring(fn: ast.AST) -> list:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def code_words_of(fn: ast.AST) -> CodeWords:
    """CodeWords of one function's source (docstring aside, nested functions included)."""
    names, attrs, keys, ops, calls, returns = {fn.name, *_params(fn)}, set(), set(), set(), [], False
    doc = fn.body[0].value if fn.body != _body_without_docstring(fn) else None
    for n in _walk_scope(fn):
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
        elif isinstance(n, _DEFS):
            names.add(n.name)
        elif isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, ast.Call) and _dotted(n.func):
            calls.append(_dotted(n.func)[-1])
        returns |= isinstance(n, ast.Return)
    return CodeWords(frozenset(names), frozenset(attrs), frozenset(keys), frozenset(ops),
                     tuple(dict.fromkeys(calls)), returns)


def _flat_targets(targets) -> Iterator[ast.expr]:
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            yield from _flat_targets(t.elts)
        elif isinstance(t, ast.Starred):
            yield from _flat_targets([t.value])
        else:
            yield t


def _stmt_targets(stmt) -> list:
    if isinstance(stmt, ast.Assign):
        return list(_flat_targets(stmt.targets))
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return list(_flat_targets([stmt.target]))
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return list(_flat_targets([stmt.target]))
    return []


def _stmt_value(stmt) -> Optional[ast.expr]:
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)):
        return stmt.value
    return None


def _params(fn: ast.AST) -> list:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args]
    if a.vararg:
        names.append(a.vararg.arg)
    names += [x.arg for x in a.kwonlyargs]
    if a.kwarg:
        names.append(a.kwarg.arg)
    return names


def _decorator_names(fn: ast.AST) -> list:
    out = []
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        parts = _dotted(target)
        if parts:
            out.append(".".join(parts))
    return out


def _is_fixture(fn: ast.AST) -> bool:
    return any(n == "fixture" or n.endswith(".fixture") for n in _decorator_names(fn))


def _is_static(fn: ast.AST) -> bool:
    return any(n.split(".")[-1] == "staticmethod" for n in _decorator_names(fn))


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


def _import_bindings(node, current: str, is_package: bool) -> Iterator[tuple]:
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


# --------------------------------------------------------------------------------------
# Internal per-module / per-function state
# --------------------------------------------------------------------------------------

@dataclass
class _Module:
    name: str
    file: str
    is_package: bool
    tree: ast.Module
    lines: list
    bindings: dict              # local name -> fully qualified name
    stars: list                 # modules imported with *


@dataclass
class _Fn:
    qualname: str
    module: _Module
    node: ast.AST
    class_q: Optional[str]
    local: dict = None          # name -> ("alias", fq) | ("instance", class fq) | ("shadow", None)
    sites: dict = None          # id(ast.Call) -> _Site


@dataclass
class _Site:
    node: ast.Call
    callee: Optional[str]       # indexed qualname or None
    text: str                   # dotted text as written (or unparsed)
    bound: bool                 # called on an instance: the callee's first parameter is filled


# --------------------------------------------------------------------------------------
# The index
# --------------------------------------------------------------------------------------

class SourceIndex:
    """Everything stage 2 knows about the source. Build it with `build_index`."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.files: dict = {}          # "model/transformer.py" -> list of lines (no newline)
        self.functions: dict = {}      # qualname -> FunctionInfo, file order then line order
        self.classes: dict = {}        # qualname -> ClassInfo
        self.modules: dict = {}        # module name -> ModuleInfo
        self._mods: dict = {}          # module name -> _Module
        self._fns: dict = {}           # qualname -> _Fn
        self._class_nodes: dict = {}   # class qualname -> (ast.ClassDef, _Module)
        self._callers: dict = {}       # callee qualname -> list of (caller qualname, _Site)
        self._tested: Optional[dict] = None
        self._memo_callers: dict = {}
        self._memo_fill: dict = {}
        self._memo_assignments: dict = {}
        self._memo_words: dict = {}
        self._in_progress: set = set()
        self._cuts = 0                 # cycle guards hit: results computed past one are not memoised

    # -- lookups -------------------------------------------------------------------------
    def function(self, qualname: str) -> FunctionInfo:
        """The function called `qualname`; NotIndexed (a KeyError) suggests close names."""
        try:
            return self.functions[qualname]
        except KeyError:
            if qualname.split(".")[0] not in self.modules:
                raise NotIndexed(*self._outside_message(qualname)) from None
            raise NotIndexed(self._missing_message(qualname)) from None

    def function_at(self, file: str, line: int) -> Optional[FunctionInfo]:
        """The indexed function whose lines (decorators included) contain file:line, if any."""
        best = None
        for f in self.functions.values():
            if f.file == file and f.first_line <= line <= f.end:
                if best is None or f.start >= best.start:
                    best = f
        return best

    def _outside_message(self, qualname: str):
        """-> (message, fix) for a name outside every indexed package (json.dumps): listing the
        indexed modules would be a long line that does not help."""
        packages = " and ".join(f"{p}/" for p in sorted({m.split(".")[0] for m in self.modules}))
        return (f"{qualname} is not in the documented code: a page can cite only functions of {packages}",
                f"cite a function of {packages.replace(' and ', ' or ')}, or name {qualname} in the prose")

    def _missing_message(self, qualname: str) -> str:
        parts = qualname.split(".")
        known = 0        # length of the longest prefix that is an indexed module
        for i in range(len(parts) - 1, 0, -1):
            if ".".join(parts[:i]) in self.modules:
                known = i
                break
        container = ".".join(parts[:known + 1])
        if len(parts) > 1 and container not in self.functions and (
                known == 0 or (len(parts) - known > 1 and container not in self.classes)):
            missing = container if known else ".".join(parts[:-1])
            rest = qualname[len(missing):]
            close = difflib.get_close_matches(missing, sorted(self.modules), n=3, cutoff=0.6)
            sugg = [c + rest for c in close if c + rest in self.functions][:1] or close[:1]
            msg = f"no module {missing} (looking up {qualname})"
            if sugg:
                return msg + f"; did you mean {' or '.join(sugg)}?"
            return msg + f"; indexed modules: {', '.join(sorted(self.modules))}"
        # Within a known module, the names are compared without it: whole qualnames share the
        # module's prefix, which made any name "close" (model.ops.nope -> model.ops.row_max).
        prefix = ".".join(parts[:known]) + "." if known else ""
        names = [q[len(prefix):] for q in self.functions if q.startswith(prefix)]
        close = [prefix + c for c in difflib.get_close_matches(qualname[len(prefix):], names, n=1, cutoff=0.6)]
        same_name = [q for q in self.functions if q.rsplit(".", 1)[-1] == parts[-1] and q not in close]
        sugg = (close + same_name)[:3] if same_name else close
        msg = f"no function {qualname}"
        return msg + f"; did you mean {' or '.join(sugg)}?" if sugg else msg

    def assignments(self, qualname: str) -> dict:
        """{local name: [(first line, last line), ...]} of every statement of `qualname` that
        binds it (`=`, `+=`, annotated, a `for` target), in code order; nested functions are
        not looked into. A reference may cite a local by its name: this is its line.
        (Memoised: a page asks it for every snippet that is a name.)"""
        fn = self._fns[self.function(qualname).qualname]
        if fn.qualname not in self._memo_assignments:
            self._memo_assignments[fn.qualname] = self._assignments(fn)
        return {name: list(places) for name, places in self._memo_assignments[fn.qualname].items()}

    @staticmethod
    def _assignments(fn) -> dict:
        out = {}
        for stmt, _ in _simple_statements(_body_without_docstring(fn.node)):
            for t in _stmt_targets(stmt):
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append((stmt.lineno, stmt.end_lineno))
        for node in _walk_scope(fn.node, into_nested=False):      # for loops, with ... as x
            if isinstance(node, (ast.For, ast.AsyncFor)):
                for t in _flat_targets([node.target]):
                    if isinstance(t, ast.Name):
                        out.setdefault(t.id, []).append((node.lineno, node.lineno))
        return out

    def code_words(self, qualname: str) -> CodeWords:
        """The names, attributes, keys and operators the source of `qualname` spells."""
        q = self.function(qualname).qualname
        if q not in self._memo_words:                # a page asks it for every symbol row
            self._memo_words[q] = code_words_of(self._fns[q].node)
        return self._memo_words[q]

    def assertions(self, qualname: str) -> list:
        """The Assertions of `qualname` (nested functions included), in code order."""
        fn = self._fns[self.function(qualname).qualname]
        out = []
        for n in _walk_scope(fn.node):
            checks = isinstance(n, ast.Assert)
            if isinstance(n, ast.Call) and _dotted(n.func):
                name = _dotted(n.func)
                checks = name[-1].startswith("assert") or name[-2:] == ["pytest", "approx"]
            elif isinstance(n, (ast.With, ast.AsyncWith)):
                checks = any(isinstance(i.context_expr, ast.Call) and (_dotted(i.context_expr.func) or [""])[-2:]
                             in (["pytest", "raises"], ["pytest", "warns"]) for i in n.items)
            if checks:
                reads = frozenset(x.id for x in _walk_scope(n) if isinstance(x, ast.Name))
                out.append(Assertion(n.lineno, n.end_lineno, reads))
        return sorted(set(out), key=lambda a: (a.start, a.end))

    def class_attributes(self, package: str = "model") -> frozenset:
        """Every field, method and `self.x =` attribute of a class of `package`: what
        `cfg.ff_dim` or `tokenizer.vocab_size` may name wherever the instance is."""
        out = set()
        for node, mod in self._class_nodes.values():
            if mod.name.split(".")[0] != package:
                continue
            for n in node.body:
                out |= {t.id for t in _stmt_targets(n) if isinstance(t, ast.Name)}
                if isinstance(n, _DEFS):
                    out.add(n.name)
            out |= {n.attr for n in _walk_scope(node) if isinstance(n, ast.Attribute)
                    and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) and n.value.id == "self"}
        return frozenset(out)

    def local_names(self, qualname: str) -> list:
        """The parameters and every name a statement of `qualname` binds, in order."""
        f = self.function(qualname)
        return list(dict.fromkeys(list(f.params) + list(self.assignments(qualname))))

    # -- calls ---------------------------------------------------------------------------
    def called_by(self, qualname: str) -> list:
        """Direct callers: [CallerRef(caller, line)], sorted by caller then line."""
        self.function(qualname)
        refs = {(c, s.node.lineno) for c, s in self._callers.get(qualname, ())}
        return [CallerRef(c, line) for c, line in sorted(refs)]

    def calls(self, qualname: str) -> list:
        """The indexed functions `qualname` calls directly, each once, in code order."""
        f = self.function(qualname)
        seen = {}
        for c in f.calls:
            if c.callee in self.functions:
                seen.setdefault(c.callee, None)
        return list(seen)

    def tested_by(self, qualname: str) -> list:
        """Every test (a `test*` function under tests/) that reaches `qualname`: direct ones
        first, then through others by shortest chain, ties by test name."""
        self.function(qualname)
        if self._tested is None:
            self._tested = self._compute_tested()
        return list(self._tested.get(qualname, ()))

    def _edges(self, q: str) -> list:
        f = self.functions[q]
        out = {}
        for c in f.calls + f.refs:
            if c.callee in self.functions and c.callee != q:
                out.setdefault(c.callee, None)
        for fx in f.fixtures:
            out.setdefault(fx, None)
        return list(out)

    def _compute_tested(self) -> dict:
        edges = {q: self._edges(q) for q in self.functions}
        reached: dict = {}
        for test in sorted(q for q, f in self.functions.items() if f.kind == "test"):
            parent = {test: None}
            queue = deque([test])
            while queue:
                q = queue.popleft()
                for n in edges[q]:
                    if n not in parent:
                        parent[n] = q
                        queue.append(n)
            for target in parent:
                if target == test:
                    continue
                path = [target]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                path = tuple(reversed(path))
                reached.setdefault(target, []).append(TestLink(test, len(path) == 2, path))
        return {t: sorted(links, key=lambda k: (not k.direct, len(k.path), k.test)) for t, links in reached.items()}

    def public_functions(self, package: str = "model") -> list:
        """Public functions, and public methods of public classes, of `package`, in index order."""
        return [q for q, f in self.functions.items()
                if (f.module == package or f.module.startswith(package + ".")) and f.is_public
                and f.kind != "test"]

    # -- caches --------------------------------------------------------------------------
    def cache_reads(self, qualname: str) -> list:
        """Every `c["key"]` read (variables named c, cache, c_*, ...), in code order."""
        self.function(qualname)
        fn = self._fns[qualname]
        parents = {}
        for node in _walk_scope(fn.node):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        out = []
        for node in _walk_scope(fn.node):
            if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Name) and _CACHE_NAME.match(node.value.id)
                    and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
                continue
            # climb `c["blocks"][l]` to the expression that is passed on
            top = node
            while isinstance(parents.get(id(top)), ast.Subscript) and parents[id(top)].value is top:
                top = parents[id(top)]
            passed_to = None
            parent = parents.get(id(top))
            if isinstance(parent, ast.keyword):
                parent = parents.get(id(parent))
                is_arg = True
            else:
                is_arg = isinstance(parent, ast.Call) and top is not parent.func
            if isinstance(parent, ast.Call) and is_arg:
                site = fn.sites.get(id(parent))
                if site is not None:
                    passed_to = site.callee or site.text
            out.append((node.lineno, node.col_offset, CacheRead(node.slice.value, node.lineno, passed_to, node.value.id)))
        out.sort(key=lambda r: r[:2])
        return [r[2] for r in out]

    def _returned_dicts(self, fn: _Fn) -> Iterator[ast.AST]:
        for node in _walk_scope(fn.node, into_nested=False):
            if isinstance(node, ast.Return) and node.value is not None:
                vals = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for v in vals:
                    if isinstance(v, ast.Call) and _dotted(v.func) == ["dict"] and not v.args:
                        yield v
                    elif isinstance(v, ast.Dict):
                        yield v

    def cache_builds(self, qualname: str) -> Optional[CacheBuild]:
        """The `dict(...)` / `{...}` a return statement builds (the first, in code order)."""
        self.function(qualname)
        fn = self._fns[qualname]
        lines = fn.module.lines
        dicts = sorted(self._returned_dicts(fn), key=lambda n: (n.lineno, n.col_offset))
        for d in dicts:
            pairs = []
            if isinstance(d, ast.Call):
                for kw in d.keywords:
                    if kw.arg is not None:
                        pairs.append((kw.arg, kw.value))
            else:
                for k, v in zip(d.keys, d.values):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str):
                        pairs.append((k.value, v))
            key_vars = tuple((k, v.id if isinstance(v, ast.Name) else _segment(lines, v)) for k, v in pairs)
            return CacheBuild(tuple(k for k, _ in pairs), d.lineno, d.end_lineno, key_vars)
        return None

    def cache_assignments(self, qualname: str) -> list:
        """Cache variables assigned from a call, e.g. `Xn, c_ln1 = layer_norm_forward(...)`,
        and the key of the returned cache dict each is stored under."""
        self.function(qualname)
        fn = self._fns[qualname]
        build = self.cache_builds(qualname)
        stored = {}
        if build:
            for k, v in build.key_vars:
                stored.setdefault(v, k)
        appended = {}      # item var -> list var, from `lst.append(item)`
        for node in _walk_scope(fn.node, into_nested=False):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append"
                    and isinstance(node.func.value, ast.Name) and len(node.args) == 1
                    and isinstance(node.args[0], ast.Name)):
                appended.setdefault(node.args[0].id, node.func.value.id)
        out = []
        for stmt, _ in _simple_statements(fn.node.body):
            if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)):
                continue
            site = fn.sites.get(id(stmt.value))
            if site is None:
                continue
            producer = site.callee or site.text
            for target in stmt.targets:
                names = []
                if isinstance(target, ast.Name):
                    names = [target]
                elif isinstance(target, (ast.Tuple, ast.List)):
                    elts = target.elts
                    names = [e for e in elts if isinstance(e, ast.Name) and _CACHE_NAME.match(e.id)]
                    if (len(elts) == 2 and isinstance(elts[1], ast.Name) and elts[1].id != "_"
                            and producer.endswith("_forward") and elts[1] not in names):
                        names.append(elts[1])
                for n in names:
                    if isinstance(target, ast.Name) and not _CACHE_NAME.match(n.id):
                        continue
                    key, in_list = stored.get(n.id), False
                    if key is None and n.id in appended and appended[n.id] in stored:
                        key, in_list = stored[appended[n.id]], True
                    out.append(CacheAssign(n.id, producer, stmt.lineno, key, in_list))
        return out

    # -- gradient writes -----------------------------------------------------------------
    def _grad_keys(self, stmt, gnames) -> list:
        """Key expressions of `grads[...]` targets of one statement."""
        out = []
        for t in _stmt_targets(stmt) if not isinstance(stmt, (ast.For, ast.AsyncFor)) else []:
            base = t
            while isinstance(base, ast.Subscript):
                if isinstance(base.value, ast.Name) and base.value.id in gnames:
                    out.append(base.slice)
                    break
                base = base.value
        return out

    def _statement_is_grads_only(self, stmt, gnames) -> bool:
        targets = _stmt_targets(stmt)
        return bool(targets) and len(self._grad_keys(stmt, gnames)) == len(targets)

    def _key(self, q: str, expr, line: int, env: dict) -> str:
        p = self._pattern(q, expr, line, env, 0)
        return p if p is not None else "{" + self._text(q, expr) + "}"

    def _text(self, q: str, expr) -> str:
        """The source text of an expression of function q, on one line."""
        return " ".join(_segment(self._fns[q].module.lines, expr).split())

    def _pattern(self, q: str, expr, line: int, env: dict, depth: int) -> Optional[str]:
        """What a string expression holds, as a pattern with `{name}` for unknown parts;
        None if it is not recognisably a string."""
        if depth > 40:
            return None
        if isinstance(expr, ast.Constant):
            return expr.value if isinstance(expr.value, str) else None
        if isinstance(expr, ast.JoinedStr):
            parts = []
            for v in expr.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    inner = None
                    if v.conversion == -1 and v.format_spec is None:
                        if isinstance(v.value, ast.Constant):
                            inner = str(v.value.value)
                        else:
                            inner = self._pattern(q, v.value, line, env, depth + 1)
                    parts.append(inner if inner is not None else "{" + self._text(q, v.value) + "}")
            return "".join(parts)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            left = self._pattern(q, expr.left, line, env, depth + 1)
            right = self._pattern(q, expr.right, line, env, depth + 1)
            if left is None and right is None:
                return None
            return ((left if left is not None else "{" + self._text(q, expr.left) + "}")
                    + (right if right is not None else "{" + self._text(q, expr.right) + "}"))
        if isinstance(expr, ast.Name):
            return self._name_pattern(q, expr.id, line, env, depth + 1)
        return None

    def _name_pattern(self, q: str, name: str, line: int, env: dict, depth: int) -> Optional[str]:
        if name in env:
            return env[name]
        fn = self._fns[q]
        before = None
        for stmt, _ in _simple_statements(fn.node.body):
            if stmt.lineno >= line:
                break
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name):
                before = stmt
        if before is not None:
            return self._pattern(q, before.value, before.lineno, env, depth + 1)
        if name in _params(fn.node):
            return self._from_callers(q, name)
        return None

    def _bind(self, caller_q: str, site: _Site, env: dict, gnames: frozenset) -> tuple:
        """Parameter patterns and grads-dict names of the callee, as bound at one call site."""
        callee = self._fns[site.callee]
        a = callee.node.args
        positional = [x.arg for x in a.posonlyargs + a.args]
        if site.bound and positional and not _is_static(callee.node):
            positional = positional[1:]
        defaults = dict(zip([x.arg for x in a.posonlyargs + a.args][-len(a.defaults):] if a.defaults else [],
                            a.defaults))
        defaults.update({k.arg: d for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        passed = {}
        for name, arg in zip(positional, site.node.args):
            if isinstance(arg, ast.Starred):
                break
            passed[name] = arg
        for kw in site.node.keywords:
            if kw.arg is not None:
                passed[kw.arg] = kw.value
        new_env, new_g = {}, {"grads"}
        for name in _params(callee.node):
            if name in passed:
                expr = passed[name]
                new_env[name] = self._pattern(caller_q, expr, site.node.lineno, env, 0)
                if isinstance(expr, ast.Name) and expr.id in gnames:
                    new_g.add(name)
            elif name in defaults:
                new_env[name] = self._pattern(site.callee, defaults[name], callee.node.lineno, {}, 0)
            else:
                new_env[name] = None
        return new_env, frozenset(new_g)

    def _from_callers(self, q: str, param: str) -> Optional[str]:
        """The pattern every caller passes for `param`, when they all agree; else None."""
        key = (q, param)
        if key in self._memo_callers:
            return self._memo_callers[key]
        if key in self._in_progress:
            self._cuts += 1
            return None
        cuts = self._cuts
        self._in_progress.add(key)
        try:
            values = set()
            for caller, site in self._callers.get(q, ()):
                if caller == q and any(isinstance(a, ast.Name) and a.id == param
                                       for a in site.node.args + [k.value for k in site.node.keywords]):
                    continue      # recursion passing the parameter through says nothing new
                env, _ = self._bind(caller, site, {}, frozenset({"grads"}))
                values.add(env.get(param))
            result = values.pop() if len(values) == 1 else None
        finally:
            self._in_progress.discard(key)
        if self._cuts == cuts:
            self._memo_callers[key] = result
        return result

    def grads_written(self, qualname: str) -> list:
        """Every `grads[...] +=` / `= ` (also in tuple targets) in the function, in code order."""
        self.function(qualname)
        fn = self._fns[qualname]
        out = []
        for stmt, _ in _simple_statements(fn.node.body):
            for k in self._grad_keys(stmt, {"grads"}):
                out.append(GradWrite(self._key(qualname, k, stmt.lineno, {}), stmt.lineno))
        return out

    def _statement_at(self, fn: _Fn, line: int):
        for stmt, within in _simple_statements(fn.node.body):
            if stmt.lineno <= line <= stmt.end_lineno:
                return stmt
        return None

    def _sites_in(self, fn: _Fn, stmt) -> list:
        nodes = [n for n in _walk_stmt(stmt) if isinstance(n, ast.Call)]
        nodes.sort(key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset))
        return [fn.sites[id(n)] for n in nodes if id(n) in fn.sites and fn.sites[id(n)].callee]

    def _fill_statement(self, q: str, stmt, env: dict, gnames: frozenset, stack: tuple, out: dict):
        if isinstance(stmt, _DEFS + (ast.ClassDef,)):
            return
        fn = self._fns[q]
        for site in self._sites_in(fn, stmt):
            if site.callee in stack:
                self._cuts += 1
                continue
            callee_env, callee_g = self._bind(q, site, env, gnames)
            for k in self._fill_function(site.callee, callee_env, callee_g, stack + (site.callee,)):
                out.setdefault(k, None)
        for k in self._grad_keys(stmt, gnames):
            out.setdefault(self._key(q, k, stmt.lineno, env), None)

    def _fill_function(self, q: str, env: dict, gnames: frozenset, stack: tuple) -> tuple:
        memo = (q, tuple(sorted(env.items(), key=lambda kv: kv[0])), gnames)
        if memo in self._memo_fill:
            return self._memo_fill[memo]
        out: dict = {}
        cuts = self._cuts
        for stmt, _ in _simple_statements(self._fns[q].node.body):
            self._fill_statement(q, stmt, env, gnames, stack, out)
        if self._cuts == cuts:
            self._memo_fill[memo] = tuple(out)
        return tuple(out)

    def grads_filled(self, qualname: str, line: int) -> list:
        """The grads keys filled by the statement at `line` of `qualname`, including through
        the functions that statement calls (parameters bound at that call site)."""
        self.function(qualname)
        fn = self._fns[qualname]
        stmt = self._statement_at(fn, line)
        if stmt is None:
            return []
        out: dict = {}
        self._fill_statement(qualname, stmt, {}, frozenset({"grads"}), (qualname,), out)
        return list(out)

    # -- flow ----------------------------------------------------------------------------
    def flow_steps(self, qualname: str) -> list:
        """The statements of the body in code order, for the flow diagram. Skipped: the
        docstring, `pass`, and trivial assignments (`p = f"b{l}."`). A `grads[k] += v` whose
        value is a bare name produced by one earlier step is folded into that step (its keys
        join the step's `grads`, its line the step's `grad_lines`)."""
        self.function(qualname)
        fn = self._fns[qualname]
        lines = fn.module.lines
        gnames = {"grads"}
        steps: list = []
        last_assign: dict = {}
        for stmt, within in _simple_statements(_body_without_docstring(fn.node)):
            if isinstance(stmt, ast.Pass) or self._trivial(stmt):
                for t in _stmt_targets(stmt):
                    if isinstance(t, ast.Name):
                        last_assign[t.id] = None
                continue
            sites = [] if isinstance(stmt, _DEFS + (ast.ClassDef,)) else self._sites_in(fn, stmt)
            value = _stmt_value(stmt)
            if not sites and self._statement_is_grads_only(stmt, gnames) and value is not None:
                elts = value.elts if isinstance(value, ast.Tuple) else [value]
                names = {n.id for n in elts if isinstance(n, ast.Name)} if all(
                    isinstance(n, ast.Name) for n in elts) else set()
                owners = {last_assign.get(n) for n in names}
                if names and len(owners) == 1 and None not in owners:
                    step = steps[owners.pop()]
                    for k in self.grads_filled(qualname, stmt.lineno):
                        if k not in step["grads"]:
                            step["grads"].append(k)
                    step["grad_lines"].append(stmt.lineno)
                    continue
            callee = None
            if sites:
                top = fn.sites.get(id(value)) if isinstance(value, ast.Call) else None
                callee = top.callee if top is not None and top.callee else sites[0].callee
                kind = "call"
            elif value is not None and not any(isinstance(n, ast.Call) for n in ast.walk(value)) and (
                    (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
                     and not isinstance(stmt, ast.AugAssign))
                    or (isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add)
                        and not self._grad_keys(stmt, gnames))):
                kind = "add"
            else:
                kind = "other"
            steps.append(dict(line=stmt.lineno, end_line=stmt.end_lineno, text=_segment(lines, stmt),
                              callee=callee, kind=kind, grads=list(self.grads_filled(qualname, stmt.lineno)),
                              calls=tuple(dict.fromkeys(s.callee for s in sites)), grad_lines=[], within=within))
            for t in _stmt_targets(stmt):
                if isinstance(t, ast.Name):
                    last_assign[t.id] = len(steps) - 1
        return [FlowStep(s["line"], s["end_line"], s["text"], s["callee"], s["kind"], tuple(s["grads"]),
                         s["calls"], tuple(s["grad_lines"]), s["within"]) for s in steps]

    @staticmethod
    def _trivial(stmt) -> bool:
        """`p = f"b{l}."`, `d, F = cfg.emb_dim, cfg.ff_dim`: names, constants, f-strings, attributes."""
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
            return False
        if not all(isinstance(t, ast.Name) for t in _stmt_targets(stmt)):
            return False
        allowed = (ast.Constant, ast.JoinedStr, ast.FormattedValue, ast.Name, ast.Attribute,
                   ast.Tuple, ast.List, ast.expr_context)
        return all(isinstance(n, allowed) for n in ast.walk(stmt.value))

    # ----------------------------------------------------------------------------------
    # Building
    # ----------------------------------------------------------------------------------
    def _add_module(self, name: str, rel: str, text: str):
        lines = _split_lines(text)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text, filename=rel)
        except SyntaxError as e:
            raise SourceError(rel, e.lineno, e.msg) from None
        except ValueError as e:       # e.g. null bytes
            raise SourceError(rel, None, str(e)) from None
        is_package = rel.endswith("/__init__.py")
        mod = _Module(name, rel, is_package, tree, lines, {}, [])
        # imports anywhere outside functions and classes
        for node in _walk_scope(tree, into_nested=False):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for local, target in _import_bindings(node, name, is_package):
                    if local == "*":
                        mod.stars.append(target)
                    else:
                        mod.bindings[local] = target
        self.files[rel] = lines
        self._mods[name] = mod
        self.modules[name] = ModuleInfo(name, rel, ast.get_docstring(tree))
        self._collect_defs(mod, tree.body, prefix=name, class_q=None, class_public=True)

    def _collect_defs(self, mod: _Module, body, prefix: str, class_q: Optional[str], class_public: bool):
        for node in _module_defs(body):
            q = f"{prefix}.{node.name}"
            if class_q is None:
                mod.bindings[node.name] = q
            if isinstance(node, ast.ClassDef):
                public = class_public and not node.name.startswith("_")
                self._class_nodes[q] = (node, mod)
                self.classes.pop(q, None)
                self.classes[q] = ClassInfo(q, mod.name, node.name, mod.file, node.lineno, node.end_lineno,
                                            ast.get_docstring(node), public and self._module_public(mod.name))
                self._collect_defs(mod, node.body, q, q, public)
            else:
                self._fns.pop(q, None)
                self._fns[q] = _Fn(q, mod, node, class_q)

    @staticmethod
    def _module_public(module: str) -> bool:
        return not any(p.startswith("_") for p in module.split("."))

    def _binding(self, module: str, name: str, depth: int = 0) -> Optional[str]:
        mod = self._mods.get(module)
        if mod is None or depth > 10:
            return None
        if name in mod.bindings:
            return mod.bindings[name]
        for star in mod.stars:
            if not name.startswith("_"):
                b = self._binding(star, name, depth + 1)
                if b is not None:
                    return b
        return None

    def _method(self, class_q: str, name: str, seen=None) -> Optional[str]:
        q = f"{class_q}.{name}"
        if q in self._fns:
            return q
        seen = seen or set()
        seen.add(class_q)
        info = self.classes.get(class_q)
        for base in info.bases if info else ():
            if base not in seen:
                r = self._method(base, name, seen)
                if r:
                    return r
        return None

    def _constructor(self, class_q: str) -> Optional[str]:
        """What calling a class runs: its `__init__`, or a dataclass's `__post_init__`."""
        init = self._method(class_q, "__init__")
        if init is None:
            node, _ = self._class_nodes[class_q]
            if any(n.split(".")[-1] == "dataclass" for n in _decorator_names(node)):
                init = self._method(class_q, "__post_init__")
        return init

    def _canonical(self, fq: str, depth: int = 0) -> Optional[str]:
        """A fully qualified dotted name -> the indexed function/class/module it denotes."""
        if fq in self._fns or fq in self.classes or fq in self._mods:
            return fq
        if depth > 10:
            return None
        parts = fq.split(".")
        for i in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:i])
            if prefix in self.classes:
                return self._method(prefix, parts[i]) if i == len(parts) - 1 else None
            if prefix in self._mods:
                target = self._binding(prefix, parts[i])
                if target and target != f"{prefix}.{parts[i]}":
                    return self._canonical(".".join([target, *parts[i + 1:]]), depth + 1)
                return None
        return None

    def _lookup(self, fn: Optional[_Fn], module: str, parts: list) -> tuple:
        """Resolve a dotted name in a function's scope -> (fq or None, via an instance)."""
        head, rest = parts[0], parts[1:]
        b = fn.local.get(head) if fn is not None and fn.local is not None else None
        if b is not None:
            kind, target = b
            if kind == "shadow":
                return None, False
            if kind == "instance":
                if len(rest) == 1:
                    return self._method(target, rest[0]), True
                return None, False
            base = target
        else:
            base = self._binding(module, head)
            if base is None:
                return None, False
        return self._canonical(".".join([base, *rest])), False

    def _resolve_bases(self):
        for q, (node, mod) in self._class_nodes.items():
            bases = []
            for b in node.bases:
                parts = _dotted(b)
                if parts:
                    fq, _ = self._lookup(None, mod.name, parts)
                    if fq in self.classes:
                        bases.append(fq)
            info = self.classes[q]
            self.classes[q] = ClassInfo(info.qualname, info.module, info.name, info.file, info.start, info.end,
                                        info.doc, info.is_public, tuple(bases))

    def _annotation_class(self, fn: _Fn, ann) -> Optional[str]:
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return None
        parts = _dotted(ann) if ann is not None else None
        if not parts:
            return None
        fq, _ = self._lookup(None, fn.module.name, parts)
        return fq if fq in self.classes else None

    def _build_scope(self, fn: _Fn, body_nodes):
        """Local names: parameters, local imports, `x = Class(...)` (an instance),
        `f = some_function` (an alias); every other local name shadows a module-level one.
        Flow-insensitive: the last binding in source order wins."""
        node, mod = fn.node, fn.module
        fn.local = {}
        a = node.args
        for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
            cls = self._annotation_class(fn, arg.annotation)
            fn.local[arg.arg] = ("instance", cls) if cls else ("shadow", None)
        first = (a.posonlyargs + a.args)[:1]
        if fn.class_q and first and not _is_static(node):
            fn.local[first[0].arg] = ("instance", fn.class_q)
        events, skip = [], set()
        for n in body_nodes:              # every node of every statement of the body, in order
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                for local, target in _import_bindings(n, mod.name, mod.is_package):
                    if local != "*":
                        events.append((n.lineno, n.col_offset, local, ("alias", target)))
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                skip.add(id(n.targets[0]))
                events.append((n.lineno, n.col_offset, n.targets[0].id, n.value))
            elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and id(n) not in skip:
                events.append((n.lineno, n.col_offset, n.id, ("shadow", None)))
            elif isinstance(n, _DEFS + (ast.ClassDef,)):
                events.append((n.lineno, n.col_offset, n.name, ("shadow", None)))
            elif isinstance(n, ast.arg):
                events.append((n.lineno, n.col_offset, n.arg, ("shadow", None)))
        events.sort(key=lambda e: (e[0], e[1]))
        for _, _, name, what in events:
            if isinstance(what, ast.AST):
                binding = ("shadow", None)
                if isinstance(what, ast.Call):
                    parts = _dotted(what.func)
                    if parts:
                        fq, _ = self._lookup(fn, mod.name, parts)
                        if fq in self.classes:
                            binding = ("instance", fq)
                else:
                    parts = _dotted(what)
                    if parts:
                        fq, _ = self._lookup(fn, mod.name, parts)
                        if fq in self._fns or fq in self.classes or fq in self._mods:
                            binding = ("alias", fq)
                what = binding
            fn.local[name] = what

    def _analyse(self, fn: _Fn) -> FunctionInfo:
        node, mod = fn.node, fn.module
        body_nodes = _preorder(node.body)
        self._build_scope(fn, body_nodes)
        fn.sites = {}
        lines = mod.lines
        calls, chain_inner = [], set()
        for n in body_nodes:
            if isinstance(n, ast.Call):
                chain_inner.add(id(n.func))
            elif isinstance(n, ast.Attribute):
                chain_inner.add(id(n.value))
        for n in body_nodes:
            if not isinstance(n, ast.Call):
                continue
            parts = _dotted(n.func)
            callee, bound = None, False
            if parts:
                fq, bound = self._lookup(fn, mod.name, parts)
                if fq in self._fns:
                    callee = fq
                elif fq in self.classes:
                    callee, bound = self._constructor(fq), True
                text = ".".join(parts)
            else:
                text = ast.unparse(n.func)
            site = _Site(n, callee, text, bound)
            fn.sites[id(n)] = site
            calls.append((n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset,
                          Call(callee or text, n.lineno, _segment(lines, n))))
        calls.sort(key=lambda c: c[:4])
        # references: indexed functions named without being called (also in decorators/defaults)
        refs = []
        extra = _preorder(node.decorator_list + node.args.defaults + [x for x in node.args.kw_defaults if x])
        for n in extra:
            if isinstance(n, ast.Call):
                chain_inner.add(id(n.func))
            elif isinstance(n, ast.Attribute):
                chain_inner.add(id(n.value))
        in_body = {id(n) for n in body_nodes}
        for n in body_nodes + extra:
            if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load) and id(n) not in chain_inner:
                parts = _dotted(n)
                if parts:
                    scope_fn = fn if id(n) in in_body else None
                    fq, _ = self._lookup(scope_fn, mod.name, parts)
                    if fq in self._fns and fq != fn.qualname:
                        refs.append((n.lineno, n.col_offset, Call(fq, n.lineno, _segment(lines, n))))
            elif isinstance(n, ast.Call) and id(n) not in in_body:
                parts = _dotted(n.func)
                if parts:
                    fq, _ = self._lookup(None, mod.name, parts)
                    if fq in self._fns:
                        refs.append((n.lineno, n.col_offset, Call(fq, n.lineno, _segment(lines, n))))
        refs.sort(key=lambda r: r[:2])
        name = node.name
        class_public = True
        if fn.class_q:
            class_public = self.classes[fn.class_q].is_public
        is_public = not name.startswith("_") and class_public and self._module_public(mod.name)
        kind = "method" if fn.class_q else "function"
        base = mod.file.rsplit("/", 1)[-1]
        if (mod.name.split(".")[0] == "tests" and (base.startswith("test_") or base.endswith("_test.py"))
                and name.startswith("test") and (fn.class_q is None or fn.class_q.rsplit(".", 1)[-1].startswith("Test"))):
            kind = "test"
        return FunctionInfo(
            qualname=fn.qualname, module=mod.name, name=name, file=mod.file, start=node.lineno,
            end=node.end_lineno, doc=ast.get_docstring(node), is_public=is_public, kind=kind,
            calls=tuple(c[4] for c in calls), class_name=fn.class_q, params=tuple(_params(node)),
            first_line=min([d.lineno for d in node.decorator_list] + [node.lineno]),
            refs=tuple(r[2] for r in refs))

    def _fixture_edges(self):
        fixtures = {}      # module -> {name: qualname}
        for q, fn in self._fns.items():
            if fn.class_q is None and _is_fixture(fn.node):
                fixtures.setdefault(fn.module.name, {})[fn.node.name] = q
        if not fixtures:
            return
        for q, info in list(self.functions.items()):
            if info.module.split(".")[0] != "tests":
                continue
            mod = info.module.split(".")
            scopes = [info.module] + [".".join(mod[:i] + ["conftest"]) for i in range(len(mod) - 1, 0, -1)]
            found = []
            params = info.params[1:] if info.class_name else info.params
            for p in params:
                for s in scopes:
                    target = fixtures.get(s, {}).get(p)
                    if target and target != q:
                        found.append(target)
                        break
            if found:
                self.functions[q] = dataclasses.replace(info, fixtures=tuple(found))

    def _finish(self):
        self._resolve_bases()
        for q, fn in self._fns.items():
            self.functions[q] = self._analyse(fn)
        self._fixture_edges()
        for q, fn in self._fns.items():
            for site in sorted(fn.sites.values(), key=lambda s: (s.node.lineno, s.node.col_offset)):
                if site.callee:
                    self._callers.setdefault(site.callee, []).append((q, site))


def _module_name(rel: str) -> str:
    name = rel[:-3].replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def build_index(root: Path, packages=("model", "tests")) -> SourceIndex:
    """Parse every `*.py` under each package of `root` (sorted) and index it."""
    root = Path(root)
    index = SourceIndex(root)
    for package in packages:
        directory = root / package
        if not directory.is_dir():
            raise SourceError(package, None, f"no package directory {package}/ under {root}")
        for rel in source_files(root, package):
            index._add_module(_module_name(rel), rel, read_source(root, rel))
    index._finish()
    return index


def read_source(root: Path, rel: str) -> str:
    """The text of a source file as the index reads it (SourceError if it is not UTF-8);
    `_split_lines` of it is what `SourceIndex.files[rel]` holds."""
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
