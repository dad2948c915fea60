"""Release verdicts in the app (sampling.verdicts): a run that arrives gets better / worse / not
settled for its difference with the reference, under the campaign's rule; an anytime verdict that
comes early stops its top-up and gives the rest back to the budget."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from rest_framework.test import APIClient

from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Arrival, Campaign, Judgment, WebhookEvent
from labeling.services.campaigns import campaign_assessors_assign, campaign_start
from labeling.services.run_imports import runs_import
from tests.conftest import RUN_A, upload
from tests.graded.test_arrivals_api import _arrive, _judge_all, _running

Api = Callable[[AbstractBaseUser | None], APIClient]
pytestmark = pytest.mark.postgresql

# A run of documents every one of which the oracle grades 0 (docno suffix % 3 == 0), new ones too.
RUN_POOR = "".join(
    f"{q} Q0 {doc} {rank} {10 - rank}.0 poor\n"
    for q in (1, 2, 3)
    for rank, doc in enumerate((f"d{q}-12", f"d{q}-3", f"d{q}-15", f"d{q}-6", f"d{q}-9"), start=1)
)


def test_an_anytime_verdict_comes_early_and_gives_the_rest_of_the_topup_back(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = _running(api, coordinator, assessor, "items")
    patched = api(coordinator).patch(
        f"/api/campaigns/{campaign.pk}/", {"verdict_rule": "anytime"}, format="json"
    )
    assert patched.status_code == 200 and patched.json()["verdict_rule"] == "anytime", patched.content
    _judge_all(campaign, assessor)
    body = _arrive(api, coordinator, campaign, RUN_POOR, budget="200", reference="alpha").json()
    assert body["rule"] == "anytime" and body["verdict"] is None
    assert body["sequence"] == {"low": None, "high": None}, "no band before 20 top-up draws"
    _judge_all(campaign, assessor)
    arrival = Arrival.objects.get(pk=body["id"])
    assert arrival.verdict == "worse" and arrival.rule == "anytime" and arrival.decided_at is not None
    assert arrival.decided_high is not None and arrival.decided_high < 0
    report = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
    assert report["verdict"] == "worse" and report["status"] == "done"
    assert report["topup_spent"] < 200 and report["topup_returned"] == pytest.approx(
        200 - report["topup_spent"]
    )
    campaign.refresh_from_db()
    # The budget is the stored 12 plus what the top-up spent: the rest went back.
    assert campaign.budget == pytest.approx(12 + report["topup_spent"])
    assert report["sequence"]["high"] < 0
    # The webhook events: decided, its top-up over (what it spent), each recorded once.
    events = {event.name: event.data for event in WebhookEvent.objects.filter(campaign=campaign)}
    assert events["arrival.decided"]["verdict"] == "worse" and events["arrival.decided"]["rule"] == "anytime"
    assert events["arrival.topup_spent"]["spent"] == pytest.approx(report["topup_spent"])


def test_a_fixed_verdict_is_read_once_the_topup_is_spent(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = _running(api, coordinator, assessor, "items")
    assert campaign.verdict_rule == Campaign.VerdictRule.FIXED
    _judge_all(campaign, assessor)
    body = _arrive(api, coordinator, campaign, RUN_POOR, budget="6", reference="alpha").json()
    assert body["rule"] == "fixed" and body["verdict"] is None
    _judge_all(campaign, assessor)
    report = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
    assert report["status"] == "done" and report["decided_at"] is not None
    assert report["verdict"] in ("worse", "not_settled") and report["topup_returned"] == 0
    # The band is the 95 % interval the verdict was read from when the top-up was spent (judgments
    # of tasks drawn before then may still move the current difference a little).
    band = report["sequence"]
    if report["verdict"] == "worse":
        assert band["high"] < 0
    else:
        assert band["low"] is None or band["low"] <= 0 <= band["high"]
    listed = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/").json()
    assert listed[0]["verdict"] == report["verdict"]
    # The budget was spent before the run arrived (12), and again with its top-up (12 + 6), with
    # nothing left open: one webhook event each time.
    spent_events = WebhookEvent.objects.filter(campaign=campaign, name="campaign.budget_spent")
    assert [event.data["budget"] for event in spent_events] == [12, 18]
    assert spent_events.last().data["judgments"] >= 18
    refused = api(coordinator).patch(
        f"/api/campaigns/{campaign.pk}/", {"verdict_rule": "peek"}, format="json"
    )
    assert refused.status_code == 400 and "verdict_rule" in refused.content.decode()


def test_the_campaign_page_sets_the_verdict_rule(
    client: Client, api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = _running(api, coordinator, assessor, "items")
    _judge_all(campaign, assessor)
    client.force_login(coordinator)
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert 'name="verdict_rule"' in page and '<option value="fixed" selected>' in page
    saved = client.post(f"/campaigns/{campaign.pk}/verdict-rule/", {"verdict_rule": "anytime"}, follow=True)
    assert "Verdicts: Anytime" in saved.content.decode()
    campaign.refresh_from_db()
    assert campaign.verdict_rule == "anytime"
    refused = client.post(f"/campaigns/{campaign.pk}/verdict-rule/", {"verdict_rule": "peek"}, follow=True)
    assert "Verdict rule not changed: unknown rule &#x27;peek&#x27;" in refused.content.decode()
    client.force_login(assessor)
    assert client.post(f"/campaigns/{campaign.pk}/verdict-rule/", {"verdict_rule": "fixed"}).status_code in (
        403,
        404,
    )


def test_two_runs_arriving_together_count_only_their_own_topups(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = _running(api, coordinator, assessor, "passive")
    _judge_all(campaign, assessor)
    first = _arrive(api, coordinator, campaign, budget="20", reference="alpha").json()
    second = _arrive(api, coordinator, campaign, RUN_POOR, budget="20", reference="alpha").json()
    assert (
        Arrival.objects.get(pk=second["id"]).drawable_after
        == Arrival.objects.get(pk=first["id"]).drawable_after
    )
    # Each one's documents on the drawn topics are its own tasks: three judgments count once.
    for _ in range(3):
        task = task_next(campaign=campaign, assessor=assessor)
        assert task is not None and task.arrival_id in (first["id"], second["id"])
        task_answer(task=task, assessor=assessor, grade=0, seconds=2.0)
    judged = [
        api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()["topup_judged"]
        for body in (first, second)
    ]
    assert sum(judged) == 3, judged
    _judge_all(campaign, assessor)
    reports = [
        api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
        for body in (first, second)
    ]
    since = Judgment.objects.filter(campaign=campaign, task__arrival__isnull=False).count()
    assert sum(report["topup_judged"] for report in reports) == since
    assert all(
        report["topup_judged"] == Judgment.objects.filter(task__arrival_id=report["id"]).count()
        for report in reports
    )


def test_a_topup_larger_than_the_pool_ends_with_a_verdict_when_every_document_is_judged(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = _running(api, coordinator, assessor, "items")
    _judge_all(campaign, assessor)
    body = _arrive(api, coordinator, campaign, RUN_POOR, budget="500", reference="alpha").json()
    _judge_all(campaign, assessor)
    campaign.refresh_from_db()
    assert campaign.blocked == "exhausted", "every pool document is judged"
    report = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
    assert report["topup_spent"] < 500 and report["status"] == "done"
    assert report["verdict"] in ("better", "worse", "not_settled"), "read when the pool ran out"


def _two_systems(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, rule: str, budget: int
) -> Campaign:
    created = api(coordinator).post(
        "/api/campaigns/",
        {
            "name": "pair",
            "metric": "DCG@5",
            "grades": ["0", "1", "2"],
            "strategy": "items",
            "goal": "difference",
            "focus_systems": ["alpha", "poor"],
            "budget": budget,
            "verdict_rule": rule,
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    campaign = Campaign.objects.get(pk=created.json()["id"])
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("poor.run", RUN_POOR)])
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    return campaign_start(campaign=campaign)


@pytest.mark.parametrize("rule", ["anytime", "fixed"])
def test_a_two_system_campaign_gets_its_own_verdict(
    client: Client, api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, rule: str
) -> None:
    budget = 300 if rule == "anytime" else 14
    campaign = _two_systems(api, coordinator, assessor, rule, budget)
    _judge_all(campaign, assessor)
    campaign.refresh_from_db()
    body = api(coordinator).get(f"/api/campaigns/{campaign.pk}/").json()
    assert body["verdict"] == campaign.verdict == "better", body  # alpha minus a run of grade-0 documents
    assert body["verdict_decided_at"] is not None and body["verdict_low"] > 0
    if rule == "anytime":
        # Decided before the budget was spent: the rest was taken off and judging stopped.
        assert campaign.verdict_returned > 0 and campaign.budget == pytest.approx(
            budget - campaign.verdict_returned
        )
    else:
        assert campaign.verdict_returned == 0 and campaign.budget == budget
    (event,) = WebhookEvent.objects.filter(campaign=campaign, name="campaign.decided")
    assert event.data["verdict"] == "better" and event.data["systems"] == ["alpha", "poor"]
    client.force_login(coordinator)
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "Verdict: alpha is better than poor" in page
