"""How much of the randomised tests to run: the suite's size (CI, the default) or the larger
one (`TBH_LARGE=1`), one switch for all of them. Each test's own variable still wins
(DIFFERENTIAL_SEQUENCES, MUTATION_LINES, FUZZ_EXAMPLES), to replay or to try a size.

The suite's size keeps every kind of check and cuts how many random draws each makes (the
README's "The suite in CI and larger" says what each size covers): the larger size is for a
nightly run or before a release, the suite's for every commit, within 10 minutes.
"""
import os

LARGE = os.environ.get("TBH_LARGE", "") not in ("", "0")


def size(variable: str, suite: int, large: int) -> int:
    """$variable if set, else `large` under TBH_LARGE=1, else `suite`."""
    return int(os.environ.get(variable, large if LARGE else suite))
