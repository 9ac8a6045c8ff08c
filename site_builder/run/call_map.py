"""The landing page's map: what one real call of the project's `call_map_root` calls.

The map is read from a run, not from the syntax tree: the syntax tree sees every call a
function could make (a loss that calls a smoothing helper only when asked to smooth), a run
sees the calls it made. The call is `call_map_root` (a setting of the project block) with the
arguments the hook `call_map_inputs` builds, and the words it gives say which call that is (a
training step, say, set up exactly as the training loop sets it up before that step). It runs
under `site_builder.run.trace.call_tree`, which records who called whom and from which line.
Without the setting or the hook there is no map.

The run is cached like the shape probes (`example_runner.recorded`): keyed on what it read
(the package's sources, this module's import closure and the hooks', the data, the packages it
loaded), so an incremental build draws the map a clean build draws.
"""
from dataclasses import dataclass
from pathlib import Path

from site_builder.base.problems import Problem
from site_builder.gather.project import hook, load_project
from site_builder.run.qualnames import resolve_qualname
from site_builder.run.trace import CallSite, call_tree, raising_location


@dataclass
class StepCalls:
    """The calls of the traced call (`root`, the CallSite of `call_map_root`), or why there are
    none (`problem`: the line that raised, for the build to report). `source`: which call it was."""
    root: CallSite | None
    problem: Problem | None = None
    source: str = ""


def traced_step(root: Path) -> StepCalls | None:
    """call_map_root on call_map_inputs(), its calls recorded; None without the setting or the
    hook. A run that raised is a problem at the line that raised (else at the root's file)."""
    project = load_project(root)
    inputs = hook(root, project, "call_map_inputs")
    if not project.call_map_root or inputs is None:
        return None
    entry, source = project.call_map_root, ""
    try:
        args, source = inputs()
        _, calls = call_tree(resolve_qualname(entry), *args, package=project.package)
    except Exception as e:               # a broken package: report it, draw no map
        file, line, _ = raising_location(e, prefer=project.package + "/") or \
            (entry.rpartition(".")[0].replace(".", "/") + ".py", 1, "")
        cause = e.__cause__ or e
        said = f" ({source})" if source else f" (on call_map_inputs() of {project.hooks})"
        message = f"the landing page's map runs {entry}{said}, which raised {type(cause).__name__}: {cause}"
        return StepCalls(None, Problem(file, line, message, "fix the code that raised; the build runs it "
                                                            "to draw the map"), source)
    return StepCalls(calls, source=source)


def step_calls(root, store) -> StepCalls | None:
    """traced_step, run in a child and cached on what it read (the package's files on the
    functions it entered: an edit elsewhere leaves it cached); here if the child failed. None
    when the project asks for no map (no child runs)."""
    from site_builder.run.example_runner import recorded
    project = load_project(root)
    if not project.call_map_root or hook(root, project, "call_map_inputs") is None:
        return None
    modules = [Path(root) / "site_builder" / "run" / "call_map.py", Path(root) / project.hooks]
    found = recorded(root, store, f"the calls of {project.call_map_root}", lambda: _traced_and_kept(root), modules,
                     by_functions=True)
    return found if found is not None else traced_step(root)


def _traced_and_kept(root):
    """traced_step as `recorded` takes it: (value, keep); a run that raised is not kept."""
    calls = traced_step(root)
    return calls, calls.problem is None
