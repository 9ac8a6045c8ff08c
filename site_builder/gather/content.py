"""Stage 1: load content/ and validate it against a schema, with a file:line for every error.

A page is a Markdown file: YAML front matter holds the structured part (concepts,
equations, references, symbols, examples), and the Markdown body is the page's
introduction. YAML was chosen over a custom Markdown dialect because PyYAML reports the line
of every node, authors already know it, and TeX in a `|` block needs no escaping. The
loader keeps each mapping's line and each key's line so that later stages (the resolver,
the shape checker) can point at the exact line of the content file.

The schema is a table of allowed keys per kind of object; an unknown key gets a "did you
mean", a missing required key names the object that lacks it. Nothing is rendered here.
"""
import codecs
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from site_builder.base.cache import digest
from site_builder.base.problems import Problem, did_you_mean, yaml_kind


class Located(dict):
    """A YAML mapping that remembers where it and each of its keys stand."""
    file: str = ""
    line: int = 0
    key_lines: dict

    def line_of(self, key):
        return self.key_lines.get(key, self.line)


class LocatedList(list):
    file: str = ""
    line: int = 0
    item_lines: list = []        # the line of each item

    def line_of_item(self, i):
        return self.item_lines[i] if i < len(self.item_lines) else self.line


def _loader(file, offset):
    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):    # libyaml when present: 10x faster
        pass

    def mapping(loader, node):
        loader.flatten_mapping(node)
        out = Located()
        out.file, out.line, out.key_lines = file, node.start_mark.line + 1 + offset, {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if key in out:
                raise yaml.MarkedYAMLError("while constructing a mapping", None,
                                           f"duplicate key '{key}'", key_node.start_mark)
            out[key] = loader.construct_object(value_node, deep=True)
            out.key_lines[key] = key_node.start_mark.line + 1 + offset
        return out

    def sequence(loader, node):
        out = LocatedList(loader.construct_object(n, deep=True) for n in node.value)
        out.file, out.line = file, node.start_mark.line + 1 + offset
        out.item_lines = [n.start_mark.line + 1 + offset for n in node.value]
        return out

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, sequence)
    return Loader


# digest of (text, file, offset) -> pickled (data, problem). The build loads and saves it with
# its cache: constructing nodes that know their lines is slow in Python, and an unchanged
# page need not be parsed again. Pickled, so every build gets objects of its own.
YAML_MEMO: dict = {}
YAML_USED: set = set()       # the keys this build read: only they are saved (edits would pile up)


def parse_yaml(text, file, offset=0):
    """-> (data, problem or None). A syntax error becomes one Problem with its line."""
    key = digest(text, file, offset)
    YAML_USED.add(key)
    if key not in YAML_MEMO:
        YAML_MEMO[key] = pickle.dumps(_parse_yaml(text, file, offset), protocol=pickle.HIGHEST_PROTOCOL)
    return pickle.loads(YAML_MEMO[key])


def _parse_yaml(text, file, offset):
    try:
        return yaml.load(text, Loader=_loader(file, offset)), None
    except yaml.MarkedYAMLError as e:
        # A token left open (an unclosed quote) is where it was opened, not where the scanner
        # gave up on it (often the end of the front matter).
        context = e.context or ""          # libyaml: "while parsing a quoted scalar"
        scanning = e.context_mark is not None and ("quoted scalar" in context or context.startswith("while scanning"))
        mark = e.context_mark if scanning else e.problem_mark or e.context_mark
        line = mark.line + 1 + offset if mark else offset + 1
        what = e.problem or e.context
        if scanning and e.problem:
            what += (", in the quoted string that starts on this line" if "quoted scalar" in context
                     else f", {context} that starts on this line")
        return None, Problem(file, line, f"malformed YAML: {what}",
                             "check the indentation and quoting on that line")
    except yaml.YAMLError as e:
        return None, Problem(file, offset + 1, f"malformed YAML: {e}")


# The texts every page shows that a project may say in its own words (site.yaml `labels:`);
# the builder's defaults name no project.
LABELS = {"why": "Why is it needed?"}       # the heading of a concept's `why`

# kind -> (required keys, optional keys, {key: kind of its value or of its list items})
SCHEMA = {
    "site": ({"title", "nav"}, {"repo_url", "site_url", "branch", "description", "papers", "sources", "project", "labels",
                                  "glossary", "notation_reused"},
             {"labels": "labels"}),
    "labels": (set(), set(LABELS), {}),
    "paper_entry": ({"title", "authors", "year"}, {"url", "venue"}, {}),
    "page": ({"title", "sections"}, {"summary", "next_note"}, {"sections": "section"}),
    "concept": ({"id", "title", "function", "what", "why", "math"},
                {"type", "name", "group", "notes", "symbols", "examples", "shapes", "listings",
                 "paper", "used", "update", "after_math", "flow", "diagram", "probe"},
                {"notes": "note", "math": "math_item", "symbols": "symbol", "examples": "example",
                 "shapes": "shape", "listings": "listing", "paper": "paper", "diagram": "diagram"}),
    "caches": ({"type", "id", "title", "forward", "backward", "holds"}, {"intro", "after"}, {}),
    "params": ({"type", "id", "title", "roles"}, {"intro", "after", "block"}, {}),
    "text": ({"type", "id", "title", "body"}, set(), {}),
    "note": (set(), {"general", "measured"}, {}),
    "equation": ({"eq", "name", "tex"}, {"refs", "derived"}, {"refs": "ref"}),
    "prose": ({"text"}, set(), {}),
    "ref": ({"role", "snippet"}, {"function"}, {}),             # function: the concept's
    # code: the TeX's name, if a local; shape_of: what the shape check reads when `code` is
    # written for the reader (a callee's array: 'return[0] (inside make_targets)')
    "symbol": ({"tex", "meaning", "shape"}, {"code", "shape_of"}, {}),
    # run: module:function; or a declarative example (site_builder/run/declarative.py): steps or
    # gradcheck, with inputs and optionally function (default: the concept's)
    "example": ({"title"}, {"run", "hand_picked", "caption", "timeout", "choices", "playable",
                            "replay", "shows_nonfinite", "steps", "gradcheck", "inputs", "function"}, {}),
    "shape": ({"title", "names"}, {"function", "at", "note", "config", "run"}, {}),
    "listing": ({"function"}, {"snippet", "caption"}, {}),
    "paper": ({"key"}, {"section", "equation", "page"}, {}),
    "diagram": (set(), {"function", "expand", "caption", "links"}, {}),
}
ROLES = ("computes", "inline", "tests", "derived")
# The type of every leaf value; anything not listed here is a string.
LEAF_TYPES = {"derived": bool, "flow": bool, "shows_nonfinite": bool, "gradcheck": bool, "steps": "list",
              "inputs": dict, "probe": "probe-map", "names": "str-list", "nav": "str-list", "notation_reused": "str-list",
              "expand": "str-list", "holds": "str-map", "roles": "str-map", "sources": "str-map", "papers": dict,
              "shape": "scalar", "block": "prefix",
              "section": "scalar", "equation": "scalar", "page": "scalar", "year": "scalar",
              "timeout": "seconds", "project": dict}
# Checked whole, with a message of their own, by playground.check_declaration (called below)
DECLARATION_KEYS = {"choices", "playable"}
CONTAINERS = {"sections", "math", "refs", "symbols", "examples", "shapes", "listings", "notes", "paper", "diagram",
              "labels"}


def check_leaf(obj, key, file, problems):
    """Values must have the type the renderer expects: say which, at the key's line."""
    value, want = obj[key], LEAF_TYPES.get(key, str)
    line = obj.line_of(key)
    ok = {bool: lambda v: isinstance(v, bool),
          str: lambda v: isinstance(v, str) and v.strip() != "",
          "prefix": lambda v: isinstance(v, str),       # "": no prefix (a params section's every parameter)
          dict: lambda v: isinstance(v, dict),
          "list": lambda v: isinstance(v, list) and bool(v),
          "scalar": lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool),
          "str-list": lambda v: isinstance(v, list) and all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in v),
          "str-map": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
          "probe-map": lambda v: isinstance(v, dict) and all(isinstance(x, (str, int, float)) and not isinstance(x, bool)
                                                             for x in v.values()),
          "seconds": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 3600}[want](value)
    if ok and want == "probe-map":          # new-concept's TODO for a parameter whose kind the code does not show
        for name, v in value.items():
            if isinstance(v, str) and re.match(r"TODO\b", v.strip()):
                problems.append(Problem(file, line, f"the probe value of '{name}' is still TODO",
                                        f"write its shape ('(T, d)'), a number, or generator (new-concept could "
                                        f"not tell what {name} takes)", strict=True))
    if ok and isinstance(value, str) and re.match(r"TODO\b", value.strip()):
        problems.append(Problem(file, line, f"'{key}' is still TODO", f"write the {key} ({SCAFFOLD_OF.get(key, 'new-concept')} left it for you)",
                                strict=True))
    if not ok:
        described = {bool: "true or false", str: "non-empty text", "list": "a non-empty list", "prefix": "text", dict: "a mapping", "scalar": "a number or text",
                     "str-list": "a list of names", "str-map": "a mapping of names to text",
                     "seconds": "a number of seconds above 0 and at most 3600",
                     "probe-map": "a mapping of parameter names to shapes ('(T, d)') or numbers"}[want]
        # a number of the wrong size is shown as written; a wrong type is named
        got = repr(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else yaml_kind(value)
        # quoting helps only where text was wanted and YAML read something else (yes, 1.0, [x])
        fix = ("write a positive number of seconds, at most 3600" if want == "seconds"
               else "quote text that YAML would read as something else" if want in (str, "prefix", "scalar")
               else f"write {described}")
        problems.append(Problem(file, line, f"'{key}' must be {described}, got {got}", fix))


def check_introduction(body: str, body_line: int, file: str, problems: list):
    """new-page writes the introduction as a TODO line: strict check names it until it is written."""
    for n, line in enumerate(body.split("\n")):
        if line.strip():
            if re.match(r"TODO\b", line.strip()):
                problems.append(Problem(file, body_line + n, "the page's introduction is still TODO",
                                        "write the introduction below the front matter (new-page left it for you)",
                                        strict=True))
            return


# The key a scaffold writes TODO into, and which command: new-page writes a page's summary,
# new-concept everything inside a section.
SCAFFOLD_OF = {"summary": "new-page"}


def check_site_url(site, file, problems):
    """site_url is where the site is served (its sitemap's and canonical links' base,
    site_builder/publish/hosting.py): an absolute http(s) address with no query or fragment."""
    url = site.get("site_url")
    if not isinstance(url, str) or not url.strip():
        return                  # absent, or check_leaf reported it
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        problems.append(Problem(file, site.line_of("site_url"), f"'site_url' must be the site's address, "
                                f"such as https://USER.github.io/REPO/, got '{url}'",
                                "write the whole address the site is served at, from https:// to the last /"))


def section_kind(obj):
    return obj.get("type", "concept") if isinstance(obj, dict) else None


def math_kind(obj):
    return "equation" if "eq" in obj else "prose"


def validate(obj, kind, file, line, problems):
    """Check obj against SCHEMA[kind], recursing into the keys that hold objects."""
    if not isinstance(obj, dict):
        problems.append(Problem(file, line, f"expected a mapping for this {kind}, got {yaml_kind(obj)}",
                                "write it as 'key: value' lines"))
        return
    if kind == "section":
        kind = section_kind(obj)
        if kind not in ("concept", "caches", "params", "text"):
            problems.append(Problem(file, obj.line_of("type"), f"unknown section type '{kind}'",
                                    "use one of concept, caches, params, text"))
            return
    if kind == "math_item":
        kind = math_kind(obj)
    required, optional, children = SCHEMA[kind]
    for key in obj:
        if key in required | optional and key not in CONTAINERS | DECLARATION_KEYS and key != "type":
            check_leaf(obj, key, file, problems)
        if key not in required | optional:
            hint = did_you_mean(str(key), required | optional)
            problems.append(Problem(file, obj.line_of(key), f"unknown key '{key}' in {kind}",
                                    hint or f"allowed keys: {', '.join(sorted(required | optional))}"))
    for key in sorted(required - set(obj)):
        problems.append(Problem(file, obj.line, f"{kind} is missing the required key '{key}'",
                                f"add '{key}:' to it"))
    for key, child in children.items():
        if key not in obj:
            continue
        value = obj[key]
        if child in ("paper", "diagram", "labels"):
            validate(value, child, file, obj.line_of(key), problems)
        elif not isinstance(value, list):
            problems.append(Problem(file, obj.line_of(key), f"'{key}' must be a list",
                                    f"start each item of '{key}' with '- '"))
        else:
            for item in value:
                validate(item, child, file, getattr(item, "line", obj.line_of(key)), problems)
    if kind == "ref" and obj.get("role") not in ROLES:
        problems.append(Problem(file, obj.line_of("role"), f"unknown role '{obj.get('role')}'",
                                f"use one of {', '.join(ROLES)}"))
    if kind == "symbol" and isinstance(obj.get("shape"), str):
        from site_builder.gather.shape_syntax import malformed_shape
        wrong = malformed_shape(obj["shape"])
        if wrong:
            problems.append(Problem(file, obj.line_of("shape"), f"the shape '{obj['shape']}' is malformed: {wrong[0]}",
                                    wrong[1]))
    if kind == "example":
        from site_builder.gather.playground import check_declaration
        check_declaration(obj, file, problems)
        check_example_kind(obj, file, problems)
    if kind == "concept":
        for e in listed(obj, "examples"):
            if isinstance(e, dict) and "run" not in e:
                declare_example(e, obj, file, problems)
        runs = {str(e.get("title")): e["run"] for e in listed(obj, "examples") if isinstance(e, dict) and e.get("run")}
        for block in listed(obj, "shapes"):
            if isinstance(block, dict) and isinstance(block.get("run"), str) and ":" not in block["run"]:
                if block["run"] in runs:             # a shapes block sized by an example of this concept, by its title
                    block["run"] = runs[block["run"]]
                else:
                    problems.append(Problem(file, block.line_of("run"), f"shapes 'run: {block['run']}' is neither "
                                            "module:function nor the title of an example of this concept",
                                            did_you_mean(block["run"], runs) or "name an example: module:function, or its title"))
    if kind == "note" and len(obj) != 1:
        problems.append(Problem(file, obj.line, "a note is either 'general:' or 'measured:'",
                                "label a claim the repository does not measure 'general'"))


DECLARED = ("steps", "gradcheck")


def check_example_kind(e, file, problems):
    """An example runs a function (`run:`) or is declared (`steps:` or `gradcheck: true`), one of them."""
    given = [k for k in ("run",) + DECLARED if k in e and e[k] is not False]
    if len(given) != 1:
        problems.append(Problem(file, e.line, f"an example needs one of 'run:', 'steps:', 'gradcheck: true'"
                                + (f", not {' and '.join(given)}" if given else ""),
                                "write run: module:function for a Python example, or steps: [...] / gradcheck: true "
                                "with inputs: {...} for a declarative one"))
    elif given[0] != "run":
        if "inputs" not in e:
            problems.append(Problem(file, e.line_of(given[0]), f"a declarative example ({given[0]}) needs 'inputs:'",
                                    "give the function's inputs: inputs: {X: FIXTURE_NAME, eps: 1.0e-5}"))
        for key in ("choices", "playable"):
            if key in e:
                problems.append(Problem(file, e.line_of(key), f"a declarative example takes no '{key}'",
                                        "write a Python example (run: module:function) to let the reader choose"))
    elif "inputs" in e or "function" in e:
        key = "inputs" if "inputs" in e else "function"
        problems.append(Problem(file, e.line_of(key), f"'{key}' is for a declarative example, not one with 'run:'",
                            f"remove '{key}', or replace 'run:' with steps: [...] or gradcheck: true"))


def declare_example(e, concept, file, problems):
    """A declarative example gets the ref that runs it (site_builder/run/declarative.py), at the
    line of its `steps:` or `gradcheck:`, so it is requested, run and cached like any other."""
    from site_builder.gather.declared import DeclaredError, declared_ref, step_rows
    kind = next((k for k in DECLARED if e.get(k)), None)
    if kind is None or not isinstance(e.get("inputs"), dict):
        return                          # check_example_kind said why
    function = str(e.get("function") or concept.get("function") or "")
    try:
        rows = step_rows(e["steps"]) if kind == "steps" else None
    except DeclaredError as err:
        problems.append(Problem(file, e.line_of("steps"), str(err), "write each step as NAME, {LABEL: NAME} or "
                                "{LABEL: [NAME, N]}"))
        return
    e["run"] = declared_ref(kind, function, e["inputs"], e["steps"] if rows is not None else None)
    e.key_lines["run"] = e.line_of(kind)


@dataclass
class Page:
    slug: str
    file: str            # repo-relative
    meta: Located
    body: str
    body_line: int
    text: str = ""       # the whole file, for what is found by scanning it (computed values)


@dataclass
class Content:
    site: Located
    pages: dict = field(default_factory=dict)      # slug -> Page, in navigation order

    @property
    def labels(self) -> dict:
        """The page texts (LABELS), as site.yaml's `labels:` words them."""
        given = self.site.get("labels")
        return {**LABELS, **(given if isinstance(given, dict) else {})}


def split_front_matter(text, file):
    """'---\\nyaml\\n---\\nmarkdown' -> (yaml text, body, body's first line) or a Problem."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None, Problem(file, 1, "a page must start with YAML front matter", "put '---' on line 1")
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return ("\n".join(lines[1:i]), "\n".join(lines[i + 1:]), i + 2), None
    return None, Problem(file, 1, "the front matter is not closed", "end it with a line '---'")


def read_text(path: Path, file: str):
    """-> (text, None) or (None, Problem): a file that is missing, unreadable or not UTF-8 is
    one problem, with the line of the first bad byte."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if path.is_symlink():
            return None, Problem(file, 1, f"this file is a symbolic link to {os.readlink(path)}, which does not exist",
                                 "point the link at an existing file, or delete it")
        return None, Problem(file, 0, "the file does not exist", f"create {file}")
    except IsADirectoryError:
        return None, Problem(file, 1, "this is a folder, not a file", f"move the folder away and write {file} as a file")
    except OSError as e:
        return None, Problem(file, 1, f"cannot read the file: {e.strerror or e}", "make it a readable file")
    data = data.removeprefix(codecs.BOM_UTF8)     # editors on Windows save UTF-8 with one
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return None, Problem(file, line, f"not UTF-8: byte 0x{data[e.start]:02x} at column {column} of this line",
                             "save the file as UTF-8")


def load_content(root: Path, problems: list) -> Content:
    """Read content/site.yaml and every page it lists. Problems are appended, not raised."""
    content_dir = root / "content"
    site_file = "content/site.yaml"
    site_text, err = read_text(content_dir / "site.yaml", site_file)
    if err:
        problems.append(err)
        return Content(site=Located())
    site, err = parse_yaml(site_text, site_file)
    if err:
        problems.append(err)
        return Content(site=Located())
    if not isinstance(site, dict):
        problems.append(Problem(site_file, 1, "the site file must be a mapping",
                                "write 'title: ...', 'nav: [...]' and so on"))
        return Content(site=Located())
    validate(site, "site", site_file, 1, problems)
    check_site_url(site, site_file, problems)
    papers = site.get("papers")
    for key, entry in (papers.items() if isinstance(papers, dict) else ()):
        validate(entry, "paper_entry", site_file, getattr(entry, "line", 1), problems)
    content = Content(site=site)
    nav_given = isinstance(site.get("nav"), list)        # else 'nav' itself is the problem
    nav_list = site["nav"] if nav_given else []
    nav, listed_at = [], {}
    for i, slug in enumerate(nav_list):
        if not isinstance(slug, (str, int)) or isinstance(slug, bool):
            continue                # check_leaf reported it
        slug, line = str(slug), getattr(nav_list, "line_of_item", lambda i: site.line_of("nav"))(i)
        if slug in listed_at:
            problems.append(Problem(site_file, line, f"the navigation lists '{slug}' twice (first at line {listed_at[slug]})",
                                    "list each page once in 'nav': remove this entry"))
            continue
        listed_at[slug] = line
        nav.append(slug)
    page_files = {p.stem: p for p in sorted((content_dir / "pages").glob("*.md"))}
    for slug in [s for s in page_files if unusable_slug(s)]:
        problems.append(Problem(f"content/pages/{slug}.md", 1, unusable_slug(slug),
                                f"rename the file, e.g. to {portable_slug(slug)}.md, and its entry in 'nav'"))
        del page_files[slug]
        nav = [s for s in nav if s != slug]
    for slug in nav:
        if slug not in page_files:
            problems.append(Problem(site_file, site.line_of("nav"),
                                    f"the navigation lists '{slug}', but content/pages/{slug}.md does not exist",
                                    did_you_mean(str(slug), page_files) or "create the page or remove it from nav"))
    for slug, path in page_files.items():
        if slug not in nav and nav_given:
            problems.append(Problem(f"content/pages/{slug}.md", 1, f"page '{slug}' is missing from the navigation",
                                    "add it to 'nav' in content/site.yaml"))
    for slug in [s for s in nav if s in page_files]:
        page = load_page(page_files[slug], slug, problems)
        if page:
            content.pages[slug] = page
    check_unique_ids(content, problems)
    check_example_todos(root, content, problems)
    return content


# new-concept's example input for a parameter whose kind the code does not show: `NAME = TODO  # ...`
EXAMPLE_TODO = re.compile(r"^([A-Za-z_]\w*)\s*=\s*TODO\b", re.M)


def check_example_todos(root: Path, content, problems: list):
    """A TODO input new-concept left in an example module a page runs is named with the pages'
    TODOs, before any example runs (run, it would be a NameError, and only once the page's own
    TODOs were filled)."""
    modules = {str(e["run"]).partition(":")[0] for page in content.pages.values() for c in concepts(page)
               for e in listed(c, "examples") if isinstance(e, dict) and ":" in str(e.get("run", ""))}
    for module in sorted(modules - {"declared"}):
        rel = f"content/examples/{module}.py"
        try:
            text = (root / rel).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            continue                     # the example's run names the file problem
        for m in EXAMPLE_TODO.finditer(text):
            problems.append(Problem(rel, text.count("\n", 0, m.start()) + 1, f"the example input '{m.group(1)}' is still TODO",
                                    "write a value for it (new-concept could not tell what to pass: its comment says what it knows)",
                                    strict=True))


# YAML's escapes that are also the start of a TeX command (\tanh, \beta, \frac, \alpha, \vec,
# \rho, \epsilon, \nabla, \Phi, \xi, \underline, \Lambda, ...): in a double-quoted string
# YAML turns them into a control character, or fails on them, before TeX sees the text.
YAML_ESCAPES = set("tbfavrenNPxuLU0_ ")
_MATH = re.compile(r"\$\$.+?\$\$|\$.+?\$", re.S)


def tex_traps(text: str, file: str, offset: int = 0) -> list:
    """A Problem for every YAML escape in TeX inside a double-quoted string ($...$ of prose, or
    the whole value of a `tex:` key): the page would show a tab and 'anh(u)' for "$\\tanh(u)$",
    with no error. Found on the YAML scanner's tokens (so quotes inside single-quoted strings or
    | blocks are never taken for strings), with the line of the backslash."""
    if "\\" not in text or '"' not in text or ("$" not in text and "tex" not in text):
        return []
    key = digest("tex traps", text, file, offset)       # kept with the parsed YAML: scanning is slow
    YAML_USED.add(key)
    if key not in YAML_MEMO:
        YAML_MEMO[key] = pickle.dumps(_tex_traps(text, file, offset), protocol=pickle.HIGHEST_PROTOCOL)
    return pickle.loads(YAML_MEMO[key])


def _scan(text, tokens):
    """Append the YAML tokens of text to tokens. libyaml's scanner (when PyYAML has it) is ten
    times faster than PyYAML's and gives the same scalar tokens, styles and positions; on an
    error the Python scanner runs again from the start, so a broken page keeps the tokens
    before the error and is reported on the line it always was."""
    if getattr(yaml, "CSafeLoader", None) is not None:
        try:
            tokens.extend(yaml.scan(text, Loader=yaml.CSafeLoader))
            return
        except yaml.YAMLError:
            tokens.clear()
    for tok in yaml.scan(text, Loader=yaml.SafeLoader):
        tokens.append(tok)


# The keys whose whole value is TeX (an equation's and a symbol's `tex:`).
TEX_KEYS = {"tex"}


def _tex_in_double_quotes(tokens, text):
    """(start index in text, TeX) of every piece of TeX inside a double-quoted scalar: the $...$
    of any such string, and the whole string when it is the value of a TEX_KEYS key."""
    key = None
    for prev, tok in zip([None] + tokens, tokens):
        if isinstance(tok, yaml.ScalarToken) and isinstance(prev, yaml.KeyToken):
            key = tok.value
            continue
        if not isinstance(tok, yaml.ScalarToken) or tok.style != '"':
            continue
        start = tok.start_mark.index
        raw = text[start:tok.end_mark.index]
        if key in TEX_KEYS and isinstance(prev, yaml.ValueToken):
            yield start, raw
        else:
            for m in _MATH.finditer(raw):
                yield start + m.start(), m.group(0)


def _tex_traps(text, file, offset):
    out, tokens = [], []
    try:
        _scan(text, tokens)
    except yaml.YAMLError as e:
        # An escape YAML does not know (\\mu in "$\\mu$") stops the scanner: the token it stopped
        # in is still on the line the error names.
        mark = getattr(e, "problem_mark", None)
        if mark is not None:
            line_text = text.split("\n")[mark.line]
            if "\\" in line_text and (_MATH.search(line_text) or re.match(r"\s*(- )?tex:", line_text)):
                out.append(Problem(file, mark.line + 1 + offset, "a backslash in TeX in a double-quoted "
                                   "string is a YAML escape, not TeX",
                                   "write the string in single quotes, or as a | block"))
    for start, body in _tex_in_double_quotes(tokens, text):
        i = 0
        while True:
            i = body.find("\\", i)
            if i < 0:
                break
            nxt = body[i + 1:i + 2]
            if nxt == "\\":
                i += 2            # an escaped backslash: TeX gets one, as meant
                continue
            if nxt in YAML_ESCAPES and nxt:
                at = start + i
                word = re.match(r"\\[A-Za-z]*", body[i:]).group(0)
                out.append(Problem(file, text.count("\n", 0, at) + 1 + offset,
                                   f"'{word}' in TeX in a double-quoted string is the YAML escape "
                                   f"'\\{nxt}', not TeX: the page would show a control character",
                                   "write the string in single quotes, or as a | block"))
            i += 2
    return sorted(out, key=lambda p: p.line)



# A page's file name is its URL: lowercase ASCII, so that it is the same file on a case-insensitive
# file system (macOS, Windows: `Index.html` is `index.html` there) and needs no escaping in a link.
SLUG = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")
RESERVED_SLUGS = {"index": "the overview page is index.html", "404": "the not-found page is 404.html"}


def unusable_slug(slug: str):
    """Why a page cannot be named `slug` (None if it can)."""
    if slug.lower() in RESERVED_SLUGS:
        return (f"a page cannot be named '{slug}': {RESERVED_SLUGS[slug.lower()]}, and this page would be "
                f"overwritten by it (or overwrite it)")
    if not SLUG.match(slug):
        return (f"a page cannot be named '{slug}': a page's file name is its URL, so it must be lowercase "
                f"ASCII letters, digits, '-' or '_', starting with a letter or a digit")
    return None


def portable_slug(slug: str) -> str:
    """A name the page could have instead: `Über Seite` -> `uber-seite`, `index` -> `overview`."""
    import unicodedata
    ascii_name = unicodedata.normalize("NFKD", slug).encode("ascii", "ignore").decode().lower()
    name = re.sub(r"[^a-z0-9_]+", "-", ascii_name).strip("-_")
    return "overview" if not name or name in RESERVED_SLUGS else name

def load_page(path: Path, slug: str, problems: list):
    file = f"content/pages/{path.name}"
    text, err = read_text(path, file)
    if err:
        problems.append(err)
        return None
    parts, err = split_front_matter(text, file)
    if err:
        problems.append(err)
        return None
    front, body, body_line = parts
    traps = tex_traps(front, file, offset=1)
    problems.extend(traps)
    meta, err = parse_yaml(front, file, offset=1)
    if err:
        if not any(t.line == err.line for t in traps):
            problems.append(err)
        return None
    if not isinstance(meta, dict):
        problems.append(Problem(file, 2, "the front matter must be a mapping", "write 'title: ...' and 'sections:'"))
        return None
    validate(meta, "page", file, 2, problems)
    check_introduction(body, body_line, file, problems)
    return Page(slug=slug, file=file, meta=meta, body=body, body_line=body_line, text=text)


def listed(obj, key) -> list:
    """obj[key] if it is a list, else []: what the checks after the schema's read, which run
    on a page the schema found wrong too (`sections: 5` is its problem line, not a TypeError)."""
    value = obj.get(key)
    return value if isinstance(value, list) else []


def concepts(page):
    """The page's sections that are concepts (the ones with equations)."""
    return [s for s in listed(page.meta, "sections") if isinstance(s, dict) and section_kind(s) == "concept"]


def check_unique_ids(content, problems):
    """Section ids are anchors across the site, equation ids within their concept."""
    seen = {}
    for page in content.pages.values():
        for section in listed(page.meta, "sections"):
            if not isinstance(section, dict) or "id" not in section:
                continue
            sid = section["id"]
            if sid in seen:
                problems.append(Problem(page.file, section.line_of("id"), f"duplicate section id '{sid}'",
                                        f"it is already used at {seen[sid]}; ids must be unique across the site"))
            else:
                seen[sid] = f"{page.file}:{section.line_of('id')}"
            eqs = {}
            for item in listed(section, "math"):
                if isinstance(item, dict) and "eq" in item:
                    if item["eq"] in eqs:
                        problems.append(Problem(page.file, item.line_of("eq"), f"duplicate equation id '{item['eq']}' in '{sid}'",
                                                f"first used at line {eqs[item['eq']]}"))
                    eqs.setdefault(item["eq"], item.line_of("eq"))
