"""The content side of declarative examples (site_builder/run/declarative.py runs them): the
ref a `steps:` or `gradcheck:` entry becomes, and the reading of its steps, at the content's
load, so a mistake is a problem at its line before anything runs.

The ref carries the whole declaration as literals (`declared:steps(function=..., inputs=...,
rows=...)`): it is the example's cache key, so a changed input is a new example and nothing
else has to know about declarations.
"""

KINDS = ("steps", "gradcheck")


class DeclaredError(Exception):
    """A declarative example that cannot be built: str(e) is its one line, `fix` how to mend it
    (what the page may write instead: the names allowed, a close spelling)."""

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message)
        self.fix = fix


# ------------------------------------------------------------------ in the content loader

def declared_ref(kind: str, function: str, inputs: dict, rows=None) -> str:
    """The example ref of a declarative example: `declared:steps(function=..., inputs=..., rows=...)`.
    Its arguments are literals, so the ref is its cache key and a changed input is a new example."""
    args = dict(function=function, inputs=_plain(inputs))
    if rows is not None:
        args["rows"] = _plain(rows)
    return f"declared:{kind}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


def _plain(value):
    """YAML's located mappings and lists as plain dicts and lists (their repr is the ref)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def step_rows(items) -> list:
    """`[Z, {Widen: Z}, {Scaled: [Y, 1]}]` -> steps_table rows [(label, name, n)]; a bare name is
    its own label. Raises DeclaredError naming the item that is none of those."""
    out = []
    for item in items:
        if isinstance(item, str):
            out.append((item, item, None))
        elif isinstance(item, dict) and len(item) == 1:
            (label, what), = item.items()
            if isinstance(what, str):
                out.append((str(label), what, None))
            elif isinstance(what, list) and len(what) == 2 and isinstance(what[0], str) and isinstance(what[1], int):
                out.append((str(label), what[0], what[1]))
            else:
                raise DeclaredError(f"step '{label}' must name a local, or [local, n] for its n-th change")
        else:
            raise DeclaredError(f"a step is a local's name or {{label: name}}, got {item!r}")
    return out
