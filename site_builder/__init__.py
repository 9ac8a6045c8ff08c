"""The documentation-site builder, in stages that import only the stages before them.

  base      problems, the build cache, workers and the parallel runner, the untouchable folders
  gather    read content/, the documented package's and its tests' syntax trees, resolve snippets
  run       run the real code: shape probes, parameter tables, examples, training runs, call map
  render    each page's view model, TeX to MathML, figures, one Jinja2 environment, link check
  publish   write the site atomically, the vendored assets and math font, the search bundle
  build     the orchestration, one module a step: gather everything, run, render, check, then publish
  scaffold  `new-concept` and `new-page`: a draft concept for a function, a new page, from gather and run
  serve     the local server: rebuild on change, the playground's /__play
"""

# The command every message names, as README.md gives it (python3: `python` is Python 2, or
# missing, on many systems).
COMMAND = "python3 build_site.py"
