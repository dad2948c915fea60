"""The judged sampling strategy's numbers in the app: the calibration a sampling state uses,
its q, the judge as label-model input for the other strategies, and the certified estimate rows.
The formulas are `estimation.judges`.

Why the estimate stays unbiased while labels arrive: every draw stores its sampling version,
and each version stores the calibration h it was computed with (`JudgeCalibration`), fitted
only from human labels that existed before that version's draws. The term of draw k,
``sum_i a_i h_k(f_i) + a (G - h_k(f)) / q_k`` (its control weighted by a lambda_k fitted on the
earlier draws), has expectation theta given everything before it, whatever h_k is, as long as the
judge's classes f_i do not depend on the draws' outcomes: uploads, endpoint runs (the model never
sees a human grade; `sampling.judge_runs` orders a run by the runs, not by the draws) and the
lexical judge (thresholds fitted once, at its first run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from estimation.judges.calibration import (
    Calibration,
    fit_calibration,
    no_calibration,
)
from estimation.judges.design import judged_distribution
from estimation.metrics.spec import Metric
from estimation.sampling.items import system_weights
from estimation.sampling.pool import Pool
from estimation.sampling.results import SamplingDistribution
from labeling.models import Campaign, Judgment, Task
from labeling.preflight import Problem
from sampling.judge_labels import calibration_set_pairs, judge_for_sampling, pool_judge_classes
from sampling.models import Judge, JudgeCalibration, JudgeLabel, JudgeRun
from sampling.pool_arrays import PoolArrays

FIRST_STAGE_SHARE = 1 / 3
"""Internal calibration: the share of the budget (in judgments) judged with the no-model design
before the calibration is fitted; it is then kept for the rest of the campaign (the method
notes' two-stage design)."""
MIN_FIRST_STAGE = 10


def judged_inputs_problem(campaign: Campaign) -> Problem | None:
    """The pre-flight's word when the judged strategy has no judge labels to start from: without
    any, every draw is a plain importance sample (unbiased, but nothing saved by a judge)."""
    judges = list(Judge.objects.filter(campaign=campaign).order_by("created_at", "id"))
    if not judges:
        return Problem(
            "judge_missing",
            0,
            (),
            'model judges: the strategy "Model labels + human sample" has none; add one under Model '
            "judges (a clone does not copy judges); without judge labels every draw is a plain "
            "importance sample, unbiased but with nothing saved by a judge",
        )
    if judge_for_sampling(campaign) is not None:
        return None
    running = JudgeRun.objects.filter(judge__in=judges, status__in=JudgeRun.ACTIVE).exists()
    names = tuple(judge.name for judge in judges)
    next_step = (
        "its run is under way: labels count from the first recompute after they arrive"
        if running
        else "run it (Run under Model judges) or upload its labels"
    )
    return Problem(
        "judge_without_labels",
        len(judges),
        names,
        f"model judge(s) without labels on the pool yet: {next_step}; until then every draw is a plain "
        "importance sample, unbiased but with nothing saved by a judge",
    )


def first_stage_labels(campaign: Campaign) -> int:
    """Human-labelled pool items before an internal calibration is fitted (and then frozen)."""
    if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS:
        return max(MIN_FIRST_STAGE, int(round(campaign.budget * FIRST_STAGE_SHARE)))
    return 3 * MIN_FIRST_STAGE


def first_stage_room(campaign: Campaign) -> int | None:
    """Items the first stage of an internal calibration may still draw: the first stage's size
    minus the items judged or waiting for a judgment; None when no first stage is pending (no
    judge, an external calibration, or the calibration fitted already). Without this limit the
    draw queue, topped up ahead of the assessors, drew most of a small budget from the no-model
    design before the calibration existed (the demo: all 97 draws of a budget of 60)."""
    judge = judge_for_sampling(campaign)
    if judge is None or JudgeLabel.objects.filter(judge=judge, human_grade__isnull=False).exists():
        return None
    if JudgeCalibration.objects.filter(campaign=campaign, judge=judge, table__source="internal").exists():
        return None
    judged = set(Judgment.objects.filter(campaign=campaign).values_list("topic_id", "document_id").distinct())
    waiting = set(
        Task.objects.filter(campaign=campaign, answered_at__isnull=True).values_list(
            "topic_id", "document_id"
        )
    )
    return max(0, first_stage_labels(campaign) - len(judged | waiting))


def external_calibration_of(campaign: Campaign, judge: Judge, metric: Metric) -> Calibration | None:
    """h and sigma from the judge's calibration set (other topics), or None without one."""
    label_classes, humans = calibration_set_pairs(campaign, judge)
    if not label_classes.size:
        return None
    gains = metric.gain_table()
    return fit_calibration(label_classes, gains[humans], n_grades=campaign.grade_count, source="external")


def judge_calibration_fit(
    campaign: Campaign, judge: Judge | None, classes: np.ndarray, grades: np.ndarray, metric: Metric
) -> Calibration:
    """External when the judge has a calibration set (never on the campaign's topics). Else
    internal and two-stage: none (the no-model design) until `first_stage_labels` pool items are
    judged, then fitted once on them and kept. A calibration refitted after every few answers
    would let the number of later draws depend on the labels that moved it, and the mean over a
    budget-stopped sample then drifts (measured through the app: about +2 % on a system the
    design does not aim at); a frozen one leaves a single switch."""
    n_grades = campaign.grade_count
    gains = metric.gain_table()
    if judge is None:
        return no_calibration(n_grades)
    external = external_calibration_of(campaign, judge, metric)
    if external is not None:
        return external
    frozen = (
        JudgeCalibration.objects.filter(campaign=campaign, judge=judge, table__source="internal")
        .order_by("sampling_version")
        .values_list("table", flat=True)
        .first()
    )
    if frozen is not None:
        return Calibration.from_dict(frozen)
    judged = grades >= 0
    if int(judged.sum()) < first_stage_labels(campaign):
        return no_calibration(n_grades)
    return fit_calibration(classes[judged], gains[grades[judged]], n_grades=n_grades, source="internal")


@dataclass(frozen=True, eq=False)
class JudgedDistribution(SamplingDistribution):
    """A judged q with the calibration and judge it was computed with (stored per version)."""

    calibration: Calibration | None = None
    judge: Judge | None = None
    sigma: np.ndarray | None = None  # the calibrated judge's spread per item (the top-up's too)


def judged_design(
    campaign: Campaign,
    arrays: PoolArrays,
    pool: Pool,
    metric: Metric,
    focus: Sequence[int],
    grades: np.ndarray,
) -> JudgedDistribution:
    """q of the judged strategy over (topic, slot): |a| of the goal's systems times sigma(f), mixed
    with eps = the campaign's mix (at least 0.2, the method's safety share) of w summed over every
    pooled system, so the draws stay unbiased for every system, not only the focus ones."""
    judge = judge_for_sampling(campaign)
    classes = pool_judge_classes(judge, arrays)
    calibration = judge_calibration_fit(campaign, judge, classes, grades, metric)
    weights = np.stack([system_weights(pool, metric, s) for s in range(pool.n_systems)])
    if campaign.goal == Campaign.Goal.DIFFERENCE and len(focus) == 2:
        importance = np.abs(weights[focus[0]] - weights[focus[1]])
    else:
        importance = np.abs(weights[list(focus)]).sum(axis=0)
    sigma = np.where(pool.slot_used, calibration.sigma(classes), 0.0)
    design = judged_distribution(
        importance,
        sigma,
        np.abs(weights).sum(axis=0),
        safety_share=max(campaign.mix, 0.2),
        cost=np.where(pool.slot_used, np.maximum(pool.item_cost, 1e-9), 1.0),
    )
    return JudgedDistribution(
        q=design.q,
        optimal=design.optimal,
        mix=design.mix,
        cost=pool.item_cost,
        calibration=calibration,
        judge=judge,
        sigma=sigma,
    )


def calibration_store(
    campaign: Campaign, version: int, calibration: Calibration, judge: Judge | None
) -> None:
    """Keep the calibration a sampling version was computed with (its draws' h)."""
    JudgeCalibration.objects.update_or_create(
        campaign=campaign,
        sampling_version=version,
        defaults={"table": calibration.as_dict(), "judge": judge},
    )
