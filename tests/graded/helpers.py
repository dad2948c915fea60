"""Helpers the tests of tests/graded/ share."""

from __future__ import annotations

import io
from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign
from labeling.recompute import recompute
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_start,
)
from tests.concurrency import at_once
from tests.conftest import RUN_A, RUN_B, upload
from tests.sampling.helpers import RUN_C, oracle_grade
from uploads.run_imports import runs_import

# A run of documents every one of which the oracle grades 0 (docno suffix % 3 == 0), new ones too.
RUN_POOR = "".join(
    f"{q} Q0 {doc} {rank} {10 - rank}.0 poor\n"
    for q in (1, 2, 3)
    for rank, doc in enumerate((f"d{q}-12", f"d{q}-3", f"d{q}-15", f"d{q}-6", f"d{q}-9"), start=1)
)


def claim_at_once(
    campaign_id: int, users: tuple[AbstractBaseUser, ...]
) -> tuple[list[int | None], list[BaseException]]:
    """Each user asks for the next task at the same moment; the task ids they got."""

    def claim(user: AbstractBaseUser) -> int | None:
        task = task_next(campaign=Campaign.objects.get(pk=campaign_id), assessor=user)
        return None if task is None else task.pk

    return at_once(users, claim)


Api = Callable[[AbstractBaseUser | None], APIClient]


def running(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, strategy: str, start: bool = True
) -> Campaign:
    created = api(coordinator).post(
        "/api/campaigns/",
        {"name": "living", "metric": "DCG@5", "grades": ["0", "1", "2"], "strategy": strategy, "budget": 12},
        format="json",
    )
    campaign = Campaign.objects.get(pk=created.json()["id"])
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    return campaign_start(campaign=campaign) if start else campaign


def judge_all(campaign: Campaign, assessor: AbstractBaseUser, *, recompute_each: bool = True) -> int:
    """Answer every task the campaign serves as the oracle; how many. The worker's recompute runs
    after each answer (verdicts read at every label: the most eager schedule a worker can keep),
    or with `recompute_each=False` only once nothing is served (as a worker that spaces its
    recomputes under load; the claims draw meanwhile), again until a recompute serves nothing new:
    enough for a test of what is shown afterwards."""
    answered, recomputed = 0, False
    while True:
        task = task_next(campaign=campaign, assessor=assessor)
        if task is None:
            if recompute_each or recomputed:
                return answered
            recompute(campaign.pk)
            recomputed = True
            continue
        task_answer(task=task, assessor=assessor, grade=oracle_grade(task.document.docno), seconds=2.0)
        answered, recomputed = answered + 1, False
        if recompute_each:
            recompute(campaign.pk)


def arrive(api: Api, user: AbstractBaseUser, campaign: Campaign, text: str = RUN_C, **fields: object):  # noqa: ANN202
    body = {"file": io.BytesIO(text.encode()), **fields}
    body["file"].name = "c.run"  # type: ignore[attr-defined]
    return api(user).post(f"/api/campaigns/{campaign.pk}/arrivals/", body, format="multipart")


# The reference alpha again under another name: identical at every rank.
RUN_ALPHA_AGAIN = RUN_A.replace(" alpha\n", " alpha2\n")
