"""Runs that arrive in a living campaign (estimation.sampling.arrivals): the stratified top-up
estimator is unbiased and its intervals hold, over seeded campaigns in which two runs arrive one
after the other, with and without a model judge; the design and its checks."""

from __future__ import annotations

import numpy as np
import pytest

from estimation.judges.design import judged_distribution, judged_estimate, judged_parts, tuned_terms
from estimation.sampling.arrivals import stratified_estimate, stratum_shares, topup_distribution
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
