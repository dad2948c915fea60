"""The judged strategy's estimate rows: every draw with the calibration h of its sampling
version, the control's weight tuned on the draws before it (`estimation.judges.design.tuned_terms`:
a judge that does not help on the items drawn costs little), next to the judge-only value
(`sampling.judged` stores the calibrations). `JudgedLevel.estimate_rows` calls
`judged_level_rows`; like `level_estimates`, nothing here asks for the campaign's strategy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from estimation.judges.calibration import Calibration, no_calibration
from estimation.judges.design import judged_estimate, judged_parts, tuned_terms
from estimation.metrics.spec import Metric
from estimation.sampling.arrivals import stratified_estimate
from estimation.sampling.items import system_weights
from estimation.sampling.results import Estimate
from labeling.metric import campaign_metric
from labeling.models import Campaign
from labeling.selectors import campaign_spent
from sampling.difference_terms import DifferenceTerms
from sampling.focus import focus_indices
from sampling.judge_labels import judge_for_sampling, pool_judge_classes
from sampling.level_estimates import (
    CountedDraws,
    RunLayout,
    counted_item_draws_and_gap,
    difference_row,
    estimate_row,
    not_linear_rows,
    run_pool_weights,
    run_result_finish,
)
from sampling.models import JudgeCalibration
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


@dataclass(frozen=True)
class _JudgedDraws:
    """The counted draws with what the certified estimator needs of each: the judge's class of
    every pool slot, the calibration of each sampling version, h and the human gain per draw."""

    draws: CountedDraws
    classes: np.ndarray
    tables: dict[int, Calibration]
    none: Calibration
    control: np.ndarray
    human: np.ndarray
    n_judged: int

    def parts(self, weights: np.ndarray, selected: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(Y, X) of `tuned_terms` for the target `weights` over the selected draws (default all):
        each draw's offset is the target's sum of h under the calibration of its sampling version."""
        draws = self.draws
        chosen = np.ones(draws.size, dtype=bool) if selected is None else selected
        versions = draws.version[chosen]
        offsets = {
            v: float((weights * self.tables.get(v, self.none).h(self.classes)).sum())
            for v in set(versions.tolist())
        }
        return judged_parts(
            np.array([offsets[int(v)] for v in versions]),
            weights[draws.topic[chosen], draws.slot[chosen]],
            self.human[chosen],
            self.control[chosen],
            draws.propensity[chosen],
        )

    def estimate(
        self, arrays: PoolArrays, weights: np.ndarray, spent: float
    ) -> tuple[Estimate, np.ndarray | None]:
        """The certified estimate of the target `weights`, and its tuned terms when it is one mean
        over every draw (None when it was made by strata: a run pooled after draws were made,
        each stratum from the draws that could pick it)."""
        strata = self.draws.strata(arrays, weights)
        if strata is None:
            terms = tuned_terms(*self.parts(weights))
            return judged_estimate(terms, n_judged=self.n_judged, budget_spent=spent), terms
        strata_terms = [tuned_terms(*self.parts(weights * mask, later)) for mask, later in strata]
        return stratified_estimate(strata_terms, n_judged=self.n_judged, budget_spent=spent), None


def _judged_draws(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, metric: Metric, *, prefix: bool = False
) -> _JudgedDraws:
    """The counted draws with their calibrations (`prefix`: only those before the first draw that
    does not count yet, as a verdict reads them)."""
    draws, gap = counted_item_draws_and_gap(campaign, arrays, grades)
    if prefix:
        draws = draws.before(gap)
    topic, slot = draws.topic, draws.slot
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
    for version in np.unique(draws.version):
        drawn_with = draws.version == version
        control[drawn_with] = tables.get(int(version), none).h(drawn_classes[drawn_with])
    human = metric.gain_table()[grades[topic, slot]] if topic.size else np.zeros(0)
    n_judged = int(np.unique(topic * arrays.n_slots + slot).size) if topic.size else 0
    return _JudgedDraws(draws, classes, tables, none, control, human, n_judged)


def judged_level_rows(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, spent: float, weight_bound: float | None
) -> tuple[list[dict], dict | None, int]:
    """DCG rows from the certified estimator (every draw with the h of its sampling version),
    each with the judge-only value beside it; nDCG and ERR as null with a reason."""
    metric = campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")
    judged = _judged_draws(campaign, arrays, grades, metric)
    draws, human = judged.draws, judged.human
    pool = pool_from_arrays(arrays)
    judge = judge_for_sampling(campaign)
    judge_values = judge_only_values(arrays, judged.classes, metric)
    rows: list[dict] = []
    bounds = metric.value_bounds()
    for index, name in enumerate(arrays.system_names):
        weights = system_weights(pool, metric, index)
        worth = None
        if not draws.size:
            row = estimate_row(name, metric, None, intervals={})
        else:
            estimate, terms = judged.estimate(arrays, weights, spent)
            # What the judge was worth: the draws the same design would need without the judge's
            # control variate (h = 0) for this interval's width (an effective sample size; for a
            # plain estimate only).
            plain = weights[draws.topic, draws.slot] * human / draws.propensity
            if terms is not None and terms.size > 1 and terms.var(ddof=1) > 0:
                worth = float(terms.size * plain.var(ddof=1) / terms.var(ddof=1))
            row = estimate_row(
                name,
                metric,
                estimate,
                intervals={"clt": [max(estimate.low, bounds[0]), min(estimate.high, bounds[1])]},
            )
        row["judge_only"] = judge_values[name] if judge is not None else None
        row["draws_without_judge"] = worth
        rows.append(row)
    rows += not_linear_rows(campaign, arrays, JUDGED_DESIGN)
    difference = None
    if campaign.goal == Campaign.Goal.DIFFERENCE:
        focus = focus_indices(campaign, arrays)
        if len(focus) == 2:
            difference = _judged_difference(campaign, arrays, judged, focus[0], focus[1], spent)
    return rows, difference, int(draws.size)


def judged_level_run_estimate(
    campaign: Campaign,
    arrays: PoolArrays,
    grades: np.ndarray,
    metric: Metric,
    run: RunLayout,
    result: dict[str, Any],
    weight_bound: float | None,
) -> dict[str, Any]:
    """A new run's certified estimate, made as the table's rows are: the calibrated judge's
    value of every pool document the run ranks plus the human correction of the drawn ones
    (`_JudgedDraws.estimate` with the run's weights), so that a run ranked as a pooled one gets
    that run's row. Weight on documents no stored draw could reach (outside the pool, or beyond
    every pooled run's cutoff) is left out and reported, as at item level."""
    placed = run_pool_weights(arrays, run, metric)
    judged = _judged_draws(campaign, arrays, grades, metric)
    if not judged.draws.size:
        result["warning"] = "no drawn item is judged yet"
        return result
    reachable_weights = np.where(placed.support, placed.weights, 0.0)
    estimate, _ = judged.estimate(arrays, reachable_weights, campaign_spent(campaign)[1])
    total = float(placed.run_weights.sum())
    return run_result_finish(result, estimate, placed.unreachable_mass, total, metric.value_bounds())


def judged_difference_estimate(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, a: int, b: int, spent: float = float("nan")
) -> dict:
    """The certified row of pooled system a minus pooled system b; the control's weight is tuned
    on the difference's own parts (linear in the weights)."""
    metric = campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")
    return _judged_difference(campaign, arrays, _judged_draws(campaign, arrays, grades, metric), a, b, spent)


def judged_difference_terms(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, a: int, b: int
) -> DifferenceTerms:
    """The certified difference's power-tuned terms per stratum over the prefix of draws that all
    count (`sampling.difference_terms`): each weight is fitted on earlier draws only, so these are
    the terms `judged_difference_estimate` means."""
    metric = campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")
    judged = _judged_draws(campaign, arrays, grades, metric, prefix=True)
    draws = judged.draws
    pool = pool_from_arrays(arrays)
    target = system_weights(pool, metric, a) - system_weights(pool, metric, b)
    strata = draws.strata(arrays, target) if draws.size else None
    chosen = strata or [(np.ones(target.shape, dtype=bool), np.ones(draws.size, dtype=bool))]
    terms = [tuned_terms(*judged.parts(target * mask, later)) for mask, later in chosen]
    return DifferenceTerms(terms, draws.order, draws.topic * arrays.n_slots + draws.slot)


def _judged_difference(
    campaign: Campaign, arrays: PoolArrays, judged: _JudgedDraws, a: int, b: int, spent: float
) -> dict:
    metric = campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")
    pool = pool_from_arrays(arrays)
    gap_weights = system_weights(pool, metric, a) - system_weights(pool, metric, b)
    gap = judged.estimate(arrays, gap_weights, spent)[0] if judged.draws.size else None
    return difference_row([arrays.system_names[a], arrays.system_names[b]], metric, gap)
