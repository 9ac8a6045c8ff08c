"""Choosing inputs: on the static site a choice loads that combination's body (computed by the
build, loaded on demand) and stays in the URL; under `serve` a typed prompt is recomputed by the
real code and the heatmap changes without a reload. (Choosing the stepper's row and layer is
in test_stepper.py.)"""
import os
import re

from site_builder.run.examples import load_example
from site_builder.serve.play import Playground
from tests.conftest import ROOT


def example_with(page, name):
    """The .example whose controls have a menu or field called `name`."""
    return page.locator(".example").filter(has=page.locator(f'form.play [name="{name}"]')).first


def heatmap_label(example):
    return example.locator(".example-body svg.heatmap").get_attribute("aria-label")


def test_choosing_a_head_and_a_temperature_on_the_static_site(page, site_url):
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(site_url + "attention.html")
    ex = example_with(page, "head")
    assert "head 0" in heatmap_label(ex)
    before = len(requests)
    ex.locator('select[name="head"]').select_option("2")
    ex.locator('select[name="layer"]').select_option("1")
    ex.locator('select[name="prompt"]').select_option("3")
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('All the world')",
                           arg=ex.element_handle())
    label = heatmap_label(ex)
    assert "block 1, head 2" in label and "All the world" in label
    assert any("/play/" in u for u in requests[before:]), "the combination was loaded on demand"
    assert re.search(r"[?&]head=2", page.url) and re.search(r"[?&]prompt=3", page.url)
    page.reload()
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('head 2')",
                           arg=example_with(page, "head").element_handle())
    assert example_with(page, "head").locator('select[name="head"]').input_value() == "2"

    page.goto(site_url + "generation.html?temperature=2")        # the choice is written 2.0: the same number
    ex = example_with(page, "temperature")
    want = load_example(ROOT, "generation:at_temperature")(temperature=2.0).blocks
    page.wait_for_function("(el) => el.querySelector('.example-body caption') && "
                           "el.querySelector('.example-body th:nth-child(3)').textContent.includes('T = 2')",
                           arg=ex.element_handle())
    cells = ex.locator(".example-body table").first.locator("tbody tr").first.locator("td").all_text_contents()
    assert cells == [str(c) for c in want[0]["rows"][0]], "the first row is the example's own, at T = 2"
    sample = ex.locator(".example-body table").nth(1).locator("tbody td").nth(1).text_content()
    assert sample == want[1]["rows"][0][1], "the sample at T = 2, fixed seed"
    ex.locator('select[name="temperature"]').select_option("0.25")
    page.wait_for_function("(el) => el.querySelector('.example-body th:nth-child(3)').textContent.includes('T = 0.25')",
                           arg=ex.element_handle())
    assert "temperature=0.25" in page.url
    page.goto(site_url + "generation.html?temperature=7")        # not among the choices: said, not ignored
    status = example_with(page, "temperature").locator(".play-status")
    assert "temperature=7, which is not among the choices" in status.text_content()
    assert example_with(page, "temperature").locator('select[name="temperature"]').input_value() == \
        example_with(page, "temperature").locator('select[name="temperature"] option[selected]').get_attribute("value")
    page.goto(site_url + "attention.html?head=-1&layer=abc")      # two at once: said together
    status = example_with(page, "head").locator(".play-status")
    assert "head=-1 and layer=abc, which are not among the choices" in status.text_content()


def test_a_typed_prompt_is_recomputed_under_serve(page, play_server):
    page.goto(play_server.url + "attention.html?head=1")
    ex = example_with(page, "head")
    free = ex.locator('input[name="prompt"]')
    assert free.is_visible() and ex.locator(".play-note").first.is_hidden()
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('head 1')",
                           arg=ex.element_handle())
    cells_before = ex.locator(".example-body svg.heatmap").inner_html()
    page.evaluate("window.__sameDocument = true")
    free.fill("the cat sat on")
    ex.get_by_role("button", name="Run on my input").click()
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('the cat sat on')",
                           arg=ex.element_handle(), timeout=60000)
    assert page.evaluate("window.__sameDocument === true"), "the page updated without a reload"
    assert "head 1" in heatmap_label(ex), "the chosen head is kept"
    assert ex.locator(".example-body svg.heatmap").inner_html() != cells_before, "the heatmap changed"
    assert "text typed by the reader" in ex.locator(".provenance").text_content()
    assert "Recomputed by the real code" in ex.locator(".play-status").text_content()
    assert "typed-prompt=the+cat+sat+on" in page.url and "head=1" in page.url, "the typed value is kept in the URL"
    free.fill("naïve €")
    ex.get_by_role("button", name="Run on my input").click()
    page.wait_for_function("(el) => el.querySelector('.play-status').textContent.includes('outside its vocabulary')",
                           arg=ex.element_handle(), timeout=60000)
    assert "'€'" in ex.locator(".play-status").text_content()
    assert "the cat sat on" in heatmap_label(ex), "a refused input leaves the last result"


def test_an_input_too_long_to_send_gets_the_declarations_refusal_under_serve(page, play_server):
    """Under serve too the page checks a typed value against the declaration before it sends
    it, so a value longer than /__play takes is refused for what it is, as on a static host."""
    page.goto(play_server.url + "attention.html")
    ex = example_with(page, "head")
    ex.locator('input[name="prompt"]').fill("a" * 20000)
    ex.get_by_role("button", name="Run on my input").click()
    status = ex.locator(".play-status")
    page.wait_for_function("(el) => el.querySelector('.play-status').textContent !== ''", arg=ex.element_handle())
    assert status.text_content() == serve_refusal("a" * 20000) == "prompt is 20000 characters long; at most 16 are allowed"


def test_a_link_with_a_typed_prompt_runs_it_under_serve(page, play_server):
    page.goto(play_server.url + "attention.html?head=1&typed-prompt=to+be+or")
    ex = example_with(page, "head")
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('to be or')",
                           arg=ex.element_handle(), timeout=60000)
    assert ex.locator('input[name="prompt"]').input_value() == "to be or"
    assert "head 1" in heatmap_label(ex)
    assert "Recomputed by the real code" in ex.locator(".play-status").text_content()
    # typed text that reads like a menu's value (the prompt menu's values are 0, 1, ...) is
    # still the typed text: ?typed-prompt=1, not ?prompt=1 (the menu's second choice)
    ex.locator('input[name="prompt"]').fill("1")
    ex.get_by_role("button", name="Run on my input").click()
    page.wait_for_function("() => location.search.includes('typed-prompt=1')", timeout=60000)
    menu = ex.locator('select[name="prompt"]')
    assert menu.evaluate("(s) => s.selectedOptions[0].textContent") == "your prompt", "not the menu's second choice"
    assert "prompt=1" not in page.url.replace("typed-prompt=1", "")
    page.goto(page.url)
    ex = example_with(page, "head")
    page.wait_for_function("(el) => el.querySelector('.play-status').textContent.includes('Recomputed')",
                           arg=ex.element_handle(), timeout=60000)
    assert ex.locator('input[name="prompt"]').input_value() == "1"
    assert "'1'" in heatmap_label(ex)


def test_a_typed_prompt_is_recomputed_by_its_tape_on_the_static_site(page, site_url):
    """On a plain static server the field is shown; the replayer and the tape load only when it
    is first used; the heatmap is redrawn for the typed prompt, and the status says the browser
    computed it; an input outside the declaration is one line, and leaves the last result."""
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(site_url + "attention.html?head=1")
    ex = example_with(page, "head")
    free = ex.locator('input[name="prompt"]')
    assert free.is_visible(), "free input on a static host"
    assert "recomputed in your browser" in ex.locator(".play-replay-note").text_content()
    assert not any("replay" in u or "tape.js" in u for u in requests), "nothing of the replayer loads before first use"
    before = ex.locator(".example-body svg.heatmap").inner_html()
    free.fill("the cat sat on")
    ex.get_by_role("button", name="Recompute on my input").click()
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('the cat sat on')",
                           arg=ex.element_handle(), timeout=30000)
    assert "head 1" in heatmap_label(ex), "the chosen head is kept"
    assert ex.locator(".example-body svg.heatmap").inner_html() != before, "the heatmap was redrawn"
    assert "Recomputed in your browser by replaying the tape" in ex.locator(".play-status").text_content()
    assert "Recomputed in your browser by the tape" in ex.locator(".provenance").text_content()
    assert any(u.endswith("tape.js") for u in requests) and any("static/js/replay.js" in u for u in requests)
    assert "typed-prompt=the+cat+sat+on" in page.url
    ex.locator('select[name="layer"]').select_option("1")        # a menu reruns the tape on the typed prompt
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('block 1')",
                           arg=ex.element_handle(), timeout=30000)
    assert "the cat sat on" in heatmap_label(ex)
    free.fill("naïve €")
    ex.get_by_role("button", name="Recompute on my input").click()
    status = ex.locator(".play-status")
    page.wait_for_function("(el) => el.querySelector('.play-status').textContent.includes('outside its vocabulary')",
                           arg=ex.element_handle())
    assert status.text_content() == serve_refusal("naïve €"), "the same one line as /__play's"
    assert "the cat sat on" in heatmap_label(ex), "a refused input leaves the last result"
    free.fill("x" * 17)
    ex.get_by_role("button", name="Recompute on my input").click()
    assert status.text_content() == serve_refusal("x" * 17) == "prompt is 17 characters long; at most 16 are allowed"


def serve_refusal(prompt):
    """What /__play answers for this prompt on the attention example: the declaration's refusal."""
    reply = Playground(ROOT).handle(dict(page="attention", example="attention-lm--ex-2", args=dict(prompt=prompt)))
    return reply.get("error")


def test_a_link_with_a_typed_prompt_runs_its_tape_on_the_static_site(page, site_url):
    page.goto(site_url + "attention.html?head=2&typed-prompt=to+be+or")
    ex = example_with(page, "head")
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('to be or')",
                           arg=ex.element_handle(), timeout=30000)
    assert ex.locator('input[name="prompt"]').input_value() == "to be or"
    assert "head 2" in heatmap_label(ex)


def test_a_page_without_a_playable_example_loads_nothing_of_the_replayer(page, site_url):
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(site_url + "embeddings.html")
    page.wait_for_load_state("load")
    assert not page.locator("form.play").count()
    assert not any("replay" in u or "tape" in u or "heatmap.js" in u for u in requests), requests


def test_a_typed_eps_is_recomputed_by_its_tape_on_the_static_site(page, site_url):
    page.goto(site_url + "layernorm.html")
    ex = example_with(page, "eps")
    free = ex.locator('input[name="eps"]')
    assert free.is_visible()
    free.fill("0.5")
    ex.get_by_role("button", name="Recompute on my input").click()
    page.wait_for_function("(el) => el.querySelector('.example-body caption').textContent === 'eps = 0.5'",
                           arg=ex.element_handle(), timeout=30000)
    want = load_example(ROOT, "layernorm:with_eps")(eps=0.5).blocks[0]["rows"]
    rows = ex.locator(".example-body table tbody tr")
    assert [rows.nth(i).locator("th, td").all_text_contents() for i in range(rows.count())] == want, \
        "the replayed table reads as the build's own at eps = 0.5"
    assert "Recomputed in your browser" in ex.locator(".play-status").text_content()
    free.fill("200")
    ex.get_by_role("button", name="Recompute on my input").click()
    reply = Playground(ROOT).handle(dict(page="layernorm", example=ex.get_attribute("id"), args=dict(eps="200")))
    assert ex.locator(".play-status").text_content() == reply["error"] == "eps must be between 0 and 100, got 200"


SHOTS = os.environ.get("PLAY_SHOTS")    # a folder: screenshots of the four examples after typed input, for a look


def recompute(ex, name, value):
    ex.locator(f'input[name="{name}"]').fill(value)
    ex.get_by_role("button", name="Recompute on my input").click()


def shot(ex, name):
    if SHOTS:
        ex.screenshot(path=os.path.join(SHOTS, f"{name}.png"))


def cells(table):
    rows = table.locator("tbody tr")
    return [rows.nth(i).locator("th, td").all_text_contents() for i in range(rows.count())]


def test_a_typed_temperature_and_prompt_are_recomputed_by_their_tape_on_the_static_site(page, site_url):
    """The generation example on a plain static server: the distribution and generate's 80
    characters at the reader's temperature and prompt, as at_temperature gives them."""
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(site_url + "generation.html")
    ex = example_with(page, "temperature")
    assert ex.locator('input[name="prompt"]').is_visible() and ex.locator('input[name="temperature"]').is_visible()
    assert not any("tape.js" in u for u in requests), "the tape loads on first use only"
    ex.locator('input[name="prompt"]').fill("ROMEO: What")
    recompute(ex, "temperature", "0.7")
    page.wait_for_function("(el) => el.querySelector('.example-body th:nth-child(3)').textContent.includes('T = 0.7')",
                           arg=ex.element_handle(), timeout=60000)
    want = load_example(ROOT, "generation:at_temperature")(temperature=0.7, prompt="ROMEO: What").blocks
    tables = ex.locator(".example-body table")
    assert cells(tables.first) == [[str(c) for c in row] for row in want[0]["rows"]], "the distribution, as NumPy's"
    assert cells(tables.nth(1)) == want[1]["rows"], "generate's continuation: the same draws"
    assert tables.first.locator("caption").text_content() == want[0]["caption"]
    assert "Recomputed in your browser by replaying the tape" in ex.locator(".play-status").text_content()
    assert "typed by the reader" in ex.locator(".provenance").text_content()
    shot(ex, "generation")
    ex.locator('select[name="temperature"]').select_option("2.0")   # a menu reruns the tape on the typed prompt
    page.wait_for_function("(el) => el.querySelector('.example-body th:nth-child(3)').textContent.includes('T = 2')",
                           arg=ex.element_handle(), timeout=60000)
    assert "ROMEO: What" in ex.locator(".example-body table").nth(1).text_content()
    recompute(ex, "temperature", "5.0000001")
    reply = Playground(ROOT).handle(dict(page="generation", example=ex.get_attribute("id"), args=dict(temperature="5.0000001")))
    assert ex.locator(".play-status").text_content() == reply["error"] == \
        "temperature must be between 0.05 and 5, got 5.0000001", "the value as typed, as /__play says it"


def stepper_cells(steps):
    """The numbers a stepper shows, row by row, as the template draws them."""
    out = []
    for st in steps:
        out += [t["row"] for t in st["terms"]] if st.get("terms") else ([st["before"]] if st.get("before") else [])
        out.append(st["after"])
    return out


def test_typed_row_values_are_recomputed_by_their_tape_on_the_static_site(page, site_url):
    page.goto(site_url + "block.html?row=2&layer=1")
    ex = example_with(page, "values")
    page.wait_for_function("(el) => el.querySelector('.stepper-note').textContent.includes('in block 1')",
                           arg=ex.element_handle(), timeout=30000)
    recompute(ex, "values", "1 -2.5 3 9.75")
    page.wait_for_function("(el) => el.querySelector('.provenance').textContent.includes('typed by the reader')",
                           arg=ex.element_handle(), timeout=30000)
    want = load_example(ROOT, "block:block_forward_steps")(row=2, layer=1, values=[1.0, -2.5, 3.0, 9.75]).blocks[0]
    rows = ex.locator(".example-body .stepper-step table tr")
    shown = [rows.nth(i).locator("td").all_text_contents() for i in range(rows.count())]
    assert shown == stepper_cells(want["steps"]), "every number of the stepper, as NumPy's"
    assert "in block 1" in ex.locator(".stepper-note").text_content() and "Row 2" in ex.locator(".stepper-note").text_content()
    shot(ex, "block")
    recompute(ex, "values", "1 2 3")
    assert ex.locator(".play-status").text_content() == "values must be 4 numbers, got 3"


def test_an_empty_row_field_shows_the_builds_row_and_a_recomputed_body_keeps_copy_code(page, site_url):
    """The stepper's values have no menu: empty, the field is not typed, so the page shows the
    row this build computed, as /__play runs the function's default; not a refusal. And the
    listings of a recomputed body keep a Copy code button that copies."""
    reply = Playground(ROOT).handle(dict(page="block", example="block-forward--ex-1", args={}))
    assert "error" not in reply, "/__play runs the default when nothing is typed"
    page.goto(site_url + "block.html")
    ex = example_with(page, "values")
    body, status = ex.locator(".example-body"), ex.locator(".play-status")
    first = body.text_content()           # (inner_text skips what content-visibility has not drawn)
    listings = ex.locator(".example-body .listing").count()
    assert listings and ex.locator(".example-body .copy-code").count() == listings
    recompute(ex, "values", "")
    page.wait_for_timeout(300)
    assert status.text_content() == "" and "play-error" not in (status.get_attribute("class") or "")
    assert body.text_content() == first, "the build's own row"
    recompute(ex, "values", "1 -2 3 -4")
    page.wait_for_function("(el) => el.querySelector('.provenance').textContent.includes('typed by the reader')",
                           arg=ex.element_handle(), timeout=30000)
    buttons = ex.locator(".example-body .copy-code")
    assert buttons.count() == listings, "each listing of the recomputed body has its Copy code"
    buttons.first.click()
    page.wait_for_function("(b) => b.dataset.copied !== undefined", arg=buttons.first.element_handle())


def test_the_provenance_names_only_what_was_typed(page, site_url):
    """A typed temperature with the prompt left empty: the prompt is the example's default and
    the provenance says the temperature alone was typed."""
    page.goto(site_url + "generation.html")
    ex = example_with(page, "temperature")
    recompute(ex, "temperature", "0.9")
    page.wait_for_function("(el) => el.querySelector('.provenance').textContent.includes('typed by the reader')",
                           arg=ex.element_handle(), timeout=60000)
    said = ex.locator(".provenance").text_content()
    assert "T = 0.9 typed by the reader" in said and "prompt" not in said.split(";")[-1], said
    want = load_example(ROOT, "generation:at_temperature")(temperature=0.9).blocks
    assert cells(ex.locator(".example-body table").first) == [[str(c) for c in row] for row in want[0]["rows"]]


def test_each_playable_example_recomputes_typed_input_on_a_static_host(page, site_url):
    """The four playable examples, on the site served by a plain static server: a typed value
    changes what the example shows, and the status says the browser computed it."""
    for slug, name, value, shows in [("attention", "prompt", "O Romeo, Romeo", "O Romeo"),
                                     ("generation", "temperature", "1.3", "T = 1.3"),
                                     ("layernorm", "eps", "0.25", "eps = 0.25"),
                                     ("block", "values", "0.5 0.5 -4 2", "typed by the reader")]:
        page.goto(site_url + f"{slug}.html")
        ex = example_with(page, name)
        body = ex.locator(".example-body")
        before = body.inner_html()
        recompute(ex, name, value)
        page.wait_for_function("([el, text]) => el.querySelector('.example-body').innerHTML.includes(text)",
                               arg=[ex.element_handle(), shows], timeout=60000)
        assert body.inner_html() != before, slug
        assert "Recomputed in your browser" in ex.locator(".play-status").text_content(), slug
        if slug in ("attention", "layernorm"):
            shot(ex, slug)


def test_the_prompt_menu_says_your_prompt_after_a_typed_one(page, site_url):
    page.goto(site_url + "attention.html?prompt=2")
    ex = example_with(page, "head")
    menu = ex.locator('select[name="prompt"]')
    recompute(ex, "prompt", "the cat")
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('the cat')",
                           arg=ex.element_handle(), timeout=30000)
    assert menu.evaluate("(s) => s.selectedOptions[0].textContent") == "your prompt", "the menu names what is shown"
    assert "prompt=2" in page.url and "__typed" not in page.url
    menu.select_option("1")                       # back to a listed prompt: the typed one is gone
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('Now is')",
                           arg=ex.element_handle(), timeout=30000)
    assert ex.locator('input[name="prompt"]').input_value() == ""
    assert not menu.locator('option[value="__typed"]').count()


def test_spaces_and_an_empty_field_follow_one_declaration_on_both_paths(page, site_url):
    """An empty field is no typed value (the menu's runs) on both paths; any other text, spaces
    too, is checked against the declaration on both, and computed by both or refused by both."""
    assert serve_refusal("   ") is None, "/__play computes a prompt of spaces"
    page.goto(site_url + "attention.html")
    ex = example_with(page, "head")
    recompute(ex, "prompt", "   ")
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes(\"'   '\")",
                           arg=ex.element_handle(), timeout=30000)
    recompute(ex, "prompt", "")
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('To be')",
                           arg=ex.element_handle(), timeout=30000)
    assert "typed-prompt" not in page.url


def test_a_typed_number_is_refused_alike_by_the_page_and_by_play(page, site_url):
    """The page's check of a typed number is the declaration's, as Python reads it: each text
    below gets, in the static page's status, the very line /__play answers; and -0, which both
    accept, is captioned -0 as NumPy's run prints it."""
    page.goto(site_url + "layernorm.html")
    ex = example_with(page, "eps")
    status = ex.locator(".play-status")
    for text in ["   ", "1_0", "\u0661", "1e999", "-inf", "nan", "0." + "0" * 39 + "1", "abc"]:
        want = Playground(ROOT).handle(dict(page="layernorm", example=ex.get_attribute("id"), args=dict(eps=text)))
        assert "error" in want, text
        page.evaluate("(el) => { el.textContent = '' }", status.element_handle())
        recompute(ex, "eps", text)
        page.wait_for_function("(el) => el.querySelector('.play-status').textContent !== ''",
                               arg=ex.element_handle(), timeout=30000)
        assert status.text_content() == want["error"], text
    # what is space is Python's: U+FEFF (space to JavaScript's trim) is refused as /__play refuses it
    for text in ["\ufeff0.5", "0.5\ufeff"]:
        assert "error" in Playground(ROOT).handle(dict(page="layernorm", example=ex.get_attribute("id"), args=dict(eps=text)))
        page.evaluate("(el) => { el.textContent = '' }", status.element_handle())
        recompute(ex, "eps", text)
        page.wait_for_function("(el) => el.querySelector('.play-status').textContent !== ''",
                               arg=ex.element_handle(), timeout=30000)
        assert "play-error" in status.get_attribute("class") and "must be a number" in status.text_content(), text
    recompute(ex, "eps", "-0")
    page.wait_for_function("(el) => el.querySelector('.example-body caption').textContent === 'eps = -0'",
                           arg=ex.element_handle(), timeout=30000)


def test_an_empty_field_under_serve_shows_the_builds_body_without_asking(page, play_server):
    """Under serve an empty field is no typed value: the build's body comes back with no
    request to /__play and a blank status; a typed one is computed by serve and its provenance
    names what was typed."""
    posts = []
    page.on("request", lambda r: posts.append(r.url) if "__play" in r.url else None)
    page.goto(play_server.url + "layernorm.html")
    ex = example_with(page, "eps")
    body, status = ex.locator(".example-body"), ex.locator(".play-status")
    first = body.text_content()
    ex.locator('input[name="eps"]').fill("0.5")
    ex.get_by_role("button", name="Run on my input").click()
    page.wait_for_function("(el) => el.querySelector('.example-body caption').textContent === 'eps = 0.5'",
                           arg=ex.element_handle(), timeout=60000)
    said = ex.locator(".provenance").text_content()
    assert "Computed by serve, on your input" in said and "eps typed by the reader" in said, said
    asked = len(posts)
    ex.locator('input[name="eps"]').fill("")
    ex.get_by_role("button", name="Run on my input").click()
    page.wait_for_function("([el, text]) => el.querySelector('.example-body').textContent === text",
                           arg=[ex.element_handle(), first], timeout=30000)
    assert len(posts) == asked, "nothing was posted for an empty field"
    assert status.text_content() == ""


def test_under_serve_the_latest_request_wins(own_page, play_server):
    """A typed prompt's answer that comes back after a later request (the layer changed
    meanwhile) is dropped: the heatmap is the layer the menu and the URL say. The first
    answer is held back in the page by 2 s, so the later one lands first (an init script:
    a tab of its own)."""
    page = own_page
    page.add_init_script("""(() => {
      let n = 0; const real = window.fetch;
      window.fetch = (...args) => {
        const reply = real(...args);
        if (!String(args[0]).includes('__play') || n++ > 0) return reply;
        return reply.then((r) => new Promise((ok) => setTimeout(() => { ok(r); setTimeout(() => { window.__lateDone = true; }, 50); }, 2000)));
      };
    })()""")
    page.goto(play_server.url + "attention.html")
    ex = example_with(page, "head")
    ex.locator('input[name="prompt"]').fill("to be or not")
    ex.get_by_role("button", name="Run on my input").click()
    ex.locator('select[name="layer"]').select_option("1")
    page.wait_for_function("() => window.__lateDone === true", timeout=60000)
    page.wait_for_function("(el) => el.querySelector('svg.heatmap').getAttribute('aria-label').includes('to be or not')",
                           arg=ex.element_handle(), timeout=60000)
    assert "block 1" in heatmap_label(ex) and "layer=1" in page.url, heatmap_label(ex)
