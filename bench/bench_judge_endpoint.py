"""The endpoint judge's client (`estimation.judges.endpoint`) against a local chat-completions
server (`tests.chat_server`, Python's threading HTTP server on loopback): requests per second at
8 concurrent, with an instant model and with a model that takes 50 ms per answer, and the
client's overhead per request over a bare httpx POST of the same body.

- throughput: ``EndpointClient.ask_many`` over N prompts, concurrency 8, no rate limit;
- overhead: one request at a time, ``EndpointClient.ask`` (retry bookkeeping, rate limiter,
  JSON body, answer parsing) against ``httpx.Client.post`` + ``.json()`` on the same server;
  the difference of the medians per request.

Each figure is the median of ``--repeats`` rounds. The server is in the same process and shares
the 2 cores, so these are floors for the client, not a model server's speed.

Usage: ``python bench/bench_judge_endpoint.py [--requests 1000] [--repeats 5]``. Writes
``bench/results/judge_endpoint.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from estimation.judges.endpoint import EndpointClient, EndpointSettings  # noqa: E402
from estimation.judges.prompts import DEFAULT_PROMPT, DocumentText, TopicText, render_prompt  # noqa: E402
from tests.chat_server import ChatServerState, chat_server  # noqa: E402

RESULTS = BENCH / "results"
DOCUMENT = " ".join(["Green roofs lower the surface temperature of city blocks in summer."] * 20)


def prompts(n: int) -> list[tuple[tuple[str, str], str]]:
    template = DEFAULT_PROMPT + "\n[{qid}/{docno}]"
    topic = TopicText("1", "urban heat islands")
    return [
        (
            (topic.qid, f"d{i}"),
            render_prompt(template, topic, DocumentText(f"d{i}", "", DOCUMENT), n_grades=4),
        )
        for i in range(n)
    ]


def throughput(n: int, delay: float, concurrency: int) -> float:
    with chat_server(ChatServerState(delay_seconds=delay)) as (url, state):
        client = EndpointClient(EndpointSettings(base_url=url, model="bench", concurrency=concurrency))
        items = prompts(n)
        started = time.perf_counter()
        answers = list(client.ask_many(items))
        seconds = time.perf_counter() - started
        client.close()
    assert len(answers) == n and all(a.grade is not None for a in answers)
    return n / seconds


def per_request(n: int) -> tuple[float, float]:
    """Median seconds per request: our client, and a bare httpx POST of the same body."""
    items = prompts(n)
    with chat_server() as (url, _):
        client = EndpointClient(EndpointSettings(base_url=url, model="bench", concurrency=1))
        ours = []
        for key, prompt in items:
            started = time.perf_counter()
            client.ask(key, prompt)
            ours.append(time.perf_counter() - started)
        client.close()
        bare = []
        with httpx.Client() as plain:
            for _, prompt in items:
                body = client.body(prompt)
                started = time.perf_counter()
                plain.post(client.settings.url, json=body).json()
                bare.append(time.perf_counter() - started)
    return statistics.median(ours), statistics.median(bare)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    instant = [throughput(args.requests, 0.0, 8) for _ in range(args.repeats)]
    slow = [throughput(max(200, args.requests // 4), 0.05, 8) for _ in range(args.repeats)]
    pairs = [per_request(max(200, args.requests // 4)) for _ in range(args.repeats)]
    ours = statistics.median(p[0] for p in pairs)
    bare = statistics.median(p[1] for p in pairs)
    report = {
        "command": "python bench/bench_judge_endpoint.py "
        f"--requests {args.requests} --repeats {args.repeats}",
        "requests_per_second_instant_model_8_concurrent": round(statistics.median(instant), 1),
        "requests_per_second_50ms_model_8_concurrent": round(statistics.median(slow), 1),
        "ideal_50ms_8_concurrent": 160.0,
        "client_ms_per_request": round(ours * 1000, 3),
        "bare_httpx_ms_per_request": round(bare * 1000, 3),
        "overhead_ms_per_request": round((ours - bare) * 1000, 3),
        "rounds": {"instant": instant, "slow": slow, "per_request": pairs},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "judge_endpoint.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "rounds"}, indent=1))


if __name__ == "__main__":
    main()
