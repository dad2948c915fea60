"""The transport every outbound request of the server goes through: it resolves the host itself,
checks every address against the allow lists (`outbound.rules`), connects to exactly the address
it checked (the Host header and the TLS server name stay the URL's host, so DNS rebinding reaches
nothing else), and with a `deadline` bounds every connect, read and write by the wall clock."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import httpcore
import httpx

from outbound.rules import (
    DEFAULT_PORTS,
    Allowlist,
    OutboundRefused,
    Resolver,
    checked_addresses,
    system_resolver,
)


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
