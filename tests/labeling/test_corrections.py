"""Discarding a judgment by hand puts its item back to be judged, under the same draw."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign, Draw, Judgment, PoolItem, Task
from labeling.services.corrections import judgment_discard
from tests.conftest import upload
from uploads.imports import qrels_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def test_it_reopens_the_task_of_a_discarded_assessor_judgment(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    judgment, _ = task_answer(task=task, assessor=assessor, grade=2, seconds=3.0)
    draws = Draw.objects.filter(campaign=campaign).count()
    judgment_discard(judgment=judgment)
    assert not Judgment.objects.filter(pk=judgment.pk).exists()
    reopened = Task.objects.get(pk=task.pk)
    assert reopened.answered_at is None and reopened.assessor_id is None
    assert PoolItem.objects.get(pk=task.pool_item_id).drawn, "still drawn: its draw stands"
    # The next assessor gets it back (it is first in draw order), under the same draw.
    again = task_next(campaign=campaign, assessor=second_assessor)
    assert again.pk == task.pk and again.draw_id == task.draw_id
    task_answer(task=again, assessor=second_assessor, grade=1, seconds=2.0)
    assert Draw.objects.filter(campaign=campaign).count() == draws
    assert Judgment.objects.get(task_id=task.pk).assessor_id == second_assessor.pk


def test_it_makes_an_item_drawable_again_when_its_only_qrels_judgment_goes(
    draft_campaign: Campaign,
) -> None:
    qrels_import(campaign=draft_campaign, files=[upload("q.qrels", "2 0 d2-1 2\n2 0 d2-3 0\n")])
    item = PoolItem.objects.get(campaign=draft_campaign, topic__qid="2", document__docno="d2-1")
    assert item.prejudged
    judgment_discard(judgment=Judgment.objects.get(campaign=draft_campaign, document__docno="d2-1"))
    item.refresh_from_db()
    assert not item.prejudged
    assert PoolItem.objects.get(campaign=draft_campaign, document__docno="d2-3").prejudged


def test_it_discards_through_the_admin_instead_of_a_bare_delete(
    campaign: Campaign, assessor: AbstractBaseUser, admin: AbstractBaseUser
) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    judgment, _ = task_answer(task=task, assessor=assessor, grade=0, seconds=1.0)
    client = Client()
    client.force_login(admin)
    response = client.post(
        "/admin/labeling/judgment/",
        {"action": "delete_selected", "_selected_action": [judgment.pk], "post": "yes"},
    )
    assert response.status_code == 302
    assert not Judgment.objects.filter(pk=judgment.pk).exists()
    assert Task.objects.get(pk=task.pk).answered_at is None
