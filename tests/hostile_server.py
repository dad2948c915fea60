"""A raw TCP server on a free loopback port that answers HTTP requests however a test tells it to:
well, badly, slowly, hugely or never. For the clients that must not trust a peer (the release
gate, webhook deliveries)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

# Given the request's head (request line and headers, lower-cased names) and the socket; writes
# whatever it likes to the socket.
Behaviour = Callable[["Request", socket.socket], None]


@dataclass
class Request:
    line: str
    headers: dict[str, str]
    body: bytes


@dataclass
class HostileServer:
    url: str
    requests: list[Request] = field(default_factory=list)


def answer(status: int, body: bytes, *, content_type: str = "application/json", extra: str = "") -> bytes:
    reason = {200: "OK", 201: "Created", 302: "Found", 400: "Bad Request", 502: "Bad Gateway"}.get(
        status, "X"
    )
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        f"Connection: close\r\n{extra}\r\n"
    ).encode() + body


def _read_request(connection: socket.socket) -> Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return Request(lines[0], headers, body)


@contextmanager
def hostile_server(behaviour: Behaviour) -> Iterator[HostileServer]:
    """Serve `behaviour` on 127.0.0.1 until the block ends; every request is recorded."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(32)
    listener.settimeout(0.2)
    server = HostileServer(f"http://127.0.0.1:{listener.getsockname()[1]}")
    stop = threading.Event()

    def serve(connection: socket.socket) -> None:
        with connection:
            try:
                request = _read_request(connection)
                if request is None:
                    return
                server.requests.append(request)
                behaviour(request, connection)
            except OSError:
                pass  # the client hung up, as a careful client does

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def silent(request: Request, connection: socket.socket) -> None:
    """Reads the request, then never answers (until the client goes)."""
    while connection.recv(1):
        pass


def trickling(seconds: float) -> Behaviour:
    """Sends a status line and headers, then one byte of body every `seconds`, for ever."""

    def behave(request: Request, connection: socket.socket) -> None:
        connection.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        )
        while True:
            connection.sendall(b" ")
            time.sleep(seconds)

    return behave


def huge(megabytes: int) -> Behaviour:
    """A 200 answer announcing `megabytes` MB of JSON-looking body and sending it as fast as read."""

    def behave(request: Request, connection: socket.socket) -> None:
        size = megabytes << 20
        connection.sendall(
            f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n".encode()
        )
        chunk = b" " * (1 << 20)
        for _ in range(megabytes):
            connection.sendall(chunk)

    return behave
