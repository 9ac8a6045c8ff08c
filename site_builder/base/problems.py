"""One shape for every build failure: `file:line: what is wrong (how to fix it)`.

Stages append Problems instead of raising, so one build reports all of them. `strict`
problems (a broken link, an undocumented function) fail only `check`; the rest fail any build.
"""
import difflib
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    line: int
    message: str
    fix: str = ""
    strict: bool = False     # fails `check` only
    warning: bool = False    # reported, fails nothing

    def __str__(self):
        where = f"{self.file}:{self.line}" if self.line else self.file
        fix = f" ({self.fix})" if self.fix else ""
        return " ".join(f"{where}: {self.message}{fix}".split())     # always one line


class BuildFailed(Exception):
    def __init__(self, problems):
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = sorted(problems)


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
