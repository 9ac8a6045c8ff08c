"""Stage 1, gather: read what the project wrote, run nothing of it.

The project block (project: which package, tests and inputs, the config classes, the hooks),
the content (content/: site.yaml, pages, example declarations), the syntax trees of the
documented package and its tests (source_index, on source_syntax, source_records,
source_analysis and source_keys), snippets resolved to file:line (resolve),
the prose's value references, the playground's declarations, and the fingerprints of every
input. It imports only site_builder.base: nothing here executes the project's code."""
