"""The link check's two readings of a page (site_builder/render/links.py): the regular expressions
for simple pages must find exactly what html.parser finds, and must hand every other page
to the parser."""
import pytest

from site_builder.render import links


def parsed(text):
    """The parser's reading, as the link check made it before the simple reading."""
    scanner = links._Scanner()
    scanner.feed(links.INERT_TAGS.sub("", text))
    scanner.close()
    return scanner.ids, scanner.links


def test_the_simple_reading_equals_the_parser_on_every_page_of_the_site(built_site):
    pages = sorted(p for p in built_site.rglob("*.html") if "pagefind" not in p.parts)
    read_simply = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        found = links._simple_scan(text)
        if found is not None:
            read_simply += 1
            assert found == parsed(text), page
    # Every page is simple markup today, the concept pages with their authors' Markdown too.
    # A page that is not had something malformed in it: a summary's quotes once went raw
    # into <meta name="description" content="...">, ending the attribute early.
    not_simple = [p.relative_to(built_site).as_posix() for p in pages if links._simple_scan(p.read_text("utf-8")) is None]
    assert not not_simple, f"not simple markup (an unescaped quote or < in an attribute?): {not_simple}"
    assert read_simply == len(pages) > 0


PAGE = '<!doctype html>\n<html><head><title>T</title><script>let a = 1;</script></head><body>\n{}\n</body></html>'

MUST_FALL_BACK = [
    '<a href=nope.html>unquoted</a>',
    "<a href='single.html'>single quotes</a>",
    '<!-- <a href="commented.html"> -->',
    '<script>const s = \'<a href="in-a-string.html">\';</script>',
    '<style>a < b {}</style>',
    'a < b, then <a href="after.html">',
    '<a\xa0href="nbsp.html">',
    '<a href="x.html" title="a > b">',
    '<script src="self-closed.js"/>',
    '<p>x<![CDATA[ <a href="cdata.html"> ]]></p>',
    '<a href = "spaced.html">',
]

SIMPLE = [
    '<a href="x.html">x</a> <a id="here" name="there" data-origin="content/pages/p.md:3" href="#here">',
    '<a\n  class="fn-ref"\n  href="over-lines.html"\n>lines</a>',
    '<A HREF="upper.html" ID="Up">',
    '<a href="q.html?a=1&amp;b=2&#39;">',
    '<b title=" href=" x="y">a look-alike in a value</b>',
    '<script defer src="static/js/site.js"></script>',
    '<svg><title>no links</title><a xlink:href="#svg">s</a></svg>',
    '<details open><summary>bare attribute</summary><a href="d.html" hidden>d</a></details>',
    '<base href="/elsewhere/"><img src="i.png" alt="">',
    '<tr id="L1"><td class="ln">1</td><td class="code"><span class="k">def</span></td></tr>',
    '<img srcset="a.png 1x, b.png 2x" alt=""><form action="f.html"><button formaction="g.html">g</button></form>',
]


@pytest.mark.parametrize("body", MUST_FALL_BACK)
def test_markup_the_simple_reading_does_not_know_goes_to_the_parser(body):
    assert links._simple_scan(PAGE.format(body)) is None
    assert links.scan_page(PAGE.format(body).encode()) == parsed(PAGE.format(body))


@pytest.mark.parametrize("body", SIMPLE)
def test_simple_markup_is_read_as_the_parser_reads_it(body):
    found = links._simple_scan(PAGE.format(body))
    assert found is not None
    assert found == parsed(PAGE.format(body))


# -- where a broken link is reported, without building a site ---------------------------------

def broken_links(tmp_path, body, head="---\ntitle: T\n---\n"):
    """The link check's problems for one page whose body (from the file's line after `head`) is
    rendered by the builder's Markdown: [(line, message)]."""
    from site_builder.render.html import Renderer
    (tmp_path / "p.md").write_text(head + body, encoding="utf-8")
    body_line = head.count("\n") + 1
    html = Renderer(tmp_path, None, []).md(body, "p.md", body_line, check_numbers=False)
    problems = []
    links.check_links({"p.html": PAGE.format(html).encode()}, {"p.html": "p.md"}, problems)
    return [(p.line, p.message) for p in problems]


def line_number(text, needle, head="---\ntitle: T\n---\n"):
    return (head + text).splitlines().index(next(l for l in (head + text).splitlines() if needle in l)) + 1


def test_the_same_broken_link_twice_is_two_problems_at_their_own_lines_not_at_a_code_span(tmp_path):
    body = "Intro.\n\nSee `nope30.html` here.\n\n[x](nope30.html)\n\n[y](nope30.html)\n"
    found = broken_links(tmp_path, body)
    assert [line for line, _ in found] == [line_number(body, "[x]"), line_number(body, "[y]")], found
    assert all("'nope30.html'" in message for _, message in found)


def test_a_reference_link_does_not_move_the_search_past_the_links_after_it(tmp_path):
    # the definition [r]: stands at the end; the link after [y][r], and the three on the next
    # line, are still each at their own line, and the code span is never one
    body = ("Intro.\n\nMentioned as code: `[q](nope1.html)`. See [y][r].\n\nThe real link: [z](nope1.html).\n\n"
            "[b](nope1.html \"t\") [c][r1] [b3](<nope1.html>) [b4](nope1.html)\n\n[r]: nope7.html\n[r1]: nope7.html\n")
    found = broken_links(tmp_path, body)
    lines = sorted({line for line, message in found if "'nope1.html'" in message})
    assert lines == [line_number(body, "[z]"), line_number(body, "[b3]")], found


def test_a_link_written_with_a_character_reference_is_found_where_it_was_written(tmp_path):
    body = "Intro.\n\nMore.\n\n<a href=\"&#110;ope8.html\">n</a>\n"
    assert [line for line, _ in broken_links(tmp_path, body)] == [line_number(body, "&#110;ope8")]


def page_problems(body):
    """The link check's messages for one page, p.html, with this body."""
    problems = []
    links.check_links({"p.html": PAGE.format(body).encode()}, {"p.html": "p.md"}, problems)
    return [p.message for p in problems]


def test_a_fragment_is_percent_decoded_as_a_browser_decodes_it():
    assert page_problems('<span id="café">c</span><span id="a b">s</span><span id="100%">p</span>'
                         '<a href="#caf%C3%A9">pc</a><a href="#a%20b">sp</a><a href="#café">raw</a><a href="#100%">p</a>') == []
    assert len(page_problems('<span id="café">c</span><a href="#caf%C3%A8">other</a><a href="#caf%E9">latin-1</a>')) == 2


def test_srcset_candidates_and_form_actions_are_checked(tmp_path):
    found = page_problems('<img src="ok.png" srcset="nope20.png 2x, nope22.png (a, b) 3x,nope23.png" alt="">'
                          '<form action="nope21.html"><button formaction="nope24.html">go</button></form>')
    assert sorted(m.split("'")[1] for m in found) == ["nope20.png", "nope21.html", "nope22.png", "nope23.png", "nope24.html", "ok.png"]
    # written in a page's Markdown, each is found at its own line
    body = "Intro.\n\n<img srcset=\"nope20.png 2x\" alt=\"\">\n\n<form action=\"nope21.html\"></form>\n"
    assert [line for line, _ in broken_links(tmp_path, body)] == [line_number(body, "nope20"), line_number(body, "nope21")]


def test_a_page_scanned_by_an_earlier_build_is_read_from_the_cache_and_a_changed_one_is_not(tmp_path, monkeypatch):
    from site_builder.base.cache import BuildCache
    cache = BuildCache(tmp_path / "cache")
    page = PAGE.format('<h2 id="a">A</h2><a href="#a">a</a>').encode()
    first = links.scan({"p.html": page}, cache)
    links._SCANNED.clear()                     # the next build's process
    calls = []
    real = links.scan_page
    monkeypatch.setattr(links, "scan_page", lambda data: calls.append(data) or real(data))
    assert links.scan({"p.html": page}, cache) == first and calls == []
    changed = page.replace(b'id="a"', b'id="b"')
    ids, _ = links.scan({"p.html": changed}, cache)
    assert calls == [changed] and ids["p.html"] == {"b"}
    ids, _ = links.scan({"p.html": page}, BuildCache(None))        # no cache: scanned
    assert len(calls) == 2 and ids["p.html"] == {"a"}
