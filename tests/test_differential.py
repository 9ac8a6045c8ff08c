r"""Differential test of the build cache (issue 12): an incremental build always equals a clean build.

Edits from a pool, each with its revert, are applied in random sequences to a small project
built by the real builder (tests/fixture_project.py: four cheap pages, 64 KB of corpus). After
every step the incremental build (`python3 build_site.py --out site` in the project, with its
`.build_cache`) is compared with a `--no-cache` build of the same tree into another folder
(`--no-cache --out <other>`). They must agree:

- the same exit status;
- on success, the same set of files and the same bytes in every file, the Pagefind bundle
  included (two builds of the same pages give byte-identical bundles, see
  site_builder/publish/search.py; a difference confined to pagefind/ is labelled as such);
- on failure, the same set of problem lines on stderr (less the closing "build failed: ...
  the last good site in X is untouched" line, which names the output folder).

The pool (fixture_edits):

  example_raises          an example raises (a `raise` at the top of loss:forward_steps)
  example_import_fails    `import not_a_module_xyz` atop content/examples/embeddings.py
  tex_error_two_pages     `A typo: $\operatornam{ReLU}(z)$ here.` appended to two pages
  corpus_edit             text with three new characters appended to data/shakespeare.txt
  model_lines_move        three comment lines atop model/ops.py
  model_value_change      ModelConfig.ln_eps 1e-5 -> 1e-3 (every page's numbers, the index)
  model_function_change   a constant inside one function (sinusoidal_positions: 10000 -> 1000):
                          examples are keyed on the functions they entered, so only the ones
                          that reached it rerun (site_builder/gather/function_keys.py)
  model_function_move     ffn_backward moved to the end of model/transformer.py: the functions
                          below it move up, the pages cite their new lines, and the examples
                          whose functions moved rerun
  model_edit_no_page_reads  a statement of mha_forward rewritten (the same value, the same lines):
                          no fixture page reads its lines, so every page is reused unless an
                          example it shows entered mha_forward (render/pages/reads.py)
  model_docstring_change  CharTokenizer.__init__'s docstring reworded (the tokens page asks
                          for the function; its record holds the docstring)
  test_helper_line        a comment on a line of assert_close in tests/test_gradcheck.py, the
                          helper of a test the loss page cites (and a file its example imports)
  content_prose           a sentence of the embeddings page reworded, and a PDF page of prose
                          added: the companion PDF typesets each page as a part of its own,
                          so the parts after it start a page later and are typeset again
  pdf_pages_move          the site's description made a page longer: the companion PDF's title page
                          prints it, so every equation lands on a later page, and each concept's
                          "PDF: ..., p. N" line and the PDF's bytes change (site_builder/publish/pdf.py)
  deleted_test_function   tests/test_ops.py loses test_cross_entropy_value (the loss page cites it)
  deleted_test_file       tests/test_page_loss.py deleted (cited by the loss page)
  serve_edit              `build_site.py serve --port 0` runs; a paragraph is appended to a page;
                          the test waits for the rebuild (serve's log line, the served page) and
                          its search refresh (the output lock), then stops serve with SIGINT;
                          the revert is a later step, outside serve
  serve_round_trip        the same, and the edit reverted as soon as serve has stopped (one step)
  missing_package_tqdm    a package the model and examples import is not installed: a module of
  missing_package_pytest  that name, first on the builds' PYTHONPATH, raises ModuleNotFoundError
                          (pytest: the fixture's own example imports a test module); the revert
                          removes it. The tree does not change, only the environment.
  output_deleted          one built page deleted from site/ (one-shot: there is nothing to revert)
  output_overwritten      one built page, often index.html, overwritten with garbage (one-shot)
  killed_build            another action drawn from the pool, then the incremental build started
                          and SIGKILLed, with its workers, after 0.1 to 1.5 s (one-shot)

Tree edits touch disjoint files, so any subset can be applied in any order and reverted in any
other. How a sequence is drawn: sequence i of a run with seed S uses
`random.Random(f"{S}:{i}")`. It starts from the same warm state (the fixture after one cold
build, copied back to the same path before each sequence, so a sequence can be replayed
alone) and draws 4 to 8 steps. At each step, when some edit is applied, it reverts one of them
(chosen uniformly) with probability 1/2; otherwise it applies an edit chosen uniformly among
those not applied (the one-shot actions are always available). Reverting half the time brings
the tree back to states seen before: that is where a stale cache entry shows, and what makes
the memo pay: the `--no-cache` outcome (status, problem lines, file digests) is memoised on a
hash of the whole tree state (the project's files and the simulated site-packages), in a
folder the two worker processes share, so a state seen before costs no clean build. A sequence
goes on after a disagreement (later steps may show other bugs); its first disagreement is
reported in full, with the seed, the steps so far, the first differing file and where its bytes
differ (or the two problem lists), and the command that replays the sequence alone.

Modes (environment variables):

  DIFFERENTIAL_SEQUENCES=N       sequences on the fixture (default 1, of 3 to 6 steps; 300 under
                                 TBH_LARGE=1, tests/sizes.py). Above
                                 30 (the nightly size, e.g. 300) the repository's sequences run
                                 too: N // 30 of them (at least 3), of 2 to 4 steps, with a
                                 model edit and a corpus edit added to their pool (about 65 s
                                 a sequence: a corpus edit trains both runs again)
  DIFFERENTIAL_REPO_SEQUENCES=N  sequences on a copy of the whole repository (real content,
                                 whole corpus; default 0 in the suite, see above): cheap edits
                                 only, 2 steps each; each new state costs a --no-cache build
                                 (every example and both training runs: 156 s of CPU, 89 s on 2
                                 idle cores, 2026-12-03)
  DIFFERENTIAL_REPO_CACHE=C      how the copy's cache starts. `seeded` (the default up to 30
                                 sequences): the copy gets the portable entries of this
                                 repository's own cache (example results, training runs, shape
                                 probes, math and font: tests/fixture_project.py seed_build_cache),
                                 which the session's `built_site` build has filled for this very
                                 tree, so the copy's first build runs no example and trains
                                 nothing (10 s instead of a minute). `cold` (the nightly default):
                                 the copy's first build fills its empty cache itself, as before.
                                 The steps and their --no-cache references are the same in both;
                                 seeded also checks that entries made in another folder hold in
                                 a copy (a path leaking into a cached result would differ from
                                 the --no-cache build). A seeded failure replays with the
                                 repository's cache as it is then; if it does not, replay with
                                 DIFFERENTIAL_REPO_CACHE=cold too
  DIFFERENTIAL_STEPS=LO-HI       steps per fixture sequence (default 3-4; 4-8 in the larger mode)
  DIFFERENTIAL_SEED=S            the seed (default 12)
  DIFFERENTIAL_ONLY=i,j          run only these sequence numbers (to replay a failure)
  DIFFERENTIAL_WORKERS=N         processes running fixture sequences side by side (default 1;
                                 2 in the larger mode)
  DIFFERENTIAL_VERBOSE=1         print every sequence's steps, with each build's status and time

Cost: the suite's default is sized to keep the whole suite under 10 minutes on 2 cores. On
2026-12-01, at load average 1.6-2.3, 12 fixture sequences (76 steps, 78 incremental and 29
--no-cache builds, 47 memoised) took 177 s, and 2 repository sequences 124 s (a cold build of
the whole site is about a minute of it); in the whole suite at load 1.5, 10 fixture sequences took 124 s and 2 repository sequences 103 s; the default was 10 and 1 (5 and 1 since the suite runs under pytest-xdist; 3 and 1 since 2026-12-03,
when 5 fixture sequences took 474 s of a 25-minute suite and the nightly workflow runs 300; 2
fixture sequences of 3 to 6 steps in one process and no repository sequence since later that
day, when 3 and 1 took 272 s and 188 s of a 20-minute suite in a fresh venv: .ci/run compares
the repository's --no-cache build with the README's build, and the nightly run keeps the
repository's sequences; 1 since 2026-12-04, when the suite in a fresh venv took 10:31 on a
quiet machine and the 2 sequences, 6 steps each, were 144 s of it; 3 to 4 steps since 2026-12-07,
when the suite took 10:14 there and its sequence of 6 steps, 81 s of CPU, was the costliest test:
4 steps, 48 s alone against 60 s). The
repository sequence's cold first build was then replaced by a seeded one: back to back at load
5-7, the repository part took 262 s (141 s of CPU) cold and 185 s (99 s of CPU, the first
build 9 s of the wall time) seeded, and again at load 5-6, 158 s (128 s) and 118 s (88 s, the
first build 8 s); the two --no-cache builds are what is left of it. Every --no-cache
build subsets the math font again (0.7 s of a 3.5 s fixture build). The nightly run,
`DIFFERENTIAL_SEQUENCES=300 python3 -m pytest tests/test_differential.py`, takes well over
40 minutes (measured at 40 before the font subset and the playground's 57 more examples).
"""
import hashlib
import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fixture_project import make_fixture_project, make_repo_copy, seed_build_cache
from tests.sizes import size

SEED = os.environ.get("DIFFERENTIAL_SEED", "12")
SEQUENCES = size("DIFFERENTIAL_SEQUENCES", 1, 300)     # the suite's size (it must stay under 10 min); TBH_LARGE=1
LARGER = SEQUENCES > 30          # the nightly size: the repository's sequences run too, longer, with every edit
# The suite runs no repository sequence: each costs a --no-cache build of the whole site (156 s of
# CPU from an empty cache), and .ci/run already compares a --no-cache build of the repository with
# the README's build, byte for byte. The nightly size runs them (N // 30, at least 3).
REPO_SEQUENCES = int(os.environ.get("DIFFERENTIAL_REPO_SEQUENCES", str(0 if SEQUENCES <= 30 else max(3, SEQUENCES // 30))))
# How the repository copy's cache starts: "seeded" (the default) from the repository's own warm
# cache, "cold" (the larger mode's default) filled by the copy's own first build.
REPO_CACHE = os.environ.get("DIFFERENTIAL_REPO_CACHE", "cold" if LARGER else "seeded")
assert REPO_CACHE in ("seeded", "cold"), f"DIFFERENTIAL_REPO_CACHE={REPO_CACHE}: say seeded or cold"
STEPS = tuple(int(n) for n in os.environ.get("DIFFERENTIAL_STEPS", "4-8" if LARGER else "3-4").split("-"))
ONLY = {int(n) for n in os.environ.get("DIFFERENTIAL_ONLY", "").split(",") if n.strip()}
# One process in the suite (the suite's other process is busy with the other test files; a second
# would pay a second cold fixture build), two in the larger mode.
WORKERS = int(os.environ.get("DIFFERENTIAL_WORKERS", "2" if LARGER else "1"))
BUILD_TIMEOUT = 600

# What the tree-state hash skips: the outputs, the cache, git's own files, bytecode, the lock.
SKIPPED_PARTS = {".git", "site", ".build_cache", "__pycache__"}


# ------------------------------------------------------------------------------------------------
# One project: its builds, its state


@dataclass
class Outcome:
    status: int
    stdout: str
    stderr: str
    files: dict = field(default_factory=dict)     # {relative path: sha256} on success

    def problems(self, root):
        """The problem lines of a failed build: stderr less the closing 'build failed' line,
        with the project's path made neutral (it differs between worker processes)."""
        lines = [ln.replace(str(root), "<root>") for ln in self.stderr.splitlines()]
        return sorted({ln for ln in lines if ln.strip() and not ln.startswith("build failed:")})


def tree_files(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


class Project:
    """A project folder, a simulated site-packages (`shadow`, first on PYTHONPATH) and a
    memo of --no-cache outcomes (a folder shared by the worker processes)."""

    def __init__(self, root: Path, shadow: Path, clean_out: Path, memo: Path):
        self.root, self.shadow, self.clean_out, self.memo = Path(root), Path(shadow), Path(clean_out), Path(memo)
        self.shadow.mkdir(parents=True, exist_ok=True)
        self.memo.mkdir(parents=True, exist_ok=True)
        self.clean_builds = self.incremental_builds = self.memo_hits = 0

    @property
    def site(self) -> Path:
        return self.root / "site"

    def env(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.shadow)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        return env

    def command(self, *args):
        return [sys.executable, "build_site.py", *args]

    def run(self, *args) -> Outcome:
        try:
            p = subprocess.run(self.command(*args), cwd=self.root, env=self.env(), capture_output=True, text=True,
                               timeout=BUILD_TIMEOUT)
            return Outcome(p.returncode, p.stdout, p.stderr)
        except subprocess.TimeoutExpired as e:
            return Outcome(-999, str(e.stdout or ""), f"timed out after {BUILD_TIMEOUT} s")

    def incremental(self) -> Outcome:
        self.incremental_builds += 1
        out = self.run("--out", "site")
        if out.status == 0:
            out.files = tree_files(self.site)
        return out

    def state_key(self) -> str:
        h = hashlib.sha256()
        for base, tag in ((self.root, "root"), (self.shadow, "shadow")):
            for p in sorted(base.rglob("*")):
                rel = p.relative_to(base)
                if not p.is_file() or SKIPPED_PARTS & set(rel.parts) or rel.parts[0].startswith(".site."):
                    continue
                h.update(f"{tag}/{rel.as_posix()}\0".encode() + hashlib.sha256(p.read_bytes()).digest())
        return h.hexdigest()

    def clean(self, use_memo=True) -> Outcome:
        key = self.state_key()
        entry = self.memo / f"{key}.json"
        if use_memo and entry.is_file():
            self.memo_hits += 1
            return Outcome(**json.loads(entry.read_text()))
        self.clean_builds += 1
        shutil.rmtree(self.clean_out, ignore_errors=True)
        out = self.run("--no-cache", "--out", str(self.clean_out))
        if out.status == 0:
            out.files = tree_files(self.clean_out)
        out.stdout = out.stdout.replace(str(self.clean_out), "<clean>")
        out.stderr = out.stderr.replace(str(self.root), "<root>")
        tmp = entry.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(out.__dict__))
        os.replace(tmp, entry)
        return out


def first_difference(a: dict, b: dict):
    """(description, path) of the first file that differs between two {path: digest} maps."""
    for path in sorted(set(a) | set(b)):
        if path not in b:
            return f"{path} is only in the incremental build", path
        if path not in a:
            return f"{path} is only in the --no-cache build", path
        if a[path] != b[path]:
            return f"{path} differs", path
    return None, None


def text_difference(x: bytes, y: bytes) -> str:
    """Where two files first differ, a short excerpt of each."""
    n = next((i for i, (u, v) in enumerate(zip(x, y)) if u != v), min(len(x), len(y)))
    show = lambda b: b[max(0, n - 120):n + 200].decode("utf-8", "replace")
    return (f"first difference at byte {n} (sizes {len(x)} and {len(y)}):\n"
            f"  incremental: ...{show(x)!r}...\n  --no-cache:  ...{show(y)!r}...")


def disagreement(project: Project, inc: Outcome, clean: Outcome):
    """None when the two builds agree, else what differs (the first differing file, or the two problem lists)."""
    if inc.status != clean.status:
        return (f"exit status: incremental {inc.status}, --no-cache {clean.status}\n"
                f"incremental stdout: {inc.stdout.strip()[-600:]}\nincremental stderr: {inc.stderr.strip()[-1500:]}\n"
                f"--no-cache stdout: {clean.stdout.strip()[-600:]}\n--no-cache stderr: {clean.stderr.strip()[-1500:]}")
    if inc.status != 0:
        a, b = inc.problems(project.root), clean.problems(project.root)
        if a == b:
            return None
        return ("the builds fail with different problems\n  only incremental:\n    "
                + "\n    ".join(sorted(set(a) - set(b)) or ["(none)"])
                + "\n  only --no-cache:\n    " + "\n    ".join(sorted(set(b) - set(a)) or ["(none)"]))
    what, path = first_difference(inc.files, clean.files)
    if what is None:
        return None
    others = sum(1 for p in set(inc.files) | set(clean.files) if inc.files.get(p) != clean.files.get(p))
    where = " (only under pagefind/, the search bundle)" if all(
        p.startswith("pagefind/") for p in set(inc.files) | set(clean.files) if inc.files.get(p) != clean.files.get(p)) else ""
    detail = ""
    if path in inc.files and path in clean.files:
        # The memo keeps digests only: build the tree again without the cache to show the bytes.
        again = project.clean(use_memo=False)
        if again.status == 0 and (project.clean_out / path).is_file():
            detail = "\n" + text_difference((project.site / path).read_bytes(), (project.clean_out / path).read_bytes())
    return (f"{what}; {others} file(s) differ in all{where}\n"
            f"incremental stdout: {inc.stdout.strip()[-400:]}" + detail)


# ------------------------------------------------------------------------------------------------
# The edits


class Edit:
    """A change and its revert. `once` actions (output damage, a killed build) leave the tree
    as it is and are never 'applied'; the others stay applied until reverted."""
    name = "edit"
    once = False
    files = ()       # the project files it changes (tree edits touch disjoint sets)

    def apply(self, p: Project, rng: random.Random) -> str:
        raise NotImplementedError

    def revert(self, p: Project) -> str:
        return ""


class TextEdit(Edit):
    """Replace `old` (which occurs exactly once) by `new` in each file; the revert puts `old` back."""

    def __init__(self, name, changes):
        self.name, self.changes = name, changes        # [(path, old, new)]
        self.files = tuple(path for path, _, _ in changes)

    @staticmethod
    def _swap(p, path, a, b):
        f = p.root / path
        text = f.read_text(encoding="utf-8")
        assert text.count(a) == 1, f"{path}: expected one occurrence of {a[:60]!r}, found {text.count(a)}"
        f.write_text(text.replace(a, b), encoding="utf-8")

    def apply(self, p, rng):
        for path, old, new in self.changes:
            self._swap(p, path, old, new)
        return ""

    def revert(self, p):
        for path, old, new in self.changes:
            self._swap(p, path, new, old)
        return ""


class Append(Edit):
    def __init__(self, name, paths, text):
        self.name, self.files, self.text = name, tuple(paths), text

    def apply(self, p, rng):
        for path in self.files:
            with open(p.root / path, "a", encoding="utf-8") as f:
                f.write(self.text)
        return ""

    def revert(self, p):
        for path in self.files:
            f = p.root / path
            text = f.read_text(encoding="utf-8")
            assert text.endswith(self.text), f"{path} no longer ends with the appended text"
            f.write_text(text[:-len(self.text)], encoding="utf-8")
        return ""


class Prepend(Edit):
    def __init__(self, name, path, text):
        self.name, self.files, self.text = name, (path,), text

    def apply(self, p, rng):
        f = p.root / self.files[0]
        f.write_text(self.text + f.read_text(encoding="utf-8"), encoding="utf-8")
        return ""

    def revert(self, p):
        f = p.root / self.files[0]
        text = f.read_text(encoding="utf-8")
        assert text.startswith(self.text)
        f.write_text(text[len(self.text):], encoding="utf-8")
        return ""


class RemoveFunction(Edit):
    """Delete a top-level function (a cited test); the revert writes the file back."""

    def __init__(self, name, path, function):
        self.name, self.files, self.function = name, (path,), function
        self.saved = None

    def apply(self, p, rng):
        f = p.root / self.files[0]
        self.saved = f.read_bytes()
        text = self.saved.decode("utf-8")
        m = re.search(rf"^def {self.function}\(.*?(?=^(?:def |class |@)|\Z)", text, re.S | re.M)
        assert m, f"{self.files[0]} has no function {self.function}"
        f.write_text(text[:m.start()] + text[m.end():], encoding="utf-8")
        return ""

    def revert(self, p):
        (p.root / self.files[0]).write_bytes(self.saved)
        return ""


class MoveFunction(Edit):
    """Move a top-level function (with the blank lines after it) to the end of its file; the
    revert writes the file back."""

    def __init__(self, name, path, function):
        self.name, self.files, self.function = name, (path,), function
        self.saved = None

    def apply(self, p, rng):
        f = p.root / self.files[0]
        self.saved = f.read_bytes()
        text = self.saved.decode("utf-8")
        m = re.search(rf"^def {self.function}\(.*?(?=^(?:def |class |@)|\Z)", text, re.S | re.M)
        assert m and m.end() < len(text), f"{self.files[0]} has no function {self.function} above another"
        rest = text[:m.start()] + text[m.end():]
        f.write_text(rest.rstrip("\n") + "\n\n\n" + m.group(0).rstrip("\n") + "\n", encoding="utf-8")
        return ""

    def revert(self, p):
        (p.root / self.files[0]).write_bytes(self.saved)
        return ""


class DeleteFile(Edit):
    def __init__(self, name, path):
        self.name, self.files = name, (path,)
        self.saved = None

    def apply(self, p, rng):
        f = p.root / self.files[0]
        self.saved = f.read_bytes()
        f.unlink()
        return ""

    def revert(self, p):
        (p.root / self.files[0]).write_bytes(self.saved)
        return ""


class HidePackage(Edit):
    """A package the examples need is not installed: a module of the same name, first on the
    builds' PYTHONPATH, raises ModuleNotFoundError as a missing package would. The revert
    "installs" it again. The examples' code does not change."""

    def __init__(self, name, package):
        self.name, self.package = name, package
        self.files = (f"<site-packages>/{package}",)

    def apply(self, p, rng):
        d = p.shadow / self.package
        d.mkdir()
        (d / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{self.package}'\", "
                                       f"name={self.package!r})\n")
        return ""

    def revert(self, p):
        shutil.rmtree(p.shadow / self.package)
        return ""


class DamageOutput(Edit):
    """Delete one built page, or overwrite one with garbage (chosen by the rng)."""
    once = True

    def __init__(self, name, how):
        self.name, self.how = name, how

    def apply(self, p, rng):
        if not p.site.is_dir():
            return "no site/ to damage"
        pages = sorted(f.name for f in p.site.glob("*.html"))
        target = "index.html" if self.how == "overwrite" and "index.html" in pages and rng.random() < 0.5 \
            else rng.choice(pages)
        if self.how == "delete":
            (p.site / target).unlink()
            return f"deleted site/{target}"
        (p.site / target).write_bytes(b"garbage, not a page\n")
        return f"overwrote site/{target}"


class KilledBuild(Edit):
    """A change (another action of the pool, drawn as any step is), then the incremental build
    started and SIGKILLed with its example workers after a random time; the step's comparison
    then runs the incremental build again. (Killed right after a comparison, with nothing
    changed, the build would be a no-op that is over before the kill.)"""
    name, once = "killed_build", True

    def kill_build(self, p, rng):
        delay = round(rng.uniform(0.1, 1.5), 2)
        proc = subprocess.Popen(p.command("--out", "site"), cwd=p.root, env=p.env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.wait(delay)
            return f"the build was over before the kill at {delay} s (status {proc.returncode})"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return f"its build killed with SIGKILL after {delay} s"


class ServeEdit(Edit):
    """Run `build_site.py serve --port 0`, append a paragraph to a page while it serves, wait for
    its rebuild (and its search refresh), stop it with SIGINT. The revert happens outside serve."""

    def __init__(self, name, path, text):
        self.name, self.files, self.text = name, (path,), text

    def apply(self, p, rng):
        proc = subprocess.Popen(p.command("serve", "--port", "0"), cwd=p.root, env=p.env(), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout], daemon=True).start()

        def wait_for(pattern, seconds):
            deadline, seen = time.monotonic() + seconds, []
            while time.monotonic() < deadline:
                try:
                    ln = lines.get(timeout=0.2)
                except queue.Empty:
                    if proc.poll() is not None and lines.empty():
                        break
                    continue
                seen.append(ln.rstrip())
                if re.search(pattern, ln):
                    return ln
            raise AssertionError(f"serve did not print /{pattern}/ within {seconds} s; it printed: {seen}")
        try:
            # serve prints this line once its watch is up (Watcher.ready): the edit is seen
            url = re.search(r"at (http://\S+/)", wait_for(r"^serving ", 120)).group(1)
            Append(self.name, self.files, self.text).apply(p, rng)
            log = wait_for(r"changed: ", 60).strip()
            if "built" in log:
                page = Path(self.files[0]).stem + ".html"
                served = urllib.request.urlopen(url + page, timeout=10).read().decode("utf-8", "replace")
                assert "edited under serve" in served, f"serve built ({log}) but does not serve the edit"
                self._wait_for_stamp(p)           # the search refresh, after the log line, ends with the stamp
            self._wait_for_lock(p)
            return "serve: " + re.sub(r"^\S+ ", "", log)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    @staticmethod
    def _wait_for_stamp(p, seconds=120):
        """The build's stamp (site_builder/gather/fingerprint.py): a build forgets it before it
        writes and serve records it again once the search index caught up (write_step finish)."""
        from site_builder.gather.fingerprint import stamp_path
        stamp = stamp_path(p.root / ".build_cache", p.site)
        deadline = time.monotonic() + seconds
        while not stamp.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"serve wrote no stamp ({stamp}) in {seconds} s after its rebuild")
            time.sleep(0.05)

    @staticmethod
    def _wait_for_lock(p):
        import fcntl
        lock = p.root / ".site.lock"
        if not lock.exists():
            return
        with open(lock) as f:
            deadline = time.monotonic() + 60
            while True:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(f, fcntl.LOCK_UN)
                    return
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise AssertionError("serve held the output lock for over 60 s")
                    time.sleep(0.05)

    def revert(self, p):
        return Append(self.name, self.files, self.text).revert(p)


class ServeRoundTrip(ServeEdit):
    """One step: an edit made under serve (as ServeEdit), serve stopped, then the edit reverted
    outside serve. The tree is as before; the site and the cache are what serve left."""
    once = True

    def apply(self, p, rng):
        note = super().apply(p, rng)
        super().revert(p)
        return note + "; reverted after serve stopped"


TEX_TYPO = "\nA typo: $\\operatornam{ReLU}(z)$ here.\n"
SITE_DESCRIPTION = "every number it computes, down to the source line."
# More than the rest of the PDF's title page holds: everything after it moves a page on.
PDF_PAGE_OF_PROSE = " And a sentence that makes the title page of the companion PDF a page longer." * 60
# A page more of the embeddings page: the PDF's parts after it (loss, positions) start a page later.
PAGE_OF_PROSE = " And a sentence that makes this page of the companion PDF a page longer." * 60


def fixture_edits():
    """The pool for tests/fixture_project.py's project. Tree edits touch disjoint files."""
    return [
        TextEdit("example_raises", [("content/examples/loss.py", "def forward_steps():\n",
                                     "def forward_steps():\n    raise RuntimeError('broken by the differential test')\n")]),
        Prepend("example_import_fails", "content/examples/embeddings.py", "import not_a_module_xyz\n"),
        Append("tex_error_two_pages", ["content/pages/tokens.md", "content/pages/loss.md"], TEX_TYPO),
        Append("corpus_edit", ["data/shakespeare.txt"], "\nZOUNDS. Æsop's ~fable~, told in ½ a breath.\n"),
        Prepend("model_lines_move", "model/ops.py", "# Three lines that move\n# every line of ops.py\n# down.\n"),
        TextEdit("model_value_change", [("model/config.py", "ln_eps: float = 1e-5", "ln_eps: float = 1e-3")]),
        TextEdit("model_function_change", [("model/seq2seq.py", "angle = pos / 10000.0 **", "angle = pos / 1000.0 **")]),
        MoveFunction("model_function_move", "model/transformer.py", "ffn_backward"),
        TextEdit("model_edit_no_page_reads", [("model/attention.py", "S = Qh @ Kh.swapaxes(-1, -2)",
                                               "S = (Qh @ Kh.swapaxes(-1, -2))")]),
        TextEdit("model_docstring_change", [("model/data.py", "Ids are positions in the sorted list",
                                             "Ids are the positions of characters in the sorted list")]),
        TextEdit("test_helper_line", [("tests/test_gradcheck.py", "    err = rel_error(analytic, numeric)\n",
                                       "    err = rel_error(analytic, numeric)  # edited by the differential test\n")]),
        TextEdit("content_prose", [("content/pages/embeddings.md", "The model never sees a character.",
                                    "The model never reads a single character." + PAGE_OF_PROSE)]),
        TextEdit("pdf_pages_move", [("content/site.yaml", SITE_DESCRIPTION, SITE_DESCRIPTION + PDF_PAGE_OF_PROSE)]),
        RemoveFunction("deleted_test_function", "tests/test_ops.py", "test_cross_entropy_value"),
        DeleteFile("deleted_test_file", "tests/test_page_loss.py"),
        ServeEdit("serve_edit", "content/pages/positions.md", "\nA paragraph edited under serve.\n"),
        ServeRoundTrip("serve_round_trip", "content/pages/tokens.md", "\nA paragraph edited under serve.\n"),
        HidePackage("missing_package_tqdm", "tqdm"),
        HidePackage("missing_package_pytest", "pytest"),
        DamageOutput("output_deleted", "delete"),
        DamageOutput("output_overwritten", "overwrite"),
        KilledBuild(),
    ]


def repo_edits(larger=False):
    """Edits for the whole repository. By default only cheap ones: none touches model/ or the
    corpus (a model edit reruns every example, 6 s; a corpus edit trains both runs again, and
    the --no-cache build costs 11 s whatever the edit). The larger mode adds those two."""
    costly = [Prepend("model_lines_move", "model/ops.py", "# Three lines that move\n# every line of ops.py\n# down.\n"),
              TextEdit("model_function_change", [("model/seq2seq.py", "angle = pos / 10000.0 **", "angle = pos / 1000.0 **")]),
              MoveFunction("model_function_move", "model/transformer.py", "ffn_backward"),
              Append("corpus_edit", ["data/shakespeare.txt"], "\nZOUNDS. Æsop's ~fable~, told in ½ a breath.\n")]
    return (costly if larger else []) + [
        Append("tex_error_two_pages", ["content/pages/block.md", "content/pages/tokens.md"], TEX_TYPO),
        TextEdit("content_prose", [("content/pages/embeddings.md",
                                    "The model never sees a character.", "The model never reads a single character.")]),
        TextEdit("example_raises", [("content/examples/loss.py", "def forward_steps():\n",
                                     "def forward_steps():\n    raise RuntimeError('broken by the differential test')\n")]),
        RemoveFunction("deleted_test_function", "tests/test_ops.py", "test_cross_entropy_value"),
        DamageOutput("output_deleted", "delete"),
        DamageOutput("output_overwritten", "overwrite"),
        KilledBuild(),
    ]


# ------------------------------------------------------------------------------------------------
# Sequences


@dataclass
class SequenceResult:
    index: int
    steps: list
    failure: str = None              # the first disagreement, in full
    later: list = field(default_factory=list)      # (step, first line) of the disagreements after it
    culprits: list = field(default_factory=list)   # the action of each step that ended in a disagreement


def draw_action(rng, edits, applied, once=True):
    """Revert an applied edit with probability 1/2 (when one is applied), else apply an edit not
    applied yet (the one-shot actions, unless once=False, are always available)."""
    if applied and rng.random() < 0.5:
        return "revert", rng.choice(applied)
    return "apply", rng.choice([e for e in edits if (e.once and once) or (not e.once and e not in applied)])


def perform(project, rng, edits, applied, action, edit) -> str:
    """Carry out one action; returns what the log says about it."""
    if isinstance(edit, KilledBuild):
        inner_action, inner = draw_action(rng, edits, applied, once=False)
        what = perform(project, rng, edits, applied, inner_action, inner)
        return f"{inner_action} {inner.name}{f' ({what})' if what else ''}, then {edit.kill_build(project, rng)}"
    if action == "apply":
        note = edit.apply(project, rng)
        if not edit.once:
            applied.append(edit)
    else:
        note = edit.revert(project)
        applied.remove(edit)
    return note


def run_sequence(project: Project, edits, index: int, seed: str, steps_range, label) -> SequenceResult:
    """Run one sequence; after a disagreement it goes on (the later steps may show other bugs),
    but only the first is reported in full."""
    rng = random.Random(f"{seed}:{index}")
    n_steps = rng.randint(*steps_range)
    applied, log = [], []
    result = SequenceResult(index, log)
    replay = (f"DIFFERENTIAL_SEED={seed} DIFFERENTIAL_ONLY={index} "
              + ("DIFFERENTIAL_SEQUENCES=0 " if label == "repository" else "DIFFERENTIAL_REPO_SEQUENCES=0 ")
              + "python3 -m pytest tests/test_differential.py")
    header = f"[{label}] seed {seed}, sequence {index}"
    numbered = lambda: "\n  ".join(f"{i + 1}. {s}" for i, s in enumerate(log))
    first = None
    for step in range(n_steps):
        action, edit = draw_action(rng, edits, applied)
        try:
            note = perform(project, rng, edits, applied, action, edit)
        except Exception as e:          # the step itself could not be carried out (serve hung, ...)
            log.append(f"{action} {edit.name}: {type(e).__name__}: {e}")
            result.culprits.append(f"{action} {edit.name} (the step failed)")
            result.failure = result.failure or f"{header}: step {step + 1} failed\nsteps:\n  {numbered()}\nreplay: {replay}"
            return result
        log.append(f"{action} {edit.name}" + (f" ({note})" if note else ""))
        t0 = time.monotonic()
        inc = project.incremental()
        t1 = time.monotonic()
        clean = project.clean()
        t2 = time.monotonic()
        log[-1] += f" -> incremental {inc.status} ({t1 - t0:.1f} s), --no-cache {clean.status} ({t2 - t1:.1f} s)"
        problem = disagreement(project, inc, clean)
        if not problem:
            continue
        log[-1] += "  <-- DISAGREE"
        result.culprits.append(f"{action} {edit.name}")
        if first is None:
            first = step + 1
            result.failure = (f"{header}: the incremental build disagrees with --no-cache after step {first} "
                              f"of {n_steps}\nsteps:\n  {numbered()}\n{problem}\nreplay: {replay}")
        else:
            result.later.append((step + 1, problem.splitlines()[0]))
    if first is not None and first < n_steps:
        result.failure += (f"\nthe sequence went on:\n  {numbered()}"
                           + "".join(f"\n  after step {n}: {what}" for n, what in result.later))
    if os.environ.get("DIFFERENTIAL_VERBOSE"):
        print(f"{header}:\n  {numbered()}", flush=True)
    return result


class Workspace:
    """A folder holding a project at a fixed path, and a warm copy of it (after one cold build)
    that every sequence starts from."""

    def __init__(self, base: Path, make, memo: Path):
        self.base = Path(base)
        self.path = self.base / "proj"
        self.template = self.base / "template"
        self.project = Project(self.path, self.base / "site-packages", self.base / "clean", memo)
        make(self.path)
        cold = self.project.incremental()
        assert cold.status == 0, f"the project does not build:\n{cold.stderr[-3000:]}"
        shutil.copytree(self.path, self.template, symlinks=True)

    def reset(self):
        shutil.rmtree(self.path)
        shutil.copytree(self.template, self.path, symlinks=True)
        shutil.rmtree(self.project.shadow)
        self.project.shadow.mkdir()


def _fixture_worker(base, memo, indices, seed, steps_range):
    """One process: its own workspace, a share of the sequences."""
    t0 = time.monotonic()
    ws = Workspace(base, make_fixture_project, memo)
    setup = time.monotonic() - t0
    results = []
    for i in indices:
        ws.reset()
        results.append(run_sequence(ws.project, fixture_edits(), i, seed, steps_range, "fixture"))
    p = ws.project
    return results, dict(incremental=p.incremental_builds, clean=p.clean_builds, memo_hits=p.memo_hits, setup=setup)


def report(label, results, stats, seconds):
    failures = [r for r in results if r.failure]
    steps = sum(len(r.steps) for r in results)
    disagreeing = sum(len(r.culprits) for r in results)
    line = (f"[{label}] {len(results)} sequences, {steps} steps, {stats['incremental']} incremental builds, "
            f"{stats['clean']} --no-cache builds ({stats['memo_hits']} memoised) in {seconds:.0f} s "
            f"({stats['setup']:.0f} s of it the first build); "
            f"{disagreeing} step(s) in {len(failures)} sequence(s) disagree")
    print("\n" + line)
    return line, failures


def assert_agree(line, failures):
    if failures:
        # The step that ended in each disagreement, counted: a summary to start from.
        from collections import Counter
        counts = Counter(c for r in failures for c in r.culprits)
        raise AssertionError(line + "\nsteps followed by a disagreement: "
                             + ", ".join(f"{c} x{n}" for c, n in counts.most_common()) + "\n\n"
                             + "\n\n".join(r.failure for r in failures))


@pytest.mark.skipif(SEQUENCES <= 0, reason="DIFFERENTIAL_SEQUENCES=0")
def test_incremental_build_equals_clean_build_on_the_fixture(tmp_path):
    indices = sorted(ONLY) if ONLY else list(range(SEQUENCES))
    memo = tmp_path / "memo"
    workers = max(1, min(WORKERS, len(indices)))
    t0 = time.monotonic()
    shares = [indices[w::workers] for w in range(workers)]
    if workers == 1:
        outputs = [_fixture_worker(tmp_path / "w0", memo, shares[0], SEED, STEPS)]
    else:
        import multiprocessing
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_fixture_worker, tmp_path / f"w{w}", memo, share, SEED, STEPS)
                       for w, share in enumerate(shares)]
            outputs = [f.result() for f in futures]
    results = sorted((r for rs, _ in outputs for r in rs), key=lambda r: r.index)
    stats = {k: sum(s[k] for _, s in outputs) for k in ("incremental", "clean", "memo_hits")}
    stats["setup"] = max(s["setup"] for _, s in outputs)
    line, failures = report("fixture", results, stats, time.monotonic() - t0)
    assert_agree(line, failures)


def make_seeded_repo_copy(dest):
    """The repository copy with the portable part of the repository's warm build cache (the
    session's `built_site` build filled it for this very tree): its first build reruns no
    example and trains nothing."""
    make_repo_copy(dest)
    seed_build_cache(dest)
    return dest


@pytest.mark.skipif(REPO_SEQUENCES <= 0, reason="the repository's sequences run at the larger size (TBH_LARGE=1) "
                    "or with DIFFERENTIAL_REPO_SEQUENCES=N")
def test_incremental_build_equals_clean_build_on_the_repository(tmp_path, request):
    indices = sorted(ONLY) if ONLY else list(range(REPO_SEQUENCES))
    if REPO_CACHE == "seeded":
        request.getfixturevalue("built_site")     # the repository's cache holds this tree's results
    t0 = time.monotonic()
    ws = Workspace(tmp_path / "repo", make_seeded_repo_copy if REPO_CACHE == "seeded" else make_repo_copy,
                   tmp_path / "memo")
    setup = time.monotonic() - t0
    steps = (2, 4) if LARGER else (2, 2)
    results = []
    for i in indices:
        ws.reset()
        results.append(run_sequence(ws.project, repo_edits(LARGER), i, SEED, steps, "repository"))
    p = ws.project
    stats = dict(incremental=p.incremental_builds, clean=p.clean_builds, memo_hits=p.memo_hits, setup=setup)
    line, failures = report(f"repository, cache {REPO_CACHE}", results, stats, time.monotonic() - t0)
    assert_agree(line, failures)
