"""The companion PDF (site_builder/publish/pdf.py), read back with pypdf from the session's build:
each concept's "PDF: Section, Eq., p." line points at a named destination that exists, on the
page the line states, with the equation's number on that page; the outline lists every page of
nav; and the numbers the pages show are the PDF's."""
import io
import re

import pytest
import yaml

from tests.conftest import ROOT

pypdf = pytest.importorskip("pypdf")

PDF_LINE = re.compile(r'<p class="pdf-ref">PDF: <a href="([^"#]+)#nameddest=([^"]+)" data-pdf-page="(\d+)">'
                      r'Section ([0-9.]+)(?:, Eq\. (\d+))?, p\. (\d+)</a></p>')
CONCEPT = re.compile(r'<section class="concept" id="([^"]+)"')


def nav():
    return yaml.safe_load((ROOT / "content" / "site.yaml").read_text())["nav"]


@pytest.fixture(scope="module")
def reader(built_site):
    [pdf] = sorted(built_site.glob("*.pdf"))
    return pypdf.PdfReader(io.BytesIO(pdf.read_bytes()))


@pytest.fixture(scope="module")
def page_texts(reader):
    return {}


def page_text(reader, texts, n):
    if n not in texts:
        texts[n] = reader.pages[n - 1].extract_text()
    return texts[n]


def test_every_concept_points_at_its_place_in_the_pdf(built_site, reader, page_texts):
    dests = {name: reader.get_destination_page_number(d) + 1 for name, d in reader.named_destinations.items()}
    checked = 0
    for slug in nav():
        html = (built_site / f"{slug}.html").read_text(encoding="utf-8")
        concepts = CONCEPT.findall(html)
        lines = PDF_LINE.findall(html)
        assert len(lines) == len(concepts), f"{slug}.html: {len(concepts)} concepts, {len(lines)} PDF lines"
        for sid, (file, dest, data_page, section, eq, page) in zip(concepts, lines):
            assert (built_site / file).is_file()
            assert dest.startswith(f"{slug}:{sid}"), (slug, sid, dest)
            assert dest in dests, f"{slug}.html#{sid}: no named destination {dest} in {file}"
            assert int(page) == int(data_page) == dests[dest], f"{dest}: the page says p. {page}, the PDF has it on {dests[dest]}"
            # the section number is the one the page's own heading shows
            assert re.search(rf'id="{re.escape(sid)}"[^>]*>\s*<h2><span class="sec-number">{re.escape(section)}</span>', html)
            assert section.split(".")[0] == str(nav().index(slug) + 1)
            if eq:
                text = page_text(reader, page_texts, int(page))
                assert f"({eq})" in text, f"{dest}: equation ({eq}) is not on p. {page}"
            checked += 1
    assert checked > 50


def test_each_equation_shows_the_number_the_pdf_gives_it(built_site, reader, page_texts):
    html = (built_site / "block.html").read_text(encoding="utf-8")
    dests = {name: reader.get_destination_page_number(d) + 1 for name, d in reader.named_destinations.items()}
    numbers = re.findall(r'<figure class="equation" id="([^"]+)".*?<span class="eq-number">\((\d+)\)</span>', html, re.S)
    assert len(numbers) == html.count('<figure class="equation"') > 10
    for anchor, n in numbers:
        assert f"({n})" in page_text(reader, page_texts, dests[f"block:{anchor}"]), anchor
    assert [int(n) for _, n in numbers] == sorted(int(n) for _, n in numbers)


def test_the_outline_lists_every_page_of_nav(built_site, reader):
    top = [item["/Title"] for item in reader.outline if not isinstance(item, list)]
    titles = [re.search(r"<h1[^>]*>(.*?)</h1>", (built_site / f"{slug}.html").read_text(encoding="utf-8"))[1]
              for slug in nav()]
    for i, title in enumerate(titles, 1):
        assert f"{i} {title}" in top, f"the outline has no '{i} {title}': {top}"


def test_every_link_inside_the_pdf_leads_to_a_named_destination(reader):
    """The pages are typeset as separate parts and joined: a link into another part is made a
    link to its named destination then, and none is left pointing nowhere."""
    dests = set(reader.named_destinations)
    links = [a.get_object() for page in reader.pages for a in page.get("/Annots") or []]
    inside = [str(a["/Dest"]) for a in links if "/Dest" in a]
    assert len(inside) > 1000 and set(inside) <= dests, sorted(set(inside) - dests)[:5]
    assert not [a for a in links if not str(a.get("/A", {}).get("/URI", "http")).startswith("http")]


def test_the_pdf_has_page_numbers_and_a_contents(reader, page_texts):
    assert "Contents" in page_text(reader, page_texts, 2)
    middle = len(reader.pages) // 2
    assert page_text(reader, page_texts, middle).strip().endswith(str(middle))


# A focused test of the numbering, the cache and the error report, on pages made here (Typst on
# a page or two takes a fraction of a second; the differential test's pdf_pages_move edit checks
# the same through whole builds).

def concept_page(prose_paragraphs=0, tex="E = m c^2"):
    prose = "<p>" + "Words that fill the page. " * 60 + "</p>"
    return (f'<main><h1>Demo</h1><section class="concept" id="demo"><h2><!--pdf-number:demo-->Demo</h2>'
            f'{prose * prose_paragraphs}<figure class="equation" id="demo--e"><figcaption>'
            f'<a class="eq-name" href="#demo--e">Energy</a><!--pdf-eq:demo--e--></figcaption>'
            f'<div class="math"><math display="block"><semantics><mrow></mrow>'
            f'<annotation encoding="application/x-tex">{tex}</annotation></semantics></math></div></figure>'
            f'<!--pdf-line:demo--></section></main>')


def companion(tmp_path, html, cache=None):
    from site_builder.publish import pdf
    (tmp_path / "content" / "pages").mkdir(parents=True, exist_ok=True)
    (tmp_path / "content" / "pages" / "demo.md").write_text("# Demo\n\nSome text.\n\n$$\n\\foo + 1\n$$\n")
    meta = dict(title="Demo site", description="", built_from="Built here", papers={}, css="", root=tmp_path)
    result = pdf.companion([("demo", "Demo", "content/pages/demo.md", html)], meta, cache)
    return result, pdf.fill_numbers(html, "demo", result)


def stated_page(html):
    return int(re.search(r", p\. (\d+)</a>", html)[1])


def test_an_edit_that_moves_an_equation_moves_its_stated_page_and_the_cache_follows(tmp_path):
    from site_builder.base.cache import BuildCache
    cache = BuildCache(tmp_path / "cache")
    first, html = companion(tmp_path, concept_page(0), cache)
    assert stated_page(html) == first.records["demo:demo--e"]["page"]
    assert '<span class="sec-number">1.1</span>' in html and '<span class="eq-number">(1)</span>' in html
    moved, moved_html = companion(tmp_path, concept_page(8), cache)
    assert stated_page(moved_html) > stated_page(html)
    reader = pypdf.PdfReader(io.BytesIO(moved.pdf))
    dest = reader.named_destinations["demo:demo--e"]
    assert reader.get_destination_page_number(dest) + 1 == stated_page(moved_html)
    hits, misses = cache.hits, cache.misses
    again, _ = companion(tmp_path, concept_page(8), cache)
    # the page's Typst markup, its part, the contents (twice: its length, then it) and the join
    assert (cache.hits, cache.misses) == (hits + 5, misses) and again.pdf == moved.pdf
    assert companion(tmp_path, concept_page(8))[0].pdf == moved.pdf       # typeset afresh: the same bytes


def test_a_formula_typst_cannot_set_is_reported_at_its_content_file_and_line(tmp_path):
    result, html = companion(tmp_path, concept_page(0, tex="\\foo + 1"))
    assert result.pdf is None and "pdf-ref" not in html and "<!--pdf" not in html
    [(file, line, message, fix)] = result.problems
    assert (file, line) == ("content/pages/demo.md", 6), result.problems
    assert "foo" in message


def two_pages(first_words=0):
    """Two pages in nav order; the first links to the second's equation."""
    prose = "<p>" + "Words that fill the page. " * 60 + "</p>"
    first = concept_page(first_words).replace("<h1>Demo</h1>", '<h1>Demo</h1><p><a href="other.html#other--f">See F</a></p>')
    second = (concept_page(1).replace("demo", "other").replace("Demo", "Other").replace("E = m c^2", "F = m a")
              .replace('id="other--e"', 'id="other--f"').replace("#other--e", "#other--f")
              .replace("<!--pdf-eq:other--e-->", "<!--pdf-eq:other--f-->") + prose)
    return [("demo", "Demo", "content/pages/demo.md", first), ("other", "Other", "content/pages/other.md", second)]


def typeset_two(tmp_path, pages, cache):
    from site_builder.publish import pdf
    meta = dict(title="Demo site", description="", built_from="Built here", papers={}, css="", root=tmp_path)
    return pdf.companion(pages, meta, cache)


def test_parts_are_numbered_as_one_document_and_linked_across(tmp_path):
    """Each page is typeset on its own: its sections, equations and pages continue the page
    before it, the contents states where each landed, and a link into the other page is an
    internal link to its named destination."""
    from site_builder.base.cache import BuildCache
    result = typeset_two(tmp_path, two_pages(), BuildCache(tmp_path / "cache"))
    reader = pypdf.PdfReader(io.BytesIO(result.pdf))
    dests = {name: reader.get_destination_page_number(d) + 1 for name, d in reader.named_destinations.items()}
    demo, other = result.records["demo:demo--e"], result.records["other:other--f"]
    assert (demo["section"], demo["equation"], other["section"], other["equation"]) == ("1.1", "1", "2.1", "2")
    assert dests["other:other--f"] == other["page"] > demo["page"] == dests["demo:demo--e"]
    assert "(2)" in reader.pages[other["page"] - 1].extract_text()
    contents = reader.pages[1].extract_text()
    assert re.search(rf"2\.1 Other\W+{other['page']}\b", contents), contents
    links = [a.get_object() for page in reader.pages for a in page.get("/Annots") or []]
    assert not [a for a in links if str(a.get("/A", {}).get("/URI", "")).startswith("pdf-dest:")]
    targets = {str(a["/Dest"]) for a in links if "/Dest" in a}
    assert "other:other--f" in targets and targets <= set(dests)
    assert [item["/Title"] for item in reader.outline if not isinstance(item, list)] == ["1 Demo", "2 Other"]


def test_an_edit_of_one_page_typesets_that_page_again_and_no_other(tmp_path):
    """The second page changes: its part and the join are made again; the first page's part and
    the contents come from the cache. The first page grows by pages: the second page's part is
    reused as it was (its pages are numbered when the parts are joined), and its records move."""
    from site_builder.base.cache import BuildCache
    cache = BuildCache(tmp_path / "cache")
    typeset_two(tmp_path, two_pages(), cache)
    pages = two_pages()
    pages[1] = pages[1][:3] + (pages[1][3].replace("F = m a", "F = m a + 1"),)
    misses = cache.misses
    edited = typeset_two(tmp_path, pages, cache)
    assert cache.misses - misses == 3       # the page's markup, its part, the join
    assert edited.pdf == typeset_two(tmp_path, pages, None).pdf          # as typeset afresh
    typeset_two(tmp_path, two_pages(), cache)
    misses = cache.misses
    longer = typeset_two(tmp_path, two_pages(first_words=20), cache)
    assert cache.misses - misses == 4       # the first page's markup and part, the contents, the join
    moved = longer.records["other:other--f"]["page"]
    assert moved > edited.records["other:other--f"]["page"]
    reader = pypdf.PdfReader(io.BytesIO(longer.pdf))
    assert reader.get_destination_page_number(reader.named_destinations["other:other--f"]) + 1 == moved
    assert reader.pages[moved - 1].extract_text().rstrip().endswith(str(moved))     # its number, drawn
