"""A client for judges behind an OpenAI-compatible chat-completions endpoint: hosted APIs and the
local model servers that speak the same protocol (vLLM, Ollama, llama.cpp's server,
text-generation-inference). The app's judge runs and ``python -m estimation judge`` both use it.

One request per (topic, document) pair at temperature 0. Requests run on a bounded thread pool
(``concurrency``) behind a requests-per-minute limiter; 429, 5xx, timeouts and dropped
connections are retried with exponential backoff and full jitter (a 429's ``Retry-After`` is
honoured when it is longer); other 4xx answers (a wrong key, an unknown model) are fatal, since
every later request would fail the same way. The API key is sent in the ``Authorization`` header
and nowhere else: it is never part of an answer, an error message or a repr.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import httpx

from estimation.judges.prompts import ParsedAnswer, grade_probabilities, parse_grade

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_BACKOFF_SECONDS = 60.0


@dataclass(frozen=True)
class EndpointSettings:
    """Where and how to ask. ``api_key`` is the key itself (read by the caller from an
    environment variable); it is left out of the repr."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    n_grades: int = 4
    with_probabilities: bool = False
    concurrency: int = 8
    requests_per_minute: float = 0.0
    timeout_seconds: float = 60.0
    max_retries: int = 5
    max_tokens: int = 64
    backoff_seconds: float = 1.0

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else f"{base}/chat/completions"


@dataclass(frozen=True)
class EndpointAnswer:
    """One pair's outcome: a grade (with probabilities when asked and given), a refusal, or an
    error after the retries; tokens and seconds as reported and measured."""

    key: Any
    grade: int | None = None
    probabilities: list[float] | None = None
    refusal: str = ""
    error: str = ""
    text: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    attempts: int = 1

    @property
    def outcome(self) -> str:
        return "label" if self.grade is not None else "refusal" if self.refusal else "error"


class FatalEndpointError(RuntimeError):
    """An answer no retry can fix (401, 403, 404, 400 ...): the run stops with this message."""


class RateLimiter:
    """At most ``per_minute`` starts per minute, evenly spaced, across threads (0: no limit)."""

    def __init__(self, per_minute: float) -> None:
        self.interval = 60.0 / per_minute if per_minute > 0 else 0.0
        self._next = time.monotonic()
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            time.sleep(start - now)


class EndpointClient:
    """Ask an endpoint to grade prompts; thread-safe (one pooled HTTP client)."""

    def __init__(self, settings: EndpointSettings, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings
        self.limiter = RateLimiter(settings.requests_per_minute)
        self._sleep = sleep
        headers = {"Content-Type": "application/json"}
        if settings.api_key:
            headers["Authorization"] = f"Bearer {settings.api_key}"
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(settings.timeout_seconds),
            limits=httpx.Limits(max_connections=max(1, settings.concurrency)),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> EndpointClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def body(self, prompt: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
            "max_tokens": self.settings.max_tokens,
        }
        if self.settings.with_probabilities:
            body["logprobs"] = True
            body["top_logprobs"] = min(20, max(5, self.settings.n_grades))
        return body

    def ask(self, key: Any, prompt: str) -> EndpointAnswer:
        """One pair, retried as the module says; FatalEndpointError for a non-retryable status."""
        started = time.monotonic()
        last_error = ""
        for attempt in range(1, self.settings.max_retries + 2):
            self.limiter.wait()
            retry_after = 0.0
            try:
                response = self._http.post(self.settings.url, json=self.body(prompt))
            except httpx.TimeoutException:
                last_error = f"timed out after {self.settings.timeout_seconds:g} s"
            except httpx.TransportError as error:
                last_error = f"connection failed: {type(error).__name__}"
            else:
                if response.status_code == 200:
                    return self._answer(key, response, started, attempt)
                snippet = response.text[:200].replace("\n", " ")
                last_error = f"HTTP {response.status_code}: {snippet}"
                if response.status_code not in RETRY_STATUS:
                    raise FatalEndpointError(f"the endpoint answered {last_error}")
                retry_after = _retry_after(response.headers.get("Retry-After"))
            if attempt > self.settings.max_retries:
                break
            backoff = min(MAX_BACKOFF_SECONDS, self.settings.backoff_seconds * 2 ** (attempt - 1))
            self._sleep(max(retry_after, random.uniform(0, backoff)))
        return EndpointAnswer(
            key, error=last_error, seconds=time.monotonic() - started, attempts=self.settings.max_retries + 1
        )

    def _answer(self, key: Any, response: httpx.Response, started: float, attempt: int) -> EndpointAnswer:
        seconds = time.monotonic() - started
        try:
            payload = response.json()
            choice = payload["choices"][0]
            text = choice["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            return EndpointAnswer(
                key,
                refusal="malformed response (no choices[0].message.content)",
                seconds=seconds,
                attempts=attempt,
            )
        usage = payload.get("usage") or {}
        tokens_in = _count(usage.get("prompt_tokens"))
        tokens_out = _count(usage.get("completion_tokens"))
        parsed: ParsedAnswer = parse_grade(text, n_grades=self.settings.n_grades)
        probabilities = None
        if parsed.grade is not None and self.settings.with_probabilities:
            probabilities = grade_probabilities(
                _token_alternatives(choice.get("logprobs")), parsed.grade, n_grades=self.settings.n_grades
            )
        return EndpointAnswer(
            key,
            grade=parsed.grade,
            probabilities=probabilities,
            refusal=parsed.refusal,
            text=text[:2000],
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            seconds=seconds,
            attempts=attempt,
        )

    def ask_many(
        self,
        prompts: Iterable[tuple[Any, str]],
        *,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> Iterator[EndpointAnswer]:
        """Answers as they complete, at most ``concurrency`` in flight; after ``should_stop``
        turns true no new request starts and the ones in flight are still returned. A fatal
        answer stops the submission and is raised once the requests in flight are back."""
        pending: set[Future[EndpointAnswer]] = set()
        source = iter(prompts)
        fatal: FatalEndpointError | None = None
        width = max(1, self.settings.concurrency)
        with ThreadPoolExecutor(max_workers=width, thread_name_prefix="judge") as pool:
            while True:
                while fatal is None and len(pending) < width and not should_stop():
                    item = next(source, None)
                    if item is None:
                        break
                    pending.add(pool.submit(self.ask, *item))
                if not pending:
                    break
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        yield future.result()
                    except FatalEndpointError as error:
                        fatal = fatal or error
        if fatal is not None:
            raise fatal


def _retry_after(value: str | None) -> float:
    """Seconds from a Retry-After header (a number; an HTTP date counts as no hint), capped."""
    try:
        return min(MAX_BACKOFF_SECONDS, max(0.0, float(value))) if value else 0.0
    except ValueError:
        return 0.0


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and value >= 0 else 0


def _token_alternatives(logprobs: Any) -> list[dict[str, float]]:
    """Per answer token, {token: logprob} of its top alternatives (OpenAI's chat format)."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        return []
    tokens = []
    for entry in logprobs["content"]:
        if not isinstance(entry, dict):
            continue
        alternatives = {
            str(top.get("token", "")): float(top.get("logprob", float("-inf")))
            for top in entry.get("top_logprobs") or []
            if isinstance(top, dict)
        }
        if entry.get("token") is not None and entry.get("logprob") is not None:
            alternatives.setdefault(str(entry["token"]), float(entry["logprob"]))
        tokens.append(alternatives)
    return tokens


def answer_cost(answer: EndpointAnswer, *, per_1k_in: float, per_1k_out: float) -> float:
    """The price of one answer from its token counts."""
    return answer.tokens_in / 1000 * per_1k_in + answer.tokens_out / 1000 * per_1k_out
