"""The documentation-site builder: stages in data-flow order.

  content        load and validate content/ (every error names file and line)
  source_index   the AST of model/ and tests/: functions, calls, caches, gradient writes
  resolve        snippets to file:line
  trace, shapes, params, examples   run the real code for numbers and shapes
  call_map       the landing page's map: the calls one traced training step made
  mathrender     TeX to HTML with the vendored KaTeX
  render         one Jinja2 environment: pages, source pages
  links          validate every internal href and #fragment
  write          to a temporary folder, then swap into place
  build          the orchestration that gathers everything before writing anything
"""

# The command every message names, as README.md gives it (python3: `python` is Python 2, or
# missing, on many systems).
COMMAND = "python3 build_site.py"
