#!/usr/bin/env python3
"""Screenshot built pages in Debian's Chromium, for looking at what the build produced.

  python3 tools/screenshot.py site/block.html out.png [--width 1280] [--height 900] [--dark] [--full] [--anchor ID]

Needs Playwright, which the `test` extra installs (`python3 -m pip install -e ".[test]"`), and
Chromium at /usr/bin/chromium (Debian's `chromium` package).
"""
import argparse
import sys
from pathlib import Path

try:
    from playwright.sync_api import sync_playwright
except ImportError:
    sys.exit('tools/screenshot.py needs Playwright: python3 -m pip install -e ".[test]"')

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument("--dark", action="store_true")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--anchor", default="")
    args = ap.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": args.width, "height": args.height},
                                color_scheme="dark" if args.dark else "light")
        page.goto(args.page.resolve().as_uri() + (f"#{args.anchor}" if args.anchor else ""))
        page.wait_for_timeout(200)
        page.screenshot(path=str(args.out), full_page=args.full)
        browser.close()


if __name__ == "__main__":
    main()
