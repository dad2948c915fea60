"""Where a server may call out to: the operator's list of hosts and networks, checked after DNS
resolution, and an httpx transport that connects only to the address it checked.

A coordinator types an endpoint's base URL; without a check, the worker would send requests
(and the operator's API key) wherever it points: to a listener of theirs, to the cloud's
metadata address, to services on the worker's own network. So every outbound connection is
checked against an allow list (`Allowlist`) of rules, each a host name, an IP address or a CIDR
network, optionally with a port:

    api.openai.com    10.0.0.5:8000    127.0.0.0/8    [::1]:8000    fd00::/8

A URL's host is allowed when a name rule names it (its addresses are then the operator's to
trust), or when every address it resolves to lies in a network rule; the port must match where
a rule names one. The check is made on the resolved addresses, and `CheckedTransport` connects
to exactly the address it checked (the Host header and the TLS server name stay the URL's host),
so a name that resolves to an allowed address for the check and to another one for the
connection (DNS rebinding) reaches nothing else. The endpoint judge's client follows no redirect;
webhook deliveries follow a few, and each hop goes through the transport and is checked again.
A `deadline` bounds every connect, read and write of a transport by the wall clock.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

_NAME = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)(\.(?!-)[a-z0-9_-]{1,63}(?<!-))*$")
_BRACKETED = re.compile(r"^\[(?P<host>[^\]]+)\](?::(?P<port>[^:]*))?$")
DEFAULT_PORTS = {"http": 80, "https": 443}


class OutboundRefused(Exception):
    """A connection the allow list does not permit; nothing was sent."""


@dataclass(frozen=True)
class HostRule:
    """One entry of an allow list: a host name or a network, with a port or any port."""

    name: str = ""
    network: IpNetwork | None = None
    port: int | None = None

    def __str__(self) -> str:
        host = self.name
        if self.network is not None:
            single = self.network.num_addresses == 1
            host = str(self.network.network_address) if single else str(self.network)
            if self.port is not None and self.network.version == 6:
                host = f"[{host}]"
        return host if self.port is None else f"{host}:{self.port}"

    def admits_port(self, port: int) -> bool:
        return self.port is None or self.port == port


def host_rule(text: str) -> HostRule:
    """A rule from its text (``name``, ``address``, ``network/len``, each with an optional
    ``:port``; an IPv6 address or network with a port in brackets); ValueError if malformed."""
    entry = text.strip().lower()
    port_text: str | None = None
    bracketed = _BRACKETED.match(entry)
    if bracketed:
        host, port_text = bracketed.group("host"), bracketed.group("port")
    elif entry.count(":") == 1:
        host, port_text = entry.split(":")
    else:
        host = entry  # a name, an IPv4 address or network, or an IPv6 one without a port
    port = None
    if port_text is not None:
        if not port_text.isascii() or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
        port = int(port_text)
    try:
        return HostRule(network=ipaddress.ip_network(host, strict=False), port=port)
    except ValueError:
        pass
    if bracketed or ":" in host or "/" in host or not _NAME.match(host.removesuffix(".")):
        raise ValueError(
            f"{text!r} is neither a host name nor an IP address or network (e.g. api.openai.com, "
            "10.0.0.5:8000, 127.0.0.0/8, [::1]:8000)"
        )
    return HostRule(name=host.removesuffix("."), port=port)


@dataclass(frozen=True)
class Allowlist:
    """Rules and the name of the setting they come from (refusals name it)."""

    setting: str
    rules: tuple[HostRule, ...] = ()

    @classmethod
    def parse(cls, setting: str, entries: Iterable[str]) -> Allowlist:
        return cls(setting, tuple(host_rule(entry) for entry in entries if entry.strip()))

    def __str__(self) -> str:
        return ", ".join(map(str, self.rules)) or "nothing"

    def problem(self, host: str, port: int, addresses: Sequence[str]) -> str:
        """Why a connection to ``host`` (resolved to ``addresses``) on ``port`` is not allowed
        ('' when it is)."""
        name = host.lower().removesuffix(".")
        if any(rule.name == name and rule.admits_port(port) for rule in self.rules):
            return ""
        if not addresses:
            return f"{host} resolves to no address"
        for text in addresses:
            address = _address(text)
            if address is None or not any(
                rule.network is not None
                and rule.network.version == address.version
                and address in rule.network
                and rule.admits_port(port)
                for rule in self.rules
            ):
                shown = host if text == host else f"{host} ({text})"
                return f"{shown} port {port} is not allowed by {self.setting} ({self})"
        return ""


def _address(text: str) -> IpAddress | None:
    """An address as getaddrinfo gives it; an IPv4-mapped IPv6 address as the IPv4 one."""
    try:
        address = ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses a TCP connection to ``host`` would try, in order, without duplicates."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def base_url_problem(url: str) -> str:
    """Why ``url`` cannot be an endpoint's base URL ('' when it can): http or https only, a host
    and a valid port, no user name or password, no query and no fragment (a base URL is
    extended with a path, and ``?``/``#`` would let it reach any path of the host)."""
    if not url or any(character.isspace() or not character.isprintable() for character in url):
        return "the base URL must be one line without spaces"
    if "?" in url or "#" in url:
        return "the base URL must not contain '?' or '#' (no query, no fragment)"
    if "\\" in url:
        return "the base URL must not contain a backslash"
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as error:
        return f"the base URL is not a valid URL ({error})"
    if parsed.scheme not in DEFAULT_PORTS or not url.lower().startswith(("http://", "https://")):
        return "the base URL must start with http:// or https://"
    if parsed.userinfo or "@" in url.split("//", 1)[1].split("/", 1)[0]:
        return "the base URL must not contain a user name or password (the key comes from the worker)"
    if not parsed.host:
        return "the base URL has no host"
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        return "the base URL's port must be from 1 to 65535"
    if _address(parsed.host) is None and not _NAME.match(parsed.host.removesuffix(".")):
        return f"the base URL's host {parsed.host!r} is not a valid host name"
    return ""


def url_problem(url: str, allowlists: Sequence[Allowlist], *, resolve: Resolver = system_resolver) -> str:
    """Why a request to ``url`` may not be made ('' when it may): its form, then its host and
    port, after resolution, against every allow list."""
    problem = base_url_problem(url)
    if problem:
        return problem
    parsed = httpx.URL(url)
    port = parsed.port or DEFAULT_PORTS[parsed.scheme]
    try:
        checked_addresses(parsed.host, port, allowlists, resolve=resolve)
    except OutboundRefused as refusal:
        return str(refusal)
    return ""


def checked_addresses(
    host: str, port: int, allowlists: Sequence[Allowlist], *, resolve: Resolver = system_resolver
) -> list[str]:
    """The addresses of ``host`` to connect to, once every allow list admits all of them;
    OutboundRefused otherwise."""
    addresses = resolve(host, port)
    for allowlist in allowlists:
        problem = allowlist.problem(host, port, addresses)
        if problem:
            raise OutboundRefused(problem)
    if not addresses:
        raise OutboundRefused(f"{host} resolves to no address")
    return addresses


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write waits no longer than what is left of a wall-clock
    deadline: socket timeouts bound one read each, so a peer that trickles a byte every few
    seconds would hold a reader for ever without it."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner = inner
        self._deadline = deadline

    def _left(self, timeout: float | None, error: type[Exception]) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise error("the attempt's deadline passed")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        tls = self._inner.start_tls(
            ssl_context, server_hostname, self._left(timeout, httpcore.ConnectTimeout)
        )
        return _DeadlineStream(tls, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.SyncBackend):
    def __init__(self, deadline: float) -> None:
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise httpcore.ConnectTimeout("the attempt's deadline passed")
        wait = left if timeout is None else min(timeout, left)
        stream = super().connect_tcp(host, port, wait, local_address, socket_options)
        return _DeadlineStream(stream, self._deadline)


class CheckedTransport(httpx.BaseTransport):
    """An httpx transport that resolves each request's host itself, checks every address against
    the allow lists, and connects to a checked address (the next one if it refuses), keeping the
    Host header and the TLS server name of the URL. No proxy from the environment is used. With
    `deadline` (a `time.monotonic()` instant) no connect, read or write waits past it, whatever
    the peer does: the whole exchange ends by then (httpx.TimeoutException)."""

    def __init__(
        self,
        allowlists: Sequence[Allowlist],
        *,
        limits: httpx.Limits | None = None,
        resolve: Resolver = system_resolver,
        deadline: float | None = None,
    ) -> None:
        self.allowlists = tuple(allowlists)
        self._resolve = resolve
        self._inner = httpx.HTTPTransport(limits=limits or httpx.Limits(), trust_env=False)
        if deadline is not None:
            # httpx builds its httpcore pool without a way to pass a network backend; the pool
            # reads it from this attribute for every connection (httpcore 1.0, pinned).
            self._inner._pool._network_backend = _DeadlineBackend(deadline)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in DEFAULT_PORTS or not url.host:
            raise OutboundRefused(f"only http and https URLs may be requested, not {url.scheme}:")
        port = url.port or DEFAULT_PORTS[url.scheme]
        addresses = checked_addresses(url.host, port, self.allowlists, resolve=self._resolve)
        failure: httpx.ConnectError | None = None
        for address in addresses:
            pinned = httpx.Request(
                request.method,
                url.copy_with(host=address),
                headers=request.headers,  # the Host header of the original URL
                stream=request.stream,
                extensions={**request.extensions, "sni_hostname": url.host},
            )
            try:
                return self._inner.handle_request(pinned)
            except httpx.ConnectError as error:  # nothing was sent: the next address may answer
                failure = error
        assert failure is not None
        raise failure

    def close(self) -> None:
        self._inner.close()
