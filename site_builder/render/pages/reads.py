"""What a page was seen to read of the source index: the part of its cache key that the pages
cannot know before they are gathered.

A page's view model is keyed on what every page shares, its own file and its examples' results
(build/example_plan.py page_keys), and on the answers it was given by the source index: every
question its gathering asked (`function('pkg.ops.softmax')`, `called_by(...)`,
`files['pkg/ops.py']`, `'x' in functions`) with a digest of the answer. The questions are
stored beside the page (cache kind `page-reads`, under the part of the key known before), and a
rebuild asks them again of the new index: the page is reused only if every answer is the same.
Examples are keyed the same way, on what their run was seen to read (gather/inputs.py).

So an edit of the package regathers the pages that read what it changed: an edit inside one
function changes the answers of the pages that list or quote its lines, and none of the
answers of a page that only cites another function's lines.

Trade-offs, and why:
- **Answers, not files.** A file's lines are one answer (a listing or a quoted line reads them);
  a function's record (lines, calls, parameters, docstring) is another; so is each graph
  question (`called_by`, `tested_by`), answered whole. A page asks a few hundred questions,
  each answered once per build (the index does not change once built: `Answers`).
- **No memo above the index may hide a read.** A page's gathering keeps no memo of the index's
  answers from one page to the next (PageBuilder resets its reach memo per page; the renderer
  asks for a file's lines on every listing): a memo would give the second page an answer
  without its question.
- **What is not a question to the index is read whole.** A page that runs the package's code
  in the build's process (the parameter table runs `init_params`) reads every package file's
  text (`package_run`); a file read from disk (an example module's words) is read by its bytes
  (`file`). A question whose arguments are not plain values cannot be stored, and the page is
  then keyed on every file of the index.
- **Answers are compared as canonical text**: sets sorted, dataclasses by their fields, so two
  processes with different hash seeds (a forked child, the next build) give the same digest.
"""
from __future__ import annotations

from pathlib import Path

from site_builder.base.cache import canonical, digest

PLAIN = (str, int, float, bool, type(None))
MAPPINGS = ("files", "functions", "classes", "modules")


def plain(value) -> bool:
    """Whether a question's argument can be stored and asked again: plain values and tuples of them."""
    return isinstance(value, PLAIN) or (isinstance(value, tuple) and all(plain(v) for v in value))


class Answers:
    """The current index's answer to each question, as a digest, each computed once (the index
    is immutable once built). Questions are tuples: ("call", method, args), ("attr", name),
    ("item" | "has", mapping, key), ("keys" | "all", mapping), ("file", path), ("package",),
    ("whole",), ("uncommitted", path): whether the file differs from the commit (its GitHub
    links are left out), so an edit in a git checkout regathers only the pages citing that file."""

    def __init__(self, index, root: Path, code_memo=None, uncommitted=frozenset()):
        self.index, self.root = index, Path(root)
        self.code_memo = {} if code_memo is None else code_memo   # the renderer's highlighting memo
        self.uncommitted = frozenset(uncommitted)
        self._digests = {}

    def ask(self, question):
        """(the answer, or the exception it raised, and whether it raised)."""
        kind, *rest = question
        index = self.index
        try:
            if kind == "call":
                return getattr(index, rest[0])(*rest[1]), False
            if kind == "attr":
                return getattr(index, rest[0]), False
            if kind == "item":
                return getattr(index, rest[0])[rest[1]], False
            if kind == "has":
                return rest[1] in getattr(index, rest[0]), False
            if kind == "keys":
                return list(getattr(index, rest[0])), False
            if kind == "all":
                return list(getattr(index, rest[0]).items()), False
            if kind == "lines":
                return index.files[rest[0]][rest[1]:rest[2]], False
            if kind == "len":
                return len(index.files[rest[0]]), False
            if kind == "highlighted":
                from site_builder.render.html import highlight_into
                return highlight_into(self.code_memo, index.files[rest[0]])[rest[1]:rest[2]], False
            if kind == "file":
                path = self.root / rest[0]
                return (path.read_bytes() if path.is_file() else None), False
            if kind == "package":
                return [(f, lines) for f, lines in sorted(index.files.items())
                        if f.startswith(index.package + "/")], False
            if kind == "whole":
                return sorted(index.files.items()), False
            if kind == "uncommitted":
                return rest[0] in self.uncommitted, False
        except Exception as e:       # the page was given the exception: it is the answer
            return e, True
        raise ValueError(f"unknown question {question!r}")

    def digest(self, question, answer=None, raised=False) -> str:
        if question not in self._digests:
            if answer is None and not raised:
                answer, raised = self.ask(question)
            self._digests[question] = digest(canonical((raised, answer)))
        return self._digests[question]

    def still(self, reads: dict) -> bool:
        """Whether every question of `reads` ({question: digest}) has the same answer now."""
        return all(self.digest(q) == d for q, d in reads.items())


class ReadLog:
    """The questions one page's gathering asked, with their answers' digests."""

    def __init__(self, answers: Answers):
        self.answers = answers
        self.reads = {}

    def note(self, question, answer=None, raised=False):
        self.reads[question] = self.answers.digest(question, answer, raised)

    def ask(self, question):
        """Ask the index, note it, and give the page what the index gave (or raise it)."""
        answer, raised = self.answers.ask(question)
        self.note(question, answer, raised)
        if raised:
            raise answer
        return answer

    def file(self, rel: str):
        """A file the page read from disk, by its bytes."""
        self.note(("file", rel))

    def package_run(self):
        """The page ran the package's code here: it read every package file."""
        self.note(("package",))


class RecordedLines:
    """A file's lines (`index.files[f]`) as one page reads them: each line or slice it takes is
    noted on its own, so an edit elsewhere in the file leaves the page's answers as they were."""

    def __init__(self, file, lines: list, log: ReadLog):
        self._file, self._lines, self._log = file, lines, log

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self._lines))
            if i.start is None or i.start < 0 or i.stop is None or i.stop < 0:
                self._log.note(("len", self._file), len(self._lines))    # where it starts or ends depends on it
            self._log.note(("lines", self._file, start, stop), self._lines[start:stop])
            return self._lines[start:stop:step]
        n = i if i >= 0 else len(self._lines) + i
        if i < 0:
            self._log.note(("len", self._file), len(self._lines))
        self._log.note(("lines", self._file, n, n + 1), self._lines[n:n + 1])
        return self._lines[i]

    def __len__(self):
        self._log.note(("len", self._file), len(self._lines))
        return len(self._lines)

    def __iter__(self):
        self._log.note(("item", "files", self._file), self._lines)
        return iter(self._lines)


class RecordingMapping:
    """One of the index's dicts (files, functions, ...), read through the log."""

    def __init__(self, name, log: ReadLog):
        self._name, self._log = name, log

    def __getitem__(self, key):
        if self._name == "files" and plain(key) and self._log.ask(("has", "files", key)):
            return RecordedLines(key, self._log.answers.index.files[key], self._log)
        return self._log.ask(("item", self._name, key))

    def get(self, key, default=None):
        return self[key] if key in self else default

    def __contains__(self, key):
        if not plain(key):
            self._log.note(("whole",))
            return key in getattr(self._log.answers.index, self._name)
        return self._log.ask(("has", self._name, key))

    def __iter__(self):
        return iter(self._log.ask(("keys", self._name)))

    def keys(self):
        return list(self)

    def __len__(self):
        return len(self._log.ask(("keys", self._name)))

    def items(self):
        return self._log.ask(("all", self._name))

    def values(self):
        return [v for _, v in self.items()]


class RecordingIndex:
    """The source index as one page sees it: the same answers, each question noted in `log`."""

    def __init__(self, index, log: ReadLog):
        self._index, self._log = index, log

    def highlighted(self, file, start, stop):
        """The highlighted HTML of the file's lines start+1..stop (a listing's rows)."""
        return self._log.ask(("highlighted", file, start, stop))

    def __getattr__(self, name):
        if name in MAPPINGS:
            return RecordingMapping(name, self._log)
        value = getattr(self._index, name)
        if not callable(value):
            self._log.note(("attr", name), value)
            return value

        def asked(*args, **kwargs):
            if kwargs or not all(plain(a) for a in args):
                self._log.note(("whole",))          # cannot be asked again: every file counts
                return value(*args, **kwargs)
            return self._log.ask(("call", name, args))
        return asked
