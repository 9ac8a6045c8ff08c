"""check's own report: a strict build of the real site passes, so every public top-level
function of model/ is cited by a page and every equation cites the code and a test."""
from site_builder.build import build
from tests.conftest import ROOT


def test_check_passes_with_every_function_documented_and_no_warnings(built_site, tmp_path):
    result = build(ROOT, tmp_path / "site", strict=True, cache_dir=ROOT / ".build_cache")
    assert result.warnings == [], [str(w) for w in result.warnings]
    assert result.pages > 15 and result.references > 500
