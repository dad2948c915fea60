"""The release gate against a hostile or broken server: whatever the server does, the client exits
3 (refused / bad answer) or 4 (no verdict in time), never a verdict's 0, 1, 2 or 5; within its
timeout by the wall clock (from its `main`: the interpreter's start-up, over a second on a loaded
machine, is not its to bound); in bounded memory; and it never sends the token to another
origin."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.hostile_server import Request, answer, hostile_server, huge, silent, trickling

TOKEN = "s3cret-token-value"
# The gate run by a wrapper that reports its peak memory and how long its `main` took.
MEASURED = "tests.clients.measured_gate"
DECIDED = {
    "id": 1,
    "verdict": "better",
    "system": "release",
    "reference": "prod",
    "rule": "sequential",
    "difference": {"value": 0.4, "low": 0.1, "high": 0.7},
    "sequence": {"low": 0.05, "high": 0.8},
    "topup_spent": 10,
    "topup_budget": 25,
}


@dataclass
class Exit:
    code: int
    out: str
    err: str

    @property
    def main_seconds(self) -> float:
        """How long the client's `main` ran (`tests.clients.measured_gate`'s last line)."""
        return float(self.err.splitlines()[-1].split()[-1])


def _gate(url: str, *arguments: str, allow_http: bool = True, module: str = "clients.release_gate") -> Exit:
    """Run the client as a pipeline does; its exit code and output."""
    command = [sys.executable, "-m", module, "--url", url, "--token", TOKEN]
    command += ["--allow-http"] if allow_http else []
    finished = subprocess.run(
        [*command, *arguments], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    return Exit(finished.returncode, finished.stdout, finished.stderr)


def _json(body: object, status: int = 200) -> Callable[[Request, socket.socket], None]:
    def behave(request: Request, connection: socket.socket) -> None:
        connection.sendall(answer(status, json.dumps(body).encode()))

    return behave


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"<html>gateway says hi</html>", "not JSON"),
        (b"[1, 2, 3]", "not a JSON object"),
        (json.dumps({**DECIDED, "verdict": "ship it"}).encode(), "is none of"),
        (
            json.dumps({**DECIDED, "difference": {"value": "+0.4"}}).encode(),
            "difference.value is not a number",
        ),
        (json.dumps({**DECIDED, "topup_spent": "many"}).encode(), "topup_spent is not a number"),
        (json.dumps({**DECIDED, "system": None}).encode(), "system is not a string"),
        (json.dumps({**DECIDED, "difference": {"value": float("nan")}}).encode(), "value is not a number"),
    ],
)
def test_an_answer_that_is_not_a_report_exits_3(body: bytes, says: str) -> None:
    with hostile_server(lambda request, connection: connection.sendall(answer(200, body))) as server:
        result = _gate(server.url, "--campaign", "1", "--arrival", "1", "--timeout", "10")
    assert result.code == 3 and says in result.err, result


def test_a_silent_server_ends_in_4_within_the_timeout() -> None:
    with hostile_server(silent) as server:
        result = _gate(server.url, "--campaign", "1", "--arrival", "1", "--timeout", "3", module=MEASURED)
    assert result.code == 4 and result.main_seconds < 3 + 1, result
    assert "no verdict after 3 s" in result.err


def test_a_trickling_server_ends_in_4_within_the_timeout() -> None:
    with hostile_server(trickling(0.5)) as server:
        result = _gate(server.url, "--campaign", "1", "--arrival", "1", "--timeout", "3", module=MEASURED)
    assert result.code == 4 and result.main_seconds < 3 + 1, result


def test_a_huge_answer_is_refused_unread_in_bounded_memory() -> None:
    with hostile_server(huge(300)) as server:
        result = _gate(
            server.url,
            "--campaign",
            "1",
            "--arrival",
            "1",
            "--timeout",
            "20",
            module=MEASURED,
        )
    assert result.code == 3 and "larger than" in result.err, result
    # The interpreter alone takes about 15 MB; the answer is read up to 1 MiB and no further.
    peak = float(result.err.splitlines()[-1].split()[1])
    assert peak < 40, result


def test_a_transient_502_on_a_poll_is_retried_and_the_verdict_read() -> None:
    answers = iter([(200, {**DECIDED, "verdict": None}), (502, {"detail": "bad gateway"}), (200, DECIDED)])

    def behave(request: Request, connection: socket.socket) -> None:
        status, body = next(answers)
        connection.sendall(answer(status, json.dumps(body).encode()))

    with hostile_server(behave) as server:
        result = _gate(server.url, "--campaign", "1", "--arrival", "1", "--poll", "1", "--timeout", "30")
    assert result.code == 0 and result.out.startswith("better: release minus prod = +0.4"), result
    assert "retrying in 1 s: HTTP 502" in result.err
    assert len(server.requests) == 3


def test_a_server_that_is_down_is_retried_until_the_timeout_then_4() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    result = _gate(
        f"http://127.0.0.1:{port}", "--campaign", "1", "--arrival", "1", "--timeout", "3", module=MEASURED
    )
    assert result.code == 4 and result.main_seconds < 3 + 1, result
    assert result.err.count("retrying in") >= 2, result.err


def test_a_submission_that_may_have_reached_the_server_is_not_sent_twice(tmp_path: Path) -> None:
    run = tmp_path / "release.run"
    run.write_text("1 Q0 d1 1 1.0 release\n")
    with hostile_server(_json({"detail": "upstream timed out"}, status=502)) as server:
        result = _gate(server.url, "--campaign", "1", "--run", str(run), "--timeout", "10")
    assert result.code == 3 and "not retried" in result.err, result
    assert [request.line.split()[0] for request in server.requests] == ["POST"]


@pytest.mark.parametrize(
    "arguments",
    [
        ["--poll", "0"],
        ["--poll", "-1"],
        ["--poll", "nan"],
        ["--poll", "0.2"],
        ["--timeout", "inf"],
        ["--timeout", "-5"],
        ["--campaign", "x"],
        ["--arrival", "0"],
    ],
)
def test_bad_arguments_are_usage_errors_that_exit_3_and_send_nothing(arguments: list[str]) -> None:
    with hostile_server(_json(DECIDED)) as server:
        given = {"--campaign": "1", "--arrival": "1"}
        for flag, value in zip(arguments[::2], arguments[1::2], strict=True):
            given[flag] = value
        result = _gate(server.url, *[part for pair in given.items() for part in pair])
    assert result.code == 3 and "error:" in result.err, result
    assert server.requests == []


def test_http_is_refused_unless_asked_for() -> None:
    with hostile_server(_json(DECIDED)) as server:
        result = _gate(server.url, "--campaign", "1", "--arrival", "1", allow_http=False)
    assert result.code == 3 and "--allow-http" in result.err, result
    assert server.requests == []


def test_a_redirect_to_another_origin_is_not_followed_and_the_token_stays_home() -> None:
    with hostile_server(_json(DECIDED)) as foreign:
        target = foreign.url.replace("127.0.0.1", "localhost") + "/api/campaigns/1/arrivals/1/"

        def redirect(request: Request, connection: socket.socket) -> None:
            connection.sendall(answer(302, b"", extra=f"Location: {target}\r\n"))

        with hostile_server(redirect) as server:
            result = _gate(server.url, "--campaign", "1", "--arrival", "1", "--timeout", "10")
        assert result.code == 3 and f"redirects to {target}" in result.err, result
        assert server.requests[0].headers["authorization"] == f"Token {TOKEN}"
        assert foreign.requests == [], "nothing at all reaches the other origin"


def test_a_refusal_names_the_server_s_reason() -> None:
    refusal = {"errors": [{"file": "release.run", "line": 3, "message": "two tags in one file"}]}
    with hostile_server(_json(refusal, status=400)) as server:
        result = _gate(server.url, "--campaign", "1", "--arrival", "1")
    assert result.code == 3 and "release.run line 3: two tags in one file" in result.err, result


def test_a_decided_verdict_exits_with_its_code() -> None:
    with hostile_server(_json({**DECIDED, "verdict": "not_settled"})) as server:
        result = _gate(server.url, "--campaign", "1", "--arrival", "1")
    assert result.code == 2 and result.out.startswith("not_settled: release minus prod"), result


def test_the_help_lists_the_exit_codes_and_never_the_token() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "clients.release_gate", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ASSESS_TOKEN": TOKEN},
    )
    assert shown.returncode == 0 and "exit codes: 0 better or not worse" in shown.stdout
    assert TOKEN not in shown.stdout + shown.stderr
