"""The site as hosted (site_builder/publish/hosting.py): under a sub-path every link, asset, stylesheet
url() and the search bundle resolve inside it and answer 200, on every page and on the 404 page
at any depth; the sitemap lists every page at its canonical URL; each page's link-preview
<meta> is computed from its summary. Served from the session's build (tests/hosted.py)."""
import re
import xml.etree.ElementTree as ET
from html import unescape
from urllib.error import HTTPError
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.request import urlopen

import pytest
import yaml

from site_builder.publish import hosting
from site_builder.render import links
from site_builder.gather.content import check_site_url, parse_yaml
from site_builder.render.html import make_environment, plain_text
from tests.hosted import ROOT, served_under, site_path

SITE = yaml.safe_load((ROOT / "content" / "site.yaml").read_text(encoding="utf-8"))
SITE_URL = hosting.site_url(SITE)
CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)")
BUNDLE = re.compile(r'data-bundle="([^"]+)"')
DEEP_MISSING = ["missing.html", "a/b/c/missing.html", "source/model/gone.py.html", "static/js/"]


@pytest.fixture(scope="module")
def hosted(built_site):
    with served_under(built_site, site_path()) as base:
        yield base


def fetch(url):
    """(status, bytes) of a GET."""
    try:
        with urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except HTTPError as e:
        return e.code, e.read()


def urls_of_page(url, html: bytes):
    """Every URL a page makes the browser load or offer: href, src, srcset (links.scan_page
    reads them as the link check does) and the search bundle's files, resolved against `url`,
    without fragments. A #fragment alone stays in the document the browser has."""
    _, found = links.scan_page(html)
    urls = [urljoin(url, unescape(link)) for link, _, _ in found if not link.startswith("#")]
    for bundle in BUNDLE.findall(html.decode()):
        urls += [urljoin(urljoin(url, bundle), f) for f in ("pagefind.js", "pagefind-entry.json")]
    return {urldefrag(u)[0] for u in urls}


def resolved_inside(base, urls, where):
    """The local URLs among `urls`; each must be under the sub-path `base`."""
    host = urlsplit(base).netloc
    local = {u for u in urls if urlsplit(u).netloc == host}
    outside = sorted(u for u in local if not u.startswith(base))
    assert not outside, f"{where}: links outside {base}: {outside[:5]}"
    return local


def pages_of(built_site):
    return sorted(p.relative_to(built_site).as_posix() for p in built_site.rglob("*.html")
                  if "pagefind" not in p.relative_to(built_site).parts)


def test_every_link_and_asset_resolves_inside_the_sub_path_and_answers(built_site, hosted):
    assert hosted.endswith("/transformer-by-hand/")         # content/site.yaml's site_url
    wanted = {}                      # url -> the first page that asked for it
    for page in pages_of(built_site):
        status, html = fetch(hosted + page)
        assert status == 200, page
        for url in resolved_inside(hosted, urls_of_page(hosted + page, html), page):
            wanted.setdefault(url, page)
    stylesheets = [u for u in wanted if u.endswith(".css")]
    assert stylesheets and any(u.endswith("pagefind/pagefind.js") for u in wanted)
    for css in stylesheets:
        status, text = fetch(css)
        assert status == 200, css
        for ref in CSS_URL.findall(text.decode()):
            if not ref.startswith("data:"):
                for url in resolved_inside(hosted, {urljoin(css, ref)}, css):
                    wanted.setdefault(url, css)
    failed = {url: wanted[url] for url in sorted(wanted) if fetch(url)[0] != 200}
    assert not failed, f"{len(failed)} of {len(wanted)} URLs do not answer 200 (url: asked by): {dict(list(failed.items())[:5])}"


@pytest.mark.parametrize("missing", DEEP_MISSING)
def test_a_missing_url_at_any_depth_gets_the_404_page_and_its_links_work(built_site, hosted, missing):
    status, html = fetch(hosted + missing)
    assert status == 404 and html == (built_site / hosting.NOT_FOUND).read_bytes()
    wanted = resolved_inside(hosted, urls_of_page(hosted + missing, html), missing)
    assert hosted + "index.html" in wanted and hosted + "static/site.css" in wanted
    assert hosted + "pagefind/pagefind.js" in wanted
    assert [u for u in sorted(wanted) if fetch(u)[0] != 200] == []


def test_the_server_refuses_what_is_outside_the_sub_path(hosted):
    """What makes the tests above able to fail: a link that escapes the sub-path gets no page."""
    origin = hosted[:-len(site_path())]
    assert fetch(origin + "/static/site.css")[0] == 404 and fetch(hosted + "static/site.css")[0] == 200


def test_the_404_page_is_a_page_of_the_site_and_not_indexed(built_site):
    html = (built_site / hosting.NOT_FOUND).read_text(encoding="utf-8")
    prefix = site_path()
    assert "<h1>Page not found</h1>" in html and f'<a href="{prefix}index.html">overview</a>' in html
    for slug in SITE["nav"]:
        assert f'href="{prefix}{slug}.html"' in html
    assert 'id="search"' in html and 'class="theme-toggle"' in html
    assert f'<script defer src="{prefix}static/js/' in html
    assert '<meta name="robots" content="noindex">' in html
    assert "data-pagefind-body" not in html and 'rel="canonical"' not in html


def meta(html, name):
    m = re.search(r'<meta (?:name|property)="%s" content="([^"]*)">' % re.escape(name), html)
    return unescape(m.group(1)) if m else None


def canonical(html):
    m = re.search(r'<link rel="canonical" href="([^"]*)">', html)
    return m.group(1) if m else None


def test_the_sitemap_lists_every_page_at_its_canonical_url(built_site):
    locs = [e.text for e in ET.parse(built_site / hosting.SITEMAP).getroot()
            if e.tag == "{http://www.sitemaps.org/schemas/sitemap/0.9}url"
            for e in e if e.tag.endswith("loc")]
    pages = [p for p in pages_of(built_site) if p != hosting.NOT_FOUND]
    assert locs[0] == SITE_URL == "https://transformer-by-hand.github.io/transformer-by-hand/"
    assert sorted(locs) == sorted(hosting.page_url(SITE_URL, p) for p in pages)
    assert len(set(locs)) == len(locs)
    for page in pages:
        html = (built_site / page).read_text(encoding="utf-8")
        assert canonical(html) == meta(html, "og:url") == hosting.page_url(SITE_URL, page), page
    assert b"lastmod" not in (built_site / hosting.SITEMAP).read_bytes()


def test_each_page_describes_itself_with_its_summary(built_site):
    for slug in SITE["nav"]:
        html = (built_site / f"{slug}.html").read_text(encoding="utf-8")
        summary = re.search(r'<p class="summary">(.*?)</p>', html, re.S).group(1)
        assert meta(html, "description") == meta(html, "og:description") == plain_text(summary).strip(), slug
        assert meta(html, "og:title") == re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S).group(1), slug
        assert meta(html, "og:type") == "website" and meta(html, "og:site_name") == SITE["title"]
    index = (built_site / "index.html").read_text(encoding="utf-8")
    assert meta(index, "description") == SITE["description"]
    source = (built_site / "source/model/ops.py.html").read_text(encoding="utf-8")
    assert meta(source, "description") == "Source of model/ops.py"


def common_context(url):
    """What hosting.not_found_page reads of shared_context, for a site with this site_url."""
    return dict(site=dict(title="T", description="D", url=url), nav=[dict(slug="a", title="A", summary="")],
                source_files=["model/x.py"], built_from="Built", github_branch=None)


def test_without_site_url_the_404_page_starts_at_slash_and_there_is_no_sitemap():
    env = make_environment(ROOT, None)
    hosted = hosting.hosted_files(env, common_context(None), {"index.html": b"", "a.html": b""})
    assert set(hosted) == {hosting.NOT_FOUND}
    html = hosted[hosting.NOT_FOUND].decode()
    assert 'href="/a.html"' in html and 'href="/static/site.css"' in html and 'data-bundle="/pagefind/"' in html
    assert 'rel="canonical"' not in html and "og:url" not in html
    with_url = hosting.hosted_files(env, common_context("https://o.github.io/r/"), {"index.html": b"", "a.html": b""})
    assert 'href="/r/a.html"' in with_url[hosting.NOT_FOUND].decode()
    assert with_url[hosting.SITEMAP].decode().count("<loc>") == 2


@pytest.mark.parametrize("value, ok", [
    ("https://o.github.io/r/", True), ("http://127.0.0.1:8000/docs", True), ("https://example.org", True),
    ("o.github.io/r/", False), ("/r/", False), ("ftp://o.org/", False), ("https://o.github.io/r/?x=1", False),
    ("https://o.github.io/r/#top", False)])
def test_site_url_must_be_an_address(value, ok):
    site, _ = parse_yaml(f"title: T\nnav: []\nsite_url: {value}\n", "content/site.yaml")
    problems = []
    check_site_url(site, "content/site.yaml", problems)
    if ok:
        assert problems == []
        assert hosting.site_url(site).endswith("/") and not hosting.site_url(site).endswith("//")
    else:
        assert [(p.file, p.line) for p in problems] == [("content/site.yaml", 3)]
        assert "https://USER.github.io/REPO/" in problems[0].message


def check(files, mount="/r/"):
    problems = []
    links.check_links({p: f'<!doctype html><html><body id="top">{body}</body></html>'.encode() for p, body in files.items()},
                      {}, problems, mounted={"404.html": mount})
    return [p.message for p in problems]


def test_the_link_check_reads_the_404_page_from_the_site_path():
    assert check({"404.html": '<a href="/r/a.html">a</a><a href="#top">top</a><a href="https://x.org/">x</a>',
                  "a.html": ""}) == []
    assert check({"404.html": '<a href="/r/gone.html">a</a>'}) == \
        ["broken link in 404.html: '/r/gone.html' points at gone.html, which the build does not produce (made by the template, after #top)"]
    relative = check({"404.html": '<a href="a.html">a</a>', "a.html": ""})
    assert relative and "is relative, but the host serves 404.html at any URL: start it at /r/" in relative[0]
    # another page's links stay relative: one from the site's path is not one the build checks
    assert check({"a.html": '<a href="/r/a.html">a</a>'}) and not check({"a.html": '<a href="a.html">a</a>'})
