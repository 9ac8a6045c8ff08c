"""Inputs the reader chooses: precomputed choices on the static site, free input under `serve`.

An example in a content file may declare
- `choices: {param: [values]}`: the build calls the example once per combination of values
  (`fn(row=2, layer=1)`), caches each like any example (its ref names its arguments:
  `block:block_forward_steps(layer=1, row=2)`), shows the first combination in the page and
  writes the others as small script files the page loads on demand (a `<script>` tag, so it
  works from any static host and from `file://`, where `fetch` does not);
- `playable: {param: {type: ..., bounds}}`: under `python3 build_site.py serve` the same
  control also takes a value the reader types, sent to the serve process's `/__play`
  endpoint, which validates it here, calls the same example function with it in a worker
  under a time limit (site_builder/base/worker.py) and renders the result with the same template.

Why the endpoint is never a way to run code: it only names an example by page and example
id, the function is the one that content file declares, only declared parameters pass,
every value is checked against its declared type and bounds before anything runs, and the
value reaches the function as a Python literal (never evaluated as code).

Types: `int` and `float` (`min`, `max`), `text` (`max_length`, and `vocabulary: NAME`: every
character must be one of that vocabulary, which the project's hook `text_vocabularies` names;
`max_length` may name a whole-number field of the documented config class, the first of the
project's `configs`, for a text as long as the config says: the limit is then the config's,
never typed), `numbers` (a list of `length` floats, each within `min`..`max`). A choice
parameter that is not playable accepts only its declared values.

The names a text declares are checked in two passes: their form when the content loads
(gathering imports nothing of the project), what they name when the pages are built and when
`serve` takes a value (`TextRules`, from the project block and its hooks).
"""
import ast
import functools
import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from site_builder.base.problems import Problem, yaml_kind

TYPES = ("int", "float", "text", "numbers")
SPEC_KEYS = {"int": {"type", "min", "max", "label"}, "float": {"type", "min", "max", "label"},
             "text": {"type", "max_length", "vocabulary", "label"},
             "numbers": {"type", "length", "min", "max", "label"}}
TEXT_LIMIT = 200                 # no declared max_length may exceed it: a request stays small
NUMBERS_LIMIT = 64
CHOICES_LIMIT = 256       # combinations of one example's choices: each is a run and a file


class InvalidInput(ValueError):
    """A value the endpoint refuses; str(e) is the one line the reader sees."""


@dataclass(frozen=True)
class TextRules:
    """What a text's declaration may name: the documented config class (`config`, for messages)
    and its whole-number fields with their defaults (`max_length: FIELD`), and the vocabularies
    of the hook `text_vocabularies` ({name: {characters, alphabet, known, context}})."""
    config: str = ""
    lengths: dict = field(default_factory=dict)
    vocabularies: dict = field(default_factory=dict)


# ------------------------------------------------------------------ refs with arguments

def call_ref(run: str, args: dict) -> str:
    """'block:f' + {row: 2, layer: 1} -> 'block:f(layer=1, row=2)' (sorted: one ref per call)."""
    if not args:
        return run
    return f"{run}({', '.join(f'{k}={v!r}' for k, v in sorted(args.items()))})"


def split_ref(ref: str):
    """'block:f(layer=1, row=2)' -> ('block:f', {'layer': 1, 'row': 2}). Values are literals."""
    run, paren, rest = ref.partition("(")
    if not paren:
        return ref, {}
    call = ast.parse(f"f({rest}", mode="eval").body
    return run, {k.arg: ast.literal_eval(k.value) for k in call.keywords}


# ------------------------------------------------------------------ declarations (content)

def check_declaration(example, file, problems, rules: TextRules = None):
    """Problems with an example's `choices` and `playable`, at their lines. Without `rules` (when
    the content loads) the names a text declares are checked for their form only."""
    choices, playable = example.get("choices"), example.get("playable")
    if choices is not None:
        if not isinstance(choices, dict) or not choices:
            problems.append(Problem(file, example.line_of("choices"), "'choices' must map parameter names to lists of values",
                                    "write e.g. 'choices: {row: [0, 1, 2]}'"))
        else:
            count = math.prod(len(v) if isinstance(v, list) else 1 for v in choices.values())
            if count > CHOICES_LIMIT:
                problems.append(Problem(file, example.line_of("choices"), f"'choices' make {count} combinations, "
                                        f"more than the {CHOICES_LIMIT} one build runs (each is an example run and a "
                                        f"file under play/)", "list fewer values, or make the parameter 'playable' "
                                        "to take any value"))
            for name, values in choices.items():
                if not isinstance(values, list) or not values or not all(_literal(v) for v in values):
                    wrong = next((v for v in values if not _literal(v)), None) if isinstance(values, list) else values
                    got = "an empty list" if values == [] else _kind(wrong)
                    problems.append(Problem(file, example.line_of("choices"), f"choices of '{name}' must be a "
                                            f"non-empty list of numbers or texts, got {got}",
                                            "write e.g. 'row: [0, 1, 2]'"))
                elif len(set(map(repr, values))) != len(values):
                    problems.append(Problem(file, example.line_of("choices"), f"choices of '{name}' repeat a value",
                                            "list each value once"))
    if playable is not None:
        if not isinstance(playable, dict) or not playable:
            problems.append(Problem(file, example.line_of("playable"), "'playable' must map parameter names to their type and bounds",
                                    "write e.g. 'playable: {eps: {type: float, min: 0, max: 1}}'"))
            return
        for name, spec in playable.items():
            wrong = spec_problem(spec, rules)
            if wrong:
                problems.append(Problem(file, example.line_of("playable"), f"playable '{name}': {wrong}",
                                        f"types: {', '.join(TYPES)}; see content/README.md"))
            elif isinstance(choices, dict) and isinstance(choices.get(name), list) and all(map(_literal, choices[name])):
                for v in choices[name]:
                    try:
                        validate(spec, v, rules=rules)
                    except InvalidInput as e:
                        problems.append(Problem(file, example.line_of("choices"), f"choice {v!r} of '{name}' is outside its playable bounds: {e}",
                                                "widen the bounds or drop the value"))


def parameters_missing(root, run: str, names) -> list:
    """The names in `names` that the example function `run` (module:function) cannot take,
    read from its source's syntax tree (nothing is imported). [] if it takes **kwargs, or if
    the module or function is not found (that is reported where the example runs)."""
    if not names:              # nothing to miss: the module need not be parsed
        return []
    module, _, function = run.partition(":")
    path = Path(root) / "content" / "examples" / f"{module}.py"
    try:
        data = path.read_bytes()
    except OSError:
        return []
    taken = _parameters_taken(str(path), data).get(function)
    return [] if taken is None else [n for n in names if n not in taken]


@functools.lru_cache(maxsize=64)
def _parameters_taken(path: str, data: bytes) -> dict:
    """{function: set of parameter names, or None if it takes **kwargs} of one example module.
    Keyed on the bytes: a build asks this for every example, and parsing the module each time
    was half of a build with its example caches filled."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return {}
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in found:
            a = node.args
            found[node.name] = None if a.kwarg else {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    return found


def _literal(v):
    return isinstance(v, (int, float, str)) and not isinstance(v, bool)


def _number(v):
    try:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    except OverflowError:                 # an int past the largest float
        return False


def spec_problem(spec, rules: TextRules = None):
    """What is wrong with a declared type and bounds, or None. Without rules, a text's config
    field and vocabulary are checked for their form only."""
    if not isinstance(spec, dict) or spec.get("type") not in TYPES:
        return f"'type' must be one of {', '.join(TYPES)}"
    kind = spec["type"]
    extra = set(spec) - SPEC_KEYS[kind]
    if extra:
        return f"unknown key '{sorted(extra)[0]}' for type {kind} (allowed: {', '.join(sorted(SPEC_KEYS[kind]))})"
    if kind in ("int", "float", "numbers"):
        for bound in ("min", "max"):
            if not _number(spec.get(bound)):
                v = spec.get(bound)
                got = ("nothing" if bound not in spec else _shown(v) if isinstance(v, (int, float))
                       and not isinstance(v, bool) else _kind(v))
                return (f"'{bound}' must be a finite number (the field says the range a reader may type), "
                        f"got {got}")
        if spec["min"] > spec["max"]:
            return f"needs 'min' <= 'max', got min {spec['min']} > max {spec['max']}"
    if kind == "text":
        return _text_problem(spec, rules)
    if kind == "numbers":
        n = spec.get("length")
        if not (isinstance(n, int) and not isinstance(n, bool) and 0 < n <= NUMBERS_LIMIT):
            return f"needs 'length' between 1 and {NUMBERS_LIMIT}"
    return None


def _text_problem(spec, rules: TextRules = None):
    named, vocabulary = spec.get("max_length"), spec.get("vocabulary")
    if isinstance(named, str) and (not named.isidentifier() or (rules is not None and named not in rules.lengths)):
        config = rules.config if rules is not None and rules.config else "the documented config"
        return (f"'max_length: {named}' names no whole-number field of {config} "
                f"(fields: {', '.join(rules.lengths) if rules is not None and rules.lengths else 'none'})")
    n = max_length(spec, rules)
    if not isinstance(named, str) and not (isinstance(n, int) and not isinstance(n, bool) and 0 < n <= TEXT_LIMIT):
        return f"needs 'max_length' between 1 and {TEXT_LIMIT}, or a whole-number field of the documented config"
    if vocabulary is not None and not isinstance(vocabulary, str):
        return "'vocabulary' must be the name of a vocabulary"
    if vocabulary is not None and rules is not None and vocabulary not in rules.vocabularies:
        known = ", ".join(rules.vocabularies)
        return (f"'vocabulary: {vocabulary}' is not a vocabulary of the project's hook text_vocabularies"
                + (f" (it names: {known})" if known else " (the project has none)"))
    if isinstance(named, str) and isinstance(n, int) and not 0 < n <= TEXT_LIMIT:
        return f"'max_length: {named}' is {n}, not between 1 and {TEXT_LIMIT}"
    return None


def max_length(spec: dict, rules: TextRules = None):
    """A text's limit: its `max_length` as a number, or the default of the config field it names
    (what a text the config sizes may be); None for a name that is no such field, or when no
    rules say (the content's first pass)."""
    n = spec.get("max_length")
    if isinstance(n, str):
        return rules.lengths.get(n) if rules is not None else None
    return n


def combinations(choices: dict) -> list:
    """Every combination of the declared values, as {param: value}; the first is the default."""
    if not choices:
        return [{}]
    names = sorted(choices)
    return [dict(zip(names, values)) for values in itertools.product(*(choices[n] for n in names))]


def token(values: list, value) -> str:
    """How a value appears in the URL and in a fragment's file name: a number as itself, a
    text by its position in the list (a prompt would make a long, unreadable URL)."""
    return str(values.index(value)) if isinstance(value, str) else str(value)


def combo_key(choices: dict, combo: dict) -> str:
    return "_".join(f"{n}-{token(choices[n], combo[n])}" for n in sorted(choices)).replace(".", "p")


# ------------------------------------------------------------------ validation (the endpoint)

def validate(spec: dict, value, vocabulary=None, rules: TextRules = None):
    """The value, converted to its declared type, or InvalidInput saying what is wrong.
    `vocabulary`: the characters a text may hold (its declared vocabulary's), or None."""
    kind = spec["type"]
    typed = value.strip() if isinstance(value, str) else None    # a refusal says the value as typed
    if kind == "int":
        if isinstance(value, str):
            value = _parse(value, int, "a whole number")
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidInput(f"must be a whole number, got {_kind(value)}")
        return _bounded(value, spec, typed)
    if kind == "float":
        if isinstance(value, str):
            value = _parse(value, float, "a number")
        if not _number(value):
            raise InvalidInput(f"must be a finite number, got {_kind(value)}")
        return _bounded(float(value), spec, typed)
    if kind == "text":
        if not isinstance(value, str):
            raise InvalidInput(f"must be text, got {_kind(value)}")
        if not value:
            raise InvalidInput("must not be empty")
        limit = max_length(spec, rules) or TEXT_LIMIT       # a config field no rules resolve: checked again with them
        if len(value) > limit:
            raise InvalidInput(f"is {len(value)} characters long; at most {limit} are allowed")
        if vocabulary is not None:
            unknown = sorted(set(value) - set(vocabulary))
            if unknown:
                shown = ", ".join(repr(c) for c in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
                words = _vocabulary_words(spec, rules).get("known") or "its {n} characters"
                raise InvalidInput(f"has characters outside its vocabulary: {shown} "
                                   f"(it takes {words.replace('{n}', str(len(vocabulary)))})")
        return value
    if kind == "numbers":
        parts = [p for p in value.replace(",", " ").split() if p] if isinstance(value, str) else None
        if parts is not None:
            value = [_parse(p, float, "a number") for p in parts]
        if not isinstance(value, list) or not all(_number(v) for v in value):
            raise InvalidInput(f"must be a list of {spec['length']} numbers, got {_kind(value)}")
        if len(value) != spec["length"]:
            raise InvalidInput(f"must be {spec['length']} numbers, got {len(value)}")
        return [_bounded(float(v), spec, parts[i] if parts else None) for i, v in enumerate(value)]
    raise InvalidInput(f"has an unknown type {kind!r}")


NUMBER_LIMIT = 40           # characters of a typed number
# What a typed number may look like: Python's float() syntax without its underscores (float('1_0')
# is 10) and its non-ASCII digits, so that static/js/play.js reads the same texts the same way.
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z", re.ASCII)
WHOLE_NUMBER = re.compile(r"[+-]?\d+\Z", re.ASCII)
NOT_FINITE = re.compile(r"[+-]?(inf|infinity|nan)\Z", re.IGNORECASE)


def _parse(text, convert, what):
    text = text.strip()
    if not text:
        raise InvalidInput(f"must be {what}; the field holds only spaces")
    if len(text) > NUMBER_LIMIT:
        raise InvalidInput(f"must be {what} of at most {NUMBER_LIMIT} characters (an exponent "
                           f"shortens one: 1.5e-30), got {len(text)} characters")
    if NOT_FINITE.match(text):
        raise InvalidInput(f"must be a finite number, got {text!r}")
    if not (WHOLE_NUMBER if convert is int else NUMBER).match(text):
        raise InvalidInput(f"must be {what}, got {text[:20]!r}")
    value = convert(text)
    if convert is float and not math.isfinite(value):          # 1e999
        raise InvalidInput(f"must be a finite number, got {text!r}")
    return value


def _bounded(v, spec, typed=None):
    """v if it is within the declared bounds; the refusal shows it as typed (100.0000001, not the
    100 that :g would round it to), or as repr shows a number sent as one."""
    if not spec["min"] <= v <= spec["max"]:
        raise InvalidInput(f"must be between {spec['min']:g} and {spec['max']:g}, got {typed if typed is not None else _shown(v)}")
    return v


def _shown(v):
    """A number as a message shows it: an integer too long to read is its count of digits."""
    if isinstance(v, int) and len(str(abs(v))) > 20:
        return f"a whole number of {len(str(abs(v)))} digits"
    return repr(v)


def _kind(v):
    if isinstance(v, int) and not isinstance(v, bool) and len(str(abs(v))) > 20:
        return _shown(v)
    if isinstance(v, (bool, dict, list, type(None))):
        return yaml_kind(v)
    return f"{type(v).__name__} {v!r}"[:60]


def _vocabulary_words(spec: dict, rules: TextRules = None) -> dict:
    """The declared vocabulary's entry of the hook text_vocabularies ({} for none)."""
    if rules is None or not isinstance(spec.get("vocabulary"), str):
        return {}
    return rules.vocabularies.get(spec["vocabulary"], {})


def characters(spec: dict, rules: TextRules):
    """The characters a text declared with `vocabulary: NAME` may hold (the hook's characters(),
    called now: it may read a trained run), or None for any other value."""
    entry = _vocabulary_words(spec, rules) if spec.get("type") == "text" else {}
    return entry["characters"]() if "characters" in entry else None


def checked_arguments(example: dict, args, rules: TextRules = None) -> dict:
    """Every argument of a request, checked against the example's declaration: each must be
    a declared parameter; a playable one must fit its type and bounds (a text's characters its
    vocabulary's, with rules), a choice one that is not playable must be one of its declared
    values. Missing choices take their first value."""
    if not isinstance(args, dict):
        raise InvalidInput("'args' must be a mapping of parameter names to values")
    choices, playable = example.get("choices") or {}, example.get("playable") or {}
    out = {}
    for name, value in args.items():
        if name not in choices and name not in playable:
            declared = ", ".join(sorted(set(choices) | set(playable))) or "none"
            raise InvalidInput(f"'{name}' is not a parameter of this example (declared: {declared})")
        try:
            if name in playable:
                spec = playable[name]
                out[name] = validate(spec, value, characters(spec, rules) if rules else None, rules)
            else:
                values = choices[name]
                match = [v for v in values if v == value or str(v) == str(value) or token(values, v) == str(value)]
                if not match:
                    raise InvalidInput(f"must be one of {', '.join(map(str, values))}")
                out[name] = match[0]
        except InvalidInput as e:
            raise InvalidInput(f"{name} {e}") from None
    for name, values in choices.items():
        out.setdefault(name, values[0])
    return out


# ------------------------------------------------------------------ the page's controls

def hint(spec: dict, rules: TextRules = None) -> str:
    """What a free-input field takes, in words (a vocabulary's in its own: the hook's)."""
    kind = spec["type"]
    if kind == "int":
        return f"a whole number from {spec['min']:g} to {spec['max']:g}"
    if kind == "float":
        return f"a number from {spec['min']:g} to {spec['max']:g}"
    if kind == "text":
        words = _vocabulary_words(spec, rules)
        alphabet = words.get("alphabet") or "characters"
        if isinstance(spec.get("max_length"), str):      # a config field: what the config sizes
            context = words.get("context")
            return f"up to {spec['max_length']} = {max_length(spec, rules)} {alphabet}" + (f", {context}" if context else "")
        return f"up to {max_length(spec, rules)} {alphabet}"
    return f"{spec['length']} numbers from {spec['min']:g} to {spec['max']:g}, separated by spaces"


def controls(example: dict, slug: str, ex_id: str, variants: dict, rules: TextRules = None) -> dict:
    """What templates/partials/example.html draws above an example with choices or free input."""
    choices, playable = example.get("choices") or {}, example.get("playable") or {}
    names = sorted(choices) + sorted(set(playable) - set(choices))
    fields = []
    for name in names:
        spec = playable.get(name)
        values = choices.get(name) or []
        shown = sorted(values) if all(_number(v) for v in values) else values   # the first listed is the default
        fields.append(dict(name=name, options=[dict(token=token(values, v), value=v, selected=v == values[0],
                                                    label=repr(v) if isinstance(v, str) else str(v))
                                               for v in shown],
                           free=dict(type=spec["type"], hint=hint(spec, rules), label=spec.get("label", "")) if spec else None))
    return dict(page=slug, example=ex_id, fields=fields, variants=variants,
                default=next(iter(variants)) if variants else "", keyed=sorted(choices))


def replay_declaration(example: dict, rules: TextRules = None) -> dict:
    """{param: its declared type and bounds} as the browser checks a value against them before
    replaying a tape: the same declaration `/__play` validates with, a text's `max_length`
    resolved to its number and its vocabulary named by the words of its refusal."""
    out = {}
    for name, spec in (example.get("playable") or {}).items():
        given = dict(spec)
        if spec.get("type") == "text":
            given["max_length"] = max_length(spec, rules) or TEXT_LIMIT
            given["known"] = _vocabulary_words(spec, rules).get("known") or "its {n} characters"
            given["characters"] = characters(spec, rules) if rules is not None else None
        out[name] = given
    return out
