"""How a team outgrows one machine, and loses part of it (the scenario: `tests/cluster.py`): two
web nodes and two named Celery workers on one PostgreSQL and one Redis, 40 assessors split across
the web nodes; mid-run one web node is killed and restarted, and the worker holding a recompute is
killed for good.

What must hold: no task leased to two assessors, every acknowledged answer stored exactly once
and nothing else stored, the latest snapshot counts every judgment within 15 s of the last one
(the dead worker's recomputes are taken over by the live one), snapshots never count fewer
judgments than the one before, no two recomputes of the campaign overlap, a finished pool ends
the campaign, and no error logged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import Cluster, cluster_on, run_scenario

SNAPSHOT_SECONDS = 15.0


@pytest.fixture
def cluster(postgres_url: str, redis_url: str, tmp_path: Path) -> Iterator[Cluster]:
    # Recomputes 2 s apart and a sweep every second: the test waits seconds, not tens.
    with cluster_on(
        postgres_url, redis_url, tmp_path, LABELING_RECOMPUTE_MIN_SECONDS="2", LABELING_SWEEP_SECONDS="1"
    ) as handle:
        yield handle


@pytest.mark.servers
@pytest.mark.alone
@pytest.mark.slow
def test_two_web_nodes_and_two_workers_lose_one_of_each_and_lose_nothing(cluster: Cluster) -> None:
    report = run_scenario(
        cluster,
        assessors=40,
        # DCG@10 pools each run's top 10 of 20: 12,000 items, more than the run judges.
        topics=600,
        depth=20,
        judging_seconds=24.0,
        kill_web_at=5.0,
        restart_web_at=8.0,
        kill_worker_at=11.0,
        snapshot_seconds=SNAPSHOT_SECONDS,
    )
    assert not report.assessor_failures, report.assessor_failures[:5]
    assert report.current_after is not None, (
        f"{SNAPSHOT_SECONDS:.0f} s after the last answer the latest snapshot counts "
        f"{report.latest_snapshot} of {report.judgments} judgments"
    )
    assert report.judgments >= 1000, report.judgments  # enough happened around the kills
    assert not report.served_twice, report.served_twice[:10]
    assert report.stored_twice == 0, "an answer stored twice"
    assert report.acknowledged_not_stored == 0 and report.stored_not_acknowledged == 0, report
    counts = report.snapshot_counts
    assert counts == sorted(counts), f"a snapshot counted fewer judgments than the one before: {counts}"
    assert report.status == ("done" if report.judgments == report.pool else "running"), report.status
    assert len(report.recomputes) >= 3 and report.survivor_recomputes > 0, report.recomputes
    assert not report.overlapping, report.overlapping
    # Printed in full: pytest shortens a long assertion message.
    for name, text in report.errors_logged.items():
        print(f"--- {name}'s first error:\n{text}")
    assert not report.errors_logged, list(report.errors_logged)
    print(
        f"{report.judgments} judgments; {len(report.recomputes)} recomputes; latest snapshot current "
        f"{report.current_after:.1f} s after the last answer"
    )
