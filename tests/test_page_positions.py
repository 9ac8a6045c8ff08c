"""The Sinusoidal positions page: its sections, its examples against direct calls of
sinusoidal_positions, and the properties the page derives (cited as `tests` references)."""
import math

import numpy as np
import pytest

from model.seq2seq import sinusoidal_positions
from site_builder.run.examples import load_example, fmt_array
from tests.conftest import ROOT, assert_sections

CONCEPTS = ["positions-sinusoidal", "positions-relative"]
HEADINGS = ["What is it?", "Why does the model need it?", "Mathematics", "What does each symbol mean?",
            "Tiny numerical example", "Actual implementation", "Code and math connection", "Where is it used?"]
EX = load_example(ROOT, "positions:small_steps").__globals__


def example(name):
    return load_example(ROOT, f"positions:{name}")()


@pytest.mark.parametrize("concept", CONCEPTS)
def test_every_concept_has_every_section(site_page, concept):
    assert_sections(site_page("positions"), concept, HEADINGS)


def test_page_has_the_pictures(site_page):
    html = site_page("positions")
    assert html.count("<svg") >= 3 and "Note · measured" in html


# ----------------------------------------------------------------------------- equations the page cites

def test_frequencies_are_geometric():
    for d in (4, 6, 32):
        omega = EX["frequencies"](d)                 # read from the trace of the real function
        np.testing.assert_allclose(omega, 10000.0 ** (-np.arange(0, d, 2) / d), rtol=1e-15)
        np.testing.assert_allclose(omega[1:] / omega[:-1], 10000.0 ** (-2 / d), rtol=1e-12)
        PE = sinusoidal_positions(40, d)
        np.testing.assert_allclose(PE[:, 0::2], np.sin(np.arange(40)[:, None] * omega), atol=1e-15)


def test_a_shift_is_a_rotation():
    d = 16
    PE = sinusoidal_positions(50, d)
    omega = EX["frequencies"](d)
    for k in (1, 2, 7, 20):
        R = EX["rotation"](omega, k)
        np.testing.assert_allclose(PE[:-k] @ R, PE[k:], rtol=0, atol=1e-13)


def test_dot_product_depends_on_distance_only():
    d = 16
    PE = sinusoidal_positions(60, d)
    omega = EX["frequencies"](d)
    for p in (0, 5, 17):
        for k in (0, 1, 9, 30):
            np.testing.assert_allclose(PE[p] @ PE[p + k], np.cos(omega * k).sum(), rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- examples = direct calls

def test_small_example_equals_a_direct_call():
    rows = example("small_steps").blocks[0]["rows"]
    PE = sinusoidal_positions(3, 4)
    assert rows[-1]["value"] == rows[-2]["value"] == fmt_array(PE)
    sines = np.zeros((3, 4))
    sines[:, 0::2] = PE[:, 0::2]
    assert rows[3]["value"] == fmt_array(sines)
    assert rows[3]["code"].startswith("PE[:, 0::2]") and rows[4]["code"].startswith("PE[:, 1::2]")


def test_pictures_equal_direct_calls():
    d = EX["task_d_model"]()
    assert np.array_equal(example("pe_heatmap").data["PE"], sinusoidal_positions(EX["N_POSITIONS"], d))
    assert np.array_equal(example("pe_lines").data["PE"], sinusoidal_positions(EX["LONG_T"], d))


def test_wavelength_example():
    r = example("wavelengths")
    d = r.data["d"]
    np.testing.assert_allclose(r.data["omega"], 10000.0 ** (-np.arange(0, d, 2) / d), rtol=1e-15)
    assert r.blocks[0]["rows"][0][3] == f"{2 * math.pi:,.1f}"
    assert {row[4] for row in r.blocks[0]["rows"][1:-1]} == {f"{10000 ** (2 / d):.6f}"}


def test_shift_and_dot_examples():
    r = example("linear_shift")
    for k in EX["SHIFTS"]:
        assert r.data[k]["fit"] < 1e-12 and r.data[k]["rot"] < 1e-12
    r = example("dot_products")
    assert r.data["spread"] < 1e-12 and r.data["gap"] < 1e-12
    d = EX["task_d_model"]()
    PE = sinusoidal_positions(EX["LONG_T"], d)
    assert r.data["curves"][10][3] == float(PE[10] @ PE[13])
