"""The build cache reruns exactly what a change touches, and examples run in parallel give the
same bytes as examples run one by one. On a small repository in a temporary folder with its own
copy of model/ (so edits never touch the real one) and two example modules that import
different parts of the model."""
import pytest

from site_builder.build import build
from site_builder.base.cache import BuildCache
from site_builder.run.examples import dependency_files
from tests.conftest import ROOT, mini_repo, with_project
from tests.test_build_errors import SITE, PAGE as ERRORS_PAGE

PAGE = ERRORS_PAGE[:ERRORS_PAGE.index("    symbols:")] + """    examples:
      - {title: One comparison, run: "grad:compare"}
      - {title: A second comparison, run: "grad:compare_twice"}
      - {title: A schedule, run: "sched:schedule"}
---
Body.
"""
GRAD = """import numpy as np
from model.gradcheck import rel_error
from site_builder.run.examples import ExampleResult, table


def compare():
    return ExampleResult([table(["error"], [[rel_error(np.ones(3), np.arange(3.0))]])], "hand-picked")


def compare_twice():
    return ExampleResult([table(["error"], [[2 * rel_error(np.ones(3), np.arange(3.0))]])], "hand-picked")
"""
SCHED = """from model.optim import noam_lr
from site_builder.run.examples import ExampleResult, table


def schedule():
    return ExampleResult([table(["t", "lr"], [[t, noam_lr(t, 512)] for t in (1, 10, 100)])], "noam_lr")
"""


@pytest.fixture
def mini(tmp_path):
    return mini_repo(tmp_path, SITE, PAGE, {"grad": GRAD, "sched": SCHED}, copy=("model",))


def counts(root, cache_dir, jobs=1):
    result = build(root, root / "site", strict=False, cache_dir=cache_dir, jobs=jobs)
    return result.examples_run, result.examples_cached


def touch(path, line="# an edit\n"):
    path.write_text(path.read_text() + line)


def replace(path, old, new):
    text = path.read_text()
    assert text.count(old) == 1, f"{path.name}: {old!r}"
    path.write_text(text.replace(old, new))


def _function_span(lines, name):
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(("def ", "class ", "@"))), len(lines))
    return start, end


def swap_functions(path, first, second):
    """Exchange two top-level functions (each with the blank lines after it), `first` above `second`."""
    lines = path.read_text().splitlines(keepends=True)
    (a, a_end), (b, b_end) = _function_span(lines, first), _function_span(lines, second)
    assert a_end <= b, f"{first} is not above {second}"
    path.write_text("".join(lines[:a] + lines[b:b_end] + lines[a_end:b] + lines[a:a_end] + lines[b_end:]))


def remove_function(path, name):
    lines = path.read_text().splitlines(keepends=True)
    start, end = _function_span(lines, name)
    path.write_text("".join(lines[:start] + lines[end:]))


@pytest.fixture
def own_model(mini, monkeypatch):
    """The mini repository's model/ imported in place of the repository's, for this test: the
    examples' children then run the copy's code (a copy whose modules are imported from another
    folder keys every file on its bytes)."""
    import sys
    held = {name: module for name, module in sys.modules.items() if name == "model" or name.startswith("model.")}
    for name in held:
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(mini))
    yield mini
    for name in [n for n in sys.modules if n == "model" or n.startswith("model.")]:
        del sys.modules[name]
    sys.modules.update(held)


def fresh_counts(root, cache_dir):
    """counts() with the copy's model/ imported again, as each `build_site.py` run (and serve,
    site_builder/serve/rebuild.py) imports the code as it is now."""
    import sys
    for name in [n for n in sys.modules if n == "model" or n.startswith("model.")]:
        del sys.modules[name]
    return counts(root, cache_dir)


def test_editing_one_function_reruns_exactly_the_examples_that_entered_it(own_model, tmp_path):
    """An example is keyed on the text and first line of each function its run entered, and on
    the module-level code of the files it imports: an edit inside one function reruns only the
    examples that reached it; a move reruns the examples whose functions' lines changed (their
    steps cite line numbers), and none other; adding or deleting a function reruns the file's
    importers (a new name can shadow an old one)."""
    mini, cache = own_model, tmp_path / "cache"
    optim, gradcheck = mini / "model" / "optim.py", mini / "model" / "gradcheck.py"
    touch(optim, "\n\ndef _spare():\n    return 0\n")                   # for the deletion at the end
    assert fresh_counts(mini, cache) == (3, 0)
    replace(optim, "min(step ** -0.5,", "min(step ** -0.50,")           # inside noam_lr: sched only
    assert fresh_counts(mini, cache) == (1, 2)
    replace(gradcheck, "np.float64)\n    return float(", "np.float64)  # edited\n    return float(")   # rel_error
    assert fresh_counts(mini, cache) == (2, 1)
    reused = build(mini, mini / "site", strict=False, cache_dir=cache).pages_cached    # nothing changed
    replace(optim, "warmup_steps:\n", "warmup_steps:  # edited\n")      # warmup_cosine_lr, which nothing calls
    replace(gradcheck, "h=1e-5):\n", "h=1e-5):  # edited\n")           # numerical_grad, which nothing calls
    # No page read those lines (render/pages/reads.py): every page is reused, no example looked up.
    assert fresh_counts(mini, cache) == (0, 0)
    assert build(mini, mini / "site", strict=False, cache_dir=cache).pages_cached == reused
    swap_functions(optim, "decays", "clip_grad_norm")                 # a move that shifts neither entered function
    assert fresh_counts(mini, cache)[0] == 0
    swap_functions(optim, "warmup_cosine_lr", "noam_lr")              # noam_lr moves: its lines are cited
    assert fresh_counts(mini, cache) == (1, 2)
    swap_functions(optim, "noam_lr", "warmup_cosine_lr")              # back: a state seen before, page and all
    assert fresh_counts(mini, cache) == (0, 0)
    touch(gradcheck, "\n\ndef _added(x):\n    return x\n")              # a new function: every importer
    assert fresh_counts(mini, cache) == (2, 1)
    remove_function(optim, "_spare")                                  # a deleted one too
    assert fresh_counts(mini, cache) == (1, 2)
    fresh = tmp_path / "fresh"
    build(mini, fresh, use_cache=False)
    files = lambda d: {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}
    assert files(mini / "site") == files(fresh)


def test_editing_a_model_file_reruns_exactly_the_examples_that_import_it(own_model, tmp_path):
    """The per-function rule (site_builder/gather/function_keys.py) on the parts of a file no
    function holds: its module-level code reruns every example that imports the file, a file no
    example imports reruns none, and a comment outside every function reruns nothing."""
    mini, cache = own_model, tmp_path / "cache"
    assert fresh_counts(mini, cache) == (3, 0)
    assert fresh_counts(mini, cache) == (0, 0)                # the page is cached: its examples are not read
    touch(mini / "content" / "pages" / "mini.md", "A sentence.\n")
    assert fresh_counts(mini, cache) == (0, 3)                # the page is gathered again, from cached examples
    replace(mini / "model" / "optim.py", '"_w")', '"_w", "_b")')      # module level: only sched imports it
    assert fresh_counts(mini, cache) == (1, 2)
    replace(mini / "model" / "gradcheck.py", "import numpy as np", "import numpy as np  # an edit")
    assert fresh_counts(mini, cache) == (0, 0)                # a comment no page quotes: nothing is looked up
    replace(mini / "model" / "gradcheck.py", "import numpy as np  # an edit", "import numpy as np\nEDITED = 1")
    assert fresh_counts(mini, cache) == (2, 1)                # module level: both grad examples import it
    touch(mini / "content" / "pages" / "mini.md", "More body.\n")    # content is not an example input
    touch(mini / "model" / "generate.py", "EDITED = 1\n")             # no example imports it
    assert fresh_counts(mini, cache) == (0, 3)


def test_example_dependencies_follow_imports_transitively(mini):
    """The static part of an example's inputs: its module and every repository module it
    imports, transitively (the rest is recorded as it runs: tests/test_incremental.py)."""
    deps = {m: {f.relative_to(mini).as_posix() for f in dependency_files(mini, mini / "content" / "examples" / f"{m}.py")}
            for m in ("grad", "sched")}
    assert {"model/__init__.py", "model/gradcheck.py"} <= deps["grad"]       # importing model.x runs model/__init__.py
    assert "model/optim.py" in deps["sched"] and "model/optim.py" not in deps["grad"]
    assert "model/config.py" not in deps["grad"]


def test_parallel_and_serial_builds_are_byte_identical(mini, tmp_path):
    build(mini, tmp_path / "serial", use_cache=False, jobs=1)
    build(mini, tmp_path / "parallel", use_cache=False, jobs=2)
    files = lambda d: {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}
    assert files(tmp_path / "serial") == files(tmp_path / "parallel")


def test_a_corrupt_cache_entry_is_a_miss(tmp_path):
    cache = BuildCache(tmp_path)
    cache.put("examples", "ab" * 32, {"x": 1})
    cache.path("examples", "ab" * 32).write_bytes(b"not a pickle")
    assert cache.get("examples", "ab" * 32) is None


def test_editing_one_page_regathers_that_page_only(mini, tmp_path):
    cache = tmp_path / "cache"
    (mini / "content" / "pages" / "other.md").write_text(PAGE.replace("id: mini", "id: other").replace("title: Mini", "title: Other"))
    (mini / "content" / "site.yaml").write_text(with_project(SITE.replace("nav: [mini]", "nav: [mini, other]")))
    first = build(mini, mini / "site", cache_dir=cache)
    assert first.pages_cached == 0
    assert build(mini, mini / "site", cache_dir=cache).pages_cached == 2
    touch(mini / "content" / "pages" / "other.md", "More body.\n")
    again = build(mini, mini / "site", cache_dir=cache)
    assert again.pages_cached == 1 and "More body." in (mini / "site" / "other.html").read_text()
    fresh = tmp_path / "fresh"
    build(mini, fresh, use_cache=False)
    files = lambda d: {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}
    assert files(mini / "site") == files(fresh)


def test_retrain_trains_each_run_once_per_build(tmp_path, monkeypatch):
    """--retrain ignores the cache once per run and build; the examples that read a run after
    that get the one just trained (it used to retrain for every example). The project's two
    runs (content/hooks.py) through the builder's cached_run."""
    from types import SimpleNamespace
    from content import hooks
    from model import train_seq2seq
    from site_builder.run import training_run
    trained = []
    monkeypatch.setattr(hooks, "run_training", lambda root, cfg: trained.append("lm") or SimpleNamespace())
    real = train_seq2seq.train
    monkeypatch.setattr(train_seq2seq, "train", lambda **kw: trained.append("reversal") or real(**kw))
    monkeypatch.setattr(training_run, "_state", {"cache": BuildCache(None), "retrain": False})
    small = dict(steps=2, eval_every=2, num_eval=2, log_every=1)
    for retrain, expected in ((False, ["lm", "reversal"]), (False, []), (True, ["lm", "reversal"])):
        training_run.configure(BuildCache(tmp_path / "cache"), retrain)
        trained.clear()
        for _ in range(3):       # three examples reading each run
            hooks.trained_run(ROOT)
            hooks.reversal_run(ROOT, **small)
        assert trained == expected


# A project's runs as its hooks define them: each logs to a file when it trains (the runs
# train in child processes), and is cached by the builder's machinery.
RUN_HOOKS = """from pathlib import Path
from types import SimpleNamespace

from site_builder.run import training_run

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT.parent / "trained.log"


def train(what):
    with open(LOG, "a") as f:
        f.write(what + "\\n")
    return LOG.read_text().split().count(what)


def lm_run(root=None):
    key = training_run.run_key(root or ROOT, "lm")
    return training_run.cached_run("lm", key, lambda: SimpleNamespace(label=f"run {train('lm')}"))


def reversal_run(root=None):
    return training_run.cached_run("reversal", training_run.run_key(root or ROOT, "reversal"), lambda: train("reversal"))


def training_runs():
    return {"lm": ("the language model", lm_run), "reversal": ("the other run", reversal_run)}


def documented_config():
    from model.config import ModelConfig
    return ModelConfig(vocab_size=65), ""
"""
RUN_READER = """from content.hooks import lm_run
from site_builder.run.examples import ExampleResult, table


def reader():
    return ExampleResult([table(["trained"], [[lm_run().label]])], "the run")
"""


def test_retrain_trains_again_and_reruns_exactly_the_examples_that_read_the_runs(tmp_path, monkeypatch):
    """--retrain with a warm cache: the runs train again, the examples reading them run again,
    the others stay cached (it used to do nothing once pages and examples were cached)."""
    from site_builder.run import training_run
    monkeypatch.setattr(training_run, "_state", {"cache": BuildCache(None), "retrain": False})
    page = PAGE.replace('      - {title: A schedule, run: "sched:schedule"}',
                        '      - {title: A schedule, run: "sched:schedule"}\n      - {title: The run, run: "runs:reader"}')
    mini = mini_repo(tmp_path, SITE, page, {"grad": GRAD, "sched": SCHED, "runs": RUN_READER})
    (mini / "content" / "hooks.py").write_text(RUN_HOOKS)
    log = tmp_path / "trained.log"
    trained = lambda: log.read_text().split() if log.exists() else []
    cache = tmp_path / "cache"
    first = build(mini, mini / "site", cache_dir=cache, jobs=1)
    assert (first.examples_run, sorted(trained())) == (4, ["lm", "reversal"])
    assert "run 1" in (mini / "site" / "mini.html").read_text()
    again = build(mini, mini / "site", cache_dir=cache, jobs=1)
    assert (again.examples_run, again.pages_cached, len(trained())) == (0, 1, 2)
    retrained = build(mini, mini / "site", cache_dir=cache, jobs=1, retrain=True)
    assert sorted(trained()[2:]) == ["lm", "reversal"]
    assert (retrained.examples_run, retrained.examples_cached, retrained.pages_cached) == (1, 3, 0)
    assert "run 2" in (mini / "site" / "mini.html").read_text()


def run_reader_repo(tmp_path, monkeypatch):
    """The mini repository with an example that reads a training run (runs:reader), trained
    under a fresh training-run state."""
    from site_builder.run import training_run
    monkeypatch.setattr(training_run, "_state", {"cache": BuildCache(None), "retrain": False})
    page = PAGE.replace('      - {title: A schedule, run: "sched:schedule"}',
                        '      - {title: A schedule, run: "sched:schedule"}\n      - {title: The run, run: "runs:reader"}')
    mini = mini_repo(tmp_path, SITE, page, {"grad": GRAD, "sched": SCHED, "runs": RUN_READER}, copy=("model",))
    (mini / "content" / "hooks.py").write_text(RUN_HOOKS)
    return mini


def test_an_example_that_reads_a_run_is_keyed_on_the_packages_syntax_trees_not_its_bytes(tmp_path, monkeypatch):
    """A training run's key reads every package file for its syntax tree, and so does each
    example that reads the run: a comment (a new text of no function it entered) reruns none of
    them, where it used to rerun every reader; a code edit anywhere retrains and reruns them."""
    mini = run_reader_repo(tmp_path, monkeypatch)
    log = tmp_path / "trained.log"
    trained = lambda: log.read_text().split() if log.exists() else []
    cache = tmp_path / "cache"
    assert build(mini, mini / "site", cache_dir=cache, jobs=1).examples_run == 4
    touch(mini / "model" / "ops.py", "# a comment, in no function\n")
    commented = build(mini, mini / "site", cache_dir=cache, jobs=1)
    assert (commented.examples_run, len(trained())) == (0, 2), "no reader runs again, nothing trains"
    touch(mini / "model" / "ops.py", "EDITED = 1\n")
    edited = build(mini, mini / "site", cache_dir=cache, jobs=1)
    assert len(trained()) == 4 and edited.examples_run >= 1
    assert "run 2" in (mini / "site" / "mini.html").read_text(), "the reader shows the run trained again"


def test_an_example_that_reads_a_run_is_keyed_on_the_project_block_not_the_whole_site_yaml(tmp_path, monkeypatch):
    """Reading a run reads site.yaml's `project:` block (the package to fingerprint): a new
    description or title reruns no reader, where it used to rerun every one; a change of the
    block's values reruns them."""
    from site_builder.gather.inputs import InputState
    mini = run_reader_repo(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    assert build(mini, mini / "site", cache_dir=cache, jobs=1).examples_run == 4
    site_yaml = mini / "content" / "site.yaml"
    text = site_yaml.read_text()
    block = lambda: InputState(mini).part("content/site.yaml", "project")
    before = block()
    site_yaml.write_text("description: A description added above everything.\n" + text.replace("title: ", "title: Retitled ", 1))
    assert block() == before
    assert build(mini, mini / "site", cache_dir=cache, jobs=1).examples_run == 0, "no example reruns"
    site_yaml.write_text(text.replace("  tests: tests\n", "  tests: tests\n  inputs: [data, content]\n", 1)
                         if "  inputs:" not in text else text.replace("  inputs: [data]", "  inputs: [data, content]", 1))
    assert block() != before
    assert build(mini, mini / "site", cache_dir=cache, jobs=1).examples_run >= 1, "the run's readers rerun"


def test_a_runs_key_is_on_the_package_the_recipe_and_the_inputs_it_names(tmp_path):
    """The training runs' key (site_builder/run/training_run.py run_key): the syntax trees of the
    package and of the hooks file (the recipe), and what the recipe passes (its corpus, its
    configs); a comment changes none of them."""
    from site_builder.run import training_run
    mini = mini_repo(tmp_path, SITE, PAGE, {}, copy=("model",))
    key = lambda corpus=b"the corpus": training_run.run_key(mini, "language model", corpus, "TrainConfig(steps=600)")
    first = key()
    assert key() == first and key(b"another corpus") != first
    touch(mini / "model" / "ops.py", "# a comment\n")
    assert key() == first, "a comment does not retrain"
    touch(mini / "model" / "ops.py", "EDITED = 1\n")
    edited = key()
    assert edited != first, "an edit of the package trains again"
    touch(mini / "content" / "hooks.py", "# a comment\n")
    assert key() == edited
    touch(mini / "content" / "hooks.py", "SAMPLE_PROMPT = 'JULIET:'\n")
    assert key() != edited, "an edit of the recipe trains again"
