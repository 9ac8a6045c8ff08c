"""The figures' arithmetic (ticks, labels, colour scales) and the architecture diagrams, which
are drawn from the syntax tree: moving a call in model/ must move the picture."""
import math
import re
import shutil

import pytest

from site_builder.render import plots
from site_builder.render.diagrams import dataflow, render
from site_builder.gather.source_index import build_index
from tests.conftest import ROOT, shared_cache

SEQ2SEQ_EXPAND = ["model.seq2seq.encode_forward", "model.seq2seq.encoder_forward", "model.seq2seq.encoder_layer_forward",
                  "model.seq2seq.decode_forward", "model.seq2seq.decoder_forward", "model.seq2seq.decoder_layer_forward"]


@pytest.mark.parametrize("lo, hi", [(1, 300), (0, 20000), (2.31, 4.13), (0, 7.3e-4), (-0.93, 0.97), (1, 100000)])
def test_linear_ticks_are_1_2_5_steps_covering_the_data(lo, hi):
    ticks, step = plots.linear_ticks(lo, hi, 5)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 9) in (1, 2, 5)
    assert ticks[0] <= lo and ticks[-1] >= hi and 3 <= len(ticks) <= 11
    labels = plots.tick_labels(ticks, step)
    assert len(set(labels)) == len(labels)                 # enough decimals to tell them apart
    assert all(len(x) <= 7 for x in labels), labels         # never a six-digit float


def test_thousands_are_written_20k_or_with_commas():
    assert plots.tick_labels(*plots.linear_ticks(0, 20000, 5)) == ["0", "5k", "10k", "15k", "20k"]
    assert plots.tick_labels([0, 1500, 3000]) == ["0", "1,500", "3,000"]


@pytest.mark.parametrize("lo, hi", [(0.47, 4.9), (1e-9, 0.9), (0.5, 1.9), (16228, 77828)])
def test_log_ticks_are_decades_or_1_2_5(lo, hi):
    ticks = plots.log_ticks(lo, hi)
    assert ticks[0] <= lo and ticks[-1] >= hi
    for t in ticks:
        m = t / 10 ** math.floor(math.log10(t) + 1e-9)
        assert round(m, 6) in (1, 2, 5), t
    labels = plots.tick_labels(ticks, log=True)
    assert not any(re.search(r"\d{6}", x) for x in labels), labels


def test_line_plot_carries_its_values_and_a_description():
    svg = plots.line_plot([("loss", [1, 2, 3], [3.0, 1.5, 2.0])], "t", "step", "loss (nats)")
    assert 'data-x="1 2 3"' in svg and 'data-y="3 1.5 2"' in svg
    desc = re.search(r"<desc>(.*?)</desc>", svg).group(1)
    assert "lowest 1.5 at 2" in desc and "highest 3 at 1" in desc
    assert 'tabindex="0"' in svg


def test_signed_heatmap_is_diverging_with_zero_in_the_middle():
    svg = plots.heatmap([[-0.5, 0.0], [0.25, 1.0]], ["a", "b"], ["c", "d"], "t", xlabel="x", ylabel="y")
    ticks = [float(t.replace("−", "-")) for t in re.findall(r'<text class="tick" x="[\d.]+" y="[\d.]+" text-anchor="middle">([^<]+)</text>', svg.split('<g class="scale">')[1])]
    assert min(ticks) == -max(ticks) and 0.0 in ticks        # symmetric scale, labelled at 0
    assert 'class="n"' in svg                                # the negative hue
    assert re.search(r'<rect x="\d+" width="\d+" height="\d+" fill-opacity="0"/>', svg)    # zero: no colour


def test_masked_cells_are_named_in_the_scale():
    svg = plots.heatmap([[1.0, 0.0], [0.3, 0.7]], ["0", "1"], ["0", "1"], "t", masked=[[False, True], [False, False]],
                        masked_name="hidden by the causal mask")
    assert svg.count('class="masked"') == 2 and "hidden by the causal mask</text>" in svg
    assert 'data-v="1.000 m"' in svg


def labels(nodes):
    return [n.label for n in nodes if n.kind != "input"]


def test_block_diagram_follows_the_code():
    index = build_index(ROOT, packages=("model",))
    nodes = dataflow(index, "model.transformer.block_forward")
    assert labels(nodes) == ["layer_norm_forward", "attention_forward", "+", "layer_norm_forward", "ffn_forward", "+"]
    outs = [n.outputs for n in nodes]
    assert outs[:4] == [["X"], ["Xn"], ["att"], ["X1"]]
    first_add = next(n for n in nodes if n.kind == "add")
    assert sorted(name for _, name in first_add.inputs) == ["X", "att"]       # the residual


def test_moving_a_call_in_model_changes_the_diagram(tmp_path):
    shutil.copytree(ROOT / "model", tmp_path / "model", ignore=shutil.ignore_patterns("__pycache__"))
    before_index = build_index(tmp_path, packages=("model",))
    before = dataflow(before_index, "model.transformer.block_forward")
    path = tmp_path / "model" / "transformer.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, l in enumerate(lines) if l.startswith("def block_forward"))
    ffn = next(i for i in range(start, len(lines)) if "ffn_forward(" in lines[i])
    ln1 = next(i for i in range(start, len(lines)) if "layer_norm_forward(" in lines[i])
    moved = lines.pop(ffn)
    lines.insert(ln1 + 1, moved)                           # the FFN now runs right after LN1
    path.write_text("".join(lines), encoding="utf-8")
    after = dataflow(build_index(tmp_path, packages=("model",)), "model.transformer.block_forward")
    assert labels(after) == ["layer_norm_forward", "ffn_forward", "attention_forward", "+", "layer_norm_forward", "+"]
    assert labels(after) != labels(before)
    assert render(after, "t") != render(before, "t")


def test_encoder_decoder_diagram_crosses_memory_into_cross_attention():
    index = build_index(ROOT, packages=("model",))
    nodes = dataflow(index, "model.seq2seq.forward", SEQ2SEQ_EXPAND)
    assert {n.column for n in nodes} == {0, 1}
    cross = [n for n in nodes if "cross" in n.outputs]
    assert len(cross) == 1 and cross[0].column == 1
    fed_by = [nodes[k] for k, _ in cross[0].inputs]
    assert any("memory" in n.outputs for n in fed_by)
    assert any(n.frame and "num_enc_layers" in n.frame[1] for n in nodes if n.column == 0)


STEP_EXPAND = ["model.seq2seq." + f for f in (
    "forward", "encode_forward", "encoder_forward", "encoder_layer_forward", "decode_forward", "decoder_forward",
    "decoder_layer_forward", "backward", "decode_backward", "decoder_backward", "decoder_layer_backward",
    "encode_backward", "encoder_backward", "encoder_layer_backward")]


def test_the_step_diagram_draws_calls_in_returns_and_calls_whose_result_is_not_kept():
    """loss_and_grads ends `return loss, backward(...)`, and backward calls encode_backward
    without keeping a result: both are drawn. Every returned element reaches its caller's name
    (decoder_backward returns dY and dmemory), and a plain rebind (`dX = dmemory`) carries the
    memory's gradient into the encoder's backward pass."""
    index = build_index(ROOT, packages=("model",))
    nodes = dataflow(index, "model.seq2seq.loss_and_grads", STEP_EXPAND)
    backward = [n for n in nodes if n.column == 1]
    assert backward and backward[0].label == "output_backward"
    assert [n.label for n in backward].count("embed_backward") == 2           # the result of neither is kept
    assert {n.function.split(".")[-1] for n in backward} >= {"decoder_layer_backward", "encoder_layer_backward"}
    memory_sum = next(n for n in backward if n.kind == "add" and n.outputs == ["dmemory"])
    assert memory_sum.inputs and nodes[memory_sum.inputs[0][0]].label == "mha_backward"
    first_encoder = next(n for n in backward if n.function.endswith("encoder_layer_backward"))
    assert [k for k, _ in first_encoder.inputs] == [memory_sum.key]
    assert not any("#" in n.frame[1] for n in nodes if n.frame)               # a header's comment is no label
    from site_builder.render.diagrams import _out_label
    assert _out_label(backward[1]) == "dY3, dg, db"                          # three names, not one renamed twice


def test_diagrams_are_on_their_pages_and_link_every_box(site_page):
    for slug, fn in (("block", "block_forward"), ("model", "forward"), ("seq2seq", "forward")):
        html = site_page(slug)
        svg = re.search(r'<svg class="arch-svg".*?</svg>', html, re.S)
        assert svg, slug
        assert f"Architecture, drawn from <code>{fn}</code>" in html
        unlinked = re.findall(r'<g class="arch-node">(?:<title>[^<]*</title>)?<rect class="([\w-]+)"', svg.group(0))
        assert set(unlinked) <= {"arch-input"}, (slug, unlinked)            # only inputs are not links
        assert svg.group(0).count('<a class="arch-node"') >= 6
    block = site_page("block")
    assert 'href="block.html#block-forward--' in block and 'href="layernorm.html#' in block


def test_figure_colours_pass_aa_for_graphics_in_both_themes():
    """WCAG 2.1 AA, 1.4.11: lines, cells at full strength and the mask swatch 3:1 on the page."""
    from site_builder.render.html import contrast
    from tests.test_contrast import THEMES
    for theme, colours in THEMES.items():
        for var in ("--s0", "--s1", "--s2", "--s3", "--s4", "--s5", "--heat-pos", "--heat-neg", "--heat-mask"):
            assert contrast(colours[var], colours["--bg"]) >= 3.0, (theme, var)


def test_log_axes_are_labelled_in_decades():
    hs = [10.0 ** (-k / 2) for k in range(4, 21)]
    svg = plots.line_plot([("e", hs, [h * h + 1e-16 / h for h in hs])], "t", "h", "e", logx=True, logy=True)
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', svg)
    assert "10⁻¹⁰" in ticks and "10⁻²" in ticks and all(t.startswith("10") for t in ticks), ticks


def test_a_diagram_naming_a_missing_function_is_one_clear_problem(tmp_path):
    from site_builder.build import build
    from site_builder.base.problems import BuildFailed
    from tests.conftest import mini_repo
    from tests.test_build_errors import SITE, PAGE, EXAMPLE
    page = PAGE.replace("    function: model.gradcheck.rel_error\n",
                        "    function: model.gradcheck.rel_error\n"
                        "    diagram: {function: model.transformer.block_forward, expand: [model.transformer.ffn_forwrd]}\n")
    root = mini_repo(tmp_path, SITE, page, {"mini": EXAMPLE})
    with pytest.raises(BuildFailed) as e:
        build(root, root / "site", strict=False, cache_dir=shared_cache())
    lines = [str(p) for p in e.value.problems]
    hits = [l for l in lines if "ffn_forwrd" in l]
    assert len(hits) == 1 and hits[0].startswith("content/pages/mini.md:7:") and "did you mean" in hits[0], lines


def test_a_diagram_s_links_setting_other_than_page_is_one_clear_problem(tmp_path):
    from site_builder.build import build
    from site_builder.base.problems import BuildFailed
    from tests.conftest import mini_repo
    from tests.test_build_errors import SITE, PAGE, EXAMPLE
    page = PAGE.replace("    function: model.gradcheck.rel_error\n",
                        "    function: model.gradcheck.rel_error\n"
                        "    diagram: {function: model.transformer.block_forward, links: pages}\n")
    root = mini_repo(tmp_path, SITE, page, {"mini": EXAMPLE})
    with pytest.raises(BuildFailed) as e:
        build(root, root / "site", strict=True, cache_dir=shared_cache())
    hits = [str(p) for p in e.value.problems if "links is 'pages'" in str(p)]
    assert len(hits) == 1 and hits[0].startswith("content/pages/mini.md:7:") and "links: page" in hits[0], hits


def test_a_line_plot_is_drawn_for_a_wide_screen_and_for_a_phone():
    """Two drawings of the same data: class "chart" (the marker that loads figures.js) 640 units
    wide, class "chart narrow" narrower, with no more x ticks; site.css shows one of them."""
    xs = list(range(0, 601, 10))
    svg = plots.line_plot([("loss", xs, [5 - x / 200 for x in xs])], "t", "step", "loss")
    wide, narrow = re.findall(r'<svg class="([^"]*)" viewBox="0 0 (\d+) \d+"', svg)
    assert wide == ("chart", str(plots.W)) and narrow == ("chart narrow", str(plots.W_PHONE))
    assert plots.W_PHONE < plots.W
    first, second = svg.split("</svg>")[:2]
    data = lambda part: re.findall(r'data-(?:x|y)="([^"]*)"', part)
    assert data(first) == data(second) and data(first)
    ticks = lambda part: len(re.findall(r'text-anchor="middle">', part))
    assert ticks(second) <= ticks(first)


def test_a_loop_header_with_in_takes_two_lines():
    """The header of a loop frame sits right of its column's boxes; two shorter lines keep the
    encoder-decoder's two columns inside the page's column at desktop width."""
    from site_builder.render.diagrams import _header_lines
    assert _header_lines("for l in range(cfg.num_enc_layers)") == ["for l in", "range(cfg.num_enc_layers)"]
    assert _header_lines("while step < steps") == ["while step < steps"]


def test_the_legend_names_only_what_the_diagram_draws(site_page):
    """block_forward has no loop, so its legend says nothing of dashed frames; forward loops
    over the blocks, so its legend explains the frame it draws."""
    from site_builder.render.diagrams import legend
    index = build_index(ROOT, packages=("model",))
    block = legend(dataflow(index, "model.transformer.block_forward"))
    assert "dashed" not in block and "circle with + is an add" in block and "column" not in block
    lm = legend(dataflow(index, "model.transformer.forward", ["model.transformer.block_forward"]))
    assert "A dashed frame is a loop" in lm
    s2s = legend(dataflow(index, "model.seq2seq.forward", SEQ2SEQ_EXPAND), ["encode_forward", "decode_forward"])
    assert "Each column is one call drawn inside its caller: encode_forward, decode_forward." in s2s
    page = site_page("block")
    shown = re.search(r'<p class="arch-legend">(.*?)</p>', page).group(1)
    assert shown == block + " Each box links to what explains it.", shown     # the page links every box
