"""The project block's names and sizes are checked before anything runs (issue 25's hostile
round): a name that is not there, an axis that is no field, probe sizes that cannot name an
axis, each one problem at the block's line, and a shape probe cached on what the block says."""
import subprocess
import sys
import textwrap

import pytest

from site_builder.gather.project import ProjectError, check_names, load_project

CONFIG = """\
from dataclasses import dataclass


@dataclass(frozen=True)
class ToyConfig:
    batch: int = 4
    width: int = 3
"""


def toy(tmp_path, block):
    """A project root with a package `toyblock` and a site.yaml holding `block`."""
    root = tmp_path / "proj"
    (root / "toyblock").mkdir(parents=True)
    (root / "toyblock" / "__init__.py").write_text("")
    (root / "toyblock" / "config.py").write_text(CONFIG)
    (root / "toyblock" / "ops.py").write_text("def init_params(cfg, rng):\n    params = {}\n    return params\n")
    (root / "tests").mkdir()
    (root / "content").mkdir()
    (root / "content" / "site.yaml").write_text("title: t\nnav: []\nproject:\n  package: toyblock\n" + textwrap.indent(block, "  "))
    return root


def problems(root):
    sys.path.insert(0, str(root))
    try:
        check_names(load_project(root))
    except ProjectError as e:
        return [str(p) for p in e.problems]
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m.split(".")[0] == "toyblock"]:
            del sys.modules[name]
    return []


GOOD = "configs:\n  - {class: toyblock.config.ToyConfig, init_params: toyblock.ops.init_params, axes: {batch: B, width: W}}\nprobe_sizes: {B: 5, W: 7}\n"


@pytest.mark.parametrize("edit, expected", [
    (("ToyConfig,", "ToyConfg,"), "configs[0].class names toyblock.config.ToyConfg, but toyblock.config has no ToyConfg; did you mean 'ToyConfig'?"),
    (("toyblock.config.ToyConfig", "toyblock.confg.ToyConfig"), "but there is no module toyblock.confg"),
    (("toyblock.config.ToyConfig", "ToyConfig"), "names ToyConfig, but it is no dotted name"),
    (("ops.init_params", "ops.init_parms"), "configs[0].init_params names toyblock.ops.init_parms, but toyblock.ops has no init_parms; did you mean 'init_params'?"),
    (("width: W", "widht: W"), "configs[0].axes names widht, which is no field of toyblock.config.ToyConfig; did you mean 'width'?"),
    (("W: 7", "W: 5"), "project.probe_sizes gives B and W the same size, 5"),
    (("W: 7", "W: 2"), "project.probe_sizes.W is 2"),
    ((", W: 7", ""), "project.probe_sizes has no size for the axis letter W"),
    (("probe_sizes:", "probe_size:"), "project.probe_size: not a setting; did you mean 'probe_sizes'?"),
])
def test_a_wrong_block_is_one_problem_at_its_line(tmp_path, edit, expected):
    assert problems(toy(tmp_path, GOOD)) == []
    root = toy(tmp_path / "bad", GOOD.replace(*edit))
    try:
        found = problems(root)
    except ProjectError as e:          # a problem of form is found as the block loads
        found = [str(p) for p in e.problems]
    assert len(found) == 1 and expected in found[0] and found[0].startswith("content/site.yaml:"), found


def test_a_decay_rule_or_root_that_is_not_there_is_named(tmp_path):
    found = problems(toy(tmp_path, GOOD + "decays: toyblock.ops.nodecay\n"))
    assert found == ["content/site.yaml:8: project.decays names toyblock.ops.nodecay, but toyblock.ops has no nodecay "
                     "(write it as package.module.name, a name the package defines)"], found
    found = problems(toy(tmp_path / "b", GOOD + "call_map_root: toyblock.ops.nothere\n"))
    assert len(found) == 1 and "project.call_map_root names toyblock.ops.nothere" in found[0], found


def test_the_shape_probes_are_cached_on_the_block(tmp_path):
    """A cached check must say what a clean one says: an axes edit that changes the shapes
    reruns the probes (it used to reuse the run made under the old letters)."""
    from site_builder.build import gather_step
    source = (gather_step.__file__ and open(gather_step.__file__, encoding="utf-8").read())
    assert source.count("for the project block {project.key}") == 2
    a = toy(tmp_path / "a", GOOD)
    b = toy(tmp_path / "b", GOOD.replace("width: W", "width: B, batch: W").replace("batch: B, ", ""))
    assert load_project(a).key != load_project(b).key
    assert load_project(a).key == load_project(toy(tmp_path / "c", "# a comment moves the lines\n" + GOOD)).key


def test_a_block_of_the_wrong_kind_or_a_misspelt_package_is_one_line(tmp_path):
    root = toy(tmp_path, GOOD)
    (root / "content" / "site.yaml").write_text("title: t\nnav: []\nproject: [toyblock]\n")
    with pytest.raises(ProjectError) as listed:
        load_project(root)
    assert [str(p) for p in listed.value.problems] == [
        "content/site.yaml:3: the `project:` block is a list, not a mapping of settings (add `project:` with "
        "`package: NAME` (the folder of the package) and `tests: FOLDER`)"]
    for block, expected in (("packge: toyblock\n", "project.packge: not a setting; did you mean 'package'?"),
                            ("package: 5\n", "project.package is a number")):
        (root / "content" / "site.yaml").write_text("title: t\nnav: []\nproject:\n  " + block)
        with pytest.raises(ProjectError) as wrong:
            load_project(root)
        found = [str(p) for p in wrong.value.problems]
        assert len(found) == 1 and expected in found[0], found
