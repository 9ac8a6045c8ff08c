"""The Dropout page: its sections, and what its examples are meant to show (cited as `tests`
references where a `measured:` note states it)."""
import yaml

from site_builder.run.examples import load_example
from tests.conftest import ROOT


def example(name, *args):
    """The result of an example of this page, run here as the build runs it."""
    return load_example(ROOT, "dropout:" + name)(*args)


def test_every_section_of_the_page_is_on_it(site_page):
    html = site_page("dropout")
    front = (ROOT / "content" / "pages" / "dropout.md").read_text(encoding="utf-8").split("---")[1]
    for section in yaml.safe_load(front).get("sections") or []:
        if "id" in section:
            assert 'id="' + section["id"] + '"' in html, section["id"]


# A `measured:` note on this page needs a test here that asserts it on its example's data, so a
# change to the code that makes it false fails the suite (content/README.md, "Examples"):
# def test_what_the_note_says():
#     data = example("the_example_function").data
#     assert ...
