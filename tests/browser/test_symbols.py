"""Linked symbols: hovering or focusing a symbol lights it up in the equations, the symbol
table, the code listings and the example tables of its concept."""


def lit(section):
    return section.evaluate("""(s) => [...s.querySelectorAll(".sym-hl")].map((e) => ({
        where: e.closest(".katex") ? "equation" : e.closest("table.symbols") ? "table"
             : e.closest(".listing") ? "code" : e.closest(".example") ? "example" : "other",
        text: e.textContent.replace(/\\u200b/g, "").trim()}))""")


def test_hovering_a_symbol_reaches_the_code(page, site_url):
    page.goto(site_url + "block.html")
    section = page.locator("section#block-forward")
    row = section.locator('table.symbols tr[data-names="X1"]')
    row.hover()
    found = lit(section)
    places = {f["where"] for f in found}
    assert {"equation", "table", "code"} <= places, found
    assert all(f["text"] in ("X1", "X_1", "X1") or f["where"] in ("table", "equation") for f in found)
    code = [f for f in found if f["where"] == "code"]
    assert code and all(f["text"] == "X1" for f in code)
    # the code tokens include the line that computes X1
    assert section.locator('.listing tr[data-line] span.sym-hl').count() >= 2
    page.mouse.move(0, 0)
    assert section.locator(".sym-hl").count() == 0


def test_hovering_an_equation_atom_and_focusing_a_row(page, site_url):
    page.goto(site_url + "block.html")
    section = page.locator("section#block-forward")
    n = section.locator('table.symbols tr[data-names="att"]').get_attribute("data-sym")
    section.locator(f".katex .sym-{n}").first.hover()
    found = lit(section)
    assert any(f["where"] == "table" for f in found) and any(f["where"] == "code" and f["text"] == "att" for f in found)
    page.mouse.move(0, 0)
    # keyboard: a symbol row takes focus
    row = section.locator('table.symbols tr[data-names="X"]')
    row.focus()
    assert row.evaluate("r => r.classList.contains('sym-hl')")
    # the stepper's rows are example tables: at step 1 it shows X[1]
    assert any(f["where"] == "example" for f in lit(section))
    page.keyboard.press("Tab")


def test_every_symbol_marks_its_equations(page, site_url, pages_with):
    """Each equation marks at least one symbol on the pages whose concepts declare symbols."""
    page.goto(site_url + "block.html")
    counts = page.evaluate("""() => [...document.querySelectorAll("section.concept")].map((s) => [s.id,
        s.querySelectorAll("table.symbols tr[data-sym]").length, s.querySelectorAll(".katex [class*='sym-']").length])""")
    for sid, symbols, marked in counts:
        if symbols:
            assert marked > 0, sid
