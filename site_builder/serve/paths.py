"""Which request path is which file of the output folder, and which path is inside which folder.

Refuse, don't normalise. A request path with `..` or `.` segments, empty segments (`//`), an
encoded slash or backslash (`%2f`, `%5c`), a backslash, a NUL byte or invalid UTF-8 is a 404
outright (browsers normalise dot segments before sending, so no real link needs them). What
remains is joined to the output folder, its *real* path is resolved (following every symlink)
and it must lie inside the real output folder. Only regular files are served; a folder serves
its index.html or nothing (no listings).
"""
import os
from urllib.parse import quote, unquote

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8", ".json": "application/json", ".map": "application/json",
    ".txt": "text/plain; charset=utf-8", ".xml": "application/xml",
    ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf",
    ".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
    ".gif": "image/gif", ".webp": "image/webp", ".ico": "image/x-icon", ".wasm": "application/wasm",
    ".pdf": "application/pdf",     # the companion PDF: a browser opens it at its #nameddest
}


def inside(path: str, root: str) -> bool:
    """`path` is `root` or under it (both real or both absolute paths, as strings)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_request_path(out, raw_path: str):
    """Map a request path (query already removed) to ("file", real path), ("redirect", location) or None.

    None means 404: anything that is not a plain path to a regular file (or a folder with an
    index.html) whose real path is inside the real output folder.
    """
    if not raw_path.startswith("/") or "\\" in raw_path or "\x00" in raw_path:
        return None
    lowered = raw_path.lower()
    if "%2f" in lowered or "%5c" in lowered or "%00" in lowered:
        return None
    try:
        path = unquote(raw_path, errors="strict")
    except UnicodeDecodeError:
        return None
    if "\\" in path or "\x00" in path:
        return None
    parts = path[1:].split("/")
    trailing_slash = len(parts) > 1 and parts[-1] == ""
    if parts[-1] == "":
        parts = parts[:-1]
    if any(p in ("", ".", "..") for p in parts):
        return None
    root = os.path.realpath(out)
    target = os.path.realpath(os.path.join(root, *parts))
    if not inside(target, root):
        return None
    if os.path.isdir(target):
        if parts and not trailing_slash:
            return ("redirect", "/" + "/".join(quote(p) for p in parts) + "/")
        target = os.path.realpath(os.path.join(target, "index.html"))
        if not inside(target, root):
            return None
    elif trailing_slash:
        return None
    if not os.path.isfile(target):
        return None
    return ("file", target)


def content_type(path: str) -> str:
    return CONTENT_TYPES.get(os.path.splitext(path)[1].lower(), "application/octet-stream")
