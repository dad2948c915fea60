"""Small-sample query-level intervals: the repros of issue 10 (2, 6, 7) and the reliability flag."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import skew

from estimation.sampling.estimators import MIN_RELIABLE_TOPICS, query_level_estimate
from estimation.sampling.intervals import skew_t_interval, student_quantile, t_interval
from estimation.sampling.item_estimators import item_level_difference_estimate, item_level_estimate
from estimation.simulation.batch import simulate_query_level_batch


def test_it_gives_no_zero_width_interval_for_one_topic_drawn_twice() -> None:
    # Repro 2: one distinct topic drawn twice used to give SE 0 and the interval [2, 2].
    estimate = query_level_estimate(
        np.array([2.0, 2.0]), np.array([0.02, 0.02]), np.array([0.02, 0.02]), n_judged=1
    )
    assert math.isnan(estimate.standard_error)
    assert estimate.low == -math.inf and estimate.high == math.inf
    assert not estimate.reliable
    by_topics = query_level_estimate(
        np.array([2.0, 2.0]), np.array([0.02, 0.02]), np.array([0.02, 0.02]), topics=np.array([7, 7])
    )
    assert by_topics.n_judged == 1 and math.isnan(by_topics.standard_error)


def test_it_flags_intervals_below_the_reliability_threshold_and_offers_any_n_bounds() -> None:
    values = np.array([3.0, 0.0, 8.0, 1.0])
    uniform = np.full(4, 0.01)
    estimate = query_level_estimate(values, uniform, uniform, value_bounds=(0.0, 10.0), weight_bound=1.0)
    assert estimate.reliable_from == MIN_RELIABLE_TOPICS > values.size
    assert not estimate.reliable
    # Hoeffding over [0, 10] with 4 draws: 10 sqrt(ln(40) / 8) = 6.789..., cut to [0, 10].
    halfwidth = 10 * math.sqrt(math.log(40) / 8)
    assert estimate.any_n_low == pytest.approx(max(0.0, 3.0 - halfwidth))
    assert estimate.any_n_high == pytest.approx(3.0 + halfwidth)
    # From MIN_RELIABLE_TOPICS judged topics on, the interval is reliable (one fewer: not).
    for n, reliable in ((MIN_RELIABLE_TOPICS - 1, False), (MIN_RELIABLE_TOPICS, True)):
        grown = np.resize(np.append(values, 2.0), n)
        assert query_level_estimate(grown, np.full(n, 0.01), np.full(n, 0.01)).reliable is reliable


def test_it_cuts_every_interval_to_the_metric_range() -> None:
    # Repro 6: a Hoeffding interval for DCG@10 in [0, 68] was 97 wide.
    values = np.array([0.0, 1.0, 60.0, 0.5, 2.0, 0.0])
    uniform = np.full(6, 0.02)
    for kind in ("clt", "t", "skew_t", "hoeffding", "bernstein"):
        estimate = query_level_estimate(values, uniform, uniform, interval=kind, value_bounds=(0.0, 68.0))
        assert 0.0 <= estimate.low <= estimate.value <= estimate.high <= 68.0, kind
    labels, weights, q = np.array([0.0, 0.1, 1.0]), np.array([0.2, 0.1, 0.3]), np.array([0.1, 0.5, 0.4])
    for kind in ("clt", "hoeffding", "bernstein"):
        one = item_level_estimate(
            labels, weights, q, interval=kind, weight_bound=3.0, value_bounds=(0.0, 1.0)
        )
        assert 0.0 <= one.low and one.high <= 1.0
        two = item_level_difference_estimate(
            labels, weights, weights[::-1], q, interval=kind, weight_bound=3.0, value_bounds=(-0.5, 0.5)
        )
        assert -0.5 <= two.low and two.high <= 0.5


def test_it_uses_the_t_quantile_of_the_distinct_topics() -> None:
    values = np.array([0.2, 0.9, 0.4, 0.4, 0.1])
    uniform = np.full(5, 0.1)
    estimate = query_level_estimate(values, uniform, uniform, interval="t")
    se = values.std(ddof=1) / math.sqrt(5)
    assert estimate.standard_error == pytest.approx(se)
    assert estimate.high - estimate.value == pytest.approx(2.7764451 * se)
    # Five draws of four distinct topics: 3 degrees of freedom.
    repeated = query_level_estimate(values, uniform, uniform, interval="t", n_judged=4)
    assert repeated.high - repeated.value == pytest.approx(3.1824463 * se)


def test_it_skews_the_interval_towards_the_long_tail() -> None:
    # Hall (1992): right-skewed terms stretch the interval to the right; gamma = 0 gives t.
    values = np.array([0.0, 0.0, 0.1, 0.2, 0.1, 0.0, 5.0, 0.3, 0.0, 0.1])
    uniform = np.full(10, 0.01)
    estimate = query_level_estimate(values, uniform, uniform)
    assert estimate.interval == "skew_t"
    assert estimate.high - estimate.value > estimate.value - estimate.low
    se = values.std(ddof=1) / math.sqrt(10)
    gamma = skew(values) * (9 / 10) ** 1.5  # (1/n) sum e^3 / s^3 with s the ddof=1 deviation
    low, high = skew_t_interval(values.mean(), se, gamma, 10, 9)
    assert (estimate.low, estimate.high) == pytest.approx((low, high))
    assert skew_t_interval(1.0, 0.5, 0.0, 10, 9) == pytest.approx(t_interval(1.0, 0.5, 9))
    # g(T) inverted at the quantile reproduces it: g(t) = t + a t^2 + a^2 t^3 / 3 + b.
    a, b, c = gamma / (3 * math.sqrt(10)), gamma / (6 * math.sqrt(10)), student_quantile(0.95, 9)
    t_low = (values.mean() - low) / se
    assert t_low + a * t_low**2 + a**2 * t_low**3 / 3 + b == pytest.approx(c)


def test_it_removes_the_ratio_bias_of_a_small_difference_with_the_plain_estimator() -> None:
    # Repro 7: the self-normalised estimate of a small difference carries an O(1/n) ratio bias
    # of the order of the truth; with p known the plain estimator has none at any n.
    rng = np.random.default_rng(7)
    m = 60
    base = rng.gamma(0.6, 0.3, m)
    delta = np.where(np.arange(m) < 12, 0.15, -0.02) + rng.normal(0, 0.005, m)
    values = np.stack([base + delta, base], axis=1)
    p = np.full(m, 1 / m)
    q = (np.arange(m) < 12) * 0.6 / 12 + (np.arange(m) >= 12) * 0.4 / 48  # active: oversample the big deltas
    truth = p @ (values[:, 0] - values[:, 1])
    column = (values[:, 0] - values[:, 1])[:, None]
    for self_normalised, biased in ((True, True), (False, False)):
        batch = simulate_query_level_batch(
            column,
            np.ones(m),
            q,
            p,
            None,
            20000,
            np.random.default_rng(70),
            max_draws=5,
            self_normalised=self_normalised,
        )
        mean, error = batch.estimates[:, 0].mean(), batch.estimates[:, 0].std() / math.sqrt(20000)
        assert (abs(mean - truth) > 5 * error) == biased, (self_normalised, mean, truth, error)


def test_a_scaled_estimate_is_the_estimate_of_the_scaled_quantity() -> None:
    # Repro 5's rule: topics no run ranks count 0, so the mean over all topics is the ranked
    # topics' mean times their share; scaling the values before estimating gives the same.
    rng = np.random.default_rng(5)
    values = rng.gamma(0.5, 4.0, size=12)
    propensities = np.full(12, 1 / 30)
    weights = np.full(12, 1 / 30)
    share = 30 / 31
    kwargs = {"topics": np.arange(12), "value_bounds": (0.0, 20.0), "weight_bound": 1.0}
    scaled = query_level_estimate(values, propensities, weights, **kwargs).scaled(share)
    direct = query_level_estimate(
        values * share, propensities, weights, **{**kwargs, "value_bounds": (0.0, 20.0 * share)}
    )
    for field in ("value", "standard_error", "low", "high", "any_n_low", "any_n_high"):
        assert getattr(scaled, field) == pytest.approx(getattr(direct, field), rel=1e-12)
    assert (scaled.reliable, scaled.n_judged) == (direct.reliable, direct.n_judged)
    with pytest.raises(ValueError, match="factor must be > 0"):
        direct.scaled(0.0)
