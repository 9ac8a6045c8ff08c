"""What the builder knows of the project it documents: the `project:` block of content/site.yaml,
and the hooks module it names.

Everything the builder would otherwise have to assume about the documented package lives here,
owned by the project (as Sphinx keeps a project's knowledge in its conf.py): which package and
tests folder to read, which other folders the examples read, the config class, the axis letters
of its fields and the sizes of the shape-probe run, the parameter table's `init_params` and
decay rule and groups, the call map's root. What must be code (the probes' argument builders,
the training runs a page reads, the vocabulary a playable text is checked against) is a function
of the hooks module, a Python file of the project's own; `hook(name)` returns it, or None.

Trade-offs:
- The block is read on its own, before (and apart from) the rest of content/: the folders it
  names decide what the fingerprint, the source index and `serve`'s watcher read, so it must be
  known before any of them runs. It is read once per content of site.yaml in a process.
- Only `package` is required. Every other setting has a default that a package following the
  `x_forward` / `x_backward` convention with `init_params(cfg, rng)` can live with, and a
  setting that names a thing that is not there is one problem line naming the setting.
- Dotted names are resolved lazily (`resolve(dotted)`), in the stage that runs code: gathering
  imports nothing of the project.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from site_builder.base.problems import BuildFailed, Problem, did_you_mean, yaml_kind

SITE_FILE = "content/site.yaml"
HOOKS_MODULE = "site_hooks"        # the name the hooks file is imported under

# setting -> (what it is, for messages)
SETTINGS = {
    "package": "the documented package: a folder at the project root holding __init__.py",
    "tests": "the package's tests folder (default: tests)",
    "inputs": "other folders the examples read, as a list (default: none)",
    "hooks": "a Python file of the project's own holding the builder's hooks (default: none)",
    "page_test": "the file `new-page` fills in ({slug}, {title}) as the new page's test, in the tests folder "
                 "(default: none, and new-page writes no test)",
    "configs": "the config classes the pages document (the first is the landing page's), a list of "
               "{class: DOTTED, axes: {FIELD: LETTER}, init_params: DOTTED}",
    "probe_sizes": "axis letter -> its size in the shape-probe run, a mapping of distinct numbers",
    "decays": "the weight-decay rule decays(name) -> bool, as a dotted name (default: none)",
    "param_groups": "the parameter table's groups, a list of {match: REGEX, group: NAME, per_block: true/false}",
    "block_prefix": "the prefix of a per-block parameter's name, with {l} for the block index, or a list of them "
                    "(the first is a params section's default)",
    "call_map_root": "the function whose traced call the landing page draws, a dotted name (its arguments come "
                     "from the hook call_map_inputs)",
    "example_headings": "the heading over a concept's examples, a mapping {untrained: TEXT, mixed: TEXT, trained: TEXT} "
                        "({runs} names the training runs they read)",
    "landing": "the landing page's words, a mapping {map_title, map_caption ({call}, {source}), map_missing, size_title}",
    # declarative examples (site_builder/run/declarative.py)
    "fixtures": "the module whose names a declarative example's inputs may give, a dotted name (default: the "
                "tests folder's fixtures.py, if there is one)",
    "numerical_grad": "central differences numerical_grad(f, x) -> the gradient of f() by x, a dotted name "
                      "(a declarative gradient check calls it; default: none)",
    # shape probes and declared-shape checks (site_builder/run/shapes.py, run/example_shapes.py)
    "lengths": "the axis letters that are lengths a call chooses (a sequence's length), each with what it is, as "
               "{LETTER: WORDS}: a probe or an example's run sizes them, never a config field of that letter, "
               "which only bounds them",
}


CONFIG_KEYS = {"class", "axes", "init_params", "axes_by_name"}
GROUP_KEYS = {"match", "group", "per_block"}
# The words a page says where a setting gives none: nothing in them names a project.
EXAMPLE_HEADINGS = {"untrained": "Numerical example", "mixed": "Numerical examples, some computed with {runs}",
                    "trained": "Computed with {runs}"}
LANDING = {"map_title": "A map of the code",
           "map_caption": "What {call} calls at {source}, recorded as it ran (a call the code could make but this "
                          "run did not make is not drawn).",
           "map_missing": "The traced call could not run, so there is no map: the build lists why.",
           "size_title": "Parameters at the default config"}


@dataclass(frozen=True)
class ConfigSpec:
    """One config class: its dotted name, its fields' axis letters, and its init_params(cfg, rng)."""
    class_name: str
    axes: dict = field(default_factory=dict)
    init_params: str | None = None
    # (regex, {field: letter}): for an array whose name the regex finds, which field sizes a letter
    # several fields share (the first rule that matches wins); see letters_for_name
    axes_by_name: tuple = ()

    def letters_for_name(self, name: str) -> dict:
        """{field: letter} of the first `axes_by_name` rule whose regex is found in the array's
        name ({} if none): which of the fields that share a letter sizes this array."""
        return next((dict(axes) for match, axes in self.axes_by_name if re.search(match, name)), {})


@dataclass(frozen=True)
class Project:
    package: str
    tests: str = "tests"
    inputs: tuple = ()
    hooks: str | None = None
    page_test: str | None = None             # the template of a new page's test (new-page)
    configs: tuple = ()                      # ConfigSpec, the landing page's first
    probe_sizes: dict = field(default_factory=dict)
    decays: str | None = None
    param_groups: tuple = ()
    block_prefix: str | tuple | None = None     # one prefix, or several (the first a params section's default)
    call_map_root: str | None = None
    example_headings: dict = field(default_factory=lambda: dict(EXAMPLE_HEADINGS))
    landing: dict = field(default_factory=lambda: dict(LANDING))
    lines: dict = field(default_factory=dict, compare=False)    # setting -> its line in site.yaml
    lengths: dict = field(default_factory=dict)   # letter of a call's length -> what it is
    fixtures: str | None = None                   # the module a declarative example's inputs name
    numerical_grad: str | None = None             # the project's central differences

    @property
    def block_prefixes(self) -> tuple:
        """The per-block prefixes (`layer{l}.`), the default of a params section first; () for none."""
        if not self.block_prefix:
            return ()
        return (self.block_prefix,) if isinstance(self.block_prefix, str) else tuple(self.block_prefix)

    @property
    def code_folders(self) -> tuple:
        """The folders whose Python the builder reads (the package first)."""
        return (self.package, self.tests)

    @property
    def folders(self) -> tuple:
        """Every folder of the project the builder reads: code, then other inputs."""
        return self.code_folders + tuple(self.inputs)

    @property
    def key(self) -> str:
        """What the block says, without where it says it: runs that read the block are cached on it."""
        from site_builder.base.cache import digest
        return digest(repr({k: v for k, v in self.__dict__.items() if k != "lines"}))

    @property
    def config(self) -> ConfigSpec | None:
        """The landing page's config class (the first of `configs`), or None."""
        return self.configs[0] if self.configs else None

    def config_spec(self, class_name: str) -> ConfigSpec | None:
        """The spec of a config class, by its dotted name or its bare class name."""
        return next((c for c in self.configs if class_name in (c.class_name, c.class_name.rpartition(".")[2])), None)

    def where(self, setting: str) -> str:
        return f"{SITE_FILE}:{self.lines.get(setting, self.lines.get('project', 1))}"

    def owns(self, qualname: str) -> bool:
        """True for a dotted name inside the documented package."""
        return qualname == self.package or qualname.startswith(self.package + ".")

    def axes_for(self, config) -> dict:
        """{field: letter} of a config object's class ({} for a class `configs` does not list)."""
        spec = self.config_spec(type(config).__name__)
        return dict(spec.axes) if spec else {}


class ProjectError(BuildFailed):
    """The project block is missing or wrong: problems with file:line, nothing built."""


_MEMO: dict = {}


def load_project(root: Path) -> Project:
    """The project block of root/content/site.yaml, validated (ProjectError if it is wrong)."""
    from site_builder.gather.content import read_text
    from site_builder.gather.inputs import project_block_read
    with project_block_read():      # a cached result that asks depends on this block, not the whole file
        text, problem = read_text(Path(root) / SITE_FILE, SITE_FILE)
    if problem:
        raise ProjectError([problem])
    key = (str(Path(root).resolve()), text)
    if key not in _MEMO:
        _MEMO.clear()
        _MEMO[key] = _parse(Path(root), text)
    return _MEMO[key]


def _parse(root: Path, text: str) -> Project:
    from site_builder.gather.content import parse_yaml
    data, problem = parse_yaml(text, SITE_FILE)
    if problem:
        raise ProjectError([problem])
    block = data.get("project") if isinstance(data, dict) else None
    if not isinstance(block, dict):
        line = getattr(data, "key_lines", {}).get("project", 1) if isinstance(data, dict) else 1
        what = ("no `project:` block: the builder does not know which package to document" if block is None
                else f"the `project:` block is {yaml_kind(block)}, not a mapping of settings")
        raise ProjectError([Problem(SITE_FILE, line, what,
                                    "add `project:` with `package: NAME` (the folder of the package) and `tests: FOLDER`")])
    problems = []
    lines = dict(getattr(block, "key_lines", {}))
    lines["project"] = getattr(data, "key_lines", {}).get("project", 1)
    for key in block:
        if key not in SETTINGS:
            from site_builder.base.problems import did_you_mean
            problems.append(Problem(SITE_FILE, lines.get(key, 1), "; ".join(filter(None, (f"project.{key}: not a setting", did_you_mean(key, SETTINGS)))),
                                    "the settings are " + ", ".join(SETTINGS)))
    values = {k: block[k] for k in SETTINGS if k in block and block[k] is not None}
    _check_kinds(values, lines, problems)
    misspelt = any(key not in SETTINGS and did_you_mean(key, ["package"]) for key in block)    # said once, above
    if "package" not in values and not block.get("package") and not misspelt:
        problems.append(Problem(SITE_FILE, lines["project"], "project.package is not set: the builder does not know which package to document",
                                "set `package:` to the folder of the package, e.g. `package: mypkg`"))
    if problems:
        raise ProjectError(problems)
    project = Project(package=values["package"], tests=values.get("tests", "tests"),
                      inputs=tuple(values.get("inputs", ())), hooks=values.get("hooks"),
                      page_test=values.get("page_test"),
                      configs=tuple(ConfigSpec(c["class"], dict(c.get("axes") or {}), c.get("init_params"),
                                               tuple((r["match"], dict(r["axes"])) for r in c.get("axes_by_name") or ()))
                                    for c in values.get("configs", ())),
                      probe_sizes=dict(values.get("probe_sizes", {})),
                      decays=values.get("decays"),
                      param_groups=tuple((g["match"], g["group"], bool(g.get("per_block", False)))
                                         for g in values.get("param_groups", ())),
                      block_prefix=_frozen(values.get("block_prefix")), call_map_root=values.get("call_map_root"),
                      example_headings={**EXAMPLE_HEADINGS, **values.get("example_headings", {})},
                      landing={**LANDING, **values.get("landing", {})},
                      lines=lines, lengths=dict(values.get("lengths", {})),
                      fixtures=values.get("fixtures") or _default_fixtures(root, values.get("tests", "tests")),
                      numerical_grad=values.get("numerical_grad"))
    _check_folders(root, project, problems)
    if problems:
        raise ProjectError(problems)
    return project


def _default_fixtures(root, tests):
    """The tests folder's fixtures module (`tests.fixtures`), if the file is there."""
    path = Path(root) / tests / "fixtures.py"
    parts = Path(tests).parts + ("fixtures",)
    return ".".join(parts) if path.is_file() and all(p.isidentifier() for p in parts) else None


def _frozen(value):
    return tuple(value) if isinstance(value, list) else value


def _check_kinds(values: dict, lines: dict, problems: list):
    want = {"package": str, "tests": str, "hooks": str, "page_test": str, "decays": str, "block_prefix": (str, list),
            "call_map_root": str, "inputs": list, "configs": list, "probe_sizes": dict, "param_groups": list,
            "example_headings": dict, "landing": dict, "lengths": dict, "fixtures": str, "numerical_grad": str}
    for key, kind in want.items():
        if key in values and not isinstance(values[key], kind):
            problems.append(Problem(SITE_FILE, lines.get(key, 1), f"project.{key} is {yaml_kind(values[key])}",
                                    f"write {SETTINGS[key]}"))
            values.pop(key)
    _check_probe_sizes(values, lines, problems)
    for i, spec in enumerate(values.get("configs", [])):
        if not (isinstance(spec, dict) and "class" in spec and set(spec) <= CONFIG_KEYS
                and isinstance(spec.get("axes") or {}, dict)):
            problems.append(Problem(SITE_FILE, lines.get("configs", 1), f"project.configs[{i}] is not {{class, axes, init_params}}",
                                    "write each config as `- {class: pkg.config.Config, axes: {field: LETTER}, "
                                    "init_params: pkg.module.init_params}`"))
            values.pop("configs")
            break
    _check_axes_by_name(values, lines, problems)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in values.get("lengths", {}).items()):
        problems.append(Problem(SITE_FILE, lines.get("lengths", 1), "project.lengths has an entry that is not LETTER: WORDS",
                                "write each letter with what it is, e.g. `lengths: {T: sequence length}`"))
        values.pop("lengths")
    _check_groups(values, lines, problems)
    _check_prefixes(values, lines, problems)
    for setting, known in (("example_headings", EXAMPLE_HEADINGS), ("landing", LANDING)):
        for key, text in list(values.get(setting, {}).items()):
            if key not in known or not isinstance(text, str):
                problems.append(Problem(SITE_FILE, lines.get(setting, 1), f"project.{setting}.{key} is "
                                        + (f"not one of {', '.join(known)}" if key not in known else yaml_kind(text)),
                                        f"write {SETTINGS[setting]}"))
                values[setting].pop(key)


def _check_groups(values: dict, lines: dict, problems: list):
    """Each parameter group a {match, group, per_block} whose match is a regular expression."""
    for i, group in enumerate(values.get("param_groups", [])):
        wrong = None
        if not (isinstance(group, dict) and {"match", "group"} <= set(group) <= GROUP_KEYS
                and isinstance(group.get("per_block", False), bool)):
            wrong = "is not {match, group, per_block}"
        else:
            try:
                re.compile(str(group["match"]))
            except re.error as e:
                wrong = f"match {group['match']!r} is not a regular expression ({e})"
        if wrong:
            problems.append(Problem(SITE_FILE, lines.get("param_groups", 1), f"project.param_groups[{i}] {wrong}",
                                    "write each group as `- {match: REGEX, group: NAME, per_block: true}` (per_block: "
                                    "the regex is matched against a per-block name without its block_prefix)"))
            values.pop("param_groups")
            return


def _check_prefixes(values: dict, lines: dict, problems: list):
    """block_prefix: one text or a list of texts, each holding {l} once."""
    prefixes = values.get("block_prefix")
    listed = [prefixes] if isinstance(prefixes, str) else prefixes or []
    if any(not isinstance(p, str) or p.count("{l}") != 1 for p in listed):
        problems.append(Problem(SITE_FILE, lines.get("block_prefix", 1), f"project.block_prefix is {prefixes!r}",
                                "write the prefix with {l} where the block index is, e.g. \"layer{l}.\", or a list of them"))
        values.pop("block_prefix")


def _check_axes_by_name(values: dict, lines: dict, problems: list):
    """Each config's `axes_by_name` is a list of {match: REGEX, axes: {FIELD: LETTER}}."""
    for i, spec in enumerate(values.get("configs", [])):
        for rule in spec.get("axes_by_name") or ():
            fine = isinstance(rule, dict) and set(rule) == {"match", "axes"} and isinstance(rule["axes"], dict)
            try:
                fine = fine and re.compile(str(rule["match"])) is not None
            except re.error:
                fine = False
            if not fine:
                problems.append(Problem(SITE_FILE, lines.get("configs", 1), f"project.configs[{i}].axes_by_name has an entry "
                                        "that is not {match: REGEX, axes: {FIELD: LETTER}}",
                                        "write each as `- {match: src, axes: {src_size: V}}`: arrays whose name the "
                                        "regex finds take that field's size for the letter"))
                values.pop("configs")
                return


def _check_probe_sizes(values: dict, lines: dict, problems: list):
    """Probe sizes name each axis by its size: whole numbers of 3 or more (0, 1 and 2 are sizes
    code makes on its own: keepdims axes, pairs), pairwise distinct, one for every axis letter."""
    sizes, line = values.get("probe_sizes", {}), lines.get("probe_sizes", 1)
    seen = {}
    for letter, size in sizes.items():
        if not isinstance(size, int) or isinstance(size, bool) or size < 3:
            problems.append(Problem(SITE_FILE, line, f"project.probe_sizes.{letter} is {size!r}",
                                    "give each axis a whole number of 3 or more (0, 1 and 2 are sizes code makes on its own)"))
        elif size in seen:
            problems.append(Problem(SITE_FILE, line, f"project.probe_sizes gives {seen[size]} and {letter} the same size, {size}",
                                    "give each letter a size of its own: a probe names an axis by its size"))
        else:
            seen[size] = letter
    if sizes and isinstance(values.get("configs"), list):
        letters = {v for c in values["configs"] if isinstance(c, dict) and isinstance(c.get("axes"), dict)
                   for v in c["axes"].values()}
        for letter in sorted(map(str, letters - set(sizes))):
            problems.append(Problem(SITE_FILE, line, f"project.probe_sizes has no size for the axis letter {letter}",
                                    f"add `{letter}: SIZE` to probe_sizes"))


def _check_folders(root: Path, project: Project, problems: list):
    if not (root / project.package / "__init__.py").is_file():
        problems.append(Problem(SITE_FILE, project.lines.get("package", 1),
                                f"project.package names {project.package}/, which is not a package folder at the project root "
                                f"({'no such folder' if not (root / project.package).is_dir() else 'it has no __init__.py'})",
                                "set `package:` to the folder of the package to document"))
    for setting, folder in [("tests", project.tests)] + [("inputs", f) for f in project.inputs]:
        if not (root / folder).is_dir():
            problems.append(Problem(SITE_FILE, project.lines.get(setting, 1), f"project.{setting} names {folder}/, which is not a folder "
                                    f"at the project root", f"create it, or set `{setting}:` to the folder it is"))
    if project.hooks and not (root / project.hooks).is_file():
        problems.append(Problem(SITE_FILE, project.lines.get("hooks", 1), f"project.hooks names {project.hooks}, which is not a file",
                                "create it, or remove the setting"))


class _NotThere(Exception):
    """A dotted name whose module or attribute is not there (not an error inside the module)."""


def resolve(dotted: str, project: Project | None = None, setting: str | None = None):
    """The object a dotted name names (`pkg.module.name`): imported on first use. With the
    project and the setting that names it (`configs[0].class`), a name that is not there is a
    ProjectError at that setting's line; an error inside the module it imports is the module's."""
    module, _, name = dotted.rpartition(".")
    try:
        if not module:
            raise _NotThere("it is no dotted name")
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name and (module == e.name or module.startswith(e.name + ".")):
                raise _NotThere(f"there is no module {e.name}") from None
            raise
        if not hasattr(found, name):
            public = [n for n in vars(found) if not n.startswith("_")]
            raise _NotThere("; ".join(filter(None, (f"{module} has no {name}", did_you_mean(name, public)))))
        return getattr(found, name)
    except _NotThere as e:
        if project is None:
            raise LookupError(f"{dotted}: {e}") from None
        top = setting.split(".")[0].split("[")[0]
        raise ProjectError([Problem(SITE_FILE, project.lines.get(top, project.lines.get("project", 1)),
                                    f"project.{setting} names {dotted}, but {e}",
                                    "write it as package.module.name, a name the package defines")]) from None


def _named(dotted: str, project: Project, setting: str):
    """resolve() for check_names: a name that is not there is its ProjectError; an error raised
    inside the module it imports (the package is broken) is None here, left to the stage that
    runs that code, which reports it at the package's line."""
    try:
        return resolve(dotted, project, setting)
    except ProjectError:
        raise
    except Exception:
        return None


def check_names(project: Project):
    """Import every name the block gives (the config classes, their init_params, the decay rule,
    the call map's root) and check each config's axes are its fields: one ProjectError at the
    block's line for the first that is not there. Run before anything runs the package."""
    import dataclasses
    for i, spec in enumerate(project.configs):
        cls = _named(spec.class_name, project, f"configs[{i}].class")
        if spec.init_params:
            _named(spec.init_params, project, f"configs[{i}].init_params")
        if cls is None:
            continue
        fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
        fields |= {n for n in dir(cls) if not n.startswith("_")}
        for field_name in spec.axes:
            if field_name not in fields:
                raise ProjectError([Problem(SITE_FILE, project.lines.get("configs", 1),
                                            "; ".join(filter(None, (f"project.configs[{i}].axes names {field_name}, which is no "
                                                                    f"field of {spec.class_name}", did_you_mean(field_name, fields)))),
                                            "give each axis letter to a field (or property) of the config class")])
    for setting in ("decays", "call_map_root", "numerical_grad"):
        if getattr(project, setting):
            _named(getattr(project, setting), project, setting)


def hooks_name(project: Project) -> str:
    """The dotted name the hooks file is imported under: its path (`content/hooks.py` is
    `content.hooks`), so that an example importing it by that name and the builder share one
    module; HOOKS_MODULE when the path is no dotted name."""
    parts = Path(project.hooks or "").with_suffix("").parts
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else HOOKS_MODULE


def hooks_module(root: Path, project: Project):
    """The hooks module, imported from its file (None if the project names none). The file is
    read on every call: an edit is seen by a long-lived process (serve), and a cached run that
    calls a hook records the file as one of its inputs (site_builder/gather/inputs.py)."""
    if not project.hooks:
        return None
    path = (Path(root) / project.hooks).resolve()
    name = hooks_name(project)
    source = path.read_bytes()
    for known in (name, HOOKS_MODULE):      # an edited file is imported again (serve sees the edit)
        loaded = sys.modules.get(known)
        if (loaded is not None and Path(getattr(loaded, "__file__", None) or "").resolve() == path
                and getattr(loaded, "__source__", None) == source):
            sys.modules[name] = sys.modules[HOOKS_MODULE] = loaded
            return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__source__ = source
    sys.modules[name] = sys.modules[HOOKS_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:
        for known in (name, HOOKS_MODULE):      # half-built: the next look-up imports it again
            sys.modules.pop(known, None)
        if not isinstance(e, Exception):
            raise
        raise ProjectError([Problem(project.hooks, _line_in(e, path), f"the hooks file cannot be imported: "
                                    f"{type(e).__name__}: {e}", "fix it; the builder imports it for its hooks")]) from None
    return module


def _line_in(exc: BaseException, path: Path) -> int:
    """The line of `path` where exc was raised (a syntax error's own line), else 0."""
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == path:
        return exc.lineno or 0
    import traceback
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == path]
    return lines[-1] if lines else 0


def hook(root: Path, project: Project, name: str):
    """The hooks module's function `name`, or None when there is no such hook."""
    module = hooks_module(root, project)
    return getattr(module, name, None) if module is not None else None


def project_folders(root: Path) -> tuple:
    """The project's folders (project.folders), or () when the block cannot be read: for what
    runs before or beside a build (the output and cache checks, serve's watcher), where the
    build itself reports what is wrong with the block."""
    try:
        return load_project(root).folders
    except ProjectError:
        return ()


def call_hook(root: Path, project: Project, name: str, *args):
    """hook(name)(*args), or None without the hook; a hook that raises is ProjectError, one line
    at the line of the hooks file that raised."""
    fn = hook(root, project, name)
    if fn is None:
        return None
    try:
        return fn(*args)
    except Exception as e:
        path = (Path(root) / project.hooks).resolve()
        raise ProjectError([Problem(project.hooks, _line_in(e, path), f"the hook {name}() raised {type(e).__name__}: {e}",
                                    f"fix it; the builder calls it ({HOOK_USES.get(name, 'see content/README.md')})")]) from None


# hook -> what the builder calls it for, in messages
HOOK_USES = {"documented_config": "for the config the site documents",
             "training_runs": "for the training runs the pages read",
             "text_vocabularies": "for the vocabularies a playable text may name"}
