"""Runs that arrive in a living campaign (estimation.sampling.arrivals): the stratified top-up
estimator is unbiased and its intervals hold, over seeded campaigns in which two runs arrive one
after the other, with and without a model judge; the design and its checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import t as student_t

from estimation.judges.design import judged_distribution, judged_estimate, judged_parts, tuned_terms
from estimation.sampling.arrivals import (
    stratified_estimate,
    stratum_shares,
    topup_distribution,
    topup_for_width,
    topup_variance,
)
from estimation.sampling.budget_loop import draw_units


def test_one_stratum_is_the_judged_estimate() -> None:
    terms = np.random.default_rng(3).normal(2.0, 1.5, size=40)
    stratified = stratified_estimate([terms])
    plain = judged_estimate(terms)
    assert stratified.value == pytest.approx(plain.value)
    assert stratified.standard_error == pytest.approx(plain.standard_error)
    assert (stratified.low, stratified.high) == pytest.approx((plain.low, plain.high))


def test_the_shortest_stratum_sets_the_degrees_of_freedom_and_an_empty_one_no_value() -> None:
    rng = np.random.default_rng(4)
    old, new = rng.normal(size=50), rng.normal(size=5)
    estimate = stratified_estimate([old, new])
    assert estimate.value == pytest.approx(old.mean() + new.mean())
    wide = stratified_estimate([old, new[:2]])
    assert wide.high - wide.low > estimate.high - estimate.low  # t with 1 df
    nothing = stratified_estimate([old, new[:0]])
    assert np.isnan(nothing.value) and (nothing.low, nothing.high) == (-np.inf, np.inf)
    # An empty stratum between two others (an arrival not yet drawn, a later one drawn) too.
    middle = stratified_estimate([old, new[:0], new[:3]])
    assert np.isnan(middle.value) and (middle.low, middle.high) == (-np.inf, np.inf)
    with pytest.raises(ValueError, match="more draws than an earlier one"):
        stratified_estimate([new, old])


def test_shares_weigh_each_stratum_by_the_draws_it_already_has() -> None:
    strata = np.array([0, 0, 1, 2, -1])
    shares = stratum_shares(strata, [90, 40], 10)
    assert shares == pytest.approx([0.1, 0.1, 0.2, 1.0, 0.0])
    with pytest.raises(ValueError, match="must not increase"):
        stratum_shares(strata, [40, 90], 10)
    with pytest.raises(ValueError, match="strata run from 0 to 1"):
        stratum_shares(strata, [90], 10)


def test_the_design_keeps_the_floor_on_every_ranked_unit() -> None:
    importance = np.array([0.0, 1.0, 0.5, 0.0])
    weight = np.array([1.0, 1.0, 1.0, 0.0])  # the last unit no run ranks
    q = topup_distribution(importance, np.ones(4), weight, np.array([0.1, 0.1, 1.0, 0.0])).q
    assert q.sum() == pytest.approx(1.0) and np.all(q[:3] > 0) and q[3] == 0
    assert q[2] > q[1]  # the new item outweighs an old one twice as important


# A synthetic campaign: 300 units in three strata (the first pool, then two runs that arrive),
# a signed target (an arrival minus its reference), integer gains, and a judge whose class is
# the gain plus noise.
UNITS = np.arange(300)
STRATUM = np.repeat([0, 1, 2], [200, 60, 40])


def _campaign(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    gain = rng.choice([0.0, 1.0, 3.0, 7.0], size=UNITS.size, p=[0.5, 0.25, 0.15, 0.1])
    target = rng.normal(0.0, 1.0, size=UNITS.size) / UNITS.size
    judge_class = np.clip(np.round(np.log2(gain + 1) + rng.normal(0, 0.7, size=UNITS.size)), 0, 3).astype(int)
    return gain, target, judge_class


def _class_means(
    judge_class: np.ndarray, gain: np.ndarray, seen: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """h and sigma per unit from the labelled units' class means (fixed before the next phase)."""
    h = np.zeros(4)
    s = np.ones(4)
    for c in range(4):
        members = seen & (judge_class == c)
        if members.sum() >= 2:
            h[c], s[c] = gain[members].mean(), max(gain[members].std(), 0.5)
    return h[judge_class], s[judge_class]


def _replay(
    seed: int, with_judge: bool, phases: tuple[int, ...] = (60, 15, 10)
) -> tuple[float, float, float, float]:
    """Phase j draws `phases[j]` units over strata 0..j (the first from a plain |a| design, each
    top-up from `topup_distribution`); returns (estimate, low, high, truth)."""
    gain, target, judge_class = _campaign(1)  # one fixed campaign: the truth is its own
    rng = np.random.default_rng(seed)
    seen = np.zeros(UNITS.size, dtype=bool)
    drawn: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (units, q at the draw, h of every unit)
    for phase, count in enumerate(phases):
        reachable = STRATUM <= phase
        h, sigma = (
            _class_means(judge_class, gain, seen)
            if with_judge
            else (np.zeros(UNITS.size), np.ones(UNITS.size))
        )
        if phase == 0:
            q = judged_distribution(np.abs(target) * reachable, np.ones(UNITS.size), reachable * 1.0).q
        else:
            made = [sum(phases[j:phase]) for j in range(phase)]
            shares = stratum_shares(np.where(reachable, STRATUM, -1), made, count)
            q = topup_distribution(np.abs(target) * reachable, sigma, reachable * 1.0, shares).q
        units = draw_units(q, rng.random(count))
        seen[units] = True
        drawn.append((units, q[units], h))
    terms = []
    for stratum in range(len(phases)):
        inside = target * (STRATUM == stratum)
        plain, control = zip(
            *(
                judged_parts(float(inside @ h), inside[units], gain[units], h[units], q)
                for units, q, h in drawn[stratum:]
            ),
            strict=True,
        )
        terms.append(tuned_terms(np.concatenate(plain), np.concatenate(control)))
    estimate = stratified_estimate(terms)
    return estimate.value, estimate.low, estimate.high, float(target @ gain)


@pytest.mark.parametrize("with_judge", [False, True], ids=["no judge", "judge"])
def test_two_arrivals_in_a_row_stay_unbiased_and_their_intervals_hold(with_judge: bool) -> None:
    results = np.array([_replay(seed, with_judge) for seed in range(1500)])
    estimates, lows, highs, truth = results.T
    bias_se = estimates.std(ddof=1) / np.sqrt(estimates.size)
    assert abs(estimates.mean() - truth[0]) < 4 * bias_se
    coverage = np.mean((lows <= truth) & (truth <= highs))
    assert 0.91 <= coverage <= 0.985, coverage


def test_the_stored_draws_alone_miss_the_new_strata() -> None:
    """Today's reuse: only the first stratum's draws, so the arrivals' part of the target is lost."""
    gain, target, _ = _campaign(1)
    missing = float((target * (STRATUM > 0)) @ gain)
    q = judged_distribution(np.abs(target) * (STRATUM == 0), np.ones(UNITS.size), (STRATUM == 0) * 1.0).q
    rng = np.random.default_rng(0)
    values = []
    for _ in range(1500):
        units = draw_units(q, rng.random(60))
        values.append(stratified_estimate([target[units] * gain[units] / q[units]]).value)
    assert np.mean(values) - float(target @ gain) == pytest.approx(
        -missing, abs=4 * np.std(values) / np.sqrt(1500)
    )
    assert abs(missing) > 8 * np.std(values) / np.sqrt(1500)  # the seeds above could not hide it


def test_the_predicted_topup_variance_matches_replayed_campaigns() -> None:
    rng = np.random.default_rng(11)
    units = 60
    new = np.arange(units) >= 45
    target = np.where(rng.random(units) < 0.7, rng.normal(0.0, 1.0, units), 0.0)
    target[new] = rng.uniform(0.2, 1.0, new.sum())
    gains = rng.choice([0.0, 1.0, 3.0], size=units, p=[0.5, 0.3, 0.2])
    stored_q = np.where(new, 0.0, 1.0) / (~new).sum()
    floor = np.ones(units)
    n0, n1 = 40, 15
    q = topup_distribution(np.abs(target), np.ones(units), floor, np.where(new, 1.0, n1 / (n0 + n1))).q
    old_terms_moment = float(np.sum(np.where(new, 0.0, target**2 * gains**2) / np.where(new, 1.0, stored_q)))
    stored_variance = (old_terms_moment - float((target * gains)[~new].sum()) ** 2) / n0
    predicted = topup_variance(target, gains, gains**2, new, q, n1, n0, stored_variance)
    estimates = []
    for repetition in range(4000):
        draws_rng = np.random.default_rng([5, repetition])
        stored = draws_rng.choice(units, size=n0, p=stored_q)
        topup = draws_rng.choice(units, size=n1, p=q)
        old = np.concatenate(
            [
                np.where(~new[stored], target[stored] * gains[stored] / stored_q[stored].clip(1e-300), 0.0),
                np.where(~new[topup], target[topup] * gains[topup] / q[topup], 0.0),
            ]
        )
        fresh = np.where(new[topup], target[topup] * gains[topup] / q[topup], 0.0)
        estimates.append(stratified_estimate([old, fresh]).value)
    truth = float(np.sum(target * gains))
    assert np.mean(estimates) == pytest.approx(truth, abs=4 * np.std(estimates) / np.sqrt(len(estimates)))
    # The variance of 4,000 replays is known to about 2 %; the prediction is exact for fixed labels.
    assert predicted == pytest.approx(np.var(estimates), rel=0.08)


def test_the_planned_topup_is_the_smallest_that_reaches_the_width() -> None:
    def variance_of(n1: int) -> float:
        return 0.5 + 40.0 / n1

    draws, width = topup_for_width(3.0, variance_of, max_draws=5000)
    assert width <= 3.0
    _, wider = topup_for_width(1e9, variance_of, max_draws=5000)  # anything reaches a huge width
    assert wider > 0
    before = 2 * student_t.ppf(0.975, draws - 2) * np.sqrt(variance_of(draws - 1))
    assert before > 3.0, "one draw fewer misses the width"
    # The stored part alone is wider than the target: the top-up stops at the cap and says so.
    capped, capped_width = topup_for_width(2 * 1.96 * np.sqrt(0.5) * 0.9, variance_of, max_draws=300)
    assert capped == 300 and capped_width > 2 * 1.96 * np.sqrt(0.5) * 0.9
    with pytest.raises(ValueError, match="positive number"):
        topup_for_width(0.0, variance_of, max_draws=10)
