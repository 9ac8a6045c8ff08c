"""The site's marks link to their glossary entries, the first time each appears on a page
(site_builder/render/marks.py), and the glossary page is in the navigation."""
import re

from site_builder.render.marks import link_first_marks


def test_only_the_first_of_each_mark_is_linked():
    html = ('<span class="badge" data-mark="status">Implemented</span> <span data-mark="status">again</span>'
            '<a class="role-tests" data-mark="tests" href="t.html">Tests it: t.py:3</a>')
    out = link_first_marks(html, "glossary.html")
    assert out.count('href="glossary.html#mark-status"') == 1
    assert out.startswith('<a class="mark-link" href="glossary.html#mark-status"')
    assert '<span data-mark="status">again</span>' in out
    # links do not nest: a mark that is a link gets a small link after it
    assert 'Tests it: t.py:3</a><a class="mark-link" href="glossary.html#mark-tests"' in out


def test_a_mark_in_a_summary_gets_its_link_as_the_disclosure_s_first_line():
    """A click on a disclosure's summary opens it, and a summary may hold no link (axe's
    nested-interactive): the mark's words stay words, the link opens the disclosure's body."""
    html = '<details><summary><span data-mark="evidence">Evidence</span>: 3 line ranges</summary></details>'
    out = link_first_marks(html, "glossary.html")
    summary = re.search(r"<summary>(.*?)</summary>", out).group(1)
    assert "<a " not in summary
    assert ('</summary><p class="mark-note" data-pagefind-ignore><a class="mark-link" '
            'href="glossary.html#mark-evidence"') in out


def test_the_evidence_summary_links_to_its_entry(site_page):
    html = site_page("block")
    body = re.search(r'<details class="reference provenance"[^>]*>\s*<summary>(.*?)</summary>(.{0,300})', html, re.S)
    assert "<a " not in body.group(1), body.group(1)
    assert 'href="glossary.html#mark-evidence"' in body.group(2), body.group(2)


def test_every_mark_on_a_page_links_once_to_an_entry(site_page):
    glossary = site_page("glossary")
    entries = set(re.findall(r'<section id="mark-([\w-]+)"', glossary))
    for slug in ("block", "attention", "seq2seq-step", "warmup"):
        html = site_page(slug)
        used = set(re.findall(r'data-mark="([\w-]+)"', html))
        linked = re.findall(r'class="mark-link" href="glossary\.html#mark-([\w-]+)"', html)
        assert used and sorted(linked) == sorted(used), slug          # each once
        assert used <= entries, (slug, used - entries)


def test_the_glossary_is_in_the_navigation(site_page):
    assert '<a href="glossary.html">Marks and badges</a>' in site_page("index")
