"""The folders the builder reads, stamps, watches and protects are the ones the project block
names (content/site.yaml `project:`, site_builder/gather/project.py), not model/, tests/ and
data/: a project whose package is lib/, whose tests are in checks/ and whose inputs are in
texts/ gets each of them read, hashed, watched and refused as an output."""
import pytest

from site_builder.base.cache import CacheRefused, check_cache_dir
from site_builder.gather import fingerprint
from site_builder.gather.content import load_content
from site_builder.gather.project import project_folders
from site_builder.gather.source_index import build_index
from site_builder.publish.write import OutputRefused, check_output
from site_builder.run.examples import module_file
from site_builder.serve.rebuild import watched_dirs
from site_builder.serve.reload import code_dirs

SITE = """title: t
nav: [intro]
labels:
  why: Why does lib need it?
project:
  package: lib
  tests: checks
  inputs: [texts]
"""
FILES = {
    "lib/__init__.py": "",
    "lib/core.py": "def double(x):\n    return 2 * x\n\n\ndef _helper():\n    return 1\n",
    "checks/__init__.py": "",
    "checks/test_core.py": "from lib.core import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
    "texts/words.txt": "some words\n",
    "model/stray.py": "def not_documented():\n    pass\n",            # a folder the block does not name
    "content/pages/intro.md": "---\ntitle: Intro\nsections: []\n---\nIntro.\n",
}


@pytest.fixture
def project(tmp_path):
    for rel, text in {"content/site.yaml": SITE, **FILES}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_the_index_reads_the_package_and_the_tests_folder_the_block_names(project):
    index = build_index(project)
    assert sorted(index.files) == ["checks/__init__.py", "checks/test_core.py", "lib/__init__.py", "lib/core.py"]
    assert index.function("checks.test_core.test_double").kind == "test"
    assert [t.test for t in index.tested_by("lib.core.double")] == ["checks.test_core.test_double"]
    assert index.public_functions() == ["lib.core.double"]


def test_the_stamp_hashes_the_folders_the_block_names(project):
    assert fingerprint.input_dirs(project) == ("content", "templates", "static", "lib", "checks", "site_builder", "texts")
    hashed = {rel for rel, _ in fingerprint.input_digests(project)}
    assert {"lib/core.py", "checks/test_core.py", "texts/words.txt"} <= hashed
    assert "model/stray.py" not in hashed
    assert fingerprint.outside_input_dirs("model/stray.py", fingerprint.input_dirs(project))


def test_serve_watches_and_reimports_the_folders_the_block_names(project):
    assert watched_dirs(project) == ("content", "templates", "static", "site_builder", "lib", "checks", "texts")
    assert code_dirs(project) == ("lib", "checks", "texts", "site_builder", "content")


def test_the_package_folder_is_never_an_output_or_a_cache(project):
    with pytest.raises(OutputRefused, match="is inside the source folder .*lib"):
        check_output(project / "lib" / "site", root=project)
    with pytest.raises(CacheRefused, match="source folder .*texts"):
        check_cache_dir(project / "texts" / "cache", project, project_folders)
    check_output(project / "model" / "site", root=project)      # not the project's: the builder may write there


def test_examples_follow_imports_into_the_package_only(project):
    assert module_file(project, "lib.core") == project / "lib" / "core.py"
    assert module_file(project, "model.stray") is None


def test_the_pages_say_what_the_labels_say(project):
    problems = []
    assert load_content(project, problems).labels == {"why": "Why does lib need it?"}
    assert not problems
    (project / "content" / "site.yaml").write_text(SITE.replace("  why:", "  wyh:"))
    content = load_content(project, problems)
    assert [str(p) for p in problems] == ["content/site.yaml:4: unknown key 'wyh' in labels (did you mean 'why'?)"]
    assert content.labels["why"] == "Why is it needed?"       # the builder's default names no project


def test_new_concept_refuses_a_function_outside_the_package_naming_the_setting(project):
    from site_builder.scaffold import ScaffoldError, new_concept
    with pytest.raises(ScaffoldError, match=r"model.stray.not_documented is not a function of lib/ "
                                            r"\(project.package, content/site.yaml:6\)"):
        new_concept(project, "model.stray.not_documented", "intro")


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_package_that_is_not_there_is_one_problem_naming_the_setting(project, use_cache):
    """Before anything is read (the stamp's folders, the index, the highlighting), not an
    internal error, nor the index's 'fix the syntax error'."""
    from site_builder.base.problems import BuildFailed
    from site_builder.build import build
    from site_builder.build.page_check import check_pages
    (project / "content" / "site.yaml").write_text(SITE.replace("package: lib", "package: nothere"))
    with pytest.raises(BuildFailed) as e:
        build(project, project / "site", use_cache=use_cache, cache_dir=project / ".cache")
    assert [str(p) for p in e.value.problems] == [
        "content/site.yaml:6: project.package names nothere/, which is not a package folder at the project root "
        "(no such folder) (set `package:` to the folder of the package to document)"]
    failing, _, _ = check_pages(project, ["intro"], cache_dir=project / ".cache", jobs=1)
    assert [p.line for p in failing] == [6] and "project.package" in failing[0].message
