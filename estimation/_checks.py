"""Input validation shared by the public functions of the numeric core.

Every public function validates before it computes, so that bad input fails with a
`ValueError` naming the problem instead of propagating a silent NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PROBABILITY_TOLERANCE = 1e-6


def check_probability_rows(
    theta: np.ndarray, *, name: str = "theta", used: np.ndarray | None = None
) -> np.ndarray:
    """Return `theta` as float array after checking that each used row is a distribution."""
    theta = np.asarray(theta, dtype=float)
    if theta.ndim < 1 or theta.shape[-1] < 2:
        raise ValueError(
            f"{name}: the last axis must hold at least two grade probabilities, got shape {theta.shape}"
        )
    rows = theta if used is None else theta[np.asarray(used, dtype=bool)]
    if not np.all(np.isfinite(rows)):
        raise ValueError(f"{name}: probabilities must be finite")
    if np.any(rows < -PROBABILITY_TOLERANCE):
        raise ValueError(f"{name}: probabilities must be non-negative")
    sums = rows.sum(axis=-1)
    bad = np.abs(sums - 1.0) > PROBABILITY_TOLERANCE
    if np.any(bad):
        first = np.argwhere(bad)[0]
        raise ValueError(
            f"{name}: probability vector at index {tuple(int(i) for i in first)} sums to "
            f"{float(sums[tuple(first)]):.6g}, not 1"
        )
    return theta


def check_costs(costs: np.ndarray, *, name: str = "costs") -> np.ndarray:
    """Return `costs` as float array after checking they are finite and non-negative."""
    costs = np.asarray(costs, dtype=float)
    if not np.all(np.isfinite(costs)):
        raise ValueError(f"{name}: costs must be finite")
    if np.any(costs < 0):
        raise ValueError(f"{name}: costs must be non-negative, found {float(costs.min()):.6g}")
    return costs


def check_budget(budget: float) -> float:
    """A budget must be a positive finite number."""
    budget = float(budget)
    if not np.isfinite(budget) or budget <= 0:
        raise ValueError(f"budget must be > 0, got {budget!r}")
    return budget


def check_weights(weights: np.ndarray, *, name: str = "query weights") -> np.ndarray:
    """Query weights p(x): non-negative, finite, summing to a positive total."""
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 1 or weights.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array, got shape {weights.shape}")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(f"{name}: weights must be finite and non-negative")
    if weights.sum() <= 0:
        raise ValueError(f"{name}: weights must not all be zero")
    return weights


def check_mix(mix: float) -> float:
    """The defensive mixture weight must lie in [0, 1]."""
    mix = float(mix)
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"mixture weight must lie in [0, 1], got {mix!r}")
    return mix


def check_systems(n_systems: int, systems: Sequence[int] | None) -> tuple[int, ...]:
    """System indices into a pool's rankings: in range, no repeats; ``None`` means all."""
    if systems is None:
        return tuple(range(n_systems))
    chosen = tuple(int(s) for s in systems)
    if not chosen:
        raise ValueError("choose at least one system")
    bad = [s for s in chosen if not 0 <= s < n_systems]
    if bad:
        raise ValueError(f"system index {bad[0]} out of range: the pool has {n_systems} systems")
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"a system is listed twice in {chosen}")
    return chosen


def check_goal_arity(goal: str, n_systems: int, required: dict[str, tuple[int, int | None]]) -> None:
    """A goal needs a number of systems in ``required[goal] = (at least, at most or None)``."""
    if goal not in required:
        raise ValueError(f"unknown goal {goal!r}; expected one of {sorted(required)}")
    low, high = required[goal]
    if n_systems < low or (high is not None and n_systems > high):
        wanted = f"exactly {low}" if low == high else f"at least {low}"
        raise ValueError(f"goal {goal!r} needs {wanted} system(s), got {n_systems}")
