"""What a learned-DCG refit costs, counted before it runs, and the wall-time budget that stops it.

`learn_dcg` repeats its whole fit per bootstrap replicate: cross-validation fits every grid
point (the values of C; for the paper's QP with C_t chosen on its own, every pair of C and C_t)
on every fold, after the grid is widened once at an edge. The fits therefore multiply:
grid points x folds x replicates. `refit_fits` counts them from the settings alone, so that a
caller can refuse settings too costly before any fit runs, naming each factor. A fit's own cost
grows with the answers (and several-fold with monotone discounts), which no count of settings
foresees: `TimeBudget` bounds the wall time too (`learn_dcg` stops its bootstrap when it is
spent, and gives up a cross-validation that cannot finish in it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from estimation.learned_dcg.fitters import QP


def widened_size(values: int) -> int:
    """An axis of `values` values after the one widening at the chosen edge (a single value is
    at both edges: one more each side)."""
    return values + 2 if values == 1 else values + 1


def grid_points(*, method: str, c_values: int, c_tie_values: int | None) -> int:
    """Grid points cross-validation fits per fold, after the widening: C alone for the
    likelihood and for the QP with C_t = C (`c_tie_values` None), else C x C_t."""
    if c_values < 1 or (c_tie_values is not None and c_tie_values < 1):
        raise ValueError("a grid holds at least one value")
    points = widened_size(c_values)
    if method == QP and c_tie_values is not None:
        points *= widened_size(c_tie_values)
    return points


def refit_fits(*, method: str, c_values: int, c_tie_values: int | None, folds: int, bootstrap: int) -> int:
    """About how many fits one refit makes: grid points (widened) x folds x (bootstrap + 2), the
    two for the cross-validation on the answers themselves and its repeat after a widening.
    The final fit, the jackknife (at most 25 fits) and the learning curve (a few per fold) are
    left out: they do not grow with the grid and the bootstrap."""
    if folds < 1 or bootstrap < 0:
        raise ValueError("folds must be >= 1 and bootstrap >= 0")
    return grid_points(method=method, c_values=c_values, c_tie_values=c_tie_values) * folds * (bootstrap + 2)


class TimeBudgetSpent(Exception):
    """The refit's wall-time budget ran out before its cross-validation finished: no fit."""


@dataclass
class TimeBudget:
    """`seconds` of wall time from creation (None: no limit), read on an injectable clock."""

    seconds: float | None
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)

    def __post_init__(self) -> None:
        if self.seconds is not None and not (math.isfinite(self.seconds) and self.seconds > 0):
            raise ValueError(f"a time budget is a number of seconds above 0, got {self.seconds!r}")
        self.started = self.clock()

    def spent(self) -> bool:
        return self.seconds is not None and self.clock() - self.started >= self.seconds

    def check(self) -> None:
        """Raise `TimeBudgetSpent` once the budget is spent."""
        if self.spent():
            raise TimeBudgetSpent(f"the refit's time budget of {self.seconds:g} s ran out")
