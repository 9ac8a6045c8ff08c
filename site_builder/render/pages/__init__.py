"""Each page's view model: plain dicts the templates print, from the loaded content, the source
index, the shape probes and the examples' runs.

This is where the one rule of the site is kept: every line number comes from the resolver,
every shape from a probe run, every called-by list from the index, every number from an
example that ran. Content supplies prose, TeX and references only. Each concept is gathered
completely (and its problems recorded with the content file and line) before anything is
rendered, so one build reports every problem at once.

One class, builder.PageBuilder, gathers a page; its parts by job are mixins in the modules
beside it. A part's methods read the state PageBuilder.__init__ sets (the index, the shapes,
the renderer, the problems list, the site model being filled) and call each other through
`self`; no part imports another, and only builder.py imports them all:

  builder           PageBuilder: a page's sections, a concept's equations and listings, citations
  caching           every page in navigation order: the page cache, shares gathered in children
  example_sections  a concept's examples: their runs, blocks and heading
  shape_blocks      the shapes blocks, and the failed shape probes a page reports
  symbol_rows       the symbol table: each row's code, and its declared shape checked by a run
  calls             called by, calls, tested by, the flow steps, the data-flow diagram, the map
  special_sections  the caches and params sections
"""
