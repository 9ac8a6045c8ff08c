"""An incremental build equals a clean build: one regression test per way it once did not
(issue 12), on a small repository in a temporary folder. Each test ends by comparing the
incremental site with a `--no-cache` build of the same tree."""
import os
import subprocess
import sys

import pytest

from site_builder.build import build
from site_builder.base.problems import BuildFailed
from tests.conftest import ROOT, mini_repo
from tests.test_build_errors import SITE, PAGE

READER = """from pathlib import Path
from site_builder.run.examples import ExampleResult, table

WORDS = Path(__file__).resolve().parent.parent.parent / "data" / "words.txt"


def count():
    words = WORDS.read_text().split()
    return ExampleResult([table(["words"], [[len(words)]])], "data/words.txt")


def listing():
    names = sorted(p.name for p in WORDS.parent.iterdir())
    return ExampleResult([table(["files"], [[", ".join(names)]])], "data/")
"""


def page(*runs):
    lines = "".join(f'      - {{title: Example {i}, run: "{r}"}}\n' for i, r in enumerate(runs))
    return PAGE.replace('      - {title: One comparison, run: "mini:compare"}\n', lines)


def files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def outcome(root, out, **kw):
    """('ok', files) or ('failed', problem lines) of one build."""
    try:
        build(root, out, **kw)
    except BuildFailed as e:
        return "failed", [str(p) for p in e.problems]
    return "ok", files(out)


def assert_same_as_clean(root, tmp_path, cache):
    """The incremental build of this tree gives what a no-cache build gives."""
    incremental = outcome(root, root / "site", cache_dir=cache, jobs=2)
    clean = outcome(root, tmp_path / "clean", use_cache=False, jobs=2)
    assert incremental[0] == clean[0], (incremental[1], clean[1])
    assert (incremental[1] == clean[1] if clean[0] == "failed"
                                           else incremental[1] == files(tmp_path / "clean"))
    return incremental


@pytest.fixture
def words(tmp_path):
    root = mini_repo(tmp_path, SITE, page("reader:count", "reader:listing"), {"reader": READER})
    (root / "data").unlink()
    (root / "data").mkdir()
    (root / "data" / "words.txt").write_text("to be or not to be\n")
    (root / "data" / "shakespeare.txt").symlink_to(ROOT / "data" / "shakespeare.txt")   # the config's vocabulary
    return root


def test_editing_a_data_file_an_example_reads_reruns_it(words, tmp_path):
    cache = tmp_path / "cache"
    assert_same_as_clean(words, tmp_path, cache)
    assert "<td>6</td>" in (words / "site" / "mini.html").read_text()
    (words / "data" / "words.txt").write_text("to be or not to be that is the question\n")
    assert_same_as_clean(words, tmp_path, cache)
    assert "<td>10</td>" in (words / "site" / "mini.html").read_text()


def test_a_file_added_to_a_folder_an_example_lists_reruns_it(words, tmp_path):
    cache = tmp_path / "cache"
    assert_same_as_clean(words, tmp_path, cache)
    (words / "data" / "more.txt").write_text("new\n")
    assert_same_as_clean(words, tmp_path, cache)
    assert "more.txt" in (words / "site" / "mini.html").read_text()


FLAKY = """import os
from site_builder.run.examples import ExampleResult, table


def compare():
    if os.path.exists(os.path.join(os.path.dirname(__file__), "BREAK")):
        raise ValueError("broken on purpose")
    return ExampleResult([table(["value"], [[1]])], "hand-picked")
"""


def test_a_failed_example_leaves_no_page_the_next_build_trusts(tmp_path):
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": FLAKY})
    cache = tmp_path / "cache"
    assert assert_same_as_clean(root, tmp_path, cache)[0] == "ok"
    (root / "content" / "examples" / "BREAK").write_text("")
    first = assert_same_as_clean(root, tmp_path, cache)
    again = assert_same_as_clean(root, tmp_path, cache)          # it used to pass here, from the cache
    assert first[0] == again[0] == "failed" and first == again
    (root / "content" / "examples" / "BREAK").unlink()
    assert assert_same_as_clean(root, tmp_path, cache)[0] == "ok"


def test_a_tex_error_on_two_pages_is_reported_on_both_every_time(tmp_path):
    typo = "A typo: $\\operatornam{ReLU}(z)$ here.\n"
    root = mini_repo(tmp_path, SITE.replace("nav: [mini]", "nav: [mini, other]"), PAGE + typo, {"mini": FLAKY})
    (root / "content" / "pages" / "other.md").write_text(
        PAGE.replace("id: mini", "id: other").replace("title: Mini", "title: Other") + typo)
    cache = tmp_path / "cache"
    status, problems = assert_same_as_clean(root, tmp_path, cache)
    assert status == "failed" and sorted(p.split(":")[0] for p in problems) == ["content/pages/mini.md", "content/pages/other.md"]
    (root / "content" / "pages" / "mini.md").write_text(PAGE)
    status, problems = assert_same_as_clean(root, tmp_path, cache)
    assert status == "failed" and [p.split(":")[0] for p in problems] == ["content/pages/other.md"]


BROKEN_IMPORT = """import not_installed_xyz
from site_builder.run.examples import ExampleResult


def one():
    return ExampleResult([], "x")


def two():
    return ExampleResult([], "x")
"""


def test_an_example_module_that_does_not_import_is_one_problem(tmp_path):
    root = mini_repo(tmp_path, SITE, page("bad:one", "bad:two"), {"bad": BROKEN_IMPORT})
    with pytest.raises(BuildFailed) as e:
        build(root, root / "site", cache_dir=tmp_path / "cache")
    lines = [str(p) for p in e.value.problems]
    assert len(lines) == 1, lines
    assert "content/examples/bad.py cannot be imported: no module named 'not_installed_xyz'" in lines[0]
    assert "content/examples/bad.py:1" in lines[0] and "pip install not_installed_xyz" in lines[0]


def test_no_example_needs_the_test_extra():
    """The README's build command installs the site extra only: no example may import a
    test module (they import pytest); shared hand-picked inputs live in tests/fixtures.py."""
    from tests.conftest import ROOT
    from site_builder.run.examples import dependency_files
    for module in sorted((ROOT / "content" / "examples").glob("*.py")):
        for f in dependency_files(ROOT, module):
            text = f.read_text()
            assert "import pytest" not in text and "import hypothesis" not in text, (module.name, f)


def cli(root, *args, cache=None):
    out = subprocess.run([sys.executable, "build_site.py", *args, "--cache-dir", str(cache)], cwd=root,
                         capture_output=True, text=True, timeout=300)
    return out.returncode, out.stdout + out.stderr


def test_up_to_date_looks_at_the_output(tmp_path):
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": FLAKY})
    cache = tmp_path / "cache"
    assert cli(root, cache=cache)[0] == 0
    assert "up to date" in cli(root, cache=cache)[1]
    good = files(root / "site")
    (root / "site" / "mini.html").unlink()
    (root / "site" / "index.html").write_text("garbage")
    status, text = cli(root, cache=cache)
    assert status == 0 and "up to date" not in text
    assert files(root / "site") == good


def test_a_build_made_like_serve_keeps_the_stamp_true(tmp_path):
    """serve builds (defer_search) record the stamp too: an edit previewed under serve and
    reverted afterwards is rebuilt, not declared up to date."""
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": FLAKY})
    cache = tmp_path / "cache"
    assert cli(root, cache=cache)[0] == 0
    original = (root / "content" / "pages" / "mini.md").read_text()
    good = files(root / "site")
    (root / "content" / "pages" / "mini.md").write_text(original + "A preview edit.\n")
    # In a process of its own, as serve's is: the stamp lists the installed packages its process
    # loaded, and a test process has loaded whatever the tests before this one imported.
    serve_like = ("import sys; from pathlib import Path; from site_builder.build import build; "
                  "r = build(Path.cwd(), Path('site'), cache_dir=Path(sys.argv[1]), defer_search=True); r.finish()")
    subprocess.run([sys.executable, "-c", serve_like, str(cache)], cwd=root, check=True, timeout=300)
    assert "A preview edit." in (root / "site" / "mini.html").read_text()
    assert "up to date" in cli(root, cache=cache)[1]          # serve's stamp vouches for the edited tree
    (root / "content" / "pages" / "mini.md").write_text(original)
    status, text = cli(root, cache=cache)
    assert status == 0 and "up to date" not in text and files(root / "site") == good


PACKAGE_READER = """from site_builder.run.examples import ExampleResult, table
import fakepkg_for_test


def value():
    return ExampleResult([table(["value"], [[fakepkg_for_test.VALUE]])], "an installed package")
"""


def test_an_edit_inside_an_installed_package_reruns_the_examples_that_load_it(tmp_path, monkeypatch):
    """Found by a hostile test: only the package's __init__.py was checked, so an edit of a
    module inside it left the page stale."""
    packages = tmp_path / "site-packages"
    (packages / "fakepkg_for_test").mkdir(parents=True)
    (packages / "fakepkg_for_test" / "__init__.py").write_text("from .inner import VALUE\n")
    (packages / "fakepkg_for_test" / "inner.py").write_text("VALUE = 'one'\n")
    monkeypatch.syspath_prepend(str(packages))
    root = mini_repo(tmp_path, SITE, page("pkg:value"), {"pkg": PACKAGE_READER})
    cache = tmp_path / "cache"
    assert_same_as_clean(root, tmp_path, cache)
    assert "<td>one</td>" in (root / "site" / "mini.html").read_text()
    (packages / "fakepkg_for_test" / "inner.py").write_text("VALUE = 'two, longer'\n")
    assert_same_as_clean(root, tmp_path, cache)
    assert "<td>two, longer</td>" in (root / "site" / "mini.html").read_text()


def test_an_edit_of_the_training_step_redraws_the_landing_map(tmp_path):
    """The landing page's map is a traced run of model.train.train_step (site_builder/run/call_map.py),
    cached on what it read: a step that stops clipping is drawn without clip_grad_norm, by an
    incremental build as by a clean one. Built by the command, so that the repository's own
    copy of model/ is the one imported."""
    from tests.test_build_errors import EXAMPLE
    root = mini_repo(tmp_path, SITE, PAGE, {"mini": EXAMPLE}, copy=("model",), landing_map=True)
    cache = tmp_path / "cache"
    assert cli(root, cache=cache)[0] == 0
    assert "<code>optim.clip_grad_norm</code>" in (root / "site" / "index.html").read_text()
    train = root / "model" / "train.py"
    clipping = "    grad_norm = clip_grad_norm(grads, tcfg.clip_norm)\n"
    assert clipping in train.read_text()
    train.write_text(train.read_text().replace(clipping, "    grad_norm = 0.0\n"))
    assert cli(root, cache=cache)[0] == 0
    assert cli(root, "--no-cache", "--out", str(tmp_path / "clean"), cache=tmp_path / "unused")[0] == 0
    assert files(root / "site") == files(tmp_path / "clean")
    assert "<code>optim.clip_grad_norm</code>" not in (root / "site" / "index.html").read_text()
