"""The server's outbound policy, for every caller that makes it connect somewhere a user typed:
OUTBOUND_ALLOWED_HOSTS for any connection, JUDGE_API_KEY_HOSTS for where each API key variable's
key may be sent, and per client (`OutboundClient`) the URL form it takes and how many redirects
it follows. The checks themselves (after DNS resolution, pinned to the checked address) are
`outbound.rules`' and `outbound.transport`'s; callers build their transport here
(`checked_transport`) and hand it to their HTTP client."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from django.conf import settings

from outbound.rules import Allowlist, Resolver, system_resolver, url_problem
from outbound.transport import CheckedTransport


@dataclass(frozen=True)
class OutboundClient:
    """A kind of outbound caller: what its URL is called in a refusal, whether the URL may carry
    a query, and how many redirects it follows (each hop checked again by the transport)."""

    what: str
    query_allowed: bool
    max_redirects: int


ENDPOINT_JUDGE = OutboundClient("base URL", query_allowed=False, max_redirects=0)
"""A judge's base URL is extended with a path; a 3xx is a fatal answer (give the final URL)."""
WEBHOOK = OutboundClient("webhook URL", query_allowed=True, max_redirects=3)
"""A receiver may sit behind a redirect; a query may carry the receiver's own token."""

OUTBOUND_SETTING = "OUTBOUND_ALLOWED_HOSTS"
KEY_HOSTS_SETTING = "JUDGE_API_KEY_HOSTS"


def outbound_allowlist() -> Allowlist:
    """The hosts and networks the server may connect to (settings.OUTBOUND_ALLOWED_HOSTS)."""
    return Allowlist.parse(OUTBOUND_SETTING, settings.OUTBOUND_ALLOWED_HOSTS)


def key_variables() -> tuple[str, ...]:
    """The environment variables a judge may take its API key from (those JUDGE_API_KEY_HOSTS binds)."""
    return tuple(settings.JUDGE_API_KEY_HOSTS)


def key_allowlist(variable: str) -> Allowlist:
    """The hosts the key in ``variable`` may be sent to (none for a variable that is not bound)."""
    return Allowlist.parse(
        f"{KEY_HOSTS_SETTING} for {variable}", settings.JUDGE_API_KEY_HOSTS.get(variable, ())
    )


def outbound_allowlists(key_variable: str = "") -> tuple[Allowlist, ...]:
    """Every allow list a request must pass: the outbound hosts, and the key's own hosts when
    the request carries a key."""
    return (outbound_allowlist(), key_allowlist(key_variable)) if key_variable else (outbound_allowlist(),)


def key_variable_problem(variable: str) -> str:
    """Why a judge may not name ``variable`` as its key's source ('' when it may)."""
    if not variable or variable in settings.JUDGE_API_KEY_HOSTS:
        return ""
    allowed = ", ".join(key_variables()) or "none"
    return (
        f"the API key variable {variable!r} is not one the settings allow "
        f"({KEY_HOSTS_SETTING} binds: {allowed})"
    )


def outbound_url_problem(
    url: str,
    *,
    client: OutboundClient = ENDPOINT_JUDGE,
    key_variable: str = "",
    resolve: Resolver = system_resolver,
) -> str:
    """Why the server may not call ``url`` as `client` (with the key in ``key_variable``, if
    any): '' when it may. The URL's form, then its host after resolution against the settings;
    for forms, serializers and services before anything is stored, and again before each call."""
    problem = key_variable_problem(key_variable)
    if problem:
        return problem
    return url_problem(
        url,
        outbound_allowlists(key_variable),
        resolve=resolve,
        what=client.what,
        query_allowed=client.query_allowed,
    )


def checked_transport(
    limits: httpx.Limits | None = None,
    *,
    key_variable: str = "",
    deadline: float | None = None,
    resolve: Resolver = system_resolver,
) -> CheckedTransport:
    """The transport of one outbound client under the operator's settings (the key's own hosts
    too when it carries the key in ``key_variable``); `deadline` bounds the whole exchange."""
    return CheckedTransport(
        outbound_allowlists(key_variable), limits=limits, resolve=resolve, deadline=deadline
    )
