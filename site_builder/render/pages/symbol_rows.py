"""A concept's symbol table: each row's TeX, meaning, the code it names and its declared shape,
checked by a run of the code wherever one can check it.

A row's `code` is as written, or the name its TeX uses when that is a local of the concept's
function; a code that spells what the code does not is a `check` problem. A declared shape
is checked against the probe's shapes where a probe reaches the function, else against the
concept's examples' runs (each recorded the first call of every function it reached), else
against the functions it calls or that call it; a declared shape nothing checks is a `check`
problem that says how to give it a run.

A mixin of PageBuilder (builder.py): it reads the builder's index, shapes, root, project,
renderer and problems, the recordings example_sections.py leaves in `_recordings`, and calls
the shape_blocks.py part's failed_probe, declared_probe_failed, probe_problem, callees and
probe_fix.
"""
import ast
import functools
import re

from site_builder.base.problems import Problem
from site_builder.render.symbols import code_links, split_top_level


def tex_tokens(tex):
    """TeX as tokens (commands, single characters), so 'X' does not match inside 'X_n'... by position."""
    return re.findall(r"\\[A-Za-z]+|\\.|[^\s]", tex)


def contains(haystack, needle):
    n = len(needle)
    return n > 0 and any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def tex_name(tex):
    """The name a TeX symbol would have in code: `Z` -> Z, `X_n` / `X_{n}` -> Xn,
    `\\mathrm{Ff}` -> Ff, `\\hat{x}` -> xhat, `\\mu` -> mu."""
    t = re.sub(r"\\(hat|bar|tilde)\s*\{([^{}]*)\}", lambda m: m.group(2) + m.group(1), tex)
    t = re.sub(r"\\(mathrm|operatorname|mathbf|mathit|text|boldsymbol)\s*\{([^{}]*)\}", r"\2", t)
    t = re.sub(r"\\([A-Za-z]+)", r"\1", t)
    return re.sub(r"[\s{}_^']", "", t)


# What a symbol row's ✓ says when pointed at (templates/partials/concept.html)
PROBE_CHECKED = "checked against a probe run of the code"


EXAMPLE_CHECKED = "checked against this section's example run"


def shape_fix(message: str) -> str:
    """What to do about a declared shape the run contradicts. A run that gave a scalar for a
    declared array more often had a number for an input (an example's constant, a probe value)
    than a wrong row: a newcomer who passed `2.0` was told to correct the shape."""
    if " gives ()" in message:
        return ("if the declared shape is right, an input of the run is a number where an array is meant "
                "(the example's input or the probe: value): pass an array; else correct the declared shape")
    return "correct the declared shape"


@functools.lru_cache(maxsize=64)
def example_file_words(text: str) -> dict:
    """{function name: CodeWords} of an example file's top-level functions, parsed once per
    text: every symbol row of a concept asks for its examples' words (measured: parsing them
    again per row was half of regathering the 19 pages, 14 of 30 s of CPU)."""
    from site_builder.gather.source_syntax import code_words_of
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    # reversed: of two top-level functions with one name, the first is the one asked for
    return {n.name: code_words_of(n) for n in reversed(tree.body) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


class SymbolRows:
    """PageBuilder's symbol table of a concept."""

    def symbol_code(self, page, c, s, parts, locals_):
        """A symbol row's `code`: as written, or the name its TeX uses when that is a local of
        the concept's function (`Z` -> Z, `X_n` -> Xn, `\\hat{x}` -> xhat)."""
        if "code" in s:
            self.stale_code(page, c, s, str(s["code"]))
            return str(s["code"])
        names = [tex_name(p) for p in parts]
        if names and all(n in locals_ for n in names):
            return ", ".join(names)
        missing = next(n for n in names if n not in locals_) if names else str(s["tex"])
        self.problems.append(Problem(page.file, s.line, f"symbol '{s['tex']}' has no 'code:', and '{missing}' "
                                     f"is not a local of {c['function']}",
                                     f"add code: NAME (its locals: {', '.join(locals_) or 'none'})"))
        return ""

    def stale_code(self, page, c, s, code):
        """A `check` problem for a symbol row whose `code` spells what the code does not."""
        from site_builder.base.problems import did_you_mean
        from site_builder.render.symbols import code_misses
        scopes = self.code_scopes(c, s)
        misses = code_misses(code, [w for _, w in scopes], self.index.class_attributes())
        if not misses:
            return
        part, word = misses[0]
        own = scopes[0][1]
        shown = sorted(set().union(*(w.names | w.attrs | w.keys for _, w in scopes)))
        hint = did_you_mean(word.strip("'."), shown, containing=True)
        calls = ", ".join(own.calls[:10]) or "nothing"
        self.problems.append(Problem(
            page.file, s.line_of("code"),
            f"symbol '{s['tex']}': code '{part}' spells {word}, which neither {c['function']} nor the code it "
            f"calls, its callers or the concept's references spell; {hint or f'it calls {calls}'}",
            "write the name the code has (a local, a parameter, a call or a key), 'NAME (inside FUNCTION)' "
            "for another function's, or words when the code does not name it", strict=True))

    def code_scopes(self, c, s):
        """[(where, CodeWords)] of the code a symbol row may name: the concept's function first,
        its class's methods, the package's functions it reaches and its direct callers, the package's
        functions the concept's equations and listings cite (its tests aside: a test's own
        names are not the code's), a function the row names with `(inside FUNCTION)` and what
        it reaches, and the concept's examples."""
        fn = c["function"]
        try:
            info = self.index.function(fn)
        except KeyError:
            return []                       # the missing function is reported where it is cited
        named = [fn] + (list(self.index.methods(info.class_name)) if info.class_name else [])
        named += sorted(self.callees(fn))
        named += [x.caller for x in self.index.called_by(fn) if self.project.owns(x.caller)]
        for item in c.get("math") or []:
            named += [str(r["function"]) for r in item.get("refs") or [] if r.get("function") and r.get("role") != "tests"]
        named += [str(x["function"]) for x in c.get("listings") or [] if x.get("function")]
        for text in (str(s.get("code", "")), str(s.get("shape_of", ""))):
            for inside in re.findall(r"\(inside\s+([\w.]+)\)", text):
                for q in self.index.functions:
                    if q == inside or q.endswith("." + inside):
                        named += [q] + sorted(self.callees(q))
        scopes = [(q, self.index.code_words(q)) for q in dict.fromkeys(named) if q in self.index.functions]
        return scopes + [(e["run"], w) for e in c.get("examples") or [] if (w := self.example_words(e["run"]))]

    def example_words(self, ref):
        """CodeWords of the example function `ref` names ('block:ffn_forward_worked'), read
        with `ast` (not run); None when it cannot be read (the example's own problem says why)."""
        module, _, name = str(ref).partition(":")
        rel = f"content/examples/{module}.py"
        if self.read_log is not None:
            self.read_log.file(rel)
        try:
            text = (self.root / rel).read_text(encoding="utf-8")
        except (OSError, ValueError):
            return None
        return example_file_words(text).get(name.partition("(")[0])

    def example_checks(self, c, rows):
        """The concept's symbol rows that are not one recorded name: checked against the probe's
        shapes where a probe reaches the function, the rest against the concept's examples' own
        runs (each example recorded the first call of every function of the package it reached).
        Returns ({line: message}, {line checked: how}, {line: why a row could not be checked},
        reached: an example ran the function)."""
        from site_builder.gather.project import load_project
        from site_builder.run.example_shapes import check_rows, declared_shapes, from_probe
        fn = c["function"]
        wrong, checked, unknown, reached = {}, {}, {}, False
        if self.shapes.get(fn) and not self.failed_probe(fn):
            # the probe reaches it: its shapes, at sizes where every letter differs, decide
            if getattr(self, "_probe_recording", None) is None:
                self._probe_recording = from_probe(self.shapes)         # once per build: the table is large
            calls, sizes = self._probe_recording
            wrong, ok, unknown = check_rows(rows, calls.get(fn, {}), calls, {}, f"the probe run of {fn}", sizes)
            checked = {line: PROBE_CHECKED for line in ok}
            rows = [r for r in rows if r.line in unknown or not declared_shapes(r.declared)]   # the rest: the examples'
        for ref, result in getattr(self, "_recordings", []):
            recorded = getattr(result, "shapes", None) or {}
            names = recorded.get(fn)
            reached |= names is not None
            w, ok, why = check_rows(rows, names or {}, recorded, result.data, f"the example {ref}'s run of {fn}",
                                    project=load_project(self.root))
            for line, message in w.items():
                wrong.setdefault(line, message)
            for line in ok:
                checked.setdefault(line, EXAMPLE_CHECKED)
            for line, message in why.items():
                unknown.setdefault(line, message)
        # `NAME (inside FUNC)` of a FUNC no example calls (init_params' rows about mha_forward's
        # arrays): the probe's recording of FUNC, where a probe reaches it, decides
        inside = [r for r in rows if " (inside " in r.code and r.line in unknown and r.line not in checked
                  and r.line not in wrong and declared_shapes(r.declared)]
        if inside and self.shapes:
            if getattr(self, "_probe_recording", None) is None:
                self._probe_recording = from_probe(self.shapes)
            calls, sizes = self._probe_recording
            w, ok, _ = check_rows(inside, calls.get(fn, {}), calls, {}, f"the probe run", sizes)
            wrong.update(w)
            checked.update({line: PROBE_CHECKED for line in ok})
        return wrong, {line: how for line, how in checked.items() if line not in wrong}, unknown, reached

    def callee_checks(self, c, rows, lines):
        """Rows (at `lines`) whose code names arrays of a function the concept's function
        calls, or of one that calls it (`S` of mha_forward on the gradient-check page, `Q` of
        mha_forward under split_heads): checked against each such function
        whose recording holds them, the probe's where it reaches them, else the examples'.
        Returns {line: how} of the rows a callee agrees with and none disagrees with. A
        disagreement is no problem: a callee's recording is its first call, which may be
        another caller's (a helper called from two places records the first), so
        such a row stays unmarked, as a row in words does."""
        from site_builder.gather.project import load_project
        from site_builder.run.example_shapes import check_rows, from_probe
        if not lines:
            return {}
        if getattr(self, "_probe_recording", None) is None:
            self._probe_recording = from_probe(self.shapes)
        calls, sizes = self._probe_recording
        try:            # and its direct callers in the package: a helper's rows name its caller's arrays
            callers = {x.caller for x in self.index.called_by(c["function"]) if self.project.owns(x.caller)}
        except KeyError:
            callers = set()
        callees = sorted(self.callees(c["function"]) | callers)
        runs = [(calls, sizes, {}, "the probe run", PROBE_CHECKED)]
        runs += [(getattr(r, "shapes", None) or {}, None, r.data, f"the example {ref}'s run", EXAMPLE_CHECKED)
                 for ref, r in getattr(self, "_recordings", [])]
        verdicts = {line: ([], []) for line in lines}            # line -> (agreeing, disagreeing)
        for recorded, letters, data, where, how in runs:
            open_lines = [line for line, v in verdicts.items() if not v[0] and not v[1]]   # the probe's verdict stands
            for q in callees:
                names = recorded.get(q)
                if not names or not open_lines:
                    continue
                w, ok, _ = check_rows(rows, names, recorded, data, f"{where} of {q}", letters,
                                      project=load_project(self.root))
                for line in open_lines:
                    if line in ok:
                        verdicts[line][0].append(how)
                    elif line in w:
                        verdicts[line][1].append(w[line])
        return {line: v[0][0] for line, v in verdicts.items() if v[0] and not v[1]}

    def symbols(self, page, c, examples=()):
        from site_builder.run.example_shapes import Row, declared_shapes, names_own
        from site_builder.run.shapes import check_declared
        out = []
        unprobed = self.failed_probe(c["function"]) if c.get("symbols") else None
        # A probe that raised stands for every shape of the concept: one line, and no verdict of
        # an example's run, whose sizes the probe's were to tell apart. An example that raised
        # stands for the shapes nothing else checks (collapse_causes folds them into its cause).
        probe_failed = unprobed is not None
        failed_declared = self.declared_probe_failed(page, c) or probe_failed
        failed_examples = tuple(getattr(self, "_failed_examples", ()))
        fn_shapes = {} if unprobed else self.shapes.get(c["function"], {})
        math = [tex_tokens(str(i["tex"])) for i in c.get("math") or [] if "eq" in i]
        dims = " ".join(str(s["shape"]) for s in c.get("symbols") or [])
        locals_ = self.local_names(c["function"])
        rows = []
        for s in c.get("symbols") or []:
            parts = [x for x in split_top_level(str(s["tex"]))]
            code = self.symbol_code(page, c, s, parts, locals_)
            unused = [x for x in parts if not any(contains(eq, tex_tokens(x)) for eq in math)
                      and not re.search(rf"(?<![\\\w]){re.escape(x.strip())}(?!\w)", dims)]
            if unused:
                self.problems.append(Problem(page.file, s.line_of("tex"),
                                             f"symbol '{unused[0].strip()}' is declared but no equation of '{c['id']}' uses it",
                                             "use it in an equation, correct its TeX, or remove the row"))
            rows.append((s, code, Row(s.line_of("shape"), str(s.get("shape_of", code)), str(s["shape"]),
                                      tex_name(str(s["tex"])) if len(parts) == 1 else "")))
        wrong, by_example, why_not, reached = self.example_checks(c, [r for _, _, r in rows])
        others = [r.line for s, code, r in rows if r.line not in wrong and r.line not in by_example
                  and fn_shapes.get(code) is None and declared_shapes(r.declared) is not None
                  and not names_own(r.code, locals_)]
        by_example.update(self.callee_checks(c, [r for _, _, r in rows], others))
        for s, code, row in rows:
            declared = str(s["shape"])
            info = fn_shapes.get(code)
            checked = ""
            if unprobed and declared.startswith("("):
                self.probe_problem(unprobed, page.file, s.line_of("shape"),
                                   f"cannot check the declared shape {declared} of '{code}' in {c['function']}")
                unprobed = None             # once per concept: every symbol has the same cause
            elif info is not None and declared.startswith("("):
                err = check_declared(declared, info)
                if err:
                    self.problems.append(Problem(page.file, s.line_of("shape"), err, shape_fix(err)))
                checked = PROBE_CHECKED
            elif row.line in wrong and not probe_failed:
                self.problems.append(Problem(page.file, s.line_of("shape"), wrong[row.line], shape_fix(wrong[row.line]),
                                             follows=failed_examples))
            elif row.line in by_example:
                checked = by_example[row.line]
            elif declared_shapes(declared) is not None and not failed_declared and not self.inside_unprobed(row.code):
                self.problems.append(Problem(page.file, s.line_of("shape"), *self.unchecked(c, row.code, declared, fn_shapes,
                                                                                           reached, why_not.get(row.line),
                                                                                           names_own(row.code, locals_)),
                                             strict=True, follows=failed_examples))
            out.append(dict(tex=self.r.tex(str(s["tex"]), False, page.file, s.line_of("tex")),
                            meaning=self.r.md(s["meaning"], page.file, s.line_of("meaning"), inline=True),
                            code=code, shape=declared, checked=checked,
                            n=len(out), tex_src=str(s["tex"]), **code_links(code)))
        return out

    def inside_unprobed(self, code):
        """Whether `code` is `NAME (inside FUNCTION)` of a function whose shape probe raised: the
        probe's failure, reported where the function is documented, is why nothing checks it."""
        m = re.fullmatch(r"(.+?)\s*\(inside\s+([\w.]+)\)", code.strip())
        if not m or not getattr(self, "probe_failures", None):
            return False
        name = m.group(2)
        qualname = next((q for q in self.index.functions if q == name or q.endswith("." + name)), None)
        return qualname is not None and self.failed_probe(qualname) is not None

    def unchecked(self, c, code, declared, fn_shapes, reached, why, own=True):
        """(message, fix) for a declared shape that nothing checks."""
        fn = c["function"]
        head = f"nothing checks the declared shape {declared} of '{code}'"
        if not own and not reached and not fn_shapes and " (inside " not in code:
            return (f"{head}: it is not an array of {fn}, and no run of the concept records it",
                    "say whose it is with shape_of: 'NAME (inside FUNCTION)' for a function this concept's example "
                    "calls, or write the shape in words")
        if reached:
            names = sorted({n for _, result in self._recordings for n, (kind, _) in
                            ((result.shapes or {}).get(fn) or {}).items() if kind == "a"})
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            return (f"{head}: {why or 'the example run records no such array'} in {fn}",
                    f"name an array it holds in code: ({shown or 'none'}; a callee's as NAME (inside FUNCTION)), "
                    "or write the shape in words")
        if fn_shapes:
            return (f"{head}: {why or 'the probe runs record no such array'} in {fn}",
                    f"name one of the arrays they record ({', '.join(sorted(fn_shapes)[:12])}), "
                    "or give the concept an example that calls it, or write the shape in words")
        if why and " (inside " in code:
            return f"{head}: {why}", "name an array that function holds, or write the shape in words"
        return f"{head}: no probe run and no example of the concept reaches {fn}", self.probe_fix(c)
