"""HTTP benchmark: simulated assessors judging through the REST API of a real deployment.

Starts a throwaway PostgreSQL cluster and gunicorn (gthread workers) on free loopback ports,
builds a campaign through the REST API (users, topics, synthetic runs large enough never to run
out), then lets N assessor threads loop ``GET /api/campaigns/{id}/next/`` + ``POST
/api/tasks/{task}/answer/`` with token auth for a fixed time after a warm-up. Reports sustained
judgments per second and latency percentiles per request type, and the number of SQL queries
each request type makes (Django's CaptureQueriesContext on the same database).

Usage::

    .venv/bin/python bench/bench_http.py                 # 50 assessors, 5 s warm-up, 30 s measured
    .venv/bin/python bench/bench_http.py --duration 10   # a quicker look

    .venv/bin/python bench/bench_http.py --think 5 --name http-think5   # assessors who read first
    .venv/bin/python bench/bench_http.py --combined --name http-combined  # answer + next in one call
    .venv/bin/python bench/bench_http.py --rate 300 --name http-rate300   # offer 300 judgments/s

Writes bench/results/NAME.json and NAME.md (NAME defaults to http).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from http_support import (
    REPO_ROOT,
    Api,
    celery_worker,
    expect,
    gunicorn_server,
    manage,
    postgres_bin_dir,
    postgres_server,
    redis_server,
)

RESULTS_DIR = REPO_ROOT / "bench" / "results"
ADMIN_USERNAME = "bench-admin"
PASSWORD = "bench-password-7f3c"  # a throwaway cluster that lives for one run


# ---------------------------------------------------------------- campaign


def synthetic_files(topics: int, depth: int, seed: int) -> tuple[bytes, list[tuple[str, bytes]]]:
    """Topics as JSONL and three overlapping TREC runs of the given depth per topic."""
    rng = np.random.default_rng(seed)
    topic_lines = [
        json.dumps(
            {
                "id": f"B{q:03d}",
                "title": f"benchmark topic {q}",
                "description": f"Find documents about benchmark subject {q}.",
                "narrative": "Any document that discusses the subject is relevant.",
            }
        )
        for q in range(topics)
    ]
    collection = np.arange(3 * depth)  # per topic, so the runs overlap but pool ~2x depth
    runs = []
    for system in range(3):
        lines = []
        for q in range(topics):
            docs = rng.choice(collection, size=depth, replace=False)
            for rank, doc in enumerate(docs, start=1):
                lines.append(f"B{q:03d} Q0 D{q:03d}-{doc:05d} {rank} {depth - rank + 0.5:.3f} sys{system}")
        runs.append((f"sys{system}.run", ("\n".join(lines) + "\n").encode()))
    return ("\n".join(topic_lines) + "\n").encode(), runs


ASSESSOR_SCRIPT = """
import json, django
django.setup()
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from labeling.permissions import ROLE_ASSESSOR, role_group
group = role_group(ROLE_ASSESSOR)
tokens = []
for name in NAMES:
    user = get_user_model().objects.create_user(username=name)  # token-only: no password to hash
    user.groups.add(group)
    tokens.append(Token.objects.create(user=user).key)
print(json.dumps(tokens))
"""


def assessor_accounts(env: dict[str, str], names: list[str]) -> list[str]:
    """Assessor accounts with API tokens, made directly in the database (set-up, not measured):
    50 password hashes through the API would only slow the set-up down."""
    script = ASSESSOR_SCRIPT.replace("NAMES", json.dumps(names))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, check=True, capture_output=True, text=True
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def build_campaign(
    port: int,
    env: dict[str, str],
    assessors: int,
    topics: int,
    depth: int,
    accounts: tuple[list[str], list[str]] | None = None,
    name: str = "HTTP benchmark",
) -> tuple[int, list[str]]:
    """The campaign, its topics, runs and assessors through the REST API; returns id and tokens.
    `accounts` (names, tokens) reuses assessors made for an earlier campaign."""
    admin = Api(port)
    status, body = admin.call("POST", "/api/auth/token/", {"username": ADMIN_USERNAME, "password": PASSWORD})
    admin = Api(port, str(expect(status, body, 200)["token"]))
    if accounts is None:
        names = [f"assessor{i:02d}" for i in range(assessors)]
        tokens = assessor_accounts(env, names)
    else:
        names, tokens = accounts
    status, body = admin.call(
        "POST",
        "/api/campaigns/",
        {
            "name": name,
            "metric": "DCG@10",
            "grades": ["not relevant", "relevant", "highly relevant"],
            "goal": "leaderboard",
            "goal_k": 3,
            "strategy": "passive",
            "budget": 1_000_000,  # the default LABELING_MAX_BUDGET; far more than the pool
            "budget_unit": "judgments",
            "pool_depth": depth,
        },
    )
    campaign = int(expect(status, body, 201)["id"])
    topic_file, run_files = synthetic_files(topics, depth, seed=20260411)
    expect(*admin.upload(f"/api/campaigns/{campaign}/topics/", [("topics.jsonl", topic_file)]), 200, 201)
    expect(*admin.upload(f"/api/campaigns/{campaign}/runs/", run_files), 200, 201)
    expect(*admin.call("POST", f"/api/campaigns/{campaign}/assessors/", {"usernames": names}), 200, 201)
    expect(*admin.call("POST", f"/api/campaigns/{campaign}/start/", {}), 200, 201, 204)
    admin.close()
    return campaign, tokens


# ---------------------------------------------------------------- load


def cpu_seconds_by_role() -> dict[str, float]:
    """CPU seconds used so far by gunicorn, PostgreSQL, the Celery worker, Redis and this load
    generator (Linux /proc), ended children included."""
    ticks = os.sysconf("SC_CLK_TCK")
    totals = {"gunicorn": 0.0, "postgres": 0.0, "celery worker": 0.0, "redis": 0.0, "load generator": 0.0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime + stime, and cutime + cstime: the children that ended and were waited for (a
        # PostgreSQL backend whose connection closed inside the window, counted by its postmaster).
        used = sum(int(value) for value in fields[11:15]) / ticks
        if int(entry.name) == os.getpid():
            totals["load generator"] += used
        elif b"gunicorn" in command:
            totals["gunicorn"] += used
        elif b"postgres" in command:
            totals["postgres"] += used
        elif b"celery" in command:
            totals["celery worker"] += used
        elif b"redis-server" in command:
            totals["redis"] += used
    return totals


@dataclass
class Recorder:
    """Latencies (seconds) of requests that finished inside the measured window."""

    window_start: float
    window_end: float
    latencies: dict[str, list[float]] = field(
        default_factory=lambda: {"next": [], "answer": [], "answer+next": []}
    )
    judgments: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    cpu: list[dict[str, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, started: float, finished: float, status: int) -> None:
        if not (self.window_start <= finished < self.window_end):
            return
        with self.lock:
            self.latencies[kind].append(finished - started)
            key = f"{kind} {status}"
            self.statuses[key] = self.statuses.get(key, 0) + 1
            if kind.startswith("answer") and status == 201:
                self.judgments += 1


def assessor_loop(
    port: int,
    token: str,
    campaign: int,
    recorder: Recorder,
    seed: int,
    think: float = 0.0,
    combined: bool = False,
    pace: float = 0.0,
) -> None:
    """One simulated assessor: next item, (think,) answer with a random grade, repeat.

    With think = 0 every assessor answers at once: a saturation test of the server. With a
    mean think time the load is what people reading documents would offer. Combined, the
    answer asks for the next item in the same request (``?next=1``), as the judge page does.
    With a pace, judgments start at the times of a Poisson process of that mean gap (an offered
    load, whatever the server's speed), and the latency of a judgment's first request counts from
    its scheduled start: a server that falls behind is charged for the wait (no coordinated
    omission).
    """
    rng = np.random.default_rng(seed)
    api = Api(port, token)
    next_path = f"/api/campaigns/{campaign}/next/"
    task = None
    scheduled = time.perf_counter() + (float(rng.exponential(pace)) if pace > 0 else 0.0)
    try:
        while time.perf_counter() < recorder.window_end:
            cycle_start = None
            if pace > 0:
                time.sleep(max(0.0, scheduled - time.perf_counter()))
                cycle_start = min(scheduled, time.perf_counter())
            if task is None:
                started = time.perf_counter() if cycle_start is None else cycle_start
                cycle_start = None
                status, body = api.call("GET", next_path)
                recorder.add("next", started, time.perf_counter(), status)
                if status != 200:
                    time.sleep(0.05)  # nothing leasable right now (204) or an error: back off a little
                    continue
                task = json.loads(body)["task"]
            if think > 0:
                time.sleep(float(rng.exponential(think)))
            payload = {"grade": int(rng.integers(0, 3)), "seconds": float(rng.uniform(2, 30))}
            started = time.perf_counter() if cycle_start is None else cycle_start
            path = f"/api/tasks/{task}/answer/" + ("?next=1" if combined else "")
            status, body = api.call("POST", path, payload)
            recorder.add("answer+next" if combined else "answer", started, time.perf_counter(), status)
            upcoming = json.loads(body).get("next") if combined and status in (200, 201) else None
            task = None if upcoming is None else upcoming["task"]
            scheduled += float(rng.exponential(pace)) if pace > 0 else 0.0
    finally:
        api.close()


def run_load(
    port: int,
    campaign: int,
    tokens: list[str],
    warmup: float,
    duration: float,
    think: float = 0.0,
    combined: bool = False,
    rate: float = 0.0,
) -> Recorder:
    """All assessors at once; only requests finishing inside the measured window count. A rate
    (judgments per second, all assessors together) paces them instead of letting them run flat out."""
    pace = len(tokens) / rate if rate > 0 else 0.0
    start = time.perf_counter()
    recorder = Recorder(window_start=start + warmup, window_end=start + warmup + duration)
    cpu_sampler = threading.Timer(warmup, lambda: recorder.cpu.append(cpu_seconds_by_role()))
    threads = [
        threading.Thread(
            target=assessor_loop,
            args=(port, token, campaign, recorder, i, think, combined, pace),
            daemon=True,
        )
        for i, token in enumerate(tokens)
    ]
    for thread in threads:
        thread.start()
    cpu_sampler.start()
    for thread in threads:
        thread.join()
    recorder.cpu.append(cpu_seconds_by_role())
    return recorder


def summarise(recorder: Recorder, duration: float) -> dict[str, object]:
    per_kind = {}
    for kind, values in recorder.latencies.items():
        if not values:
            continue  # a request type this loop does not make
        array = np.array(values) * 1000.0
        per_kind[kind] = {
            "requests": int(array.size),
            "per_second": round(array.size / duration, 1),
            "p50_ms": round(float(np.percentile(array, 50)), 2) if array.size else None,
            "p95_ms": round(float(np.percentile(array, 95)), 2) if array.size else None,
            "p99_ms": round(float(np.percentile(array, 99)), 2) if array.size else None,
            "mean_ms": round(float(array.mean()), 2) if array.size else None,
        }
    # Cores busy per role over the measured window (the last requests end just after it).
    cores = {
        role: round((recorder.cpu[1][role] - recorder.cpu[0][role]) / duration, 2) for role in recorder.cpu[0]
    }
    return {
        "cores_used": cores,
        "judgments": recorder.judgments,
        "judgments_per_second": round(recorder.judgments / duration, 1),
        "requests": per_kind,
        "statuses": recorder.statuses,
    }


# ---------------------------------------------------------------- query counts


def query_profile(env: dict[str, str], campaign: int, token: str, cycles: int = 20) -> dict[str, object]:
    """SQL queries per request type over a few next + answer cycles (Django's test client on the
    benchmark database): the usual count, the most seen (a queue top-up) and the usual SQL."""
    script = f"""
import json, statistics, django
django.setup()
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
client = Client(HTTP_AUTHORIZATION="Token {token}", HTTP_HOST="localhost")
seen = {{"next": [], "answer": [], "answer+next": []}}
for cycle in range({cycles}):
    with CaptureQueriesContext(connection) as next_queries:
        response = client.get("/api/campaigns/{campaign}/next/")
    assert response.status_code == 200, response.status_code
    task = response.json()["task"]
    with CaptureQueriesContext(connection) as answer_queries:
        response = client.post(f"/api/tasks/{{task}}/answer/", {{"grade": 1, "seconds": 3.5}},
                               content_type="application/json")
    assert response.status_code == 201, response.status_code
    seen["next"].append([q["sql"][:300] for q in next_queries.captured_queries])
    seen["answer"].append([q["sql"][:300] for q in answer_queries.captured_queries])
    response = client.get("/api/campaigns/{campaign}/next/")
    task = response.json()["task"]
    with CaptureQueriesContext(connection) as combined_queries:
        response = client.post(f"/api/tasks/{{task}}/answer/?next=1", {{"grade": 1, "seconds": 3.5}},
                               content_type="application/json")
    assert response.status_code == 201 and response.json()["next"], response.status_code
    seen["answer+next"].append([q["sql"][:300] for q in combined_queries.captured_queries])
out = {{}}
for name, runs in seen.items():
    counts = [len(run) for run in runs]
    usual = int(statistics.median_low(counts))
    out[name] = {{"queries": usual, "max_queries": max(counts), "sql": runs[counts.index(usual)]}}
print(json.dumps(out))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- report


def write_markdown(result: dict[str, object], path: Path) -> None:
    setup = result["setup"]
    rows = []
    for kind, numbers in result["requests"].items():  # type: ignore[union-attr]
        rows.append(
            f"| {kind} | {numbers['requests']} | {numbers['per_second']} | {numbers['p50_ms']} | "
            f"{numbers['p95_ms']} | {numbers['p99_ms']} | {result['queries'][kind]['queries']} "
            f"(up to {result['queries'][kind]['max_queries']}) |"
        )  # type: ignore[index]
    think = float(setup["think_s"])
    think_text = (
        f" (reading for an exponential time of mean {think:g} s in between)"
        if think > 0
        else " with no pause in between (a saturation test)"
    )
    rate = float(setup.get("rate") or 0.0)
    if rate > 0:
        think_text = (
            f", paced: together they start {rate:g} judgments/s at the times of a Poisson process"
            " (the latency of a judgment's first request counts from its scheduled start, so a server"
            " that falls behind is charged for the wait)"
        )
    if setup.get("combined"):
        think_text += (
            "; combined: after the first item, each answer asks for the next item in the same "
            "request (`POST /api/tasks/{task}/answer/?next=1`), so a judgment is one round trip"
        )
    target_text = (
        "Latency at the load that many people reading documents offer (not a capacity test)."
        if think > 0
        else "Target: >= 300 judgments/s with p95 <= 100 ms."
    )
    if rate > 0:
        target_text = f"Offered: {rate:g} judgments/s. {target_text}"
    redis_text = (
        ", Redis as cache and broker and a Celery worker refitting the campaign" if setup.get("redis") else ""
    )
    load_start_text = ", ".join(map(str, setup["load_average_at_start"]))
    load_end = setup.get("load_average_at_end")
    load_end_text = f"; at the end: {', '.join(map(str, load_end))}" if load_end else ""
    text = f"""# HTTP benchmark

{setup["assessors"]} simulated assessors (threads, keep-alive connections, token auth) loop
`GET /api/campaigns/{{id}}/next/` + `POST /api/tasks/{{task}}/answer/`{think_text} against gunicorn
({setup["gunicorn_workers"]} gthread workers x {setup["gunicorn_threads"]} threads, production settings)
and PostgreSQL {setup["postgres"]} (fsync on){redis_text}, all on one {setup["cores"]}-core machine
({setup["machine"]}); {setup["warmup_s"]} s warm-up, then {setup["duration_s"]} s measured. Campaign:
{setup["topics"]} topics x 3 synthetic runs of depth {setup["depth"]}, passive sampling.

**Sustained: {result["judgments_per_second"]} judgments/s** ({result["judgments"]} judgments in
{setup["duration_s"]} s). {target_text}

| request | count | per second | p50 ms | p95 ms | p99 ms | SQL queries |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Statuses in the window: {", ".join(f"{k}: {v}" for k, v in sorted(result["statuses"].items()))}.
Cores busy during the window: {", ".join(f"{k} {v}" for k, v in result["cores_used"].items() if v)}; load
average (1, 5, 15 min) when the run started: {load_start_text}{load_end_text}.
SQL queries: the usual count per request (the most seen, when a request also tops up the queue of draws).

Measured {result["measured_at"]} with `python bench/bench_http.py`.
"""
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assessors", type=int, default=50)
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before measuring")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds measured")
    # config/gunicorn.py's choice: one process per core plus one, two threads each (profiling
    # runs of 15 s flat out on two cores, workers x threads: 3 x 2 398 judgments/s, 4 x 2 395, 3 x 4 373,
    # 2 x 4 276, 6 x 1 243; noisy, but more threads per process only fight over the GIL).
    parser.add_argument("--workers", type=int, default=(os.cpu_count() or 1) + 1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--depth", type=int, default=200, help="documents per topic per run")
    parser.add_argument(
        "--queue-target",
        type=int,
        default=None,
        help="LABELING_QUEUE_TARGET for the server (open tasks kept drawn ahead); default: the setting's",
    )
    parser.add_argument(
        "--think", type=float, default=0.0, help="mean seconds an assessor reads before answering (0: none)"
    )
    parser.add_argument(
        "--combined", action="store_true", help="answer and lease the next item in one request (?next=1)"
    )
    parser.add_argument(
        "--rate", type=float, default=0.0, help="offer this many judgments/s in all (0: as fast as served)"
    )
    parser.add_argument(
        "--redis",
        action="store_true",
        help="as in production: Redis for cache and broker, and a real Celery worker refitting the campaign",
    )
    parser.add_argument("--name", default="http", help="result file names: NAME.json and NAME.md")
    parser.add_argument("--wsgi", default="config.wsgi", help="WSGI application gunicorn serves")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()

    load_at_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        workdir = Path(tmp)
        os.chmod(workdir, 0o755)
        with contextlib.ExitStack() as servers:
            database_url = servers.enter_context(postgres_server(workdir))
            env = {
                **os.environ,
                "DATABASE_URL": database_url,
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "PRODUCTION": "1",
                "SECRET_KEY": uuid.uuid4().hex * 2,
                "ALLOWED_HOSTS": "localhost,127.0.0.1",
                "SECURE_SSL_REDIRECT": "0",
                "VAR_DIR": str(workdir / "var"),
                "LOG_LEVEL": "WARNING",
                "DJANGO_SUPERUSER_USERNAME": ADMIN_USERNAME,
                "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
                "DJANGO_SUPERUSER_EMAIL": "bench@example.org",
            }
            if args.queue_target is not None:
                env["LABELING_QUEUE_TARGET"] = str(args.queue_target)
            if args.redis:
                env["REDIS_URL"] = servers.enter_context(redis_server())
            manage(env, "migrate", "--noinput")
            manage(env, "createsuperuser", "--noinput")
            if args.redis:
                servers.enter_context(celery_worker(env, workdir))
            with gunicorn_server(env, args.workers, args.threads, workdir, args.wsgi) as port:
                print(f"building the campaign ({args.topics} topics, depth {args.depth}) ...", flush=True)
                campaign, tokens = build_campaign(port, env, args.assessors, args.topics, args.depth)
                print(
                    f"{args.assessors} assessors: {args.warmup} s warm-up + {args.duration} s ...", flush=True
                )
                recorder = run_load(
                    port, campaign, tokens, args.warmup, args.duration, args.think, args.combined, args.rate
                )
            if any(key.split()[1].startswith("5") for key in recorder.statuses):
                # Server errors under load are findings: show the traceback gunicorn logged.
                log = (workdir / "gunicorn.log").read_text(errors="replace")
                print("server errors during the run; end of gunicorn's log:\n" + log[-6000:], file=sys.stderr)
            profile_env = {**env, "PRODUCTION": "0", "DEBUG": "0", "ALLOWED_HOSTS": "localhost"}
            queries = query_profile(profile_env, campaign, tokens[0])
            postgres_version = subprocess.run(
                [str(postgres_bin_dir() / "postgres"), "--version"], capture_output=True, text=True
            ).stdout.split()[2]

    result = {
        "setup": {
            "assessors": args.assessors,
            "warmup_s": args.warmup,
            "duration_s": args.duration,
            "queue_target": args.queue_target,
            "wsgi": args.wsgi,
            "think_s": args.think,
            "combined": args.combined,
            "rate": args.rate,
            "redis": args.redis,
            # Other work on the machine competes for the same two cores: say how busy it was.
            "load_average_at_start": [round(value, 2) for value in load_at_start],
            "load_average_at_end": [round(value, 2) for value in os.getloadavg()],
            "gunicorn_workers": args.workers,
            "gunicorn_threads": args.threads,
            "topics": args.topics,
            "depth": args.depth,
            "cores": os.cpu_count(),
            "machine": f"{platform.machine()}, Python {platform.python_version()}",
            "postgres": postgres_version,
        },
        **summarise(recorder, args.duration),
        "queries": queries,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    write_markdown(result, args.output / f"{args.name}.md")
    print((args.output / f"{args.name}.md").read_text())


if __name__ == "__main__":
    main()
