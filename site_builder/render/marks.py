"""The site's marks (badges, the ✓ of a checked shape, the role of a cited line, a note's
label) linked to their entries on the glossary page, the first time each appears on a page.

A template marks an element with `data-mark="KEY"`; the glossary page (site.yaml `glossary:`,
a page of the content) has a section `mark-KEY` for each, so its wording is the project's and
the build's anchor check fails on a mark with no entry. A pass over the rendered page, rather
than state threaded through the templates: "first on the page" spans every partial and the
order they are included in, which only the finished HTML knows. The first mark that is a
link itself (an equation's "Computes it: file:line") gets a small link after it, since links
do not nest. One inside a disclosure's <summary> (the evidence's "Evidence") gets its link as
the disclosure's first line instead: a summary holding a link is a control inside a control
(axe's nested-interactive), and a click on the words must still open it. Any other is wrapped
in one.
"""
import re

MARK_RE = re.compile(r'<(span|a|p)\b([^>]*)\bdata-mark="([\w-]+)"([^>]*)>')


def link_first_marks(html: str, glossary_href: str) -> str:
    """html with the first element of each data-mark key linked to glossary_href#mark-KEY."""
    seen, out, at = set(), [], 0
    for m in MARK_RE.finditer(html):
        key = m.group(3)
        if key in seen:
            continue
        seen.add(key)
        href = f"{glossary_href}#mark-{key}"
        close = html.find(f"</{m.group(1)}>", m.end())
        if close < 0:
            continue
        end = close + len(m.group(1)) + 3
        out.append(html[at:m.start()])
        if _inside_summary(html, m.start()) and (summary_end := html.find("</summary>", end)) >= 0:
            summary_end += len("</summary>")
            out.append(html[m.start():summary_end] + f'<p class="mark-note" data-pagefind-ignore><a class="mark-link" '
                       f'href="{href}">What this holds: the glossary</a></p>')
            end = summary_end
        elif m.group(1) == "a":
            out.append(html[m.start():end] + f'<a class="mark-link" href="{href}" data-pagefind-ignore '
                       f'title="What this mark means">?</a>')
        else:
            out.append(f'<a class="mark-link" href="{href}" title="What this mark means">{html[m.start():end]}</a>')
        at = end
    out.append(html[at:])
    return "".join(out)


def _inside_summary(html: str, at: int) -> bool:
    """Whether position `at` is between a <summary> and its </summary>."""
    return html.rfind("<summary", 0, at) > html.rfind("</summary>", 0, at)
