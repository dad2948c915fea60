"""Skip with a reason and a note, and notes on judgments: the item goes to someone else and never
back to the assessor who skipped it; both are exported."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser

from graded import exports
from graded.claims import task_next
from graded.judging import task_answer, task_skip
from labeling.leases import LeaseConflict
from labeling.models import Campaign, Judgment, Skip, Task
from labeling.services.campaigns import campaign_assessors_assign, campaign_start, campaign_update
from labeling.services.skips import items_skipped_by_every_assessor, skip_counts


def _drain(campaign: Campaign, assessor: AbstractBaseUser) -> list[tuple[int, int]]:
    """Judge everything the assessor is given; the (topic, document) ids they saw."""
    seen = []
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        seen.append((task.topic_id, task.document_id))
        task_answer(task=task, assessor=assessor, grade=1, seconds=1.0)
    return seen


def test_a_skipped_item_goes_to_someone_else_and_never_back(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    skip = task_skip(task=task, assessor=assessor, reason="broken", note="  blank page ")
    assert (skip.reason, skip.note, skip.kind, skip.unit) == ("broken", "blank page", "grade", task.pk)
    task.refresh_from_db()
    assert task.assessor_id is None and task.answered_at is None, "back in the pool, still open"
    seen = _drain(campaign, assessor)
    assert (task.topic_id, task.document_id) not in seen and len(seen) > 0
    taken = task_next(campaign=campaign, assessor=second_assessor)
    assert taken is not None and taken.pk == task.pk, "the next assessor gets it"
    assert skip_counts(campaign) == {"cannot_judge": 0, "not_sure": 0, "broken": 1, "other": 0}


def test_with_overlap_the_skipper_gets_no_other_copy_of_the_item(
    draft_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice", "bob"])
    campaign_update(campaign=draft_campaign, overlap=2)
    campaign = campaign_start(campaign=Campaign.objects.get(pk=draft_campaign.pk))
    task = task_next(campaign=campaign, assessor=assessor)
    task_skip(task=task, assessor=assessor, reason="not_sure")
    seen = _drain(campaign, assessor)
    assert (task.topic_id, task.document_id) not in seen
    copies = Task.objects.filter(campaign=campaign, topic_id=task.topic_id, document_id=task.document_id)
    assert copies.count() == 2 and not copies.filter(assessor_id=assessor.pk).exists()


def test_only_the_holder_skips_and_the_reason_and_note_are_checked(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    with pytest.raises(LeaseConflict):
        task_skip(task=task, assessor=second_assessor, reason="other")
    with pytest.raises(ValueError, match="reason must be one of"):
        task_skip(task=task, assessor=assessor, reason="bored")
    with pytest.raises(ValueError, match="longer than 2000"):
        task_skip(task=task, assessor=assessor, reason="other", note="x" * 2001)
    task_answer(task=task, assessor=assessor, grade=1, seconds=1.0)
    with pytest.raises(LeaseConflict):
        task_skip(task=task, assessor=assessor, reason="other")
    assert not Skip.objects.exists()


def test_the_api_skips_and_takes_notes_and_the_exports_carry_both(
    api: Callable, campaign: Campaign, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    client = api(assessor)
    first = client.get(f"/api/campaigns/{campaign.pk}/next/").json()
    url = f"/api/tasks/{first['task']}/skip/"
    assert client.post(url, {"reason": "bored"}, format="json").status_code == 400
    assert client.post(url, {"reason": "cannot_judge", "kind": "nothing"}, format="json").status_code == 400
    skipped = client.post(url, {"reason": "cannot_judge", "note": "foreign language"}, format="json")
    assert skipped.status_code == 200 and skipped.json() == {
        "task": first["task"],
        "kind": "grade",
        "reason": "cannot_judge",
    }
    assert client.post(url, {"reason": "cannot_judge"}, format="json").status_code == 409
    second = client.get(f"/api/campaigns/{campaign.pk}/next/").json()
    assert second["task"] != first["task"]
    answered = client.post(
        f"/api/tasks/{second['task']}/answer/",
        {"grade": 2, "seconds": 3, "note": "only the 2nd half"},
        format="json",
    )
    assert answered.status_code == 201
    assert Judgment.objects.get(task_id=second["task"]).note == "only the 2nd half"
    judgments = list(csv.DictReader(io.StringIO("".join(exports.judgments_csv(campaign)))))
    assert [row["note"] for row in judgments] == ["only the 2nd half"]
    skips = api(coordinator).get(f"/api/campaigns/{campaign.pk}/export/skips.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(skips.streaming_content).decode())))
    assert [(row["assessor"], row["reason"], row["note"], row["task"]) for row in rows] == [
        ("alice", "cannot_judge", "foreign language", str(first["task"]))
    ]
    assert api(assessor).get(f"/api/campaigns/{campaign.pk}/export/skips.csv").status_code == 403


def test_the_campaign_page_counts_skips_by_reason(
    campaign: Campaign, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    from django.test import Client

    from tests.conftest import PASSWORD

    for reason in ("broken", "broken", "other"):
        task = task_next(campaign=campaign, assessor=assessor)
        task_skip(task=task, assessor=assessor, reason=reason)
    client = Client()
    assert client.login(username=coordinator.get_username(), password=PASSWORD)
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "Skipped 3 times: cannot judge 0, not sure 0, document broken 2, other 1" in page


def test_the_dashboard_shows_the_latest_notes_and_skips(
    campaign: Campaign, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    from django.test import Client

    from tests.conftest import PASSWORD

    task = task_next(campaign=campaign, assessor=assessor)
    task_skip(task=task, assessor=assessor, reason="not_sure", note="ambiguous query")
    task = task_next(campaign=campaign, assessor=assessor)
    task_answer(task=task, assessor=assessor, grade=2, seconds=1.0, note="<b>only the abstract</b>")
    client = Client()
    assert client.login(username=coordinator.get_username(), password=PASSWORD)
    page = client.get(f"/campaigns/{campaign.pk}/dashboard/").content.decode()
    assert "Skipped 1 time: cannot judge 0, not sure 1" in page
    assert "skipped: not sure" in page and "ambiguous query" in page
    assert "&lt;b&gt;only the abstract&lt;/b&gt;" in page and "grade 2" in page


def test_an_item_every_assessor_skipped_is_named_on_the_pages_until_someone_judges_it(
    campaign: Campaign,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
    api: Callable,
) -> None:
    assert set(campaign.members.filter(role="assessor").values_list("user__username", flat=True)) == {
        "alice",
        "bob",
    }
    task = task_next(campaign=campaign, assessor=assessor)
    task_skip(task=task, assessor=assessor, reason="broken")
    assert items_skipped_by_every_assessor(campaign) == 0, "bob may still judge it"
    taken = task_next(campaign=campaign, assessor=second_assessor)
    assert taken.pk == task.pk
    task_skip(task=taken, assessor=second_assessor, reason="cannot_judge")
    assert items_skipped_by_every_assessor(campaign) == 1
    page = api(coordinator).get(f"/campaigns/{campaign.pk}/").content.decode()
    assert 'id="skipped-by-everyone"' in page and "1 open item skipped by every assessor" in page
    dashboard = api(coordinator).get(f"/campaigns/{campaign.pk}/dashboard/").content.decode()
    assert 'id="skipped-by-everyone"' in dashboard
    # The coordinator is offered it (they did not skip it) and judges it.
    mine = task_next(campaign=campaign, assessor=coordinator)
    assert mine.pk == task.pk
    task_answer(task=mine, assessor=coordinator, grade=0, seconds=4.0)
    assert items_skipped_by_every_assessor(campaign) == 0
    assert (
        'id="skipped-by-everyone"' not in api(coordinator).get(f"/campaigns/{campaign.pk}/").content.decode()
    )


def test_an_outsider_skipping_an_item_gets_404_as_for_an_answer(
    api: Callable, campaign: Campaign, assessor: AbstractBaseUser, outsider: AbstractBaseUser
) -> None:
    task = api(assessor).get(f"/api/campaigns/{campaign.pk}/next/").json()["task"]
    answer = api(outsider).post(f"/api/tasks/{task}/answer/", {"grade": 1}, format="json")
    skip = api(outsider).post(f"/api/tasks/{task}/skip/", {"reason": "other"}, format="json")
    assert (answer.status_code, skip.status_code) == (404, 404)
    assert "not hold" not in skip.content.decode()
    missing = api(assessor).post("/api/tasks/99999999/skip/", {"reason": "other"}, format="json")
    assert missing.status_code == 404
