"""The builder's hooks for this project: what it must know about the transformer as code.

The settings that are data are in the `project:` block of content/site.yaml; this file, which
that block names (`hooks: content/hooks.py`), holds what must be code. The builder calls a hook
only if it is defined here (site_builder/gather/project.py: `hook(root, project, name)`); the
hooks it knows, and when it calls each, are listed in content/README.md.
"""
