"""An assessor's own judgments: counts, a searchable list, and a new grade with its history that
the estimates and the next recompute use."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse

from graded.claims import task_next
from graded.judging import task_answer
from labeling import recompute as pipeline
from labeling import selectors
from labeling.models import Campaign, Judgment, JudgmentChange
from labeling.services.campaign_copies import campaign_archive
from labeling.services.own_judgments import JudgmentFinal, RegradeRefused, judgment_regrade
from labeling.templatetags.labeling_tags import judging_time
from sampling.estimates import estimates_compute
from sampling.state import judgments_fingerprint
from tests.conftest import PASSWORD
from tests.labeling.helpers import queued_recomputes

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def _judge(campaign: Campaign, assessor: AbstractBaseUser, grades: list[int]) -> list[Judgment]:
    made = []
    for grade in grades:
        task = task_next(campaign=campaign, assessor=assessor)
        assert task is not None
        task_answer(task=task, assessor=assessor, grade=grade, seconds=4.0)
        made.append(Judgment.objects.get(task_id=task.pk))
    return made


def _client(user: AbstractBaseUser) -> Client:
    client = Client()
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def test_a_new_grade_keeps_the_old_one_and_reaches_the_estimates(
    campaign: Campaign, assessor: AbstractBaseUser, django_capture_on_commit_callbacks: Callable
) -> None:
    first, *_rest = _judge(campaign, assessor, [0] * 21)  # every item of the three topics
    before_fingerprint = judgments_fingerprint(campaign)
    before = estimates_compute(campaign)
    pipeline.recompute_soon_wait(timeout=10)
    queued_recomputes()
    pipeline.recompute_started(campaign.pk)  # the worker took the answers' recompute

    with django_capture_on_commit_callbacks(execute=True):
        judgment_regrade(judgment=first, assessor=assessor, grade=2)

    first.refresh_from_db()
    assert first.grade == 2
    assert list(JudgmentChange.objects.filter(judgment=first).values_list("old_grade", "new_grade")) == [
        (0, 2)
    ]
    assert judgments_fingerprint(campaign) != before_fingerprint
    assert pipeline.recompute_soon_wait(timeout=10) is True
    assert queued_recomputes() == [[campaign.pk]], "the change asks for a recompute"
    after = estimates_compute(campaign)
    assert [row["value"] for row in after["systems"]] != [row["value"] for row in before["systems"]]
    assert after["fingerprint"] != before["fingerprint"]


def test_only_the_assessor_changes_a_judgment_and_only_while_the_campaign_is_open(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    (judgment,) = _judge(campaign, assessor, [1])
    with pytest.raises(RegradeRefused, match="only the assessor"):
        judgment_regrade(judgment=judgment, assessor=second_assessor, grade=2)
    with pytest.raises(RegradeRefused, match="grade must be 0..2"):
        judgment_regrade(judgment=judgment, assessor=assessor, grade=3)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.DONE)
    with pytest.raises(JudgmentFinal, match="final"):
        judgment_regrade(judgment=judgment, assessor=assessor, grade=2)
    judgment.refresh_from_db()
    assert judgment.grade == 1 and not JudgmentChange.objects.exists()


def test_the_page_counts_lists_searches_and_changes(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    judgments = _judge(campaign, assessor, [0, 1, 2])
    client = _client(assessor)
    page = client.get(reverse("labeling:own_judgments"))
    assert page.context["tally"].today == 3 and page.context["tally"].total_seconds == pytest.approx(12.0)
    assert [row.pk for row in page.context["page"].object_list] == [j.pk for j in reversed(judgments)]
    target = judgments[0]
    found = client.get(reverse("labeling:own_judgments"), {"q": target.document.docno})
    assert [row.pk for row in found.context["page"].object_list] == [target.pk]
    response = client.post(
        reverse("labeling:own_judgment_regrade", args=[target.pk]), {"grade": "2", "back": "q=x"}
    )
    assert response.status_code == 302 and response["Location"].endswith("/my-judgments/?q=x")
    listed = client.get(reverse("labeling:own_judgments"))
    assert "changed 1×" in listed.content.decode()
    assert "(3 judgments)" in listed.content.decode()
    # Today's time and the time in all in the same unit (12 s each, not "12 s" beside "0 min").
    assert listed.content.decode().count("<b>12 s</b>") == 2


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, "0 s"),
        (7.4, "7 s"),
        (119.4, "119 s"),
        (120, "2 min"),
        (1866, "31 min"),
        (7199, "2 h 0 min"),
        (9000, "2 h 30 min"),
    ],
)
def test_judging_time_has_one_unit_per_size(seconds: float | None, shown: str) -> None:
    assert judging_time(seconds) == shown


def test_the_page_shows_the_note_kept_with_a_judgment(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    task_answer(task=task, assessor=assessor, grade=1, seconds=3.0, note="only the <b>title</b> fits")
    html = _client(assessor).get(reverse("labeling:own_judgments")).content.decode()
    assert "Your note:</span> only the &lt;b&gt;title&lt;/b&gt; fits" in html
    assert "(1 judgment)" in html


def test_the_api_lists_and_regrades_own_judgments_only(
    api: Callable, campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    (judgment,) = _judge(campaign, assessor, [1])
    mine = api(assessor).get(f"/api/my/judgments/?campaign={campaign.pk}").json()
    assert mine["count"] == 1 and mine["today"] == 1
    assert mine["judgments"][0]["docno"] == judgment.document.docno
    assert api(second_assessor).get("/api/my/judgments/").json()["count"] == 0
    assert (
        api(second_assessor)
        .post(f"/api/judgments/{judgment.pk}/grade/", {"grade": 2}, format="json")
        .status_code
        == 404
    )
    changed = api(assessor).post(f"/api/judgments/{judgment.pk}/grade/", {"grade": 2}, format="json").json()
    assert changed["grade"] == 2 and changed["changes"][0]["old_grade"] == 1
    assert (
        api(assessor).post(f"/api/judgments/{judgment.pk}/grade/", {"grade": 9}, format="json").status_code
        == 400
    )
    campaign_archive(campaign=campaign)
    assert (
        api(assessor).post(f"/api/judgments/{judgment.pk}/grade/", {"grade": 0}, format="json").status_code
        == 409
    )
    assert selectors.own_tally(assessor).total == 1
