"""Shared fixtures. The site is built once per test session, into a temporary folder, with the
repository's build cache so the training run and the examples are not recomputed per test."""
import os
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

# One BLAS thread: the model's matrices are small, and tests and builds share 2 cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
threadpool_limits(1)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """The output folder of one real build of the whole site (strict problems allowed)."""
    from site_builder.build import build
    out = tmp_path_factory.mktemp("site") / "site"
    result = build(ROOT, out, strict=False, cache_dir=ROOT / ".build_cache")
    return out if result else out


@pytest.fixture(scope="session")
def site_page(built_site):
    """site_page('block') -> the HTML text of block.html."""
    def read(slug):
        return (built_site / f"{slug}.html").read_text(encoding="utf-8")
    return read
