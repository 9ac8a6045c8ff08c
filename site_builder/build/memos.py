"""The render memos a build loads from the cache and saves back only if it added to them:
KaTeX's output, the companion PDF's math (tex2typst's), highlighted files, the examples' import lists,
the source outlines their keys are made of (site_builder/gather/function_keys.py), parsed YAML
and the minified static files.

They are module dicts kept for the process, so a second build in it (serve, the tests) reuses
what the first computed, with or without a cache; shared_memos names the ones a forked child
fills and must send back.
"""
from pathlib import Path

from site_builder.base.cache import digest


class Memos:
    """The render memos (KaTeX output, highlighted files) loaded from the cache for one build
    and saved back only if the build added to them. They are module dicts, kept for the
    process: a second build in it (serve, the tests) reuses what the first computed, with or
    without a cache (each entry is keyed on everything its value depends on)."""

    def __init__(self, cache):
        import pygments
        import yaml
        from site_builder.gather import content, function_keys
        from site_builder.publish import assets, pdfmath
        from site_builder.render import mathrender
        from site_builder.run import examples
        self.cache, self.content = cache, content
        # name -> (the module dict it fills, what its entries depend on besides their key)
        self.memos = dict(math=(mathrender.MEMO, mathrender.KATEX_VERSION_KEY()),
                          pdfmath=(pdfmath.MEMO, pdfmath.VERSION_KEY()),
                          imports=(examples.IMPORTS_MEMO, Path(examples.__file__).read_bytes()),
                          outlines=(function_keys.MEMO, Path(function_keys.__file__).read_bytes()),
                          yaml=(content.YAML_MEMO, (yaml.__version__, Path(content.__file__).read_bytes())),
                          minified=(assets.MINIFIED, assets.minifier_versions()))
        self.keys = {name: digest(name, depends) for name, (_, depends) in self.memos.items()}
        self.keys["code"] = digest("pygments", pygments.__version__)
        from site_builder.render.html import CODE_MEMO
        CODE_MEMO.update(cache.table("memo", self.keys["code"]) if cache else {})
        self.code = CODE_MEMO
        for name, (memo, _) in self.memos.items():
            memo.update(cache.table("memo", self.keys[name]) if cache else {})
        self.sizes = self.current_sizes()
        content.YAML_USED.clear()

    def current_sizes(self):
        return [len(memo) for memo, _ in self.memos.values()] + [len(self.code)]

    def save(self):
        if self.cache and self.current_sizes() != self.sizes:
            for name, (memo, _) in self.memos.items():
                keep = dict(memo) if name != "yaml" else {k: v for k, v in memo.items() if k in self.content.YAML_USED}
                self.cache.put("memo", self.keys[name], keep)
            self.cache.put("memo", self.keys["code"], self.code)


def shared_memos(renderer):
    """The in-memory memos the pages fill, which a forked child sends back (KaTeX's output,
    highlighted files, import lists, parsed YAML and the YAML keys a build used)."""
    from site_builder.gather import content
    from site_builder.render import mathrender
    from site_builder.run import examples
    return [renderer.code_memo, mathrender.MEMO, examples.IMPORTS_MEMO, content.YAML_MEMO, content.YAML_USED]
