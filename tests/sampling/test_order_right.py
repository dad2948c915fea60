"""P(order right) is read from the interval the table shows: above 0.975 exactly when the 95 %
interval excludes 0, whatever made the interval wider than 1.96 standard errors."""

from __future__ import annotations

import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from sampling.level_estimates import order_right


@pytest.mark.parametrize("value", [-1.381, -0.3, 0.2, 1.5])
def test_it_agrees_with_a_student_t_interval_beside_it(value: float) -> None:
    se, df = 0.6, 4
    half = float(student_t.ppf(0.975, df)) * se
    row = {"value": value, "se": se, "low": value - half, "high": value + half, "reliable": True}
    p = order_right(row)
    assert p is not None
    excludes_zero = row["low"] > 0 or row["high"] < 0
    assert (p > 0.975) == excludes_zero, (p, row)
    # The normal reading of the standard error alone would claim more than the interval shows.
    assert p < norm.cdf(abs(value) / se)


def test_it_reads_the_side_towards_zero_of_a_cut_interval_and_nothing_without_one() -> None:
    # An interval cut at the metric's range on the far side: the side towards 0 decides.
    assert order_right({"value": 2.0, "se": 1.0, "low": 0.04, "high": 3.0, "reliable": True}) > 0.975
    assert order_right({"value": 2.0, "se": 1.0, "low": -0.1, "high": 3.0, "reliable": True}) < 0.975
    assert order_right({"value": 2.0, "se": 1.0, "low": -5.0, "high": 9.0, "reliable": False}) is None
    assert order_right({"value": None, "se": None, "low": None, "high": None}) is None
    assert order_right({"value": 0.5, "se": 0.0, "low": 0.5, "high": 0.5, "reliable": True}) == 1.0
