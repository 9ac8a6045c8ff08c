"""What the source index reads of a function's caches, gradient keys and statements.

A mixin of SourceIndex (gather/source_index.py), which holds the state it reads: `_fns` (the
FunctionState of every indexed function, its syntax tree and call sites), `_callers`, and the
memos `_memo_callers`, `_memo_fill`, `_in_progress` and `_cuts`.

Trade-offs, and why:
- **Caches and gradient keys are read by convention, not by types.** A cache variable is one
  named `c`, `cache`, `c_*`, `cache_*` or `*_cache`, or the second target of
  `out, cache = something_forward(...)`; a gradient write is an assignment to
  `grads[...]`. Key expressions are rendered as patterns: `grads[p + "w2"]`, with
  `p = f"layer{i}."` assigned by the caller, becomes `layer{i}.w2`. A parameter is resolved
  through the specific call site when we walk down from a statement (`grads_filled`), and
  through *all* callers when they agree (`grads_written`); when they disagree or cannot be
  read, the expression stays visible as `{p}w2` instead of being guessed.
- **Memoised, with cycle guards.** Patterns walk callers and callees, so recursion is cut
  (`_in_progress`, the call stack); a result computed past a cut is not memoised, since
  another walk may see more.
"""
from __future__ import annotations

import ast
from typing import Iterator, Optional

from site_builder.gather.source_records import (CacheAssign, CacheBuild, CacheRead, CallSite, FlowStep, FunctionState,
                                                GradWrite)
from site_builder.gather.source_syntax import (CACHE_NAME, DEFS, body_without_docstring, dotted_parts, is_static,
                                               parameter_names, segment, simple_statements, stmt_targets, stmt_value,
                                               walk_scope, walk_stmt)


class CachesAndFlow:
    """SourceIndex's questions about caches (`cache_reads`, `cache_builds`, `cache_assignments`),
    gradient keys (`grads_written`, `grads_filled`) and the flow of a body (`flow_steps`)."""

    # -- caches --------------------------------------------------------------------------
    def cache_reads(self, qualname: str) -> list:
        """Every `c["key"]` read (variables named c, cache, c_*, ...), in code order."""
        self.function(qualname)
        fn = self._fns[qualname]
        parents = {}
        for node in walk_scope(fn.node):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        out = []
        for node in walk_scope(fn.node):
            if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Name) and CACHE_NAME.match(node.value.id)
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

    def _returned_dicts(self, fn: FunctionState) -> Iterator[ast.AST]:
        for node in walk_scope(fn.node, into_nested=False):
            if isinstance(node, ast.Return) and node.value is not None:
                vals = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for v in vals:
                    if isinstance(v, ast.Call) and dotted_parts(v.func) == ["dict"] and not v.args:
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
            key_vars = tuple((k, v.id if isinstance(v, ast.Name) else segment(lines, v)) for k, v in pairs)
            return CacheBuild(tuple(k for k, _ in pairs), d.lineno, d.end_lineno, key_vars)
        return None

    def cache_assignments(self, qualname: str) -> list:
        """Cache variables assigned from a call, e.g. `h, c_norm = norm_forward(...)`,
        and the key of the returned cache dict each is stored under."""
        self.function(qualname)
        fn = self._fns[qualname]
        build = self.cache_builds(qualname)
        stored = {}
        if build:
            for k, v in build.key_vars:
                stored.setdefault(v, k)
        appended = {}      # item var -> list var, from `lst.append(item)`
        for node in walk_scope(fn.node, into_nested=False):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append"
                    and isinstance(node.func.value, ast.Name) and len(node.args) == 1
                    and isinstance(node.args[0], ast.Name)):
                appended.setdefault(node.args[0].id, node.func.value.id)
        out = []
        for stmt, _ in simple_statements(fn.node.body):
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
                    names = [e for e in elts if isinstance(e, ast.Name) and CACHE_NAME.match(e.id)]
                    if (len(elts) == 2 and isinstance(elts[1], ast.Name) and elts[1].id != "_"
                            and producer.endswith("_forward") and elts[1] not in names):
                        names.append(elts[1])
                for n in names:
                    if isinstance(target, ast.Name) and not CACHE_NAME.match(n.id):
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
        for t in stmt_targets(stmt) if not isinstance(stmt, (ast.For, ast.AsyncFor)) else []:
            base = t
            while isinstance(base, ast.Subscript):
                if isinstance(base.value, ast.Name) and base.value.id in gnames:
                    out.append(base.slice)
                    break
                base = base.value
        return out

    def _statement_is_grads_only(self, stmt, gnames) -> bool:
        targets = stmt_targets(stmt)
        return bool(targets) and len(self._grad_keys(stmt, gnames)) == len(targets)

    def _key(self, q: str, expr, line: int, env: dict) -> str:
        p = self._pattern(q, expr, line, env, 0)
        return p if p is not None else "{" + self._text(q, expr) + "}"

    def _text(self, q: str, expr) -> str:
        """The source text of an expression of function q, on one line."""
        return " ".join(segment(self._fns[q].module.lines, expr).split())

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
        for stmt, _ in simple_statements(fn.node.body):
            if stmt.lineno >= line:
                break
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name):
                before = stmt
        if before is not None:
            return self._pattern(q, before.value, before.lineno, env, depth + 1)
        if name in parameter_names(fn.node):
            return self._from_callers(q, name)
        return None

    def _bind(self, caller_q: str, site: CallSite, env: dict, gnames: frozenset) -> tuple:
        """Parameter patterns and grads-dict names of the callee, as bound at one call site."""
        callee = self._fns[site.callee]
        a = callee.node.args
        positional = [x.arg for x in a.posonlyargs + a.args]
        if site.bound and positional and not is_static(callee.node):
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
        for name in parameter_names(callee.node):
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
        for stmt, _ in simple_statements(fn.node.body):
            for k in self._grad_keys(stmt, {"grads"}):
                out.append(GradWrite(self._key(qualname, k, stmt.lineno, {}), stmt.lineno))
        return out

    def _statement_at(self, fn: FunctionState, line: int):
        for stmt, within in simple_statements(fn.node.body):
            if stmt.lineno <= line <= stmt.end_lineno:
                return stmt
        return None

    def _sites_in(self, fn: FunctionState, stmt) -> list:
        nodes = [n for n in walk_stmt(stmt) if isinstance(n, ast.Call)]
        nodes.sort(key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset))
        return [fn.sites[id(n)] for n in nodes if id(n) in fn.sites and fn.sites[id(n)].callee]

    def _fill_statement(self, q: str, stmt, env: dict, gnames: frozenset, stack: tuple, out: dict):
        if isinstance(stmt, DEFS + (ast.ClassDef,)):
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
        for stmt, _ in simple_statements(self._fns[q].node.body):
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
        docstring, `pass`, and trivial assignments (`p = f"layer{i}."`). A `grads[k] += v` whose
        value is a bare name produced by one earlier step is folded into that step (its keys
        join the step's `grads`, its line the step's `grad_lines`)."""
        self.function(qualname)
        fn = self._fns[qualname]
        lines = fn.module.lines
        gnames = {"grads"}
        steps: list = []
        last_assign: dict = {}
        for stmt, within in simple_statements(body_without_docstring(fn.node)):
            if isinstance(stmt, ast.Pass) or self._trivial(stmt):
                for t in stmt_targets(stmt):
                    if isinstance(t, ast.Name):
                        last_assign[t.id] = None
                continue
            sites = [] if isinstance(stmt, DEFS + (ast.ClassDef,)) else self._sites_in(fn, stmt)
            value = stmt_value(stmt)
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
            steps.append(dict(line=stmt.lineno, end_line=stmt.end_lineno, text=segment(lines, stmt),
                              callee=callee, kind=kind, grads=list(self.grads_filled(qualname, stmt.lineno)),
                              calls=tuple(dict.fromkeys(s.callee for s in sites)), grad_lines=[], within=within))
            for t in stmt_targets(stmt):
                if isinstance(t, ast.Name):
                    last_assign[t.id] = len(steps) - 1
        return [FlowStep(s["line"], s["end_line"], s["text"], s["callee"], s["kind"], tuple(s["grads"]),
                         s["calls"], tuple(s["grad_lines"]), s["within"]) for s in steps]

    @staticmethod
    def _trivial(stmt) -> bool:
        """`p = f"layer{i}."`, `n, m = cfg.width, cfg.depth`: names, constants, f-strings, attributes."""
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
            return False
        if not all(isinstance(t, ast.Name) for t in stmt_targets(stmt)):
            return False
        allowed = (ast.Constant, ast.JoinedStr, ast.FormattedValue, ast.Name, ast.Attribute,
                   ast.Tuple, ast.List, ast.expr_context)
        return all(isinstance(n, allowed) for n in ast.walk(stmt.value))
