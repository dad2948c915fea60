"""Personas from the labeling tests, and small top-k and pairwise campaigns with a truth oracle."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from pairwise.services import pairwise_configure
from uploads.run_imports import runs_import

TOPICS = ("401", "402")
DOCUMENTS_PER_TOPIC = 8


def docno(topic: str, number: int) -> str:
    return f"D{topic}-{number}"


def true_relevance(document: str) -> int:
    """The oracle's relevance: the document's number (D401-5 has 5)."""
    return int(document.rsplit("-", 1)[1])


def _run(tag: str, ranked_numbers: list[int]) -> tuple[str, io.BytesIO]:
    lines = [
        f"{topic} Q0 {docno(topic, number)} {rank} {100 - rank}.0 {tag}\n"
        for topic in TOPICS
        for rank, number in enumerate(ranked_numbers, start=1)
    ]
    return f"{tag}.run", io.BytesIO("".join(lines).encode())


# The good run ranks by true relevance (best first), the poor run the other way round; both
# rank all eight documents of each topic.
GOOD = list(range(DOCUMENTS_PER_TOPIC, 0, -1))
POOR = list(range(1, DOCUMENTS_PER_TOPIC + 1))


@pytest.fixture
def make_campaign(
    coordinator: AbstractBaseUser,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
) -> Callable[..., Campaign]:
    def make(*, overlap: int = 1, start: bool = True, **pairwise: object) -> Campaign:
        made = campaign_create(
            creator=coordinator,
            name="pairs",
            metric="DCG@5",
            budget=100,
            budget_unit="judgments",
            overlap=overlap,
            seed=20121,  # fixes which side each pair is shown on
        )
        runs_import(campaign=made, files=[_run("good", GOOD), _run("poor", POOR)])
        campaign_assessors_assign(campaign=made, usernames=["alice", "bob"])
        settings = {"mode": "topk", "k": 3, "documents_per_topic": 6, **pairwise}
        pairwise_configure(campaign=made, **settings)
        return campaign_start(campaign=made) if start else made

    return make


@pytest.fixture
def topk_campaign(make_campaign: Callable[..., Campaign]) -> Campaign:
    """Two topics, n = 6 of 8 documents per topic (the fused runs' best), k = 3, running."""
    return make_campaign()
