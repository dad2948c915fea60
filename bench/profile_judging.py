"""Where the server's CPU goes in one judgment (`next` + answer on the token path the assessors'
browsers and bench_team.py use), in process: a fresh embedded database with the team benchmark's
campaign (synthetic topics and runs, passive sampling, a budget that never runs out), assessors
with API tokens, requests handed to the WSGI application gunicorn serves (`config.wsgi`'s handler,
so the token lane's shorter middleware chain too; `--full-chain` for Django's own handler), and
cProfile over the measured cycles after a warm-up.

    .venv/bin/python bench/profile_judging.py [--cycles 1000] [--assessors 10] [--top 30] [--full-chain]
    .venv/bin/python bench/profile_judging.py --cycles 200 --compare-chains 8

Prints the CPU per judgment (process time: no network, no gunicorn, no other thread's waits), the
statements per `next` and per answer (the usual count over the cycles), and the functions with
the most time of their own and the most time below them. The summary in docs/benchmarks.md is
this script's output."""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))

from django_setup import django_for_bench  # noqa: E402

if TYPE_CHECKING:
    from django.core.handlers.wsgi import WSGIHandler


def _campaign(topics: int, depth: int, assessors: int) -> tuple[int, list[str]]:
    """The team benchmark's campaign, made through the services (set-up, not measured)."""
    from bench_http import synthetic_files
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
    from uploads.imports import topics_import
    from uploads.run_imports import runs_import

    user_model = get_user_model()
    coordinator = user_model.objects.create_user("coordinator", is_superuser=True, is_staff=True)
    campaign = campaign_create(
        creator=coordinator,
        name="profile",
        metric="DCG@10",
        grades=["not relevant", "relevant", "highly relevant"],
        goal="leaderboard",
        goal_k=3,
        strategy="passive",
        budget=1_000_000,
        budget_unit="judgments",
        pool_depth=depth,
    )
    topic_file, run_files = synthetic_files(topics, depth, seed=20260411)
    topics_import(campaign=campaign, files=[("topics.jsonl", io.BytesIO(topic_file))])
    runs_import(campaign=campaign, files=[(name, io.BytesIO(body)) for name, body in run_files])
    names = [f"assessor{index:02d}" for index in range(assessors)]
    tokens = []
    for name in names:
        user = user_model.objects.create_user(name)
        tokens.append(Token.objects.create(user=user).key)
    campaign_assessors_assign(campaign=campaign, usernames=names)
    campaign_start(campaign=campaign)
    return campaign.pk, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=1000, help="judgments measured")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--assessors", type=int, default=10, help="tokens the cycles go round")
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--depth", type=int, default=200)
    parser.add_argument("--top", type=int, default=30, help="functions listed")
    parser.add_argument(
        "--full-chain", action="store_true", help="Django's WSGI handler: every middleware, no token lane"
    )
    parser.add_argument(
        "--compare-chains",
        type=int,
        metavar="BLOCKS",
        default=0,
        help="instead of profiling: BLOCKS alternating blocks of --cycles judgments through Django's "
        "handler and the token lane's, and the median CPU per judgment of each",
    )
    arguments = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="profile-judging-"))
    django_for_bench(folder, quiet=True)
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from config.token_lane import TokenLaneWSGIHandler

    campaign, tokens = _campaign(arguments.topics, arguments.depth, arguments.assessors)
    if arguments.compare_chains:
        _compare_chains(campaign, tokens, arguments.compare_chains, arguments.cycles)
        return
    application = WSGIHandler() if arguments.full_chain else TokenLaneWSGIHandler()
    clients = [_Client(application, token) for token in tokens]
    statements: dict[str, list[int]] = {"next": [], "answer": []}
    for cycle in range(arguments.warmup):
        with CaptureQueriesContext(connection) as next_queries:
            task = _next(clients[cycle % len(clients)], campaign)
        with CaptureQueriesContext(connection) as answer_queries:
            _answer(clients[cycle % len(clients)], task)
        statements["next"].append(len(next_queries.captured_queries))
        statements["answer"].append(len(answer_queries.captured_queries))
    # Counting statements costs CPU of its own: the timed and profiled cycles do not count.
    cpu_ms = _cpu_ms_per_judgment(clients, campaign, arguments.cycles)
    profile = cProfile.Profile()
    profile.enable()
    for cycle in range(arguments.cycles):
        _answer(clients[cycle % len(clients)], _next(clients[cycle % len(clients)], campaign))
    profile.disable()

    chain = "every middleware" if arguments.full_chain else "the token lane"
    print(f"# One judgment (next + answer, token path, {chain}, embedded SQLite), {arguments.cycles} cycles")
    print(f"CPU per judgment: {cpu_ms:.2f} ms (process time, without the profiler)")
    print(
        f"statements per next: {statistics.median_low(statements['next'])} "
        f"(most {max(statements['next'])}); per answer: {statistics.median_low(statements['answer'])} "
        f"(most {max(statements['answer'])}), over the {arguments.warmup} warm-up cycles"
    )
    for order in ("tottime", "cumulative"):
        text = io.StringIO()
        stats = pstats.Stats(profile, stream=text)
        stats.sort_stats(order).print_stats(arguments.top)
        print(f"\n## By {order}\n")
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[-6000:])


def _cpu_ms_per_judgment(clients: list[_Client], campaign: int, cycles: int) -> float:
    started = time.process_time()
    for cycle in range(cycles):
        _answer(clients[cycle % len(clients)], _next(clients[cycle % len(clients)], campaign))
    return (time.process_time() - started) * 1000 / cycles


def _compare_chains(campaign: int, tokens: list[str], blocks: int, cycles: int) -> None:
    """Django's handler and the token lane's, alternating blocks in one process (the machine's
    drift between runs is larger than the difference)."""
    from django.core.handlers.wsgi import WSGIHandler

    from config.token_lane import TokenLaneWSGIHandler

    chains = {"every middleware": WSGIHandler(), "the token lane": TokenLaneWSGIHandler()}
    clients = {
        name: [_Client(application, token) for token in tokens] for name, application in chains.items()
    }
    for name in chains:
        _cpu_ms_per_judgment(clients[name], campaign, cycles)  # warm-up
    measured: dict[str, list[float]] = {name: [] for name in chains}
    for _ in range(blocks):
        for name in chains:
            measured[name].append(_cpu_ms_per_judgment(clients[name], campaign, cycles))
    print(f"# CPU per judgment, {blocks} alternating blocks of {cycles} judgments (medians, range)")
    for name, values in measured.items():
        print(f"{name}: {statistics.median(values):.2f} ms ({min(values):.2f}-{max(values):.2f})")


class _Client:
    """One assessor's requests, handed to the WSGI application as gunicorn hands them (an environ,
    start_response, the body iterated and closed)."""

    def __init__(self, application: WSGIHandler, token: str) -> None:
        self.application, self.authorization = application, f"Token {token}"

    def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "localhost",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "localhost",
            "HTTP_AUTHORIZATION": self.authorization,
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "CONTENT_LENGTH": str(len(body)),
            "CONTENT_TYPE": "application/json" if body else "",
        }
        status: list[str] = []
        response = self.application(environ, lambda line, headers: status.append(line))
        try:
            content = b"".join(response)
        finally:
            response.close()
        return int(status[0].split()[0]), content


def _next(client: _Client, campaign: int) -> int:
    status, content = client.request("GET", f"/api/campaigns/{campaign}/next/")
    assert status == 200, (status, content[:300])
    return int(json.loads(content)["task"])


def _answer(client: _Client, task: int) -> None:
    body = json.dumps({"grade": 1, "seconds": 3.5}).encode()
    status, content = client.request("POST", f"/api/tasks/{task}/answer/", body)
    assert status == 201, (status, content[:300])


if __name__ == "__main__":
    main()
