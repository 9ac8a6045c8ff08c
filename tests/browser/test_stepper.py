"""The step-through: Next walks every step, each showing exactly the build's numbers (the
JSON in data-steps, which is the example's own output), the line being run is highlighted in
the listing and linked on its source page; Previous, Reset and the arrow keys move back."""
import json

import pytest

from site_builder.examples import load_example
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
      return {status: box.querySelector(".stepper-status").textContent, current,
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
    assert [rows[f"term{j}"] for j in range(len(terms))] == [[t["name"], t["row"]] for t in terms]
    if terms:      # a residual add: both terms and their sum, to the printed precision
        total = [sum(float(t["row"][i]) for t in terms) for i in range(len(st["after"]))]
        assert all(abs(a - float(b)) < 2e-4 for a, b in zip(total, st["after"]))
    if k and st.get("before"):
        assert rows["before"] == [steps[k - 1]["name"], st["before"]]


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
