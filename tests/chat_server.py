"""A local server that speaks the OpenAI chat-completions protocol, for tests and benchmarks of
endpoint judges: a real HTTP round trip on a free loopback port, with scripted trouble.

Each request's pair is read from a ``[qid/docno]`` marker in the prompt (tests put ``[{qid}/{docno}]``
in their template); its answer is ``##final score: N`` with N from `grade_of` unless a script
for that pair says otherwise, one step per request: ``"429"`` (with ``Retry-After: 0``),
``"500"``, ``"401"``, ``"timeout"`` (no answer for longer than the client waits), ``"malformed"``
(not JSON), ``"text:<answer>"`` (that answer verbatim), and hostile ones: ``"json:<body>"``
(that response body verbatim: bad usage counts, bad log-probabilities), ``"trickle"`` (a valid
answer one byte every ``trickle_seconds``), ``"huge"`` (an answer of ``huge_bytes``),
``"403html"`` (a 403 with an HTML page, as another service's login page would be),
``"redirect:<url>"`` (a 302 to that URL). Every
request is logged with its pair, headers and body, so tests count how often each pair was asked
and what was sent.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.servers import free_port

_MARKER = re.compile(r"\[([^\]/\s]+)/([^\]\s]+)\]")
HTML_PAGE_MARKER = "Sign in to the admin console"
"""Text of the ``403html`` page, which no error text shown to coordinators may repeat."""


def grade_of(qid: str, docno: str, n_grades: int = 4) -> int:
    """The fake model's grade of a pair: stable, spread over the scale."""
    return int(hashlib.sha256(f"{qid}/{docno}".encode()).hexdigest(), 16) % n_grades


@dataclass
class ChatServerState:
    n_grades: int = 4
    delay_seconds: float = 0.0
    hang_seconds: float = 3.0
    trickle_seconds: float = 0.2
    huge_bytes: int = 5_000_000
    scripts: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def asked(self) -> Counter[tuple[str, str]]:
        with self.lock:
            return Counter(request["pair"] for request in self.requests)

    def answered(self) -> Counter[tuple[str, str]]:
        """Pairs whose answer was written back (a 200 with a grade or scripted text)."""
        with self.lock:
            return Counter(request["pair"] for request in self.requests if request.get("answered"))


class _Handler(BaseHTTPRequestHandler):
    server: _ChatServer

    def log_message(self, *_: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        prompt = body["messages"][-1]["content"]
        marker = _MARKER.search(prompt)
        pair = (
            (marker.group(1), marker.group(2))
            if marker
            else ("", hashlib.sha256(prompt.encode()).hexdigest()[:12])
        )
        record = {"pair": pair, "headers": dict(self.headers), "body": body, "path": self.path}
        with state.lock:
            state.requests.append(record)
            script = state.scripts.get(pair)
            step = script.pop(0) if script else "grade"
        if state.delay_seconds:
            time.sleep(state.delay_seconds)
        if step in ("429", "500", "401"):
            self.send_response(int(step))
            if step == "429":
                self.send_header("Retry-After", "0")
            payload = json.dumps({"error": {"message": f"scripted {step}"}}).encode()
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        if step == "timeout":
            time.sleep(state.hang_seconds)
            return
        if step == "403html":
            page = f"<html><body><h1>{HTML_PAGE_MARKER}</h1><form>password</form></body></html>".encode()
            self.send_response(403)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        if step.startswith("redirect:"):
            self.send_response(302)
            self.send_header("Location", step.removeprefix("redirect:"))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if step == "malformed":
            self._send(b"this is not json")
            return
        if step.startswith("json:"):
            self._send(step[5:].encode())
            return
        if step == "huge":
            answer = json.dumps(self._completion(body, "0", state.n_grades)).encode()
            self._send(b" " * state.huge_bytes + answer)
            return
        if step == "trickle":
            self._trickle(json.dumps(self._completion(body, "##final score: 0", state.n_grades)).encode())
            return
        text = step[5:] if step.startswith("text:") else f"##final score: {grade_of(*pair, state.n_grades)}"
        self._send(json.dumps(self._completion(body, text, state.n_grades)).encode())
        with state.lock:
            record["answered"] = True

    def _completion(self, body: dict[str, Any], text: str, n_grades: int) -> dict[str, Any]:
        prompt = body["messages"][-1]["content"]
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }
        digits = re.findall(r"\d", text)
        if body.get("logprobs") and digits:
            stated = int(digits[-1])
            # The stated grade most likely, its neighbours less: probabilities that sum to one.
            weights = [math.exp(-2.0 * abs(g - stated)) for g in range(n_grades)]
            total = sum(weights)
            tops = [{"token": str(g), "logprob": math.log(w / total)} for g, w in enumerate(weights)]
            choice["logprobs"] = {
                "content": [
                    {"token": "##final score: ", "logprob": 0.0, "top_logprobs": []},
                    {
                        "token": str(stated),
                        "logprob": math.log(weights[stated] / total),
                        "top_logprobs": tops,
                    },
                ]
            }
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": body.get("model", ""),
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(prompt.split()),
                "completion_tokens": 5,
                "total_tokens": len(prompt.split()) + 5,
            },
        }

    def _trickle(self, payload: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.flush()
        try:
            for byte in payload:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(self.server.state.trickle_seconds)
        except OSError:  # the client hung up: what a cut is meant to do
            pass

    def _send(self, payload: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, state: ChatServerState) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.state = state


@contextmanager
def chat_server(state: ChatServerState | None = None) -> Iterator[tuple[str, ChatServerState]]:
    """(base URL ending in /v1, the server's state) while the server runs."""
    state = state or ChatServerState()
    server = _ChatServer(free_port(), state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        server.shutdown()
        server.server_close()
