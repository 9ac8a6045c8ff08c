"""`python3 build_site.py serve`: the local server above the build.

The command (server), the HTTP server with live reload and the problem overlay (site_http),
which request path is which file (paths), the rebuild loop and the watcher (rebuild), the
builder process every build runs in (builder), stopping at once with the output left whole
(stopping), the addresses it may bind (hosts), what it watches to re-import changed code
(reload), and the playground's POST /__play (play). It calls site_builder.build like the
command line does; no stage imports it."""
