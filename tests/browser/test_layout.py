"""Themes, layout from phone to wide screen, print, and the small comforts (copy buttons,
keyboard shortcuts). Screenshots of the block page, light and dark, desktop and phone, go to
the test output folder (pytest-playwright's --output, test-results/ by default)."""
import os

import pytest

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}


def no_sideways_scroll(page):
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_screenshots(page, site_url, output_path, scheme, size):
    page.set_viewport_size(PHONE if size == "phone" else DESKTOP)
    page.emulate_media(color_scheme=scheme)
    page.goto(site_url + "block.html#block-forward--example")
    page.evaluate("document.fonts.ready.then(() => true)")
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert (bg == "rgb(22, 24, 28)") == (scheme == "dark"), bg      # --bg of each theme
    assert no_sideways_scroll(page), "the page itself never scrolls sideways; wide parts scroll in their box"
    os.makedirs(output_path, exist_ok=True)
    page.screenshot(path=os.path.join(output_path, f"block-{size}-{scheme}.png"))
    page.goto(site_url + "block.html#block-backward--flow")
    page.screenshot(path=os.path.join(output_path, f"block-flow-{size}-{scheme}.png"))


def test_theme_toggle_is_remembered(page, site_url):
    page.emulate_media(color_scheme="light")
    page.goto(site_url + "block.html")
    toggle = page.locator(".theme-toggle")
    assert toggle.is_visible()
    toggle.click()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.goto(site_url + "index.html")            # the next page starts dark (the inline script)
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(22, 24, 28)"
    page.locator(".theme-toggle").click()
    page.reload()
    assert page.evaluate("document.documentElement.dataset.theme") == "light"


DARK_BG = "rgb(22, 24, 28)"                     # --bg of the dark theme


def showing(page):
    return "dark" if page.evaluate("getComputedStyle(document.body).backgroundColor") == DARK_BG else "light"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_theme_toggle_says_what_clicking_does(page, site_url, scheme):
    """Its text names the theme a click switches to, never the one showing; it is an action
    button (its label changes), so it has no aria-pressed state to contradict the label."""
    page.emulate_media(color_scheme=scheme)
    page.goto(site_url + "block.html")
    toggle = page.locator(".theme-toggle")
    for _ in range(3):                             # the system's theme, the other one, back again
        other = "light" if showing(page) == "dark" else "dark"
        assert toggle.inner_text() == f"Switch to {other} theme", (scheme, showing(page))
        assert toggle.get_attribute("aria-pressed") is None
        toggle.click()
        assert showing(page) == other


def test_the_system_theme_applies_until_a_choice(page, site_url):
    page.emulate_media(color_scheme="dark")
    page.goto(site_url + "index.html")
    assert page.evaluate("document.documentElement.dataset.theme") is None
    assert page.locator(".theme-toggle").inner_text() == "Switch to light theme"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == DARK_BG


def test_phone_layout_menu_and_wide_parts(page, site_url):
    page.set_viewport_size(PHONE)
    page.goto(site_url + "block.html")
    sidebar, menu = page.locator("#sidebar"), page.locator(".nav-toggle")
    assert menu.is_visible() and sidebar.is_hidden()
    menu.click()
    assert sidebar.is_visible() and menu.get_attribute("aria-expanded") == "true"
    menu.click()
    assert sidebar.is_hidden()
    assert page.locator("#search-input").is_visible()
    # wide listings and tables scroll in their own box, which then takes keyboard focus
    # (measured as it comes near the screen: site.js); a symbol table fits (test_lesson.py)
    page.locator("#block-forward--code").scroll_into_view_if_needed()
    # site.js measures a box when the browser says it drew it, and every box again on a resize:
    # the resize makes the wait not hang on when that notice comes (it did, inside the suite)
    page.evaluate("dispatchEvent(new Event('resize'))")
    page.wait_for_selector(".scroll[data-scroll-focus]", state="attached")
    wide = page.locator(".scroll[data-scroll-focus]")
    assert wide.count() > 0
    box = wide.first
    assert box.evaluate("b => b.scrollWidth > b.clientWidth && getComputedStyle(b).overflowX === 'auto'")
    assert box.get_attribute("tabindex") == "0" and box.get_attribute("aria-label")
    assert no_sideways_scroll(page)
    # and on a wide screen the three columns show
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(site_url + "block.html")
    assert page.locator("nav.toc").is_visible() and page.locator("#sidebar").is_visible()
    assert page.locator(".nav-toggle").is_hidden()


def test_a_footer_naming_uncommitted_files_wraps_on_a_phone(page, site_url):
    """A build from a working tree lists each uncommitted file in the footer ("Built from
    commit ..., with uncommitted changes to tests/browser/test_lesson.py, ..."): on a phone
    that line wraps, even inside a path, and the page never scrolls sideways (a build from a
    dirty checkout once made six pages 3-19 px too wide)."""
    page.set_viewport_size(PHONE)
    page.goto(site_url + "attention.html")         # a page with a previous and a next link
    page.evaluate("""() => { const built = document.querySelector('.footer .built');
        built.textContent = 'Built from commit f6db17681fbe, with uncommitted changes to '
          + Array.from({length: 4}, (_, i) => `tests/browser/test_a_rather_long_name_${i}.py`).join(', '); }""")
    assert no_sideways_scroll(page), page.evaluate("document.documentElement.scrollWidth")


def test_print_shows_every_step_and_no_controls(page, site_url):
    page.goto(site_url + "block.html")
    page.emulate_media(media="print")
    assert page.locator(".topbar").is_hidden() and page.locator("#sidebar").is_hidden()
    assert page.locator(".stepper-controls").first.is_hidden()
    assert page.locator(".stepper-steps .stepper-step").last.is_visible()
    assert page.locator(".copy-code").first.is_hidden()


def test_copy_buttons(page, site_url):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])       # the page fixture clears them
    page.goto(site_url + "block.html")
    button = page.locator("figure.equation .copy-link").first
    anchor = button.get_attribute("data-href")
    button.click()
    page.wait_for_function("document.querySelector('figure.equation .copy-link').dataset.copied === 'true'")
    assert page.evaluate("navigator.clipboard.readText()") == site_url + "block.html" + anchor
    assert page.locator("figure.equation .copy-link:not([hidden])").count() == page.locator("figure.equation").count()
    listing = page.locator("#block-forward .listing-wrap").first
    listing.locator(".copy-code").click()
    page.wait_for_function("document.querySelector('#block-forward .listing-wrap .copy-code').dataset.copied === 'true'")
    code = page.evaluate("navigator.clipboard.readText()")
    assert code.startswith("def block_forward(") and "X1 = X + att" in code
    assert page.locator(".listing").count() == page.locator(".listing-wrap .copy-code").count()


def test_keyboard_moves_between_pages(page, site_url):
    page.goto(site_url + "block.html")
    prev_href = page.locator('link[rel="prev"]').get_attribute("href")
    next_href = page.locator('link[rel="next"]').get_attribute("href")
    page.locator("main h1").click()
    page.keyboard.press("n")
    page.wait_for_url("**/" + next_href)
    page.keyboard.press("p")
    page.wait_for_url("**/block.html")
    page.keyboard.press("p")
    page.wait_for_url("**/" + prev_href)
    # typing in the search box is not a shortcut
    page.fill("#search-input", "np")
    assert page.url.endswith(prev_href)


def test_the_modules_tab_is_reset_between_tests(browser, browser_context_args, site_url):
    """The `page` fixture hands each test of a module the same tab (tests/browser/conftest.py
    ModuleTab): after a test's theme choice (on one origin or two), size, emulated scheme,
    route, permission, cookie, popup and offline mode, the next test meets none of them."""
    from tests.browser.conftest import ModuleTab
    tabs = ModuleTab(browser, browser_context_args)
    try:
        page = tabs.open()
        page.set_viewport_size(PHONE)
        page.emulate_media(color_scheme="dark")
        page.context.grant_permissions(["clipboard-read"])
        page.route("**/*.css", lambda route: route.abort())
        page.goto(site_url + "block.html")
        page.locator(".theme-toggle").click()                       # stores the choice
        assert page.evaluate("localStorage.getItem('theme')") is not None
        tabs.reset()
        assert tabs.open() is page and page.url == "about:blank"
        assert page.viewport_size == (browser_context_args.get("viewport") or {"width": 1280, "height": 720})
        page.goto(site_url + "block.html")
        assert page.evaluate("localStorage.getItem('theme')") is None
        assert not page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches")
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(253, 253, 252)"  # site.css's light --bg: no route left
        state = page.evaluate("navigator.permissions.query({name: 'clipboard-read'}).then((p) => p.state)")
        assert state != "granted", state
        page.evaluate("document.cookie = 'left=1'; window.open('about:blank')")
        page.context.set_offline(True)
        tabs.reset()
        assert tabs.open() is page and len(page.context.pages) == 1
        page.goto(site_url + "block.html")                         # would fail if still offline
        assert page.evaluate("document.cookie") == ""
        other_origin = site_url.replace("127.0.0.1", "localhost")
        page.goto(other_origin + "block.html")
        page.locator(".theme-toggle").click()                       # stored on the other origin
        page.goto(site_url + "block.html")
        tabs.reset()                     # two origins: the next test gets a new tab
        page = tabs.open()
        page.goto(other_origin + "block.html")
        assert page.evaluate("localStorage.getItem('theme')") is None
        page.close()
        tabs.reset()                     # a closed tab: the next test gets a new one
        assert tabs.open() is not page
    finally:
        tabs.close()
