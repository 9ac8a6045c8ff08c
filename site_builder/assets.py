"""Stage 5b: the stylesheets and scripts the pages load, as few bytes as they can be.

What a page loads is part of its weight (benchmarks/page_weight.py), so:
- A page loads only the scripts whose features it has. Each file in static/js is one
  feature (static/js/site.js lists them); SCRIPTS names, for each, a marker in the page's
  HTML that the script works on, or None for the scripts every page needs. The templates
  leave SCRIPTS_PLACEHOLDER in <head>; `insert_scripts` replaces it once the page is
  rendered, so the choice follows what the page holds and no template has to know it.
- The CSS and JS are shipped minified: rcssmin and rjsmin (small, long-maintained, with C
  speedups) strip comments and whitespace and nothing else, so the readable files in
  static/ stay the ones to edit. The minified copies are what pages load and what the
  weight counts.
- pygments.css keeps only the token classes that appear in the site's listings: Pygments
  writes a rule for every token type of every style (three times: light, dark chosen, dark
  from the system preference), and most never occur in this code.

Trade-off: a marker is a substring of the page's HTML, checked after rendering. A template
that renders a feature without its marker would lose the script; tests/browser checks each
feature on a page that has it.
"""
import re

import rcssmin
import rjsmin

# (script, marker in the page's HTML or None for every page), in load order.
SCRIPTS = (
    ("site", None),
    ("theme", None),
    ("copy", ('class="copy-link', 'class="listing')),
    ("stepper", ('class="stepper',)),
    ("play", ('class="play"',)),
    ("flow", ('class="flow',)),
    ("symbols", ('class="symbols',)),
    ("search", None),
    ("lines", ('class="listing source',)),
    ("figures", ('<svg class="chart"', '<svg class="heatmap"')),
)
SCRIPTS_PLACEHOLDER = "<!-- page scripts -->"
TOKEN_CLASS = re.compile(rb'<span class="([a-zA-Z0-9]{1,3})">')


def page_scripts(html: str) -> list:
    """The scripts a rendered page needs, in load order."""
    return [name for name, markers in SCRIPTS if markers is None or any(m in html for m in markers)]


def insert_scripts(html: str, root: str) -> str:
    """Replace the placeholder in <head> with the page's deferred script tags."""
    tags = "".join(f'<script defer src="{root}static/js/{name}.js"></script>\n' for name in page_scripts(html))
    return html.replace(SCRIPTS_PLACEHOLDER, tags.rstrip("\n"), 1)


def minify(path: str, data: bytes) -> bytes:
    """A static file as shipped: .css and .js minified, anything else unchanged."""
    if path.endswith(".css"):
        return rcssmin.cssmin(data.decode("utf-8")).encode("utf-8")
    if path.endswith(".js"):
        return rjsmin.jsmin(data.decode("utf-8")).encode("utf-8")
    return data


def used_token_classes(pages) -> set:
    """Pygments token classes (`k`, `nf`, ...) that occur in any of the pages (bytes)."""
    used = set()
    for html in pages:
        used.update(m.decode() for m in TOKEN_CLASS.findall(html))
    return used


def prune_token_rules(css: str, used: set) -> str:
    """Drop the one-line rules of pygments_css() for token classes no page uses."""
    def keep(line):
        m = re.match(r"\s*[^{]*\.hl \.([a-zA-Z0-9]+) \{", line)
        return m is None or m.group(1) in used
    return "\n".join(line for line in css.splitlines() if keep(line)) + "\n"
