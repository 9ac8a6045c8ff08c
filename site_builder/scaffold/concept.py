"""`python3 build_site.py new-concept QUALNAME --page SLUG [--after SECTION]`: write the part of
a concept section the code can tell, so that documenting a function takes prose and TeX.

What it writes, from the source index, the kinds of the parameters (scaffold/kinds.py) and one
probe run of the function (and of its `_backward` after it):

- a concept section in content/pages/SLUG.md (after SECTION, else at the end of `sections`,
  `sections: []` included): one equation per statement that computes a value (not a line that
  reads a shape or unpacks a cache), its TeX drafted from that statement with mathematical
  names (scaffold/tex.py) or TODO where it cannot be read as math, the reference to that line
  (`computes` only where the line's value is a call of a package function, else `inline`), and
  the tests that call the function cited at the assertion that checks the call; the same for
  the matching `_backward`, whose listing is added;
- symbol rows for the arguments and the locals the equations use, forward and backward, each
  TeX name mapped to its code name, scalars as scalars, with the shapes the probe run gives;
- `probe:` inputs when no probe entry point reaches the function: arrays with the axes their
  callers show, scalars at a value a caller passes, `generator` for a random generator;
- a shapes block, and an example in content/examples/SLUG.py: its imports at the top of the
  file, the inputs a caller passes from the fixtures module reused, a generator seeded in
  the example (`np.random.default_rng(0)`), the forward traced, then the backward on its cache.

What the code cannot tell is the word TODO, which `check` reports line by line; a parameter
whose kind the code does not show is a TODO too (a probe value, an example constant), never
an array guessed for it.

Trade-offs: the section is written as YAML text (not dumped from a dict) so the file keeps its
comments, quoting and order; it is inserted at a section boundary found by indentation, the
form every page uses, and the page is parsed again before it is written (a section that would
not parse is new-concept's bug, said so, and nothing is written). It refuses to overwrite: an
existing section id, a concept already documenting the function, or an example function of the
same name stop it before anything is written. Shapes it types are checked by the next `check`
like any author's.
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from pathlib import Path

from site_builder import COMMAND
from site_builder.gather.content import concepts, load_content
from site_builder.gather.project import ProjectError, load_project
from site_builder.gather.resolve import ResolveError, Resolved, asserts_nothing, checking_assertions, resolve_snippet
from site_builder.gather.source_index import build_index

TODO = "TODO"


class ScaffoldError(Exception):
    """Why nothing was written: one line."""


def _q(text: str) -> str:
    """A YAML single-quoted scalar (TeX-safe: backslashes stay backslashes)."""
    return "'" + str(text).replace("'", "''") + "'"


def _short(qualname: str) -> str:
    name = qualname.split(".")[-1]
    return re.sub(r"_forward$", "", name)



BOOKKEEPING_CALLS = {"len", "dict", "tuple", "list", "int", "float", "isinstance", "range"}
SMALL_SIZES = {0: 2, 1: 4}           # an example's sizes: the first letter 2, the second 4, others 3


def _function_node(index, qualname):
    f = index.function(qualname)
    tree = ast.parse("\n".join(index.files[f.file]))
    return next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and n.lineno == f.start and n.name == f.name)


def _computes(expr) -> bool:
    """The expression computes a value (arithmetic, a comparison, a call), not only reads one
    (`X.shape[-1]`, `c["Xhat"]`, a name, a tuple of names, `dict(Xhat=Xhat)`)."""
    if isinstance(expr, ast.Subscript):
        return _computes(expr.value)                      # X.shape[-1]: an index reads
    if isinstance(expr, ast.Attribute):
        return _computes(expr.value)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.operand, ast.Constant):
        return False
    if isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)):
        return True
    if isinstance(expr, ast.Call) and ast.unparse(expr.func) not in BOOKKEEPING_CALLS:
        return True
    return any(_computes(child) for child in ast.iter_child_nodes(expr))


@dataclass
class Statement:
    """One statement an equation cites: what it binds, the expression, the snippet, the role."""
    line: int
    targets: list
    expr: ast.AST
    snippet: str
    role: str


def _body_statements(fn):
    """The function's statements in code order, those inside loops and branches included."""
    out = []

    def visit(body):
        for node in body:
            out.append(node)
            for key in ("body", "orelse", "finalbody"):
                if isinstance(getattr(node, key, None), list) and not isinstance(node, ast.FunctionDef):
                    visit(getattr(node, key))
    visit(fn.body)
    return out


def _statements(index, qualname) -> list:
    """The statements of `qualname` that compute a value: one equation each."""
    fn = _function_node(index, qualname)
    f = index.function(qualname)
    lines = index.files[f.file]
    package_calls = {c.line for c in f.calls if c.callee in index.functions}
    assigned = index.assignments(qualname)
    out = []

    def role(node, line):
        """`computes` where the value is a package function's, called on names (`A =
        relu_forward(Z)`); `inline` where the line's own arithmetic makes it, a helper's
        call included (`dg = column_sums(dY * Xhat)`)."""
        inner = node.value if isinstance(node, ast.Subscript) else node
        on_names = isinstance(inner, ast.Call) and not any(_computes(a) for a in inner.args)
        return "computes" if on_names and line in package_calls else "inline"

    def snippet_for(line, name):
        if name and len(assigned.get(name, [])) == 1:
            return name
        text = lines[line - 1].strip()
        try:
            resolve_snippet(index, qualname, text)
        except ResolveError:
            return None
        return _q(text)

    for node in _body_statements(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _computes(node.value):
            target = node.targets[0]
            names = [target.id] if isinstance(target, ast.Name) else \
                [e.id for e in getattr(target, "elts", []) if isinstance(e, ast.Name)]
            if not names or "_" in names:
                continue
            snip = snippet_for(node.lineno, names[0] if len(names) == 1 else None)
            if snip:
                out.append(Statement(node.lineno, names, node.value, snip, role(node.value, node.lineno)))
        elif isinstance(node, ast.Return) and node.value is not None:
            parts = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for i, part in enumerate(parts):
                if _computes(part):
                    key = f"return[{i}]" if isinstance(node.value, ast.Tuple) else "return"
                    snip = snippet_for(node.lineno, None)
                    if snip:
                        out.append(Statement(node.lineno, [key], part, snip, role(part, node.lineno)))
                    break
    return out


def _test_refs(index, qualname, limit=2) -> list:
    """The tests that call `qualname` directly, each cited at the assertion that checks the
    call (the call line itself when it asserts), whose first line is a unique snippet."""
    out, cited = [], set()
    for caller, line in index.called_by(qualname):
        f = index.function(caller)
        if f.kind != "test" or caller in cited:          # a test: a test* function of the tests folder
            continue
        cited.add(caller)
        lines = index.files[f.file]
        call = Resolved(f.file, line, line, lines[line - 1], caller)
        starts = [line] if asserts_nothing(index, call) is None else [a.start for a in checking_assertions(index, call)]
        for n in starts:
            text = lines[n - 1].strip()
            try:
                resolve_snippet(index, caller, text)
            except ResolveError:
                continue
            out.append(f"{{role: tests, function: {caller}, snippet: {_q(text)}}}")
            break
        if len(out) == limit:
            break
    return out


def _letters(project) -> list:
    from site_builder.run.shapes import declared_letters
    return declared_letters(project)


def _probe_value(name, kind, letters):
    """What `probe:` declares for one parameter, or TODO where its kind is not known."""
    if kind.kind == "generator":
        return "generator"
    if kind.kind == "scalar":
        if kind.integer and name in letters:
            return name                                   # a size named like an axis: that axis
        if kind.value is not None:
            return kind.value
        return 0.5 if kind.probability else TODO
    if kind.kind == "array" and kind.ndim in (1, 2) and len(letters) >= 2:
        axes = letters[:2][-kind.ndim:] if not kind.integer else letters[:kind.ndim]   # ids run along a sequence
        shape = "(" + ", ".join(axes) + ("," if kind.ndim == 1 else "") + ")"
        return shape + (" ints" if kind.integer else "")
    return TODO


def _run_probe(root, qualname, backward, probe, project, cfg) -> dict:
    """{qualname: {name: symbolic shape}} of one declared probe run of `qualname`, then of
    `backward` on its outputs and cache (a gradient of ones for each output)."""
    import numpy as np
    from site_builder.run.declared_probes import declared_setup
    from site_builder.run.qualnames import resolve_qualname
    from site_builder.run.shapes import infer_from_runs, run_once
    forward = resolve_qualname(qualname)
    back = resolve_qualname(backward) if backward else None

    def pair(**kwargs):
        result = forward(**kwargs)
        if back is not None and isinstance(result, tuple):
            back(*_backward_args(back, result, kwargs, np))
        return result
    try:
        import warnings
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            setup = declared_setup(forward, probe, project, cfg)
            scope = project.package
            runs = [run_once(pair, scope, (), kw) for kw in (setup.default_kwargs, setup.probe_kwargs)]
    except Exception:
        return {}
    found = infer_from_runs(f"declared on {qualname}", setup, *runs)
    return {q: {k: v.symbolic for k, v in infos.items()} for q, infos in found.items()}


def _backward_args(back, result, forward_kwargs, np):
    """A backward's arguments after its forward returned `result` (outputs..., cache): a
    gradient of ones per output, then the cache, then any parameter named like a forward one."""
    import inspect
    outs, cache = result[:-1], result[-1]
    args, given = [], list(outs)
    for name in inspect.signature(back).parameters:
        if given:
            args.append(np.ones_like(given.pop(0)))
        elif cache is not None:
            args.append(cache)
            cache = None
        else:
            args.append(forward_kwargs.get(name))
    return args


def _shapes_for(root: Path, qualname: str, backward, kinds: dict, index) -> tuple[dict, dict | None]:
    """({qualname: {name: symbolic shape}}, the probe inputs to declare or None): the build's
    cached probe runs where they reach the function; else a declared probe of the kinds the
    code shows (TODO where it shows none, and then no run)."""
    from site_builder.build.gather_step import cached_shapes, default_config
    from site_builder.base.cache import BuildCache
    from site_builder.run.example_runner import ExampleStore
    cfg = default_config(root)
    # The build's own cached probe run: the check that follows reuses it.
    table = cached_shapes(root, cfg, ExampleStore(root, BuildCache(root / ".build_cache")))
    if table.get(qualname):
        return {q: {k: v.symbolic for k, v in infos.items()} for q, infos in table.items()}, None
    project = load_project(root)
    letters = _letters(project)
    probe = {name: _probe_value(name, k, letters) for name, k in kinds.items() if not k.has_default}
    if any(v == TODO for v in probe.values()):
        return {}, probe
    return _run_probe(root, qualname, backward, probe, project, cfg), probe


def _symbol_rows(names, shapes, kinds=None, inside=None, scalar_locals=()) -> list:
    """One row per name: its mathematical TeX (scaffold/tex.py) with the code name where the
    TeX does not read back as it, the shape the probe gave, `scalar` for a scalar. A local
    named like an axis letter of the shapes (`T` of `(T, d)`: `T = X.shape[0]`) is not an
    array: its row is a scalar whose meaning asks the author to tie it to that axis, since the
    page then uses one letter for both. `inside` names the function of names that are not the
    concept's own (the backward's: `dX (inside pkg.mod.x_backward)`); `scalar_locals` are
    locals a statement computes that the probe run recorded as no array."""
    from site_builder.render.pages.symbol_rows import tex_name
    from site_builder.gather.shape_syntax import parse_shape
    from site_builder.scaffold.tex import math_name
    kinds = kinds or {}
    axes = {axis for shape in shapes.values() for axis in parse_shape(shape)}
    rows = []
    for name in names:
        if name in ("_", "self", "params", "cfg") or (name in kinds and kinds[name].kind == "generator"):
            continue
        if name.startswith("return"):
            tex, code = ("y" if inside is None else "dx"), name
        else:
            tex = math_name(name)
            code = "" if tex_name(tex) == name else name
        if inside and code:
            code = f"{code} (inside {inside})"
        elif inside:
            code = f"{name} (inside {inside})"
        kind = kinds.get(name)
        if name in shapes:
            shape = shapes[name]
        elif kind is not None and kind.kind == "scalar" or name in axes or name in scalar_locals:
            shape = "scalar"
        else:
            shape = "none"
        meaning = _q(f"{TODO}: {name} is also the axis {name} of the shapes here; say it is that length, "
                     f"or give this row another letter (with code: {name})") if name in axes and name not in shapes else TODO
        if kind is not None and kind.probability and meaning == TODO:
            meaning = _q(f"{TODO}: a probability, between 0 and 1")
        rows.append(f"{{tex: {_q(tex)}, meaning: {meaning}" + (f", code: {_q(code)}" if code else "")
                    + f", shape: {_q(shape)}}}")
    return rows


def _math(index, qualname, statements, names_tex, arrays, helpers, own, tests, ret_tex, eq_prefix) -> list:
    """The YAML lines of one equation per statement."""
    from site_builder.scaffold.tex import draft, tautology
    fn_key = "" if own else f", function: {qualname}"
    drafted = [(st, draft(st.targets, st.expr, {**names_tex, **{t: ret_tex for t in st.targets if t.startswith("return")}},
                          arrays, helpers)) for st in statements]
    said = [(st, tex) for st, tex in drafted if not tautology(tex)]         # `u = u` says nothing
    drafted = said or [(st, None) for st, _ in drafted[-1:]]              # none left: the author writes the last
    y = []
    for i, (st, tex) in enumerate(drafted):
        target = st.targets[0] if not st.targets[0].startswith("return") else "out"
        y += [f"      - eq: {eq_prefix}-{re.sub(r'[^a-z0-9]+', '-', target.lower()).strip('-')}",
              f"        name: {TODO}", f"        tex: {_q(tex) if tex else TODO}", "        refs:",
              f"          - {{role: {st.role}{fn_key}, snippet: {st.snippet}}}"]
        if i == len(drafted) - 1:
            y += [f"          - {r}" for r in tests]
    return y


def _used_names(statements, known) -> list:
    """The names the statements bind and read, in order, that are locals of the function."""
    out = []
    for st in statements:
        for node in ast.walk(st.expr):
            if isinstance(node, ast.Name) and node.id in known and node.id not in out:
                out.append(node.id)
        for t in st.targets:
            if t not in out:
                out.append(t)
    return out


def _helpers(index, package) -> dict:
    """{name: helper_expression} of the package's functions: how a draft writes a call of one."""
    from site_builder.scaffold.tex import helper_expression
    out = {}
    for q, f in index.functions.items():
        if q.startswith(package + ".") and f.kind == "function":
            try:
                out[f.name] = helper_expression(tuple(f.params), f.doc)
            except Exception:
                out[f.name] = None
    return out


def _insert_at(page_text: str, after: str | None) -> int:
    """The offset where a new section goes: after section `after` (before the next section or
    the end of the front matter), or at the end of the front matter."""
    lines = page_text.split("\n")
    end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    if after is None:
        start = next((i for i in range(end) if re.match(r"sections:\s*$", lines[i])), None)
        target = end if start is None else \
            next((i for i in range(start + 1, end) if lines[i].strip() and not lines[i].startswith((" ", "-", "#"))), end)
    else:
        start = next((i for i in range(end) if re.match(rf"\s*(- )?id: *{re.escape(after)}\s*$", lines[i])), None)
        if start is None:
            raise ScaffoldError(f"the page has no section '{after}'")
        while start > 0 and not lines[start].lstrip().startswith("- "):
            start -= 1                     # `- type: text` then `id: ...`: the item starts above
        indent = len(lines[start]) - len(lines[start].lstrip())
        target = next((i for i in range(start + 1, end)
                       if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= indent), end)
        while target > start + 1 and not lines[target - 1].strip():
            target -= 1          # keep the blank line before the next section after ours
    return sum(len(x) + 1 for x in lines[:target])



def _example_value(name, kind, shape, letters) -> tuple[str, str | None]:
    """(the Python of one example input, the fixture import it needs or None)."""
    from site_builder.gather.shape_syntax import parse_shape
    if kind.fixture:
        module, const = kind.fixture.split(":")
        return const, f"from {module} import {const}"
    if kind.kind == "scalar":
        if kind.integer and name in letters:
            return "3", None
        value = kind.value if kind.value is not None else (0.5 if kind.probability else None)
        return (repr(value), None) if value is not None else (f"{TODO}  # {TODO}: a value for {name}", None)
    if kind.kind == "array" and shape:
        axes = [SMALL_SIZES.get(letters.index(a), 3) if a in letters else 3 for a in parse_shape(shape.replace(" ints", ""))]
        n = math.prod(axes)
        if kind.integer:
            values = ", ".join(str(i % 2) for i in range(n))
            text = f"np.array([{values}])"
        else:
            text = f"np.linspace(-1.5, 1.5, {n})" if len(axes) == 1 else \
                f"np.linspace(-1.5, 1.5, {n}).reshape({', '.join(map(str, axes))})"
            if len(axes) == 1 and name not in ("x", "X") and any(k for k in (kind,)):
                text = f"np.linspace(0.5, 1.5, {n})"
        return text, None
    if kind.kind == "array" and kind.ndim and not kind.integer:
        # its callers show the axes but not which of the config's they are: small sizes, each its own
        axes = (2, 3, 4, 5, 6)[:kind.ndim] if kind.ndim <= 5 else (2,) * kind.ndim
        return f"np.linspace(-1.5, 1.5, {math.prod(axes)}).reshape({', '.join(map(str, axes))})", None
    return f"{TODO}  # {TODO}: {name} is {kind.say()}; new-concept could not tell what to pass", None


def _example(qualname, backward, kinds, shapes, fwd_rows, back_rows, module_text, letters) -> tuple[str, str, list]:
    """(example function name, its Python source, the import lines it needs)."""
    fn = qualname.split(".")[-1]
    short = _short(qualname)
    ex = f"{short}_worked"
    if re.search(rf"^def {ex}\(", module_text, re.M):
        raise ScaffoldError(f"content/examples already defines {ex}(); nothing was written "
                            f"(rename or remove it first)")
    imports = [f"from {qualname.rsplit('.', 1)[0]} import {fn}" + (f", {backward.split('.')[-1]}" if backward else "")]
    consts, args, chosen = [], [], []
    for name, kind in kinds.items():
        if kind.has_default:
            continue
        if kind.kind == "generator":
            args.append("np.random.default_rng(0)")          # seeded here: the page's numbers are reproducible
            continue
        value, needs = _example_value(name, kind, shapes.get(name) or _probe_shape(name, kind, letters), letters)
        if needs:
            imports.append(needs)
            args.append(value)
            continue
        const = f"{short.upper()}_{name.upper()}"
        consts.append(f"{const} = {value}")
        args.append(const)
        chosen.append(name)
    first = next((n for n, k in kinds.items() if k.kind == "array"), "x")
    label = {True: f"d{first}", False: "out"}         # a returned value's row: the gradient, or the output

    def row(n, back):
        return f'("{label[back] if n.startswith("return") else n}", "{n}")'
    rows = ", ".join(row(n, False) for n in fwd_rows)
    lines = [f"def {ex}():", f"    forward = trace_locals({fn}, {', '.join(args)})"]
    tables = [f"steps_table(forward, [{rows}])"]
    if backward:
        lines.append(f"    backward = trace_locals({backward.split('.')[-1]}, *backward_inputs(forward.result))")
        tables.append("steps_table(backward, [" + ", ".join(row(n, True) for n in back_rows) + "])")
    said = " and ".join(", ".join(chosen).rsplit(", ", 1)) or "inputs"
    seeded = ", seeded np.random.default_rng(0)," if any(k.kind == "generator" for k in kinds.values()) else ""
    lines.append("    return ExampleResult([" + ",\n                          ".join(tables) + "],")
    lines.append(f"                         \"the hand-picked {said}{seeded} of content/examples/{{}}.py\")")
    src = (f"\n\n# ---------------------------------------------------------------- {short}\n"
           + ("# hand-picked: say why these inputs\n" + "\n".join(consts) + "\n" if consts else "")
           + "\n\n" + "\n".join(lines) + "\n")
    return ex, src, imports


def _probe_shape(name, kind, letters):
    value = _probe_value(name, kind, letters)
    return value if isinstance(value, str) and value.startswith("(") else None


def _with_imports(module_text: str, needed: list) -> str:
    """The module with each import line it lacks added after its last top-level import."""
    tree = ast.parse(module_text) if module_text.strip() else ast.parse("")
    bound = {a.asname or a.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    lines = module_text.split("\n")
    missing = []
    for line in needed:
        names = [x.strip().split(" as ")[-1] for x in line.split(" import ", 1)[1].split(",")] if " import " in line \
            else [line.split()[-1]]
        if line.startswith("import "):
            names = [line.split()[-1]]
        if not all(n in bound for n in names) and line not in missing:
            missing.append(line)
    last = max((n.end_lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))), default=None)
    if last is None:
        doc = tree.body[0].end_lineno if tree.body and isinstance(tree.body[0], ast.Expr) else 0
        return "\n".join(lines[:doc] + missing + lines[doc:])
    return "\n".join(lines[:last] + missing + lines[last:])


def new_concept(root: Path, qualname: str, page: str, after: str | None = None) -> list:
    """Write the section and the example stub; returns the lines to print. Raises ScaffoldError."""
    problems: list = []
    content = load_content(root, problems)
    errors = [p for p in problems if not p.warning and "is still TODO" not in str(p)]   # a draft may wait
    if page not in content.pages:
        raise ScaffoldError(f"no page '{page}' (pages: {', '.join(content.pages)}); start it with "
                            f"{COMMAND} new-page {page} --title TITLE, then run new-concept again; nothing was written")
    try:
        project = load_project(root)
    except ProjectError as e:
        raise ScaffoldError("; ".join(map(str, e.problems)) + "; nothing was written") from None
    package = project.package
    if not project.owns(qualname):        # pages document the package; tests are cited, not documented
        raise ScaffoldError(f"{qualname} is not a function of {package}/ (project.package, {project.where('package')}): "
                            f"new-concept documents the package's functions (e.g. {package}.module.function); "
                            f"nothing was written")
    index = build_index(root)
    try:
        index.function(qualname)              # the function exists (its message says where else to look)
    except KeyError as e:
        raise ScaffoldError(str(e).strip('"') + f"; write the function in {package}/ first, then run new-concept; "
                            "nothing was written") from None
    if after and not any(isinstance(s, dict) and s.get("id") == after for s in content.pages[page].meta.get("sections") or []):
        ids = [str(s.get("id")) for s in content.pages[page].meta.get("sections") or [] if isinstance(s, dict)]
        raise ScaffoldError(f"{content.pages[page].file} has no section '{after}' (its sections: {', '.join(ids)}); "
                            f"nothing was written")
    short_id = _short(qualname).replace('_', '-')
    sid = page if short_id == page else f"{page}-{short_id}"
    for p in content.pages.values():
        for c in concepts(p):
            if c.get("function") == qualname:
                raise ScaffoldError(f"{qualname} is documented already, at {p.file}:{c.line}; nothing was written")
        for s in p.meta.get("sections") or []:
            if isinstance(s, dict) and s.get("id") == sid:
                raise ScaffoldError(f"section id '{sid}' exists already, at {p.file}:{s.line}; nothing was written")
    if errors:
        raise ScaffoldError(f"fix the content first: {errors[0]}")
    target = content.pages[page]
    after_section = None
    if after:
        after_section = next((s for s in target.meta.get("sections") or [] if isinstance(s, dict) and s.get("id") == after), None)
        if after_section is None:
            raise ScaffoldError(f"{target.file} has no section '{after}'")
    from site_builder.build.gather_step import default_config
    from site_builder.scaffold.kinds import parameter_kinds
    from site_builder.scaffold.tex import math_name
    backward = re.sub(r"_forward$", "_backward", qualname) if qualname.endswith("_forward") else None
    if backward not in index.functions:
        backward = None
    kinds = parameter_kinds(index, qualname, default_config(root))
    table, probe = _shapes_for(root, qualname, backward, kinds, index)
    shapes, back_shapes = table.get(qualname, {}), table.get(backward, {}) if backward else {}
    letters = _letters(project)
    helpers = _helpers(index, package)
    fwd = _statements(index, qualname)
    back = _statements(index, backward) if backward else []
    fwd_names = _used_names(fwd, set(index.local_names(qualname)))
    fwd_names = [n for n in index.local_names(qualname) if n in kinds and kinds[n].kind != "generator"
                 and n not in fwd_names] + fwd_names
    back_names = [n for n in _used_names(back, set(index.local_names(backward))) if n not in fwd_names] if backward else []
    arrays = {n for n, sh in {**shapes, **back_shapes}.items() if sh.startswith("(")}
    names_tex = {n: math_name(n) for n in set(index.local_names(qualname)) | (set(index.local_names(backward)) if backward else set())}
    first_input = next((n for n in kinds if kinds[n].kind == "array"), "x")
    out_tex, grad_tex = "y", "d" + math_name(first_input)
    eq = _short(qualname).replace("_", "-")

    y = [f"  - id: {sid}", f"    title: {TODO}"]
    if after_section is not None and after_section.get("group"):
        y.append(f"    group: {_q(after_section['group'])}")
    y += [f"    function: {qualname}", f"    what: {TODO}", f"    why: {TODO}"]
    if probe:
        y.append("    probe: {" + ", ".join(f"{k}: {_q(v) if isinstance(v, str) else v}" for k, v in probe.items()) + "}")
    y.append("    math:")
    y += _math(index, qualname, fwd, names_tex, arrays, helpers, True, _test_refs(index, qualname), out_tex, eq)
    if backward:
        y += _math(index, backward, back, names_tex, arrays, helpers, False, _test_refs(index, backward), grad_tex,
                   eq + "-back")
    y.append("    symbols:")
    computed = {t for st in fwd for t in st.targets}
    y += [f"      - {r}" for r in _symbol_rows(fwd_names, shapes, kinds,
                                               scalar_locals=computed - set(shapes) if shapes else ())]
    if backward:
        y += [f"      - {r}" for r in _symbol_rows(back_names, back_shapes, None, inside=backward)]
    ex_file = root / "content" / "examples" / f"{page}.py"
    module_text = ex_file.read_text(encoding="utf-8") if ex_file.exists() else ""
    fwd_rows = [t for st in fwd for t in st.targets if not t.startswith("return")] + \
        [t for st in fwd for t in st.targets if t.startswith("return")][:1]
    back_rows = [t for st in back for t in st.targets]
    ex, ex_src, ex_imports = _example(qualname, backward, kinds, shapes, fwd_rows, back_rows, module_text, letters)
    ex_src = ex_src.replace("{}.py", f"{page}.py")
    y += ["    examples:", f"      - title: {TODO}", f"        run: {page}:{ex}", f"        hand_picked: {TODO}"]
    shown = [n for n in fwd_rows if n in shapes]
    if shown and (probe is None or TODO not in probe.values()):
        y += ["    shapes:", f"      - title: {TODO}", "        names: [" + ", ".join(_q(n) for n in shown) + "]"]
    if backward:
        y += ["    listings:", f"      - function: {backward}"]        # a caption is optional
    section = "\n".join(y) + "\n"

    page_path = root / target.file
    text = page_path.read_text(encoding="utf-8")
    text = re.sub(r"^sections:[ \t]*\[\][ \t]*$", "sections:", text, count=1, flags=re.M)   # `sections: []`: the first
    at = _insert_at(text, after)
    before = text[:at]
    new_text = before + ("" if before.endswith("\n\n") or before.endswith("sections:\n") else "\n") + section + text[at:]
    _refuse_invalid_yaml(new_text, target.file, section)
    if not module_text:
        module_text = f'"""Examples for the {target.meta.get("title", page)} page."""\n'
    needed = ["import numpy as np", *[i for i in ex_imports if i.startswith("from tests") is False],
              "from site_builder.run.examples import ExampleResult, steps_table"
              + (", backward_inputs" if backward else ""),
              "from site_builder.run.trace import trace_locals"]
    needed += [i for i in ex_imports if i not in needed]
    module_text = _with_imports(module_text, needed)
    page_path.write_text(new_text, encoding="utf-8")
    ex_file.write_text(module_text.rstrip("\n") + "\n" + ex_src, encoding="utf-8")
    line = before.count("\n") + (1 if not (before.endswith("\n\n") or before.endswith("sections:\n")) else 0) + 1
    todo = section.count(TODO) + ex_src.count(TODO)
    unknown = [f"{n} ({', '.join(k.why) or 'no use or caller shows it'})" for n, k in kinds.items()
               if k.kind == "unknown" and not k.has_default]
    out = [f"wrote {target.file}:{line}: section '{sid}' ({len(y)} lines) documenting {qualname}"
           + (f" and {backward}" if backward else ""),
           f"wrote {ex_file.relative_to(root).as_posix()}: example {page}:{ex} on its hand-picked inputs"]
    if unknown:
        out.append(f"could not tell the kind of {'; '.join(unknown)}: left as TODO in the probe and the example")
    out += [f"fill in the {todo} TODOs (prose and TeX; delete the equations and symbol rows the page does not need), "
            f"then run: {COMMAND} check --page {page}",
            f"then reread {target.file}'s summary and the index's reading order (content/site.yaml nav): "
            f"a new section may make them stale"]
    return out


def _refuse_invalid_yaml(new_text: str, file: str, section: str):
    """The page as new-concept would write it must parse: if not, that is new-concept's bug."""
    import yaml
    parts = new_text.split("---", 2)
    try:
        yaml.safe_load(parts[1])
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark else file
        raise ScaffoldError(f"new-concept would have written YAML that does not parse at {where} "
                            f"({getattr(e, 'problem', e)}): that is new-concept's own bug, not your page's; "
                            "nothing was written") from None
