"""Validate every internal href and #fragment of the built pages, source pages included.

Runs on the rendered files in memory, before anything is written, so a broken link fails
`check` without touching the last good site. `#L{n}-L{m}` fragments are checked as ranges:
both ends must be line anchors of the target file.
"""
import posixpath
import re
from html.parser import HTMLParser
from urllib.parse import urlsplit, unquote

from site_builder.problems import Problem

RANGE_RE = re.compile(r"^L(\d+)-L(\d+)$")


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and "name" in attrs:
            self.ids.add(attrs["name"])
        for key in ("href", "src"):
            if attrs.get(key) and not (tag == "a" and attrs.get("data-external")):
                self.links.append(attrs[key])


def scan(files):
    """{path: bytes} -> ({path: ids}, {path: [links]}) for the HTML files."""
    ids, links = {}, {}
    for path, data in files.items():
        if path.endswith(".html"):
            c = _Collector()
            c.feed(data.decode("utf-8"))
            ids[path], links[path] = c.ids, c.links
    return ids, links


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
        for link in links[path]:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("mailto:"):
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), unquote(parts.path))) if parts.path else path
            if target not in files and not target.startswith("pagefind/"):
                bad.add(f"'{link}' points at {target}, which the build does not produce")
            elif target in ids and not fragment_ok(parts.fragment, ids[target]):
                bad.add(f"'{link}': {target} has no anchor '#{parts.fragment}'")
        for message in sorted(bad):
            problems.append(Problem(origin.get(path, path), 0, f"broken link in {path}: {message}",
                                    "fix the reference, or the anchor it points at", strict=True))
