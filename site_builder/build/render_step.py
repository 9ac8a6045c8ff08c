"""The render step: every file of the site as bytes in memory, nothing written: the content
pages, the source pages, references.json, the landing page, the playground's fragments, the
hosted files (404.html, sitemap.xml), the static files (minified; pygments.css cut to the
token classes in use; the scripts as the bundles the pages load) and the math-font subsets.

A page's or a source page's HTML comes from the cache where its key is known. The rest is
shared out by cost and, with 2+ jobs, one share is rendered in a forked child
(render_shares), which also scans its pages for the link check and the font subset. A
template or static file that cannot be rendered or read is one problem at its file:line
(rendering_problem).
"""
import functools
import hashlib
import json
import os
from pathlib import Path

import jinja2

from site_builder.base.cache import canonical, digest
from site_builder.gather.project import load_project
from site_builder.publish.fontsubset import MathFontSubsets, page_math, remember_pages
from site_builder.publish.assets import (insert_scripts, minify, page_scripts, prune_token_rules, script_bundles,
                                         used_token_classes)
from site_builder.publish import hosting, pdf
from site_builder.render import links
from site_builder.base.problems import Problem
from site_builder.render.html import make_environment, pygments_css, source_rows, source_url
from site_builder.render.marks import link_first_marks


SHIPPED_STATIC = ("site.css", "js/replay.js", "js/heatmap.js", "js/replay-views.js")   # the replayer: loaded on first use
SHIPPED_FONTS = ("vendor/latinmodern-math/",)


def shipped_static(root: Path):
    """[(shipped path, file)] of the static files shipped as they are (minified)."""
    static = root / "static"
    shipped = []
    for entry in SHIPPED_STATIC + SHIPPED_FONTS:
        base = static / entry
        paths = sorted(p for p in base.rglob("*") if p.is_file()) if entry.endswith("/") else [base]
        shipped += [("static/" + p.relative_to(static).as_posix(), p) for p in paths]
    return shipped


def static_files(root: Path, token_classes: set, bundles=()):
    """The shipped static files, minified; pygments.css only for the token classes in use; the
    scripts as the bundles the pages load (site_builder/publish/assets.py)."""
    files = {}
    for rel, p in shipped_static(root):
        files[rel] = minify(rel, p.read_bytes())
    files["static/pygments.css"] = minify(".css", prune_token_rules(pygments_css(), token_classes).encode())
    files.update(script_bundles(root / "static" / "js", bundles))
    return files


def shared_context(content, index, site, site_info):
    """What every page's template is given: the site, the navigation, the source files shipped."""
    commit = site_info["commit"]
    changed = sorted(site_info["uncommitted"] & set(index.files))
    built_from = (f"Built outside a git checkout: no commit to cite, so the GitHub links point at the branch "
                  f"{site_info['branch']}, which may have moved on" if not commit else f"Built from commit {commit[:12]}"
                  + (f", with uncommitted changes to {', '.join(changed[:3])}" if changed else "")
                  + (f" and {len(changed) - 3} more files" if len(changed) > 3 else ""))
    source_files = sorted(f for f in index.files if f.startswith(index.package + "/")) + sorted(site.cited_files)
    nav = [dict(slug=p["slug"], title=p["title"], summary=p["summary"]) for p in site.pages]
    return dict(site=dict(title=content.site.get("title", "Documentation"), description=content.site.get("description", ""),
                          labels=content.labels, url=site_info["site_url"], glossary=content.site.get("glossary")),
                nav=nav, source_files=source_files, built_from=built_from,
                github_branch=None if commit else site_info["branch"])     # templates/partials/macros.html


def page_html(env, page, common) -> bytes:
    """A content page as rendered, before its script tag is put in (insert_scripts)."""
    titles = {p["slug"]: p["title"] for p in common["nav"]}
    html = env.get_template("page.html").render(
        page=page, title=page["title"], description=page["summary"], root="", current=page["slug"],
        url=hosting.page_url(common["site"]["url"], f"{page['slug']}.html"),
        prev_href=f"{page['prev']}.html" if page["prev"] else "index.html",
        prev_title=titles.get(page["prev"], "Overview"),
        next_href=f"{page['next']}.html" if page["next"] else None, next_title=titles.get(page["next"]),
        **common)
    glossary = common["site"]["glossary"]
    if glossary and glossary != page["slug"]:
        html = link_first_marks(html, f"{glossary}.html")
    return html.encode()


def render_all(root, content, index, renderer, site, site_info, cache=None, background=False, problems=None):
    """-> ({relative path: bytes}, {relative path: content file it came from}, the math-font
    subsets: MathFontSubsets, whose result() replaces the full fonts in the first dict; with
    background=True they are made in a child meanwhile). The companion PDF is typeset from the
    rendered pages, and its numbers written into them (companion_pdf); what stops it is added
    to `problems`."""
    jinja_dir = cache.folder / "jinja" if cache and cache.folder else None
    if jinja_dir:
        jinja_dir.mkdir(parents=True, exist_ok=True)
    env = make_environment(root, jinja_dir)
    commit = site_info["commit"]
    common = shared_context(content, index, site, site_info)
    source_files, nav = common["source_files"], common["nav"]
    common_key = digest(canonical(common))     # the navigation, the source files, the commit line
    files, origin, todo = {}, {}, {}     # todo: {path: (render it, cache key, cost)}

    def render_page(page):
        return page_html(env, page, common)

    def render_source(f):
        depth = f.count("/") + 1
        lines = renderer.highlighted_lines(f)
        cited = {n: cites for n, cites in cites_by_file.get(f, ()) if cites}
        github = f"{site_info['repo_url']}/blob/{commit or site_info['branch']}/{f}"
        return env.get_template("source.html").render(
            file=f, rows=source_rows(lines, cited, "../" * depth), line_count=len(lines), commit=commit, github=github,
            uncommitted=f in site_info["uncommitted"], branch=site_info["branch"],
            cited_count=sum(1 for n in cited if n <= len(lines)), title=f, description=f"Source of {f}",
            root="../" * depth, current="source:" + f, url=hosting.page_url(common["site"]["url"], source_url(f)),
            prev_href=None, next_href=None, **common).encode()

    for page in site.pages:
        path = f"{page['slug']}.html"
        origin[path] = page["file"]
        html_key = digest(page["key"], common_key) if page.get("key") else None
        cached = cache.get("html", html_key) if cache and html_key else None
        if cached is not None:
            files[path] = cached
        else:
            files[path] = None          # the order of the pages, rendered below
            todo[path] = (functools.partial(render_page, page), html_key, (root / page["file"]).stat().st_size)
    cites_by_file = {}
    for (f, n), cites in sorted(site.cited.items()):
        cites_by_file.setdefault(f, []).append((n, cites))
    for f in source_files:
        # A source page is made of its file, the lines pages cite, and what every page shares
        # (the shared key holds no file of the index: each page is keyed on what it read).
        source_key = digest(site_info["shared_key"], common_key, f, renderer.code_key(f), f in site_info["uncommitted"],
                            repr(cites_by_file.get(f))) \
            if cache and site_info.get("shared_key") else None
        cached = cache.get("html", source_key) if source_key else None
        files[source_url(f)] = cached
        if cached is None:
            # in the units of a page's cost (its file's bytes): measured, a line costs about 10
            # to render and 70 more to highlight
            cost = len(index.files[f]) * (10 if renderer.code_key(f) in renderer.code_memo else 80)
            todo[source_url(f)] = (functools.partial(render_source, f), source_key, cost)
    # references.json too (the same units; measured, a reference costs what 8 bytes of a page
    # do with their scans: 50 had put it at a fifth of the render and unbalanced the shares)
    refs = dict(commit=commit, references=site.references)
    files["references.json"] = None
    todo["references.json"] = (lambda: (json.dumps(refs, indent=1, sort_keys=True) + "\n").encode(), None,
                               8 * len(site.references))
    files.update(render_shares(todo, renderer, cache, background))
    companion_pdf(root, content, site, common, files, origin, cache, problems if problems is not None else [])
    project = load_project(root)
    files["index.html"] = env.get_template("index.html").render(
        title="Overview", description=common["site"]["description"], root="", current="index",
        url=hosting.page_url(common["site"]["url"], "index.html"),
        size=landing_size(root, site_info), call_map=site.call_map, package=project.package,
        words=landing_words(project, site.call_map),
        prev_href=None, next_href=f"{nav[0]['slug']}.html" if nav else None,
        next_title=nav[0]["title"] if nav else None, **common).encode()
    origin["index.html"] = "content/site.yaml"
    files.update(play_fragments(env, site.pages))
    files.update(hosting.hosted_files(env, common, files))       # 404.html, sitemap.xml
    origin[hosting.NOT_FOUND] = "templates/404.html"
    html_paths = [p for p in files if p.endswith(".html")]
    bundles = set()
    for path in html_paths:
        html = files[path].decode()
        bundles.add(tuple(page_scripts(html)))
        files[path] = insert_scripts(html, "../" * path.count("/")).encode()
    pages = [files[p] for p in html_paths]
    files.update(static_files(root, used_token_classes(pages), bundles))
    fonts = MathFontSubsets(files, pages, cache, background)
    files["references.json"] = files.pop("references.json")     # last, as it always was
    return files, origin, fonts


def companion_pdf(root, content, site, common, files, origin, cache, problems):
    """Typeset the pages, in nav order, as the companion PDF (site_builder/publish/pdf.py), add
    it to `files`, and fill each page's section, equation and PDF-line placeholders from where
    Typst put them. A page or TeX the PDF cannot typeset is a problem at its content file."""
    meta = dict(title=common["site"]["title"], description=common["site"]["description"],
                built_from=common["built_from"], papers=content.site.get("papers") or {},
                css=(root / "static" / "site.css").read_text(encoding="utf-8"), root=root)
    pages = [(p["slug"], p["title"], p["file"], files[f"{p['slug']}.html"].decode()) for p in site.pages]
    import importlib.util
    if importlib.util.find_spec("typst") is None:       # the site is still built, without its PDF
        problems.append(Problem("pyproject.toml", 0, "the companion PDF needs the typst package, which is not installed",
                                "install the 'site' extra", warning=True))
        result = pdf.Companion(pdf.file_name(meta["title"]), None)
    else:
        result = pdf.companion(pages, meta, cache)
    problems += [Problem(file, line, message, fix) for file, line, message, fix in result.problems]
    if result.pdf is not None:
        files[result.name] = result.pdf
        origin[result.name] = "content/site.yaml"
    for p in site.pages:
        path = f"{p['slug']}.html"
        files[path] = pdf.fill_numbers(files[path].decode(), p["slug"], result).encode()
    return result


def render_shares(todo, renderer, cache, background):
    """{path: bytes} of todo ({path: (render, cache key, cost)}), each stored in the cache
    under its key. With background=True the paths are shared out by cost and one share is
    rendered in a forked child (site_builder/base/parallel.py) while this process renders the
    other; the child sends back its bytes and the files it highlighted."""
    from site_builder.base import parallel
    from site_builder.base.parallel import share_out
    paths = list(todo)
    shares = share_out(paths, lambda p: todo[p][2], 2) if background and len(paths) > 1 else [paths]
    snapshot = parallel.memo_snapshot([renderer.code_memo])

    def render_share(share):
        rendered = {p: todo[p][0]() for p in share}
        # What the link check and the font subset read of each page as it will be written
        # (site_builder/render/links.py, fontsubset.py), found here: in a child, beside the other share
        final = {p: insert_scripts(data.decode(), "../" * p.count("/")).encode()
                 for p, data in rendered.items() if p.endswith(".html")}
        scans = ({p: links.scan_final(p, data) for p, data in final.items()},
                 {hashlib.sha256(data).hexdigest(): page_math(data) for data in final.values()})
        return rendered, parallel.memo_additions([renderer.code_memo], snapshot), scans
    out = {}
    with parallel.start({f"render:{len(share)} files": (lambda share=share: render_share(share))
                         for share in shares[1:]}) as children:
        rendered, _, (scans, math) = render_share(shares[0])
        out.update(rendered)
        links.remember_scans(scans)
        remember_pages(math)
        for outcome in children.wait():
            if outcome.status == "ok":       # else rendered here, below
                rendered, additions, (scans, math) = outcome.value
                out.update(rendered)
                parallel.merge_memos([renderer.code_memo], additions)
                links.remember_scans(scans)
                remember_pages(math)
    for p in paths:
        if p not in out:
            out[p] = todo[p][0]()
        if cache and todo[p][1]:
            cache.put("html", todo[p][1], out[p])
    return out


def play_fragments(env, pages):
    """The combinations of every example with choices but the first (which its page shows),
    each a script the page loads when the reader picks it (site_builder/gather/playground.py)."""
    files = {}
    for page in pages:
        for s in page["sections"]:
            for ex in s.get("examples") or [] if s.get("kind") == "concept" else []:
                play = ex.get("play")
                for key, variant in (play["variants"].items() if play else ()):
                    if key == play["default"]:
                        continue
                    body = env.get_template("partials/example_fragment.html").render(
                        ex=dict(id=ex["id"], **variant), root="")
                    files[f"play/{ex['id']}/{key}.js"] = (
                        f"playFragment({json.dumps(ex['id'])}, {json.dumps(key)}, {json.dumps(body.strip())});\n").encode()
                if play and play.get("replay"):
                    files[play["replay"]["file"]] = replay_file(env, ex["id"], play["replay"])
    return files


def replay_file(env, example_id, replay) -> bytes:
    """The tape of an example's free input, with the body its replayed result fills: the
    replay example's blocks and source, whose slots (@@...@@) the replayer fills, rendered by
    the template of every other result (site_builder/publish/tapes.py)."""
    from site_builder.publish.tapes import tape_script

    def body(blocks):
        return env.get_template("partials/example_fragment.html").render(
            ex=dict(id=example_id, blocks=blocks, source=replay["source"], replayed=True), root="").strip()
    bodies = {key: body(blocks) for key, blocks in (replay.get("bodies") or {}).items()}
    return tape_script(example_id, dict(replay["tape"], body=body(replay["blocks"]), **(dict(bodies=bodies) if bodies else {})))


def landing_words(project, call_map) -> dict:
    """The project's words for the landing page (`landing`), as HTML text (quotes stay as they
    are: they need no escaping in a text), the map's caption split around the traced call's
    name: (before, after), its `{source}` said."""
    import html
    from markupsafe import Markup
    text = lambda words: Markup(html.escape(words, quote=False))
    caption = project.landing["map_caption"].replace("{source}", (call_map or {}).get("source", ""))
    before, _, after = caption.partition("{call}")
    return {**{key: text(words) for key, words in project.landing.items()}, "caption": (text(before), text(after))}


def landing_size(root: Path, site_info) -> dict | None:
    """The landing page's size table: the documented config with its fields and what the
    project says of it, its parameters by group (none without groups: the total alone); None
    without a config or an init_params for it."""
    from site_builder.run.examples import config_fields
    from site_builder.run.params import count_by_group
    cfg, note = site_info["config"], site_info.get("config_note")
    if cfg is None:
        return None
    groups = count_by_group(cfg, load_project(root), quiet=True)
    if groups is None:
        return None
    fields = ", ".join(f"{k}={v}" for k, v in config_fields(cfg).items())
    return dict(config=f"{type(cfg).__name__}({fields})" + (f", {note}." if note else "."),
                groups=list(groups.items()) if load_project(root).param_groups else [], total=sum(groups.values()))


def rendering_problem(root: Path, e: Exception) -> Problem:
    """One problem line for a template or static file that cannot be rendered or read: the
    template's file:line (Jinja keeps template lines in its tracebacks), else the file."""
    import traceback
    templates = os.path.realpath(root / "templates") + os.sep
    if isinstance(e, jinja2.TemplateNotFound):
        return Problem(f"templates/{e.name}", 0, f"template not found: {e.name}", "restore it (git checkout -- templates)")
    if isinstance(e, OSError):
        rel = os.path.relpath(e.filename, root) if getattr(e, "filename", None) else "static/"
        return Problem(rel, 0, f"cannot read {rel}: {e.strerror}", "restore it (git checkout -- static templates)")
    file, line = getattr(e, "filename", None), getattr(e, "lineno", None)
    if not file:
        for frame in reversed(traceback.extract_tb(e.__traceback__)):
            if os.path.realpath(frame.filename).startswith(templates):
                file, line = frame.filename, frame.lineno
                break
    rel = os.path.relpath(os.path.realpath(file), os.path.realpath(root)) if file else "templates/"
    return Problem(rel, line or 0, f"{type(e).__name__}: {e.message or e}", "fix the template")
