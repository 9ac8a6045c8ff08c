"""site_builder.assets: each page loads the scripts of the features it has, the shipped CSS
and JS are minified copies of static/, and pygments.css keeps the token classes in use."""
import re

from site_builder.assets import SCRIPTS, insert_scripts, page_scripts, prune_token_rules
from tests.conftest import ROOT


def scripts_of(html):
    return re.findall(r'<script defer src="(?:\.\./)*static/js/(\w+)\.js"></script>', html)


def test_scripts_follow_the_markers_in_load_order():
    always = [name for name, markers in SCRIPTS if markers is None]
    assert page_scripts("<p>prose only</p>") == always
    html = '<div class="stepper" data-steps="[]"></div><table class="symbols"></table>'
    assert page_scripts(html) == [name for name, _ in SCRIPTS if name in set(always) | {"stepper", "symbols"}]
    page = insert_scripts("<head><!-- page scripts --></head>" + html, "../")
    assert scripts_of(page) == page_scripts(html) and "page scripts" not in page
    assert '<script defer src="../static/js/stepper.js">' in page


def test_built_pages_load_only_what_they_use(built_site):
    block = (built_site / "block.html").read_text()
    assert {"stepper", "symbols", "copy"} <= set(scripts_of(block)) and "lines" not in scripts_of(block)
    source = (built_site / "source/model/ops.py.html").read_text()
    assert "lines" in scripts_of(source) and not {"stepper", "flow", "symbols"} & set(scripts_of(source))
    for page in built_site.rglob("*.html"):
        if "pagefind" not in page.parts:
            text = page.read_text()
            assert "page scripts" not in text
            assert all((built_site / "static/js" / f"{name}.js").is_file() for name in scripts_of(text))


def test_shipped_css_and_js_are_minified_copies(built_site):
    for rel in ["site.css", "js/site.js", "js/symbols.js"]:
        source = (ROOT / "static" / rel).read_text()
        shipped = (built_site / "static" / rel).read_text()
        assert len(shipped) < 0.85 * len(source)
        assert "/*" not in shipped and not shipped.lstrip().startswith("//")
    shipped = (built_site / "static/site.css").read_text()
    assert "@font-face" in shipped and "latinmodern-math.woff2" in shipped


def test_token_rules_are_pruned_to_the_classes_in_use(built_site):
    css = (built_site / "static/pygments.css").read_text()
    used = set()
    for page in built_site.rglob("*.html"):
        used |= set(re.findall(r'<span class="([a-zA-Z0-9]{1,3})">', page.read_text()))
    ruled = set(re.findall(r"\.hl \.([a-zA-Z0-9]+)\{", css))
    assert ruled and ruled <= used, "no rule for a class no page uses"
    assert {"k", "nf", "c1"} <= ruled
    assert prune_token_rules(".hl .k { color: #000 }\n.hl .gh { color: #111 }\n", {"k"}) == ".hl .k { color: #000 }\n"
