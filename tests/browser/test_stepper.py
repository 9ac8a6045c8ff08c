"""The step-through: Next walks every step, each showing exactly the build's numbers (the
JSON in data-steps, which is the example's own output), the line being run is highlighted in
the listing and linked on its source page; Previous, Reset and the arrow keys move back."""
import json

import pytest

from site_builder.run.examples import load_example
from tests.conftest import ROOT


def shown(page, stepper):
    """What the panel shows now: {status, line, href, rows: {row class: (name, [numbers])}}."""
    return stepper.evaluate("""(box) => {
      const panel = box.querySelector(".stepper-panel");
      const rows = {};
      for (const tr of panel.querySelectorAll("tr")) {
        const key = tr.classList.contains("term") ? "term" + Object.keys(rows).filter(k => k.startsWith("term")).length : tr.className;
        rows[key] = [tr.dataset.name, [...tr.querySelectorAll("td")].map(td => td.textContent)];
      }
      const current = [...box.querySelectorAll(".stepper-code tr.current")].map(tr => Number(tr.dataset.line));
      const link = panel.querySelector(".stepper-line a");
      const says = panel.querySelector(".stepper-says");
      return {status: box.querySelector(".stepper-status").textContent, current, says: says ? says.textContent : undefined,
              href: link.getAttribute("href"), linkText: link.textContent, rows};
    }""")


def check_step(state, steps, k, row):
    st = steps[k]
    assert state["status"] == f"Step {k + 1} of {len(steps)}: {st['label']}"
    assert state["current"] == [st["line"]], "the listing highlights exactly the line being run"
    assert state["href"].endswith(f".html#L{st['line']}") and state["linkText"].endswith(f":{st['line']}")
    rows = state["rows"]
    assert rows["after"] == [st["name"], st["after"]]
    terms = st.get("terms") or []
    if terms:      # a residual add: "before" is the stream added to, then the branch, then their sum
        assert rows["before"] == [terms[0]["name"], terms[0]["row"]]
        assert [rows[f"term{j}"] for j in range(len(terms) - 1)] == [[t["name"], t["row"]] for t in terms[1:]]
        total = [sum(float(t["row"][i]) for t in terms) for i in range(len(st["after"]))]
        assert all(abs(a - float(b)) < 2e-4 for a, b in zip(total, st["after"]))
    elif k and st.get("before"):   # what the line reads (site_builder/run/examples.py line_input)
        assert rows["before"] == [st["before_name"], st["before"]]
    says = state["says"]
    assert says == st.get("says"), "the panel shows the step's one sentence, if it has one"


def test_every_stepper_walks_every_step(page, site_url, pages_with):
    found = 0
    for name in pages_with('class="stepper"'):
        page.goto(site_url + name)
        for i in range(page.locator(".stepper.stepper-live").count()):
            stepper = page.locator(".stepper.stepper-live").nth(i)
            steps = json.loads(stepper.get_attribute("data-steps"))
            row = stepper.get_attribute("data-row")
            check_step(shown(page, stepper), steps, 0, row)
            for k in range(1, len(steps)):
                stepper.locator(".stepper-next").click()
                check_step(shown(page, stepper), steps, k, row)
            assert stepper.locator(".stepper-next").get_attribute("aria-disabled") == "true"
            stepper.locator(".stepper-next").dispatch_event("click")   # at the end: stays
            assert shown(page, stepper)["status"].startswith(f"Step {len(steps)} of")
            stepper.locator(".stepper-prev").click()
            check_step(shown(page, stepper), steps, len(steps) - 2, row)
            stepper.locator(".stepper-reset").click()
            check_step(shown(page, stepper), steps, 0, row)
            stepper.locator(".stepper-next").focus()                   # the arrow keys
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowRight")
            check_step(shown(page, stepper), steps, 2, row)
            page.keyboard.press("ArrowLeft")
            check_step(shown(page, stepper), steps, 1, row)
            page.keyboard.press("End")
            check_step(shown(page, stepper), steps, len(steps) - 1, row)
            page.keyboard.press("Home")
            check_step(shown(page, stepper), steps, 0, row)
            found += 1
    assert found >= 2, "the block page alone has a forward and a backward stepper"


@pytest.mark.parametrize("example", ["block_forward_steps", "block_backward_steps"])
def test_block_steppers_show_the_examples_own_numbers(page, site_url, example):
    """data-steps is what the example function returns when called here, so the page's values
    are the model's (tests/test_page_block.py checks those against direct calls)."""
    steps = load_example(ROOT, f"block:{example}")().blocks[0]["steps"]
    page.goto(site_url + "block.html")
    data = [json.loads(s) for s in page.locator(".stepper").evaluate_all("els => els.map(e => e.dataset.steps)")]
    assert steps in data
    adds = [s for s in steps if s.get("terms")]
    assert len(adds) == 2, "the block has two residual adds, and the stepper shows both terms of each"


def test_choosing_a_row_and_a_layer(page, site_url):
    """The forward stepper's row and layer menus load that combination's steps (each computed by
    the example function called with them), keep the step controls working, and put the choice
    in the URL so a reload shows it again. Every step of it says in one sentence what it does,
    and at each residual add "before" is the stream being added to."""
    fn = load_example(ROOT, "block:block_forward_steps")
    page.goto(site_url + "block.html")
    form = page.locator("form.play").filter(has=page.locator('select[name="row"]'))
    example = page.locator(".example").filter(has=form)
    form.locator('select[name="row"]').select_option("2")
    form.locator('select[name="layer"]').select_option("1")
    want = fn(row=2, layer=1).blocks[0]["steps"]
    stepper = example.locator(".stepper.stepper-live")
    page.wait_for_function("(el) => el.querySelector('.stepper').dataset.row === '2' && "
                           "el.querySelector('.stepper-note').textContent.includes('block 1')",
                           arg=example.element_handle())
    assert json.loads(stepper.get_attribute("data-steps")) == want
    assert all(st.get("says") for st in want), "every step has its sentence"
    for k in range(len(want)):
        if k:
            stepper.locator(".stepper-next").click()
        check_step(shown(page, stepper), want, k, "2")
    assert "row=2" in page.url and "layer=1" in page.url
    page.reload()
    stepper = page.locator(".example").filter(has=page.locator('select[name="row"]')).locator(".stepper.stepper-live")
    page.wait_for_function("() => document.querySelector('form.play select[name=row]').value === '2' && "
                           "[...document.querySelectorAll('.stepper')].some(s => s.dataset.row === '2')")
    assert json.loads(stepper.get_attribute("data-steps")) == want
