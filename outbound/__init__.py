"""The server's outbound calls (endpoint judges, webhooks): the operator's allow lists checked after
DNS resolution (`rules`), a transport pinned to the checked address with a wall-clock deadline
(`transport`), and the policy per client read from the settings (`policy`). The numeric core's
endpoint client takes the transport built here; it owns no policy."""

from outbound.policy import (
    ENDPOINT_JUDGE,
    WEBHOOK,
    OutboundClient,
    checked_transport,
    key_variable_problem,
    key_variables,
    outbound_allowlists,
    outbound_url_problem,
)
from outbound.rules import DEFAULT_PORTS, Allowlist, OutboundRefused, Resolver, system_resolver
from outbound.transport import CheckedTransport

__all__ = [
    "DEFAULT_PORTS",
    "ENDPOINT_JUDGE",
    "WEBHOOK",
    "Allowlist",
    "CheckedTransport",
    "OutboundClient",
    "OutboundRefused",
    "Resolver",
    "checked_transport",
    "key_variable_problem",
    "key_variables",
    "outbound_allowlists",
    "outbound_url_problem",
    "system_resolver",
]
