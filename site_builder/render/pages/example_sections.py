"""A concept's examples as the page shows them: each run (or its result taken from the build's
runs), its blocks with their source links, its playground's variants, and the heading over
them, which says whether they read a training run.

The examples run before the symbol table is made: the shapes each run recorded check the
symbols' declared shapes (symbol_rows.py reads them from `_recordings`).

A mixin of PageBuilder (builder.py): it reads the builder's root, cache, index, renderer,
problems and the build's example results, and records the examples in the site model.
prepare_blocks is also what `serve` does to a result computed on the reader's input.
"""
from site_builder.base.problems import Problem
from site_builder.render.html import source_url
from site_builder.run.example_runner import DEFAULT_TIMEOUT, ExampleStore, Request, run_example
from site_builder.run.nonfinite import nonfinite_shown


def example_def(root, ref) -> str:
    """`content/examples/MODULE.py:LINE`, the def line of the example function `ref` names
    (read with ast; the module alone if it cannot be read)."""
    import ast
    module, _, name = str(ref).partition(":")
    if module == "declared":
        return "a declarative example"
    rel = f"content/examples/{module}.py"
    try:
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return rel
    name = name.partition("(")[0]
    line = next((n.lineno for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)
    return f"{rel}:{line}" if line else rel


def examples_heading(examples, root) -> str:
    """The heading over a concept's examples, from what they read: none, some or all of them
    read a training run (site_builder/run/training_run.py records which ones each example read),
    in the words of the project's `example_headings`, the runs named as its hook names them."""
    from site_builder.gather.project import load_project
    from site_builder.run.training_run import run_names
    headings = load_project(root).example_headings
    runs = sorted({r for ex in examples for r in ex["runs"]})
    if not runs:
        return headings["untrained"]
    names = run_names(root)
    trained = " and ".join(names.get(r, f"the {r} run") for r in runs)
    return headings["trained" if all(ex["runs"] for ex in examples) else "mixed"].replace("{runs}", trained)


def prepare_blocks(blocks, index, renderer):
    """An example's blocks as the template draws them: source links, and a stepper's listing.
    Also what `serve` does to a result computed on the reader's input (site_builder/serve/play.py)."""
    for block in blocks:
        if block.get("file"):
            block["href"] = source_url(block["file"])
        if block.get("kind") == "stepper":       # the stepper shows the traced function's lines
            try:
                f = index.function(block["function"])
                block["listing"] = renderer.listing(f.file, f.start, f.end)
            except KeyError:
                block["listing"] = []
    return blocks


class ExampleSections:
    """PageBuilder's examples of a concept."""

    def examples(self, page, c):
        from site_builder.gather.playground import (call_ref, check_declaration, combinations, combo_key, controls,
                                                    parameters_missing)
        from site_builder.run.text_rules import text_rules
        out = []
        self._recordings = []            # (ref, ExampleResult): their recorded shapes check the symbols
        self._failed_examples = []       # refs that gave no result: what their shapes would have checked follows from it
        rules = text_rules(self.root) if any(e.get("playable") for e in c.get("examples") or []) else None
        for n, e in enumerate(c.get("examples") or [], 1):
            if e.get("playable"):        # what its texts name (a config field, a vocabulary): the content's pass could not tell
                check_declaration(e, page.file, self.problems, rules)
            choices = e.get("choices") or {}
            declared = [("choices", k) for k in choices] + [("playable", k) for k in e.get("playable") or {}]
            missing = parameters_missing(self.root, e["run"], [k for _, k in declared])
            for key, name in dict.fromkeys((key, name) for key, name in declared if name in missing):
                self.problems.append(Problem(page.file, e.line_of(key), f"'{name}' in {key} is not a parameter of {e['run']}",
                                             f"name one of its parameters, or add '{name}' to the function"))
            if missing:
                continue
            variants, nonfinite = {}, []
            for combo in combinations(choices):
                ref = call_ref(e["run"], combo)
                result, cached = self.example_results.get(ref) or run_example(
                    self.root, Request(ref, page.file, e.line_of("run"), float(e.get("timeout") or DEFAULT_TIMEOUT)),
                    self.problems, ExampleStore(self.root, self.cache))
                self.site.examples_cached += cached
                self.site.examples_run += not cached
                module = e["run"].partition(":")[0]
                self.site.references.append(dict(page=page.slug, concept=c["id"], equation=None, role="example",
                                                  function=ref, file=page.file if module == "declared" else f"content/examples/{module}.py",
                                                  start=None, end=None, code=None))
                if result is None:
                    self._failed_examples.append(ref)
                if result is not None:
                    shown = nonfinite_shown(result.blocks)
                    if shown:
                        nonfinite.append((ref, shown))
                    self._recordings.append((ref, result))
                    for block in result.blocks:
                        if block.get("function"):       # the package's function the example traced
                            self.cite_function("example", block["function"], c["id"], example=ref)
                    variants[combo_key(choices, combo) if choices else ""] = dict(
                        source=result.source, blocks=self.example_blocks(result.blocks), runs=result.runs)
            if len(variants) < len(combinations(choices)):
                continue                     # a failed combination is a problem already
            self.check_nonfinite(page, e, nonfinite)
            first = next(iter(variants.values()))
            ex_id = f"{c['id']}--ex-{n}"
            play = controls(e, page.slug, ex_id, variants, rules) if choices or e.get("playable") else None
            if play is not None and e.get("replay"):
                play["replay"] = self.replay(page, e, ex_id, rules)
            out.append(dict(title=e["title"], hand_picked=self.md(e, "hand_picked"), caption=self.md(e, "caption"),
                            source=first["source"], blocks=first["blocks"], id=ex_id,
                            runs=sorted({r for v in variants.values() for r in v["runs"]}), play=play))
        return out

    def check_nonfinite(self, page, e, nonfinite):
        """An example that shows inf or NaN must say so (`shows_nonfinite: true`); one that says
        so must show one, in one of its choices at least."""
        declared = e.get("shows_nonfinite") is True
        if nonfinite and not declared:
            ref, shown = nonfinite[0]
            if self.read_log is not None:
                self.read_log.file(f"content/examples/{str(ref).partition(':')[0]}.py")   # example_def reads it
            self.problems.append(Problem(page.file, e.line_of("run"), f"example {ref} ({example_def(self.root, ref)}) "
                                         f"shows a non-finite value: {shown}",
                                         "fix its inputs, or add 'shows_nonfinite: true' to the example if it "
                                         "shows them on purpose (and say why in its caption)"))
        elif declared and not nonfinite:
            self.problems.append(Problem(page.file, e.line_of("shows_nonfinite"), f"example {e['run']} declares "
                                         "shows_nonfinite, but shows no inf or NaN", "remove 'shows_nonfinite: true'",
                                         strict=True))

    def replay(self, page, e, ex_id, rules):
        """The tape an example's free input replays in the reader's browser (site_builder/run/tape.py),
        the declaration its input is checked against there, and the body its result fills
        (the example's own template, with slots the replayer fills): None if its recording failed."""
        from site_builder.gather.playground import replay_declaration
        from site_builder.run.tape import RECORD_TIMEOUT
        ref = str(e["replay"])
        result, cached = self.example_results.get(ref) or run_example(
            self.root, Request(ref, page.file, e.line_of("replay"), RECORD_TIMEOUT),
            self.problems, ExampleStore(self.root, self.cache))
        if result is None:
            return None
        tape = result.data.get("tape")
        if not isinstance(tape, dict) or "cases" not in tape:
            self.problems.append(Problem(page.file, e.line_of("replay"), f"{ref} returned no tape in its data",
                                         "return ExampleResult([], source, data=dict(tape=bundle(...))) "
                                         "(site_builder.run.tape)"))
            return None
        # a tape recorded once per combination of menus may fill a body of its own per case
        bodies = {key: self.example_blocks(blocks) for key, blocks in (result.data.get("bodies") or {}).items()}
        return dict(tape=tape, file=f"play/{ex_id}/tape.js", source=result.source, worst=result.data.get("worst"),
                    blocks=self.example_blocks(result.blocks), bodies=bodies,
                    spec=replay_declaration(e, rules))

    def example_blocks(self, blocks):
        return prepare_blocks(blocks, self.index, self.r)
