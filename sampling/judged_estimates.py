"""The judged strategy's estimate rows: every draw with the calibration h of its sampling
version, the control's weight tuned on the draws before it (`estimation.judges.design.tuned_terms`:
a judge that does not help on the items drawn costs little), next to the judge-only value
(`sampling.judged` stores the calibrations). `JudgedLevel.estimate_rows` calls
`judged_level_rows`; like `level_estimates`, nothing here asks for the campaign's strategy."""

from __future__ import annotations

import numpy as np

from estimation.judges.calibration import Calibration, no_calibration
from estimation.judges.design import judged_estimate, judged_parts, tuned_terms
from estimation.metrics.spec import Metric
from estimation.sampling.items import system_weights
from labeling.metric import campaign_metric
from labeling.models import Campaign, JudgeCalibration
from sampling.focus import focus_indices
from sampling.judge_labels import judge_for_sampling, pool_judge_classes
from sampling.level_estimates import counted_item_draws, difference_row, estimate_row, not_linear_rows
from sampling.pool_arrays import PoolArrays, pool_from_arrays

JUDGED_DESIGN = "model labels + human sample"
"""The judged level's design, as the dashboard names it when it says why a metric is missing."""


def judge_only_values(arrays: PoolArrays, classes: np.ndarray, metric: Metric) -> dict[str, float]:
    """Each system's metric with the judge's grades as the truth (unlabelled items count 0)."""
    pool = pool_from_arrays(arrays)
    gains = metric.gain_table()
    judge_gain = np.where(classes >= 0, gains[np.clip(classes, 0, None)], 0.0)
    return {
        name: float((system_weights(pool, metric, index) * judge_gain).sum())
        for index, name in enumerate(arrays.system_names)
    }


def judged_level_rows(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, spent: float, weight_bound: float | None
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
    control = np.zeros(drawn_classes.shape)
    for version in np.unique(versions):
        drawn_with = versions == version
        control[drawn_with] = tables.get(int(version), none).h(drawn_classes[drawn_with])
    human = gains[grades[topic, slot]] if topic.size else np.zeros(0)
    n_judged = int(np.unique(topic * arrays.n_slots + slot).size) if topic.size else 0
    judge_values = judge_only_values(arrays, classes, metric)
    terms_of: dict[int, np.ndarray] = {}
    parts_of: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    rows: list[dict] = []
    bounds = metric.value_bounds()
    for index, name in enumerate(arrays.system_names):
        weights = system_weights(pool, metric, index)
        if not topic.size:
            row = estimate_row(name, metric, None, intervals={})
        else:
            offsets = {
                v: float((weights * tables.get(v, none).h(classes)).sum()) for v in set(versions.tolist())
            }
            plain, controls = judged_parts(
                np.array([offsets[int(v)] for v in versions]),
                weights[topic, slot],
                human,
                control,
                propensities,
            )
            parts_of[index] = (plain, controls)
            terms = tuned_terms(plain, controls)
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
            row = estimate_row(
                name,
                metric,
                estimate,
                intervals={"clt": [max(estimate.low, bounds[0]), min(estimate.high, bounds[1])]},
            )
        row["judge_only"] = judge_values[name] if judge is not None else None
        row["draws_without_judge"] = worth if topic.size else None
        rows.append(row)
    rows += not_linear_rows(campaign, arrays, JUDGED_DESIGN)
    difference = None
    if campaign.goal == Campaign.Goal.DIFFERENCE:
        focus = focus_indices(campaign, arrays)
        if len(focus) == 2:
            a, b = focus
            # The difference's own control weight: tuned on the differences of the two parts.
            gap = (
                judged_estimate(
                    tuned_terms(parts_of[a][0] - parts_of[b][0], parts_of[a][1] - parts_of[b][1]),
                    n_judged=n_judged,
                    budget_spent=spent,
                )
                if topic.size
                else None
            )
            difference = difference_row([arrays.system_names[a], arrays.system_names[b]], metric, gap)
    return rows, difference, int(topic.size)
