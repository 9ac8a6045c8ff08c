"""`python3 build_site.py new-concept QUALNAME --page SLUG [--after SECTION]`: write the part of
a concept section the code can tell, so that documenting a function takes prose and TeX.

What it writes, all from the source index and one run of the function:

- a concept section in content/pages/SLUG.md (after SECTION, else at the end of `sections`),
  with its references: one equation citing every line of the function that assigns a local
  (by the local's name) and its return line, and the tests that call it (found through the
  test index, each cited at the assertion that checks its call); the same for the matching
  `_backward`, whose listing is added;
- symbol rows for the function's arguments and locals (code names are the defaults, written
  out only where the TeX name differs), with the shapes the probe runs give;
- `probe:` inputs when no probe entry point reaches the function, so its shapes are recorded;
- a shapes block, and an example stub in content/examples/SLUG.py built on the documented
  helpers (`trace_locals`, `steps_table`), with hand-picked inputs marked as such.

Everything an author must still write is the word TODO, which `check` reports line by line.

Trade-offs: the section is written as YAML text (not dumped from a dict) so the file keeps its
comments, quoting and order; it is inserted at a section boundary found by indentation, the
form every page uses. It refuses to overwrite: an existing section id, a concept already
documenting the function, or an example function of the same name stop it before anything is
written. Shapes it types are checked by the next `check` like any author's.
"""
from __future__ import annotations

import re
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


def _statement_refs(index, qualname, own: bool) -> list:
    """YAML flow mappings citing each line of `qualname` that assigns a local, then its return."""
    f = index.function(qualname)
    lines = index.files[f.file]
    fn_key = "" if own else f", function: {qualname}"
    calls = {c.line for c in f.calls if c.callee in index.functions}
    out, seen = [], set()
    for name, places in index.assignments(qualname).items():
        if len(places) != 1 or name == "_":
            continue
        start, _ = places[0]
        if start in seen or re.fullmatch(r"[\w, ()]+=\s*\w+", lines[start - 1].strip()):
            continue                         # `x, t = cache` unpacks; it computes nothing
        seen.add(start)
        role = "computes" if start in calls else "inline"
        out.append((start, f"{{role: {role}{fn_key}, snippet: {name}}}"))
    for n in range(f.start, f.end + 1):
        text = lines[n - 1].strip()
        if text.startswith("return") and n not in seen:
            try:
                resolve_snippet(index, qualname, text)
            except ResolveError:
                continue
            role = "computes" if n in calls else "inline"
            out.append((n, f"{{role: {role}{fn_key}, snippet: {_q(text)}}}"))
    return [text for _, text in sorted(out)]


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


def _shapes_for(root: Path, qualname: str, params: list, index) -> tuple[dict, dict | None]:
    """({name: symbolic shape}, the probe inputs to declare or None): from the probe entry
    points if one reaches the function, else from a declared probe of two-axis inputs in the
    documented config's first letters ((T, d)) when every input is an array; else none (the
    example stub's run will check the shapes)."""
    from site_builder.build.gather_step import cached_shapes, default_config
    from site_builder.base.cache import BuildCache
    from site_builder.gather.project import load_project
    from site_builder.run.declared_probes import infer_declared
    from site_builder.run.example_runner import ExampleStore
    from site_builder.run.shapes import example_input_shape
    cfg = default_config(root)
    # The build's own cached probe run: the check that follows reuses it.
    table = cached_shapes(root, cfg, ExampleStore(root, BuildCache(root / ".build_cache")))
    if table.get(qualname):
        return {k: v.symbolic for k, v in table[qualname].items()}, None
    import inspect
    from site_builder.run.example_shapes import array_params
    from site_builder.run.qualnames import resolve_qualname
    f = index.function(qualname)
    project = load_project(root)
    shape = example_input_shape(project)
    if shape is None or array_params(index.files[f.file][f.first_line - 1:f.end])[1]:
        return {}, None         # a parameter dict, a config, an rng: its example's run gives the shapes
    sig = inspect.signature(resolve_qualname(qualname))
    probe = {p: shape for p in params
             if sig.parameters[p].default is inspect.Parameter.empty}
    found, errors = infer_declared({qualname: probe}, project, cfg)
    if errors:
        return {}, probe
    return {k: v.symbolic for k, v in found.get(qualname, {}).items()}, probe


def _symbol_rows(names, shapes) -> list:
    """One row per argument and local. A local named like an axis letter of the shapes (`T`
    of `(T, d)`: `T = X.shape[0]`) is not an array: its row is a scalar whose meaning asks
    the author to tie it to that axis, since the page then uses one letter for both."""
    from site_builder.render.pages.symbol_rows import tex_name
    from site_builder.gather.shape_syntax import parse_shape
    axes = {axis for shape in shapes.values() for axis in parse_shape(shape)}
    rows = []
    for name in names:
        if name in ("_", "self", "params", "p", "cfg") or name.startswith("return"):
            continue
        shape = shapes.get(name, "scalar" if name in axes else "none")
        meaning = _q(f"{TODO}: {name} is also the axis {name} of the shapes here; say it is that length, "
                     f"or give this row another letter (with code: {name})") if name in axes and name not in shapes else TODO
        code = "" if tex_name(name) == name else f", code: {name}"
        rows.append(f"{{tex: {_q(name)}, meaning: {meaning}{code}, shape: {_q(shape)}}}")
    if "return[0]" in shapes or "return" in shapes:
        key = "return[0]" if "return[0]" in shapes else "return"
        rows.append(f"{{tex: 'y', meaning: {TODO}, code: {_q(key)}, shape: {_q(shapes[key])}}}")
    return rows


def _example(qualname, params, shapes, names, module_text) -> tuple[str, str]:
    """(example function name, Python source to append) for content/examples/<slug>.py."""
    import numpy as np  # noqa: F401  (the stub's inputs are written as NumPy calls)
    from site_builder.gather.shape_syntax import parse_shape
    fn = qualname.split(".")[-1]
    ex = f"{_short(qualname)}_worked"
    if re.search(rf"^def {ex}\(", module_text, re.M):
        raise ScaffoldError(f"content/examples already defines {ex}(); nothing was written "
                            f"(rename or remove it first)")
    consts, args = [], []
    for p in params:
        const = f"{_short(qualname).upper()}_{p.upper()}"
        axes = len(parse_shape(shapes[p])) if p in shapes else 2           # an input as the probe's, two axes
        value = {0: "0.5", 1: "np.linspace(-2.0, 2.0, 5)"}.get(axes, "np.linspace(-2.0, 2.0, 5).reshape(1, 5)")
        consts.append(f"{const} = {value}")
        args.append(const)
    rows = [f'("{n}", "{n}")' for n in names if n not in ("_",) and n in shapes]
    ret = "return[0]" if "return[0]" in shapes else "return"
    rows.append(f'("Out", "{ret}")')
    module = qualname.rsplit(".", 1)[0]
    src = (f"\n\n# ---------------------------------------------------------------- {_short(qualname)}\n\n"
           f"from {module} import {fn}  # noqa: E402\n\n"
           f"# hand-picked: say why these inputs\n" + "\n".join(consts) + "\n\n\n"
           f"def {ex}():\n"
           f"    t = trace_locals({fn}, {', '.join(args)})\n"
           f"    return ExampleResult([steps_table(t, [{', '.join(rows)}])],\n"
           f"                         \"the hand-picked {', '.join(params)} of content/examples/{{}}.py\")\n")
    return ex, src


def _insert_at(page_text: str, after: str | None) -> int:
    """The offset where a new section goes: after section `after` (before the next section or
    the end of the front matter), or at the end of the front matter."""
    lines = page_text.split("\n")
    end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    if after is None:
        target = end
    else:
        start = next((i for i in range(end) if re.match(rf"\s*- id: *{re.escape(after)}\s*$", lines[i])), None)
        if start is None:
            raise ScaffoldError(f"the page has no section '{after}'")
        indent = len(lines[start]) - len(lines[start].lstrip())
        target = next((i for i in range(start + 1, end)
                       if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= indent), end)
        while target > start + 1 and not lines[target - 1].strip():
            target -= 1          # keep the blank line before the next section after ours
    return sum(len(x) + 1 for x in lines[:target])


def new_concept(root: Path, qualname: str, page: str, after: str | None = None) -> list:
    """Write the section and the example stub; returns the lines to print. Raises ScaffoldError."""
    problems: list = []
    content = load_content(root, problems)
    errors = [p for p in problems if not p.warning]
    if page not in content.pages:
        raise ScaffoldError(f"no page '{page}' (pages: {', '.join(content.pages)})")
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
        f = index.function(qualname)
    except KeyError as e:
        raise ScaffoldError(str(e).strip('"') + f"; write the function in {package}/ first, then run new-concept; "
                            "nothing was written") from None
    if after and not any(isinstance(s, dict) and s.get("id") == after for s in content.pages[page].meta.get("sections") or []):
        ids = [str(s.get("id")) for s in content.pages[page].meta.get("sections") or [] if isinstance(s, dict)]
        raise ScaffoldError(f"{content.pages[page].file} has no section '{after}' (its sections: {', '.join(ids)}); "
                            f"nothing was written")
    sid = f"{page}-{_short(qualname).replace('_', '-')}"
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
    params = [p for p in f.params if p != "self"]
    shapes, probe = _shapes_for(root, qualname, params, index)
    names = index.local_names(qualname)
    backward = re.sub(r"_forward$", "_backward", qualname) if qualname.endswith("_forward") else None
    if backward not in index.functions:
        backward = None

    y = [f"  - id: {sid}", f"    title: {TODO}", f"    name: {TODO}"]
    if after_section is not None and after_section.get("group"):
        y.append(f"    group: {_q(after_section['group'])}")
    y += [f"    function: {qualname}", f"    what: {TODO}", f"    why: {TODO}"]
    if probe:
        y.append("    probe: {" + ", ".join(f"{k}: {_q(v)}" for k, v in probe.items()) + "}")
    y.append("    math:")
    for fn, eq, own in [(qualname, _short(qualname).replace("_", "-"), True)] + \
                       ([(backward, _short(qualname).replace("_", "-") + "-back", False)] if backward else []):
        y += [f"      - eq: {eq}", f"        name: {TODO}", f"        tex: {TODO}", "        refs:"]
        y += [f"          - {r}" for r in _statement_refs(index, fn, own) + _test_refs(index, fn)]
    y.append("    symbols:")
    y += [f"      - {r}" for r in _symbol_rows(names, shapes)]
    ex_file = root / "content" / "examples" / f"{page}.py"
    module_text = ex_file.read_text(encoding="utf-8") if ex_file.exists() else ""
    ex, ex_src = _example(qualname, params, shapes, names, module_text)
    ex_src = ex_src.replace("{}.py", f"{page}.py")
    y += ["    examples:", f"      - title: {TODO}", f"        run: {page}:{ex}", f"        hand_picked: {TODO}"]
    shown = [n for n in names if n in shapes and n != "_"] + [k for k in ("return[0]", "return") if k in shapes][:1]
    if shown:
        y += ["    shapes:", f"      - title: {TODO}", "        names: [" + ", ".join(_q(n) for n in shown) + "]"]
    if backward:
        y += ["    listings:", f"      - function: {backward}", f"        caption: {TODO}"]
    section = "\n".join(y) + "\n"

    page_path = root / target.file
    text = page_path.read_text(encoding="utf-8")
    at = _insert_at(text, after)
    before = text[:at]
    new_text = before + ("" if before.endswith("\n\n") else "\n") + section + text[at:]
    if not module_text:
        module_text = (f'"""Examples for the {target.meta.get("title", page)} page."""\nimport numpy as np\n\n'
                       "from site_builder.run.examples import ExampleResult, steps_table\n"
                       "from site_builder.run.trace import trace_locals\n")
    header = ""
    for needed, line in (("import numpy as np", "import numpy as np"),
                         ("steps_table", "from site_builder.run.examples import ExampleResult, steps_table"),
                         ("trace_locals", "from site_builder.run.trace import trace_locals")):
        if needed not in module_text:
            header += line + "  # noqa: E402\n"
    page_path.write_text(new_text, encoding="utf-8")
    ex_file.write_text(module_text.rstrip("\n") + "\n" + ("\n" + header if header else "") + ex_src, encoding="utf-8")
    line = before.count("\n") + (1 if not before.endswith("\n\n") else 0) + 1
    todo = section.count(TODO) + ex_src.count(TODO)
    return [f"wrote {target.file}:{line}: section '{sid}' ({len(y)} lines) documenting {qualname}"
            + (f" and {backward}" if backward else ""),
            f"wrote {ex_file.relative_to(root).as_posix()}: example {page}:{ex} on its hand-picked inputs",
            f"fill in the {todo} TODOs (prose and TeX), then run: {COMMAND} check"]
