"""The builder's layout is its architecture (issue 25): stage subpackages, each importing only
the stages before it, no import circle anywhere, and every subpackage saying what it owns.

Imports are read from the syntax tree, those inside functions included (the builder imports
lazily), so a circle that only closes at run time is found too.
"""
import ast
from pathlib import Path

import site_builder

ROOT = Path(__file__).resolve().parent.parent
BUILDER = ROOT / "site_builder"
# The order data flows in: a module may import its own stage and the stages before it.
STAGES = ("base", "gather", "run", "render", "publish", "build", "scaffold", "serve")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict:
    return {module_name(p): p for p in sorted(BUILDER.rglob("*.py")) if "__pycache__" not in p.parts}


def imported(path: Path, known: set) -> set:
    """The builder modules a module imports (`from site_builder.run import shapes` names
    site_builder.run.shapes)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                found.add(full if full in known else node.module)
    return {m for m in found if m in known and m != "site_builder"}


def stage(module: str) -> str:
    return module.split(".")[1]


def graph() -> dict:
    mods = modules()
    return {m: imported(p, set(mods)) - {m} for m, p in mods.items()}


def test_each_module_imports_only_its_stage_and_the_stages_before_it():
    wrong = [f"{m} ({stage(m)}) imports {d} ({stage(d)})" for m, deps in graph().items() if m != "site_builder"
             for d in sorted(deps) if STAGES.index(stage(d)) > STAGES.index(stage(m))]
    assert not wrong, "imports against the data flow:\n" + "\n".join(wrong)


def test_there_is_no_import_circle():
    deps, state, circles = graph(), {}, []

    def visit(m, path):
        state[m] = "open"
        for d in sorted(deps[m]):
            if state.get(d) == "open":
                circles.append(" -> ".join(path[path.index(d):] + [d]))
            elif d not in state:
                visit(d, path + [d])
        state[m] = "done"

    for m in sorted(deps):
        if m not in state:
            visit(m, [m])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_every_stage_has_a_docstring_and_the_package_lists_them_all():
    packages = sorted(p.parent.name for p in BUILDER.glob("*/__init__.py"))
    assert set(packages) == set(STAGES), packages
    for name in packages:
        doc = ast.get_docstring(ast.parse((BUILDER / name / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc.split()) > 15, f"site_builder/{name}/__init__.py says nothing of what it owns"
    listed = [line.split()[0] for line in site_builder.__doc__.splitlines()[1:] if line.startswith("  ")]
    assert listed == list(STAGES), listed


def test_the_checks_see_a_circle_and_an_import_against_the_flow(tmp_path, monkeypatch):
    """The two checks above would pass on a tree they cannot read: show them one they must refuse."""
    fake = tmp_path / "site_builder"
    for rel, text in {"__init__.py": "", "base/__init__.py": "", "run/__init__.py": "",
                      "base/a.py": "def f():\n    from site_builder.run import b\n",
                      "run/b.py": "from site_builder.base import a\n"}.items():
        (fake / rel).parent.mkdir(parents=True, exist_ok=True)
        (fake / rel).write_text(text)
    import sys
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "BUILDER", fake)
    deps = graph()
    assert deps["site_builder.base.a"] == {"site_builder.run.b"} and deps["site_builder.run.b"] == {"site_builder.base.a"}
    for check in (test_each_module_imports_only_its_stage_and_the_stages_before_it, test_there_is_no_import_circle):
        try:
            check()
        except AssertionError:
            continue
        raise AssertionError(f"{check.__name__} passed on a tree with a circle against the flow")
