"""Validate every internal href and #fragment of the built pages, source pages included.

Runs on the rendered files in memory, before anything is written, so a broken link fails
`check` without touching the last good site. `#L{n}-L{m}` fragments are checked as ranges:
both ends must be line anchors of the target file.

Every page is read as html.parser reads it: prose is Markdown, and Markdown passes an
author's own HTML through as written (`<a href=nope.html>`, single quotes, attributes over
several lines), which a pattern for the builder's double-quoted attributes does not see.

But most pages need no parser: what the builder writes (templates, Markdown, Pygments,
KaTeX) is "simple" markup, text with no `<` and tags whose attributes are all double-quoted
(values without `<`, `>`) or bare, plus raw-text elements (script, style, SVG title) with no
`<` inside. On such a page the parser, in any Python version, sees exactly those start tags
with those attributes, so regular expressions read them (`_simple_scan`: 0.10 s for the whole
site), after checking that the page is simple: every `<` starts a simple tag, every raw-text
element holds no `<` before its end tag, a doctype only at the start. A page that is not
(an author's `<a href=nope.html>`, a comment, a `<` in a script, a quote left unescaped in an
attribute) goes to the parser. tests/test_links.py checks that both readings agree on every
page of the site and that the markup the patterns do not know falls back.

The parser is slow per tag (0.8 s for the whole site), so before it reads a page the tags
that cannot hold a link or an anchor are cut out: end tags, and start tags with no attribute
but a double-quoted class (Pygments' spans, table cells), except those of the elements whose
content the parser reads as raw text (script, style, ...), which must stay for it to find
where that content ends (0.25 s for the whole site). A file's scan is also kept for the
process (serve rescans only the pages that changed).

Where a broken link is reported: a link made by Markdown carries `data-origin="file:line"`,
the content line that wrote it (added by Renderer.md in site_builder/render/html.py, which knows
the file and finds the line); the problem names that line. Any other link was made by a
template from the view model: the problem names the page's content file, line 1, and the
nearest anchor above the link in the page; on a source page, the source file and the line
whose row holds the link.
"""
import hashlib
import posixpath
import re
from functools import lru_cache
from pathlib import Path
from html import unescape
from html.parser import HTMLParser
from urllib.parse import urlsplit, unquote

from site_builder.base.problems import Problem

RANGE_RE = re.compile(r"^L(\d+)-L(\d+)$")
LINE_ID_RE = re.compile(r"^L(\d+)$")
ORIGIN_RE = re.compile(r"^(?P<file>.+):(?P<line>\d+)$")
LINK_ATTRIBUTES = ("href", "src", "xlink:href", "action", "formaction")     # and srcset's URLs
SRCSET_CANDIDATE = re.compile(r'[ \t\n\r\f,]*([^ \t\n\r\f]*)(?:(?<=,)|(?:[^,(]|\([^)]*\)?)*)')
RAW_TEXT = "script|style|textarea|title|xmp|plaintext|noscript|iframe|noembed|noframes"
INERT_TAGS = re.compile(r'</(?!(?:%s)\b)[a-zA-Z][\w-]*\s*>|<(?!(?:%s)\b)[a-zA-Z][\w-]*(?:\s+class="[^"<>]*")?\s*>'
                        % (RAW_TEXT, RAW_TEXT), re.I)


class _Scanner(HTMLParser):
    """The ids of one page, and its links as (url, data-origin or None, nearest id above)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links, self.anchor = set(), [], ""

    def handle_starttag(self, tag, attrs):
        origin = None
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (name == "name" and tag == "a"):
                self.ids.add(value)
                self.anchor = value
            elif name == "data-origin":
                origin = value
        if tag == "base":
            return
        for name, value in attrs:
            if name in LINK_ATTRIBUTES and value is not None:
                self.links.append((value.strip(), origin, self.anchor))
            elif name == "srcset" and value is not None:
                self.links += [(url, origin, self.anchor) for url in srcset_urls(value)]


def srcset_urls(srcset):
    """The URLs of a srcset's candidates (`a.png 1x, b.png 2x`), split as the HTML standard
    splits them: a URL runs to whitespace (a trailing comma ends the candidate), then its
    descriptors run to a comma outside parentheses."""
    urls, at = [], 0
    while at < len(srcset):
        m = SRCSET_CANDIDATE.match(srcset, at)
        if not m[1]:
            break
        urls.append(m[1].rstrip(","))
        at = m.end()
    return [u for u in urls if u]


WS = "[ \t\n\r\f]"       # what html.parser separates with (\\s would also take \\xa0, a name's character to it)
ATTRS = r'(?:%s+[a-zA-Z_][\w:.-]*(?:="[^"<>]*")?)*' % WS
NOT_SIMPLE = re.compile(r'<(?!/?[a-zA-Z][\w-]*%s%s*/?>)' % (ATTRS, WS))    # a `<` that starts no simple tag
SIMPLE_ATTR = re.compile(r'([a-zA-Z_][\w:.-]*)(?:="([^"<>]*)")?')
DOCTYPE = re.compile(r'<!doctype html>', re.I)
RAW_START = re.compile(r'<(?:%s)(?![\w-])' % RAW_TEXT, re.I)
RAW_ELEMENT = re.compile(r'<([a-zA-Z][\w-]*)%s%s*>[^<]*</([a-zA-Z][\w-]*)%s*>' % (ATTRS, WS, WS))
START_TAG = re.compile(r'<([a-zA-Z][\w-]*)(%s)%s*/?>' % (ATTRS, WS))
# Where a start tag that may carry an id or a link begins (a look-alike inside an attribute's
# value brings its tag here too; its attributes, read properly, then give nothing).
LINKED_TAG = re.compile(r'<[a-zA-Z][^<>]*?%s(?:id|name|href|src|srcset|xlink:href|action|formaction|data-origin)="' % WS, re.I)


def _simple_scan(text: str):
    """(ids, links) of a simple page (see the module's docstring) as _Scanner reads it, or
    None when the page is not simple and the parser must read it."""
    m = DOCTYPE.match(text)
    start = m.end() if m else 0
    for m in RAW_START.finditer(text, start):          # a raw-text element: `<` only to close it
        element = RAW_ELEMENT.match(text, m.start())
        if not element or element[1].lower() != element[2].lower() or element[1].lower() == "plaintext":
            return None
    if NOT_SIMPLE.search(text, start):
        return None
    scanner = _Scanner()
    for found in LINKED_TAG.finditer(text, start):
        m = START_TAG.match(text, found.start())
        scanner.handle_starttag(m[1].lower(), [(a.lower(), None if v is None else unescape(v))
                                               for a, v in _attributes(m[2])])
    return scanner.ids, scanner.links


def _attributes(text):
    """[(name, value or None for a bare attribute)] of a simple tag's attributes."""
    return [(m[1], m[2]) for m in SIMPLE_ATTR.finditer(text)]


# (path, bytes) -> (ids, links) of files already scanned in this process: serve rebuilds
# rescan only the pages that changed.
_SCANNED = {}


def scan_page(data: bytes):
    """(set of ids, [(url, origin, anchor)]) of one HTML page."""
    text = data.decode("utf-8")
    found = _simple_scan(text)
    if found is not None:
        return found
    scanner = _Scanner()
    scanner.feed(INERT_TAGS.sub("", text))
    scanner.close()
    return scanner.ids, scanner.links


def scan_final(path, data: bytes):
    """(digest of data, scan_page(data)): a page scanned where it was rendered (a forked
    child), for `remember_scans` in the build's process."""
    return hashlib.sha256(data).hexdigest(), scan_page(data)


def remember_scans(scans):
    """Keep {path: scan_final(path, data)} for `scan`, which uses one only for the same bytes."""
    _FINAL.update(scans)


_FINAL = {}        # path -> (digest of the bytes scanned, scan): scanned in a child this build


@lru_cache(maxsize=1)
def _scanner_code() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _scanned(path, data, cache):
    """scan_page(data): from a child that scanned the same bytes this build, else from the
    build cache (kind `memo`, under the bytes and this module's code: a rebuild rescans only the
    pages whose bytes changed; parsing every page was a tenth of a one-function check), else
    scanned here and kept."""
    sha = hashlib.sha256(data).hexdigest()
    done = _FINAL.get(path)
    if done and done[0] == sha:
        return done[1]
    if cache is None:
        return scan_page(data)
    slot = hashlib.sha256(f"link scan {sha} {_scanner_code()}".encode()).hexdigest()
    return cache.remembered("memo", slot, lambda: scan_page(data))


def scan(files, cache=None):
    """{path: bytes} -> ({path: ids}, {path: [(url, origin, anchor)]}) for the HTML files."""
    ids, links, seen = {}, {}, {}
    for path, data in files.items():
        if path.endswith(".html"):
            key = (path, data)
            if key not in _SCANNED:
                _SCANNED[key] = _scanned(path, data, cache)
            seen[key] = _SCANNED[key]
            ids[path], links[path] = seen[key]
    _SCANNED.clear()
    _SCANNED.update(seen)       # keep only this build's pages
    _FINAL.clear()
    return ids, links


@lru_cache(maxsize=65536)
def _target(path_dir, link):
    """(target path or None for an external link, fragment) of a link on a page in path_dir."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith("mailto:"):
        return None, None
    return (posixpath.normpath(posixpath.join(path_dir, unquote(parts.path))) if parts.path else "", parts.fragment)


def fragment_ok(fragment, ids):
    """Whether #fragment names an anchor of a page with these ids. A browser percent-decodes
    the fragment (UTF-8) before it looks for the id: #caf%C3%A9 reaches id="café"."""
    fragment = unquote(fragment) if "%" in fragment and fragment not in ids else fragment
    if not fragment or fragment in ids:
        return True
    m = RANGE_RE.match(fragment)
    return bool(m) and f"L{m.group(1)}" in ids and f"L{m.group(2)}" in ids and int(m.group(1)) <= int(m.group(2))


def where(path, origin, data_origin, anchor):
    """(file, line, context) for a link on page `path`: see the module's docstring."""
    m = ORIGIN_RE.match(data_origin or "")
    if m:
        return m["file"], int(m["line"]), ""
    if path.startswith("source/") and path.endswith(".html") and path not in origin:
        row = LINE_ID_RE.match(anchor or "")
        return path[len("source/"):-len(".html")], int(row.group(1)) if row else 1, ""
    return origin.get(path, path), 1, f" (made by the template, after #{anchor})" if anchor else " (made by the template)"


def check_links(files, origin, problems, unread=frozenset(), mounted=None, cache=None):
    """origin: path -> the content file it was built from, so the report points at a source.
    unread: paths the build produces that are not in `files` (check --page renders only its
    pages): a link to one is whole, whatever its #fragment. mounted: {path: URL path} of
    pages whose links start at the path the site is served at (404.html, which the host
    serves at any depth: site_builder/publish/hosting.py); the rest of such a link is read from the
    site's root. cache: the build cache, which keeps each page's scan. Returns how many
    internal links were checked."""
    ids, links = scan(files, cache)
    checked = 0
    for path in sorted(links):
        bad = set()
        path_dir, mount = posixpath.dirname(path), (mounted or {}).get(path)
        for link, data_origin, anchor in links[path]:
            mounted_link = bool(mount) and link.startswith(mount)
            target, fragment = _target("", link[len(mount):]) if mounted_link else _target(path_dir, link)
            if target is None:
                continue
            checked += 1
            relative = bool(mount and target) and not mounted_link     # a #fragment alone stays on the page
            target = target or path
            if relative:
                message = f"'{link}' is relative, but the host serves {path} at any URL: start it at {mount}"
            elif target not in files and target not in unread and not target.startswith("pagefind/"):
                message = f"'{link}' points at {target}, which the build does not produce"
            elif target in ids and not fragment_ok(fragment, ids[target]):
                message = f"'{link}': {target} has no anchor '#{fragment}'"
            else:
                continue
            file, line, context = where(path, origin, data_origin, anchor)
            bad.add((file, line, message + context))
        for file, line, message in sorted(bad):
            problems.append(Problem(file, line, f"broken link in {path}: {message}",
                                    "fix the reference, or the anchor it points at", strict=True))
    return checked
