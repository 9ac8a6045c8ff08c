"""Stage 5b: the stylesheets and scripts the pages load, as few bytes as they can be.

What a page loads is part of its weight (benchmarks/page_weight.py), so:
- A page loads only the scripts whose features it has. Each file in static/js is one
  feature (static/js/site.js lists them); SCRIPTS names, for each, a marker in the page's
  HTML that the script works on, or None for the scripts every page needs. The templates
  leave SCRIPTS_PLACEHOLDER in <head>; `insert_scripts` replaces it once the page is
  rendered, so the choice follows what the page holds and no template has to know it.
- A page loads its scripts as one file, the bundle of exactly its features
  (static/js/site-theme-copy-....js, named by them in load order), not one file each: on a
  slow phone network every request is a round trip, and Lighthouse's LCP counts the eight
  requests of the longest page as two waves of them before its first paint (issue 13).
  Pages with the same features share a bundle, so it is cached between them; the site has a
  handful. Each script is its own `(() => { "use strict"; ... })()`, so joining them changes
  no scope. The first (site.js) runs as the bundle runs; each other one in a task of its own
  (setTimeout 0, in load order), as separate files did: run together they made one long task
  that blocked a tap (Lighthouse's total blocking time). None of them waits for an event
  that could pass meanwhile (only site.js listens for `load`).
- The stylesheets stay files, not inlined into each page: inlined, the longest page's LCP fell
  further (1.2 s against 1.5 s, Lighthouse's mobile profile), but the page then paints before
  the browser has parsed the rest of it, and that parsing counts as blocking time: TBT of the
  two of the pages went from 0-22 ms to 139-210 ms (README, "Fast on a phone").
- The CSS and JS are shipped minified: rcssmin and rjsmin (small, long-maintained, with C
  speedups) strip comments and whitespace and nothing else, so the readable files in
  static/ stay the ones to edit. The minified copies are what pages load and what the
  weight counts. rjsmin does not read a template literal nested in another's `${...}`: it takes
  the inner one's text for code and squeezes its spaces (`<rect${c ? ` class=...` : ""}` became
  `<rectclass=`, a heatmap the browser drew wrong while the unminified one tested equal). So
  every script is tokenized before and after, by esprima (a pure-Python port of the reference
  ECMAScript parser), and a token rjsmin changed fails the build at its line.
- pygments.css keeps only the token classes that appear in the site's listings: Pygments
  writes a rule for every token type of every style (three times: light, dark chosen, dark
  from the system preference), and most never occur in this code.

Trade-off: a marker is a substring of the page's HTML, checked after rendering. A template
that renders a feature without its marker would lose the script; tests/browser checks each
feature on a page that has it.
"""
import re
from pathlib import Path

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


def bundle_path(names) -> str:
    """Where the bundle of these scripts (in load order) is shipped."""
    return "static/js/" + "-".join(names) + ".js"


def insert_scripts(html: str, root: str) -> str:
    """Replace the placeholder in <head> with the deferred script tag of the page's bundle."""
    tag = f'<script defer src="{root}{bundle_path(page_scripts(html))}"></script>'
    return html.replace(SCRIPTS_PLACEHOLDER, tag, 1)


def script_bundles(js_dir: Path, bundles) -> dict:
    """{shipped path: bytes} of each bundle: its scripts minified, in load order, one a line;
    the first runs at once, each other one in a task of its own."""
    files = {}
    sources = {name: script_source(js_dir, name) for names in set(map(tuple, bundles)) for name in names}
    for names in sorted(set(map(tuple, bundles))):
        parts = [minify(f"static/js/{name}.js", sources[name]).strip() for name in names]
        # A statement that ends without `;` must not run into the next script's `(`.
        parts = [p if p.endswith(b";") else p + b";" for p in parts]
        parts[1:] = [b"setTimeout(()=>{" + p + b"},0);" for p in parts[1:]]
        files[bundle_path(names)] = b"\n".join(parts) + b"\n"
    return files


def script_source(js_dir: Path, name: str) -> bytes:
    """A script's bytes, once QuickJS has parsed them: joined into a bundle, one syntax error
    would stop every feature of every page that loads it, so it fails the build at its line."""
    import json
    import quickjs
    from site_builder.base.problems import BuildFailed, Problem
    rel = f"static/js/{name}.js"
    try:
        data = (js_dir / f"{name}.js").read_bytes()
    except OSError as e:
        raise BuildFailed([Problem(rel, 0, f"cannot read {rel}: {e.strerror}", "restore it (git checkout -- static/js)")])
    try:
        quickjs.Context().eval(f"new Function({json.dumps(data.decode('utf-8', 'replace'))})")
    except quickjs.JSException as e:
        first = str(e).splitlines()[0]
        line = re.search(r"at <input>:(\d+)", str(e))
        raise BuildFailed([Problem(rel, max(int(line.group(1)) - _function_header_lines(), 1) if line else 0, f"JavaScript {first}",
                                   "fix the script; every page that loads it would lose all its scripts")])
    return data


def _function_header_lines() -> int:
    """The lines QuickJS puts before a `new Function` body (its line numbers count them)."""
    import quickjs
    try:
        quickjs.Context().eval('new Function("function (")')
    except quickjs.JSException as e:
        found = re.search(r"at <input>:(\d+)", str(e))
        return int(found.group(1)) - 1 if found else 0
    return 0


# digest of (path, bytes) -> the bytes shipped: a render memo (build/memos.py), so a build
# whose static files did not change tokenizes no script (esprima's import and two tokenizations
# of every script were 1.2 s of a 3.4 s build of a one-page site), and each bundle reuses the
# files' minified copies.
MINIFIED = {}


def minifier_versions() -> tuple:
    """What a minified copy depends on besides its input: the minifiers, the token check, this file."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name):          # not installed: its import fails later, with its own line
        try:
            return version(name)
        except PackageNotFoundError:
            return None
    return tuple(installed(name) for name in ("rcssmin", "rjsmin", "esprima")) + (Path(__file__).read_bytes(),)


def minify(path: str, data: bytes) -> bytes:
    """A static file as shipped: .css and .js minified, anything else unchanged (memoised in MINIFIED)."""
    from site_builder.base.cache import digest
    key = digest(path, data)
    if key not in MINIFIED:
        MINIFIED[key] = _minified(path, data)
    return MINIFIED[key]


def _minified(path: str, data: bytes) -> bytes:
    if path.endswith(".css"):
        return rcssmin.cssmin(data.decode("utf-8")).encode("utf-8")
    if path.endswith(".js"):
        text = data.decode("utf-8")
        shipped = rjsmin.jsmin(text)
        check_minified(path, text, shipped)
        return shipped.encode("utf-8")
    return data


def check_minified(path: str, text: str, shipped: str):
    """Fail the build at the source line of the first token the minifier changed."""
    import esprima
    from site_builder.base.problems import BuildFailed, Problem
    try:
        before = esprima.tokenize(text, {"loc": True})
        after = esprima.tokenize(shipped)
    except esprima.Error as e:                # a syntax esprima (ES2017) does not read: not checkable
        raise BuildFailed([Problem(path, getattr(e, "lineNumber", 0) or 0, f"esprima cannot read the script: {e}",
                                   "write it in the syntax the other scripts use (ES2017)")])
    for b, a in zip(before, after):
        if (b.type, b.value) != (a.type, a.value):
            raise BuildFailed([Problem(path, b.loc.start.line, f"the minifier changes {b.value!r} into {a.value!r}",
                                       "rjsmin does not read a template literal inside another's ${...}: build the inner text with + instead")])
    if len(before) != len(after):
        raise BuildFailed([Problem(path, 0, f"the minifier changes the script's {len(before)} tokens into {len(after)}",
                                   "find what rjsmin misreads (a nested template literal?) and write it another way")])


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
