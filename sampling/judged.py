"""The judged sampling strategy's numbers in the app: the calibration a sampling state uses,
its q, the judge as label-model input for the other strategies, and the certified estimate rows.
The formulas are `estimation.judges`.

Why the estimate stays unbiased while labels arrive: every draw stores its sampling version,
and each version stores the calibration h it was computed with (`JudgeCalibration`), fitted
only from human labels that existed before that version's draws. The term of draw k,
``sum_i a_i h_k(f_i) + a (G - h_k(f)) / q_k``, has expectation theta given everything before
it, whatever h_k is; the judge's classes f_i come from uploads, never from the draws' outcomes.
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
from estimation.judges.design import judged_distribution, judged_estimate, judged_terms
from estimation.metrics.spec import Metric
from estimation.sampling.items import system_weights
from estimation.sampling.pool import Pool
from estimation.sampling.results import SamplingDistribution
from labeling.metric import campaign_metric
from labeling.models import Campaign, Judge, JudgeCalibration
from sampling.estimates import _difference_row, _row, counted_item_draws, not_linear_rows
from sampling.judge_labels import calibration_set_pairs, judge_for_sampling, pool_judge_classes
from sampling.pool_arrays import PoolArrays, pool_from_arrays
from sampling.state import focus_indices

FIRST_STAGE_SHARE = 1 / 3
"""Internal calibration: the share of the budget (in judgments) judged with the no-model design
before the calibration is fitted; it is then kept for the rest of the campaign (the method
notes' two-stage design)."""
MIN_FIRST_STAGE = 10


def first_stage_labels(campaign: Campaign) -> int:
    """Human-labelled pool items before an internal calibration is fitted (and then frozen)."""
    if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS:
        return max(MIN_FIRST_STAGE, int(round(campaign.budget * FIRST_STAGE_SHARE)))
    return 3 * MIN_FIRST_STAGE


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
    label_classes, humans = calibration_set_pairs(campaign, judge)
    if label_classes.size:
        return fit_calibration(label_classes, gains[humans], n_grades=n_grades, source="external")
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
    design = judged_distribution(
        importance,
        np.where(pool.slot_used, calibration.sigma(classes), 0.0),
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


def judged_level_rows(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, spent: float
) -> tuple[list[dict], dict | None, int]:
    """DCG rows from the certified estimator (every draw with the h of its sampling version),
    each with the judge-only value beside it; nDCG and ERR as null with a reason."""
    metric = campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")
    topic, slot, propensities, versions = counted_item_draws(campaign, arrays, grades)
    gains = metric.gain_table()
    pool = pool_from_arrays(arrays)
    judge = judge_for_sampling(campaign)
    classes = pool_judge_classes(judge, arrays)
    tables = {
        version: Calibration.from_dict(table)
        for version, table in JudgeCalibration.objects.filter(campaign=campaign).values_list(
            "sampling_version", "table"
        )
    }
    none = no_calibration(campaign.grade_count)
    # h of each draw's item under its version's calibration; draws made by another strategy
    # (before a switch) carry h = 0: their terms are plain importance sampling, still unbiased.
    drawn_classes = classes[topic, slot]
    control = np.array(
        [tables.get(int(v), none).h(np.array([c]))[0] for v, c in zip(versions, drawn_classes, strict=True)]
    )
    human = gains[grades[topic, slot]] if topic.size else np.zeros(0)
    n_judged = int(np.unique(topic * arrays.n_slots + slot).size) if topic.size else 0
    judge_gain = np.where(classes >= 0, gains[np.clip(classes, 0, None)], 0.0)
    terms_of: dict[int, np.ndarray] = {}
    rows: list[dict] = []
    judge_values: dict[str, float] = {}
    bounds = metric.value_bounds()
    for index, name in enumerate(arrays.system_names):
        weights = system_weights(pool, metric, index)
        judge_values[name] = float((weights * judge_gain).sum())
        if not topic.size:
            row = _row(name, metric, None, intervals={})
        else:
            offsets = {
                v: float((weights * tables.get(v, none).h(classes)).sum()) for v in set(versions.tolist())
            }
            terms = judged_terms(
                np.array([offsets[int(v)] for v in versions]),
                weights[topic, slot],
                human,
                control,
                propensities,
            )
            terms_of[index] = terms
            estimate = judged_estimate(terms, n_judged=n_judged, budget_spent=spent)
            # What the judge was worth: the draws the same design would need without the judge's
            # control variate (h = 0) for this interval's width (an effective sample size).
            plain = weights[topic, slot] * human / propensities
            worth = (
                float(terms.size * plain.var(ddof=1) / terms.var(ddof=1))
                if terms.size > 1 and terms.var(ddof=1) > 0
                else None
            )
            row = _row(
                name,
                metric,
                estimate,
                intervals={"clt": [max(estimate.low, bounds[0]), min(estimate.high, bounds[1])]},
            )
        row["judge_only"] = judge_values[name] if judge is not None else None
        row["draws_without_judge"] = worth if topic.size else None
        rows.append(row)
    rows += not_linear_rows(campaign, arrays)
    difference = None
    if campaign.goal == Campaign.Goal.DIFFERENCE:
        focus = focus_indices(campaign, arrays)
        if len(focus) == 2:
            a, b = focus
            gap = (
                judged_estimate(terms_of[a] - terms_of[b], n_judged=n_judged, budget_spent=spent)
                if topic.size
                else None
            )
            difference = _difference_row([arrays.system_names[a], arrays.system_names[b]], metric, gap)
    return rows, difference, int(topic.size)
