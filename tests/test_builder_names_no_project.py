"""site_builder/ and templates/ name nothing of the project they document (issue 25).

What the builder must know of the project comes from the `project:` block of content/site.yaml
and the hooks module it names (site_builder/gather/project.py). This test scans every file of
site_builder/ and templates/, line by line, for the names of this project, and fails listing
each hit as file:line: name. The names are computed from the project, not typed, wherever the
project can tell them:

- the package (`project.package`) used as a package: `pkg.x`, `pkg/`, `"pkg"`, `import pkg`; and
  in templates/, whose text every project's pages show, as a word too ("Why does the model
  need it?" is a label of this project's: site.yaml `labels:` says it);
- the tests folder where a string starts a path or a module in it (`"tests/x.py"`, `"tests.x"`)
  or the first part of a path or module is compared with it (`[0] == "tests"`), and the input
  folders as a path or a string (`data/`, `"data"`);
- the package's module names (`transformer`, `seq2seq`) and its modules' file names (`train.py`);
- every public class the package defines (`ModelConfig`, `AdamW`, `CharTokenizer`);
- every field of the config classes the project block names (`vocab_size`, `d_model`), and
  the axis names it gives them (`head_dim`);
- the files in the input folders, by name and by stem (data/shakespeare.txt: `shakespeare`);
- the values of the project block that are text of its own (`block_prefix`: `b{l}.`), and the
  strings the hooks module holds at its top level (a prompt, a vocabulary), whole and by
  their upper-case words (a speaker's name);

plus a short typed list of domain words (DOMAIN_WORDS) that the project's pages use, which no
setting can tell: each must occur in content/pages, or it is not a word of this project.

A word that is both generic and the project's (GENERIC: a module called `data`, `config` or
`train`, a field called `dtype`, an input file called SOURCE.md) is matched only where it
names the project's module, folder or file (`model.data`, `data/`, `"data"`, `SOURCE.md`),
never as a word: the builder may well speak of data, configs and sources of its own. So is
the tests folder's name, `tests`, which is also the builder's own word (the reference role
`tests`, a count of tests). Bare `token` and `tokenizer` are such words too (TeX tokens,
Pygments token classes, serve's state token, Python's tokenizer), so the list names the
project's kind of token instead (`token embedding`); its tokenizer class is matched as a class.

A default the configuration can change is no name of the project: the tests folder's default
(`tests`) is spelled once, in site_builder/gather/project.py, which is not scanned for it.
"""
import ast
import re
from pathlib import Path

from site_builder.gather import project as project_module
from site_builder.gather.project import Project, load_project

ROOT = Path(__file__).resolve().parent.parent
PROJECT_FILE = Path(project_module.__file__).resolve().relative_to(ROOT).as_posix()
SCANNED = ("site_builder", "templates")
SKIPPED_PARTS = {"__pycache__"}

# Words both generic and the project's: matched only where they name its module, folder or file.
GENERIC = {"config", "data", "train", "ops", "optim", "runs", "generate", "gradcheck", "source", "dtype",
           "terminated"}
# Words of the project's domain that no setting tells (each must occur in content/pages).
DOMAIN_WORDS = ("transformer", "attention", "vocab", "corpus", "token embedding", "encoder",
                "decoder", "seq2seq", "language model", "layer norm", "positional encoding", "label smoothing")
# A domain word's ordinary English longer form, which the builder may use: a playable text's
# `vocabulary` is the set of characters it may hold, in any package (gather/playground.py).
ENGLISH = {"vocab": "ular"}


def quoted(name):
    return rf"""["']{re.escape(name)}["']"""


def as_word(name, case=False):
    """`name` as a word of its own (`_` joins words, as in Python names)."""
    return (r"" if case else r"(?i)") + rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])"


def as_prefix(word):
    """A domain word, case aside, at the start of a word (`vocab` in `vocab_size`, `src_vocab`)."""
    english = f"(?!{ENGLISH[word]})" if word in ENGLISH else ""
    return r"(?i)(?<![A-Za-z])" + r"[ _-]?".join(re.escape(part) for part in word.split()) + english


def package_modules(project):
    """[(module name, path)] of the package's .py files (its __init__ aside)."""
    folder = ROOT / project.package
    return [(p.stem, p) for p in sorted(folder.rglob("*.py"))
            if p.stem != "__init__" and not SKIPPED_PARTS & set(p.parts)]


def class_defs(path):
    return [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.ClassDef)]


def config_fields(project):
    """The fields of the config classes the project block names, and their axes' field names."""
    fields = set()
    for spec in project.configs:
        module, _, name = spec.class_name.rpartition(".")
        path = ROOT / (module.replace(".", "/") + ".py")
        for node in class_defs(path):
            if node.name == name:
                fields |= {s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                           and isinstance(s.target, ast.Name)}
        fields |= set(spec.axes)
    return fields


def hook_strings(project):
    """The strings the hooks module holds at its top level (constants, and the strings of
    tuples, lists and dicts of them), docstring aside."""
    if not project.hooks:
        return set()
    tree = ast.parse((ROOT / project.hooks).read_text(encoding="utf-8"))
    found = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            found |= {n.value for n in ast.walk(stmt.value)
                      if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value.strip()) >= 3}
    return found


def project_names(project: Project) -> list:
    """[(name shown in a hit, compiled pattern)]: every name of this project the builder must not spell."""
    names, pkg = [], project.package
    names.append((f"{pkg} (the package)", rf"(?<![\w-]){re.escape(pkg)}(?:\.(?=[A-Za-z_])|/)|{quoted(pkg)}"
                                          rf"|\b(?:from|import)\s+{re.escape(pkg)}\b"))
    tests = re.escape(project.tests)
    names.append((f"{project.tests} (the tests folder)",
                  rf"""["']{tests}(?:/|\.[A-Za-z_])|\[0\]\s*[!=]=\s*{quoted(project.tests)}"""))
    for folder in project.inputs:
        names.append((f"{folder}/ (an input folder)", rf"(?<![\w-]){re.escape(folder)}/|{quoted(folder)}"))
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and not SKIPPED_PARTS & set(path.parts):
                names.append((f"{path.name} (an input file)", as_word(path.name)))
                if path.stem.lower() not in GENERIC:
                    names.append((f"{path.stem} (an input file's stem)", as_word(path.stem)))
    for module, path in package_modules(project):
        names.append((f"{module}.py (a module of {pkg})", rf"(?<![\w/.]){re.escape(module)}\.py\b"))
        if module.lower() not in GENERIC:
            names.append((f"{module} (a module of {pkg})", as_word(module)))
        for node in class_defs(path):
            if not node.name.startswith("_") and node.name.lower() not in GENERIC:
                names.append((f"{node.name} (a class of {pkg})", as_word(node.name, case=True)))
    for field in sorted(config_fields(project)):
        if field.lower() not in GENERIC:
            names.append((f"{field} (a config field)", as_word(field, case=True)))
    for prefix in project.block_prefixes:
        names.append((f"{prefix} (project.block_prefix)", re.escape(prefix)))
    for text in sorted(hook_strings(project)):
        names.append((f"{text!r} (a string of {project.hooks})", re.escape(text)))
        names += [(f"{word} (a word of {project.hooks})", as_word(word, case=True))
                  for word in sorted(set(re.findall(r"\b[A-Z]{3,}\b", text)))]
    names += [(f"{word} (a domain word)", as_prefix(word)) for word in DOMAIN_WORDS]
    return [(shown, re.compile(pattern)) for shown, pattern in dict(names).items()]


def scanned_files():
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and not SKIPPED_PARTS & set(path.parts):
                yield path


def hits(project: Project) -> list:
    """["file:line: name, name"] of every line of the builder and the templates that names the project."""
    names = project_names(project)
    in_templates = names + [(f"{project.package} (the package, as a word)", re.compile(as_word(project.package)))]
    # The tests folder's default is Project's, spelled in the module that reads the block.
    default_tests = project.tests == Project.tests
    found = []
    for path in scanned_files():
        rel = path.relative_to(ROOT).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue                # a binary file spells no name
        for number, line in enumerate(text.splitlines(), 1):
            named = [shown for shown, pattern in (in_templates if rel.startswith("templates/") else names)
                     if pattern.search(line)
                     and not (default_tests and rel == PROJECT_FILE and "(the tests folder)" in shown)]
            if named:
                found.append(f"{rel}:{number}: {', '.join(named)}")
    return found


def test_the_domain_words_are_this_projects():
    pages = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "content" / "pages").glob("*.md")))
    missing = [w for w in DOMAIN_WORDS if not re.search(as_prefix(w), pages)]
    assert not missing, f"not words of this project's pages (drop them from DOMAIN_WORDS): {missing}"


def test_the_names_are_computed_from_the_project():
    shown = [s for s, _ in project_names(load_project(ROOT))]
    for expected in ("ModelConfig (a class", "vocab_size (a config field)", "shakespeare (an input file's stem)",
                     "data/ (an input folder)", "transformer (a module"):
        assert any(s.startswith(expected) for s in shown), expected
    assert not any(s.startswith(("dtype ", "config ")) for s in shown)     # generic: as module or field only


def test_the_scan_finds_a_name_it_should(tmp_path, monkeypatch):
    """The scan is not blind: a line spelling the package, a class or a field is a hit."""
    project = load_project(ROOT)
    names = project_names(project)
    for line in (f"from {project.package}.config import X", f'root / "{project.package}"', "cfg.vocab_size",
                 "ModelConfig(", "the corpus", f"p = f\"{project.block_prefix}\"", '"tests/x.py"'):
        assert any(p.search(line) for _, p in names), line
    for line in ("the view model.", "site_model = 1", "dtype=float", "token_hex(4)", "data-token", "JSONEncoder"):
        assert not any(p.search(line) for _, p in names), line


def test_the_builder_names_nothing_of_the_project():
    found = hits(load_project(ROOT))
    assert not found, f"{len(found)} lines of the builder name this project:\n" + "\n".join(found)
