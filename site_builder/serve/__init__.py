"""`python3 build_site.py serve`: the local server above the build.

The HTTP server and its rebuild loop (server), the addresses it may bind (hosts), what it
watches to re-import changed code (reload), and the playground's POST /__play (play). It
calls site_builder.build like the command line does; no stage imports it."""
