"""Refuse webhook URLs that would make payrelay call into its own network (SSRF).

A merchant chooses the ``webhookUrl``; payrelay POSTs to it from inside the operator's network. In
live mode the URL must be https and every address it reaches must be public. The check runs twice:

- at transfer creation, ``check_url`` (syntax, then a DNS lookup) turns a bad URL into a 400;
- at every delivery, ``GuardedTransport`` resolves the host itself, checks every address and then
  dials the address it checked, so a DNS answer that changes between check and connect (rebinding)
  cannot reach an internal address.

Test mode allows http and every address. ``UrlPolicy.allowlist`` opens configured ranges in live
mode; it never opens a cloud metadata endpoint.

IP literals are read the way the C resolver reads them (``inet_aton``): ``2130706433``, ``0x7f.1``,
``0177.0.0.1`` and ``127.1`` all mean 127.0.0.1. IPv4-mapped IPv6 is checked as the IPv4 address
it dials, and the IPv4 address inside 6to4 and Teredo addresses is checked as well.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from typing import TypeAlias
from urllib.parse import urlsplit

import httpx

__all__ = [
    "CLOUD_METADATA",
    "GuardedTransport",
    "UnresolvableHost",
    "UnsafeUrl",
    "UrlPolicy",
    "check_url",
    "check_url_syntax",
    "parse_ip_literal",
    "resolve_and_check",
]

IPAddress: TypeAlias = IPv4Address | IPv6Address
IPNetwork: TypeAlias = IPv4Network | IPv6Network

# Instance metadata and host-agent endpoints. Refused in live mode even when an allowlist range
# covers them: they hand out cloud credentials. 168.63.129.16 is a public address.
CLOUD_METADATA: frozenset[IPAddress] = frozenset(
    ip_address(text)
    for text in (
        "169.254.169.254",  # AWS, GCP, Azure, DigitalOcean, OpenStack, Hetzner
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.170.23",  # AWS EKS pod identity
        "169.254.0.23",  # Tencent Cloud
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
        "168.63.129.16",  # Azure WireServer
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS EKS pod identity over IPv6
    )
)

# Named ranges, first match wins, so a refusal says what the address is. Spelled out rather than
# left to ipaddress's is_private/is_global, whose tables changed between 3.11 patch releases; those
# predicates still run afterwards as a backstop.
_FORBIDDEN: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ip_network(cidr), label)
    for cidr, label in (
        ("0.0.0.0/32", "unspecified"),
        ("0.0.0.0/8", "'this network' (0.0.0.0/8)"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol"),
        ("192.0.2.0/24", "documentation"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # includes the broadcast address
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::/8", "reserved"),  # includes IPv4-compatible and NAT64 64:ff9b::/96
        ("100::/64", "discard-only"),
        ("2001:db8::/32", "documentation"),
        ("fc00::/7", "unique local (private)"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)

_HOSTNAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")
# One inet_aton part as strtoul(base 0) reads it: hex, octal, or decimal. "0x" with no hex digit
# and "08" match only their leading "0", so the rest makes the whole string invalid, as in C.
_INET_PART = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")
_INET_LAST_PART_MAX = (0xFFFFFFFF, 0xFFFFFF, 0xFFFF, 0xFF)
_C_SPACE = " \t\n\v\f\r"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class UnsafeUrl(ValueError):
    """A webhook URL payrelay refuses to call. The message says why, in words fit for a 400."""


class UnresolvableHost(UnsafeUrl):
    """The host has no address, so it cannot be shown to be safe.

    At transfer creation this is a 400 like any ``UnsafeUrl``; ``GuardedTransport`` reports it as
    ``httpx.ConnectError`` instead, because at delivery time DNS failures are transient.
    """


@dataclass(frozen=True)
class UrlPolicy:
    """What a webhook URL may be. Build it with ``for_mode``; tests may build one field by field."""

    require_https: bool
    allow_private: bool
    allowlist: tuple[IPNetwork, ...] = ()

    @classmethod
    def for_mode(cls, live: bool, allowlist: Sequence[str] = ()) -> UrlPolicy:
        """Live: https and public addresses only, plus ``allowlist`` (CIDRs). Test: anything.

        >>> UrlPolicy.for_mode(True, ["10.1.0.0/16"]).allowlist
        (IPv4Network('10.1.0.0/16'),)
        """
        networks = tuple(_parse_network(entry) for entry in allowlist)
        return cls(require_https=live, allow_private=not live, allowlist=networks)


def _parse_network(entry: str) -> IPNetwork:
    try:
        return ip_network(entry.strip(), strict=True)
    except ValueError as exc:
        raise ValueError(
            f"webhook allowlist entry {entry!r} is not a CIDR network: {exc}"
        ) from None


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address ``host`` denotes by itself, or None when it is a name to resolve.

    IPv6 may carry brackets and a zone id (``%eth0`` or URL-encoded ``%25eth0``). IPv4 is read as
    ``inet_aton`` reads it, so ``2130706433``, ``0x7f.1`` and ``0177.0.0.1`` are 127.0.0.1.
    """
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in bare:
        try:
            return IPv6Address(bare.split("%", 1)[0])
        except ValueError:
            return None
    value = _inet_aton(bare)
    return None if value is None else IPv4Address(value)


def _inet_aton(text: str) -> int | None:
    """glibc ``inet_aton`` in Python: ``a.b.c.d``, ``a.b.c`` (c is 16 bits), ``a.b``, ``a``."""
    parts: list[int] = []
    position = 0
    while True:
        match = _INET_PART.match(text, position)
        if match is None:
            return None
        value = _strtoul(match[0])
        position = match.end()
        if value > 0xFFFFFFFF:
            return None
        if position < len(text) and text[position] == ".":
            if len(parts) == 3 or value > 0xFF:
                return None
            parts.append(value)
            position += 1
            continue
        break
    # C stops at NUL, and inet_aton ignores anything after whitespace.
    if position < len(text) and text[position] not in _C_SPACE + "\0":
        return None
    if value > _INET_LAST_PART_MAX[len(parts)]:
        return None
    return sum(part << (24 - 8 * index) for index, part in enumerate(parts)) | value


def _strtoul(digits: str) -> int:
    if digits[:2] in ("0x", "0X"):
        return int(digits[2:], 16)
    return int(digits, 8 if digits.startswith("0") else 10)


def _canonical(address: IPAddress) -> IPAddress:
    """The address as dialled: IPv4-mapped IPv6 becomes IPv4, and a zone id is dropped."""
    if isinstance(address, IPv4Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return IPv6Address(address.packed) if address.scope_id else address


def _category(address: IPAddress) -> str | None:
    """Why ``address`` is not a public unicast address, or None if it is one."""
    for network, label in _FORBIDDEN:
        if address in network:
            return label
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_private or address.is_reserved or not address.is_global:
        return "non-public"
    return None


def _embedded_ipv4(address: IPAddress) -> tuple[IPv4Address, ...]:
    if isinstance(address, IPv4Address):
        return ()
    if address.sixtofour is not None:
        return (address.sixtofour,)
    return address.teredo or ()


def _refusal(address: IPAddress, policy: UrlPolicy) -> str | None:
    """What is wrong with dialling ``address`` under ``policy``, or None if it may be dialled."""
    if policy.allow_private:
        return None
    address = _canonical(address)
    if address in CLOUD_METADATA:
        return "a cloud metadata endpoint"
    if any(address in network for network in policy.allowlist):
        return None
    category = _category(address)
    if category is not None:
        return f"a {category} address"
    for inner in _embedded_ipv4(address):
        if inner in CLOUD_METADATA or _category(inner) is not None:
            return f"an IPv6 address that carries the IPv4 address {inner}"
    return None


def _check_address(address: IPAddress, policy: UrlPolicy, subject: str) -> None:
    refusal = _refusal(address, policy)
    if refusal is not None:
        raise UnsafeUrl(f"{subject} {address}, {refusal}; only public addresses may be called")


def _host_subject(host: str) -> str:
    return f"webhook URL host {host!r} is"


def check_url_syntax(url: str, policy: UrlPolicy) -> None:
    """Raise ``UnsafeUrl`` if ``url`` is refused without a DNS lookup.

    Checks the scheme, that a host is present, that there is no ``user:password@``, the port range,
    and, when the host is an IP literal in any form, the address it denotes.
    """
    parsed = _parse_url(url, policy)
    if parsed.scheme not in _DEFAULT_PORTS:
        raise UnsafeUrl("webhook URL must be an absolute http:// or https:// URL")
    if policy.require_https and parsed.scheme != "https":
        raise UnsafeUrl("webhook URL must use https:// in live mode")
    if parsed.userinfo:
        raise UnsafeUrl("webhook URL must not contain credentials (user:password@)")
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise UnsafeUrl("webhook URL has no host")
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise UnsafeUrl(f"webhook URL port {parsed.port} is outside 1-65535")
    address = parse_ip_literal(host)
    if address is not None:
        _check_address(address, policy, _host_subject(host))
    elif len(host) > 253 or not _HOSTNAME.fullmatch(host):
        raise UnsafeUrl(f"webhook URL host {host!r} is not a valid hostname")


def _parse_url(url: str, policy: UrlPolicy) -> httpx.URL:
    """``url`` as httpx, which sends the request, reads it: one parser for check and send."""
    try:
        return httpx.URL(url)
    except httpx.InvalidURL as exc:
        # httpx rejects some inet_aton forms (0177.0.0.1); say what they point at when refused.
        host = _loose_host(url)
        address = parse_ip_literal(host)
        if address is not None:
            _check_address(address, policy, _host_subject(host))
        raise UnsafeUrl(f"webhook URL is not a valid URL: {exc}") from None


def _loose_host(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


async def resolve_and_check(host: str, port: int, policy: UrlPolicy) -> list[str]:
    """The addresses ``host`` resolves to, after checking every one of them against ``policy``.

    An IP literal is not looked up. Otherwise the lookup runs through the event loop's
    ``getaddrinfo`` (in a thread, never blocking the loop). One forbidden address refuses the host:
    the dialler could pick any of them. Raises ``UnsafeUrl``, or ``UnresolvableHost``.
    """
    literal = parse_ip_literal(host)
    if literal is not None:
        _check_address(literal, policy, _host_subject(host))
        return [str(literal)]
    addresses = await _lookup(host, port)
    for address in addresses:
        _check_address(address, policy, f"webhook URL host {host!r} resolves to")
    return [str(address) for address in addresses]


async def _lookup(host: str, port: int) -> list[IPAddress]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UnresolvableHost(f"webhook URL host {host!r} could not be resolved: {exc}") from exc
    found = [info[4][0] for info in infos if info[0] in (socket.AF_INET, socket.AF_INET6)]
    addresses = list(dict.fromkeys(ip_address(text) for text in found if isinstance(text, str)))
    if not addresses:
        raise UnresolvableHost(f"webhook URL host {host!r} has no IP address")
    return addresses


async def check_url(url: str, policy: UrlPolicy) -> None:
    """``check_url_syntax``, then the DNS lookup: the transfer-create check (UnsafeUrl -> 400).

    A policy that allows every address (test mode) has nothing to find in DNS, so makes no lookup.
    """
    check_url_syntax(url, policy)
    if policy.allow_private:
        return
    target = httpx.URL(url)
    await resolve_and_check(target.raw_host.decode("ascii"), _port(target), policy)


def _port(url: httpx.URL) -> int:
    return url.port or _DEFAULT_PORTS[url.scheme]


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that dials only addresses ``policy`` allows, and only the ones it checked.

    For each request it checks the URL, resolves the host once, checks every address, and sends
    the request to a checked address (the next one if connecting fails). The ``Host`` header and,
    for https, the TLS SNI name and certificate check stay on the hostname: the request is copied
    with the IP in its URL and ``sni_hostname`` in its extensions (an httpcore extension).

    Use it as the only transport of the delivery client, with redirects off::

        client = httpx.AsyncClient(
            transport=GuardedTransport(policy), follow_redirects=False, timeout=10.0
        )

    A redirect followed by mistake still comes back through this transport and is checked.
    With a transport given, httpx ignores proxy environment variables, so nothing bypasses it.

    Raises ``UnsafeUrl`` when the policy refuses the URL or an address (no connection is made);
    ``httpx.ConnectError`` when the host does not resolve and ``httpx.ConnectTimeout`` when the
    lookup outlasts the request's connect timeout, so DNS trouble looks like any network error.

    Connections are not kept alive: httpcore pools them by (scheme, IP, port), and reuse could
    send one hostname's request over a TLS session verified for another hostname on that IP.
    """

    def __init__(self, policy: UrlPolicy, *, verify: ssl.SSLContext | bool = True) -> None:
        self.policy = policy
        self._inner = httpx.AsyncHTTPTransport(
            verify=verify, limits=httpx.Limits(max_keepalive_connections=0)
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        check_url_syntax(str(request.url), self.policy)
        failure: httpx.ConnectError | None = None
        for address in await self._checked_addresses(request):
            try:
                return await self._inner.handle_async_request(_pinned(request, address))
            except httpx.ConnectError as exc:
                failure = exc
        assert failure is not None  # _checked_addresses never returns an empty list
        raise failure

    async def _checked_addresses(self, request: httpx.Request) -> list[str]:
        host = request.url.raw_host.decode("ascii")
        timeout = request.extensions.get("timeout", {}).get("connect")
        try:
            async with asyncio.timeout(timeout):
                return await resolve_and_check(host, _port(request.url), self.policy)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"resolving {host!r} timed out", request=request) from None
        except UnresolvableHost as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


def _pinned(request: httpx.Request, address: str) -> httpx.Request:
    """``request`` sent to ``address``, still naming (and, for https, verifying) its hostname."""
    host = request.url.raw_host.decode("ascii")
    headers = request.headers.copy()
    headers.setdefault("host", request.url.netloc.decode("ascii"))
    extensions = dict(request.extensions)
    if request.url.scheme == "https" and parse_ip_literal(host) is None:
        extensions["sni_hostname"] = host
    return httpx.Request(
        request.method,
        request.url.copy_with(host=address),
        headers=headers,
        stream=request.stream,
        extensions=extensions,
    )
