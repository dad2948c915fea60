"""`judge-labels.csv` with many labels outside the pool: when its first bytes and its last arrive.

A judge of one campaign holds ``--labels`` labels (none of them on a pooled pair: an upload of a
whole collection's labels); the export is read through Django's test client as a browser reads a
download. Prints the seconds to the header, to the first row and to the end, and the size.

    python bench/bench_judge_labels_export.py --labels 700000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "bench"))
from django_setup import django_for_bench  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=700_000)
    args = parser.parse_args()
    django_for_bench(Path(tempfile.mkdtemp()), quiet=True)
    from django.test import Client

    from labeling.services.campaigns import campaign_create
    from operations.accounts import user_create
    from sampling import Judge, JudgeLabel

    admin = user_create(creator=None, username="bench", password="bench-pass-9z!", role="admin")
    campaign = campaign_create(
        creator=admin, name="labels", metric="DCG@5", grades=["0", "1", "2"], budget=10
    )
    judge = Judge.objects.create(campaign=campaign, name="collection", kind="upload")
    batch = []
    for number in range(args.labels):
        grade = number % 3
        batch.append(
            JudgeLabel(
                judge=judge, qid=f"q{number % 5000}", docno=f"d{number}", grade=grade, judge_class=grade
            )
        )
        if len(batch) == 20_000:
            JudgeLabel.objects.bulk_create(batch)
            batch = []
    JudgeLabel.objects.bulk_create(batch)
    client = Client()
    client.force_login(admin)
    started = time.perf_counter()
    answer = client.get(f"/api/campaigns/{campaign.pk}/export/judge-labels.csv")
    chunks = iter(answer.streaming_content)
    header = next(chunks)
    at_header = time.perf_counter() - started
    first = next(chunks)
    at_first = time.perf_counter() - started
    size = len(header) + len(first) + sum(len(chunk) for chunk in chunks)
    at_end = time.perf_counter() - started
    print(
        f"{args.labels} labels outside the pool (SQLite): header after {at_header:.3f} s, first rows "
        f"after {at_first:.2f} s, all {size / 1e6:.1f} MB after {at_end:.1f} s"
    )


if __name__ == "__main__":
    main()
