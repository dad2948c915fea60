"""A release pipeline's step: submit a run as an arrival, wait for its verdict, exit with it.

    python -m labeling.release_gate --url https://labels.example.org --token "$TOKEN" \\
        --campaign 2 --run release-43.run [--reference prod] [--budget 25 | --target-width 0.5] \\
        [--rule sequential|anytime|fixed] [--margin 0.5]

or, for an arrival already submitted, ``--arrival ID`` instead of ``--run``. ``--margin M`` asks
whether the run is not worse than the reference by more than M metric points (non-inferiority;
``--question superiority`` asks whether it is better by more than M instead). The rule, question
and margin are fixed with the arrival (default: the campaign's). It polls
``GET /api/campaigns/{id}/arrivals/{a}/`` with backoff (from ``--poll`` seconds, times 1.5, at
most 60) until the verdict is decided, prints the verdict with the difference, the interval it
was read from, the rule, horizon and margin, and exits with `EXIT_CODES`: **0** better or not
worse (ship), **1** worse or not better, **2** not settled, **5** unchanged (the run ranks the
same documents as the reference: nothing was judged); **3** when the server refuses the request
(the reason is printed) and **4** when ``--timeout`` passes without a verdict. The token may
also come from the environment variable ``ASSESS_TOKEN``.

Standard library only, so a CI job can run this one file with any Python 3.11 (copy it, or run
it from a checkout). Reading the verdict after every poll is safe whatever the rule
(docs/api.md, "Release verdicts"): a peeking rule's verdict may come before the top-up is spent.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

EXIT_CODES = {"better": 0, "not_worse": 0, "worse": 1, "not_better": 1, "not_settled": 2, "unchanged": 5}
EXIT_REFUSED = 3
EXIT_TIMEOUT = 4
MAX_POLL_SECONDS = 60.0


class Refused(Exception):
    """The server answered with an error (its reason is the message)."""


def _request(url: str, token: str, *, body: bytes | None = None, content_type: str = "") -> Any:
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    request = urllib.request.Request(
        url, data=body, headers=headers, method="POST" if body is not None else "GET"
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310  # the operator's own URL
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        text = error.read().decode(errors="replace")
        try:
            answer = json.loads(text)
            reason = (
                answer.get("detail")
                or "; ".join(
                    f"{item.get('file', '')} line {item.get('line')}: {item.get('message')}"
                    for item in answer.get("errors", [])
                )
                or text
            )
        except (ValueError, AttributeError):
            reason = text[:500]
        raise Refused(f"HTTP {error.code}: {reason}") from None
    except urllib.error.URLError as error:
        raise Refused(f"cannot reach {url}: {error.reason}") from None


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


def submit(base: str, token: str, campaign: int, run: Path, fields: dict[str, str]) -> dict[str, Any]:
    """POST the run as an arrival; the arrival's report."""
    body, content_type = _multipart(fields, run)
    return _request(f"{base}/api/campaigns/{campaign}/arrivals/", token, body=body, content_type=content_type)


def wait(
    base: str,
    token: str,
    campaign: int,
    arrival: int,
    *,
    poll: float,
    timeout: float,
    sleep: Any = time.sleep,
) -> dict[str, Any] | None:
    """Poll the arrival until its verdict is decided (its report), or None after `timeout` s."""
    deadline = time.monotonic() + timeout
    pause = poll
    while True:
        report = _request(f"{base}/api/campaigns/{campaign}/arrivals/{arrival}/", token)
        if report.get("verdict"):
            return report
        if time.monotonic() + pause > deadline:
            return None
        sleep(pause)
        pause = min(pause * 1.5, MAX_POLL_SECONDS)


def describe(report: dict[str, Any]) -> str:
    """One line: the verdict, the difference with its 95 % interval, the rule's interval."""
    difference = report.get("difference") or {}
    band = report.get("sequence") or {}

    def number(value: Any) -> str:
        return "n/a" if value is None else f"{value:+.4g}"

    question = report.get("question", "difference")
    asked = {"non_inferiority": " not worse by", "superiority": " better by"}.get(question, "")
    margin = f",{asked} {report.get('margin', 0):g}" if asked else ""
    horizon = f", horizon {report['horizon']:.0f} labels" if report.get("horizon") else ""
    at = f" at label {report['decided_labels']}" if report.get("decided_labels") is not None else ""
    reason = f" ({report['verdict_reason']})" if report.get("verdict_reason") else ""
    read = ""
    if band.get("low") is not None and band.get("high") is not None:
        read = f" on [{number(band.get('low'))}, {number(band.get('high'))}]"
    return (
        f"{report['verdict']}: {report['system']} minus {report['reference']} = "
        f"{number(difference.get('value'))} "
        f"(95 % interval [{number(difference.get('low'))}, {number(difference.get('high'))}]); "
        f"read by the {report['rule']} rule{margin}{horizon}{at}{read}"
        f"; top-up spent {report.get('topup_spent', 0):g} of {report.get('topup_budget', 0):g}{reason}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the app's base URL, e.g. https://labels.example.org")
    parser.add_argument(
        "--token", default=os.environ.get("ASSESS_TOKEN", ""), help="API token (or ASSESS_TOKEN)"
    )
    parser.add_argument("--campaign", type=int, required=True)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--run", type=Path, help="a TREC run file to submit as an arrival")
    what.add_argument("--arrival", type=int, help="wait for an arrival already submitted")
    parser.add_argument("--reference", help="the pooled run to compare with (default: the best current one)")
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
    parser.add_argument("--poll", type=float, default=5.0, help="first pause between polls, seconds")
    parser.add_argument("--timeout", type=float, default=24 * 3600.0, help="give up after this many seconds")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set ASSESS_TOKEN")
    base = args.url.rstrip("/")
    try:
        if args.run is not None:
            if not args.run.is_file():
                parser.error(f"no such run file: {args.run}")
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
            created = submit(base, args.token, args.campaign, args.run, fields)
            arrival = int(created["id"])
            chosen = "" if created.get("reference_given", True) else " (the best certified run)"
            print(
                f"arrival {arrival}: {created['system']} against {created['reference']}{chosen}, top-up "
                f"{created['topup_budget']:g}, verdict by the {created['rule']} rule "
                f"({created.get('question', 'difference')}, margin {created.get('margin', 0):g})",
                flush=True,
            )
        else:
            arrival = args.arrival
        report = wait(base, args.token, args.campaign, arrival, poll=args.poll, timeout=args.timeout)
    except Refused as refusal:
        print(f"refused: {refusal}", file=sys.stderr)
        return EXIT_REFUSED
    if report is None:
        print(f"no verdict after {args.timeout:g} s (arrival {arrival})", file=sys.stderr)
        return EXIT_TIMEOUT
    print(describe(report), flush=True)
    return EXIT_CODES[report["verdict"]]


if __name__ == "__main__":
    sys.exit(main())
