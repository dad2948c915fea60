"""One assessor as a process of its own (own Django cache, own recompute thread), for the burst tests.

``python -m tests.labeling.burst_assessor CAMPAIGN USERNAME COUNT REPORT`` judges COUNT items of
the campaign as fast as it can with the services a web request calls, then, like a web server
that lives on, waits until its recompute requests are queued, and writes a JSON report: for every
answer its start (epoch seconds) and its duration, then how the wait ended. It runs with the
environment of `tests.workers.CeleryWorker.env` (database, VAR_DIR, REDIS_URL or none).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

# How long the process waits for its recompute requests to be queued (a hung Redis included).
FLUSH_SECONDS = 60.0


def main(argv: list[str]) -> int:
    campaign_id, username, count, report = int(argv[1]), argv[2], int(argv[3]), Path(argv[4])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from graded.claims import task_next
    from graded.judging import task_answer
    from labeling.models import Campaign
    from labeling.recompute import recompute_soon_wait

    campaign = Campaign.objects.get(pk=campaign_id)
    user = get_user_model().objects.get(username=username)
    answers: list[tuple[float, float]] = []
    for index in range(count):
        task = task_next(campaign=campaign, assessor=user)
        if task is None:
            break
        started, clock = time.time(), time.perf_counter()
        task_answer(task=task, assessor=user, grade=index % 3, seconds=1.0)
        answers.append((started, time.perf_counter() - clock))
    finished = time.monotonic()
    flushed = recompute_soon_wait(timeout=FLUSH_SECONDS)
    report.write_text(
        json.dumps({"answers": answers, "flushed": flushed, "flush_seconds": time.monotonic() - finished})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
