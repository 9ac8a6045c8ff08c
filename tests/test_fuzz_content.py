"""Fuzzing the content loader: random mutations of the real content files must give either a
clean load (and then pages that build) or problems in the one-line format, never an exception."""
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from site_builder.gather.content import load_content
from site_builder.render.pages.builder import PageBuilder
from site_builder.render.html import Renderer
from tests.conftest import ROOT
from tests.sizes import size

PROBLEM = re.compile(r"^content/[\w./-]+:\d+: \S.*$")
FILES = ["content/pages/block.md", "content/site.yaml"]

mutation = st.tuples(
    st.sampled_from(FILES),
    st.sampled_from(["delete", "duplicate", "indent", "dedent", "replace_char", "insert", "truncate"]),
    st.integers(min_value=0, max_value=10_000),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8),
)


def mutate(text, op, where, noise):
    lines = text.split("\n")
    i = where % len(lines)
    line = lines[i]
    if op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(i, line)
    elif op == "indent":
        lines[i] = "  " + line
    elif op == "dedent":
        lines[i] = line[2:] if line.startswith("  ") else line
    elif op == "replace_char" and line:
        k = where % len(line)
        lines[i] = line[:k] + noise[0] + line[k + 1:]
    elif op == "insert":
        lines[i] = line[:where % (len(line) + 1)] + noise + line[where % (len(line) + 1):]
    elif op == "truncate":
        lines = lines[:i]
    return "\n".join(lines)


class Shared(dict):
    def __repr__(self):          # hypothesis prints the arguments of a failing example
        return "<shared index, shapes and cache>"


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """A content copy to mutate, and what every page build shares (index, shapes)."""
    from site_builder.build.gather_step import default_config
    from site_builder.gather.project import load_project
    from site_builder.run.shapes import infer_shapes
    from site_builder.gather.source_index import build_index
    root = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(ROOT / "content", root / "content")
    cfg = default_config(ROOT)
    from site_builder.base.cache import BuildCache
    return Shared(root=root, index=build_index(ROOT), cache=BuildCache(ROOT / ".build_cache"), shapes=infer_shapes(ROOT, load_project(ROOT), cfg),
                site=dict(repo_url="https://example.invalid", branch="main", commit=None, uncommitted=frozenset(), config=cfg))


EXAMPLES = size("FUZZ_EXAMPLES", 60, 1000)     # hypothesis draws; TBH_LARGE=1 for the larger size


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_content_loads_or_reports_one_line_problems(shared, mutations):
    root = shared["root"]
    originals = {f: (ROOT / f).read_text(encoding="utf-8") for f in FILES}
    texts = dict(originals)
    for file, op, where, noise in mutations:
        texts[file] = mutate(texts[file], op, where, noise)
    for f, text in texts.items():
        (root / f).write_text(text, encoding="utf-8")
    try:
        problems = []
        content = load_content(root, problems)
        errors = [p for p in problems if not p.warning]
        for p in problems:
            assert PROBLEM.match(str(p)), str(p)
        if not errors and "block" in content.pages:
            # valid content must also build pages without an exception (examples come from the cache)
            only_block = type(content)(site=content.site, pages={"block": content.pages["block"]})
            renderer = Renderer(ROOT, shared["index"], problems)
            PageBuilder(ROOT, only_block, shared["index"], renderer, shared["shapes"], problems, shared["site"],
                        shared["cache"]).build()
            for p in problems:
                assert re.match(r"^[\w./-]+:\d+: \S", str(p)), str(p)
    finally:
        for f, text in originals.items():
            (root / f).write_text(text, encoding="utf-8")


def test_a_misspelt_caches_function_is_a_problem_line_not_an_exception(shared):
    """Hypothesis found it: `backward: model.transformer.block_b0ckward` in a caches section
    raised NotIndexed from deep inside the page builder."""
    root, original = shared["root"], (ROOT / "content/pages/block.md").read_text(encoding="utf-8")
    assert "backward: model.transformer.block_backward" in original
    text = original.replace("backward: model.transformer.block_backward", "backward: model.transformer.block_b0ckward", 1)
    (root / "content/pages/block.md").write_text(text, encoding="utf-8")
    try:
        problems = []
        content = load_content(root, problems)
        only_block = type(content)(site=content.site, pages={"block": content.pages["block"]})
        PageBuilder(ROOT, only_block, shared["index"], Renderer(ROOT, shared["index"], problems), shared["shapes"],
                    problems, shared["site"], shared["cache"]).build()
    finally:
        (root / "content/pages/block.md").write_text(original, encoding="utf-8")
    at = next(i for i, line in enumerate(text.split("\n"), 1) if "block_b0ckward" in line)
    assert [str(p) for p in problems if "b0ckward" in str(p)] == [
        f"content/pages/block.md:{at}: backward: no function model.transformer.block_b0ckward; "
        f"did you mean model.transformer.block_backward? (name a function of model/)"]
