"""Stage 3, render: view models and HTML.

Each page's view model (pages), TeX to MathML (mathrender), symbol rows (symbols), figures
(diagrams, plots), the one Jinja2 environment (html), and the link check over the rendered
HTML (links). It reads the gathered content and the run's results; it writes no file."""
