"""Release verdicts read after every label (estimation.sampling.sequences,
estimation.simulation.verdicts): the anytime sequence keeps wrong verdicts at or under 5 % where
a naive peek at the fixed interval does not, on seeded terms and on real runs made equal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t as student_t

from estimation.formats.trec import read_qrels, read_run
from estimation.metrics.spec import Metric
from estimation.metrics.values import summarize_run
from estimation.sampling.arrivals import stratified_estimate
from estimation.sampling.sequences import (
    MIN_ANYTIME_DRAWS,
    anytime_interval,
    fixed_interval,
    mixture_multiplier,
    verdict,
)
from estimation.simulation.arrivals import prepare_arrival_replay
from estimation.simulation.verdicts import equal_twin, prefix_estimates, replay_verdicts


def test_the_sequence_is_wider_than_the_fixed_interval_and_narrowest_near_its_target() -> None:
    for draws in (10, 25, 50, 200, 1000):
        fixed = fixed_interval(0.3, 0.1, draws)
        anytime = anytime_interval(0.3, 0.1, draws, 50)
        assert anytime.low < fixed.low and anytime.high > fixed.high
    # Width in units of sigma / sqrt(t): smallest near t_opt among these.
    widths = {t: mixture_multiplier(t, 50) / np.sqrt(t) * np.sqrt(50) for t in (5, 50, 500)}
    assert widths[50] < widths[5] and mixture_multiplier(50, 50) < mixture_multiplier(500, 50)
    assert anytime_interval(0.3, 0.1, MIN_ANYTIME_DRAWS - 1, 50).low == -np.inf
    assert [verdict(0.1, 0.4), verdict(-0.4, -0.1), verdict(-0.1, 0.1)] == ["better", "worse", "not_settled"]
    with pytest.raises(ValueError, match="t_opt > 0"):
        mixture_multiplier(10, 0)


def test_prefix_estimates_are_the_stratified_estimate_after_each_draw() -> None:
    rng = np.random.default_rng(2)
    old, new = rng.normal(size=140), rng.exponential(size=40)
    value, error = prefix_estimates(old, new, 100)
    for k in (2, 7, 40):
        estimate = stratified_estimate([old[: 100 + k], new[:k]])
        assert value[k - 1] == pytest.approx(estimate.value)
        assert error[k - 1] == pytest.approx(estimate.standard_error)
    assert np.isnan(error[0])


def test_checked_after_every_draw_the_sequence_holds_and_a_peek_does_not() -> None:
    """Importance-sampling-like terms (a third zero, the rest skewed), mean 0, checked at every
    draw from the burn-in to 200: the share of runs whose interval ever excludes 0."""
    rng = np.random.default_rng(7)
    runs, draws = 2000, 200
    terms = np.where(rng.random((runs, draws)) < 1 / 3, 0.0, rng.gamma(2.0, 1.5, (runs, draws))) - 2.0
    count = np.arange(1, draws + 1)
    mean = np.cumsum(terms, axis=1) / count
    spread = np.sqrt((np.cumsum(terms**2, axis=1) - count * mean**2) / np.maximum(count - 1, 1))
    se = spread / np.sqrt(count)
    # Each rule's half-width after every draw, in standard errors; read from its first look on.
    anytime = np.array([mixture_multiplier(t, draws) for t in count])
    peek = student_t.ppf(0.975, np.maximum(count - 1, 1))
    looks = {"anytime": count >= MIN_ANYTIME_DRAWS, "peek": count >= 2}
    wrong = {
        rule: int(((np.abs(mean) > half * se) & looks[rule]).any(axis=1).sum())
        for rule, half in (("anytime", anytime), ("peek", peek))
    }
    # The functions the app reads agree with the arrays above.
    t = draws // 2
    assert anytime_interval(mean[0, t - 1], se[0, t - 1], t, draws).high == pytest.approx(
        mean[0, t - 1] + anytime[t - 1] * se[0, t - 1]
    )
    assert fixed_interval(mean[0, t - 1], se[0, t - 1], t).high == pytest.approx(
        mean[0, t - 1] + peek[t - 1] * se[0, t - 1]
    )
    assert wrong["anytime"] / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs), wrong  # 5 % + 3 MC se
    assert wrong["peek"] / runs >= 0.15, wrong


@pytest.mark.slow
def test_equal_runs_get_few_wrong_verdicts_on_real_data(shared_data: Path) -> None:
    robust = shared_data / "robust03"
    qrels = read_qrels(robust / "qrels.txt")
    runs = [read_run(path) for path in sorted((robust / "runs").iterdir())]
    metric = Metric.parse("DCG@10", y_max=2)
    pooled = runs[:8]
    champion = max(range(8), key=lambda index: summarize_run(qrels, pooled[index], metric).mean)
    twin = equal_twin(qrels, pooled[champion], pooled, 10, seed=4)
    replay = prepare_arrival_replay(qrels, pooled, twin, champion, metric, "leaderboard")
    assert replay.truth == pytest.approx(0.0, abs=1e-12) and replay.new.sum() > 100
    rows = {row.rule: row for row in replay_verdicts(replay, "items", 100, 40, 300, seed=11)}
    anytime, peek, fixed = rows["anytime"], rows["peek"], rows["fixed"]
    # 300 campaigns: a true rate of 5 % reads at most about 8.5 % (3 standard errors).
    assert anytime.better + anytime.worse <= 0.085, anytime
    assert fixed.better + fixed.worse <= 0.085, fixed
    assert peek.better + peek.worse >= 2 * (anytime.better + anytime.worse) + 0.05, (peek, anytime)
