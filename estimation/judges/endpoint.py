"""A client for judges behind an OpenAI-compatible chat-completions endpoint: hosted APIs and the
local model servers that speak the same protocol (vLLM, Ollama, llama.cpp's server,
text-generation-inference). The app's judge runs and ``python -m estimation judge`` both use it.

One request per (topic, document) pair at temperature 0. Requests run on a bounded thread pool
(``concurrency``) behind a requests-per-minute limiter; 429, 5xx, timeouts and dropped
connections are retried with exponential backoff and full jitter (a 429's ``Retry-After`` is
honoured when it is longer); other 4xx answers (a wrong key, an unknown model) are fatal, since
every later request would fail the same way. The API key is sent in the ``Authorization`` header
and nowhere else: it is never part of an answer, an error message or a repr.

The caller owns the outbound policy: it hands a ``transport`` factory (the app's is
`outbound.checked_transport`: only hosts the operator allowed are contacted); a
`ConnectionNotAllowed` the transport raises is fatal, and redirects are never followed (a 3xx is
a fatal answer). Error texts say
what kind of failure happened and never repeat the remote body beyond the endpoint's own JSON
``error.message``: a coordinator must not read other services' pages through a judge run.

Time and memory are bounded whatever the endpoint does: a request has one deadline for all of
it (a server trickling a byte every few seconds is cut there, not reset at every read), the
answer is read as a stream and given up past ``answer_max_bytes``, and a caller's ``deadline``
bounds the limiter's waits, the retries' backoff and the requests in flight of ``ask_many``.
Every value taken from an answer is checked: token counts are whole numbers in range,
log-probabilities finite and at most 0, grades and grade tokens ASCII digits.
"""

from __future__ import annotations

import math
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import httpx

from estimation.judges.answers import JudgeAnswer
from estimation.judges.prompts import ParsedAnswer, grade_probabilities, parse_grade

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_BACKOFF_SECONDS = 60.0
MAX_REPORTED_TOKENS = 10_000_000
"""More tokens than any model takes in one request: a usage count above it is not believed."""
STOP_CHECK_SECONDS = 0.25
"""How often `ask_many` asks its caller whether to stop while requests are in flight."""
ERROR_MESSAGE_CHARS = 200
"""The most of an endpoint's own JSON ``error.message`` an error text repeats."""


class ConnectionNotAllowed(Exception):
    """Raised by a caller's transport for a connection its policy refuses (nothing was sent):
    fatal, since every later request would be refused the same way."""


@dataclass(frozen=True)
class EndpointSettings:
    """Where and how to ask. ``api_key`` is the key itself (read by the caller from an
    environment variable); it is left out of the repr. ``transport``: builds the HTTP transport
    from the connection limits (the app's checks every connection against the operator's
    hosts); None, httpx's own (the command line, where the operator types the URL)."""

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
    answer_max_bytes: int = 2_000_000
    transport: Callable[[httpx.Limits], httpx.BaseTransport] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else f"{base}/chat/completions"


class FatalEndpointError(RuntimeError):
    """An answer no retry can fix (401, 403, 404, 400 ...): the run stops with this message."""


class _StepOver(Exception):
    """The caller's deadline came before the request's own: the request is given back unasked."""


class AnswerTooLarge(Exception):
    """The answer passed ``answer_max_bytes``; reading stopped there."""


class RateLimiter:
    """At most ``per_minute`` starts per minute, evenly spaced, across threads (0: no limit)."""

    def __init__(self, per_minute: float) -> None:
        self.interval = 60.0 / per_minute if per_minute > 0 and math.isfinite(per_minute) else 0.0
        self._next = time.monotonic()
        self._lock = threading.Lock()

    def wait(self, deadline: float | None = None, stop: threading.Event | None = None) -> bool:
        """Wait for the next start; False, without waiting, when that start comes after
        `deadline`, or as soon as `stop` is set (the start is then not taken)."""
        if not self.interval:
            return not (stop is not None and stop.is_set())
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            if deadline is not None and start > deadline:
                return False
            self._next = start + self.interval
        if start <= now:
            return not (stop is not None and stop.is_set())
        if stop is None:
            time.sleep(start - now)
            return True
        return not stop.wait(start - now)


class EndpointClient:
    """Ask an endpoint to grade prompts; thread-safe (one pooled HTTP client)."""

    def __init__(self, settings: EndpointSettings, *, sleep: Callable[[float], None] | None = None) -> None:
        self.settings = settings
        self.limiter = RateLimiter(settings.requests_per_minute)
        # Set by `ask_many`: no new pair starts (stopping), nothing waits any more (cancelled).
        self._stopping = threading.Event()
        self._cancelled = threading.Event()
        self._sleep = sleep or self._cancelled.wait
        headers = {"Content-Type": "application/json"}
        if settings.api_key:
            headers["Authorization"] = f"Bearer {settings.api_key}"
        limits = httpx.Limits(max_connections=max(1, settings.concurrency))
        transport = settings.transport(limits) if settings.transport is not None else None
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(settings.timeout_seconds),
            limits=limits,
            transport=transport,
            follow_redirects=False,
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

    def ask(self, key: Any, prompt: str, deadline: float | None = None) -> JudgeAnswer:
        """One pair, retried as the module says; FatalEndpointError for a non-retryable status.
        Nothing waits past `deadline` (monotonic): a pair cut before its first attempt came back
        returns with ``finished`` False (ask it again); one whose attempts failed until then is
        an error (it counts towards the failures in a row)."""
        started = time.monotonic()
        last_error = ""
        for attempt in range(1, self.settings.max_retries + 2):
            # A pair not yet sent gives way to a stop; a retry waits for its turn until the deadline.
            if not self.limiter.wait(deadline, self._stopping if attempt == 1 else self._cancelled):
                return self._cut(key, started, attempt - 1, last_error)
            retry_after = 0.0
            try:
                response = self._post(prompt, deadline)
            except _StepOver:
                return self._cut(key, started, attempt, last_error)
            except AnswerTooLarge:
                return self._too_large(key, prompt, started, attempt)
            except ConnectionNotAllowed as refusal:
                raise FatalEndpointError(f"refused by the outbound-host check: {refusal}") from None
            except httpx.TimeoutException:
                last_error = f"timed out after {self.settings.timeout_seconds:g} s"
            except httpx.TransportError as error:
                last_error = transport_failure(error)
            else:
                if response.status_code == 200:
                    return self._answer(key, response, started, attempt, len(prompt))
                last_error = status_failure(response)
                if response.status_code not in RETRY_STATUS:
                    raise FatalEndpointError(f"the endpoint answered {last_error}")
                retry_after = _retry_after(response.headers.get("Retry-After"))
            if attempt > self.settings.max_retries:
                break
            backoff = min(MAX_BACKOFF_SECONDS, self.settings.backoff_seconds * 2 ** (attempt - 1))
            pause = max(retry_after, random.uniform(0, backoff))
            if deadline is not None and time.monotonic() + pause >= deadline:
                return self._cut(key, started, attempt, last_error)
            self._sleep(pause)
            if self._cancelled.is_set():
                return self._cut(key, started, attempt, "")
        return JudgeAnswer(
            key, error=last_error, seconds=time.monotonic() - started, attempts=self.settings.max_retries + 1
        )

    def _post(self, prompt: str, deadline: float | None) -> httpx.Response:
        """POST the prompt and read the whole answer by the request's deadline (the caller's if
        sooner: `_StepOver`), at most ``answer_max_bytes`` of it (`AnswerTooLarge`)."""
        own_deadline = time.monotonic() + self.settings.timeout_seconds
        cut = own_deadline if deadline is None else min(own_deadline, deadline)
        remaining = cut - time.monotonic()
        if remaining <= 0:
            raise _StepOver
        try:
            with self._http.stream(
                "POST", self.settings.url, json=self.body(prompt), timeout=httpx.Timeout(remaining)
            ) as response:
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > self.settings.answer_max_bytes:
                        raise AnswerTooLarge
                    if time.monotonic() > cut:
                        raise httpx.ReadTimeout("the request's deadline passed")
        except httpx.TimeoutException:
            if cut < own_deadline:
                raise _StepOver from None
            raise
        except httpx.InvalidURL:
            raise FatalEndpointError("the base URL is not a valid URL") from None
        # The body as read (decoded): a response that no longer claims an encoding or a length.
        headers = {
            name: value
            for name, value in response.headers.items()
            if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        }
        return httpx.Response(response.status_code, headers=headers, content=bytes(body))

    def _cut(self, key: Any, started: float, attempts: int, last_error: str) -> JudgeAnswer:
        """A pair cut by the caller: an error if its attempts so far failed, else unfinished."""
        seconds = time.monotonic() - started
        if last_error:
            return JudgeAnswer(key, error=last_error, seconds=seconds, attempts=attempts)
        return JudgeAnswer(key, error="not finished", seconds=seconds, attempts=attempts, finished=False)

    def _billed_at_most(self, prompt_chars: int) -> tuple[int, int]:
        """Token counts to charge when the endpoint's own are missing or not believable: the
        most it may bill (no more tokens in than characters; max_tokens out), so a cost cap
        still holds."""
        return prompt_chars, self.settings.max_tokens

    def _too_large(self, key: Any, prompt: str, started: float, attempt: int) -> JudgeAnswer:
        tokens_in, tokens_out = self._billed_at_most(len(prompt))
        return JudgeAnswer(
            key,
            refusal=f"the answer is longer than {self.settings.answer_max_bytes:,} bytes (not read further)",
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            seconds=time.monotonic() - started,
            attempts=attempt,
        )

    def _answer(
        self, key: Any, response: httpx.Response, started: float, attempt: int, prompt_chars: int = 0
    ) -> JudgeAnswer:
        seconds = time.monotonic() - started
        try:
            payload = response.json()
            choice = payload["choices"][0]
            text = choice["message"]["content"] or ""
            if not isinstance(text, str):
                raise TypeError("content is not text")
        except (ValueError, KeyError, IndexError, TypeError):
            return JudgeAnswer(
                key,
                refusal="malformed response (no choices[0].message.content)",
                seconds=seconds,
                attempts=attempt,
            )
        usage = payload.get("usage") or {}
        tokens_in = _count(usage.get("prompt_tokens")) if isinstance(usage, dict) else None
        tokens_out = _count(usage.get("completion_tokens")) if isinstance(usage, dict) else None
        if tokens_in is None or tokens_out is None:
            billed_in, billed_out = self._billed_at_most(prompt_chars)
            return JudgeAnswer(
                key,
                refusal="malformed response (usage is not token counts in range)",
                text=text[:2000],
                tokens_in=billed_in,
                tokens_out=billed_out,
                seconds=seconds,
                attempts=attempt,
            )
        parsed: ParsedAnswer = parse_grade(text, n_grades=self.settings.n_grades)
        probabilities = None
        if parsed.grade is not None and self.settings.with_probabilities:
            probabilities = grade_probabilities(
                _token_alternatives(choice.get("logprobs")), parsed.grade, n_grades=self.settings.n_grades
            )
        return JudgeAnswer(
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
        should_cancel: Callable[[], bool] = lambda: False,
        deadline: float | None = None,
    ) -> Iterator[JudgeAnswer]:
        """Answers as they complete, at most ``concurrency`` in flight; after ``should_stop``
        turns true no new pair starts and the ones in flight are still returned (``finished``
        False for a pair cut before its first answer); after ``should_cancel`` no wait (rate
        limiter, backoff) goes on either. Nothing runs past `deadline` (monotonic). A fatal
        answer stops the submission and is raised once the requests in flight are back."""
        pending: set[Future[JudgeAnswer]] = set()
        source = iter(prompts)
        fatal: FatalEndpointError | None = None
        width = max(1, self.settings.concurrency)
        self._stopping.clear()
        self._cancelled.clear()
        asked_to_stop = self._stop_asked(should_stop, should_cancel)
        with ThreadPoolExecutor(max_workers=width, thread_name_prefix="judge") as pool:
            while True:
                while fatal is None and len(pending) < width and not asked_to_stop():
                    item = next(source, None)
                    if item is None:
                        break
                    pending.add(pool.submit(self.ask, *item, deadline))
                if not pending:
                    break
                done, pending = wait(pending, timeout=STOP_CHECK_SECONDS, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        yield future.result()
                    except FatalEndpointError as error:
                        fatal = fatal or error
                        self._cancelled.set()
                if pending and not done:
                    asked_to_stop()
        if fatal is not None:
            raise fatal

    def _stop_asked(
        self, should_stop: Callable[[], bool], should_cancel: Callable[[], bool]
    ) -> Callable[[], bool]:
        """Whether to start no more pairs, asking the caller and passing the answer on to the
        threads: a cancel also ends their waits."""

        def asked() -> bool:
            if not self._cancelled.is_set() and should_cancel():
                self._cancelled.set()
            if self._cancelled.is_set() or should_stop():
                self._stopping.set()
            return self._stopping.is_set()

        return asked


def transport_failure(error: httpx.TransportError) -> str:
    """What kind of failure a request without an answer met, in words (no remote text)."""
    causes: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and len(causes) < 10:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    if isinstance(error, httpx.ConnectError):
        if any(isinstance(found, ssl.SSLError) for found in causes):
            return "connection failed: TLS handshake failed"
        if any(isinstance(found, ConnectionRefusedError) for found in causes):
            return "connection refused"
        if any(isinstance(found, socket.gaierror) for found in causes):
            return "connection failed: the host name does not resolve"
        return "connection failed: host unreachable"
    if isinstance(error, httpx.ProtocolError):
        return "no HTTP answer (the server closed the connection or does not speak HTTP)"
    return "connection dropped"


def status_failure(response: httpx.Response) -> str:
    """A non-200 answer in words: its status and the endpoint's own JSON ``error.message``
    (truncated), nothing else of the body."""
    text = f"HTTP {response.status_code}"
    if 300 <= response.status_code < 400:
        return f"{text} (a redirect; redirects are not followed: give the final URL)"
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError, IndexError):
        return text
    if not isinstance(message, str) or not message.strip():
        return text
    shown = "".join(c if c.isprintable() else " " for c in message.strip())
    if len(shown) > ERROR_MESSAGE_CHARS:
        shown = shown[: ERROR_MESSAGE_CHARS - 1] + "…"
    return f"{text}: {shown}"


def _retry_after(value: str | None) -> float:
    """Seconds from a Retry-After header (a number; an HTTP date counts as no hint), capped."""
    try:
        return min(MAX_BACKOFF_SECONDS, max(0.0, float(value))) if value else 0.0
    except ValueError:
        return 0.0


def _count(value: Any) -> int | None:
    """A usage count: 0 when absent, None when it is not a whole number in range."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not (math.isfinite(value) and float(value).is_integer() and 0 <= value <= MAX_REPORTED_TOKENS):
        return None
    return int(value)


def _logprob(value: Any) -> float | None:
    """A log-probability as sent: a finite number at most 0 (a rounding above 0 counts as 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    if value > 1e-6:
        return None
    return min(0.0, float(value))


def _token_alternatives(logprobs: Any) -> list[dict[str, float]]:
    """Per answer token, {token: logprob} of its top alternatives (OpenAI's chat format)."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        return []
    tokens = []
    for entry in logprobs["content"]:
        if not isinstance(entry, dict):
            continue
        alternatives: dict[str, float] = {}
        tops = entry.get("top_logprobs")
        for top in tops if isinstance(tops, list) else []:
            if isinstance(top, dict) and isinstance(top.get("token"), str):
                logprob = _logprob(top.get("logprob"))
                if logprob is not None:
                    alternatives[top["token"]] = logprob
        if isinstance(entry.get("token"), str):
            logprob = _logprob(entry.get("logprob"))
            if logprob is not None:
                alternatives.setdefault(entry["token"], logprob)
        tokens.append(alternatives)
    return tokens


def answer_cost(answer: JudgeAnswer, *, per_1k_in: float, per_1k_out: float) -> float:
    """The price of one answer from its token counts."""
    return answer.tokens_in / 1000 * per_1k_in + answer.tokens_out / 1000 * per_1k_out
