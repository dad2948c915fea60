"""The application `bench_server_floor.py` has gunicorn serve: it answers like the judging API
(a JSON body of a task's size, the security headers our responses carry) and does nothing else.
Its own module, so gunicorn's workers import nothing of the benchmark's."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

# A task as `next` returns it is about this long; the answer's reply is shorter. One size for both.
BODY = json.dumps({"task": 123456, "query": "q" * 120, "document": "d" * 600, "remaining": 9}).encode()
HEADERS = [
    ("Content-Type", "application/json"),
    ("Content-Length", str(len(BODY))),
    ("Allow", "POST, OPTIONS"),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'"),
]


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Reads the request body, as a view would, and answers at once."""
    environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    start_response("200 OK", HEADERS)
    return [BODY]
