"""Which host serve may bind without warning, and from which the playground answers.

Kept apart from the server so the playground (site_builder/serve/play.py) can ask the same
question without importing the server that imports it.
"""
import ipaddress
import socket


def is_loopback(host: str) -> bool:
    """True if `host` only reaches this machine (127.0.0.0/8, ::1, or a name resolving only to those)."""
    host = host.strip().strip("[]")
    if not host:
        return False        # "" binds every interface
    try:
        addrs = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return False
        addrs = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    def loop(a):
        mapped = getattr(a, "ipv4_mapped", None)
        return a.is_loopback or (mapped is not None and mapped.is_loopback)
    return bool(addrs) and all(loop(a) for a in addrs)


def host_warning(host: str):
    """The warning to print before serving on `host`, or None when it is a loopback address."""
    if is_loopback(host):
        return None
    shown = host or "0.0.0.0"
    return (f"warning: serving on {shown}: anyone on your network can read these files "
            f"(use --host 127.0.0.1 to keep them on this machine)")
