"""Learned DCG in an SxS campaign: the refit (when it fits, what it stores, why it does not), the
recompute it is requested through, and handing the gains and discounts to another campaign."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser

from estimation.learned_dcg.fit import MIN_STRICT_PAIRS, utilities
from estimation.metrics.values import metric_values
from labeling.metric import campaign_metric
from labeling.models import Campaign
from labeling.recompute import recompute
from labeling.services.campaigns import campaign_create
from sxs import services
from sxs.models import SxsAnswer, SxsFit, SxsTask
from sxs.selectors import known_grades, leaderboard_lists, learned_dcg_summary, list_grades
from tests.sxs.oracle import LEARN_SYSTEMS, answer_by_oracle, make_learning_campaign, oracle_answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def learning(coordinator: AbstractBaseUser, assessor: AbstractBaseUser) -> Campaign:
    return make_learning_campaign(coordinator, ["alice"])


def test_it_records_why_it_cannot_fit_yet_and_how_many_answers_are_needed(
    learning: Campaign, assessor: AbstractBaseUser
) -> None:
    assert services.sxs_refit(campaign=learning) is None, "no answer: nothing to record"
    answer_by_oracle(learning, assessor, 3)
    record = services.sxs_refit(campaign=learning)
    assert record is not None and record.result["status"] == "insufficient"
    assert record.answers == 3
    assert record.result["needed"] >= MIN_STRICT_PAIRS - 3
    assert f"at least {record.result['needed']} more needed" in record.result["reason"]
    assert "weights" not in record.result


def test_it_fits_when_the_answers_change_and_only_then(
    learning: Campaign, assessor: AbstractBaseUser
) -> None:
    answer_by_oracle(learning, assessor, 30)
    fit = services.sxs_refit(campaign=learning)
    assert fit is not None and fit.result["status"] == "fitted" and fit.answers == 30
    result = fit.result
    assert len(result["gains"]) == 3 and len(result["discounts"]) == 3
    assert result["gains"][0] == pytest.approx(0) and result["gains"][-1] == pytest.approx(1)
    assert set(result["accuracy"]) == {"learned", "learned_full_w", "learned_best_of_grid", "exp", "linear"}
    assert result["method"] == "likelihood" and "DCG form" in result["form_test"]["sentence"]
    assert np.asarray(result["transformed"]).shape == (3, 3)
    board = result["leaderboard"]
    assert sorted(row["system"] for row in board["rows"]) == sorted(LEARN_SYSTEMS)
    assert board["ungraded"] == 0 and -1 <= board["kendall_tau"] <= 1
    assert -1 <= board["kendall_tau_utility"] <= 1
    assert [row["rank_learned_dcg"] for row in board["rows"]] == sorted(
        row["rank_learned_dcg"] for row in board["rows"]
    ), "rows in the learned DCG's order"
    diagnostics = result["diagnostics"]
    assert diagnostics["in_sample"] is False and diagnostics["answers"] == 30
    assert [row["strength"] for row in diagnostics["by_strength"]] == ["much better", "better"]
    assert sum(row["answers"] for row in diagnostics["by_strength"]) == diagnostics["scored"]

    assert services.sxs_refit(campaign=learning).pk == fit.pk, "same answers: no refit"
    assert SxsFit.objects.filter(campaign=learning).count() == 1

    answer_by_oracle(learning, assessor, 1)
    again = services.sxs_refit(campaign=learning)
    assert again.pk != fit.pk and again.answers == 31


def test_it_learns_that_grade_one_is_worth_more_than_dcg_says(
    learning: Campaign, assessor: AbstractBaseUser
) -> None:
    # The oracle's gains are [0, 1, 1.5]: normalised [0, 0.67, 1], against [0, 0.33, 1] for 2^y - 1.
    answer_by_oracle(learning, assessor)
    fit = services.sxs_refit(campaign=learning)
    assert fit.result["gains"][1] > 0.45
    assert fit.result["accuracy"]["learned"] >= fit.result["accuracy"]["exp"]


def test_the_refresh_pipeline_refits_through_the_mode_hook(
    learning: Campaign, assessor: AbstractBaseUser
) -> None:
    answer_by_oracle(learning, assessor, 20)
    recompute(learning.pk)
    fit = SxsFit.objects.get(campaign=learning)
    assert fit.result["status"] == "fitted" and fit.answers == 20


def test_answers_and_undo_request_the_refresh_after_commit(
    learning: Campaign,
    assessor: AbstractBaseUser,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Callable,
) -> None:
    requested: list[int] = []
    monkeypatch.setattr("sxs.services.judging.recompute_soon", requested.append)
    with django_capture_on_commit_callbacks(execute=True):
        answer_by_oracle(learning, assessor, 2)
    assert requested == [learning.pk, learning.pk]
    with django_capture_on_commit_callbacks(execute=True):
        services.sxs_undo(campaign=learning, assessor=assessor)
    assert requested == [learning.pk] * 3


def _open_margins(campaign: Campaign, weights: np.ndarray) -> dict[int, float]:
    """|w^T d| of every open, unheld task whose two lists differ in grades, by task id."""
    grades = known_grades(campaign)
    margins = {}
    for task in SxsTask.objects.filter(campaign=campaign, answered_at__isnull=True, assessor__isnull=True):
        left = np.array([list_grades(task.topic_id, task.documents_a, grades, 3, 0)])
        right = np.array([list_grades(task.topic_id, task.documents_b, grades, 3, 0)])
        if np.array_equal(left, right):
            continue
        margins[task.pk] = abs(float(utilities(weights, left)[0] - utilities(weights, right)[0]))
    return margins


def test_margin_selection_asks_the_open_comparison_closest_to_the_learned_margin(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = make_learning_campaign(coordinator, ["alice"], selection="margin", random_start=15)
    answer_by_oracle(campaign, assessor, 15)
    assert set(SxsAnswer.objects.filter(campaign=campaign).values_list("selection_rule", flat=True)) == {
        "random"
    }
    chosen_by_margin = 0
    while True:
        fit = services.sxs_refit(campaign=campaign)
        weights = np.asarray(fit.result["weights"])
        expected = _open_margins(campaign, weights)
        item = services.sxs_next(campaign=campaign, assessor=assessor)
        if item is None:
            break
        task = item.sxs
        if task.selection_rule == "margin":
            chosen_by_margin += 1
            assert task.pk in expected, "never a pair whose lists hold the same grades"
            assert task.margin == pytest.approx(expected[task.pk])
            assert task.margin == pytest.approx(min(expected.values())), "the smallest |w^T d|"
        else:
            assert not expected, "random only once no informative comparison is left"
        services.sxs_answer(task=task, assessor=assessor, preference=oracle_answer(task), seconds=1.0)
    assert chosen_by_margin >= 15
    stored = SxsAnswer.objects.filter(campaign=campaign, selection_rule="margin")
    assert stored.count() == chosen_by_margin and all(a.margin is not None for a in stored)


def test_the_leaderboard_s_learned_dcg_is_what_a_campaign_measures_after_use(
    learning: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    answer_by_oracle(learning, assessor)
    fit = services.sxs_refit(campaign=learning)
    target = campaign_create(
        creator=coordinator, name="graded", metric="DCG@3", grades=["Bad", "Fair", "Good"], budget=10
    )
    services.learned_dcg_apply(campaign=learning, target=target)
    target.refresh_from_db()
    metric = campaign_metric(target)
    lists = leaderboard_lists(learning, known_grades(learning), 3).grades
    rows = {row["system"]: row for row in fit.result["leaderboard"]["rows"]}
    for system, grades in lists.items():
        assert rows[system]["learned_dcg"] == pytest.approx(metric_values(grades, metric).mean(), rel=1e-12)
    # The learned utility is the full T(W): another scale (and, unless T(W) is rank one, order).
    assert any(row["utility"] != pytest.approx(row["learned_dcg"]) for row in rows.values())


def test_an_older_fit_reads_without_the_new_keys_and_the_next_refresh_adds_them(
    learning: Campaign, assessor: AbstractBaseUser
) -> None:
    answer_by_oracle(learning, assessor)
    fit = services.sxs_refit(campaign=learning)
    new = fit.result["leaderboard"]
    # How a fit stored before the learned DCG had its own column looked: "learned" was T(W).
    old_rows = [
        {
            "system": row["system"],
            "learned": row["utility"],
            "standard": row["standard"],
            "rank_learned": row["rank_utility"],
            "rank_standard": row["rank_standard"],
        }
        for row in new["rows"]
    ]
    old_board = {
        "rows": old_rows,
        "kendall_tau": new["kendall_tau_utility"],
        "disagreements": [
            {"first": f["first"], "second": f["second"], "learned_difference": f["utility_difference"],
             "standard_difference": f["standard_difference"]}
            for f in new["utility_disagreements"]
        ],
        "disagreeing_answers": {"count": 3, "learned_right": 1, "standard_right": 2},
        "ungraded": 0,
        "unjudged": "zero",
    }  # fmt: skip
    old_result = {key: value for key, value in fit.result.items() if key not in ("diagnostics", "tie_curve")}
    SxsFit.objects.filter(pk=fit.pk).update(result={**old_result, "leaderboard": old_board})

    summary = learned_dcg_summary(learning)
    assert summary["diagnostics"] is None and summary["tie_curve"] == []
    assert summary["kendall_tau"] is None, "the old tau was the utility's"
    assert summary["kendall_tau_utility"] == pytest.approx(new["kendall_tau_utility"])
    assert {row["system"]: row["utility"] for row in summary["leaderboard"]} == {
        row["system"]: pytest.approx(row["utility"]) for row in new["rows"]
    }
    assert all(row["learned_dcg"] is None for row in summary["leaderboard"])
    assert summary["disagreements"] == [] and summary["disagreeing_answers"] is None
    assert len(summary["utility_disagreements"]) == len(new["utility_disagreements"])

    same = services.sxs_refit(campaign=learning)  # same answers: no refit, the record catches up
    assert same.pk == fit.pk and SxsFit.objects.filter(campaign=learning).count() == 1
    assert same.result["leaderboard"] == new
    # The old record has no held-out predictions: its diagnostics come in sample, the rest alike.
    added, fitted = same.result["diagnostics"], fit.result["diagnostics"]
    assert added["in_sample"] is True and fitted["in_sample"] is False
    assert [row["answers"] for row in added["by_strength"]] == [
        row["answers"] for row in fitted["by_strength"]
    ]
    assert [row["accuracy"]["exp"] for row in added["by_difference"]] == [
        row["accuracy"]["exp"] for row in fitted["by_difference"]
    ], "the standard DCG needs no fit: the same either way"


def test_a_fit_s_tie_curve_reaches_the_summary(learning: Campaign, assessor: AbstractBaseUser) -> None:
    answer_by_oracle(learning, assessor)
    fit = services.sxs_refit(campaign=learning)
    curve = [
        {"c_tie": 0.1, "ties_predicted": 0.25, "strict_accuracy": 0.9},
        {"c_tie": 10.0, "ties_predicted": 0.75, "strict_accuracy": 0.8},
    ]
    SxsFit.objects.filter(pk=fit.pk).update(result={**fit.result, "tie_curve": curve})
    assert learned_dcg_summary(learning)["tie_curve"] == curve
