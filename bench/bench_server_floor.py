"""The web server's own share: gunicorn, with `config/gunicorn.py`'s worker settings, serving a WSGI
application that does nothing but answer like the judging API does (a JSON body of the size of
a task, the security headers our responses carry).

What it measures is the floor under `bench_team.py`'s CPU per judgment that no change to our code
can lower: reading and parsing each request, building its environ, writing the response, and
handing the kept-alive connection back to the worker's poller. Teams of assessor threads
(keep-alive, token header) post answers flat out for a warm-up and a measured window; the figure
is gunicorn's CPU (all its processes, from /proc) per request, and per judgment (two requests on
the `next` + answer cycle).

Usage::

    .venv/bin/python bench/bench_server_floor.py                    # 10 and 50 clients, 3 runs
    .venv/bin/python bench/bench_server_floor.py --teams 50 --duration 5 --repeat 1

Writes bench/results/server-floor.json and .md.
"""

from __future__ import annotations

import argparse
import json
import platform
import signal
import subprocess
import sys
import threading
import time

import numpy as np
from bench_http import cpu_seconds_by_role
from floor_app import BODY
from http_support import REPO_ROOT, Api, free_port, wait_for_port

RESULTS_DIR = REPO_ROOT / "bench" / "results"


def server_command(port: int) -> list[str]:
    """gunicorn with the production worker settings (config/gunicorn.py's values, as flags: the
    file's start-up hook checks Django's settings, which this application does not use)."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from config import gunicorn as production

    return [
        sys.executable,
        "-m",
        "gunicorn",
        "floor_app:application",
        "--chdir",
        str(REPO_ROOT / "bench"),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(production.workers),
        "--worker-class",
        production.worker_class,
        "--threads",
        str(production.threads),
        "--worker-connections",
        str(production.worker_connections),
        "--keep-alive",
        str(production.keepalive),
        "--no-control-socket",
    ]


def client_loop(port: int, stop: float, window_start: float, counts: list[int], index: int) -> None:
    api = Api(port, token="0123456789abcdef0123456789abcdef01234567")
    try:
        while time.perf_counter() < stop:
            status, _ = api.call("POST", "/api/tasks/1/answer/", {"grade": 1, "seconds": 3.5})
            if status == 200 and time.perf_counter() >= window_start:
                counts[index] += 1
    finally:
        api.close()


def one_run(team: int, warmup: float, duration: float) -> dict[str, float]:
    port = free_port()
    process = subprocess.Popen(server_command(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, 30, process)
        start = time.perf_counter()
        window_start, stop = start + warmup, start + warmup + duration
        counts = [0] * team
        threads = [
            threading.Thread(target=client_loop, args=(port, stop, window_start, counts, index), daemon=True)
            for index in range(team)
        ]
        for thread in threads:
            thread.start()
        time.sleep(warmup)
        before = cpu_seconds_by_role()["gunicorn"]
        for thread in threads:
            thread.join()
        used = cpu_seconds_by_role()["gunicorn"] - before
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    requests = sum(counts)
    return {
        "clients": team,
        "requests_per_second": round(requests / duration, 1),
        "clients_never_served": sum(1 for count in counts if count == 0),
        "cpu_ms_per_request": round(1000.0 * used / max(requests, 1), 3),
        "cpu_ms_per_judgment": round(2000.0 * used / max(requests, 1), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--teams", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--name", default="server-floor")
    args = parser.parse_args()
    runs = []
    for repeat in range(1, args.repeat + 1):
        for team in args.teams:
            run = {"repeat": repeat, **one_run(team, args.warmup, args.duration)}
            print(json.dumps(run), flush=True)
            runs.append(run)
    medians = {
        team: {
            key: float(np.median([run[key] for run in runs if run["clients"] == team]))
            for key in ("requests_per_second", "cpu_ms_per_request", "cpu_ms_per_judgment")
        }
        for team in args.teams
    }
    result = {
        "setup": {
            "machine": platform.platform(),
            "warmup_s": args.warmup,
            "duration_s": args.duration,
            "repeat": args.repeat,
            # The command's own words, without this checkout's location.
            "server": " ".join(server_command(0)[3:]).replace(f"{REPO_ROOT}/", ""),
        },
        "runs": runs,
        "medians": medians,
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    rows = [
        f"| {team} | {m['requests_per_second']:.0f} | **{m['cpu_ms_per_request']:.3f}** | "
        f"**{m['cpu_ms_per_judgment']:.3f}** |"
        for team, m in medians.items()
    ]
    every = [
        f"| {run['clients']} | {run['repeat']} | {run['requests_per_second']} | "
        f"{run['clients_never_served']} | {run['cpu_ms_per_request']} |"
        for run in runs
    ]
    text = f"""# The web server's floor: gunicorn serving an application that does nothing

`{result["setup"]["server"]}` (config/gunicorn.py's worker settings), {args.warmup} s warm-up,
{args.duration} s measured, keep-alive clients posting a small JSON answer with a token header;
the reply is a fixed {len(BODY)}-byte JSON body with our security headers. gunicorn's CPU from
/proc, all its processes. Medians of {args.repeat} run(s):

| clients | requests/s | gunicorn CPU ms / request | per judgment (2 requests) |
|---|---:|---:|---:|
{chr(10).join(rows)}

Every run:

| clients | run | requests/s | clients never served | CPU ms / request |
|---|---|---:|---:|---:|
{chr(10).join(every)}

Measured {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())} with `python bench/bench_server_floor.py`.
"""
    (RESULTS_DIR / f"{args.name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
