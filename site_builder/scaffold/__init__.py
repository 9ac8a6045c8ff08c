"""The scaffolds: what the code can tell of a new page or a new concept, written for the author.

  concept  `new-concept QUALNAME --page SLUG`: a concept section and its example, from the
           source index, the parameters' kinds and a probe run (prose and TeX left as TODO)
  kinds    what each parameter takes (array, scalar, probability, generator), from its uses
           and its callers; unknown where they do not say, never guessed
  tex      mathematical names for code names, and a TeX draft of a statement
  page     `new-page SLUG --title ...`: the front matter, the nav entry, the page test

It imports from gather, run and build (it runs the probes the check will reuse), never the
other way round: nothing in a build depends on it.
"""
from site_builder.scaffold.concept import ScaffoldError, new_concept
from site_builder.scaffold.page import new_page

__all__ = ["ScaffoldError", "new_concept", "new_page"]
