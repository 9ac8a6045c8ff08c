"""Make every @font-face in katex.min.css load only its woff2 file.

Upstream lists woff2, woff and ttf for each face; only the woff2 files are
vendored (every current browser reads them), so the other urls would just
404. Idempotent: running it on an already stripped file changes nothing.

Usage: python static/vendor/katex/strip_fonts.py [path/to/katex.min.css]
"""

import re
import sys
from pathlib import Path

CSS = Path(__file__).resolve().parent / "katex.min.css"

FONT_FACE = re.compile(r"@font-face\s*\{[^}]*\}")
SRC = re.compile(r"(src\s*:\s*)([^;}]*)")
WOFF2 = re.compile(r'url\([^)]*\.woff2\)\s*format\(\s*["\']woff2["\']\s*\)')


def _strip_src(match: re.Match) -> str:
    prefix, value = match.groups()
    woff2 = WOFF2.search(value)
    if woff2 is None:
        raise ValueError(f"@font-face src without a woff2 url: {value!r}")
    return prefix + woff2.group(0)


def strip(css: str) -> str:
    return FONT_FACE.sub(lambda face: SRC.sub(_strip_src, face.group(0)), css)


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else CSS
    old = path.read_text(encoding="utf-8")
    new = strip(old)
    if new != old:
        path.write_text(new, encoding="utf-8")
    faces = len(FONT_FACE.findall(new))
    print(f"{path}: {faces} @font-face rules, {'rewritten' if new != old else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
