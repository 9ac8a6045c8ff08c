"""The landing page's map (issue 24): what it draws is what one real training step calls.
It used to be read from the syntax tree, so it drew `smoothed_targets` under the language
model's loss (which never smooths), left out clipping and AdamW, cut the forward side one
level shallower than the backward side, and did not say which LayerNorm was the final one."""
from html.parser import HTMLParser

import pytest

from site_builder.run.call_map import traced_step
from tests.conftest import ROOT, shared_cache


class MapParser(HTMLParser):
    """The call map of index.html as nested boxes: {label, times, cites: [[text, href]], children}."""

    def __init__(self):
        super().__init__()
        self.root, self.stack, self.in_map, self.inside = None, [], False, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "ol" and "call-map" in classes:
            self.in_map = True
        elif self.in_map and tag == "li" and "map-node" in classes:
            box = dict(label="", times=None, cites=[], children=[])
            (self.stack[-1]["children"] if self.stack else []).append(box)
            self.root = self.root or box
            self.stack.append(box)
        elif self.stack and tag == "code" and not self.stack[-1]["label"]:
            self.inside = "label"
        elif self.stack and tag == "span" and ("times" in classes or "cites" in classes):
            self.inside = "times" if "times" in classes else "cites"
        elif self.stack and self.inside == "cites" and tag == "a":
            self.stack[-1]["cites"].append(["", attrs.get("href")])

    def handle_endtag(self, tag):
        if self.stack and tag == "li":
            self.stack.pop()
            self.in_map = bool(self.stack)
        elif tag in ("code", "span"):
            self.inside = None

    def handle_data(self, data):
        if self.inside == "label":
            self.stack[-1]["label"] += data
        elif self.inside == "times":
            self.stack[-1]["times"] = data.strip()
        elif self.inside == "cites" and self.stack[-1]["cites"]:
            self.stack[-1]["cites"][-1][0] += data


def short(qualname):
    return ".".join(qualname.split(".")[-2:])


def boxes(box, caller=None):
    """(caller label, box) for every box under box, depth first."""
    yield caller, box
    for child in box["children"]:
        yield from boxes(child, box["label"])


@pytest.fixture(scope="module")
def drawn(site_page):
    parser = MapParser()
    parser.feed(site_page("index"))
    assert parser.root, "index.html has no call map"
    return parser.root


@pytest.fixture(scope="module")
def step():
    calls = traced_step(ROOT)
    assert calls.problem is None, calls.problem
    return calls.root


def edges(site):
    """{(caller, callee)} of a traced run, by the labels the map prints."""
    return {(short(s.function), short(c.function)) for s in site.walk() for c in s.children}


def find(drawn, label, caller):
    found = [b for c, b in boxes(drawn) if b["label"] == label and c == caller]
    assert found, f"no box {label} under {caller}"
    return found[0]


def test_the_map_holds_no_call_the_traced_step_did_not_make(drawn, step):
    made = edges(step)
    drawn_edges = {(c, b["label"]) for c, b in boxes(drawn) if c}
    assert drawn_edges <= made, drawn_edges - made
    assert drawn["label"] == short(step.function) == "train.train_step"
    # The syntax tree sees smoothed_targets in cross_entropy_forward; the language model never smooths.
    assert not any(b["label"] == "ops.smoothed_targets" for _, b in boxes(drawn))


def test_the_map_draws_every_function_the_step_called(drawn, step):
    assert {short(s.function) for s in step.walk()} == {b["label"] for _, b in boxes(drawn)}


def test_a_training_step_is_loss_and_gradients_clipping_and_the_adamw_update(drawn):
    assert [b["label"] for b in drawn["children"]] == ["train.batch_loss_and_grads", "optim.clip_grad_norm",
                                                       "AdamW.step"]


def test_forward_and_backward_are_drawn_to_the_same_depth(drawn):
    assert [b["label"] for b in find(drawn, "attention.attention_forward", "transformer.block_forward")["children"]] \
        == ["attention.causal_mask", "attention.mha_forward"]
    assert [b["label"] for b in find(drawn, "attention.attention_backward", "transformer.block_backward")["children"]] \
        == ["attention.mha_backward"]
    assert find(drawn, "attention.mha_forward", "attention.attention_forward")["children"]
    assert find(drawn, "attention.mha_backward", "attention.attention_backward")["children"]


def test_the_final_layernorm_is_labelled_by_the_equation_that_cites_its_line(drawn):
    import yaml
    model_page = yaml.safe_load((ROOT / "content/pages/model.md").read_text().split("---")[1])
    forward = next(s for s in model_page["sections"] if s.get("id") == "model-forward")
    name = next(m["name"] for m in forward["math"] if m.get("eq") == "final-ln")
    box = find(drawn, "ops.layer_norm_forward", "transformer.forward")
    assert box["cites"] == [[name, "model.html#model-forward--final-ln"]]


def test_the_counts_are_the_runs(drawn, step):
    from model.config import ModelConfig
    from content.hooks import first_step_inputs
    params = first_step_inputs()[0]
    assert find(drawn, "transformer.block_forward", "transformer.forward")["times"] == f"×{ModelConfig.num_layers}"
    assert find(drawn, "optim.decays", "AdamW.step")["times"] == f"×{len(params)}"
    from site_builder.gather.source_index import build_index
    block = build_index(ROOT, ("model",)).function("model.transformer.block_forward")
    sites = [c for c in block.calls if c.callee == "model.ops.layer_norm_forward"]
    assert find(drawn, "ops.layer_norm_forward", "transformer.block_forward")["times"] == f"×{len(sites)}"


# A project block that names its package, its config and init_params, and a hooks file with
# only documented_config: no call_map_root, no groups, no decay rule, no words of its own.
BARE_PROJECT = """project:
  package: model
  tests: tests
  inputs: [data]
  hooks: content/hooks.py
  configs:
    - {class: model.config.ModelConfig, init_params: model.transformer.init_params,
       axes: {seq_len: T, emb_dim: d, num_heads: h, ff_dim: F, vocab_size: V, num_layers: L, head_dim: dk}}
  probe_sizes: {T: 6, S: 9, h: 5, dk: 8, d: 40, F: 47, V: 13, L: 3, M: 17, n: 11}
"""


def bare_site(project=BARE_PROJECT):
    """test_build_errors' site with `project` for its project block."""
    from tests.conftest import PROJECT_BLOCK
    from tests.test_build_errors import SITE
    return SITE.replace(PROJECT_BLOCK, "") + project


BARE_HOOKS = """def documented_config():
    from model.config import ModelConfig
    return ModelConfig(vocab_size=7), ""
"""


def test_without_the_settings_the_landing_page_leaves_out_what_they_feed(tmp_path):
    """No call_map_root: no map; no param_groups: the total alone; no words: plain ones, naming
    no project; and the examples' heading is the default's."""
    from site_builder.build import build
    from tests.test_build_errors import EXAMPLE, PAGE
    from tests.conftest import mini_repo
    root = mini_repo(tmp_path, bare_site(), PAGE, {"mini": EXAMPLE})
    (root / "content" / "hooks.py").write_text(BARE_HOOKS)
    build(root, root / "site", strict=False, cache_dir=shared_cache())
    index = (root / "site" / "index.html").read_text()
    assert 'id="map"' not in index and "call-map" not in index
    assert "<h2 id=\"size\">Parameters at the default config</h2>" in index
    assert "<p>ModelConfig(vocab_size=7, " in index and "vocabulary" not in index
    size = index[index.index('id="size"'):]
    assert size.count("<tr>") == 1 and '<tr class="total"><td>Total</td>' in size, "the total alone"
    assert "<code>model/</code>" in index
    assert ">Numerical example<" in (root / "site" / "mini.html").read_text()


def test_a_config_without_defaults_and_no_hook_is_one_problem_line(tmp_path):
    import pytest
    from site_builder.base.problems import BuildFailed
    from site_builder.build import build
    from tests.test_build_errors import EXAMPLE, PAGE
    from tests.conftest import mini_repo
    root = mini_repo(tmp_path, bare_site(BARE_PROJECT.replace("  hooks: content/hooks.py\n", "")), PAGE, {"mini": EXAMPLE})
    with pytest.raises(BuildFailed) as e:
        build(root, root / "site", strict=False, cache_dir=shared_cache())
    [line] = [str(p) for p in e.value.problems]
    assert line.startswith("content/site.yaml:") and "ModelConfig, cannot be made at its defaults" in line
    assert "documented_config" in line


def test_a_hooks_file_that_does_not_import_is_one_problem_line(tmp_path):
    import pytest
    from site_builder.base.problems import BuildFailed
    from site_builder.build import build
    from tests.test_build_errors import EXAMPLE, PAGE
    from tests.conftest import mini_repo
    root = mini_repo(tmp_path, bare_site(), PAGE, {"mini": EXAMPLE})
    text = BARE_HOOKS + "\ndef broken(:\n"
    (root / "content" / "hooks.py").write_text(text)
    with pytest.raises(BuildFailed) as e:
        build(root, root / "site", strict=False, cache_dir=shared_cache())
    [line] = [str(p) for p in e.value.problems]
    at = text.splitlines().index("def broken(:") + 1
    assert line.startswith(f"content/hooks.py:{at}: the hooks file cannot be imported: SyntaxError"), line
