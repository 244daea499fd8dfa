"""The SSRF guard: the URL x policy matrix, DNS answers, and what GuardedTransport really dials.

No traffic leaves loopback. Public names resolve only through a fake ``getaddrinfo`` set on the
running event loop; the receivers are real uvicorn servers on 127.0.0.1 and 127.0.0.2 (Linux
routes all of 127/8 to lo).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import json
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given, settings
from hypothesis import strategies as st

from payrelay.webhooks.ssrf import (
    CLOUD_METADATA,
    GuardedTransport,
    UnresolvableHost,
    UnsafeUrl,
    UrlPolicy,
    check_url,
    check_url_syntax,
    parse_ip_literal,
    resolve_and_check,
)

LIVE = UrlPolicy.for_mode(True)
TEST = UrlPolicy.for_mode(False)
HOOK_HOST = "hooks.merchant.test"

# (URL, what the live-mode refusal must mention). Every one is allowed in test mode.
LIVE_REFUSED = [
    ("http://93.184.216.34/", "https"),
    ("https://127.0.0.1/", "loopback"),
    ("https://127.1/", "loopback"),
    ("https://2130706433/", "loopback"),
    ("https://0x7f000001/", "loopback"),
    ("https://017700000001/", "loopback"),
    ("https://0x7f.1/", "loopback"),
    ("https://127.255.255.254:8443/hook", "loopback"),
    ("https://[::1]/", "loopback"),
    ("https://[::ffff:127.0.0.1]/", "loopback"),
    ("https://[::ffff:7f00:1]/", "loopback"),
    ("https://10.0.0.1/", "private"),
    ("https://10.255.255.255/", "private"),
    ("https://012.1/", "private"),  # octal 012 = 10
    ("https://172.16.0.1/", "private"),
    ("https://172.31.255.254/", "private"),
    ("https://192.168.1.1/", "private"),
    ("https://0xc0a80101/", "private"),
    ("https://169.254.1.1/", "link-local"),
    ("https://169.254.169.254/latest/meta-data/", "metadata"),
    ("https://2852039166/", "metadata"),  # 169.254.169.254 as one number
    ("https://[::ffff:169.254.169.254]/", "metadata"),
    ("https://[fd00:ec2::254]/", "metadata"),
    ("https://100.100.100.200/", "metadata"),
    ("https://168.63.129.16/", "metadata"),
    ("https://100.64.0.1/", "carrier-grade NAT"),
    ("https://100.127.255.254/", "carrier-grade NAT"),
    ("https://224.0.0.1/", "multicast"),
    ("https://239.255.255.250/", "multicast"),
    ("https://[ff02::1]/", "multicast"),
    ("https://240.0.0.1/", "reserved"),
    ("https://255.255.255.255/", "reserved"),
    ("https://0.0.0.0/", "unspecified"),
    ("https://0/", "unspecified"),
    ("https://0.1.2.3/", "this network"),
    ("https://[::]/", "unspecified"),
    ("https://[fc00::1]/", "unique local"),
    ("https://[fd12:3456::1]/", "unique local"),
    ("https://[fe80::1]/", "link-local"),
    ("https://[fe80::1%25eth0]/", "link-local"),
    ("https://[febf::1]/", "link-local"),
    ("https://[2002:7f00:1::]/", "carries the IPv4 address 127.0.0.1"),  # 6to4
    ("https://[2002:a9fe:a9fe::]/", "169.254.169.254"),  # 6to4
    ("https://[64:ff9b::7f00:1]/", "reserved"),  # NAT64 of 127.0.0.1
    ("https://[2001:db8::1]/", "documentation"),
    ("https://198.18.0.1/", "benchmarking"),
]

# Refused whatever the mode: not something payrelay can or should call.
ALWAYS_REFUSED = [
    ("ftp://example.com/", "http:// or https://"),
    ("file:///etc/passwd", "http:// or https://"),
    ("//example.com/hook", "http:// or https://"),
    ("example.com/hook", "http:// or https://"),
    ("https:///hook", "no host"),
    ("https://user:pass@example.com/", "credentials"),
    ("https://user@example.com/", "credentials"),
    ("https://example.com:0/", "port 0"),
    ("https://example.com:70000/", "port 70000"),
    ("https://exa%6dple.com/", "not a valid hostname"),
    ("https://256.1.1.1/", "not a valid URL"),
    ("https://[::1/", "not a valid URL"),
]


def policy(*allow: str, require_https: bool = True) -> UrlPolicy:
    """Live mode with an allowlist; ``require_https=False`` lets tests use plain-http receivers."""
    return UrlPolicy(
        require_https=require_https,
        allow_private=False,
        allowlist=tuple(ipaddress.ip_network(cidr) for cidr in allow),
    )


def refused(match: str) -> Any:
    return pytest.raises(UnsafeUrl, match=match)


# --- a scripted getaddrinfo ------------------------------------------------------------------


@dataclass
class FakeResolver:
    """The event loop's getaddrinfo, answering from a script: one answer per call, the last repeats.

    IP literals answer themselves, as the real one does; unknown names do not resolve.
    """

    script: dict[str, list[list[str]]]
    calls: list[str] = field(default_factory=list)

    async def __call__(self, host: str, port: int, **_: Any) -> list[tuple[Any, ...]]:
        self.calls.append(host)
        with contextlib.suppress(ValueError):
            return [_addrinfo(str(ipaddress.ip_address(host)), port)]
        answers = self.script.get(host)
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        current = answers.pop(0) if len(answers) > 1 else answers[0]
        return [_addrinfo(address, port) for address in current]


def _addrinfo(address: str, port: int) -> tuple[Any, ...]:
    if ":" in address:
        return (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))
    return (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))


@pytest.fixture
def fake_dns(
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[dict[str, list[list[str]]]], FakeResolver]:
    def install(script: dict[str, list[list[str]]]) -> FakeResolver:
        resolver = FakeResolver(script)
        monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", resolver)
        return resolver

    return install


# --- real receivers on loopback --------------------------------------------------------------


@dataclass
class Receiver:
    """A tiny ASGI app that records each request; ``/redirect?to=URL`` answers 302 to URL."""

    name: str
    hits: list[dict[str, str]] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        headers = {key.decode(): value.decode() for key, value in scope["headers"]}
        self.hits.append({"host": headers.get("host", ""), "path": scope["path"]})
        if scope["path"] == "/redirect":
            target = scope["query_string"].decode().removeprefix("to=")
            await _respond(send, 302, b"", [(b"location", target.encode())])
            return
        body = json.dumps({"receiver": self.name, "host": headers.get("host")}).encode()
        await _respond(send, 200, body, [(b"content-type", b"application/json")])


async def _respond(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _listening_pair() -> tuple[socket.socket, socket.socket]:
    """Sockets on 127.0.0.2:P and 127.0.0.1:P, the same port P, so only the IP tells them apart."""
    for _ in range(20):
        public = socket.socket()
        public.bind(("127.0.0.2", 0))
        internal = socket.socket()
        try:
            internal.bind(("127.0.0.1", public.getsockname()[1]))
        except OSError:
            public.close()
            internal.close()
            continue
        return public, internal
    raise RuntimeError("no port free on both 127.0.0.1 and 127.0.0.2")


@contextlib.asynccontextmanager
async def serving(
    app: Receiver, sock: socket.socket, tls: tuple[Path, Path] | None = None
) -> AsyncIterator[None]:
    certfile, keyfile = tls or (None, None)
    config = uvicorn.Config(
        app, lifespan="off", log_level="critical", ssl_certfile=certfile, ssl_keyfile=keyfile
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    for _ in range(250):
        if server.started:
            break
        await asyncio.sleep(0.02)
    else:
        raise RuntimeError("uvicorn did not start")
    try:
        yield
    finally:
        server.should_exit = True
        await task


@dataclass
class Receivers:
    port: int
    public: Receiver  # on 127.0.0.2, the only address the test policy allows
    internal: Receiver  # on 127.0.0.1, standing in for a service inside the operator's network


@pytest.fixture
async def receivers() -> AsyncIterator[Receivers]:
    public_sock, internal_sock = _listening_pair()
    pair = Receivers(public_sock.getsockname()[1], Receiver("public"), Receiver("internal"))
    async with serving(pair.public, public_sock), serving(pair.internal, internal_sock):
        yield pair


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for HOOK_HOST only (no IP in it), and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOOK_HOST)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(HOOK_HOST)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory = tmp_path_factory.mktemp("tls")
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


# --- tests -----------------------------------------------------------------------------------


class TestUrlPolicy:
    def test_live_mode_is_https_and_public_only(self) -> None:
        assert UrlPolicy(require_https=True, allow_private=False, allowlist=()) == LIVE

    def test_test_mode_allows_http_and_every_address(self) -> None:
        assert UrlPolicy(require_https=False, allow_private=True, allowlist=()) == TEST

    def test_allowlist_entries_are_cidrs(self) -> None:
        built = UrlPolicy.for_mode(True, [" 10.1.0.0/16", "fd00:1::/64", "192.0.2.7"])
        assert built.allowlist == (
            ipaddress.ip_network("10.1.0.0/16"),
            ipaddress.ip_network("fd00:1::/64"),
            ipaddress.ip_network("192.0.2.7/32"),
        )

    @pytest.mark.parametrize("entry", ["10.1.2.3/16", "example.com", "10.0.0.0/33", ""])
    def test_a_bad_allowlist_entry_is_refused_with_its_text(self, entry: str) -> None:
        with pytest.raises(ValueError, match="allowlist entry"):
            UrlPolicy.for_mode(True, [entry])


class TestParseIpLiteral:
    @pytest.mark.parametrize(
        ("host", "address"),
        [
            ("127.0.0.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("127.0.1", "127.0.0.1"),
            ("2130706433", "127.0.0.1"),
            ("0x7f000001", "127.0.0.1"),
            ("0X7F.1", "127.0.0.1"),
            ("017700000001", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("0x7f.0.0.0x1", "127.0.0.1"),
            ("4294967295", "255.255.255.255"),
            ("[::1]", "::1"),
            ("::ffff:127.0.0.1", "::ffff:127.0.0.1"),
            ("fe80::1%25eth0", "fe80::1"),
            ("[fe80::1%eth0]", "fe80::1"),
        ],
    )
    def test_literal_forms(self, host: str, address: str) -> None:
        assert parse_ip_literal(host) == ipaddress.ip_address(address)

    @pytest.mark.parametrize(
        "host",
        ["example.com", "localhost", "1.2.3.4.5", "127.0.0.1.", "256.0.0.1", "4294967296", "08",
         "0x", "1..2", "::zz", "", "0x7f.example"],
    )  # fmt: skip
    def test_names_are_not_literals(self, host: str) -> None:
        assert parse_ip_literal(host) is None

    @settings(max_examples=1000, database=None, deadline=None)
    @given(st.text(alphabet="0123456789xXabcdefABCDEFg. \t-+", max_size=24))
    def test_ipv4_forms_match_the_c_library_inet_aton(self, text: str) -> None:
        try:
            expected: ipaddress.IPv4Address | None = ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            expected = None
        assert parse_ip_literal(text) == expected

    @settings(max_examples=500, database=None, deadline=None)
    @given(st.lists(st.integers(0, 0xFFFFFFFF), min_size=1, max_size=4), st.data())
    def test_structured_ipv4_forms_match_inet_aton(self, parts: list[int], data: Any) -> None:
        style = data.draw(st.lists(st.sampled_from(["{:d}", "0{:o}", "0x{:x}", "0X{:X}"]),
                                   min_size=len(parts), max_size=len(parts)))  # fmt: skip
        text = ".".join(form.format(part) for form, part in zip(style, parts, strict=True))
        try:
            expected: ipaddress.IPv4Address | None = ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            expected = None
        assert parse_ip_literal(text) == expected


class TestCheckUrlSyntax:
    @pytest.mark.parametrize(("url", "reason"), LIVE_REFUSED)
    def test_live_mode_refuses(self, url: str, reason: str) -> None:
        with refused(reason):
            check_url_syntax(url, LIVE)

    @pytest.mark.parametrize("url", [url for url, _ in LIVE_REFUSED])
    def test_test_mode_allows(self, url: str) -> None:
        check_url_syntax(url, TEST)

    @pytest.mark.parametrize(("url", "reason"), ALWAYS_REFUSED)
    @pytest.mark.parametrize("mode", [LIVE, TEST], ids=["live", "test"])
    def test_refused_in_both_modes(self, url: str, reason: str, mode: UrlPolicy) -> None:
        with refused(reason):
            check_url_syntax(url, mode)

    def test_httpx_rejected_octal_form_still_says_where_it_points(self) -> None:
        # httpx cannot send to 0177.0.0.1, so it is refused in test mode too; live mode says why.
        with refused("loopback"):
            check_url_syntax("https://0177.0.0.1/", LIVE)
        with refused("not a valid URL"):
            check_url_syntax("http://0177.0.0.1/", TEST)

    @pytest.mark.parametrize(
        "url",
        [
            "https://93.184.216.34/",
            "https://93.184.216.34:8443/hooks?x=1",
            "https://1572395042/",  # 93.184.216.34 as one number
            "https://[2606:2800:220:1:248:1893:25c8:1946]/",
            "https://hooks.merchant.example/payrelay",
            "https://HOOKS.Merchant.Example./",
            "https://bücher.example/",
            "https://127.0.0.1.nip.io/",  # a name: its addresses are checked at resolution
        ],
    )
    def test_public_urls_pass_in_live_mode(self, url: str) -> None:
        check_url_syntax(url, LIVE)

    def test_refusal_names_the_host_and_the_address(self) -> None:
        with refused(r"host '0x7f\.1' is 127\.0\.0\.1, a loopback address"):
            check_url_syntax("https://0x7f.1/", LIVE)

    def test_refusal_does_not_echo_the_query(self) -> None:
        with pytest.raises(UnsafeUrl) as caught:
            check_url_syntax("https://10.0.0.1/hook?token=s3cret", LIVE)
        assert "s3cret" not in str(caught.value)

    def test_allowlist_opens_a_range_in_live_mode(self) -> None:
        opened = UrlPolicy.for_mode(True, ["10.1.0.0/16"])
        check_url_syntax("https://10.1.2.3/", opened)
        check_url_syntax("https://[::ffff:10.1.2.3]/", opened)
        check_url_syntax("https://0xa010203/", opened)
        with refused("private"):
            check_url_syntax("https://10.2.0.1/", opened)
        with refused("https"):
            check_url_syntax("http://10.1.2.3/", opened)

    def test_allowlist_never_opens_a_metadata_endpoint(self) -> None:
        opened = UrlPolicy.for_mode(True, ["169.254.0.0/16", "fd00::/8", "0.0.0.0/0"])
        check_url_syntax("https://169.254.1.1/", opened)
        for address in sorted(CLOUD_METADATA, key=str):
            host = f"[{address}]" if address.version == 6 else str(address)
            with refused("metadata"):
                check_url_syntax(f"https://{host}/", opened)


class TestResolveAndCheck:
    async def test_localhost_is_refused_at_resolution(self) -> None:
        # The real resolver: localhost is answered from /etc/hosts, on this machine.
        check_url_syntax("https://localhost/", LIVE)
        with refused("'localhost' resolves to .*loopback"):
            await resolve_and_check("localhost", 443, LIVE)
        assert await resolve_and_check("localhost", 443, TEST)

    async def test_a_public_name_returns_its_addresses(self, fake_dns: Any) -> None:
        fake_dns({HOOK_HOST: [["93.184.216.34", "2606:2800:220:1::1", "93.184.216.34"]]})
        addresses = await resolve_and_check(HOOK_HOST, 443, LIVE)
        assert addresses == ["93.184.216.34", "2606:2800:220:1::1"]

    @pytest.mark.parametrize(
        "answer",
        [
            ["93.184.216.34", "127.0.0.1"],
            ["10.0.0.5", "93.184.216.34"],
            ["93.184.216.34", "::ffff:192.168.0.1"],
            ["2606:2800:220:1::1", "fe80::1"],
            ["93.184.216.34", "169.254.169.254"],
        ],
    )
    async def test_one_forbidden_address_refuses_the_name(
        self, fake_dns: Any, answer: list[str]
    ) -> None:
        fake_dns({HOOK_HOST: [answer]})
        with refused(f"'{HOOK_HOST}' resolves to"):
            await resolve_and_check(HOOK_HOST, 443, LIVE)

    async def test_allowlisted_answers_pass(self, fake_dns: Any) -> None:
        fake_dns({HOOK_HOST: [["10.1.0.7", "93.184.216.34"]]})
        opened = UrlPolicy.for_mode(True, ["10.1.0.0/16"])
        assert await resolve_and_check(HOOK_HOST, 443, opened) == ["10.1.0.7", "93.184.216.34"]

    async def test_an_unknown_name_is_unresolvable(self, fake_dns: Any) -> None:
        fake_dns({})
        with pytest.raises(UnresolvableHost, match="could not be resolved"):
            await resolve_and_check("nowhere.merchant.test", 443, LIVE)

    async def test_literals_are_not_looked_up(self, fake_dns: Any) -> None:
        resolver = fake_dns({})
        assert await resolve_and_check("1572395042", 443, LIVE) == ["93.184.216.34"]
        with refused("loopback"):
            await resolve_and_check("0x7f.1", 443, LIVE)
        assert resolver.calls == []


class TestCheckUrl:
    async def test_syntax_is_refused_before_any_lookup(self, fake_dns: Any) -> None:
        resolver = fake_dns({HOOK_HOST: [["93.184.216.34"]]})
        with refused("https"):
            await check_url(f"http://{HOOK_HOST}/", LIVE)
        assert resolver.calls == []

    async def test_public_name_passes_and_private_answer_is_refused(self, fake_dns: Any) -> None:
        fake_dns({HOOK_HOST: [["93.184.216.34"], ["192.168.0.10"]]})
        await check_url(f"https://{HOOK_HOST}/hook", LIVE)
        with refused("private"):
            await check_url(f"https://{HOOK_HOST}/hook", LIVE)

    async def test_test_mode_makes_no_lookup(self, fake_dns: Any) -> None:
        resolver = fake_dns({})
        await check_url("http://receiver.local:8080/hook", TEST)
        assert resolver.calls == []


class TestGuardedTransport:
    async def test_dials_the_address_it_checked_not_a_rebound_one(
        self, fake_dns: Any, receivers: Receivers
    ) -> None:
        # First answer allowed (127.0.0.2), every later one internal (127.0.0.1). A transport
        # that checked and then let the connection pool resolve again would land on "internal".
        resolver = fake_dns({HOOK_HOST: [["127.0.0.2"], ["127.0.0.1"]]})
        url = f"http://{HOOK_HOST}:{receivers.port}/hook"
        transport = GuardedTransport(policy("127.0.0.2/32", require_https=False))
        async with httpx.AsyncClient(transport=transport, follow_redirects=False) as client:
            response = await client.post(url, json={"id": "evt_1"})
            assert response.json()["receiver"] == "public"
            assert resolver.calls == [HOOK_HOST]
            with refused(r"resolves to 127\.0\.0\.1, a loopback address"):
                await client.post(url, json={"id": "evt_1"})
        assert receivers.public.hits == [{"host": f"{HOOK_HOST}:{receivers.port}", "path": "/hook"}]
        assert receivers.internal.hits == []
        assert response.request.url == httpx.URL(url)

    async def test_a_mixed_answer_is_refused_without_connecting(
        self, fake_dns: Any, receivers: Receivers
    ) -> None:
        fake_dns({HOOK_HOST: [["127.0.0.2", "127.0.0.1"]]})
        transport = GuardedTransport(policy("127.0.0.2/32", require_https=False))
        async with httpx.AsyncClient(transport=transport) as client:
            with refused("127.0.0.1, a loopback address"):
                await client.get(f"http://{HOOK_HOST}:{receivers.port}/")
        assert receivers.public.hits == receivers.internal.hits == []

    async def test_moves_to_the_next_checked_address_when_one_refuses(
        self, fake_dns: Any, receivers: Receivers
    ) -> None:
        fake_dns({HOOK_HOST: [["127.0.0.3", "127.0.0.2"]]})  # nothing listens on 127.0.0.3
        transport = GuardedTransport(policy("127.0.0.2/31", require_https=False))
        async with httpx.AsyncClient(transport=transport) as client:
            response = await client.get(f"http://{HOOK_HOST}:{receivers.port}/")
        assert response.json()["receiver"] == "public"

    async def test_a_redirect_to_an_internal_address_is_not_followed(
        self, fake_dns: Any, receivers: Receivers
    ) -> None:
        fake_dns({HOOK_HOST: [["127.0.0.2"]]})
        inside = f"http://127.0.0.1:{receivers.port}/internal"
        url = f"http://{HOOK_HOST}:{receivers.port}/redirect?to={inside}"
        transport = GuardedTransport(policy("127.0.0.2/32", require_https=False))
        async with httpx.AsyncClient(transport=transport, follow_redirects=False) as client:
            assert (await client.get(url)).status_code == 302
        # Followed by mistake, the redirect comes back through the transport and is refused.
        async with httpx.AsyncClient(transport=transport, follow_redirects=True) as client:
            with refused("loopback"):
                await client.get(url)
        assert [hit["path"] for hit in receivers.public.hits] == ["/redirect", "/redirect"]
        assert receivers.internal.hits == []

    async def test_each_request_is_checked_for_https(self, fake_dns: Any) -> None:
        resolver = fake_dns({HOOK_HOST: [["93.184.216.34"]]})
        async with httpx.AsyncClient(transport=GuardedTransport(LIVE)) as client:
            with refused("https"):
                await client.get(f"http://{HOOK_HOST}/")
        assert resolver.calls == []

    async def test_an_unresolvable_host_is_a_connect_error(self, fake_dns: Any) -> None:
        fake_dns({})
        async with httpx.AsyncClient(transport=GuardedTransport(LIVE)) as client:
            with pytest.raises(httpx.ConnectError, match="could not be resolved"):
                await client.get("https://nowhere.merchant.test/")

    async def test_a_slow_lookup_is_a_connect_timeout(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        async def hang(*_: Any, **__: Any) -> list[Any]:
            await asyncio.sleep(30)
            return []

        monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", hang)
        timeout = httpx.Timeout(5, connect=0.1)
        async with httpx.AsyncClient(transport=GuardedTransport(LIVE), timeout=timeout) as client:
            with pytest.raises(httpx.ConnectTimeout):
                await client.get(f"https://{HOOK_HOST}/")

    async def test_tls_is_verified_for_the_hostname_while_dialling_the_ip(
        self, fake_dns: Any, certificate: tuple[Path, Path]
    ) -> None:
        cert_path, _ = certificate
        sock = socket.socket()
        sock.bind(("127.0.0.2", 0))
        port = sock.getsockname()[1]
        receiver = Receiver("tls")
        fake_dns({HOOK_HOST: [["127.0.0.2"]], "other.merchant.test": [["127.0.0.2"]]})
        trust = ssl.create_default_context(cafile=str(cert_path))
        transport = GuardedTransport(policy("127.0.0.2/32"), verify=trust)
        server = serving(receiver, sock, certificate)
        async with server, httpx.AsyncClient(transport=transport) as client:
            response = await client.get(f"https://{HOOK_HOST}:{port}/hook")
            assert response.json() == {"receiver": "tls", "host": f"{HOOK_HOST}:{port}"}
            # Same IP, a name the certificate does not cover: verification must fail.
            with pytest.raises(httpx.ConnectError, match="certificate verify failed"):
                await client.get(f"https://other.merchant.test:{port}/hook")
        assert [hit["path"] for hit in receiver.hits] == ["/hook"]
