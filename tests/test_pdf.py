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
