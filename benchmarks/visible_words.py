"""Words a reader sees on each page of a built site with every disclosure closed.

    python benchmarks/visible_words.py --site /tmp/site                 # one site
    python benchmarks/visible_words.py --site AFTER --before BEFORE     # two, side by side

What it counts: in headless Chromium (/usr/bin/chromium, through Playwright), each top-level
page is loaded from disk, every <details> is closed, and the words of `main`'s innerText are
counted (runs of non-space characters, so a number, a symbol or a line reference is one word).
innerText leaves out what is not drawn, so a closed disclosure counts only its summary line
(`content-visibility: auto`, which skips parts far off screen, is turned off first).
A second column counts the words before the page's first disclosure (all of them on a page
with none): what a reader sees before the first thing to open. A third counts the links to a
test's source (`source/tests/...`) a reader sees, the listings of tests the provenance
disclosures fold away. Prints a markdown table; exit status 1 only when there is no page to measure.
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
  const count = () => (main.innerText.match(/\\S+/g) || []).length;
  const words = count();
  const tests = [...main.querySelectorAll('a[href*="source/tests/"]')].filter(a => a.checkVisibility()).length;
  // The words before the first disclosure: cut it and all after it (the page is loaded afresh next)
  const first = main.querySelector("details");
  if (first) {
    const rest = document.createRange();
    rest.setStartBefore(first);
    rest.setEndAfter(main.lastChild);
    rest.deleteContents();
  }
  return [words, count(), tests];
}"""


def measure(site):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        out = measure_in(browser.new_page(viewport={"width": 1280, "height": 900}), site)
        browser.close()
    return out


def measure_in(page, site):
    """{file name: [visible words, words before the first disclosure, visible test links]}, each
    of the site's pages loaded in `page` (a Playwright page)."""
    out = {}
    for p in sorted(p for p in Path(site).glob("*.html") if p.name != "404.html"):
        page.goto(p.resolve().as_uri())
        out[p.name] = page.evaluate(COUNT)
    return out


def change(before, after):
    """'+12 (+3%)', or 'new' for a page the first site does not have."""
    return f"{after - before:+,} ({(after - before) / before:+.0%})" if before else "new"


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
        print("| page | visible words before | after | change | before the first disclosure: before | after"
              " | change | visible test links before | after |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, (words, head, tests) in after.items():
            b, bh, bt = before.get(name, (0, 0, 0))
            print(f"| {name} | {b:,} | {words:,} | {change(b, words)} | {bh:,} | {head:,} | {change(bh, head)}"
                  f" | {bt:,} | {tests:,} |")
        total = [sum(v[i] for v in site.values()) for site in (before, after) for i in (0, 1)]
        print(f"| all | {total[0]:,} | {total[2]:,} | {change(total[0], total[2])} | {total[1]:,} | {total[3]:,}"
              f" | {change(total[1], total[3])} | | |")
    else:
        print("| page | visible words | before the first disclosure | visible test links |")
        print("| --- | ---: | ---: | ---: |")
        for name, (words, head, tests) in after.items():
            print(f"| {name} | {words:,} | {head:,} | {tests:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
