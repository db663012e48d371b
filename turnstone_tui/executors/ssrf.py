"""SSRF guard for web_fetch: which URLs may be fetched, and which IP address to connect to.

Rules:
- only ``http`` and ``https``; no credentials in the URL;
- the host is resolved (numeric forms such as ``2130706433``, ``0x7f000001``, ``0177.0.0.1`` and
  ``127.1`` are parsed like ``inet_aton`` does) and the URL is refused if ANY of its addresses is
  not a public unicast address (loopback, private, link-local, multicast, reserved, unspecified,
  shared/CGNAT, documentation, cloud metadata...), IPv4-mapped/6to4/Teredo IPv6 forms included;
- the caller connects to one of the checked addresses (``Target.addresses``), never resolving the
  name again, so DNS rebinding cannot swap in another address between check and connect.

The only way past the guard is ``allow_hosts``: a set of exact ``host:port`` strings that the
test-suite passes through ``ToolContext.web_allow_hosts`` (no config option sets it).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_ADDRESSES = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
        ipaddress.ip_address("169.254.170.2"),  # ECS task metadata
        ipaddress.ip_address("100.100.100.200"),  # Alibaba
        ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
    }
)
_HOSTNAME = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,62}))*\.?$")


class SsrfError(Exception):
    """The URL may not be fetched; the message says why."""


@dataclass(frozen=True, slots=True)
class Target:
    """A checked URL: where to connect, and what to send as Host / SNI."""

    url: str
    scheme: str
    host: str  # as written in the URL (lower case, no brackets)
    port: int
    path: str  # path + query, at least "/"
    addresses: tuple[str, ...]  # checked IP addresses to connect to, in resolver order

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def host_port(self) -> str:
        return f"{self.host}:{self.port}"

    def pinned_url(self, address: str) -> str:
        """The URL with the host replaced by ``address`` (the connection goes exactly there)."""
        shown = f"[{address}]" if ":" in address else address
        return f"{self.scheme}://{shown}:{self.port}{self.path}"


def parse_numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """Parse the ``inet_aton`` forms: 1-4 dot-separated parts, each decimal, octal (0...) or hex (0x...)."""
    parts = host.split(".")
    if host.endswith("."):
        parts = parts[:-1]
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        try:
            if part.lower().startswith("0x"):
                values.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part, 8))
            else:
                if not part.isdigit():
                    return None
                values.append(int(part, 10))
        except ValueError:
            return None
    *front, last = values
    if any(v > 255 for v in front) or last >= 256 ** (5 - len(values)):
        return None
    number = 0
    for v in front:
        number = number * 256 + v
    number = number * 256 ** (5 - len(values)) + last
    return ipaddress.IPv4Address(number)


def parse_ip_literal(host: str) -> IPAddress | None:
    """An IP address written in the URL host (IPv6 without brackets, or any IPv4 form)."""
    candidate = host.split("%", 1)[0]  # drop an IPv6 zone id
    try:
        return ipaddress.ip_address(candidate)
    except ValueError:
        pass
    return parse_numeric_ipv4(host)


def blocked_reason(ip: IPAddress) -> str | None:
    """Why connecting to ``ip`` is refused, or None for a public unicast address."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            inner = blocked_reason(embedded)
            return f"{inner} (embedded in {ip})" if inner else None
        # IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks)
        if int(ip) >> 32 == 0 and int(ip) > 1:
            inner = blocked_reason(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
            if inner:
                return f"{inner} (embedded in {ip})"
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    checks = (
        ("is_unspecified", "an unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_private", "a private address"),
        ("is_reserved", "a reserved address"),
    )
    for attr, reason in checks:
        if getattr(ip, attr):
            return reason
    if not ip.is_global:
        return "not a public address"
    return None


def split_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path+query) of an http(s) URL; raises SsrfError otherwise."""
    if not isinstance(url, str) or not url.strip():
        raise SsrfError("empty URL")
    url = url.strip()
    if any(ch in url for ch in "\r\n\t\x00 "):
        raise SsrfError("URL contains whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise SsrfError(f"malformed URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        shown = scheme or "(none)"
        raise SsrfError(f"scheme {shown!r} refused: only http:// and https:// URLs can be fetched")
    if parts.username is not None or parts.password is not None:
        raise SsrfError("URLs with credentials (user:password@host) are refused")
    host = (parts.hostname or "").lower()
    if not host:
        raise SsrfError("URL has no host")
    if port is None:
        port = 443 if scheme == "https" else 80
    if port == 0:
        raise SsrfError("port 0 refused")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return scheme, host, port, path


async def resolve_host(host: str, port: int) -> list[str]:
    """All addresses of ``host`` (without the event loop blocking on DNS)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise SsrfError(f"cannot resolve host {host!r}: {exc}") from None
    addresses: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = str(sockaddr[0]).split("%", 1)[0]
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise SsrfError(f"host {host!r} has no addresses")
    return addresses


async def check_url(url: str, allow_hosts: frozenset[str] | set[str] = frozenset()) -> Target:
    """Check ``url`` against the SSRF rules and resolve it; raises SsrfError with the reason."""
    scheme, host, port, path = split_url(url)
    literal = parse_ip_literal(host)
    if literal is not None:
        addresses = [str(literal)]
    else:
        if not _HOSTNAME.match(host):
            raise SsrfError(f"invalid host name {host!r}")
        if host == "localhost" or host.endswith(".localhost"):
            if f"{host}:{port}" not in allow_hosts:
                raise SsrfError(f"host {host!r} refused: it is a loopback name")
        addresses = await resolve_host(host, port)
    if f"{host}:{port}" not in allow_hosts:
        for address in addresses:
            reason = blocked_reason(ipaddress.ip_address(address))
            if reason:
                shown = host if address == host else f"{host} -> {address}"
                raise SsrfError(
                    f"refused to fetch {shown}: {reason} (private and internal addresses are blocked)"
                )
    return Target(url=url.strip(), scheme=scheme, host=host, port=port, path=path, addresses=tuple(addresses))
