"""Queue top-ups: pool items are drawn once, and a pool item's coverage flags (drawn, prejudged)
say exactly whether it is judged or has an open task, which is what a top-up reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign, Judgment, PoolItem, Task
from labeling.services.campaigns import campaign_assessors_assign, campaign_start
from sampling.draws import BLOCKED_EXHAUSTED, draws_top_up
from tests.conftest import upload
from uploads.imports import qrels_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def _covered_by_work(campaign: Campaign) -> set[tuple[int, int]]:
    judged = Judgment.objects.filter(campaign=campaign).values_list("topic_id", "document_id")
    open_tasks = Task.objects.filter(campaign=campaign, answered_at__isnull=True).values_list(
        "topic_id", "document_id"
    )
    return set(judged) | set(open_tasks)


def _covered_by_flags(campaign: Campaign) -> set[tuple[int, int]]:
    flagged = PoolItem.objects.filter(campaign=campaign).filter(Q(drawn=True) | Q(prejudged=True))
    return set(flagged.values_list("topic_id", "document_id"))


def _pool(campaign: Campaign) -> set[tuple[int, int]]:
    return set(PoolItem.objects.filter(campaign=campaign).values_list("topic_id", "document_id"))


def test_it_draws_each_pool_item_once_until_the_pool_is_exhausted(
    draft_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    # Topic 2 is partly judged already: its qrels items must never be drawn.
    qrels_import(campaign=draft_campaign, files=[upload("old.qrels", "2 0 d2-1 2\n2 0 d2-3 0\n9 0 d9-1 1\n")])
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    pool = _pool(campaign)
    assert len(pool) == 21  # 3 topics x 7 documents (runs A and B overlap on d3-d5)
    for _ in range(50):
        # Every step: the flags a top-up reads agree with the judgments and open tasks.
        covered = _covered_by_work(campaign)
        assert _covered_by_flags(campaign) == covered & pool
        task = task_next(campaign=campaign, assessor=assessor)
        if task is None:
            break
        task_answer(task=task, assessor=assessor, grade=1, seconds=2.0)
    else:
        raise AssertionError("the pool never ran out")
    # Every pool item was judged exactly once: by the qrels or by one drawn task.
    assessed = list(
        Judgment.objects.filter(campaign=campaign, source=Judgment.Source.ASSESSOR).values_list(
            "topic_id", "document_id"
        )
    )
    prejudged = set(
        PoolItem.objects.filter(campaign=campaign, prejudged=True).values_list("topic_id", "document_id")
    )
    assert len(prejudged) == 2 and not prejudged & set(assessed)
    assert len(assessed) == len(set(assessed)) == len(pool) - len(prejudged)
    assert set(assessed) | prejudged == pool
    campaign.refresh_from_db()
    assert campaign.blocked == BLOCKED_EXHAUSTED
    assert draws_top_up(campaign_id=campaign.pk) == 0


def test_a_request_holding_an_older_copy_does_not_redraw_for_a_blocked_campaign(
    campaign: Campaign, django_assert_max_num_queries: Callable[..., Any]
) -> None:
    """The claim tops up ahead only while the campaign is not blocked; a request whose copy was
    read before the block reads the stored row and stops there (one statement), where it redid
    the whole draw (sampling state, budget, coverage: dozens of statements) at every claim."""
    Campaign.objects.filter(pk=campaign.pk).update(blocked="")
    older_copy = Campaign.objects.get(pk=campaign.pk)
    with CaptureQueriesContext(connection) as unblocked:
        draws_top_up(campaign_id=older_copy.pk, refit=False)
    assert len(unblocked.captured_queries) > 3  # what the block saves
    Campaign.objects.filter(pk=campaign.pk).update(blocked=BLOCKED_EXHAUSTED)
    assert not older_copy.blocked
    with django_assert_max_num_queries(1):
        assert draws_top_up(campaign_id=older_copy.pk, refit=False) == 0
