"""Validate every internal href and #fragment of the built pages, source pages included.

Runs on the rendered files in memory, before anything is written, so a broken link fails
`check` without touching the last good site. `#L{n}-L{m}` fragments are checked as ranges:
both ends must be line anchors of the target file.
"""
import posixpath
from functools import lru_cache
import re
import html
from urllib.parse import urlsplit, unquote

from site_builder.problems import Problem

RANGE_RE = re.compile(r"^L(\d+)-L(\d+)$")


ID_RE = re.compile(r'\s(?:id|name)="([^"]*)"')
LINK_RE = re.compile(r'<(a|link|script|img|source)\b[^>]*?\s(?:href|src)="([^"]*)"', re.S)


# (path, bytes) -> (ids, links) of files already scanned in this process: serve rebuilds
# rescan only the pages that changed.
_SCANNED = {}


def scan(files):
    """{path: bytes} -> ({path: ids}, {path: [links]}) for the HTML files. Regular expressions,
    not an HTML parser: the builder writes every attribute double-quoted, and this is 20x faster."""
    ids, links, seen = {}, {}, {}
    for path, data in files.items():
        if path.endswith(".html"):
            key = (path, data)
            if key not in _SCANNED:
                text = html.unescape(data.decode("utf-8")) if "&" in path else data.decode("utf-8")
                _SCANNED[key] = (set(ID_RE.findall(text)), [html.unescape(m.group(2)) for m in LINK_RE.finditer(text)])
            seen[key] = _SCANNED[key]
            ids[path], links[path] = seen[key]
    _SCANNED.clear()
    _SCANNED.update(seen)       # keep only this build's pages
    return ids, links


@lru_cache(maxsize=65536)
def _target(path_dir, link):
    """(target path or None for an external link, fragment) of a link on a page in path_dir."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith("mailto:"):
        return None, None
    return (posixpath.normpath(posixpath.join(path_dir, unquote(parts.path))) if parts.path else "", parts.fragment)


def fragment_ok(fragment, ids):
    if not fragment or fragment in ids:
        return True
    m = RANGE_RE.match(fragment)
    return bool(m) and f"L{m.group(1)}" in ids and f"L{m.group(2)}" in ids and int(m.group(1)) <= int(m.group(2))


def check_links(files, origin, problems):
    """origin: path -> the content file it was built from, so the report points at a source."""
    ids, links = scan(files)
    for path in sorted(links):
        bad = set()
        path_dir = posixpath.dirname(path)
        for link in links[path]:
            target, fragment = _target(path_dir, link)
            if target is None:
                continue
            target = target or path
            if target not in files and not target.startswith("pagefind/"):
                bad.add(f"'{link}' points at {target}, which the build does not produce")
            elif target in ids and not fragment_ok(fragment, ids[target]):
                bad.add(f"'{link}': {target} has no anchor '#{fragment}'")
        for message in sorted(bad):
            problems.append(Problem(origin.get(path, path), 0, f"broken link in {path}: {message}",
                                    "fix the reference, or the anchor it points at", strict=True))
