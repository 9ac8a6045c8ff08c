"""Where a code object's file really is, resolved once per process.

`os.path.realpath` stats every component of a path, and the examples' hooks ask it for every
code object a run enters (site_builder/run/shape_recorder.py) and every file it loaded
(site_builder/gather/inputs.py): one `--no-cache` build of the test fixture made 312,648 stat
calls, most of them for the same few hundred files (`strace -f -c`, 2026-12-03). The files
code was compiled from do not move while a build runs, so their resolved paths are memoised;
a path that is not a code file's (what an example opens or stats) is still resolved each time.
"""
import functools
import os


@functools.lru_cache(maxsize=None)
def code_file(filename: str) -> str:
    """os.path.realpath(filename) of a code object's co_filename (or a module's __file__)."""
    return os.path.realpath(filename)
