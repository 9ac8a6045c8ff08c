"""Stage 4, publish: put the rendered site on disk.

The atomic swap of the output folder (write), the vendored assets (assets), the math font cut
to the glyphs the pages use (fontsubset), and the Pagefind search bundle (search). The only
stage that writes into the output folder."""
