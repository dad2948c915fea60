"""Helpers the engine's tests and the graded mode's share: the arriving run and its oracle
grades, judging a campaign, the judges' texts, grades and label files."""

from __future__ import annotations

import io
import json

from django.contrib.auth.models import AbstractBaseUser

from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign
from labeling.recompute import recompute
from sampling import (
    judge_run_start,
    judge_run_step,
)
from sampling.models import Judge, JudgeRun
from uploads.imports import documents_import, topics_import


def human_grade(docno: str) -> int:
    """The assessors' grade in these tests: from the document's rank digit (d1-3 -> 2 ... )."""
    return {1: 2, 2: 2, 3: 1, 4: 1}.get(int(docno.rsplit("-", 1)[1]), 0)


def judge_grade(docno: str) -> int:
    """A lenient judge: one grade above the humans, capped."""
    return min(human_grade(docno) + 1, 2)


def pool_labels() -> str:
    docnos = [f"d{q}-{d}" for q in (1, 2, 3) for d in range(1, 8)]
    return "".join(f"{docno.split('-')[0][1:]} 0 {docno} {judge_grade(docno)}\n" for docno in docnos)


TEMPLATE = (
    "Judge [{qid}/{docno}] for the query {query}.\n{document}\nAnswer ##final score: N, N in 0-{top_grade}."
)


SECRET = "sk-judge-test-0123456789"


def texts_import(campaign: Campaign) -> None:
    """Topic and document texts for the toy pool: d{q}-{k} mentions its topic's words k times less."""
    topics = [
        {"id": "1", "title": "solar panel efficiency"},
        {"id": "2", "title": "bicycle lane safety"},
        {"id": "3", "title": "rainwater harvesting tanks"},
    ]
    words = {t["id"]: t["title"] for t in topics}
    documents = [
        {
            "docno": f"d{q}-{d}",
            "title": "",
            "text": " ".join([words[str(q)]] * max(0, 5 - d) + ["filler text"] * d),
        }
        for q in (1, 2, 3)
        for d in range(1, 8)
    ]
    topics_import(
        campaign=campaign,
        files=[("t.jsonl", io.BytesIO("".join(json.dumps(t) + "\n" for t in topics).encode()))],
    )
    documents_import(
        campaign=campaign,
        files=[("d.jsonl", io.BytesIO("".join(json.dumps(d) + "\n" for d in documents).encode()))],
    )


def run_to_end(judge: Judge, steps: int = 50) -> JudgeRun:
    run = judge_run_start(judge)
    for _ in range(steps):
        if judge_run_step(run.pk) != "more":
            break
    run.refresh_from_db()
    return run


# A run that arrives: two of its top five per topic are new to the pool (d?-8, d?-9).
RUN_C = "".join(
    f"{q} Q0 {doc} {rank} {10 - rank}.0 gamma\n"
    for q in (1, 2, 3)
    for rank, doc in enumerate((f"d{q}-8", f"d{q}-1", f"d{q}-9", f"d{q}-4", f"d{q}-6"), start=1)
)


def oracle_grade(docno: str) -> int:
    """The oracle: a fixed grade per document."""
    return int(docno.rsplit("-", 1)[1]) % 3


def judge_some(campaign: Campaign, assessor: AbstractBaseUser, count: int) -> None:
    """Judge up to `count` items as the oracle, the campaign read afresh for each as a request
    reads it (a stale copy would miss a blocked budget and try to draw again at every claim)."""
    for _ in range(count):
        task = task_next(campaign=Campaign.objects.get(pk=campaign.pk), assessor=assessor)
        if task is None:
            break
        task_answer(task=task, assessor=assessor, grade=oracle_grade(task.document.docno), seconds=2.0)
    recompute(campaign.pk)


def within_its_interval_or_beyond_the_range(
    value: float, low: float, high: float, bounds: tuple[float, float]
) -> bool:
    """An estimate lies in its interval, or (a small sample's unbiased estimate can) beyond the
    `bounds` the quantity can take, its interval then cut to that end (the pages mark it †)."""
    lowest, highest = bounds
    assert lowest <= low <= high <= highest, (low, high, bounds)
    return low <= value <= high or (value > high == highest) or (value < low == lowest)
