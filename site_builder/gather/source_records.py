"""The records the source index answers with, and the state it keeps while it analyses.

The answers (FunctionInfo, Call, TestLink, CacheRead, ...) are frozen dataclasses and named
tuples: a page keeps them, a forked child sends them back, and nothing may change them after
`build_index`. The analysis state (ModuleState, FunctionState, CallSite) holds syntax trees and
is the index's alone: no answer hands one out. `SourceError` and `NotIndexed` are the two ways
a question about the code fails, each a one-line message.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import NamedTuple, Optional

class SourceError(Exception):
    """A source file that cannot be indexed (syntax error, undecodable bytes, missing package).
    `line` is 1-based, or 0 when no line applies; `fix` says what to do."""

    def __init__(self, file: str, line: Optional[int], message: str, fix: str = "fix the syntax error"):
        self.file, self.line, self.message, self.fix = file, int(line or 0), message, fix
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
    """`h, c_norm = norm_forward(...)`: var "c_norm", producer (qualname, or the dotted
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
    qualname: str                 # "pkg.layers.dense_forward", "pkg.optim.SGD.step"
    module: str                   # "pkg.layers"
    name: str                     # "ffn_forward"
    file: str                     # "pkg/layers.py" (repo-relative, posix)
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
    name: str                     # "pkg.layers"; a package's __init__ is "pkg"
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
# The index's own state while it analyses (not part of its answers)
# --------------------------------------------------------------------------------------

@dataclass
class ModuleState:
    name: str
    file: str
    is_package: bool
    tree: ast.Module
    lines: list
    bindings: dict              # local name -> fully qualified name
    stars: list                 # modules imported with *


@dataclass
class FunctionState:
    qualname: str
    module: ModuleState
    node: ast.AST
    class_q: Optional[str]
    local: dict = None          # name -> ("alias", fq) | ("instance", class fq) | ("shadow", None)
    sites: dict = None          # id(ast.Call) -> CallSite


@dataclass
class CallSite:
    node: ast.Call
    callee: Optional[str]       # indexed qualname or None
    text: str                   # dotted text as written (or unparsed)
    bound: bool                 # called on an instance: the callee's first parameter is filled
