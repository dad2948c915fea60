"""Outbound calls (`outbound`): the operator's allow list checked after DNS resolution, a
transport that connects only to the address it checked, redirects not followed by the endpoint
client, and error texts that never repeat a remote page. Only loopback is ever contacted: other
names are resolved by a stub resolver."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from estimation.judges.endpoint import EndpointClient, EndpointSettings, FatalEndpointError
from outbound.rules import Allowlist, OutboundRefused, host_rule, url_form_problem, url_problem
from outbound.transport import CheckedTransport
from tests.chat_server import HTML_PAGE_MARKER, chat_server
from tests.servers import free_port

LOOPBACK = Allowlist.parse("OUTBOUND_ALLOWED_HOSTS", ["127.0.0.0/8", "::1", "localhost"])


def _through(*allowlists: Allowlist) -> Callable[[httpx.Limits], CheckedTransport]:
    """The endpoint client's transport under `allowlists`, as the app builds it."""
    return lambda limits: CheckedTransport(allowlists, limits=limits)


def _resolver(table: dict[str, list[str]]) -> Callable[[str, int], list[str]]:
    """Names from ``table``; an IP address as itself."""
    return lambda host, port: table.get(host, [host] if host[0].isdigit() else [])


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("api.openai.com", "api.openai.com"),
        ("10.0.0.5:8000", "10.0.0.5:8000"),
        ("127.0.0.0/8", "127.0.0.0/8"),
        ("[::1]:8000", "[::1]:8000"),
        ("fd00::/8", "fd00::/8"),
        ("LocalHost.", "localhost"),
    ],
)
def test_it_reads_names_addresses_and_networks_with_ports(text: str, shown: str) -> None:
    assert str(host_rule(text)) == shown


@pytest.mark.parametrize("text", ["a:b", "10.0.0.5:0", "[x]:1", "-bad.example", "a/b", "10.0.0.5:99999"])
def test_it_refuses_malformed_rules(text: str) -> None:
    with pytest.raises(ValueError):
        host_rule(text)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:8799/v1?x=1", "'?' or '#'"),
        ("http://127.0.0.1:8799/v1#top", "'?' or '#'"),
        ("https://[::1", "not a valid URL"),
        ("http://127.0.0.1:8799:80/v1", "not a valid URL"),
        ("http://127.0.0.1:99999/v1", "port"),
        ("http://127.0.0.1:0/v1", "port"),
        ("http://user:pw@127.0.0.1/v1", "user name or password"),
        ("ftp://127.0.0.1/v1", "http:// or https://"),
        ("http:///v1", "no host"),
        ("http://exa mple.com/v1", "without spaces"),
    ],
)
def test_it_refuses_base_urls_that_are_not_plain_http_hosts(url: str, reason: str) -> None:
    assert reason in url_form_problem(url)


def test_every_resolved_address_must_be_in_a_listed_network_unless_the_name_is_listed() -> None:
    resolve = _resolver(
        {
            "inside.test": ["127.0.0.1", "::1"],
            "mixed.test": ["127.0.0.1", "10.0.0.5"],
            "metadata.test": ["169.254.169.254"],
            "localhost": ["127.0.0.1"],
            "mapped.test": ["::ffff:127.0.0.1"],
        }
    )
    assert url_problem("http://inside.test:8000/v1", [LOOPBACK], resolve=resolve) == ""
    assert url_problem("http://mapped.test/v1", [LOOPBACK], resolve=resolve) == ""
    assert "10.0.0.5" in url_problem("http://mixed.test/v1", [LOOPBACK], resolve=resolve)
    refused = url_problem("http://metadata.test/latest", [LOOPBACK], resolve=resolve)
    assert "169.254.169.254" in refused and "OUTBOUND_ALLOWED_HOSTS" in refused
    assert "resolves to no address" in url_problem("http://nowhere.test/v1", [LOOPBACK], resolve=resolve)
    # A listed name is the operator's to trust, on any port or the listed one only.
    named = Allowlist.parse("OUTBOUND_ALLOWED_HOSTS", ["metadata.test:443"])
    assert url_problem("https://metadata.test/v1", [named], resolve=resolve) == ""
    assert "port 80" in url_problem("http://metadata.test/v1", [named], resolve=resolve)
    # Every list must admit the host: the outbound hosts and a key's own.
    key = Allowlist.parse("JUDGE_API_KEY_HOSTS for JUDGE_API_KEY", ["127.0.0.1:8000"])
    assert url_problem("http://inside.test:8000/v1", [LOOPBACK, key], resolve=resolve) != ""  # ::1
    assert "JUDGE_API_KEY_HOSTS" in url_problem("http://127.0.0.1:9/v1", [LOOPBACK, key], resolve=resolve)


def test_the_transport_connects_to_the_checked_address_with_the_urls_host_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name that resolves to loopback for the check and elsewhere afterwards (DNS rebinding)
    is asked at the address checked: it is resolved once per request, and that answer is the
    address connected to (192.0.2.1 is a documentation address: never reached)."""
    real = socket.getaddrinfo
    lookups: list[str] = []

    def rebinding(host: str, port: object, *args: object, **kwargs: object) -> object:
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)  # type: ignore[arg-type]
        lookups.append(host)
        return real("127.0.0.1" if len(lookups) == 1 else "192.0.2.1", port, *args, **kwargs)  # type: ignore[arg-type]

    with chat_server() as (url, state):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        monkeypatch.setattr(socket, "getaddrinfo", rebinding)
        settings = EndpointSettings(
            base_url=f"http://rebind.test:{port}/v1",
            model="m",
            timeout_seconds=2.0,
            max_retries=0,
            transport=_through(LOOPBACK),
        )
        with EndpointClient(settings) as client:
            assert client.ask(("1", "d1"), "Grade [1/d1]").outcome == "label"
            assert lookups == ["rebind.test"]
            assert state.requests[0]["headers"]["Host"] == f"rebind.test:{port}"
            with pytest.raises(FatalEndpointError, match="192.0.2.1.* OUTBOUND_ALLOWED_HOSTS"):
                client.ask(("1", "d2"), "Grade [1/d2]")
    assert len(state.requests) == 1


def test_a_host_outside_the_list_is_never_contacted() -> None:
    with chat_server() as (url, state):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        other = Allowlist.parse("OUTBOUND_ALLOWED_HOSTS", [f"127.0.0.1:{port + 1}"])
        settings = EndpointSettings(base_url=url, model="m", max_retries=0, transport=_through(other))
        with EndpointClient(settings) as client, pytest.raises(FatalEndpointError) as refused:
            client.ask(("1", "d1"), "Grade [1/d1]")
    assert "refused by the outbound-host check" in str(refused.value)
    assert "OUTBOUND_ALLOWED_HOSTS" in str(refused.value) and state.requests == []
    with pytest.raises(OutboundRefused):
        CheckedTransport((other,)).handle_request(httpx.Request("GET", url))


def test_a_redirect_is_not_followed() -> None:
    with chat_server() as (url, state), chat_server() as (elsewhere, target):
        state.scripts = {("1", "d1"): [f"redirect:{elsewhere}/chat/completions"]}
        settings = EndpointSettings(base_url=url, model="m", max_retries=0, transport=_through(LOOPBACK))
        with EndpointClient(settings) as client, pytest.raises(FatalEndpointError) as fatal:
            client.ask(("1", "d1"), "Grade [1/d1]")
    assert "HTTP 302" in str(fatal.value) and target.requests == []


def test_error_texts_name_the_failure_and_never_the_remote_page() -> None:
    with chat_server() as (url, state):
        state.scripts = {("1", "d1"): ["403html"], ("1", "d2"): ["401"]}
        settings = EndpointSettings(base_url=url, model="m", max_retries=0, transport=_through(LOOPBACK))
        with EndpointClient(settings) as client:
            with pytest.raises(FatalEndpointError) as page:
                client.ask(("1", "d1"), "Grade [1/d1]")
            with pytest.raises(FatalEndpointError) as own:
                client.ask(("1", "d2"), "Grade [1/d2]")
    assert str(page.value) == "the endpoint answered HTTP 403"
    assert HTML_PAGE_MARKER not in str(page.value)
    assert str(own.value) == "the endpoint answered HTTP 401: scripted 401"  # its JSON error.message


@pytest.fixture
def not_http() -> Iterator[int]:
    """A loopback port that answers a line of text, as an SSH or database server would."""
    server = socket.create_server(("127.0.0.1", free_port()))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(1.0)
                connection.sendall(b"SSH-2.0-OpenSSH_9.6 secret banner\r\n")
                try:
                    connection.recv(65536)  # the request, then the answer it cannot parse
                    connection.sendall(b"Protocol mismatch.\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def test_transport_failures_are_named_by_kind(not_http: int) -> None:
    closed = free_port()
    texts = []
    for port in (closed, not_http):
        settings = EndpointSettings(
            base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0, transport=_through(LOOPBACK)
        )
        with EndpointClient(settings) as client:
            texts.append(client.ask(("1", "d1"), "Grade [1/d1]").error)
    assert texts == [
        "connection refused",
        "no HTTP answer (the server closed the connection or does not speak HTTP)",
    ]
    assert not any("SSH" in text or "mismatch" in text for text in texts)


@pytest.mark.parametrize(
    ("url", "judge_reason", "webhook_reason"),
    [
        ("http://127.0.0.1:8000/hook?token=1", "the base URL must not contain '?'", ""),
        ("http://127.0.0.1:8000/hook#part", "the base URL must not contain '?' or '#'", "fragment"),
        (
            "http://u:p@127.0.0.1:8000/hook",
            "the base URL must not contain a user",
            "the webhook URL must not",
        ),
        ("ftp://127.0.0.1/hook", "the base URL must start with", "the webhook URL must start with"),
        ("http://192.0.2.1/hook", "OUTBOUND_ALLOWED_HOSTS", "OUTBOUND_ALLOWED_HOSTS"),
    ],
)
def test_each_client_has_its_own_url_form_under_one_policy(
    url: str, judge_reason: str, webhook_reason: str, settings: Any
) -> None:
    """One policy module: an endpoint judge's base URL takes no query, a webhook's may carry the
    receiver's token; both are checked against the same OUTBOUND_ALLOWED_HOSTS, and a refusal
    names the URL as its client calls it."""
    from outbound import ENDPOINT_JUDGE, WEBHOOK, outbound_url_problem

    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.0/8"]
    assert judge_reason in outbound_url_problem(url, client=ENDPOINT_JUDGE) and judge_reason
    webhook = outbound_url_problem(url, client=WEBHOOK)
    assert (webhook_reason in webhook and webhook_reason) if webhook_reason else webhook == ""
    assert ENDPOINT_JUDGE.max_redirects == 0 and WEBHOOK.max_redirects > 0
