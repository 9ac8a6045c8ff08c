"""Which examples a build runs, and what each page's cache key is made of.

The examples: every one a page shows (each combination of its choices), sizes a shapes block
at, or computes a value of its prose from, as Requests; the training runs as a step shared
with the examples that read them (each trains in a child beside the examples that do not).

A page's key: what every page is made of (shared_page_key: every input but the pages and the
examples, every page's title, summary and concept functions, the declared probes, the commit
and the config), the page's own file, and the keys of its examples' results. It is known
before the examples run, so a page whose view model is cached needs none of them run; a page
one of whose examples has no valid result has no key, and is gathered again.
"""
import functools
from pathlib import Path

from site_builder.run import training_run
from site_builder.base.cache import digest
from site_builder.gather.content import concepts
from site_builder.base.cache import canonical


def example_requests(root, content, slugs=None):
    """Every example the pages run (or the pages `slugs` run), as Requests. An example whose
    choices name a parameter its function does not take runs nothing: the page says so once."""
    from site_builder.run.example_runner import Request, DEFAULT_TIMEOUT
    from site_builder.run.tape import RECORD_TIMEOUT
    from site_builder.gather.playground import call_ref, combinations, parameters_missing
    shown = [Request(call_ref(e["run"], combo), page.file, e.line_of("run"), float(e.get("timeout") or DEFAULT_TIMEOUT))
             for slug, page in content.pages.items() if slugs is None or slug in slugs
             for c in concepts(page) for e in c.get("examples") or []
             if not parameters_missing(root, e["run"], list(e.get("choices") or {}))
             for combo in combinations(e.get("choices"))]
    sizing = [Request(str(b[key]), page.file, b.line_of(key))
              for slug, page in content.pages.items() if slugs is None or slug in slugs
              for c in concepts(page) for b in c.get("shapes") or [] if isinstance(b, dict)
              for key in ("run", "config") if b.get(key)]
    replays = [Request(str(e["replay"]), page.file, e.line_of("replay"), RECORD_TIMEOUT)
               for slug, page in content.pages.items() if slugs is None or slug in slugs
               for c in concepts(page) for e in c.get("examples") or [] if e.get("replay") and e.get("playable")]
    extra = {r.ref: r for r in value_requests(content, slugs) + sizing + replays if r.ref not in {s.ref for s in shown}}
    return shown + list(extra.values())


def value_requests(content, slugs=None):
    """The examples whose data a page's prose computes values from ({{module:function.key}}),
    one Request each, at the first line that asks. Found in the page's text, so the page's
    key (its file and the keys of these results) sees them."""
    from site_builder.run.example_runner import Request
    from site_builder.gather.prose import VALUE_RE
    out = {}
    for slug, page in content.pages.items():
        if slugs is not None and slug not in slugs:
            continue
        text = page.text or ""
        for m in VALUE_RE.finditer(text):
            out.setdefault((slug, m.group(1)), Request(m.group(1), page.file, text.count("\n", 0, m.start()) + 1))
    return list(out.values())


def declared_probes(content):
    """{qualname: {parameter: shape}} of every `probe:` a concept declares."""
    return {str(c["function"]): {str(k): str(v) for k, v in c["probe"].items()}
            for page in content.pages.values() for c in concepts(page) if isinstance(c.get("probe"), dict)}


def shared_page_key(root: Path, content, index, site_info, input_digests, shapes=None, step=None):
    """What every page is made from: every input of the build (fingerprint.input_digests) but
    the pages and examples themselves and the files of the source index (a page is keyed on
    what it asked the index: render/pages/reads.py), every page's title, summary and concept
    functions (navigation and cross-page links), the probes' shapes and the traced step the
    landing page maps (both run the package's code), the commit and the config. Which cited
    files differ from the commit is a page's own read (reads.py, "uncommitted")."""
    own = ("content/pages/", "content/examples/")
    return digest(
        [(rel, sha) for rel, sha in input_digests if not rel.startswith(own) and rel not in index.files],
        canonical(shapes), canonical(step),
        [(slug, str(p.meta.get("title")), str(p.meta.get("summary")),
          [str(c.get("function")) + ":" + str(c.get("id")) for c in concepts(p)]) for slug, p in content.pages.items()],
        sorted(declared_probes(content).items()),     # a page's probe gives shapes to other pages' functions
        site_info["commit"], repr(site_info["config"]))


def page_keys(root: Path, content, shared: str, identities: dict, slugs=None):
    """{slug: key}: the shared key, the page's file and the keys of the valid results of the
    examples it shows; None for a page one of whose examples has no valid result."""
    keys = {}
    for slug, page in content.pages.items():
        if slugs is not None and slug not in slugs:
            continue
        shown = [identities.get(r.ref) for r in example_requests(root, content, [slug])]
        keys[slug] = None if None in shown else digest(shared, (root / page.file).read_bytes(), shown)
    return keys


def _train_and_hand_back(run):
    """In a child: train (or read from the cache) one run, and hand it back to the build.
    Only what this child changed: the child may have been forked before the build adopted
    the other run, and must not hand back the copy it inherited (under --retrain, the old one)."""
    before = training_run.held_runs()
    run()
    return {kind: held for kind, held in training_run.held_runs().items() if before.get(kind) is not held}


def training_readers(root: Path, refs) -> set:
    """The examples among refs whose modules can read a training run: they import
    site_builder/run/training_run.py, or the hooks that import it."""
    from site_builder.run.example_runner import static_inputs
    run_file = root / "site_builder" / "run" / "training_run.py"
    modules = {ref.partition(":")[0] for ref in refs}
    readers = {m for m in modules if run_file in static_inputs(root, root / "content" / "examples" / f"{m}.py")}
    return {r for r in refs if r.partition(":")[0] in readers}


def training_step(root: Path, refs):
    """The training runs (the hook `training_runs`) as a SharedStep of the examples that read
    them: each trains in a child beside the examples that do not read them, and is handed back
    to this process."""
    from site_builder.run.example_runner import SharedStep
    runs = {kind: functools.partial(_train_and_hand_back, functools.partial(train, root))
            for kind, (_, train) in training_run.training_runs(root).items()}
    # Each reader of a run keys what it reads on the package's syntax trees (training_run.run_key):
    # parsed once here, not in each of its children (75 parses of the package in a cold build).
    return SharedStep(runs=runs, needed_by=functools.partial(training_readers, root, refs), adopt=training_run.adopt,
                      before_readers=functools.partial(training_run.code_fingerprints, root))
