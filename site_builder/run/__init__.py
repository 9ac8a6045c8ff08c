"""Stage 2, run: execute the project's real code for the numbers a page shows.

The shape probes (shapes, declared_probes, example_shapes, shape_recorder), the parameter
table (params), the examples in worker processes (examples, example_runner, and blame: the
line that raised), the training runs, and the call map of one traced step, all under
site_builder.run.trace (which takes its snapshots with snapshots and names code with
qualnames). It reads what site_builder.gather found and writes nothing but cache entries; it
renders no HTML."""
