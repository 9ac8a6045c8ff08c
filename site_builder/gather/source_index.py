"""The gather stage's source index: the documented package and its tests, read once, with the
standard library's `ast`, to answer every question a page asks about the code without running
it. Which lines a function spans, what it calls and what calls it, which tests reach it and
through which chain, which cache keys a forward function builds and which backward line reads
them, which `grads[...]` entries a statement fills. Pages never type any of these (the one rule
of the site); they ask here.

Which folders it reads is the project's to say (the `project:` block of content/site.yaml:
`package` and `tests`, read by gather/project.py); `build_index(root)` asks it.

The index is four modules, by job: reading files and walking syntax trees (source_syntax), the
records it answers with (source_records), building it, module by module, then function by
function (source_analysis), and the questions about caches, gradient keys and flow
(source_keys). This one holds the index itself and its questions about names, calls and tests.

Trade-offs, and why:
- **"Tested by" follows calls, references and fixtures.** A test that passes `relu_forward`
  to a helper, names it in `@pytest.mark.parametrize`, or requests a pytest fixture that
  builds parameters, reaches that code as surely as one that calls it. Paths are shortest
  call chains (breadth-first, neighbours in code order), so they are stable between builds.
- **One index, immutable after `build_index`.** Answers that need a graph walk (tested_by,
  parameter patterns) are computed lazily and memoised; everything else is computed once.

A file that does not parse raises `SourceError` with `file:line: message`: a site built from
code that cannot be imported would document nothing true.
"""
from __future__ import annotations

import ast
import re
import difflib
import importlib.util
from collections import deque
from pathlib import Path
from typing import Optional

from site_builder.gather.project import Project, load_project
from site_builder.gather.source_analysis import IndexBuilding
from site_builder.gather.source_keys import CachesAndFlow
from site_builder.gather.source_records import (Assertion, CallerRef, CodeWords, FunctionInfo, NotIndexed, SourceError,
                                                TestLink)
from site_builder.gather.source_syntax import (DEFS, body_without_docstring, code_words_of, dotted_parts, flat_targets,
                                               module_name, read_source, simple_statements, source_files, stmt_targets,
                                               walk_scope)


class SourceIndex(IndexBuilding, CachesAndFlow):
    """Everything the gather stage knows about the source. Build it with `build_index`.
    `package` is the documented package (what public_functions and class_attributes read by
    default), `tests` the module name of the tests folder."""

    def __init__(self, root: Path, package: str, tests: str):
        self.root = Path(root)
        self.package, self.tests = package, tests
        self.files: dict = {}          # "pkg/layers.py" -> list of lines (no newline)
        self.functions: dict = {}      # qualname -> FunctionInfo, file order then line order
        self.classes: dict = {}        # qualname -> ClassInfo
        self.modules: dict = {}        # module name -> ModuleInfo
        self._mods: dict = {}          # module name -> ModuleState
        self._fns: dict = {}           # qualname -> FunctionState
        self._class_nodes: dict = {}   # class qualname -> (ast.ClassDef, ModuleState)
        self._callers: dict = {}       # callee qualname -> list of (caller qualname, CallSite)
        self._tested: Optional[dict] = None
        self._memo_callers: dict = {}
        self._memo_fill: dict = {}
        self._memo_assignments: dict = {}
        self._memo_words: dict = {}
        self._memo_class_attributes: dict = {}
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
        # module's prefix, which made any name "close" (pkg.ops.nope -> pkg.ops.row_max).
        prefix = ".".join(parts[:known]) + "." if known else ""
        names = [q[len(prefix):] for q in self.functions if q.startswith(prefix)]
        # A rename since the last commit first: spelling alone finds the wrong neighbour
        # (row_sums renamed sum_rows -> "did you mean row_max?"; gather/renames.py).
        renamed = self._renamed_since_commit(prefix[:-1], qualname[len(prefix):]) if known else None
        close = [prefix + renamed] if renamed else \
            [prefix + c for c in difflib.get_close_matches(qualname[len(prefix):], names, n=1, cutoff=0.6)]
        same_name = [q for q in self.functions if q.rsplit(".", 1)[-1] == parts[-1] and q not in close]
        sugg = (close + same_name)[:3] if same_name else close
        msg = f"no function {qualname}"
        return msg + f"; did you mean {' or '.join(sugg)}?" if sugg else msg

    def _renamed_since_commit(self, module: str, path: str) -> Optional[str]:
        """What `module`'s def `path` is called now, if git's HEAD has it and it was renamed."""
        from site_builder.gather.renames import renamed_to
        info = self.modules.get(module)
        if info is None or info.file not in self.files:
            return None
        return renamed_to(self.root, info.file, "\n".join(self.files[info.file]) + "\n", path)

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
        for stmt, _ in simple_statements(body_without_docstring(fn.node)):
            for t in stmt_targets(stmt):
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append((stmt.lineno, stmt.end_lineno))
        for node in walk_scope(fn.node, into_nested=False):      # for loops, with ... as x
            if isinstance(node, (ast.For, ast.AsyncFor)):
                for t in flat_targets([node.target]):
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
        for n in walk_scope(fn.node):
            checks = isinstance(n, ast.Assert)
            if isinstance(n, ast.Call) and dotted_parts(n.func):
                name = dotted_parts(n.func)
                checks = name[-1].startswith("assert") or name[-2:] == ["pytest", "approx"]
            elif isinstance(n, (ast.With, ast.AsyncWith)):
                checks = any(isinstance(i.context_expr, ast.Call) and (dotted_parts(i.context_expr.func) or [""])[-2:]
                             in (["pytest", "raises"], ["pytest", "warns"]) for i in n.items)
            if checks:
                reads = frozenset(x.id for x in walk_scope(n) if isinstance(x, ast.Name))
                out.append(Assertion(n.lineno, n.end_lineno, reads))
        return sorted(set(out), key=lambda a: (a.start, a.end, sorted(a.reads)))

    def class_attributes(self, package: Optional[str] = None) -> frozenset:
        """Every field, method and `self.x =` attribute of a class of `package` (default: the
        documented one): what `cfg.width` or `optimizer.lr` may name wherever the instance is.
        Memoised: every symbol row with a `code:` asks."""
        package = package or self.package
        if package not in self._memo_class_attributes:
            self._memo_class_attributes[package] = self._class_attributes(package)
        return self._memo_class_attributes[package]

    def _class_attributes(self, package: str) -> frozenset:
        out = set()
        for node, mod in self._class_nodes.values():
            if mod.name.split(".")[0] != package:
                continue
            for n in node.body:
                out |= {t.id for t in stmt_targets(n) if isinstance(t, ast.Name)}
                if isinstance(n, DEFS):
                    out.add(n.name)
            out |= {n.attr for n in walk_scope(node) if isinstance(n, ast.Attribute)
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
        """Every test (a `test*` function of the tests folder) that reaches `qualname`: direct ones
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

    def test_modules_reaching_the_package(self) -> set:
        """The modules of the tests folder that hold a test, or a function on a test's path
        (a fixture, a helper), that reaches the documented package: what "Tested by" lists."""
        if self._tested is None:
            self._tested = self._compute_tested()
        documented = {q for q, f in self.functions.items()
                      if f.module == self.package or f.module.startswith(self.package + ".")}
        return {self.functions[q].module for target, links in self._tested.items() if target in documented
                for link in links for q in link.path if self.functions[q].kind == "test" or
                self.functions[q].module.startswith(self.tests + ".")}

    def files_quoting(self, folder: str, text: str) -> list:
        """The files under `folder` (a path ending in "/") with a string literal that starts
        with `text`."""
        pattern = re.compile(rf"""["']{re.escape(text)}""")
        return [f for f, lines in self.files.items() if f.startswith(folder) and pattern.search("\n".join(lines))]

    def methods(self, class_qualname: str) -> list:
        """The qualnames of the class's methods, in index order."""
        return [q for q, f in self.functions.items() if f.class_name == class_qualname]

    def public_functions(self, package: Optional[str] = None) -> list:
        """Public functions, and public methods of public classes, of `package` (default: the
        documented one), in index order."""
        package = package or self.package
        return [q for q, f in self.functions.items()
                if (f.module == package or f.module.startswith(package + ".")) and f.is_public
                and f.kind != "test"]



def unimportable_test_imports(index: SourceIndex) -> list:
    """SourceErrors for the test modules' top-level imports that no installed module answers:
    such a file's tests cannot run, so no page may list them as its tests. Read only where the
    tests could run at all (pytest is installed): a site-only install has none of the test
    tools, and saying so for every file would tell nothing. Imports inside `try:` or `if` are
    left alone (a guarded optional import)."""
    if importlib.util.find_spec("pytest") is None:
        return []
    found = []
    listed = index.test_modules_reaching_the_package()
    for state in index._mods.values():
        if state.name not in listed:
            continue
        for node in state.tree.body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                     else [])
            for name in names:
                if not _importable(name.split(".")[0]):
                    found.append(SourceError(
                        state.file, node.lineno, f"imports {name}, which is not installed, so the tests in "
                        f"this file cannot run and no page lists them",
                        "install it (the test extra: python3 -m pip install -e \".[test]\"), or fix the import"))
    return found


def _importable(top: str) -> bool:
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False

def build_index(root: Path, packages=None, tests: Optional[str] = None) -> SourceIndex:
    """Parse every `*.py` under each folder of `packages` (sorted) and index it; the first is
    the documented package, and `tests` names the folder whose `test*` functions are tests.
    Both default to the project block's (`package` and `tests`, gather/project.py)."""
    root = Path(root)
    if packages is None:
        project = load_project(root)
        packages, tests = project.code_folders, tests or project.tests
    index = SourceIndex(root, packages[0], (tests or Project.tests).replace("/", "."))
    for package in packages:
        if not (root / package).is_dir():
            raise SourceError(package, None, f"no folder {package}/ under {root} to index",
                              "create it, or name the folders to read in the project block of content/site.yaml "
                              "(`package:` and `tests:`)")
        for rel in source_files(root, package):
            index._add_module(module_name(rel), rel, read_source(root, rel))
    index._finish()
    return index
