"""Where a server may call out to: the operator's list of hosts and networks, checked after DNS
resolution, and the forms of URL a client may call.

A coordinator types an endpoint's base URL; without a check, the worker would send requests
(and the operator's API key) wherever it points: to a listener of theirs, to the cloud's
metadata address, to services on the worker's own network. So every outbound connection is
checked against an allow list (`Allowlist`) of rules, each a host name, an IP address or a CIDR
network, optionally with a port:

    api.openai.com    10.0.0.5:8000    127.0.0.0/8    [::1]:8000    fd00::/8

A URL's host is allowed when a name rule names it (its addresses are then the operator's to
trust), or when every address it resolves to lies in a network rule; the port must match where
a rule names one. The check is made on the resolved addresses, and `outbound.transport`'s
`CheckedTransport` connects to exactly the address it checked, on every request and every
redirect hop; which client follows how many redirects is `outbound.policy`'s.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import httpx

from estimation.judges.endpoint import ConnectionNotAllowed

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

_NAME = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)(\.(?!-)[a-z0-9_-]{1,63}(?<!-))*$")
_BRACKETED = re.compile(r"^\[(?P<host>[^\]]+)\](?::(?P<port>[^:]*))?$")
DEFAULT_PORTS = {"http": 80, "https": 443}


class OutboundRefused(ConnectionNotAllowed):
    """A connection the allow list does not permit; nothing was sent (the endpoint client
    treats it as fatal: every later request would be refused the same way)."""


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


def url_form_problem(url: str, *, what: str = "base URL", query_allowed: bool = False) -> str:
    """Why ``url`` cannot be called ('' when it can): http or https only, a host and a valid port,
    no user name or password, no fragment, and no query unless `query_allowed` (a judge's base URL
    is extended with a path, and ``?`` would let it reach any path of the host; a webhook's URL
    is called as it is, and some receivers take a token in the query). `what` names the URL in
    the reason ("base URL", "webhook URL")."""
    if not url or any(character.isspace() or not character.isprintable() for character in url):
        return f"the {what} must be one line without spaces"
    if "#" in url or ("?" in url and not query_allowed):
        return f"the {what} must not contain " + (
            "a fragment ('#')" if query_allowed else "'?' or '#' (no query, no fragment)"
        )
    if "\\" in url:
        return f"the {what} must not contain a backslash"
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as error:
        return f"the {what} is not a valid URL ({error})"
    if parsed.scheme not in DEFAULT_PORTS or not url.lower().startswith(("http://", "https://")):
        return f"the {what} must start with http:// or https://"
    if parsed.userinfo or "@" in url.split("//", 1)[1].split("/", 1)[0].split("?", 1)[0]:
        return f"the {what} must not contain a user name or password"
    if not parsed.host:
        return f"the {what} has no host"
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        return f"the {what}'s port must be from 1 to 65535"
    if _address(parsed.host) is None and not _NAME.match(parsed.host.removesuffix(".")):
        return f"the {what}'s host {parsed.host!r} is not a valid host name"
    return ""


def url_problem(
    url: str,
    allowlists: Sequence[Allowlist],
    *,
    resolve: Resolver = system_resolver,
    what: str = "base URL",
    query_allowed: bool = False,
) -> str:
    """Why a request to ``url`` may not be made ('' when it may): its form (`url_form_problem`),
    then its host and port, after resolution, against every allow list."""
    problem = url_form_problem(url, what=what, query_allowed=query_allowed)
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
