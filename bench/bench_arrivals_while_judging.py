"""Assessors' latency while runs arrive: a 600,000-line run, then ten arrivals in a row.

The release train on the quiet embedded default: gunicorn with the production settings on SQLite
(one process with four threads, shared by the assessors and the uploads, the worst case) and the
embedded default's Celery worker (file broker), which recomputes as answers and arrivals come. A
running ``items`` campaign (DCG@10, 300 topics, two pooled runs of 20 documents a topic, its
first draws made) is judged by assessor threads through the API (token auth, ``GET /next/`` then
``POST /answer/``, ``--think`` seconds between an answer and the next item) while the
coordinator posts, one after another, ``--big-lines`` lines of one arriving run (2,000
documents a topic at the default) and then ``--arrivals`` runs of 20 documents a topic, each
with a top-up budget of 20 labels, to ``POST .../arrivals/``. Prints
each arrival's time and the assessors' latencies meanwhile (median, p95, max, the slowest five
with when they came and what they were) and any 5xx.

    .venv/bin/python bench/bench_arrivals_while_judging.py            # 600,000 lines, 10 arrivals
    .venv/bin/python bench/bench_arrivals_while_judging.py --think 1 --assessors 5  # people's pace
    .venv/bin/python bench/bench_arrivals_while_judging.py --big-lines 60000 --arrivals 3
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.labeling.test_upload_while_judging import (  # noqa: E402
    SETUP_IDS_PRINTED,
    SETUP_PEOPLE,
    SETUP_RUNS_AND_START,
    Upload,
    uploads_while_judging,
)

TOPICS = 300

SETUP = (
    SETUP_PEOPLE
    + """
from labeling.recompute import recompute
campaign = campaigns.campaign_create(creator=coordinator, name="release train", metric="DCG@10",
                                     grades=["Bad", "Fair", "Good"], strategy="items", budget=3000,
                                     budget_unit="judgments", pool_depth=10, seed=7)
"""
    + SETUP_RUNS_AND_START
    + """
recompute(campaign.pk)  # the first draws: a campaign takes arrivals once it has drawn
"""
    + SETUP_IDS_PRINTED
)


def run_file(tag: str, lines: int, shift: int) -> bytes:
    """`lines` lines of a run over the campaign's topics: each topic's documents in rank order,
    shifted by `shift` so its top ten differ from the pooled runs'."""
    per_topic = max(1, lines // TOPICS)
    return "".join(
        f"{t} Q0 d{t}-{r + shift} {r + 1} {per_topic - r} {tag}\n"
        for t in range(TOPICS)
        for r in range(per_topic)
    ).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big-lines", type=int, default=600_000)
    parser.add_argument("--arrivals", type=int, default=10)
    parser.add_argument("--assessors", type=int, default=3)
    parser.add_argument(
        "--think",
        type=float,
        default=0.02,
        help="seconds an assessor waits between an answer and the next item (0.02: as fast as served)",
    )
    arguments = parser.parse_args()

    def uploads(ids: dict[str, Any]) -> list[Upload]:
        path = f"/api/campaigns/{ids['campaign']}/arrivals/"
        fields = (("budget", "20"), ("reference", "a"), ("rule", "anytime"))
        big = Upload(path, "big.run", run_file("big", arguments.big_lines, 3), fields)
        return [big] + [
            Upload(path, f"rel{n}.run", run_file(f"rel{n}", 20 * TOPICS, 1 + n % 7), fields)
            for n in range(1, arguments.arrivals + 1)
        ]

    with tempfile.TemporaryDirectory() as folder:
        seen = uploads_while_judging(
            Path(folder),
            SETUP,
            uploads,
            arguments.assessors,
            workers=1,
            celery_worker=True,
            think_seconds=arguments.think,
        )
    summary: dict[str, Any] = dict(seen.summary())
    summary["big_lines"] = arguments.big_lines
    summary["think_seconds"] = arguments.think
    summary["arrival_seconds"] = [round(seconds, 2) for seconds in seen.upload_times]
    summary["last_status"] = seen.upload_status
    summary["last_answer"] = seen.upload_body[:300].decode(errors="replace")
    summary["server_errors"] = sum(status >= 500 for status in seen.statuses)
    summary["over_a_second"] = sum(latency > 1.0 for latency in seen.latencies)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
