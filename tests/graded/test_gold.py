"""Gold questions: mixed into an assessor's stream at the set share (qualification first),
answered like any item, stored apart from judgments and draws, and a threshold that pauses an
assessor until the coordinator resumes them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser

from graded import gold
from graded.claims import task_next
from graded.judging import task_answer
from graded.models import GoldAnswer, GoldItem
from labeling.models import Campaign, Draw, Judgment, Task
from labeling.services.campaigns import campaign_assessors_assign, campaign_start, campaign_update
from sampling.estimates import estimates_compute
from tests.conftest import upload
from uploads.imports import qrels_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql

QRELS = "".join(f"{q} 0 d{q}-{d} {d % 3}\n" for q in (1, 2, 3) for d in (1, 2))


@pytest.fixture
def gold_campaign(draft_campaign: Campaign, assessor: AbstractBaseUser) -> Campaign:
    qrels_import(campaign=draft_campaign, files=[upload("q", QRELS)])
    assert gold.gold_mark_from_qrels(campaign=draft_campaign) == 6
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    return campaign_start(campaign=draft_campaign)


def _known(task: Task) -> int | None:
    item = GoldItem.objects.filter(campaign=task.campaign, topic=task.topic, document=task.document).first()
    return None if item is None else item.grade


def _answer(task: Task, assessor: AbstractBaseUser, grade: int, api: Callable) -> int:
    return (
        api(assessor)
        .post(f"/api/tasks/{task.pk}/answer/", {"grade": grade, "seconds": 1}, format="json")
        .status_code
    )


def test_qualification_first_then_the_share_and_never_a_judgment_or_an_estimator_draw(
    gold_campaign: Campaign, assessor: AbstractBaseUser, api: Callable
) -> None:
    gold.gold_configure(campaign=gold_campaign, share=0.25, qualification=2, min_accuracy=0.0, min_answers=5)
    kinds = []
    for _ in range(10):
        task = task_next(campaign=gold_campaign, assessor=assessor)
        assert task is not None
        kinds.append(task.kind)
        grade = _known(task) if task.kind == Task.Kind.GOLD else 1
        assert _answer(task, assessor, grade, api) == 201
    assert kinds[:2] == ["gold", "gold"], "the qualification comes first"
    assert kinds.count("gold") == 3, "2 to qualify, then 1 in 4 of the rest"
    assert GoldAnswer.objects.filter(assessor=assessor, correct=True).count() == 3
    assert Judgment.objects.filter(campaign=gold_campaign, source="assessor").count() == 7
    assert Draw.objects.filter(campaign=gold_campaign, kind=Draw.Kind.GOLD).count() == 3
    assert estimates_compute(gold_campaign)["judgments"] == 7


def test_the_item_looks_like_any_other_and_cannot_be_undone(
    gold_campaign: Campaign, assessor: AbstractBaseUser, api: Callable
) -> None:
    gold.gold_configure(campaign=gold_campaign, share=0.0, qualification=1, min_accuracy=0.0, min_answers=5)
    client = api(assessor)
    item = client.get(f"/api/campaigns/{gold_campaign.pk}/next/").json()
    assert item["kind"] == "grade" and Task.objects.get(pk=item["task"]).kind == "gold"
    assert client.post(f"/api/tasks/{item['task']}/answer/", {"grade": 0}, format="json").status_code == 201
    assert client.post(f"/api/tasks/{item['task']}/answer/", {"grade": 0}, format="json").status_code == 200
    assert GoldAnswer.objects.count() == 1
    assert client.post(f"/api/campaigns/{gold_campaign.pk}/undo/").status_code == 409


def test_wrong_answers_pause_the_assessor_until_the_coordinator_resumes(
    gold_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, api: Callable
) -> None:
    gold.gold_configure(campaign=gold_campaign, share=0.5, qualification=2, min_accuracy=0.75, min_answers=2)
    for _ in range(2):
        task = task_next(campaign=gold_campaign, assessor=assessor)
        assert task.kind == Task.Kind.GOLD
        assert _answer(task, assessor, (_known(task) + 1) % 3, api) == 201
    refused = api(assessor).get(f"/api/campaigns/{gold_campaign.pk}/next/")
    assert refused.status_code == 403 and "Paused" in refused.json()["detail"]
    quality = gold.gold_quality(gold_campaign)
    assert quality[0]["assessor"] == "alice" and quality[0]["accuracy"] == 0 and quality[0]["paused"]
    from django.test import Client

    from tests.conftest import PASSWORD

    page = Client()
    assert page.login(username=coordinator.get_username(), password=PASSWORD)
    campaign_page = page.get(f"/campaigns/{gold_campaign.pk}/").content.decode()
    assert "Paused by the accuracy threshold: alice" in campaign_page
    # The coordinator is told at the top of the campaign page and on the dashboard.
    assert 'id="gold-paused-notice"' in campaign_page
    dashboard = page.get(f"/campaigns/{gold_campaign.pk}/dashboard/").content.decode()
    assert 'id="gold-paused-notice"' in dashboard and "<b>alice</b>" in dashboard
    page.post(f"/campaigns/{gold_campaign.pk}/gold/", {"action": "resume", "username": "alice"})
    assert api(assessor).get(f"/api/campaigns/{gold_campaign.pk}/next/").status_code == 200
    assert (
        'id="gold-paused-notice"'
        not in page.get(f"/campaigns/{gold_campaign.pk}/dashboard/").content.decode()
    )


def test_items_assessors_agreed_on_become_gold(
    draft_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign_update(campaign=draft_campaign, overlap=2)
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice", "bob"])
    campaign = campaign_start(campaign=Campaign.objects.get(pk=draft_campaign.pk))
    for person in (assessor, second_assessor):
        for _ in range(4):
            task = task_next(campaign=campaign, assessor=person)
            task_answer(task=task, assessor=person, grade=2, seconds=1.0)
    made = gold.gold_mark_agreed(campaign=campaign)
    twice = Judgment.objects.filter(campaign=campaign).values("topic_id", "document_id").distinct().count()
    assert made >= 1 and made <= twice
    assert set(GoldItem.objects.values_list("grade", "source")) == {(2, "agreed")}


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="share must be between 0 and 0.5"):
        gold.gold_configure(campaign=None, share=0.9, qualification=0, min_accuracy=0.5, min_answers=3)  # type: ignore[arg-type]


def test_the_judgment_service_refuses_a_gold_task(
    gold_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    gold.gold_configure(campaign=gold_campaign, share=0.0, qualification=1, min_accuracy=0.0, min_answers=5)
    task = task_next(campaign=gold_campaign, assessor=assessor)
    assert task.kind == Task.Kind.GOLD
    with pytest.raises(ValueError, match="gold question"):
        task_answer(task=task, assessor=assessor, grade=1, seconds=1.0)
    assert not Judgment.objects.filter(campaign=gold_campaign, source="assessor").exists()
