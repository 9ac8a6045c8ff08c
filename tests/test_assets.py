"""site_builder.publish.assets: each page loads the scripts of the features it has, as one bundle;
the shipped CSS and JS are minified copies of static/; and pygments.css keeps the token
classes in use."""
import re
import subprocess

import pytest

from site_builder.publish.assets import (SCRIPTS, bundle_path, insert_scripts, minify, page_scripts,
                                 prune_token_rules, script_bundles)
from tests.conftest import ROOT

# relative, or from the site's path on the 404 page (site_builder/publish/hosting.py)
BUNDLE_TAG = re.compile(r'<script defer src="((?:\.\./)*|/(?:[^"/]+/)*)static/js/([\w-]+)\.js"></script>')


def scripts_of(html):
    """The scripts a page loads, in order: the features its one bundle is named by."""
    tags = BUNDLE_TAG.findall(html)
    assert len(tags) <= 1, "a page loads one bundle"
    return tags[0][1].split("-") if tags else []


def test_scripts_follow_the_markers_in_load_order():
    always = [name for name, markers in SCRIPTS if markers is None]
    assert page_scripts("<p>prose only</p>") == always
    html = '<div class="stepper" data-steps="[]"></div><table class="symbols"></table>'
    assert page_scripts(html) == [name for name, _ in SCRIPTS if name in set(always) | {"stepper", "symbols"}]
    page = insert_scripts("<head><!-- page scripts --></head>" + html, "../")
    assert scripts_of(page) == page_scripts(html) and "page scripts" not in page
    assert f'<script defer src="../{bundle_path(page_scripts(html))}">' in page


def test_a_bundle_runs_its_scripts_in_load_order_each_in_its_own_task(tmp_path):
    (tmp_path / "a.js").write_text('// first\n(() => { "use strict"; globalThis.order = ["a"]; })();\n')
    (tmp_path / "b.js").write_text('(() => { "use strict"; order.push("b"); })()\n')    # no closing `;`
    (tmp_path / "c.js").write_text('(() => { order.push("c"); })();\n')
    bundle = script_bundles(tmp_path, [("a", "b", "c"), ("a", "b", "c"), ("a", "c")])
    assert set(bundle) == {"static/js/a-b-c.js", "static/js/a-c.js"}
    code = bundle["static/js/a-b-c.js"].decode()
    assert code.startswith(minify(".js", (tmp_path / "a.js").read_bytes()).decode().strip())
    assert code.count("setTimeout(") == 2
    try:
        run = subprocess.run(["node", "-e", code + "\nsetTimeout(() => console.log(order.join('')), 5);"],
                             capture_output=True, text=True, timeout=20)
    except FileNotFoundError:
        pytest.skip("node is not installed")
    assert run.stdout.strip() == "abc", run.stderr


def test_built_pages_load_only_what_they_use(built_site):
    block = (built_site / "block.html").read_text()
    assert {"stepper", "symbols", "copy"} <= set(scripts_of(block)) and "lines" not in scripts_of(block)
    source = (built_site / "source/model/ops.py.html").read_text()
    assert "lines" in scripts_of(source) and not {"stepper", "flow", "symbols"} & set(scripts_of(source))
    for page in built_site.rglob("*.html"):
        if "pagefind" not in page.parts:
            text = page.read_text()
            assert "page scripts" not in text
            tag = BUNDLE_TAG.search(text)
            assert tag and (built_site / "static/js" / f"{tag.group(2)}.js").is_file()
            assert text.count('<link rel="stylesheet"') == 2


def test_shipped_css_and_js_are_minified_copies(built_site):
    source = (ROOT / "static/site.css").read_text()
    shipped = (built_site / "static/site.css").read_text()
    assert len(shipped) < 0.85 * len(source) and "/*" not in shipped
    bundle = (built_site / "static/js/site-theme-search.js").read_text()
    sources = "".join((ROOT / "static/js" / f"{name}.js").read_text() for name in ("site", "theme", "search"))
    assert len(bundle) < 0.85 * len(sources) and "/*" not in bundle and "\n//" not in bundle
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


def test_a_script_the_minifier_would_change_fails_at_its_line():
    """rjsmin squeezes the spaces of a template literal nested in another's ${...}: caught by
    comparing esprima's tokens before and after, at the source line."""
    from site_builder.base.problems import BuildFailed
    from site_builder.publish.assets import minify
    assert minify("static/js/ok.js", b"const a = `x ${b} y`;\n") == b"const a=`x ${b} y`;"
    with pytest.raises(BuildFailed) as caught:
        minify("static/js/bad.js", b"const a = 1;\nconst s = `<rect${c ? ` class=\"${c}\"` : \"\"}>`;\n")
    (problem,) = caught.value.problems
    assert (problem.file, problem.line) == ("static/js/bad.js", 2)
    assert "class=" in problem.message and "+" in problem.fix


def test_a_script_is_tokenized_once_for_its_bytes_and_its_failure_every_time(monkeypatch):
    """The minified copies are a render memo (assets.MINIFIED, saved in the build cache by
    build/memos.py): the same bytes are not tokenized again, other bytes are, and a script the
    minifier would break fails on every build, not only the first."""
    from site_builder.base.problems import BuildFailed
    from site_builder.publish import assets
    checked = []
    real = assets.check_minified
    monkeypatch.setattr(assets, "check_minified", lambda path, text, shipped: (checked.append(path), real(path, text, shipped)))
    monkeypatch.setattr(assets, "MINIFIED", {})
    first = assets.minify("static/js/a.js", b"const a = 1;  // one\n")
    assert assets.minify("static/js/a.js", b"const a = 1;  // one\n") == first and checked == ["static/js/a.js"]
    assets.minify("static/js/a.js", b"const a = 2;\n")
    assert len(checked) == 2
    bad = b"const s = `<rect${c ? ` class=\"${c}\"` : \"\"}>`;\n"
    for _ in range(2):
        with pytest.raises(BuildFailed):
            assets.minify("static/js/bad.js", bad)
    assert len(checked) == 4


def test_the_minified_copies_are_kept_in_the_build_cache(tmp_path, monkeypatch):
    from site_builder.base.cache import BuildCache
    from site_builder.build.memos import Memos
    from site_builder.publish import assets
    monkeypatch.setattr(assets, "MINIFIED", {})
    memos = Memos(BuildCache(tmp_path))
    assets.minify("static/js/a.js", b"const a = 1;\n")
    memos.save()
    monkeypatch.setattr(assets, "MINIFIED", {})
    Memos(BuildCache(tmp_path))
    assert list(assets.MINIFIED.values()) == [b"const a=1;"]
