"""Words a reader sees on each page of a built site with every disclosure closed.

    python benchmarks/visible_words.py --site /tmp/site                 # one site
    python benchmarks/visible_words.py --site AFTER --before BEFORE     # two, side by side

What it counts: in headless Chromium (/usr/bin/chromium, through Playwright), each top-level
page is loaded from disk, every <details> is closed, and the words of `main`'s innerText are
counted (runs of non-space characters, so a number, a symbol or a line reference is one word).
innerText leaves out what is not drawn, so a closed disclosure counts only its summary line
(`content-visibility: auto`, which skips parts far off screen, is turned off first).
A second column counts the links to a test's source (`source/tests/...`) a reader sees, the
listings of tests the provenance disclosures fold away. Prints a markdown table;
exit status 1 only when there is no page to measure.
"""
import argparse
import sys
from pathlib import Path

COUNT = """() => {
  // content-visibility: auto leaves parts far off screen out of innerText: draw everything
  const style = document.createElement("style");
  style.textContent = "* { content-visibility: visible !important; }";
  document.head.appendChild(style);
  for (const d of document.querySelectorAll("details")) d.open = false;
  const main = document.querySelector("main");
  const words = (main.innerText.match(/\\S+/g) || []).length;
  const tests = [...main.querySelectorAll('a[href*="source/tests/"]')].filter(a => a.checkVisibility()).length;
  return [words, tests];
}"""


def measure(site):
    from playwright.sync_api import sync_playwright
    pages = sorted(p for p in Path(site).glob("*.html") if p.name != "404.html")
    out = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for p in pages:
            page.goto(p.resolve().as_uri())
            out[p.name] = page.evaluate(COUNT)
        browser.close()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", required=True)
    ap.add_argument("--before")
    args = ap.parse_args(argv)
    after = measure(args.site)
    if not after:
        print(f"error: no HTML page in {args.site}", file=sys.stderr)
        return 1
    before = measure(args.before) if args.before else None
    if before:
        print("| page | visible words before | after | change | visible test links before | after |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name, (words, first) in after.items():
            b, bf = before.get(name, (0, 0))
            change = f"{(words - b) / b:+.0%}" if b else "new"
            print(f"| {name} | {b:,} | {words:,} | {change} | {bf:,} | {first:,} |")
        tb, ta = sum(v[0] for v in before.values()), sum(v[0] for v in after.values())
        print(f"| all | {tb:,} | {ta:,} | {(ta - tb) / tb:+.0%} | | |")
    else:
        print("| page | visible words | visible test links |")
        print("| --- | ---: | ---: |")
        for name, (words, first) in after.items():
            print(f"| {name} | {words:,} | {first:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
