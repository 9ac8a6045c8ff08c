"""Stage 1, gather: read what the project wrote, run nothing of it.

The content (content/: site.yaml, pages, example declarations), the syntax trees of the
documented package and its tests (source_index), snippets resolved to file:line (resolve),
the prose's value references, the playground's declarations, and the fingerprints of every
input. It imports only site_builder.base: nothing here executes the project's code."""
