"""One shape for every build failure: `file:line: what is wrong (how to fix it)`.

Stages append Problems instead of raising, so one build reports all of them. `strict`
problems (a broken link, an undocumented function) fail only `check`; the rest fail any build.
"""
import difflib
import re
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    line: int
    message: str
    fix: str = ""
    strict: bool = False     # fails `check` only
    warning: bool = False    # reported, fails nothing
    # For collapse_causes: the examples whose failure this is, and those whose failure it follows from
    refs: tuple = field(default=(), compare=False)
    follows: tuple = field(default=(), compare=False)

    def __str__(self):
        where = f"{self.file}:{self.line}" if self.line else self.file
        fix = f" ({self.fix})" if self.fix else ""
        return " ".join(f"{where}: {self.message}{fix}".split())     # always one line


class BuildFailed(Exception):
    def __init__(self, problems):
        problems = collapse_causes(problems)
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = sorted(problems)


# The one shape every "the package's code raised" line has (examples, shape probes, runs, the
# landing page's map): `... raised TypeError: message at pkg/file.py:90 ...`, or a line at the
# package's line itself that says `which raised TypeError: message`.
RAISED = re.compile(r"raised (?P<error>[A-Za-z_][\w.]*(?:: .*?)?)(?: at (?P<where>[^\s:()]+\.py:\d+)|$)")


def raised_at(p):
    """(file:line, error) of the package's code that raised, as problem p says it, else None."""
    m = RAISED.search(p.message)
    if not m or p.warning:
        return None
    where = m["where"] or (f"{p.file}:{p.line}" if p.file.endswith(".py") and p.line else None)
    return (where, m["error"]) if where else None


def collapse_causes(problems):
    """One line for an error the package's code raised, however many examples and probes it
    stopped, in place of every line that follows from it (a shape nobody could check, a value an
    example that raised did not give): adding a required parameter to one function used to be
    hundreds of lines, most proposing a wrong fix. The line is at the package's line that raised,
    says how many runs it stopped, where the first was asked for, and how many lines it stands
    for. A problem says which examples it is the failure of (`refs`) and which failed examples
    it follows from (`follows`)."""
    groups, ref_cause = {}, {}
    for p in problems:
        cause = raised_at(p)
        if cause:
            groups.setdefault(cause, []).append(p)
            ref_cause.update(dict.fromkeys(p.refs, cause))
    for p in problems:
        causes = [ref_cause[r] for r in p.follows if r in ref_cause]
        if causes and not raised_at(p):
            groups[causes[0]].append(p)
    collapsed, kept = set(), []
    for (where, error), group in groups.items():
        if len(group) < 2:
            continue
        collapsed.update(map(id, group))
        first = min(group)
        runs = sum(1 for p in group if raised_at(p))
        file, _, line = where.rpartition(":")
        kept.append(Problem(file, int(line), f"{error}: it stopped {runs} run(s) of examples, training runs or "
                            f"shape probes, the first asked for at {first.file}:{first.line}; {len(group) - 1} more "
                            f"line(s) that follow from it are not listed", "fix this line and build again"))
    return [p for p in problems if id(p) not in collapsed] + kept


def did_you_mean(word, choices, containing=False):
    """A close spelling of `word` among `choices`; with `containing`, first the names that
    contain it (`max` -> `row_max`: a helper that replaced a method keeps its name in its own)."""
    choices = [c for c in choices if c != word]
    close = [c for c in choices if word in c][:2] if containing and word else []
    close = close or difflib.get_close_matches(word, choices, n=1)
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def yaml_kind(value) -> str:
    """What the author wrote, in YAML's words (not Located/LocatedList, the loader's classes)."""
    for kind, name in ((bool, "true/false"), (dict, "a mapping"), (list, "a list"), (str, "text"),
                       ((int, float), "a number"), (type(None), "nothing")):
        if isinstance(value, kind):
            return name
    return type(value).__name__
