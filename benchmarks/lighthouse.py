"""Lighthouse on every page of a fresh build, with the mobile profile, against the goals.

    python benchmarks/lighthouse.py                       # build into a temporary folder, every page
    python benchmarks/lighthouse.py --pages block seq2seq # only these pages (quick iteration)
    python benchmarks/lighthouse.py --site site           # measure an existing build

What it runs. `lighthouse@12.2.3`, pinned (Lighthouse 13 wants Node 22; the machines have Node
20), installed with npm into a cache folder outside the repository
(~/.cache/transformer-by-hand/lighthouse, or $LIGHTHOUSE_CACHE) on first use. It is a
benchmark, not a dependency of the product. Chrome is Debian's Chromium, through CHROME_PATH
(default /usr/bin/chromium). Lighthouse's default profile is the mobile one: a Moto G
sized screen, simulated slow 4G and a 4x CPU slowdown.

How the site is served. Over loopback by a small threaded server in this script that
compresses HTML, CSS, JS, SVG and JSON with gzip (level 6) when the browser asks for it, as a
static host does; fonts (woff2 is compressed already) go as they are. So the transferred
bytes are what a reader on a real host would move.

What it prints. One row per page: performance, accessibility and best-practices scores; first
contentful paint, largest contentful paint, total blocking time, cumulative layout shift; the
DOM size; and the transferred bytes of HTML, CSS, JS and fonts (the goal's measure; Lighthouse's
total, images included, is shown beside it). Then the worst page for every column and the
median, then each goal with the pages that miss it. Exit status 0 whatever it finds (it is a
report); 1 when Lighthouse could not run on some page.

Goals (from issue 13): performance >= 95 and accessibility 100 on every page; LCP <= 2.0 s
and TBT <= 100 ms on every page; <= 150 KB (1 KB = 1000 bytes) transferred per page.

Pages run one at a time (the machine may be shared; Lighthouse's simulated timings come from
a trace of the real load, so a busy machine makes them worse, not better).
"""
import argparse
import gzip
import http.server
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIGHTHOUSE_VERSION = "12.2.3"
CACHE = Path(os.environ.get("LIGHTHOUSE_CACHE",
                            Path.home() / ".cache" / "transformer-by-hand" / "lighthouse"))
CHROME = os.environ.get("CHROME_PATH", "/usr/bin/chromium")
COMPRESSED_TYPES = (".html", ".css", ".js", ".svg", ".json", ".txt")
GOAL_PERFORMANCE = 95
GOAL_ACCESSIBILITY = 100
GOAL_LCP_MS = 2000
GOAL_TBT_MS = 100
GOAL_BYTES = 150_000
COUNTED_TYPES = ("document", "stylesheet", "script", "font")


def lighthouse_bin() -> Path:
    """The pinned Lighthouse CLI, installed with npm into the cache folder on first use."""
    cli = CACHE / "node_modules" / "lighthouse" / "cli" / "index.js"
    package = CACHE / "node_modules" / "lighthouse" / "package.json"
    if package.exists() and json.loads(package.read_text())["version"] == LIGHTHOUSE_VERSION:
        return cli
    CACHE.mkdir(parents=True, exist_ok=True)
    print(f"installing lighthouse@{LIGHTHOUSE_VERSION} into {CACHE} ...", file=sys.stderr)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(CACHE),
                    f"lighthouse@{LIGHTHOUSE_VERSION}"], check=True)
    return cli


class CompressingHandler(http.server.SimpleHTTPRequestHandler):
    """Static files, gzip-compressed for text types when the client accepts it."""

    def log_message(self, *args):
        pass

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.is_file() and path.suffix in COMPRESSED_TYPES):
            return super().send_head()
        body = gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


def serve(site: Path):
    """A loopback server for the site on a free port, in a daemon thread."""
    handler = lambda *a, **k: CompressingHandler(*a, directory=str(site), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_lighthouse(cli: Path, url: str, out_json: Path):
    """One Lighthouse run, mobile profile (the default), performance/accessibility/best practices."""
    cmd = ["node", str(cli), url, "--output=json", f"--output-path={out_json}", "--quiet",
           "--only-categories=performance,accessibility,best-practices",
           "--chrome-flags=--headless=new --no-sandbox --disable-gpu"]
    env = dict(os.environ, CHROME_PATH=CHROME)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0 or not out_json.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RuntimeError("; ".join(tail) or f"lighthouse exited with {done.returncode}")
    return json.loads(out_json.read_text())


def row_of(page: str, report: dict) -> dict:
    """The numbers of one page out of a Lighthouse JSON report."""
    cats, audits = report["categories"], report["audits"]
    items = audits["network-requests"]["details"]["items"]
    counted = sum(i.get("transferSize", 0) for i in items if i.get("resourceType", "").lower() in COUNTED_TYPES)
    # Failing accessibility audits, those Lighthouse does not score (weight 0, such as
    # td-has-header and label-content-name-mismatch in 12.2.3) included and marked.
    failing_a11y = sorted(ref["id"] + ("" if ref.get("weight", 0) > 0 else " (unscored)")
                          for ref in cats["accessibility"]["auditRefs"] if audits[ref["id"]].get("score") == 0)
    return {
        "page": page,
        "performance": round(cats["performance"]["score"] * 100),
        "accessibility": round(cats["accessibility"]["score"] * 100),
        "best_practices": round(cats["best-practices"]["score"] * 100),
        "fcp_ms": audits["first-contentful-paint"]["numericValue"],
        "lcp_ms": audits["largest-contentful-paint"]["numericValue"],
        "tbt_ms": audits["total-blocking-time"]["numericValue"],
        "cls": audits["cumulative-layout-shift"]["numericValue"],
        "dom": int(audits["dom-size"].get("numericValue", 0)),
        "bytes": counted,
        "all_bytes": int(audits["total-byte-weight"]["numericValue"]),
        "a11y_failures": failing_a11y,
    }


COLUMNS = (  # key, header, format, worse is "min" or "max"
    ("performance", "performance", "{:d}", "min"),
    ("accessibility", "accessibility", "{:d}", "min"),
    ("best_practices", "best practices", "{:d}", "min"),
    ("fcp_ms", "FCP", "{:.1f} s", "max"),
    ("lcp_ms", "LCP", "{:.1f} s", "max"),
    ("tbt_ms", "TBT", "{:.0f} ms", "max"),
    ("cls", "CLS", "{:.3f}", "max"),
    ("dom", "DOM elements", "{:,d}", "max"),
    ("bytes", "transferred (HTML+CSS+JS+fonts)", "{:.1f} KB", "max"),
    ("all_bytes", "all bytes", "{:.1f} KB", "max"),
)


def cell(key, fmt, value):
    if key.endswith("_ms") and "s" in fmt and "ms" not in fmt:
        value = value / 1000
    if key.endswith("bytes"):
        value = value / 1000
    if fmt == "{:d}" or fmt == "{:,d}":
        value = int(round(value))
    return fmt.format(value)


def table(rows) -> str:
    head = "| page | " + " | ".join(h for _, h, _, _ in COLUMNS) + " |"
    rule = "|---|" + "---:|" * len(COLUMNS)
    lines = [head, rule]
    for r in rows:
        lines.append(f"| {r['page']} | " + " | ".join(cell(k, f, r[k]) for k, _, f, _ in COLUMNS) + " |")
    worst = {k: (min if w == "min" else max)(r[k] for r in rows) for k, _, _, w in COLUMNS}
    median = {k: statistics.median(r[k] for r in rows) for k, _, _, _ in COLUMNS}
    lines.append("| **worst** | " + " | ".join(cell(k, f, worst[k]) for k, _, f, _ in COLUMNS) + " |")
    lines.append("| **median** | " + " | ".join(cell(k, f if f != "{:d}" else "{:.0f}", median[k])
                                                   for k, _, f, _ in COLUMNS) + " |")
    return "\n".join(lines)


GOALS = (
    (f"performance >= {GOAL_PERFORMANCE}", lambda r: r["performance"] >= GOAL_PERFORMANCE),
    (f"accessibility = {GOAL_ACCESSIBILITY}", lambda r: r["accessibility"] >= GOAL_ACCESSIBILITY),
    (f"LCP <= {GOAL_LCP_MS / 1000:.1f} s", lambda r: r["lcp_ms"] <= GOAL_LCP_MS),
    (f"TBT <= {GOAL_TBT_MS} ms", lambda r: r["tbt_ms"] <= GOAL_TBT_MS),
    (f"transferred <= {GOAL_BYTES // 1000} KB", lambda r: r["bytes"] <= GOAL_BYTES),
)


def goals_report(rows) -> str:
    lines = ["", "Goals (every page):"]
    for name, ok in GOALS:
        missed = [r["page"] for r in rows if not ok(r)]
        lines.append(f"  {'met    ' if not missed else 'NOT met'}  {name}"
                     + (f"   missed by: {', '.join(missed)}" if missed else ""))
    failures = sorted({(r["page"], a) for r in rows for a in r["a11y_failures"]})
    if failures:
        lines.append("  accessibility audits failing: "
                     + "; ".join(f"{p}: {a}" for p, a in failures))
    return "\n".join(lines)


def build(out: Path, cache_dir):
    cmd = [sys.executable, str(ROOT / "build_site.py"), "--out", str(out)]
    if cache_dir:
        cmd += ["--cache-dir", str(cache_dir)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"build failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    print(done.stdout.strip().splitlines()[-1], file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--site", type=Path, help="measure this built site instead of building one")
    ap.add_argument("--cache-dir", type=Path, help="build cache for the fresh build (default: the checkout's)")
    ap.add_argument("--pages", nargs="+", metavar="NAME", help="only these pages (block or block.html)")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    ap.add_argument("--reports", type=Path, help="keep each page's full Lighthouse JSON report in this folder")
    args = ap.parse_args(argv)

    cli = lighthouse_bin()
    with tempfile.TemporaryDirectory(prefix="lighthouse-") as tmp:
        tmp = Path(tmp)
        site = args.site
        if site is None:
            site = tmp / "site"
            build(site, args.cache_dir)
        pages = sorted(p.name for p in site.glob("*.html"))
        if args.pages:
            wanted = {n if n.endswith(".html") else n + ".html" for n in args.pages}
            unknown = wanted - set(pages)
            if unknown:
                sys.exit(f"no such page in {site}: {', '.join(sorted(unknown))}")
            pages = [p for p in pages if p in wanted]
        server = serve(site)
        port = server.server_address[1]
        rows, errors = [], []
        try:
            for page in pages:
                try:
                    report_dir = args.reports or tmp
                    report_dir.mkdir(parents=True, exist_ok=True)
                    report = run_lighthouse(cli, f"http://127.0.0.1:{port}/{page}", report_dir / f"{page}.json")
                except RuntimeError as e:
                    errors.append(f"{page}: {e}")
                    print(f"  {page}: lighthouse failed: {e}", file=sys.stderr)
                    continue
                rows.append(row_of(page, report))
                r = rows[-1]
                print(f"  {page}: performance {r['performance']}, accessibility {r['accessibility']}",
                      file=sys.stderr)
        finally:
            server.shutdown()
    if not rows:
        sys.exit("lighthouse ran on no page")
    print(f"Lighthouse {LIGHTHOUSE_VERSION}, mobile profile (simulated slow 4G, 4x CPU slowdown), "
          f"Chromium {CHROME}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print()
    print(table(rows))
    print(goals_report(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
