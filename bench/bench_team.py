"""Team benchmark: the embedded default (`make run`'s server over SQLite) under 10 and 50 assessors.

Starts exactly what `make run` starts, `manage.py serve_with_worker` (gunicorn with
config/gunicorn.py plus a Celery worker on the filesystem broker), over SQLite in a temporary
VAR_DIR, on a free loopback port. Builds a campaign through the REST API (bench_http's: 100 topics
x 3 synthetic runs of depth 200, about 40,000 items to judge, a budget that never runs out), then
for each team size lets that many assessor threads loop ``GET /next/`` + ``POST /answer/`` flat
out (token auth, keep-alive) for a warm-up and a measured window. Reports judgments per second,
p50/p95 of next and answer, errors, items served to two assessors, assessors never served (no
judgment in the window), and every 204 (with this much work left and budget to spare, any 204 is
one while work remains).

Usage::

    .venv/bin/python bench/bench_team.py                      # 10 and 50 assessors, 30 s each
    .venv/bin/python bench/bench_team.py --teams 50 --duration 10 --repeat 3
    .venv/bin/python bench/bench_team.py --answer-with-next   # one request per judgment, as the page

Writes bench/results/NAME.json and NAME.md (NAME defaults to team).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from bench_http import ADMIN_USERNAME, PASSWORD, build_campaign, cpu_seconds_by_role
from http_support import REPO_ROOT, Api, free_port, manage, postgres_server, redis_server, wait_for_port

RESULTS_DIR = REPO_ROOT / "bench" / "results"


@contextlib.contextmanager
def make_run_server(
    env: dict[str, str], workdir: Path, workers: int | None, threads: int | None, dev: bool = False
) -> Iterator[int]:
    """`manage.py serve_with_worker` (what `make run` starts after migrate and demo; with `dev`,
    what `make dev` starts) on a free port; yields the port and stops it as a kill would."""
    port = free_port()
    command = [sys.executable, "manage.py", "serve_with_worker", f"127.0.0.1:{port}"]
    if dev:
        command.append("--dev")
    if workers:
        command += ["--workers", str(workers)]
    if threads:
        command += ["--threads", str(threads)]
    log = open(workdir / "server.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, 60, process)
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@dataclass
class TeamRecorder:
    """What the assessors saw; latencies (seconds) only of requests ending in the window."""

    window_start: float
    window_end: float
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"next": [], "answer": []})
    statuses: dict[str, int] = field(default_factory=dict)
    judgments: int = 0
    # Judgments stored in the window per assessor: one who stored none was never served (a
    # connection the server did not accept, a request that never returned), which no latency shows.
    judgments_by_assessor: dict[int, int] = field(default_factory=dict)
    no_content: int = 0  # next answered 204 (at any time, warm-up included)
    served_to: dict[int, int] = field(default_factory=dict)  # task -> first assessor served it
    double_served: int = 0
    cpu: list[dict[str, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, started: float, finished: float, status: int, assessor: int) -> None:
        with self.lock:
            if kind == "next" and status == 204:
                self.no_content += 1
            if not (self.window_start <= finished < self.window_end):
                return
            self.latencies[kind].append(finished - started)
            key = f"{kind} {status}"
            self.statuses[key] = self.statuses.get(key, 0) + 1
            if kind == "answer" and status == 201:
                self.judgments += 1
                self.judgments_by_assessor[assessor] = self.judgments_by_assessor.get(assessor, 0) + 1

    def served(self, task: int, assessor: int) -> None:
        with self.lock:
            first = self.served_to.setdefault(task, assessor)
            if first != assessor:
                self.double_served += 1


def assessor_loop(
    port: int,
    token: str,
    index: int,
    campaign: int,
    recorder: TeamRecorder,
    keep_alive: bool = True,
    answer_with_next: bool = False,
) -> None:
    """Next, answer with a random grade at once, repeat, until the window ends; without
    `keep_alive`, a new connection for every request (a client that does not reuse them); with
    `answer_with_next`, as the judging page does: the answer (``?next=1``) brings the next task, and
    `GET /next/` is asked only when it brought none."""
    rng = np.random.default_rng(index)
    api = Api(port, token)
    next_path = f"/api/campaigns/{campaign}/next/"
    upcoming = None
    try:
        while time.perf_counter() < recorder.window_end:
            if upcoming is None:
                if not keep_alive:
                    api.connection.close()  # http.client connects again on the next request
                started = time.perf_counter()
                status, body = api.call("GET", next_path)
                recorder.add("next", started, time.perf_counter(), status, index)
                if status != 200:
                    time.sleep(0.05)
                    continue
                upcoming = json.loads(body)
            task = int(upcoming["task"])
            recorder.served(task, index)
            payload = {"grade": int(rng.integers(0, 3)), "seconds": float(rng.uniform(2, 30))}
            started = time.perf_counter()
            if not keep_alive:
                api.connection.close()
            answer_path = f"/api/tasks/{task}/answer/" + ("?next=1" if answer_with_next else "")
            status, body = api.call("POST", answer_path, payload)
            recorder.add("answer", started, time.perf_counter(), status, index)
            upcoming = json.loads(body).get("next") if answer_with_next and status in (200, 201) else None
    finally:
        api.close()


def run_team(
    port: int,
    campaign: int,
    tokens: list[str],
    warmup: float,
    duration: float,
    keep_alive: bool = True,
    answer_with_next: bool = False,
) -> TeamRecorder:
    start = time.perf_counter()
    recorder = TeamRecorder(window_start=start + warmup, window_end=start + warmup + duration)
    sampler = threading.Timer(warmup, lambda: recorder.cpu.append(cpu_seconds_by_role()))
    threads = [
        threading.Thread(
            target=assessor_loop,
            args=(port, token, index, campaign, recorder, keep_alive, answer_with_next),
            daemon=True,
        )
        for index, token in enumerate(tokens)
    ]
    for thread in threads:
        thread.start()
    sampler.start()
    for thread in threads:
        thread.join()
    recorder.cpu.append(cpu_seconds_by_role())
    return recorder


def summarise(recorder: TeamRecorder, duration: float, team: int) -> dict[str, object]:
    requests = {}
    for kind, values in recorder.latencies.items():
        array = np.array(values or [np.nan]) * 1000.0
        requests[kind] = {
            "requests": len(values),
            "p50_ms": round(float(np.percentile(array, 50)), 1),
            "p95_ms": round(float(np.percentile(array, 95)), 1),
            "p99_ms": round(float(np.percentile(array, 99)), 1),
        }
    errors = sum(
        count for key, count in recorder.statuses.items() if key.split()[1] not in ("200", "201", "204")
    )
    used = {role: recorder.cpu[1][role] - recorder.cpu[0][role] for role in recorder.cpu[0]}
    cores = {role: round(seconds / duration, 2) for role, seconds in used.items()}
    server_roles = ("gunicorn", "celery worker", "postgres", "redis")
    per_judgment = {role: 1000.0 * used[role] / max(recorder.judgments, 1) for role in server_roles}
    return {
        "judgments": recorder.judgments,
        "judgments_per_second": round(recorder.judgments / duration, 1),
        "requests": requests,
        "statuses": recorder.statuses,
        "errors": errors,
        "double_served": recorder.double_served,
        "assessors_never_served": team - len(recorder.judgments_by_assessor),
        "no_content_while_work_remains": recorder.no_content,
        # Only our processes: the machine's other work (another PostgreSQL) is not this server's.
        "cores_used": {role: cores[role] for role in (*server_roles, "load generator")},
        # Server CPU per judgment (next + answer): gunicorn's, and every server process's.
        "cpu_ms_per_judgment": {
            "server": round(sum(per_judgment.values()), 2),
            **{role: round(ms, 2) for role, ms in per_judgment.items()},
        },
    }


def unjudged_left(env: dict[str, str], campaign: int) -> int:
    """Pool items of the campaign without a judgment (the work that remained)."""
    script = (
        "import django; django.setup()\n"
        "from labeling.models import Judgment, PoolItem\n"
        f"pool = PoolItem.objects.filter(campaign_id={campaign}).count()\n"
        f"judged = Judgment.objects.filter(campaign_id={campaign}).count()\n"
        "print(pool - judged)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, check=True, capture_output=True, text=True
    )
    return int(done.stdout.strip().splitlines()[-1])


def pool_items_of(env: dict[str, str]) -> int:
    """Pool items of one benchmark campaign (all are built alike)."""
    script = (
        "import django; django.setup()\n"
        "from labeling.models import Campaign, PoolItem\n"
        "print(PoolItem.objects.filter(campaign=Campaign.objects.order_by('pk').last()).count())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, check=True, capture_output=True, text=True
    )
    return int(done.stdout.strip().splitlines()[-1])


def write_markdown(result: dict[str, object], path: Path) -> None:
    setup = result["setup"]
    rows = []
    for run in result["runs"]:  # type: ignore[union-attr]
        nxt, answer = run["requests"]["next"], run["requests"]["answer"]
        rows.append(
            f"| {run['assessors']} | {run['repeat']} | **{run['judgments_per_second']}** | {nxt['p50_ms']} | "
            f"{nxt['p95_ms']} | {answer['p50_ms']} | {answer['p95_ms']} | {run['errors']} | "
            f"{run['double_served']} | {run['assessors_never_served']} | "
            f"{run['no_content_while_work_remains']} | "
            f"{run['cpu_ms_per_judgment']['gunicorn']} | {run['cpu_ms_per_judgment']['server']} | "
            f"{run['load_average_at_start']} |"
        )
    medians = []
    for team, numbers in result["medians"].items():  # type: ignore[union-attr]
        medians.append(
            f"| {team} | **{numbers['judgments_per_second']}** | {numbers['next_p95_ms']} | "
            f"{numbers['answer_p95_ms']} | **{numbers['gunicorn_cpu_ms_per_judgment']}** | "
            f"{numbers['server_cpu_ms_per_judgment']} |"
        )
    connections = "keep-alive" if setup["keep_alive"] else "a new connection per request"
    loop = (
        "`POST /answer/?next=1` (the judging page's path: the answer brings the next task; `GET /next/` "
        "only when it brought none)"
        if setup.get("answer_with_next")
        else "`GET /next/` + `POST /answer/`"
    )
    text = f"""# Team benchmark: {setup["database"]}

`manage.py serve_with_worker` ({setup["web_server"]}, and a Celery worker) over
{setup["database"]}, in a temporary directory, on one
{setup["cores"]}-core machine shared with other work ({setup["machine"]}). Campaign: {setup["topics"]}
topics x 3 synthetic runs of depth {setup["depth"]} ({setup["pool_items"]} items to judge), passive
sampling, a budget that never runs out. Each team of assessors (threads, {connections}, token auth)
loops {loop} flat out: {setup["warmup_s"]} s warm-up, {setup["duration_s"]} s
measured. Target at 50: >= 100 judgments/s, p95 <= 250 ms, no error, no double serving, no 204
while work remains, no assessor without a judgment in the window ("never served": a connection
the server did not take, which no latency would show).

Medians over {setup["repeat"]} run(s):

| assessors | judgments/s | next p95 ms | answer p95 ms | gunicorn CPU ms / judgment \
| servers' CPU ms / judgment |
|---|---|---|---|---|---|
{chr(10).join(medians)}

Every run:

| assessors | run | judgments/s | next p50 | next p95 | answer p50 | answer p95 | errors | double-served \
| never served | 204s | gunicorn CPU ms / judgment | servers' CPU ms / judgment | load at start |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

A fresh campaign per run; at least {result["unjudged_at_end"]} of its items were still unjudged at
the end of every run (so any 204 counted above would have been one while work remained).
Latencies in ms. CPU per judgment (one `next` + one answer): the processes' CPU time over the
measured window divided by the judgments stored in it; "servers" adds the Celery worker and, with
`--postgresql-redis`, PostgreSQL and Redis to gunicorn. "load at start": the 1-minute load
average.

Measured {result["measured_at"]} with `python bench/bench_team.py`.
"""
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, nargs="+", default=[10, 50], help="assessors per run")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--repeat", type=int, default=1, help="runs per team size (medians reported)")
    parser.add_argument("--workers", type=int, default=None, help="gunicorn processes (config/gunicorn.py's)")
    parser.add_argument(
        "--threads", type=int, default=None, help="threads per process (config/gunicorn.py's)"
    )
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--depth", type=int, default=200)
    parser.add_argument(
        "--dev", action="store_true", help="`make dev`'s development server instead (for comparison)"
    )
    parser.add_argument(
        "--postgresql-redis",
        action="store_true",
        help="a throwaway PostgreSQL and Redis instead of SQLite and the filesystem broker",
    )
    parser.add_argument("--no-keep-alive", action="store_true", help="a new connection for every request")
    parser.add_argument(
        "--answer-with-next",
        action="store_true",
        help="as the judging page does: each answer (?next=1) brings the next task, one request per judgment",
    )
    parser.add_argument("--name", default="team")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()

    sys.path.insert(0, str(REPO_ROOT))
    from config import gunicorn as gunicorn_config

    workers = args.workers or gunicorn_config.workers
    threads = args.threads or gunicorn_config.threads
    runs: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="bench-team-") as tmp, contextlib.ExitStack() as servers:
        workdir = Path(tmp)
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("DATABASE_URL", "REDIS_URL", "PRODUCTION", "DEBUG")
        }
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "DEBUG": "0",  # as `make run` would be with DEBUG unset, minus the debug pages' cost
                "VAR_DIR": str(workdir / "var"),
                "DJANGO_SUPERUSER_USERNAME": ADMIN_USERNAME,
                "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
                "DJANGO_SUPERUSER_EMAIL": "bench@example.org",
            }
        )
        if args.postgresql_redis:
            # Its own directory: the server's user cannot enter this process's private one.
            database_dir = Path(servers.enter_context(tempfile.TemporaryDirectory(prefix="bench-team-pg-")))
            env["DATABASE_URL"] = servers.enter_context(postgres_server(database_dir))
            env["REDIS_URL"] = servers.enter_context(redis_server())
        manage(env, "migrate", "--noinput")
        manage(env, "createsuperuser", "--noinput")
        with make_run_server(env, workdir, args.workers, args.threads, args.dev) as port:
            accounts = None
            for repeat in range(1, args.repeat + 1):
                for team in args.teams:
                    # A fresh campaign per run, so no run finds the work of the ones before done.
                    print(f"building a campaign ({args.topics} topics, depth {args.depth}) ...", flush=True)
                    campaign, tokens = build_campaign(
                        port,
                        env,
                        max(args.teams),
                        args.topics,
                        args.depth,
                        accounts,
                        f"team {team} #{repeat}",
                    )
                    accounts = ([f"assessor{i:02d}" for i in range(max(args.teams))], tokens)
                    load = round(os.getloadavg()[0], 2)
                    print(
                        f"{team} assessors, run {repeat}: {args.warmup} s + {args.duration} s ...", flush=True
                    )
                    recorder = run_team(
                        port,
                        campaign,
                        tokens[:team],
                        args.warmup,
                        args.duration,
                        not args.no_keep_alive,
                        args.answer_with_next,
                    )
                    run = {"assessors": team, "repeat": repeat, "load_average_at_start": load}
                    run.update(summarise(recorder, args.duration, team))
                    run["unjudged_at_end"] = unjudged_left(env, campaign)
                    print(json.dumps(run), flush=True)
                    runs.append(run)
        server_log = (workdir / "server.log").read_text(errors="replace")
        locked = server_log.count("database is locked")
        if locked or "Traceback" in server_log:
            print("server log shows errors; its end:\n" + server_log[-6000:], file=sys.stderr)
        left = min(int(run["unjudged_at_end"]) for run in runs)
        pool_items = pool_items_of(env)

    medians = {}
    for team in args.teams:
        mine = [run for run in runs if run["assessors"] == team]
        medians[str(team)] = {
            "judgments_per_second": float(np.median([run["judgments_per_second"] for run in mine])),
            "next_p95_ms": float(np.median([run["requests"]["next"]["p95_ms"] for run in mine])),
            "answer_p95_ms": float(np.median([run["requests"]["answer"]["p95_ms"] for run in mine])),
            "gunicorn_cpu_ms_per_judgment": float(
                np.median([run["cpu_ms_per_judgment"]["gunicorn"] for run in mine])
            ),
            "server_cpu_ms_per_judgment": float(
                np.median([run["cpu_ms_per_judgment"]["server"] for run in mine])
            ),
        }
    result = {
        "setup": {
            "teams": args.teams,
            "warmup_s": args.warmup,
            "duration_s": args.duration,
            "repeat": args.repeat,
            "web_server": "Django's development server (`make dev`, `--dev`)"
            if args.dev
            else f"gunicorn, {workers} gthread workers x {threads} threads",
            "database": "PostgreSQL and Redis (throwaway servers)"
            if args.postgresql_redis
            else "SQLite (WAL) and the filesystem broker",
            "keep_alive": not args.no_keep_alive,
            "answer_with_next": args.answer_with_next,
            "topics": args.topics,
            "depth": args.depth,
            "pool_items": f"about {round(pool_items, -3):,}",
            "cores": os.cpu_count(),
            "machine": f"{platform.machine()}, Python {platform.python_version()}",
        },
        "runs": runs,
        "medians": medians,
        "unjudged_at_end": left,
        "database_locked_in_log": locked,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    write_markdown(result, args.output / f"{args.name}.md")
    print((args.output / f"{args.name}.md").read_text())


if __name__ == "__main__":
    main()
