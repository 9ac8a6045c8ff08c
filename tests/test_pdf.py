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
    hits = cache.hits
    again, _ = companion(tmp_path, concept_page(8), cache)
    assert cache.hits == hits + 2 and again.pdf == moved.pdf      # the page's Typst markup, and the PDF
    assert companion(tmp_path, concept_page(8))[0].pdf == moved.pdf       # typeset afresh: the same bytes


def test_a_formula_typst_cannot_set_is_reported_at_its_content_file_and_line(tmp_path):
    result, html = companion(tmp_path, concept_page(0, tex="\\foo + 1"))
    assert result.pdf is None and "pdf-ref" not in html and "<!--pdf" not in html
    [(file, line, message, fix)] = result.problems
    assert (file, line) == ("content/pages/demo.md", 6), result.problems
    assert "foo" in message
