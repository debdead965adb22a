"""Which network addresses are this machine's own (loopback): the one place that says so, for
the server (no key needed there; a browser's page on it), and a desk PC's profile (a server on
this PC sends nothing off it)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str, *, names_under_localhost: bool = True) -> bool:
    """``localhost`` (and names under it, unless ``names_under_localhost`` is False: a name to
    bind to resolves as /etc/hosts says, which may be a LAN address), 127.0.0.0/8 and ::1, with
    or without brackets."""
    if host == "localhost" or names_under_localhost and host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def network_addresses(families: set[int]) -> list[str]:
    """This PC's network addresses of these families (``socket.AF_INET``, ``AF_INET6``), loopback
    and link-local left out: what colleagues can type to reach it, and what serve can bind."""
    import psutil

    try:
        interfaces = psutil.net_if_addrs()
    except OSError:
        interfaces = {}
    found: list[str] = []
    for addrs in interfaces.values():
        for a in addrs:
            if a.family not in families:
                continue
            try:
                ip = ipaddress.ip_address(a.address.split("%")[0])
            except ValueError:
                continue
            if not (ip.is_loopback or ip.is_link_local):
                found.append(str(ip))
    return list(dict.fromkeys(found))
