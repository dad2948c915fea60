"""A learned-DCG refit's cost counted from its settings, and the time budget that stops it."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from estimation.learned_dcg.budget import TimeBudget, TimeBudgetSpent, grid_points, refit_fits
from estimation.learned_dcg.fit import PreferenceData, learn_dcg
from estimation.learned_dcg.lists import standard_weights
from estimation.learned_dcg.simulation import run_preferences

K, L = 3, 3


def answers(n: int = 120, seed: int = 3) -> PreferenceData:
    rng = np.random.default_rng(seed)
    lists = rng.integers(0, L, size=(12, 4, K))
    data, _ = run_preferences(lists, n, standard_weights(K, L, "exp"), rng)
    return data


def ticking() -> Callable[[], float]:
    """A clock that moves one second each time it is read."""
    counter = itertools.count()
    return lambda: float(next(counter))


def test_it_counts_grid_points_after_the_one_widening() -> None:
    assert grid_points(method="likelihood", c_values=4, c_tie_values=4) == 5  # C_t: QP only
    assert grid_points(method="qp", c_values=4, c_tie_values=None) == 5  # C_t = C: one axis
    assert grid_points(method="qp", c_values=4, c_tie_values=4) == 25
    assert grid_points(method="qp", c_values=12, c_tie_values=2) == 13 * 3
    assert grid_points(method="likelihood", c_values=1, c_tie_values=None) == 3  # both edges
    with pytest.raises(ValueError, match="at least one value"):
        grid_points(method="qp", c_values=0, c_tie_values=None)


def test_it_counts_the_fits_of_a_refit() -> None:
    # The outside test's settings: 12 values, QP, C_t on its own, 20 folds, 100 replicates.
    assert refit_fits(method="qp", c_values=12, c_tie_values=12, folds=20, bootstrap=100) == 344_760
    assert refit_fits(method="likelihood", c_values=4, c_tie_values=None, folds=5, bootstrap=100) == 2_550
    with pytest.raises(ValueError, match="folds"):
        refit_fits(method="qp", c_values=4, c_tie_values=None, folds=0, bootstrap=1)


def test_the_count_bounds_the_fits_learn_dcg_makes(monkeypatch: pytest.MonkeyPatch) -> None:
    from estimation.learned_dcg import fitters

    calls = []
    original = fitters.QPFitter.fit
    monkeypatch.setattr(
        fitters.QPFitter, "fit", lambda self, *a, **k: calls.append(1) or original(self, *a, **k)
    )
    learn_dcg(answers(), L, method="qp", c_grid=(0.1, 1.0), folds=3, bootstrap=4, curve=False, form=False)
    # The count leaves out the final fit and the jackknife (at most 25 groups of topics: 12 here).
    assert len(calls) <= refit_fits(method="qp", c_values=2, c_tie_values=2, folds=3, bootstrap=4) + 1 + 12


@pytest.mark.parametrize("seconds", [0.0, -1.0, float("inf"), float("nan")])
def test_it_refuses_a_budget_that_is_not_a_positive_number(seconds: float) -> None:
    with pytest.raises(ValueError, match="above 0"):
        TimeBudget(seconds)


def test_a_budget_spent_in_cross_validation_gives_no_fit() -> None:
    with pytest.raises(TimeBudgetSpent, match="time budget of 5 s"):
        learn_dcg(answers(), L, bootstrap=10, curve=False, form=False, time_budget=TimeBudget(5.0, ticking()))


def test_a_budget_spent_in_the_bootstrap_keeps_the_replicates_made_and_says_so() -> None:
    data = answers()
    whole = learn_dcg(data, L, bootstrap=0, curve=False, form=False, time_budget=TimeBudget(1e9, ticking()))
    assert not whole.bootstrap_stopped and whole.bootstrap_requested == 0
    # The likelihood on 2 values of C: (2 + 1) x 5 folds = 15 fits per replicate, each reading the
    # clock once; 200 reads are past the cross-validation (at most 2 x 15) and inside replicate 12.
    result = learn_dcg(
        data,
        L,
        c_grid=(1.0, 10.0),
        bootstrap=40,
        curve=False,
        form=False,
        time_budget=TimeBudget(200.0, ticking()),
    )
    assert result.bootstrap_stopped and result.bootstrap_requested == 40
    assert 0 < result.bootstrap + result.bootstrap_failed < 40
    assert f"stopped early: {result.bootstrap} of the 40 replicates" in result.interval_method
    assert "time budget of 200 s ran out" in result.interval_method
    assert np.all(np.isfinite(result.gains_low)) and result.to_json()["bootstrap_stopped"] is True
    unbounded = learn_dcg(data, L, c_grid=(1.0, 10.0), bootstrap=3, curve=False, form=False)
    assert not unbounded.bootstrap_stopped and "(3 replicates of the whole fit" in unbounded.interval_method
