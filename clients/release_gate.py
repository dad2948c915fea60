"""A release pipeline's step: submit a run as an arrival, wait for its verdict, exit with it.

    python -m clients.release_gate --url https://labels.example.org --token "$TOKEN" \\
        --campaign 2 --run release-43.run [--reference prod] [--budget 25 | --target-width 0.5] \\
        [--rule sequential|anytime|fixed] [--margin 0.5] [--timeout 86400]

or, for an arrival already submitted, ``--arrival ID`` instead of ``--run``. ``--margin M`` asks
whether the run is not worse than the reference by more than M metric points (non-inferiority;
``--question superiority`` asks whether it is better by more than M instead). The rule, question
and margin are fixed with the arrival (default: the campaign's). It polls
``GET /api/campaigns/{id}/arrivals/{a}/`` with backoff (from ``--poll`` seconds, at least
`POLL_FLOOR`, times 1.5, at most 60) until the verdict is decided, prints the verdict with the
difference, the interval it was read from, the rule, horizon and margin, and exits with
`EXIT_CODES`: **0** better or not worse (ship), **1** worse or not better, **2** not settled,
**5** unchanged (the run ranks the same documents as the reference: nothing was judged).

Only a verdict the server stated exits 0, 1, 2 or 5. Everything else is **3** (the server refused
the request, answered something that is not an arrival's report, redirected, or the arguments
are wrong: the reason is printed) or **4** (no verdict within ``--timeout``). ``--timeout`` bounds
the whole run by the wall clock, a silent or trickling server included; an answer larger than
`MAX_ANSWER_BYTES` is refused unread. Polls that fail transiently (a 502, 503 or 504, a dropped
connection) are retried with backoff inside the timeout; the submission is retried only when the
server cannot have received it (no connection), since a second POST would be a second arrival.
Redirects are never followed (the token must not travel to another origin): the message names
the target to give as ``--url``. ``http://`` is refused unless ``--allow-http`` is given (a test
server on the same machine). The token may also come from the environment variable
``ASSESS_TOKEN``.

Standard library only, so a CI job can run this one file with any Python 3.11 (copy it, or run
it from a checkout; ``python -m labeling.release_gate`` still works). Reading the verdict after
every poll is safe whatever the rule (docs/api.md, "Release verdicts"): a peeking rule's verdict
may come before the top-up is spent.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import ssl
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

EXIT_CODES = {"better": 0, "not_worse": 0, "worse": 1, "not_better": 1, "not_settled": 2, "unchanged": 5}
EXIT_REFUSED = 3
EXIT_TIMEOUT = 4
POLL_FLOOR = 1.0
MAX_POLL_SECONDS = 60.0
# An arrival's report is a few kilobytes; anything near this is not one.
MAX_ANSWER_BYTES = 1 << 20
# The longest one socket operation may wait; the whole run's deadline is enforced apart from it.
SOCKET_TIMEOUT = 30.0
TRANSIENT_STATUSES = frozenset({502, 503, 504})
FIRST_RETRY_SECONDS = 1.0


class Refused(Exception):
    """The server refused, answered something that is not a report, or redirected (exit 3)."""


class OutOfTime(Exception):
    """The deadline passed before a verdict (exit 4)."""


class Transient(Exception):
    """A failure worth another try: a dropped connection or a gateway's 502/503/504."""

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent  # whether the request may have reached the server


@dataclass(frozen=True)
class Server:
    """Where the app is and how to talk to it."""

    scheme: str
    host: str
    port: int | None
    path: str
    token: str

    @classmethod
    def parse(cls, url: str, token: str, *, allow_http: bool) -> Server:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError(f"--url must be https://host[:port][/path], not {url!r}")
        if parts.scheme == "http" and not allow_http:
            raise ValueError("--url is http: the token would travel unencrypted; use https, or --allow-http")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError("--url takes no query, fragment or credentials")
        try:
            port = parts.port
        except ValueError as error:
            raise ValueError(f"--url has a bad port: {error}") from None
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"), token)

    def origin(self) -> str:
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{self.host}{port}"


class Deadline:
    """The wall-clock bound on the whole run."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._end = clock() + seconds

    def left(self) -> float:
        return self._end - self._clock()

    def sleep(self, seconds: float) -> None:
        """Sleep, but never past the deadline (then `OutOfTime`)."""
        if seconds >= self.left():
            time.sleep(max(self.left(), 0.0))
            raise OutOfTime("the timeout passed")
        time.sleep(seconds)


def _exchange(
    server: Server, method: str, path: str, body: bytes | None, content_type: str
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP exchange, no redirect followed; the answer's body read up to the cap."""
    connection_class = http.client.HTTPSConnection if server.scheme == "https" else http.client.HTTPConnection
    kwargs: dict[str, Any] = {"timeout": SOCKET_TIMEOUT}
    if server.scheme == "https":
        kwargs["context"] = ssl.create_default_context()
    connection = connection_class(server.host, server.port, **kwargs)
    headers = {
        "Authorization": f"Token {server.token}",
        "Accept": "application/json",
        "User-Agent": "release-gate",
    }
    if content_type:
        headers["Content-Type"] = content_type
    sent = False
    try:
        try:
            connection.connect()
        except OSError as error:
            raise Transient(f"cannot reach {server.origin()}: {error}", sent=False) from None
        try:
            sent = True
            connection.request(method, server.path + path, body=body, headers=headers)
            response = connection.getresponse()
            answer = response.read(MAX_ANSWER_BYTES + 1)
        except (OSError, http.client.IncompleteRead) as error:
            raise Transient(f"the connection to {server.origin()} failed: {error!r}", sent=sent) from None
        except http.client.HTTPException as error:
            raise Refused(f"the answer from {server.origin()} is not HTTP: {error!r}") from None
        if len(answer) > MAX_ANSWER_BYTES:
            raise Refused(
                f"the answer to {method} {path} is larger than {MAX_ANSWER_BYTES} bytes: not a report"
            )
        return response.status, {name.lower(): value for name, value in response.getheaders()}, answer
    finally:
        connection.close()


def _exchange_within(deadline: Deadline, *args: Any) -> tuple[int, dict[str, str], bytes]:
    """`_exchange` bounded by the deadline: a silent or trickling server cannot hold the run
    longer (socket timeouts bound each read, not their sum). The thread is a daemon: when time
    is up, the process exits with it still blocked."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(_exchange(*args))
        except BaseException as error:  # handed to the caller below
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(max(deadline.left(), 0.0))
    if not outcome:
        raise OutOfTime("the server did not answer before the timeout")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _reason(status: int, answer: bytes) -> str:
    text = answer.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        return f"HTTP {status}: {text[:300]}"
    if isinstance(data, dict):
        errors = data.get("errors")
        lines = (
            [
                f"{item.get('file', '')} line {item.get('line')}: {item.get('message')}"
                for item in errors
                if isinstance(item, dict)
            ]
            if isinstance(errors, list)
            else []
        )
        detail = data.get("detail")
        if isinstance(detail, str) or lines:
            return f"HTTP {status}: {detail if isinstance(detail, str) else '; '.join(lines)}"
    return f"HTTP {status}: {text[:300]}"


def request(
    server: Server,
    deadline: Deadline,
    path: str,
    *,
    body: bytes | None = None,
    content_type: str = "",
    retry_sent: bool = True,
) -> dict[str, Any]:
    """The JSON object the server answers, retrying transient failures with backoff inside the
    deadline (a request that may have reached the server only when `retry_sent`)."""
    method = "POST" if body is not None else "GET"
    pause = FIRST_RETRY_SECONDS
    while True:
        try:
            status, headers, answer = _exchange_within(deadline, server, method, path, body, content_type)
            if status in TRANSIENT_STATUSES:
                raise Transient(_reason(status, answer), sent=True)
        except Transient as failure:
            if failure.sent and not retry_sent:
                raise Refused(f"{failure} (not retried: the server may have taken the request)") from None
            print(f"retrying in {pause:g} s: {failure}", file=sys.stderr, flush=True)
            deadline.sleep(pause)
            pause = min(pause * 2, MAX_POLL_SECONDS)
            continue
        if 300 <= status < 400:
            target = headers.get("location", "(no Location)")
            raise Refused(
                f"HTTP {status}: the server redirects to {target}; give that as --url (not followed)"
            )
        if status >= 400:
            raise Refused(_reason(status, answer))
        try:
            data = json.loads(answer)
        except ValueError:
            raise Refused(f"HTTP {status}: the answer is not JSON: {answer[:200]!r}") from None
        if not isinstance(data, dict):
            raise Refused(f"HTTP {status}: the answer is not a JSON object: {answer[:200]!r}")
        return data


def _multipart(fields: dict[str, str], run: Path) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{run.name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + run.read_bytes()
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def submit(
    server: Server, deadline: Deadline, campaign: int, run: Path, fields: dict[str, str]
) -> dict[str, Any]:
    """POST the run as an arrival; the arrival's report."""
    body, content_type = _multipart(fields, run)
    created = request(
        server,
        deadline,
        f"/api/campaigns/{campaign}/arrivals/",
        body=body,
        content_type=content_type,
        retry_sent=False,
    )
    _check_report(created, decided=False)
    return created


def wait(server: Server, deadline: Deadline, campaign: int, arrival: int, *, poll: float) -> dict[str, Any]:
    """Poll the arrival until its verdict is decided (its report); `OutOfTime` at the deadline."""
    pause = poll
    while True:
        report = request(server, deadline, f"/api/campaigns/{campaign}/arrivals/{arrival}/")
        if report.get("verdict"):
            _check_report(report, decided=True)
            return report
        _check_report(report, decided=False)
        deadline.sleep(pause)
        pause = min(pause * 1.5, MAX_POLL_SECONDS)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_report(report: dict[str, Any], *, decided: bool) -> None:
    """Refuse an answer that is not an arrival's report: a verdict the client does not know, or
    figures that are not numbers, are the server's failure, never a result."""
    if not isinstance(report.get("id"), int) or isinstance(report.get("id"), bool):
        raise Refused(f"the answer has no arrival id: {json.dumps(report)[:200]}")
    verdict = report.get("verdict")
    if decided and verdict not in EXIT_CODES:
        raise Refused(f"the answer's verdict {verdict!r} is none of {', '.join(EXIT_CODES)}")
    for name in ("system", "reference", "rule"):
        if decided and not isinstance(report.get(name), str):
            raise Refused(f"the answer's {name} is not a string: {report.get(name)!r}")
    groups = {"difference": ("value", "low", "high"), "sequence": ("low", "high")}
    for group, names in groups.items():
        figures = report.get(group) or {}
        if not isinstance(figures, dict):
            raise Refused(f"the answer's {group} is not an object: {figures!r}")
        for name in names:
            value = figures.get(name)
            if value is not None and not _is_number(value):
                raise Refused(f"the answer's {group}.{name} is not a number: {value!r}")
    for name in ("margin", "horizon", "decided_labels", "topup_spent", "topup_budget"):
        value = report.get(name)
        if value is not None and not _is_number(value):
            raise Refused(f"the answer's {name} is not a number: {value!r}")


def _figure(value: Any) -> str:
    return f"{value:g}" if _is_number(value) else str(value)


def describe(report: dict[str, Any]) -> str:
    """One line: the verdict, the difference with its 95 % interval, the rule's interval."""
    difference = report.get("difference") or {}
    band = report.get("sequence") or {}

    def number(value: Any) -> str:
        return "n/a" if value is None else f"{value:+.4g}"

    question = report.get("question", "difference")
    asked = {"non_inferiority": " not worse by", "superiority": " better by"}.get(question, "")
    margin = f",{asked} {report.get('margin') or 0:g}" if asked else ""
    unit = str(report.get("horizon_unit")) if report.get("horizon_unit") in ("labels", "topics") else "labels"
    count = round(report["horizon"]) if _is_number(report.get("horizon")) else 0
    unit = unit.removesuffix("s") if count == 1 else unit
    # An unchanged run has no top-up, so no horizon to read over.
    horizon = f", horizon {count} {unit}" if count and report.get("verdict") != "unchanged" else ""
    at = f" at label {report['decided_labels']}" if report.get("decided_labels") is not None else ""
    reason = f" ({report['verdict_reason']})" if report.get("verdict_reason") else ""
    interval = f"95 % interval [{number(difference.get('low'))}, {number(difference.get('high'))}]"
    exact = difference.get("exact")
    read = ""
    if exact is not None:
        # Every document the difference weighs is judged: the verdict read that value, not a band.
        shown = (
            f"{number(exact)} exactly (the sample's estimate {number(difference.get('value'))}, {interval})"
        )
    else:
        shown = f"{number(difference.get('value'))} ({interval})"
        if band.get("low") is not None and band.get("high") is not None:
            read = f" on [{number(band.get('low'))}, {number(band.get('high'))}]"
    return (
        f"{report['verdict']}: {report['system']} minus {report['reference']} = {shown}; "
        f"read by the {report['rule']} rule{margin}{horizon}{at}{read}"
        f"; top-up spent {report.get('topup_spent') or 0:g} of {report.get('topup_budget') or 0:g}{reason}"
    )


class _Parser(argparse.ArgumentParser):
    """Bad arguments exit 3: 2 means "not settled" to the pipeline."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_REFUSED, f"{self.prog}: error: {message}\n")


def _seconds(floor: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
        if not math.isfinite(value) or value < floor:
            raise argparse.ArgumentTypeError(
                f"must be a finite number of seconds, at least {floor:g}: {text!r}"
            )
        return value

    return parse


def _positive_int(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)


def parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="release_gate",
        description=__doc__.splitlines()[0],
        epilog="exit codes: 0 better or not worse (ship), 1 worse or not better, 2 not settled, "
        "5 unchanged; 3 no verdict: refused, a bad answer, a redirect or bad arguments; 4 no verdict "
        "within --timeout (an unreachable server is retried until then)",
    )
    parser.add_argument("--url", required=True, help="the app's base URL, e.g. https://labels.example.org")
    parser.add_argument(
        "--token", default=os.environ.get("ASSESS_TOKEN", ""), help="API token (or ASSESS_TOKEN)"
    )
    parser.add_argument("--campaign", type=_positive_int, required=True, help="the campaign's id")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--run", type=Path, help="a TREC run file to submit as an arrival")
    what.add_argument("--arrival", type=_positive_int, help="wait for an arrival already submitted")
    parser.add_argument(
        "--reference", help="the pooled run to compare with (default: the best certified run)"
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--budget", help="the top-up, in the campaign's budget unit")
    size.add_argument("--target-width", help="the 95 %% interval width to plan the top-up for")
    parser.add_argument("--rule", choices=("sequential", "anytime", "fixed"), help="the verdict's rule")
    parser.add_argument(
        "--question",
        choices=("difference", "non_inferiority", "superiority"),
        help="what the verdict answers (default: non_inferiority with --margin, else the campaign's)",
    )
    parser.add_argument("--margin", help="the margin in metric points (non-inferiority unless --question)")
    parser.add_argument(
        "--poll",
        type=_seconds(POLL_FLOOR),
        default=5.0,
        help=f"first pause between polls, seconds (at least {POLL_FLOOR:g}; default 5)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds(1.0),
        default=24 * 3600.0,
        help="give up after this many seconds of wall clock, whatever the server does (exit 4; "
        "default 86400, a day: give what the CI job can wait)",
    )
    parser.add_argument(
        "--allow-http", action="store_true", help="allow an http:// URL (the token travels unencrypted)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = parser()
    args = arguments.parse_args(argv)
    if not args.token:
        arguments.error("give --token or set ASSESS_TOKEN")
    try:
        server = Server.parse(args.url, args.token, allow_http=args.allow_http)
    except ValueError as problem:
        arguments.error(str(problem))
    if args.run is not None and not args.run.is_file():
        arguments.error(f"no such run file: {args.run}")
    deadline = Deadline(args.timeout)
    arrival = args.arrival
    try:
        if args.run is not None:
            question = args.question or ("non_inferiority" if args.margin else None)
            given = {
                "budget": args.budget,
                "target_width": args.target_width,
                "reference": args.reference,
                "rule": args.rule,
                "question": question,
                "margin": args.margin,
            }
            fields = {name: value for name, value in given.items() if value}
            created = submit(server, deadline, args.campaign, args.run, fields)
            arrival = created["id"]
            chosen = "" if created.get("reference_given", True) else " (the best certified run)"
            topup, margin = _figure(created.get("topup_budget")), _figure(created.get("margin") or 0)
            if created.get("verdict") == "unchanged":  # its top-up is 0 whatever was asked
                plan = "it ranks the same documents as the reference: nothing to judge"
            else:
                plan = (
                    f"top-up {topup}, verdict by the {created.get('rule')} rule "
                    f"({created.get('question', 'difference')}, margin {margin})"
                )
            versus = f"{created.get('system')} against {created.get('reference')}{chosen}"
            print(f"arrival {arrival}: {versus}, {plan}", flush=True)
        report = wait(server, deadline, args.campaign, arrival, poll=args.poll)
    except Refused as refusal:
        print(f"refused: {refusal}", file=sys.stderr, flush=True)
        return EXIT_REFUSED
    except OutOfTime as late:
        where = f" (arrival {arrival})" if arrival is not None else ""
        print(f"no verdict after {args.timeout:g} s{where}: {late}", file=sys.stderr, flush=True)
        return EXIT_TIMEOUT
    except Exception as error:  # noqa: BLE001  # a failure of the client is never a verdict
        print(f"refused: the client failed: {error!r}", file=sys.stderr, flush=True)
        return EXIT_REFUSED
    print(describe(report), flush=True)
    return EXIT_CODES[report["verdict"]]


def run() -> NoReturn:
    """Exit with `main`'s code at once: a daemon thread still blocked on a silent server must not
    hold the process (os._exit skips the interpreter's wait for threads)."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
