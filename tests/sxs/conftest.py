"""Personas from the labeling tests, and a small SxS campaign: three runs, two topics, K = 3."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from uploads.imports import documents_import, qrels_import, topics_import
from uploads.run_imports import runs_import

TOPICS = ("301", "302")
# Each run ranks five documents per topic; with K = 3 the lists are its first three.
RUNS = {
    "alpha": [1, 2, 3, 4, 5],
    "beta": [3, 2, 1, 5, 4],
    "gamma": [5, 4, 6, 1, 2],
}
# Imported qrels grade some documents; the rest of the listed ones need a grade ("judge").
QRELS = {("301", 1): 2, ("301", 2): 1, ("301", 3): 0, ("302", 1): 2, ("302", 2): 1, ("302", 3): 0}


def docno(topic: str, number: int) -> str:
    return f"T{topic}-{number}"


def _run(tag: str, numbers: list[int]) -> tuple[str, io.BytesIO]:
    lines = [
        f"{topic} Q0 {docno(topic, number)} {rank} {100 - rank}.0 {tag}\n"
        for topic in TOPICS
        for rank, number in enumerate(numbers, start=1)
    ]
    return f"{tag}.run", io.BytesIO("".join(lines).encode())


# Bootstrap replicates per refit in these tests (the service's default, the core's 200, repeats
# the whole fit per replicate: seconds per refit). Intervals exist from a few replicates on.
TEST_BOOTSTRAP = 5


@pytest.fixture(autouse=True)
def fast_bootstrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sxs.services.learning.BOOTSTRAP", TEST_BOOTSTRAP)


@pytest.fixture
def make_sxs(
    coordinator: AbstractBaseUser,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
) -> Callable[..., Campaign]:
    def make(*, overlap: int = 1, start: bool = True, qrels: bool = True, **settings: object) -> Campaign:
        made = campaign_create(
            creator=coordinator,
            name="side by side",
            metric="DCG@3",
            grades=["Bad", "Fair", "Good"],
            budget=100,
            judging_mode="sxs",
            mode_settings={"k": 3, **settings},
            overlap=overlap,
            seed=4242,
        )
        topics = "".join(
            json.dumps({"qid": qid, "title": f"query {qid}", "description": "d", "narrative": "n"}) + "\n"
            for qid in TOPICS
        )
        topics_import(campaign=made, files=[("topics.jsonl", io.BytesIO(topics.encode()))])
        documents = "".join(
            json.dumps({"docno": docno(qid, n), "title": f"Doc {qid}/{n}", "text": f"text {n} " * 80}) + "\n"
            for qid in TOPICS
            for n in range(1, 7)
        )
        documents_import(campaign=made, files=[("docs.jsonl", io.BytesIO(documents.encode()))])
        runs_import(campaign=made, files=[_run(tag, numbers) for tag, numbers in RUNS.items()])
        if qrels:
            lines = "".join(f"{qid} 0 {docno(qid, n)} {grade}\n" for (qid, n), grade in QRELS.items())
            qrels_import(campaign=made, files=[("q.txt", io.BytesIO(lines.encode()))])
        campaign_assessors_assign(campaign=made, usernames=["alice", "bob"])
        return campaign_start(campaign=made) if start else made

    return make


@pytest.fixture
def sxs_campaign(make_sxs: Callable[..., Campaign]) -> Campaign:
    """Running: 2 topics x 3 system pairs = 6 comparisons; documents 4, 5 and 6 need grades."""
    return make_sxs()
