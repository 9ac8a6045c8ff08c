"""Bytes each page of the built site makes a browser fetch, and what it blocks on.

    python benchmarks/page_weight.py                 # build into a temporary folder, then report
    python benchmarks/page_weight.py --site site     # report on an existing build

What it counts. For every HTML page of the site: the bytes of the HTML file, plus the CSS
files it links (`<link rel="stylesheet" href>`) and the JS files it loads (`<script src>`),
each resolved relative to the page and counted once per page. For a JS module
(`<script type="module" src>`), the files it imports statically (`import ... from "./x.js"`,
`import "./x.js"`, `export ... from "./x.js"`) are counted too, transitively; a dynamic
`import()` is loaded on demand and is not counted. Fonts and images are not counted (nor
are `@import`s inside CSS). References outside the site (http:, //, data:) are listed as
external and not counted; a referenced file that does not exist is flagged as missing.
1 KB here is 1024 bytes. The goal is judged on these raw bytes; a gzip column (each file
compressed at level 6, summed) shows what a reader transfers from a server that compresses.

What it flags:
  - a page whose total (HTML + CSS + JS) is over 100 KB;
  - a render-blocking script: a `<script src>` in `<head>` without type="module", defer or
    async;
  - math not rendered in the HTML: on a page with equations KaTeX's markup (class="katex")
    should be present, and no `$$` or `\\frac` should be left as raw text outside
    `<annotation>` elements (where KaTeX keeps the TeX source on purpose). Text inside
    `<script>` and `<style>` is not page text and is not searched.

Without --site it builds the site with `build_site.py --out TMP --cache-dir TMP2` (a private
cache: the checkout's .build_cache and site/ are not touched; --cache-dir reuses a cache
to save the cold build). Prints a markdown table sorted by total size, the largest and the
median page, and the flags. Exit status 0 whatever it finds (it is a report); 1 only when
there is no site to measure (the build failed, or --site has no HTML).
"""
import argparse
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
LIMIT_BYTES = 100 * 1024
RAW_TEX = re.compile(r"\$\$|\\frac")
STATIC_IMPORT = re.compile(
    r"""(?:^|[;}\n])\s*(?:import|export)\s*(?:[\w*{}\s,$]+?\s*from\s*)?["']([^"']+)["']""", re.M)


@dataclass
class PageScan:
    """What one HTML page references and contains, as the parser saw it."""
    stylesheets: list = field(default_factory=list)
    scripts: list = field(default_factory=list)        # (src, is_module)
    blocking: list = field(default_factory=list)       # src of render-blocking scripts in <head>
    katex: bool = False
    raw_tex: list = field(default_factory=list)        # snippets of raw TeX in page text


class PageParser(HTMLParser):
    """Collects stylesheets, scripts, KaTeX markup and raw TeX text of one page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scan = PageScan()
        self.in_head = False
        self.skip_depth = {"annotation": 0, "script": 0, "style": 0}

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        if tag == "head":
            self.in_head = True
        elif tag == "body":
            self.in_head = False
        if tag in self.skip_depth:
            self.skip_depth[tag] += 1
        if "katex" in a.get("class", "").split():
            self.scan.katex = True
        if tag == "link" and "stylesheet" in a.get("rel", "").lower().split() and a.get("href"):
            self.scan.stylesheets.append(a["href"])
        if tag == "script" and a.get("src"):
            is_module = a.get("type", "").lower() == "module"
            self.scan.scripts.append((a["src"], is_module))
            if self.in_head and not (is_module or "defer" in a or "async" in a):
                self.scan.blocking.append(a["src"])

    def handle_endtag(self, tag):
        if tag == "head":
            self.in_head = False
        if self.skip_depth.get(tag):
            self.skip_depth[tag] -= 1

    def handle_data(self, data):
        if any(self.skip_depth.values()):
            return
        for m in RAW_TEX.finditer(data):
            self.scan.raw_tex.append(data[max(0, m.start() - 30):m.end() + 30].replace("\n", " ").strip())


def scan_page(path: Path) -> PageScan:
    parser = PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser.scan


def resolve(site: Path, base: Path, ref: str):
    """The file a reference names (relative to base's folder, or to the site root if it starts
    with /), or None if it points outside the site (another scheme or host)."""
    parts = urlsplit(ref)
    if parts.scheme or parts.netloc:
        return None
    path = unquote(parts.path)
    target = site / path.lstrip("/") if path.startswith("/") else base.parent / path
    return Path(os.path.normpath(target))


def module_imports(site: Path, js: Path):
    """Files a JS module imports statically, transitively (js itself included)."""
    seen, todo = set(), [js]
    while todo:
        current = todo.pop()
        if current in seen or not current.is_file():
            seen.add(current)
            continue
        seen.add(current)
        text = current.read_text(encoding="utf-8", errors="replace")
        for spec in STATIC_IMPORT.findall(text):
            if spec.startswith(("./", "../", "/")):
                target = resolve(site, current, spec)
                if target is not None:
                    todo.append(target)
    return seen


@dataclass
class PageWeight:
    name: str
    html: int
    css: int
    js: int
    scan: PageScan
    missing: list
    external: list
    gzip: int = 0

    @property
    def total(self):
        return self.html + self.css + self.js


def weigh_page(site: Path, page: Path) -> PageWeight:
    """Bytes of the page and of the distinct CSS and JS files it loads."""
    scan = scan_page(page)
    css, js, missing, external = set(), set(), [], []
    for href in scan.stylesheets:
        target = resolve(site, page, href)
        (external.append(href) if target is None else css.add(target))
    for src, is_module in scan.scripts:
        target = resolve(site, page, src)
        if target is None:
            external.append(src)
        else:
            js.update(module_imports(site, target) if is_module else {target})
    missing = sorted(str(p.relative_to(site)) if p.is_relative_to(site) else str(p)
                     for p in css | js if not p.is_file())

    def size(paths):
        return sum(p.stat().st_size for p in paths if p.is_file())

    compressed = sum(gzipped(p) for p in {page} | css | js if p.is_file())
    return PageWeight(page.relative_to(site).as_posix(), page.stat().st_size, size(css), size(js),
                      scan, missing, external, compressed)


def gzipped(path: Path) -> int:
    """Bytes of the file gzip-compressed (level 6, what servers commonly send): a reader's
    transfer size with compression on. Reported beside the goal, never judged by it."""
    return len(gzip.compress(path.read_bytes(), compresslevel=6, mtime=0))


def math_status(w: PageWeight):
    """'rendered', 'no math', or what is wrong with it."""
    if w.scan.raw_tex:
        return f"raw TeX x{len(w.scan.raw_tex)}" + ("" if w.scan.katex else ", no KaTeX")
    return "rendered" if w.scan.katex else "no math"


def kb(n):
    return f"{n / 1024:.1f}"


def table(weights):
    rows = ["| page | HTML bytes | CSS bytes | JS bytes | total bytes | total KB | gzip KB | blocking scripts | math |",
            "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for w in sorted(weights, key=lambda w: (-w.total, w.name)):
        over = " **over 100 KB**" if w.total > LIMIT_BYTES else ""
        rows.append(f"| {w.name} | {w.html:,} | {w.css:,} | {w.js:,} | {w.total:,} | {kb(w.total)}{over} | "
                    f"{kb(w.gzip)} | {', '.join(w.scan.blocking) or 'none'} | {math_status(w)} |")
    return "\n".join(rows)


def flag_lines(weights):
    over = [w for w in weights if w.total > LIMIT_BYTES]
    blocking = [w for w in weights if w.scan.blocking]
    raw = [w for w in weights if w.scan.raw_tex]
    missing = [w for w in weights if w.missing]
    lines = [f"- pages over 100 KB: {len(over)} of {len(weights)}" + (" (marked in the table)" if over else ""),
             f"- pages with render-blocking scripts: {len(blocking)}"
             + (f" ({', '.join(f'{w.name}: {w.scan.blocking}' for w in blocking)})" if blocking else ""),
             f"- pages with KaTeX markup: {sum(w.scan.katex for w in weights)}; "
             f"pages with raw TeX ($$ or \\frac) outside <annotation>: {len(raw)}"]
    for w in raw:
        lines.append(f"  - {w.name}: {len(w.scan.raw_tex)} hit(s), e.g. `{w.scan.raw_tex[0]}`")
    if missing:
        lines.append("- missing CSS/JS files: " + "; ".join(f"{w.name}: {', '.join(w.missing)}" for w in missing))
    external = sorted({ref for w in weights for ref in w.external})
    if external:
        lines.append(f"- external CSS/JS (not counted): {', '.join(external)}")
    return "\n".join(lines)


def summary_lines(weights):
    largest = max(weights, key=lambda w: w.total)
    median = statistics.median(w.total for w in weights)
    return (f"Pages: {len(weights)}. Largest: {largest.name}, {kb(largest.total)} KB "
            f"({largest.total:,} bytes). Median: {kb(median)} KB ({median:,.0f} bytes). "
            f"Gzipped (transfer size, for reference): largest {kb(max(w.gzip for w in weights))} KB, "
            f"median {kb(statistics.median(w.gzip for w in weights))} KB.")


def build_site(out: Path, cache: Path):
    """Build the site into out with build_site.py; True if it succeeded."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, str(ROOT / "build_site.py"), "--out", str(out), "--cache-dir", str(cache)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    print(f"built with: {' '.join(cmd[1:])}\n{(proc.stdout.strip().splitlines() or [''])[-1]}\n")
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
    return proc.returncode == 0


def report(site: Path):
    pages = sorted(site.rglob("*.html"))
    if not pages:
        print(f"no HTML pages under {site}", file=sys.stderr)
        return 1
    weights = [weigh_page(site, p) for p in pages]
    print(f"# Page weight: {site}\n\nHTML + CSS + JS each page loads (fonts and images excluded), "
          f"largest first.\n")
    print(table(weights))
    print("\n" + summary_lines(weights) + "\n\nFlags:\n" + flag_lines(weights))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, help="an existing build to measure (default: build one)")
    parser.add_argument("--cache-dir", type=Path, help="build cache to use when building (default: a fresh one)")
    args = parser.parse_args(argv)
    if args.site:
        return report(args.site.resolve())
    scratch = Path(tempfile.mkdtemp(prefix="page-weight-"))
    try:
        if not build_site(scratch / "site", args.cache_dir or scratch / "cache"):
            print("the build failed: no site to measure", file=sys.stderr)
            return 1
        return report(scratch / "site")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
