"""Two assessors racing for the only heap: exactly one drives it."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from pairwise import services
from pairwise.models import TopKHeap
from tests.concurrency import at_once
from uploads.run_imports import runs_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def _next_at_once(
    campaign_id: int, users: tuple[AbstractBaseUser, ...]
) -> tuple[list[int | None], list[BaseException]]:
    """Each user asks for a pair at the same moment; the heaps their pairs came from."""

    def ask(user: AbstractBaseUser) -> int | None:
        task = services.pair_next(campaign=Campaign.objects.get(pk=campaign_id), assessor=user)
        return None if task is None else task.heap_id

    return at_once(users, ask)


@pytest.mark.django_db(transaction=True)
def test_it_gives_the_only_heap_to_one_of_two_racing_assessors(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    for round_number in range(3):
        campaign = campaign_create(
            creator=coordinator,
            name=f"race {round_number}",
            metric="DCG@4",
            budget=5,
            judging_mode="topk",
            mode_settings={"k": 2},
        )
        run = "".join(f"7 Q0 R-{number} {number} {10 - number}.0 only\n" for number in range(1, 5))
        runs_import(campaign=campaign, files=[("only.run", io.BytesIO(run.encode()))])
        campaign_assessors_assign(campaign=campaign, usernames=["alice", "bob"])
        campaign_start(campaign=campaign)
        heaps, failures = _next_at_once(campaign.pk, (assessor, second_assessor))
        assert not failures, failures
        winners = [heap for heap in heaps if heap is not None]
        assert len(winners) == 1, heaps
        heap = TopKHeap.objects.get(campaign=campaign)
        assert heap.pk == winners[0] and heap.assessor_id in {assessor.pk, second_assessor.pk}
