"""The judged design (estimation.judges): calibration, q, the estimator's unbiasedness by seeded
simulation (with a right and a wrong calibration), interval coverage, agreement.

Synthetic pool: 300 items with human gains from a 0-3 scale (exp gain), a judge that is
lenient and noisy (its grade is the human grade plus one, then flipped at random), and target
weights a_i = DCG discounts of two systems over 30 topics of 10 items.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from estimation.judges import (
    MISSING,
    Calibration,
    agreement,
    cross_fitted_residuals,
    fit_calibration,
    grade_distributions,
    judge_classes,
    judged_distribution,
    judged_estimate,
    judged_terms,
    kendall_tau,
    no_calibration,
    two_stage_estimate,
)
from estimation.simulation.judged import JudgedReplay, replay_external, replay_internal

GAINS = np.array([0.0, 1.0, 3.0, 7.0])


def synthetic(seed: int = 0) -> tuple[JudgedReplay, np.ndarray]:
    """A 30-topic, 10-slot pool; returns the replay (difference of two systems) and the human grades."""
    rng = np.random.default_rng(seed)
    topics, slots = 30, 10
    grades = rng.choice(4, size=(topics, slots), p=[0.55, 0.25, 0.12, 0.08])
    lenient = np.minimum(grades + 1, 3)
    flipped = rng.random(grades.shape) < 0.35
    judge = np.where(flipped, rng.integers(0, 4, grades.shape), lenient)
    judge[rng.random(grades.shape) < 0.05] = MISSING
    discounts = 1.0 / np.log2(np.arange(2, slots + 2))
    a1 = np.zeros((topics, slots))
    a2 = np.zeros((topics, slots))
    for topic in range(topics):
        a1[topic, rng.permutation(slots)] = discounts / topics
        a2[topic, rng.permutation(slots)] = discounts / topics
    replay = JudgedReplay(
        target=(a1 - a2).ravel(),
        no_model_weight=(np.abs(a1) + np.abs(a2)).ravel(),
        human_gain=GAINS[grades].ravel(),
        classes=judge.ravel(),
        n_grades=4,
        n_slots=slots,
    )
    return replay, grades.ravel()


def test_it_shrinks_class_means_toward_the_pooled_mean() -> None:
    # Class 0: gains 0, 0 (n=2); class 3: gain 7 (n=1); pooled mean 7/3, k = 2.
    calibration = fit_calibration(
        np.array([0, 0, 3]), np.array([0.0, 0.0, 7.0]), n_grades=4, source="external"
    )
    pooled = 7 / 3
    assert calibration.mean_gain[0] == pytest.approx((0 + 2 * pooled) / 4)
    assert calibration.mean_gain[3] == pytest.approx((7 + 2 * pooled) / 3)
    assert calibration.mean_gain[1] == pytest.approx(pooled)  # never seen: the pooled mean
    assert calibration.h(np.array([MISSING]))[0] == pytest.approx(pooled)
    assert calibration.counts.tolist() == [2, 0, 0, 1, 0]
    assert Calibration.from_dict(calibration.as_dict()).mean_gain.tolist() == calibration.mean_gain.tolist()


def test_it_bins_a_distribution_at_its_nearest_expected_grade() -> None:
    classes = judge_classes([2, None, None], [None, [0.1, 0.2, 0.3, 0.4], None], n_grades=4)
    assert classes.tolist() == [2, 2, MISSING]  # expected grade 2.0
    with pytest.raises(ValueError, match="outside the scale"):
        judge_classes([4], n_grades=4)


def test_it_cross_fits_each_fold_on_the_other_only() -> None:
    classes = np.array([0, 0, 1, 1])
    folds = np.array([0, 1, 0, 1])
    for_fold0, _ = cross_fitted_residuals(classes, np.array([0.0, 1.0, 3.0, 7.0]), folds, n_grades=4)
    changed, _ = cross_fitted_residuals(classes, np.array([5.0, 1.0, 5.0, 7.0]), folds, n_grades=4)
    assert for_fold0.mean_gain.tolist() == changed.mean_gain.tolist()  # fold-0 gains never enter


def test_it_keeps_every_needed_item_drawable() -> None:
    weight = np.array([0.0, 1.0, 2.0, 3.0])
    # sigma 0 everywhere: the judge claims certainty; the safety share still covers every item.
    design = judged_distribution(np.array([0.0, 1.0, 2.0, 0.0]), np.zeros(4), weight)
    assert np.all(design.q[weight > 0] > 0)
    assert design.q[0] == 0
    assert design.q.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="safety_share"):
        judged_distribution(np.ones(4), np.ones(4), weight, safety_share=0.0)


@pytest.mark.parametrize("calibration_kind", ["right", "wrong", "none"])
def test_it_is_unbiased_for_any_calibration_fixed_before_the_draws(calibration_kind: str) -> None:
    replay, grades = synthetic(seed=1)
    items = np.flatnonzero(replay.classes != MISSING)
    right = fit_calibration(replay.classes[items], replay.human_gain[items], n_grades=4, source="external")
    if calibration_kind == "right":
        calibration = right
    elif calibration_kind == "wrong":
        # Reversed means and sigmas: as wrong as a calibration gets.
        calibration = Calibration(right.mean_gain[::-1] + 3, right.sd_gain[::-1], right.counts, "external")
    else:
        calibration = no_calibration(4)
    budgets = np.array([20.0, 60.0])
    outcomes = replay_external(replay, calibration, budgets, 3000, seed=7)
    for estimates, _, _, _, _ in outcomes:
        standard_error = estimates.std(ddof=1) / np.sqrt(estimates.size)
        assert abs(estimates.mean() - replay.truth) < 4 * standard_error


def test_it_is_unbiased_with_the_internal_two_stage_calibration() -> None:
    replay, _ = synthetic(seed=2)
    ((estimates, _, _, _, spent),) = replay_internal(replay, np.array([45.0]), 2000, seed=3)
    standard_error = estimates.std(ddof=1) / np.sqrt(estimates.size)
    assert abs(estimates.mean() - replay.truth) < 4 * standard_error
    assert spent.max() <= 45


def test_its_interval_covers_at_about_its_level() -> None:
    replay, _ = synthetic(seed=4)
    items = np.flatnonzero(replay.classes != MISSING)
    calibration = fit_calibration(
        replay.classes[items], replay.human_gain[items], n_grades=4, source="external"
    )
    ((estimates, lows, highs, _, _),) = replay_external(replay, calibration, np.array([80.0]), 2000, seed=5)
    covered = int(np.sum((lows <= replay.truth) & (replay.truth <= highs)))
    # A t interval on skewed terms undercovers a little at small n; refuse a clear shortfall.
    assert covered / estimates.size > 0.92
    assert binomtest(covered, estimates.size, 0.95).pvalue > 1e-4 or covered / estimates.size > 0.95


def test_a_good_calibration_beats_the_no_model_design() -> None:
    replay, _ = synthetic(seed=6)
    items = np.flatnonzero(replay.classes != MISSING)
    calibration = fit_calibration(
        replay.classes[items], replay.human_gain[items], n_grades=4, source="external"
    )
    budgets = np.array([60.0])
    ((with_judge, *_),) = replay_external(replay, calibration, budgets, 1500, seed=8)
    ((without, *_),) = replay_external(replay, no_calibration(4), budgets, 1500, seed=8)
    assert np.sqrt(np.mean((with_judge - replay.truth) ** 2)) < np.sqrt(
        np.mean((without - replay.truth) ** 2)
    )


def test_the_estimate_is_the_mean_of_its_terms_with_a_student_interval() -> None:
    terms = judged_terms(
        1.0, np.array([0.5, 0.5, -0.5]), np.array([3.0, 0.0, 1.0]), np.ones(3), np.full(3, 0.25)
    )
    # 1 + 0.5*2/0.25 = 5, 1 + 0.5*(-1)/0.25 = -1, 1 - 0.5*0/0.25 = 1
    assert terms.tolist() == [5.0, -1.0, 1.0]
    estimate = judged_estimate(terms)
    assert estimate.value == pytest.approx(5 / 3)
    assert estimate.low < estimate.value < estimate.high
    two = two_stage_estimate(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0, 2.0]))
    assert two.value == pytest.approx(2.0)
    assert two.standard_error == pytest.approx(np.sqrt(3 * 1.0) / 7)  # (n1 s1^2 + n2 s2^2) / n^2
    with pytest.raises(ValueError, match="propensities"):
        judged_terms(0.0, np.ones(1), np.ones(1), np.ones(1), np.zeros(1))


def test_it_measures_agreement_by_hand() -> None:
    # humans 0 0 1 2 3, judge 0 1 1 3 3: 3 of 5 exact; leniency (8 - 6) / 5 = 0.4.
    found = agreement([0, 0, 1, 2, 3], [0, 1, 1, 3, 3], n_grades=4)
    assert found.confusion.tolist() == [[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1]]
    assert found.exact == pytest.approx(0.6)
    assert found.leniency == pytest.approx(0.4)
    # p_o = 0.6, p_e = (2*1 + 1*2 + 1*0 + 1*2)/25 = 6/25.
    assert found.kappa == pytest.approx((0.6 - 6 / 25) / (1 - 6 / 25))
    assert agreement([0, 1, 2, 3], [0, 1, 2, 3], n_grades=4).weighted_kappa == pytest.approx(1.0)
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_it_turns_a_judge_into_a_label_model() -> None:
    # Class 0 saw grades 0, 0; class 2 saw 2; pooled (2/3, 0, 1/3); k = 2.
    rows = grade_distributions(np.array([0, 0, 2]), np.array([0, 0, 2]), n_grades=3)
    pooled = np.array([2 / 3, 0, 1 / 3])
    assert rows[0] == pytest.approx((np.array([2, 0, 0]) + 2 * pooled) / 4)
    assert rows[1] == pytest.approx(pooled)  # never seen
    assert rows[3] == pytest.approx(pooled)  # MISSING
    assert rows.sum(axis=1) == pytest.approx(np.ones(4))


def test_the_tuned_control_stays_unbiased_and_never_costs_much_over_plain_sampling() -> None:
    """Power tuning: the weight of the judge's control, fitted on the earlier draws, keeps every
    term's expectation (3,000 seeded campaigns of 60 draws), takes most of a good judge's
    variance reduction and costs at most a few percent where the judge misleads."""
    from estimation.judges.design import judged_parts, tuned_terms

    rng = np.random.default_rng(23)
    n_items, draws, campaigns = 200, 60, 3000
    target = rng.normal(size=n_items)  # a difference: weights of both signs
    gain = rng.gamma(1.0, 2.0, size=n_items)
    q = np.abs(target) + 0.2
    q /= q.sum()
    truth = float(target @ gain)
    results = {}
    for name, control in {
        "good": gain + rng.normal(scale=0.3, size=n_items),
        "constant": np.full(n_items, gain.mean()),
        "misleading": gain.max() - gain,
    }.items():
        offset = float(target @ control)
        tuned_means, plain_means, untuned_means = [], [], []
        for _ in range(campaigns):
            picked = rng.choice(n_items, size=draws, p=q)
            plain, controls = judged_parts(offset, target[picked], gain[picked], control[picked], q[picked])
            tuned_means.append(tuned_terms(plain, controls).mean())
            plain_means.append(plain.mean())
            untuned_means.append((plain - controls).mean())
        tuned, plain_, untuned = (np.array(v) for v in (tuned_means, plain_means, untuned_means))
        assert abs(tuned.mean() - truth) < 4 * tuned.std(ddof=1) / np.sqrt(campaigns), name
        results[name] = (tuned.var(), plain_.var(), untuned.var())
    for name in ("good", "constant"):  # a control that helps keeps (nearly) all of its help
        tuned, plain_, untuned = results[name]
        assert untuned < 0.6 * plain_ and tuned < 1.1 * untuned, name
    tuned, plain_, untuned = results["misleading"]
    assert untuned > 2 * plain_  # the untuned control hurts here ...
    assert tuned < 1.05 * plain_  # ... the tuned one at most 5 %
