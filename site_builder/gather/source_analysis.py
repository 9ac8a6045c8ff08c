"""How the source index is built: each module's definitions and imports, then each function's
calls, references and kind, resolved to indexed qualnames.

A mixin of SourceIndex (gather/source_index.py): `_add_module` reads one file into the state
(`_mods`, `_fns`, `_class_nodes`, `files`, `modules`, `classes`), and `_finish` analyses every
function once every module is in (a call may name a function of a module read later), then
records who calls whom (`_callers`). `self.tests` is the module name of the tests folder: only
a `test*` function of a `test_*.py` (or `*_test.py`) file there is a test, and only the
functions there are given the pytest fixtures their parameters name.

Trade-offs, and why:
- **Static analysis, not tracing.** Running the code would find calls exactly, but only the
  ones a given input happens to take, and only after the package is importable. Reading the
  AST is fast (the whole repository in well under a second), deterministic, and covers
  every branch. The price is precision: Python is dynamic, so the resolver understands the
  forms that documented code commonly uses and says "not resolved" for the rest, rather than
  guess: module-level and function-level imports (absolute and relative, with `as`),
  re-exports through a package's `__init__`, same-module names, `self.method` / `cls.method`
  (through indexed base classes), `x = SomeClass(...); x.method()`, parameters annotated with
  an indexed class, and calls to a class (which run its `__init__`). An unresolved call keeps
  the dotted text as written (`np.zeros`), so nothing is silently dropped.
- **A call inside a nested function or a lambda belongs to the enclosing indexed function.**
  Tests hand closures to a numerical gradient; the test is what reaches the code through
  them. Nested functions are therefore not indexed themselves.
- **Scopes are flow-insensitive**: the last binding of a local name in source order wins.
"""
from __future__ import annotations

import ast
import dataclasses
import warnings
from typing import Optional

from site_builder.gather.source_records import (Call, CallSite, ClassInfo, FunctionInfo, FunctionState, ModuleInfo,
                                                ModuleState, SourceError)
from site_builder.gather.source_syntax import (DEFS, decorator_names, dotted_parts, import_bindings, is_fixture,
                                               is_static, module_defs, parameter_names, preorder, segment,
                                               split_lines, walk_scope)


class IndexBuilding:
    """SourceIndex's building: `_add_module` for each file, then `_finish` once."""

    def _add_module(self, name: str, rel: str, text: str):
        lines = split_lines(text)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text, filename=rel)
        except SyntaxError as e:
            raise SourceError(rel, e.lineno, e.msg) from None
        except ValueError as e:       # e.g. null bytes
            raise SourceError(rel, None, str(e)) from None
        is_package = rel.endswith("/__init__.py")
        mod = ModuleState(name, rel, is_package, tree, lines, {}, [])
        # imports anywhere outside functions and classes
        for node in walk_scope(tree, into_nested=False):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for local, target in import_bindings(node, name, is_package):
                    if local == "*":
                        mod.stars.append(target)
                    else:
                        mod.bindings[local] = target
        self.files[rel] = lines
        self._mods[name] = mod
        self.modules[name] = ModuleInfo(name, rel, ast.get_docstring(tree))
        self._collect_defs(mod, tree.body, prefix=name, class_q=None, class_public=True)

    def _collect_defs(self, mod: ModuleState, body, prefix: str, class_q: Optional[str], class_public: bool):
        for node in module_defs(body):
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
                self._fns[q] = FunctionState(q, mod, node, class_q)

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
            if any(n.split(".")[-1] == "dataclass" for n in decorator_names(node)):
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

    def _lookup(self, fn: Optional[FunctionState], module: str, parts: list) -> tuple:
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
                parts = dotted_parts(b)
                if parts:
                    fq, _ = self._lookup(None, mod.name, parts)
                    if fq in self.classes:
                        bases.append(fq)
            info = self.classes[q]
            self.classes[q] = ClassInfo(info.qualname, info.module, info.name, info.file, info.start, info.end,
                                        info.doc, info.is_public, tuple(bases))

    def _annotation_class(self, fn: FunctionState, ann) -> Optional[str]:
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return None
        parts = dotted_parts(ann) if ann is not None else None
        if not parts:
            return None
        fq, _ = self._lookup(None, fn.module.name, parts)
        return fq if fq in self.classes else None

    def _build_scope(self, fn: FunctionState, body_nodes):
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
        if fn.class_q and first and not is_static(node):
            fn.local[first[0].arg] = ("instance", fn.class_q)
        events, skip = [], set()
        for n in body_nodes:              # every node of every statement of the body, in order
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                for local, target in import_bindings(n, mod.name, mod.is_package):
                    if local != "*":
                        events.append((n.lineno, n.col_offset, local, ("alias", target)))
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                skip.add(id(n.targets[0]))
                events.append((n.lineno, n.col_offset, n.targets[0].id, n.value))
            elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and id(n) not in skip:
                events.append((n.lineno, n.col_offset, n.id, ("shadow", None)))
            elif isinstance(n, DEFS + (ast.ClassDef,)):
                events.append((n.lineno, n.col_offset, n.name, ("shadow", None)))
            elif isinstance(n, ast.arg):
                events.append((n.lineno, n.col_offset, n.arg, ("shadow", None)))
        events.sort(key=lambda e: (e[0], e[1]))
        for _, _, name, what in events:
            if isinstance(what, ast.AST):
                binding = ("shadow", None)
                if isinstance(what, ast.Call):
                    parts = dotted_parts(what.func)
                    if parts:
                        fq, _ = self._lookup(fn, mod.name, parts)
                        if fq in self.classes:
                            binding = ("instance", fq)
                else:
                    parts = dotted_parts(what)
                    if parts:
                        fq, _ = self._lookup(fn, mod.name, parts)
                        if fq in self._fns or fq in self.classes or fq in self._mods:
                            binding = ("alias", fq)
                what = binding
            fn.local[name] = what

    def _analyse(self, fn: FunctionState) -> FunctionInfo:
        node, mod = fn.node, fn.module
        body_nodes = preorder(node.body)
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
            parts = dotted_parts(n.func)
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
            site = CallSite(n, callee, text, bound)
            fn.sites[id(n)] = site
            calls.append((n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset,
                          Call(callee or text, n.lineno, segment(lines, n))))
        calls.sort(key=lambda c: c[:4])
        # references: indexed functions named without being called (also in decorators/defaults)
        refs = []
        extra = preorder(node.decorator_list + node.args.defaults + [x for x in node.args.kw_defaults if x])
        for n in extra:
            if isinstance(n, ast.Call):
                chain_inner.add(id(n.func))
            elif isinstance(n, ast.Attribute):
                chain_inner.add(id(n.value))
        in_body = {id(n) for n in body_nodes}
        for n in body_nodes + extra:
            if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load) and id(n) not in chain_inner:
                parts = dotted_parts(n)
                if parts:
                    scope_fn = fn if id(n) in in_body else None
                    fq, _ = self._lookup(scope_fn, mod.name, parts)
                    if fq in self._fns and fq != fn.qualname:
                        refs.append((n.lineno, n.col_offset, Call(fq, n.lineno, segment(lines, n))))
            elif isinstance(n, ast.Call) and id(n) not in in_body:
                parts = dotted_parts(n.func)
                if parts:
                    fq, _ = self._lookup(None, mod.name, parts)
                    if fq in self._fns:
                        refs.append((n.lineno, n.col_offset, Call(fq, n.lineno, segment(lines, n))))
        refs.sort(key=lambda r: r[:2])
        name = node.name
        class_public = True
        if fn.class_q:
            class_public = self.classes[fn.class_q].is_public
        is_public = not name.startswith("_") and class_public and self._module_public(mod.name)
        kind = "method" if fn.class_q else "function"
        base = mod.file.rsplit("/", 1)[-1]
        if (mod.name.split(".")[0] == self.tests and (base.startswith("test_") or base.endswith("_test.py"))
                and name.startswith("test") and (fn.class_q is None or fn.class_q.rsplit(".", 1)[-1].startswith("Test"))):
            kind = "test"
        return FunctionInfo(
            qualname=fn.qualname, module=mod.name, name=name, file=mod.file, start=node.lineno,
            end=node.end_lineno, doc=ast.get_docstring(node), is_public=is_public, kind=kind,
            calls=tuple(c[4] for c in calls), class_name=fn.class_q, params=tuple(parameter_names(node)),
            first_line=min([d.lineno for d in node.decorator_list] + [node.lineno]),
            refs=tuple(r[2] for r in refs))

    def _fixture_edges(self):
        fixtures = {}      # module -> {name: qualname}
        for q, fn in self._fns.items():
            if fn.class_q is None and is_fixture(fn.node):
                fixtures.setdefault(fn.module.name, {})[fn.node.name] = q
        if not fixtures:
            return
        for q, info in list(self.functions.items()):
            if info.module.split(".")[0] != self.tests:
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
