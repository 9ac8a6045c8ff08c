"""What a hosted site has beside its pages, as MkDocs and Sphinx give it: a 404 page, a
sitemap, and the absolute URLs of the pages' link previews. All of it follows from one
setting, `site_url` in content/site.yaml (the address the site is served at); without it
there is no sitemap and no canonical URL, and the site still works anywhere.

Every page links relatively, so the site works at any address (a host's sub-path such as
https://USER.github.io/REPO/, `serve`, file://). The 404 page cannot: GitHub Pages (and most
static hosts) serve it for a missing URL at ANY depth, /REPO/missing.html or
/REPO/a/b/c.html, with that URL in the address bar, so a relative `static/site.css` would
resolve against a folder that does not exist. So, as MkDocs does, its links and asset URLs
start with the path of site_url (`/REPO/static/site.css`): right at every depth of that host.
Without site_url the path is `/`, MkDocs' assumption too: right where the site is served at a
domain's root (`serve`, a custom domain); under a sub-path only site_url can say where the
site's root is. A path, not the whole URL: the same page also works on a local server that
serves the site under the same path (tests/test_hosting.py does). The link check reads its
links from that path (links.check_links' `mounted`); a `<base href>` would have done it with
relative links, but would also send its `#main` skip link to the home page.

The sitemap lists every page the build writes, the overview first, then the concept pages and
the source pages in the order the build made them (Sphinx's sitemap extension lists viewcode's
source pages too; they are what a search for a function's code should land on), but not the
404 page. No <lastmod>: it would be the build's time or a commit's, and two builds of one
commit must give the same bytes (.ci/run compares them).
"""
from urllib.parse import quote, urlsplit
from xml.sax.saxutils import escape

from site_builder.publish.assets import insert_scripts

NOT_FOUND = "404.html"
SITEMAP = "sitemap.xml"


def site_url(site) -> str | None:
    """content/site.yaml's site_url with one trailing slash (content.py checked it), or None."""
    url = site.get("site_url")
    return str(url).rstrip("/") + "/" if url else None


def page_url(base, path) -> str | None:
    """The absolute URL of the page at `path` (relative to the site root) under `base`, the
    site_url; the overview is the site's address itself. None without a site_url."""
    if not base:
        return None
    return base if path == "index.html" else base + quote(path)


def root_path(base) -> str:
    """The path the 404 page's links start with (see the module's docstring)."""
    return urlsplit(base).path if base else "/"


def mounted(base) -> dict:
    """{page: the path its links start with}, for links.check_links."""
    return {NOT_FOUND: root_path(base)}


def not_found_page(env, common) -> bytes:
    """404.html in the site's layout (navigation, search, theme), its script tag put in."""
    root = root_path(common["site"]["url"])
    html = env.get_template("404.html").render(
        title="Page not found", description=None, root=root, current=None, url=None,
        prev_href=None, next_href=None, **common)
    return insert_scripts(html, root).encode()


def sitemap(base, files) -> bytes:
    """sitemap.xml of the HTML pages among `files` (their paths relative to the site root)."""
    pages = [p for p in files if p.endswith(".html") and p != NOT_FOUND]
    pages.sort(key=lambda p: p != "index.html")        # stable: the build's order after the overview
    entries = "".join(f"  <url><loc>{escape(page_url(base, p))}</loc></url>\n" for p in pages)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"{entries}</urlset>\n").encode()


def hosted_files(env, common, files) -> dict:
    """{path: bytes}: 404.html, and sitemap.xml of the pages in `files` when site_url is set."""
    hosted = {NOT_FOUND: not_found_page(env, common)}
    if common["site"]["url"]:
        hosted[SITEMAP] = sitemap(common["site"]["url"], files)
    return hosted
