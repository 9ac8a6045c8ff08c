"""Which tables are cards on a phone (site_builder/render/html.py cards_on_a_phone): the widest
line of each column, added up, against what a 390 px screen shows. The browser test
(tests/browser/test_lesson.py test_every_table_of_computed_values_fits_a_phone) checks the drawn pages."""
from site_builder.render.html import PHONE_CHARACTERS, cards_on_a_phone


def test_a_narrow_table_stays_a_table():
    assert not cards_on_a_phone(["i", "x"], [["0", "0.5"], ["1", "-1.25"]])


def test_a_column_of_arrays_is_as_wide_as_its_longest_row_not_its_whole_text():
    rows = [["Queries", "Q = X @ W", "[[-0.3955, -0.7245, -0.7381, -0.1291],\n [0.4848, -0.0820, 1.7571, -0.5715]]"]]
    assert cards_on_a_phone(["Step", "Code", "Value"], rows)
    short = [["q", "Q", "[[1, 2],\n [3, 4]]\n" * 20]]
    assert not cards_on_a_phone(["Step", "Code", "Value"], short)


def test_markup_and_entities_count_as_the_text_a_reader_sees():
    cell = '<code class="sym">' + "a" * (PHONE_CHARACTERS - 4) + "</code>&amp;"
    assert not cards_on_a_phone(["x"], [[cell]])
    assert cards_on_a_phone(["x"], [[cell + "bcdef"]])


def test_mappings_are_read_at_their_keys_and_headers_by_their_longest_word():
    rows = [{"label": "a", "code": "b", "value": "c", "name": "x" * 100}]
    assert not cards_on_a_phone(["Step", "Code", "Value"], rows, ["label", "code", "value"])
    assert cards_on_a_phone(["a-header-word-longer-than-a-phone-shows-at-all"], [["1"]])
