"""`python3 build_site.py new-page SLUG --title TITLE [--after SLUG]`: start a page, so that
`new-concept ... --page SLUG` has one to write into.

It writes three things and nothing else: content/pages/SLUG.md (the front matter with the
title, a TODO summary, which `check` names, and `sections: []`, which new-concept fills), the
page's entry in site.yaml's `nav` (after the page given, else last), and the page test
skeleton in the tests folder (test_page_SLUG.py), the project's own template (`project.page_test`,
with {slug} and {title} filled in) in the form of its other page tests: the builder knows
no test fixture.

Why a command of its own rather than `new-concept --page NEW` creating the page: a page is
started once and may hold several concepts, or none (a text section); its title and its place
in the reading order are the author's to give, and one command per job keeps new-concept's
refusals (an unknown page is a typo far more often than a new page) meaningful.

Trade-offs: site.yaml is edited as text (its comments and order stay), in either form `nav`
takes (a block list or a flow list), and the result is parsed again before anything is
written: if it would not parse, that is this command's bug, said so, and nothing is written.
It refuses a slug that is taken (a page file, a nav entry, a test file) and writes nothing.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from site_builder import COMMAND
from site_builder.gather.project import ProjectError, load_project
from site_builder.gather.content import portable_slug, unusable_slug
from site_builder.scaffold.concept import TODO, ScaffoldError, _q




def _nav_with(text: str, slug: str, after: str | None, file: str) -> str:
    """site.yaml's text with `slug` in `nav`, after `after` (else last); quoted where YAML
    would read it as something else (`2024` is a number)."""
    entry = slug if isinstance(yaml.safe_load(slug), str) else f"'{slug}'"
    flow = re.search(r"^nav:[ \t]*\[([^\]\n]*)\]", text, re.M)
    if flow:
        items = [x.strip() for x in flow.group(1).split(",") if x.strip()]
        items.insert(items.index(after) + 1 if after else len(items), entry)
        return text[:flow.start(1)] + ", ".join(items) + text[flow.end(1):]
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if re.match(r"nav:\s*(#.*)?$", line)), None)
    if start is None:
        raise ScaffoldError(f"{file} has no 'nav:' list to add the page to; add 'nav: [{slug}]' to it, "
                            "then run new-page again; nothing was written")
    items = [i for i in range(start + 1, len(lines)) if re.match(r"\s*- ", lines[i])]
    block = []
    for i in items:                                      # the list's own lines, up to the next key
        if block and i != block[-1] + 1 and any(lines[j].strip() and not lines[j].startswith((" ", "-", "#"))
                                                for j in range(block[-1] + 1, i)):
            break
        block.append(i)
    if not block:
        return "\n".join(lines[:start] + [lines[start].rstrip() + f" [{entry}]"] + lines[start + 1:])
    indent = re.match(r"(\s*)- ", lines[block[0]]).group(1)
    at = next(i for i in block if lines[i].split("-", 1)[1].split("#")[0].strip() == after) if after else block[-1]
    return "\n".join(lines[:at + 1] + [f"{indent}- {entry}"] + lines[at + 1:])


def new_page(root: Path, slug: str, title: str, after: str | None = None) -> list:
    """Write the page, its nav entry and its test skeleton; returns the lines to print."""
    wrong = unusable_slug(slug or "")          # the rule `check` holds page file names to
    if wrong:
        raise ScaffoldError(f"{wrong}; e.g. {portable_slug(slug or '')}; nothing was written")
    if not (title or "").strip():
        raise ScaffoldError(f"new-page needs a title, e.g. {COMMAND} new-page {slug} --title 'Dropout'; "
                            "nothing was written")
    site_file = root / "content" / "site.yaml"
    page_file = root / "content" / "pages" / f"{slug}.md"
    try:
        project = load_project(root)
    except ProjectError as e:
        raise ScaffoldError("; ".join(map(str, e.problems)) + "; nothing was written") from None
    test_file = root / project.tests / f"test_page_{slug.replace('-', '_')}.py"
    template = root / project.page_test if project.page_test else None
    if template is not None and not template.is_file():
        raise ScaffoldError(f"project.page_test names {project.page_test}, which is not a file (content/site.yaml); "
                            "nothing was written")
    site_text = site_file.read_text(encoding="utf-8")
    nav = [str(x) for x in (yaml.safe_load(site_text) or {}).get("nav") or []]
    for taken, what in ((page_file.exists(), f"content/pages/{slug}.md exists already"),
                        (slug in nav, f"'{slug}' is in content/site.yaml's nav already"),
                        (test_file.exists(), f"{test_file.relative_to(root).as_posix()} exists already")):
        if taken:
            raise ScaffoldError(f"{what}; choose another slug, or add to that page with {COMMAND} new-concept "
                                f"FUNCTION --page {slug}; nothing was written")
    if after is not None and after not in nav:
        raise ScaffoldError(f"content/site.yaml's nav has no page '{after}' (its pages: {', '.join(map(str, nav))}); "
                            "nothing was written")
    new_site = _nav_with(site_text, slug, after, "content/site.yaml")
    try:
        parsed = yaml.safe_load(new_site)
        assert slug in map(str, parsed["nav"])
    except (yaml.YAMLError, AssertionError, KeyError, TypeError) as e:
        raise ScaffoldError(f"new-page would have written a content/site.yaml that does not parse or lacks the page "
                            f"({e}): that is new-page's own bug, not your file's; nothing was written") from None
    page_text = (f"---\ntitle: {_q(title)}\nsummary: {TODO}\nsections: []\n---\n"
                 f"TODO: the page's introduction, in Markdown (what the reader learns here, and from which page they came).\n")
    page_file.parent.mkdir(parents=True, exist_ok=True)
    page_file.write_text(page_text, encoding="utf-8")
    site_file.write_text(new_site, encoding="utf-8")
    place = f"after '{after}'" if after else "last"
    out = [f"wrote content/pages/{slug}.md: the front matter (title, a TODO summary, no sections yet)",
           f"wrote content/site.yaml: '{slug}' in nav, {place} in the reading order"]
    if template is not None:
        test = template.read_text(encoding="utf-8").replace("{slug}", slug).replace("{title}", title)
        test_file.write_text(test, encoding="utf-8")
        out.append(f"wrote {test_file.relative_to(root).as_posix()}: the page test, from {project.page_test}")
    else:
        out.append("no page test: the project block names no page_test template (content/site.yaml)")
    return out + [
        f"next: {COMMAND} new-concept FUNCTION --page {slug}, then {COMMAND} check --page {slug}"]
