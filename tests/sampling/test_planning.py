"""The campaign page's budget planner (sampling.planning, POST .../plan/)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling.models import Campaign
from labeling.services.campaigns import campaign_create, campaign_update
from sampling.planning import _oracle, campaign_plan
from sampling.pool_arrays import pool_arrays_for
from uploads.run_imports import runs_import

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]


def test_it_plans_every_strategy_at_four_budgets_and_recommends_one_in_plain_words(
    campaign: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    response = api(coordinator).post(
        f"/api/campaigns/{campaign.pk}/plan/", {"repetitions": 50}, format="json"
    )
    assert response.status_code == 200, response.content
    plan = response.json()
    budgets = sorted({row["budget"] for row in plan["rows"]})
    pooled = int(pool_arrays_for(campaign).slot_used.sum())
    assert campaign.budget > pooled  # the fixture's budget pays for more than its pool holds
    # Beyond the pool every strategy plans alike: the budgets are shares of the pool, and the
    # page says why.
    assert budgets == [round(pooled / 4), round(pooled / 2), pooled]
    assert plan["budget"] == pooled
    assert any(f"more than its pool holds ({pooled} documents)" in note for note in plan["unplanned"])
    assert {row["strategy"] for row in plan["rows"]} == {"passive", "active", "items"}
    # No coverage without an interval: (-inf, inf) would "hold" every truth.
    assert all((row["coverage"] is None) == (row["mean_width"] is None) for row in plan["rows"])
    assert all(0.0 <= row["coverage"] <= 1.0 for row in plan["rows"] if row["coverage"] is not None)
    assert all(row["rmse"] >= 0 for row in plan["rows"] if row["budget"] == pooled)
    advice = plan["recommendation"]
    assert advice["strategy"] in {"passive", "active", "items"}
    assert "Sawade" not in advice["text"] and "Schnabel" not in advice["text"]
    assert "et al." in advice["paper"]
    assert set(plan["budget_for_width"]["budgets"]) == {"passive", "active", "items"}


def test_it_plans_only_for_coordinators_of_sampling_campaigns(
    campaign: Campaign,
    draft_campaign: Campaign,
    assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
    api: Api,
) -> None:
    assert api(assessor).post(f"/api/campaigns/{campaign.pk}/plan/", {}, format="json").status_code == 403
    empty = campaign_create(creator=coordinator, name="empty", budget=10)
    response = api(coordinator).post(f"/api/campaigns/{empty.pk}/plan/", {}, format="json")
    assert response.status_code == 400 and "pool is empty" in response.json()["detail"]


def test_it_keeps_judged_grades_in_the_truth_and_draws_the_rest_from_the_label_model(
    campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    import numpy as np

    arrays = pool_arrays_for(campaign)
    grades = np.full(arrays.slot_used.shape, -1)
    grades[0, 0] = 2
    certain = np.zeros(arrays.slot_used.shape + (3,))
    certain[..., 1] = 1.0  # the label model is sure every other document is a 1
    qrels = _oracle(grades, certain, arrays, seed=7)
    first_qid, first_docno = arrays.topic_qids[0], arrays.docnos[0][0]
    assert qrels[first_qid][first_docno] == 2
    others = [
        g
        for qid, docs in qrels.items()
        for docno, g in docs.items()
        if (qid, docno) != (first_qid, first_docno)
    ]
    assert set(others) == {1}


def test_it_plans_the_four_shares_of_a_budget_smaller_than_the_pool(
    campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    plan = campaign_plan(campaign_update(campaign=campaign, budget=8), repetitions=20)
    assert sorted({row["budget"] for row in plan["rows"]}) == [2, 4, 8, 16]
    assert not any("pool holds" in note for note in plan["unplanned"])
    # The strategies it does not replay are named, each with its reason.
    named = [note for note in plan["unplanned"] if note.startswith("not planned: ")]
    assert len(named) == 2 and all("comparison from the paper" in note for note in named)


def test_the_advice_agrees_with_the_plans_own_table(campaign: Campaign) -> None:
    """No strategy in the table beats the advised one beyond the replays' noise, and the advice
    says "tie" exactly when several are within it."""
    from estimation.simulation.planner import clearly_below

    plan = campaign_plan(campaign, repetitions=60)
    advice = plan["recommendation"]
    at_budget = {row["strategy"]: row for row in plan["rows"] if row["budget"] == plan["budget"]}
    advised = at_budget[advice["strategy"]]
    for row in at_budget.values():
        assert not clearly_below(row["rmse"], row["rmse_se"], advised["rmse"], advised["rmse_se"]), row
    assert advice["strategy"] in advice["tied"]
    assert ("tie:" in advice["text"]) == (len(advice["tied"]) > 1)
    lowest = min(at_budget.values(), key=lambda row: row["rmse"])
    assert lowest["strategy"] in advice["tied"]


def test_it_is_the_same_plan_for_the_same_campaign(campaign: Campaign) -> None:
    assert campaign_plan(campaign, repetitions=30) == campaign_plan(campaign, repetitions=30)


def test_it_offers_the_planner_on_the_graded_campaign_page(
    campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    from django.test import Client

    client = Client()
    client.force_login(coordinator)
    html = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert f'data-url="/api/campaigns/{campaign.pk}/plan/"' in html and "Plan the budget" in html
    assert 'href="#plan"' in html, "a button at the top leads down to the planner"


RUN_C = "".join(f"{q} Q0 d{q}-{d} {d} {30 - d}.0 gamma\n" for q in (1, 2, 3) for d in range(2, 9))


@pytest.fixture
def three_run_draft(coordinator: AbstractBaseUser) -> Campaign:
    """A graded draft with three runs and no qrels: the label model knows nothing yet."""
    from tests.conftest import RUN_A, RUN_B, upload

    draft = campaign_create(
        creator=coordinator, name="three", metric="DCG@5", grades=["a", "b", "c"], budget=100
    )
    runs_import(
        campaign=draft, files=[upload("a.run", RUN_A), upload("b.run", RUN_B), upload("c.run", RUN_C)]
    )
    return draft


def test_it_plans_budgets_too_small_for_an_interval_and_says_what_it_cannot_tell(
    three_run_draft: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    response = api(coordinator).post(
        f"/api/campaigns/{three_run_draft.pk}/plan/", {"budgets": [10], "repetitions": 20}, format="json"
    )
    assert response.status_code == 200, response.content
    plan = response.json()
    passive = next(row for row in plan["rows"] if row["strategy"] == "passive")
    assert passive["mean_width"] is None and passive["rmse"] is not None
    assert plan["budget_for_width"]["width"] is None
    assert any("Topics at random at 10 judgments: no interval width" in note for note in plan["unplanned"])
    assert any("plan larger budgets" in note for note in plan["unplanned"])


def test_it_refers_to_a_budget_with_an_interval_when_the_first_has_none(
    three_run_draft: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    response = api(coordinator).post(
        f"/api/campaigns/{three_run_draft.pk}/plan/", {"budgets": [10, 20], "repetitions": 20}, format="json"
    )
    assert response.status_code == 200, response.content
    plan = response.json()
    assert plan["budget"] == 20.0 and plan["budget_for_width"]["width"] > 0


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"budgets": [1e18]}, "100 times the 21 pooled documents"),
        ({"budgets": [2000], "repetitions": 2000}, "at 2000 repetitions plan budgets up to 50,"),
    ],
)
def test_it_refuses_plans_beyond_the_pool_or_one_request(
    three_run_draft: Campaign,
    coordinator: AbstractBaseUser,
    api: Api,
    body: dict,
    words: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sampling.planning.PLAN_MAX_DRAWS", 100_000)
    response = api(coordinator).post(f"/api/campaigns/{three_run_draft.pk}/plan/", body, format="json")
    assert response.status_code == 400 and words in response.json()["detail"], response.content


def test_it_names_what_a_leaderboard_is_planned_for(
    three_run_draft: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    campaign_update(campaign=three_run_draft, goal="leaderboard", goal_k=3)
    plan = (
        api(coordinator)
        .post(f"/api/campaigns/{three_run_draft.pk}/plan/", {"repetitions": 20}, format="json")
        .json()
    )
    assert plan["goal"] == "difference" and plan["systems"] == ["alpha", "beta"]
    # The replays' noise reaches the page (the chart's bands, the advice's tie rule).
    assert any(row["rmse_se"] for row in plan["rows"]) and "tied" in plan["recommendation"]
    assert "first two of the campaign's 3 systems" in plan["planned_for"]


def _rows(curves: dict[str, list[tuple[float, float, float]]], repetitions: int = 50) -> list:
    """Planner rows from {strategy: [(budget, rmse, width), ...]}, with the Monte-Carlo standard
    errors of normal errors over `repetitions` replays (RMSE / sqrt(2 R); widths varying by a
    tenth)."""
    from estimation.simulation.planner import PlannerRow

    return [
        PlannerRow(
            strategy=strategy,
            budget=budget,
            truth=1.0,
            mean=1.0,
            bias_se=0.01,
            rmse=rmse,
            coverage=0.95,
            mean_width=width,
            topics_judged=3.0,
            spent=budget,
            n_repetitions=repetitions,
            n_without_estimate=0,
            rmse_se=rmse / math.sqrt(2 * repetitions),
            width_se=0.1 * width / math.sqrt(repetitions) if math.isfinite(width) else math.nan,
        )  # fmt: skip
        for strategy, points in curves.items()
        for budget, rmse, width in points
    ]


def test_it_quotes_no_saving_from_an_error_curve_that_rises_and_never_advises_the_worse() -> None:
    from sampling.planning import _recommendation, _trusted_saving

    items = [(40, 0.5, 2.0), (80, 0.35, 1.4), (160, 0.25, 1.0)]
    # The field report: random topics' error 0.856 at 40 judgments, 4.470 at 80.
    rising = _rows({"passive": [(40, 0.856, 3.0), (80, 4.470, 9.0), (160, 2.0, 5.0)], "items": items})
    assert math.isnan(_trusted_saving(rising, "items", 80, "passive"))
    no_interval = _rows({"passive": [(40, 2.0, math.inf), (80, 1.4, 6.0), (160, 1.0, 4.0)], "items": items})
    assert math.isnan(_trusted_saving(no_interval, "items", 80, "passive"))
    # No saving can be quoted, but the replays at the budget say which is better: never the worse.
    advice = _recommendation(rising, {"items": float("nan")}, 80)
    assert advice["strategy"] == "items" and "% less" not in advice["text"]
    assert "Topics at random (4.47) is worse" in advice["text"]
    falling = _rows({"passive": [(40, 1.0, 4.0), (80, 0.7, 2.8), (160, 0.5, 2.0)], "items": items})
    assert _trusted_saving(falling, "items", 80, "passive") > 0.1


def test_the_judged_advice_says_its_saving_against_single_documents_too() -> None:
    from sampling.planning import _recommendation, _trusted_saving

    rows = _rows({
        "passive": [(40, 1.0, 4.0), (80, 0.7, 2.8), (160, 0.5, 2.0)],
        "items": [(40, 0.5, 2.0), (80, 0.35, 1.4), (160, 0.25, 1.0)],
        "judged": [(40, 0.3, 1.2), (80, 0.21, 0.84), (160, 0.15, 0.6)],
    }, repetitions=200)  # fmt: skip
    savings = {name: _trusted_saving(rows, name, 80, "passive") for name in ("items", "judged")}
    against_items = _trusted_saving(rows, "judged", 80, "items")
    advice = _recommendation(rows, savings, 80, {"judged": against_items})
    assert advice["strategy"] == "judged" and advice["tied"] == ["judged"]
    assert (
        "its typical error (0.21) is the lowest of the strategies planned, beyond the replays' noise"
        in advice["text"]
    )
    assert f"about {100 * savings['judged']:.0f} % less budget than topics at random" in advice["text"]
    against = (
        f"Against single documents without the judge (0.35 at 80 judgments): about {100 * against_items:.0f}"
    )
    assert f"{against} % less" in advice["text"]


def test_the_walkthroughs_case_ties_the_judged_strategy_with_single_documents() -> None:
    """80 labels, a judged campaign: random topics 4.190 (width 81.8), model labels + human
    sample 1.994 (7.5), single documents 2.142 (8.0), 200 replays each. The two close ones are
    within the replays' noise (0.15 apart, about 0.29 of noise): a tie, never random topics."""
    from sampling.planning import _recommendation

    rows = _rows({
        "passive": [(40, 6.0, 120.0), (80, 4.190, 81.8), (160, 3.0, 60.0)],
        "items": [(40, 3.0, 11.0), (80, 2.142, 8.0), (160, 1.5, 5.7)],
        "judged": [(40, 2.8, 10.5), (80, 1.994, 7.5), (160, 1.4, 5.3)],
    }, repetitions=200)  # fmt: skip
    advice = _recommendation(rows, {"items": math.nan, "judged": math.nan}, 80)
    assert set(advice["tied"]) == {"items", "judged"}
    assert "model labels + human sample (1.99) and single documents (2.14) tie" in advice["text"]
    assert "Topics at random (4.19) is worse" in advice["text"]
    # Of the two, single documents is simpler, but its intervals are wider beyond the noise
    # (8.0 against 7.5, each known to about 0.06): the judged strategy.
    assert advice["strategy"] == "judged"


def test_a_tie_advises_the_simplest_whose_intervals_no_other_beats() -> None:
    from sampling.planning import _recommendation

    tie = _rows({"passive": [(80, 1.0, 4.0)], "items": [(80, 0.97, 3.9)]})
    advice = _recommendation(tie, {}, 80)
    assert advice["strategy"] == "passive" and advice["tied"] == ["items", "passive"]
    assert "topics at random is the simplest to explain" in advice["text"]
    # Errors alike but random topics' intervals clearly wider: the simplest of the others.
    wider = _rows({"passive": [(80, 1.0, 8.0)], "items": [(80, 0.97, 3.9)]})
    assert _recommendation(wider, {}, 80)["strategy"] == "items"
    # No standard error (one replay): nothing is beyond the noise, so everything ties.
    single = _rows({"passive": [(80, 4.0, 8.0)], "items": [(80, 1.0, 3.9)]}, repetitions=1)
    assert set(_recommendation(single, {}, 80)["tied"]) == {"passive", "items"}


def test_no_judgments_needed_below_the_smallest_budget_replayed() -> None:
    from sampling.planning import budgets_for_width

    rows = _rows({
        "passive": [(40, 1.0, 4.0), (80, 0.7, 2.8), (160, 0.5, 2.0)],
        # Already narrower at 40 than random topics at 80: the line extended below 40 would say ~10.
        "items": [(40, 0.3, 1.0), (80, 0.21, 0.7), (160, 0.15, 0.5)],
    })  # fmt: skip
    needs, below = budgets_for_width(rows, ["passive", "items"], 2.8)
    assert below == ["items"] and math.isnan(needs["items"])
    assert needs["passive"] == pytest.approx(80)


def test_the_advice_is_for_the_campaigns_budget_even_without_an_interval_there(
    three_run_draft: Campaign,
) -> None:
    campaign = campaign_update(campaign=three_run_draft, budget=10)
    plan = campaign_plan(campaign, budgets=[10, 20], repetitions=20)
    assert plan["budget"] == 10 and plan["budget_for_width"]["at"] == 20
    text = plan["recommendation"]["text"].lower()
    assert "at 10 judgments" in text and "at 20 judgments" not in text


def test_a_plan_capped_by_the_pool_says_so_in_its_advice(three_run_draft: Campaign) -> None:
    """A budget larger than the pool: the advice and the chart speak of the pool's size."""
    pooled = three_run_draft.pool_items.count()
    campaign = campaign_update(campaign=three_run_draft, budget=10 * pooled)
    plan = campaign_plan(campaign, repetitions=20)
    assert plan["budget"] == pooled and plan["campaign_budget"] == 10 * pooled
    assert plan["recommendation"]["text"].startswith(
        f"Your budget ({10 * pooled} judgments) is more than the pool holds ({pooled} documents)"
    )
