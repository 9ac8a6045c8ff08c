"""The rules a playable text is checked against, read from the project: its first config
class's whole-number fields (`max_length: FIELD`) and the vocabularies of its hook
`text_vocabularies`.

In the run stage, not beside the declarations in site_builder/gather/playground.py: finding
them imports the project's config class and calls its hook, which gathering never does. The
content loader checks a declaration's form without them; the pages and `serve`'s playground
check its names and values with them.
"""
import dataclasses
from pathlib import Path

from site_builder.gather.playground import TextRules
from site_builder.gather.project import call_hook, load_project, resolve


def text_rules(root: Path) -> TextRules:
    """The rules of the project at root (its first config class, its hook text_vocabularies)."""
    project = load_project(root)
    lengths, config = {}, ""
    if project.config:
        cls = resolve(project.config.class_name)
        config = cls.__name__
        lengths = {f.name: f.default for f in dataclasses.fields(cls)
                   if isinstance(f.default, int) and not isinstance(f.default, bool)}
    return TextRules(config, lengths, dict(call_hook(root, project, "text_vocabularies") or {}))
