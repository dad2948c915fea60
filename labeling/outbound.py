"""The operator's outbound settings as allow lists, for every caller that makes the server connect
somewhere a user typed (endpoint judges today): OUTBOUND_ALLOWED_HOSTS for any connection, and
JUDGE_API_KEY_HOSTS for where each API key variable's key may be sent. The checks themselves
(after DNS resolution, and pinned to the checked address) are `estimation.judges.outbound`'s."""

from __future__ import annotations

from django.conf import settings

from estimation.judges.outbound import Allowlist, Resolver, system_resolver, url_problem

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


def outbound_url_problem(url: str, *, key_variable: str = "", resolve: Resolver = system_resolver) -> str:
    """Why the server may not call ``url`` (with the key in ``key_variable``, if any): '' when it
    may. The URL's form, then its host after resolution against the settings; for forms,
    serializers and services before anything is stored, and again before each run."""
    problem = key_variable_problem(key_variable)
    if problem:
        return problem
    return url_problem(url, outbound_allowlists(key_variable), resolve=resolve)
