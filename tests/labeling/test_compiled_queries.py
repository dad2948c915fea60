"""`CompiledQuery` (infrastructure.compiled_queries) gives what the queryset it was built from gives,
select_related objects and annotations included, on SQLite and PostgreSQL, compiling once."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import F, OuterRef, Subquery
from django.test.utils import CaptureQueriesContext

from graded.claims import task_next
from infrastructure.compiled_queries import CompiledQuery
from labeling.models import Campaign, CampaignMember, Task

pytestmark = pytest.mark.postgresql


def _tasks_with(task_id: int, user_id: int):  # type: ignore[no-untyped-def]
    role = CampaignMember.objects.filter(campaign_id=OuterRef("campaign_id"), user_id=user_id).values("role")[
        :1
    ]
    return (
        Task.objects.select_related("campaign", "topic")
        .annotate(document_length=F("document__length"), member_role=Subquery(role))
        .filter(pk=task_id)[:1]
    )


def test_it_gives_what_the_queryset_gives(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    compiled: CompiledQuery[Task] = CompiledQuery(_tasks_with, (int, int))
    leased = task_next(campaign=campaign, assessor=assessor)
    assert leased is not None
    for task in Task.objects.filter(campaign=campaign)[:5]:
        for user_id in (assessor.pk, 999_999):
            expected = next(iter(_tasks_with(task.pk, user_id)), None)
            found = compiled.first(task.pk, user_id)
            assert found is not None and expected is not None
            for name in (
                "pk",
                "campaign_id",
                "assessor_id",
                "leased_at",
                "lease_expires_at",
                "document_length",
                "member_role",
            ):
                assert getattr(found, name) == getattr(expected, name), name
            assert found.campaign.grades == expected.campaign.grades and found.campaign.name == campaign.name
            assert found.topic.qid == expected.topic.qid
    assert compiled.first(0, assessor.pk) is None


def test_it_compiles_once_and_runs_one_statement(
    campaign: Campaign, django_assert_num_queries: object
) -> None:
    compiled: CompiledQuery[Task] = CompiledQuery(lambda task_id: Task.objects.filter(pk=task_id)[:1], (int,))
    task = Task.objects.filter(campaign=campaign).first()
    assert task is not None
    compiled.first(task.pk)
    with CaptureQueriesContext(connection) as queries:
        assert compiled.first(task.pk) == task
    assert len(queries.captured_queries) == 1
    ids = CompiledQuery(
        lambda campaign_id: Task.objects.filter(campaign_id=campaign_id).values_list("pk").order_by("pk"),
        (int,),
    )
    assert [row[0] for row in ids.tuples(campaign.pk)] == list(
        Task.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True)
    )


def test_it_refuses_values_of_another_type_and_shapes_it_cannot_take(campaign: Campaign) -> None:
    compiled: CompiledQuery[Task] = CompiledQuery(lambda task_id: Task.objects.filter(pk=task_id)[:1], (int,))
    with pytest.raises(TypeError, match="expected int"):
        compiled.first("1")
    with pytest.raises(TypeError, match="expected 1 values"):
        compiled.first(1, 2)
    # A builder that drops its value: nothing to substitute.
    dropped: CompiledQuery[Task] = CompiledQuery(lambda task_id: Task.objects.filter(pk=1)[:1], (int,))
    with pytest.raises(ValueError, match="did not reach the parameters"):
        dropped.first(1)
