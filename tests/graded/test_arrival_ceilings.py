"""Operator ceilings and strict numbers where budgets and runs come in: a budget that is huge,
not finite, not plain ASCII decimal or over LABELING_MAX_BUDGET answers 400 on create, on PATCH
and with an arrival, and nothing is stored (the arriving run is not pooled); arrivals per
campaign, pooled runs and run lines have their ceilings, each refused with the setting's name;
a run file with two tags is refused at the first line of the second."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client, override_settings
from rest_framework.test import APIClient

from labeling.import_reports import ImportFailed
from labeling.models import Arrival, Campaign, PoolItem, RankingEntry, System
from tests.conftest import upload
from tests.graded.helpers import arrive, judge_all, running
from tests.sampling.helpers import RUN_C
from uploads.run_imports import runs_import

Api = Callable[[AbstractBaseUser | None], APIClient]
pytestmark = pytest.mark.postgresql

HOSTILE_BUDGETS = ["1e308", "1.797e308", str(2**63), "١٢", "1_000", "nan", "inf", "-5", " 0x10", "2000000"]


def _stored(campaign: Campaign) -> tuple[int, int, int, int, float]:
    campaign.refresh_from_db()
    return (
        System.objects.filter(campaign=campaign).count(),
        RankingEntry.objects.filter(system__campaign=campaign).count(),
        PoolItem.objects.filter(campaign=campaign).count(),
        Arrival.objects.filter(campaign=campaign).count(),
        campaign.budget,
    )


@pytest.mark.parametrize("budget", HOSTILE_BUDGETS)
def test_a_hostile_budget_on_create_answers_400_and_stores_no_campaign(
    api: Api, coordinator: AbstractBaseUser, budget: str
) -> None:
    before = Campaign.objects.count()
    body = {"name": "x", "metric": "DCG@5", "grades": ["0", "1"], "strategy": "items", "budget": budget}
    answer = api(coordinator).post("/api/campaigns/", body)  # a form: the number as typed
    assert answer.status_code == 400 and "budget" in answer.content.decode(), answer.content
    assert Campaign.objects.count() == before


@pytest.mark.parametrize("budget", [1e308, 2**63, 2_000_000.0, -1.0])
def test_a_json_budget_past_the_ceiling_answers_400_on_create_and_on_patch(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, budget: float
) -> None:
    body = {"name": "x", "metric": "DCG@5", "grades": ["0", "1"], "strategy": "items", "budget": budget}
    answer = api(coordinator).post("/api/campaigns/", body, format="json")
    assert answer.status_code == 400, answer.content
    campaign = running(api, coordinator, assessor, "items")
    patched = api(coordinator).patch(f"/api/campaigns/{campaign.pk}/", {"budget": budget}, format="json")
    assert patched.status_code == 400, patched.content
    campaign.refresh_from_db()
    assert campaign.budget == 12


def test_the_ceiling_is_named_and_the_operator_can_move_it(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    with override_settings(LABELING_MAX_BUDGET=100):
        refused = api(coordinator).patch(f"/api/campaigns/{campaign.pk}/", {"budget": 101}, format="json")
        assert refused.status_code == 400 and "LABELING_MAX_BUDGET" in str(refused.json()), refused.content
        allowed = api(coordinator).patch(f"/api/campaigns/{campaign.pk}/", {"budget": 100}, format="json")
        assert allowed.status_code == 200, allowed.content


def test_the_budget_page_refuses_digits_that_are_not_ascii(
    client: Client, api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    client.force_login(coordinator)
    page = client.post(f"/campaigns/{campaign.pk}/budget/", {"budget": "١٢٠"}, follow=True)
    assert "plain decimal number" in page.content.decode()
    campaign.refresh_from_db()
    assert campaign.budget == 12


def test_a_hostile_top_up_answers_400_and_the_run_is_not_pooled(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    # One judged campaign takes every hostile budget in turn (judging it is the slow part): each
    # refusal must leave it exactly as it was, so the next one starts from the same state.
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    before = _stored(campaign)
    for budget in HOSTILE_BUDGETS:
        answer = arrive(api, coordinator, campaign, budget=budget, reference="alpha")
        assert answer.status_code == 400, (budget, answer.content)
        assert _stored(campaign) == before, budget


def test_a_top_up_that_takes_the_campaign_past_the_ceiling_is_refused_before_the_run_is_read(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    before = _stored(campaign)
    with override_settings(LABELING_MAX_BUDGET=20):
        answer = arrive(api, coordinator, campaign, budget="10", reference="alpha")
    assert answer.status_code == 400 and "LABELING_MAX_BUDGET" in answer.content.decode()
    assert "12 + 10" in answer.content.decode(), "says what the total would be"
    assert _stored(campaign) == before
    # A width asks the planner for a budget: with no room left under the ceiling, refused first.
    with override_settings(LABELING_MAX_BUDGET=12):
        answer = arrive(api, coordinator, campaign, target_width="0.5", reference="alpha")
    assert answer.status_code == 400 and "no top-up fits under it" in answer.content.decode()
    assert _stored(campaign) == before


def test_arrivals_past_the_operator_s_ceiling_are_refused_with_its_name(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    with override_settings(LABELING_MAX_ARRIVALS=1):
        assert arrive(api, coordinator, campaign, budget="4", reference="alpha").status_code == 201
        before = _stored(campaign)
        again = arrive(api, coordinator, campaign, RUN_C.replace(" gamma\n", " delta\n"), budget="4")
    assert again.status_code == 400 and "LABELING_MAX_ARRIVALS=1" in again.content.decode()
    assert _stored(campaign) == before


def test_pooled_runs_and_run_lines_have_ceilings_named_in_the_refusal(draft_campaign: Campaign) -> None:
    before = _stored(draft_campaign)
    pooled = System.objects.filter(campaign=draft_campaign, evaluation_only=False).count()
    with override_settings(LABELING_MAX_POOLED_RUNS=pooled), pytest.raises(ImportFailed) as refused:
        runs_import(campaign=draft_campaign, files=[upload("c.run", RUN_C)])
    assert "LABELING_MAX_POOLED_RUNS" in str(refused.value.errors[0])
    with override_settings(LABELING_MAX_RUN_LINES=7), pytest.raises(ImportFailed) as long:
        runs_import(campaign=draft_campaign, files=[upload("c.run", RUN_C)])
    error = long.value.errors[0]
    assert (error.file, error.line) == ("c.run", 8) and "LABELING_MAX_RUN_LINES" in error.reason
    assert _stored(draft_campaign) == before
    # For evaluation only, a run is not pooled: the pooled ceiling does not apply.
    with override_settings(LABELING_MAX_POOLED_RUNS=pooled):
        runs_import(campaign=draft_campaign, files=[upload("c.run", RUN_C)], evaluation_only=True)


@pytest.mark.parametrize("second_at", [2, 14])
def test_a_run_file_with_two_tags_is_refused_at_the_first_line_of_the_second(
    draft_campaign: Campaign, second_at: int
) -> None:
    lines = RUN_C.splitlines(keepends=True)
    lines[second_at - 1] = lines[second_at - 1].replace(" gamma\n", " delta\n")
    before = _stored(draft_campaign)
    with pytest.raises(ImportFailed) as refused:
        runs_import(campaign=draft_campaign, files=[upload("two.run", "".join(lines))])
    error = refused.value.errors[0]
    assert (error.file, error.line) == ("two.run", second_at), error
    assert "'delta' differs from 'gamma' (line 1)" in error.reason
    assert _stored(draft_campaign) == before


def test_an_upload_judge_takes_no_key_variable(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "judged")
    body: dict[str, Any] = {"name": "labels", "kind": "upload", "api_key_variable": "HOME"}
    answer = api(coordinator).post(f"/api/campaigns/{campaign.pk}/judges/", body, format="json")
    assert answer.status_code == 400, answer.content
    assert "takes no api_key_variable" in answer.content.decode()
