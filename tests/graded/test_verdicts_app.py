"""Release verdicts in the app (sampling.verdicts): a run that arrives gets better / worse / not
settled (or not worse / worse with a margin) for its difference with the reference, under the
plan it arrived with; a peeking verdict that comes early stops its top-up and gives the rest back,
with the figures adding up; the plan cannot change once labels count; an identical release costs
nothing; a verdict read late is the one the sequence reached at its label."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from rest_framework.test import APIClient

from clients.release_gate import describe
from estimation.sampling.draws import STOP_BUDGET, STOP_EXHAUSTED
from estimation.sampling.verdicts import first_verdict
from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Arrival, Campaign, Judgment, Task, Verdict
from labeling.recompute import recompute, recompute_soon_wait
from labeling.services.campaigns import campaign_assessors_assign, campaign_start
from sampling import draws_top_up, tasks_trim_to_budget, verdicts_update
from sampling.label_model import judged_grades
from sampling.pool_arrays import pool_arrays_for
from sampling.verdicts import EXACT_REASON, verdict_exact_value, verdict_plan, verdict_state
from tests.conftest import RUN_A, upload
from tests.graded.helpers import RUN_ALPHA_AGAIN, RUN_POOR, arrive, judge_all, running
from tests.labeling.helpers import queued_recomputes
from tests.sampling.helpers import oracle_grade
from uploads.run_imports import runs_import
from webhooks.models import WebhookEvent

Api = Callable[[AbstractBaseUser | None], APIClient]
pytestmark = pytest.mark.postgresql


def _verdict(arrival_id: int) -> Verdict:
    return Verdict.objects.get(arrival_id=arrival_id)


def test_a_sequential_verdict_comes_early_and_the_budget_figures_add_up(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    assert campaign.verdict_rule == Campaign.VerdictRule.SEQUENTIAL, "the default"
    judge_all(campaign, assessor, recompute_each=False)
    body = arrive(api, coordinator, campaign, RUN_POOR, budget="200", reference="alpha").json()
    assert body["rule"] == "sequential" and body["verdict"] is None and body["horizon"] >= 1
    assert body["question"] == "difference" and body["margin"] == 0
    judge_all(campaign, assessor)
    verdict = _verdict(body["id"])
    assert verdict.outcome == "worse" and verdict.rule == "sequential" and verdict.high is not None
    assert verdict.high < 0 and verdict.decided_labels is not None
    report = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
    assert report["verdict"] == "worse" and report["status"] == "done"
    assert report["decided_labels"] == verdict.decided_labels <= report["topup_judged"]
    # Spent plus returned is the top-up; the campaign's budget is the stored 12 plus what was spent.
    assert report["topup_spent"] < 200
    assert report["topup_spent"] + report["topup_returned"] == pytest.approx(200)
    campaign.refresh_from_db()
    assert campaign.budget == pytest.approx(12 + report["topup_spent"])
    assert not Task.objects.filter(arrival_id=body["id"], answered_at__isnull=True).exists()
    # The webhook events carry the plan the verdict was read by.
    events = {event.name: event.data for event in WebhookEvent.objects.filter(campaign=campaign)}
    decided = events["arrival.decided"]
    assert decided["verdict"] == "worse" and decided["rule"] == "sequential"
    assert (
        decided["horizon"] == verdict.horizon
        and decided["margin"] == 0
        and decided["question"] == "difference"
    )
    assert events["arrival.topup_spent"]["spent"] == pytest.approx(report["topup_spent"])


def test_a_verdict_read_late_is_taken_at_the_label_where_the_sequence_decided(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    """Two campaigns alike (same seed, same answers): one reads its verdict after every label, the
    other only once its assessors have judged the whole top-up (faster than any recompute). Both
    store the verdict at the same label, with the same interval."""
    campaigns = []
    for _ in range(2):
        campaign = running(api, coordinator, assessor, "items", start=False)
        Campaign.objects.filter(pk=campaign.pk).update(seed=20261206)
        campaign = campaign_start(campaign=Campaign.objects.get(pk=campaign.pk))
        judge_all(campaign, assessor, recompute_each=False)
        body = arrive(api, coordinator, campaign, RUN_POOR, budget="40", reference="alpha").json()
        campaigns.append((campaign, body["id"]))
    (eager, eager_arrival), (late, late_arrival) = campaigns
    for campaign, read_every_label in ((eager, True), (late, False)):
        while True:
            draws_top_up(campaign_id=campaign.pk)
            task = task_next(campaign=campaign, assessor=assessor)
            if task is None:
                break
            task_answer(task=task, assessor=assessor, grade=oracle_grade(task.document.docno), seconds=2.0)
            if read_every_label and verdicts_update(campaign):
                break
    assert _verdict(late_arrival).outcome == "", "nothing read yet"
    verdicts_update(late)
    early, read_late = _verdict(eager_arrival), _verdict(late_arrival)
    assert early.outcome == read_late.outcome == "worse"
    assert read_late.decided_labels == early.decided_labels
    assert (read_late.low, read_late.high) == pytest.approx((early.low, early.high))
    judged_late = Judgment.objects.filter(task__arrival_id=late_arrival).count()
    assert judged_late > read_late.decided_labels, "labels after the decision did not move it"
    # The look it was taken at is the first whose interval clears 0 (checked from the looks).
    late.refresh_from_db()
    arrays = pool_arrays_for(late)
    state = verdict_state(read_late, arrays, judged_grades(late, arrays))
    assert state is not None
    looks = state.looks.looks()
    decisive = [
        i
        for i, look in enumerate(looks)
        if first_verdict(verdict_plan(read_late), looks[: i + 1], over=False).verdict
    ]
    assert looks[decisive[0]].labels == read_late.decided_labels


def test_a_fixed_verdict_is_read_once_the_topup_is_spent(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    body = arrive(api, coordinator, campaign, RUN_POOR, budget="6", reference="alpha", rule="fixed").json()
    assert body["rule"] == "fixed" and body["verdict"] is None
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    task_answer(task=task, assessor=assessor, grade=oracle_grade(task.document.docno), seconds=2.0)
    # The campaign's defaults may change (for runs still to come); this arrival keeps its plan.
    patched = api(coordinator).patch(
        f"/api/campaigns/{campaign.pk}/", {"verdict_rule": "anytime"}, format="json"
    )
    assert patched.status_code == 200
    judge_all(campaign, assessor)
    report = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
    assert report["status"] == "done" and report["decided_at"] is not None and report["rule"] == "fixed"
    assert report["verdict"] in ("worse", "not_settled") and report["topup_returned"] == 0
    band = report["sequence"]
    if report["verdict"] == "worse":
        assert band["high"] < 0
    else:
        assert report["verdict_reason"]
    # The budget was spent before the run arrived (12), and again with its top-up (12 + 6).
    spent_events = WebhookEvent.objects.filter(campaign=campaign, name="campaign.budget_spent")
    assert [event.data["budget"] for event in spent_events] == [12, 18]


def test_a_budget_cut_does_not_turn_into_an_early_fixed_reading(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    body = arrive(api, coordinator, campaign, RUN_POOR, budget="30", reference="alpha", rule="fixed").json()
    for _ in range(3):
        task = task_next(campaign=campaign, assessor=assessor)
        assert task is not None
        task_answer(task=task, assessor=assessor, grade=oracle_grade(task.document.docno), seconds=2.0)
    spent = Judgment.objects.filter(campaign=campaign).count()
    cut = api(coordinator).patch(f"/api/campaigns/{campaign.pk}/", {"budget": spent}, format="json")
    assert cut.status_code == 200, cut.content
    judge_all(campaign, assessor)
    verdict = _verdict(body["id"])
    assert verdict.outcome == "not_settled" and "cut before the horizon" in verdict.reason


def test_an_identical_release_is_answered_at_once_with_no_topup(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    campaign.refresh_from_db()
    budget = campaign.budget
    body = arrive(api, coordinator, campaign, RUN_ALPHA_AGAIN, budget="25", reference="alpha")
    assert body.status_code == 201, body.content
    report = body.json()
    assert report["verdict"] == "unchanged" and report["topup_budget"] == 0 and report["status"] == "done"
    campaign.refresh_from_db()
    assert campaign.budget == budget and judge_all(campaign, assessor) == 0, "no label spent on it"
    assert not Task.objects.filter(arrival_id=report["id"]).exists()


def test_non_inferiority_with_a_margin_says_not_worse_or_worse(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    refused = arrive(api, coordinator, campaign, RUN_POOR, budget="20", reference="alpha", margin="0.5")
    assert refused.status_code == 400 and "needs a question that reads it" in refused.content.decode()
    assert not Arrival.objects.filter(campaign=campaign).exists(), "nothing stored on a refusal"
    body = arrive(
        api,
        coordinator,
        campaign,
        RUN_POOR,
        budget="200",
        reference="alpha",
        question="non_inferiority",
        margin="0.1",
    ).json()
    assert body["question"] == "non_inferiority" and body["margin"] == 0.1
    judge_all(campaign, assessor)
    verdict = _verdict(body["id"])
    # Every document of the poor run is graded 0: worse than alpha by far more than 0.1.
    assert verdict.outcome == "worse" and verdict.high is not None and verdict.high < -0.1


def test_the_default_reference_is_never_a_run_that_just_arrived(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    first = arrive(api, coordinator, campaign, RUN_POOR, budget="5", reference="alpha").json()
    second = arrive(api, coordinator, campaign, budget="5").json()
    assert second["reference"] in ("alpha", "beta") and second["reference"] != first["system"]
    assert second["reference_given"] is False and first["reference_given"] is True


def test_two_runs_arriving_together_count_only_their_own_topups(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "passive")
    judge_all(campaign, assessor, recompute_each=False)
    first = arrive(api, coordinator, campaign, budget="20", reference="alpha").json()
    second = arrive(api, coordinator, campaign, RUN_POOR, budget="20", reference="alpha").json()
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
    judge_all(campaign, assessor)
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
    """Once every document the difference weighs is judged, it is known exactly: the verdict is
    its side of 0, whatever the rule, and the rest of the top-up goes back."""
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    body = arrive(api, coordinator, campaign, RUN_POOR, budget="500", reference="alpha", rule="fixed").json()
    judge_all(campaign, assessor)
    report = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
    assert report["topup_spent"] < 500 and report["status"] == "done"
    verdict = _verdict(body["id"])
    assert verdict.outcome == "worse" and "exactly" in verdict.reason, verdict.reason
    assert verdict.low == verdict.high == verdict.value < 0
    # The report shows the value the verdict read beside the sample's estimate (which differs
    # from it), at the labels judged when it was read.
    difference = report["difference"]
    assert difference["exact"] == verdict.value != difference["value"]
    assert difference["low"] < difference["high"], "the sample's interval, not the exact value's"
    assert report["decided_labels"] == report["topup_judged"] > 0
    # A report stored by an earlier version (no `exact`) says it too: it is read from the verdict.
    arrival = Arrival.objects.get(pk=body["id"])
    stored = {**arrival.report, "difference": {k: v for k, v in difference.items() if k != "exact"}}
    Arrival.objects.filter(pk=arrival.pk).update(report=stored)
    again = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
    assert again["difference"]["exact"] == verdict.value
    assert report["topup_spent"] + report["topup_returned"] == pytest.approx(500)
    # Read again once the campaign knows its pool is used up (the recompute that reads it may
    # come after that): the same verdict, and the same figures.
    campaign.refresh_from_db()
    budget_after = campaign.budget
    Campaign.objects.filter(pk=campaign.pk).update(
        budget=budget_after + verdict.returned, blocked=STOP_EXHAUSTED
    )
    Verdict.objects.filter(pk=verdict.pk).update(outcome="", returned=0.0)
    assert [again.outcome for again in verdicts_update(campaign)] == ["worse"]
    assert _verdict(body["id"]).returned == pytest.approx(verdict.returned)
    campaign.refresh_from_db()
    assert campaign.budget == pytest.approx(budget_after)


def test_a_query_level_exact_verdict_is_read_at_its_labels_and_printed_without_an_interval(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    """Topics drawn whole: the top-up first completes the topics drawn before the run arrived,
    and those judgments are no top-up draw's labels. A verdict read exactly once all are judged
    is read at the labels judged then (it once said "at label 0" after 14), and the gate's line
    gives the exact value as the difference, the sample's estimate only beside it."""
    campaign = running(api, coordinator, assessor, "passive")
    Campaign.objects.filter(pk=campaign.pk).update(budget=1000)  # every topic drawn and judged
    judge_all(campaign, assessor, recompute_each=False)
    topics = Task.objects.filter(campaign=campaign).values("topic_id").distinct().count()
    # The top-up is exactly the completion: RUN_POOR's three documents of every topic that
    # neither stored run retrieved (d?-9, d?-12, d?-15).
    body = arrive(api, coordinator, campaign, RUN_POOR, budget=str(3 * topics), reference="alpha")
    assert body.status_code == 201, body.content
    judge_all(campaign, assessor)
    report = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body.json()['id']}/").json()
    verdict = _verdict(body.json()["id"])
    assert verdict.outcome == "worse" and "exactly" in verdict.reason, verdict.reason
    assert report["horizon_unit"] == "topics"
    # Read at the recompute after the last label: every new document is in RUN_POOR's top 5.
    assert report["decided_labels"] == report["topup_judged"] == 3 * topics
    assert report["difference"]["exact"] == verdict.value
    line = describe(report)
    assert f"= {verdict.value:+.4g} exactly (the sample's estimate " in line, line
    assert f"at label {report['decided_labels']};" in line and " on [" not in line, line


def test_a_run_whose_documents_are_all_judged_gets_its_verdict_without_another_judgment(
    api: Api,
    coordinator: AbstractBaseUser,
    assessor: AbstractBaseUser,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Every document it ranks is judged already: no judgment will ever come to trigger a
    recompute, so adding it queues one, which reads the exact verdict (a release gate waited for
    one until its timeout)."""
    campaign = running(api, coordinator, assessor, "items")
    Campaign.objects.filter(pk=campaign.pk).update(budget=1000)  # every pool document judged
    judge_all(campaign, assessor, recompute_each=False)
    assert recompute_soon_wait()
    recompute(campaign.pk)  # the queued one, run: nothing is queued or marked as queued now
    queued_recomputes()
    swapped = RUN_A.replace(" alpha\n", " swap\n").replace("-1 1 ", "-x 1 ").replace("-2 2 ", "-1 2 ")
    swapped = swapped.replace("-x 1 ", "-2 1 ")  # ranks 1 and 2 swapped on every topic
    with django_capture_on_commit_callbacks(execute=True):
        body = arrive(
            api,
            coordinator,
            campaign,
            swapped,
            budget="5",
            reference="alpha",
            question="non_inferiority",
            margin="0.5",
        ).json()
    assert recompute_soon_wait()
    assert [campaign.pk] in queued_recomputes(), "adding the run queues the campaign's recompute"
    recompute(campaign.pk)  # what the worker does with it
    report = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
    assert report["verdict"] == "not_worse" and report["verdict_reason"].startswith(EXACT_REASON), report
    assert report["difference"]["exact"] is not None and report["topup_spent"] == 0
    assert report["topup_returned"] == pytest.approx(5), "nothing to judge: the top-up goes back"


def test_only_an_exact_reading_counts_as_exact_not_any_band_of_no_width() -> None:
    exact = Verdict(
        outcome="worse", low=-2.5, high=-2.5, value=-2.5, reason=f"{EXACT_REASON}: it is exactly -2.5"
    )
    assert verdict_exact_value(exact) == -2.5
    # A look whose band has no width (no spread among its terms) is no exact value.
    flat = Verdict(outcome="worse", low=-2.5, high=-2.5, value=-2.5, reason="")
    undecided = Verdict(outcome="", low=-2.5, high=-2.5, reason=exact.reason)
    assert verdict_exact_value(flat) is None and verdict_exact_value(undecided) is None
    assert verdict_exact_value(None) is None


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
    # A fixed seed: the draws are the same on every run. With a random one the fixed rule's
    # reading at 14 labels was now and then not settled, rightly: with seed 7 the estimate's
    # skewness is 0.32, past the normal approximation's 0.30 (the check this test is not about).
    Campaign.objects.filter(pk=created.json()["id"]).update(seed=1)
    campaign = Campaign.objects.get(pk=created.json()["id"])
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("poor.run", RUN_POOR)])
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    return campaign_start(campaign=campaign)


def test_a_campaign_the_budget_stopped_stays_stopped_while_its_verdict_trims_the_draws(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    # The worker trims the draws after a verdict decides and tops up after: in between, the
    # assessors' page once read "running" with nothing open, and the last `next` had said 204.
    campaign = _two_systems(api, coordinator, assessor, "fixed", 14)
    judge_all(campaign, assessor)
    campaign.refresh_from_db()
    assert campaign.blocked == STOP_BUDGET
    assert tasks_trim_to_budget(campaign_id=campaign.pk) == 0
    progress = api(assessor).get(f"/api/campaigns/{campaign.pk}/progress/").json()
    assert progress["state"] == "budget_spent" and progress["open_tasks"] == 0, progress


@pytest.mark.parametrize("rule", ["sequential", "fixed"])
def test_a_two_system_campaign_gets_its_own_verdict_shown_on_its_pages(
    client: Client, api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, rule: str
) -> None:
    budget = 300 if rule == "sequential" else 14
    campaign = _two_systems(api, coordinator, assessor, rule, budget)
    judge_all(campaign, assessor)
    campaign.refresh_from_db()
    body = api(coordinator).get(f"/api/campaigns/{campaign.pk}/").json()
    assert body["verdict"] == "better", body  # alpha minus a run of grade-0 documents
    plan = body["verdict_plan"]
    assert plan["rule"] == rule and plan["plan_fixed_at"] is not None and body["verdict_low"] > 0
    if rule == "sequential":
        # Decided before the budget was spent: the rest was taken off, and the figures add up.
        assert body["verdict_returned"] > 0
        client.force_login(coordinator)
        page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
        assert "Judging stopped: the verdict (better) came before the budget was spent" in page
        assert campaign.budget == pytest.approx(budget - body["verdict_returned"])
        assert Judgment.objects.filter(campaign=campaign).count() == pytest.approx(campaign.budget)
    else:
        assert body["verdict_returned"] == 0 and campaign.budget == budget
    (event,) = WebhookEvent.objects.filter(campaign=campaign, name="campaign.decided")
    assert event.data["verdict"] == "better" and event.data["systems"] == ["alpha", "poor"]
    assert event.data["rule"] == rule and event.data["horizon"] == plan["horizon"]
    client.force_login(coordinator)
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "Verdict: alpha is better than poor" in page and "Save the pair" not in page
    # The rule's interval is named as the rule's, not mistaken for the running difference's.
    assert (
        "the rule's interval [" in page and "can differ from the running difference's 95 % interval" in page
    )
    dashboard = client.get(f"/campaigns/{campaign.pk}/dashboard/").content.decode()
    assert "Verdict: alpha is better than poor" in dashboard


def test_the_plan_cannot_change_once_a_judgment_counts(
    client: Client, api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = _two_systems(api, coordinator, assessor, "sequential", 40)
    # Before any judgment the plan follows the settings.
    changed = api(coordinator).patch(
        f"/api/campaigns/{campaign.pk}/", {"verdict_rule": "fixed"}, format="json"
    )
    assert changed.status_code == 200 and changed.json()["verdict_plan"]["rule"] == "fixed"
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    task_answer(task=task, assessor=assessor, grade=oracle_grade(task.document.docno), seconds=2.0)
    for change in (
        {"verdict_rule": "sequential"},
        {"verdict_margin": 0.5, "verdict_question": "non_inferiority"},
        {"focus_systems": ["poor", "alpha"]},
    ):
        refused = api(coordinator).patch(f"/api/campaigns/{campaign.pk}/", change, format="json")
        assert refused.status_code == 400 and "cannot change once judgments count" in refused.content.decode()
    # The budget may grow: the horizon the rule spends its error over stays.
    horizon = Verdict.objects.get(campaign=campaign, arrival__isnull=True).horizon
    raised = api(coordinator).patch(f"/api/campaigns/{campaign.pk}/", {"budget": 80}, format="json")
    assert raised.status_code == 200 and raised.json()["verdict_plan"]["horizon"] == horizon
    # The page refuses the same way and shows the plan read-only.
    client.force_login(coordinator)
    answer = client.post(
        f"/campaigns/{campaign.pk}/verdict-rule/",
        {"verdict_rule": "anytime", "verdict_question": "difference", "verdict_margin": "0"},
        follow=True,
    )
    assert "cannot change once judgments count" in answer.content.decode()
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "fixed</strong> since the first judgment" in page and "Save the pair" not in page
    assert Campaign.objects.get(pk=campaign.pk).verdict_rule == "fixed"


def test_the_verdict_defaults_are_checked_alike_on_the_page_and_the_api(
    client: Client, api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    refused = api(coordinator).patch(
        f"/api/campaigns/{campaign.pk}/", {"verdict_rule": "peek"}, format="json"
    )
    assert refused.status_code == 400 and "verdict_rule" in refused.content.decode()
    margin = api(coordinator).patch(f"/api/campaigns/{campaign.pk}/", {"verdict_margin": 0.5}, format="json")
    assert margin.status_code == 400 and "needs a question that reads it" in margin.content.decode()
    client.force_login(coordinator)
    page = client.post(
        f"/campaigns/{campaign.pk}/verdict-rule/",
        {"verdict_rule": "sequential", "verdict_question": "difference", "verdict_margin": "0.5"},
        follow=True,
    ).content.decode()
    assert "Verdict rule not changed" in page and "needs a question that reads it" in page
    saved = client.post(
        f"/campaigns/{campaign.pk}/verdict-rule/",
        {"verdict_rule": "anytime", "verdict_question": "non_inferiority", "verdict_margin": "0.5"},
        follow=True,
    )
    assert "Verdicts: Anytime" in saved.content.decode()
    campaign.refresh_from_db()
    assert (campaign.verdict_rule, campaign.verdict_question, campaign.verdict_margin) == (
        "anytime",
        "non_inferiority",
        0.5,
    )
    client.force_login(assessor)
    # An assessor sees the campaign but may not manage it (labeling.access).
    assert (
        client.post(f"/campaigns/{campaign.pk}/verdict-rule/", {"verdict_rule": "fixed"}).status_code == 403
    )


def test_a_campaign_that_draws_whole_topics_reads_the_sequential_rule_too(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    """Topic-level arrivals are read after every topic that counts (its documents all judged),
    from the query level's own difference terms."""
    campaign = running(api, coordinator, assessor, "passive")
    judge_all(campaign, assessor, recompute_each=False)
    body = arrive(api, coordinator, campaign, RUN_POOR, budget="40", reference="alpha").json()
    assert body["rule"] == "sequential"
    judge_all(campaign, assessor)
    verdict = _verdict(body["id"])
    assert verdict.outcome in ("worse", "not_settled"), verdict
    campaign.refresh_from_db()
    arrays = pool_arrays_for(campaign)
    state = verdict_state(verdict, arrays, judged_grades(campaign, arrays))
    assert state is not None and state.looks.value.size >= 1, "looks after the topics drawn since it arrived"
    assert state.over and state.waiting == 0
    if verdict.outcome == "worse":
        assert verdict.high is not None and verdict.high < 0
    else:
        assert verdict.reason


def test_two_runs_arriving_one_after_the_other_each_get_their_own_topup(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    """The newer arrival's queue counts against its top-up: it does not draw past it while the
    older one waits, and the older one is not ended with nothing spent."""
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    older = arrive(api, coordinator, campaign, RUN_POOR, budget="4", reference="alpha", rule="fixed").json()
    newer = arrive(api, coordinator, campaign, budget="4", reference="alpha", rule="fixed").json()
    judge_all(campaign, assessor)
    for body in (older, newer):
        report = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
        assert report["status"] == "done" and report["verdict"] is not None
        assert 0 < report["topup_spent"] <= 4, report


def test_an_arrival_whose_documents_wait_for_open_tasks_is_not_sealed_before_they_are_judged(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    """Topics drawn before the run arrived may still have tasks open. A top-up too small to draw a
    topic is over at once, but the verdict waits for those tasks: they judge the documents it
    depends on (then the difference is exact), so not settled is no final answer while they are
    open."""
    campaign = running(api, coordinator, assessor, "passive")
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    task_answer(task=task, assessor=assessor, grade=oracle_grade(task.document.docno), seconds=2.0)
    reordered = "".join(
        f"{q} Q0 d{q}-{d} {rank} {10 - rank}.0 reordered\n"
        for q in (1, 2, 3)
        for rank, d in enumerate((7, 6, 5, 4, 3), start=1)
    )
    body = arrive(api, coordinator, campaign, reordered, budget="1", reference="alpha").json()
    assert body["new_items"] == 0 and body["waiting_items"] > 0, body
    verdicts_update(campaign)
    assert _verdict(body["id"]).outcome == "", "tasks of drawn topics are open: no verdict yet"
    # Nor does its report say the top-up is done (as read afresh and as stored by a recompute).
    url = f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/"
    assert api(coordinator).get(url).json()["status"] == "judging"
    recompute(campaign.pk)
    listed = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/").json()
    assert [row["status"] for row in listed if row["id"] == body["id"]] == ["judging"], listed
    judge_all(campaign, assessor)
    assert api(coordinator).get(url).json()["status"] == "done"
    verdict = _verdict(body["id"])
    campaign.refresh_from_db()
    arrays = pool_arrays_for(campaign)
    state = verdict_state(verdict, arrays, judged_grades(campaign, arrays))
    assert state is not None and state.waiting == 0
    assert "wait" not in verdict.reason, verdict.reason
    if state.exact is not None:
        side = "better" if state.exact > 0 else "worse" if state.exact < 0 else "not_settled"
        assert verdict.outcome == side
