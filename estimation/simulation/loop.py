"""The budgeted sampling loop (Sawade et al. 2013, Algorithm 1) run against an oracle.

One loop serves both sampling units: queries (query level) and (query, item) pairs (item
level, Schnabel et al. 2016). It is what a labelling campaign does, with the true labels
standing in for the assessors, so tests and benchmarks can check the estimators.

The loop stops at the first draw whose new cost would exceed the budget (that draw is not
taken; repeats are free), when every drawable unit is labelled, or after ``max_draws``; the
exact rule is in `estimation.sampling.budget_loop`. The batch paths of `estimation.simulation.batch`
reproduce it draw for draw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from estimation._checks import check_costs
from estimation.sampling.budget_loop import (
    AdaptiveDistribution,
    DistributionLike,
    LoopState,
    StopReason,
    budget_loop,
    checked_distribution,
)
from estimation.sampling.estimators import query_level_estimate
from estimation.sampling.intervals import IntervalKind, check_confidence
from estimation.sampling.item_estimators import item_level_estimate, item_level_weight_bound
from estimation.sampling.results import Estimate

__all__ = [
    "ItemSimulationResult",
    "LoopState",
    "SimulationResult",
    "simulate_item_level",
    "simulate_query_level",
]


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """One run of the query-level budget loop.

    Attributes
    ----------
    estimate : Estimate
        `query_level_estimate` over the draws (value nan if no draw was affordable).
    draws : ndarray of int, shape (n_draws,)
        The drawn query indices, in order, repeats included.
    propensities : ndarray, shape (n_draws,)
        ``q_j(x_j)`` of each draw, as recorded at the time of the draw. To estimate another
        quantity from the same draws (e.g. each system of a comparison), call
        ``query_level_estimate(other_values[draws], propensities, query_weight[draws])``.
    values : ndarray, shape (n_draws,)
        The labels the oracle returned.
    n_judged : int
        Distinct queries labelled.
    spent : float
        Cost of the labelled queries, <= budget.
    stop_reason : str
        ``"budget"``, ``"pool_exhausted"`` or ``"max_draws"`` (see the module docstring).
    """

    estimate: Estimate
    draws: np.ndarray
    propensities: np.ndarray
    values: np.ndarray
    n_judged: int
    spent: float
    stop_reason: StopReason


@dataclass(frozen=True, eq=False)
class ItemSimulationResult:
    """One run of the item-level loop.

    Attributes
    ----------
    estimates : tuple of Estimate
        One per system (the order of ``target_weights``).
    draws : ndarray of int, shape (n_draws, 2)
        (query, slot) of each draw, repeats included.
    propensities : ndarray, shape (n_draws,)
        ``Q(x_j, z_j)``.
    labels : ndarray, shape (n_draws,)
        ``u_j``.
    weight_bounds : ndarray, shape (S,)
        ``max P_S / Q`` per system, used by Hoeffding and Bernstein intervals.
    n_judged : int
        Distinct pairs labelled.
    spent : float
        Cost of the labelled pairs (nan without item costs).
    stop_reason : str
    """

    estimates: tuple[Estimate, ...]
    draws: np.ndarray
    propensities: np.ndarray
    labels: np.ndarray
    weight_bounds: np.ndarray
    n_judged: int
    spent: float
    stop_reason: StopReason


def simulate_query_level(
    true_values: np.ndarray | Callable[[int], float],
    query_cost: np.ndarray,
    distribution: DistributionLike | AdaptiveDistribution,
    query_weight: np.ndarray,
    budget: float | None,
    rng: np.random.Generator,
    *,
    max_draws: int | None = None,
    confidence: float = 0.95,
    self_normalised: bool = True,
) -> SimulationResult:
    """Run Sawade et al.'s Algorithm 1 once: draw queries, label them, estimate.

    Parameters
    ----------
    true_values : ndarray, shape (m,), or callable
        The oracle: ``L(x)`` (or ``delta(x)``) per query, or ``oracle(query_index) -> float``,
        called once per distinct query (a repeat reuses the label).
    query_cost : ndarray, shape (m,)
        ``lambda(x) >= 0``; a topic with nothing to label costs 0 and is labelled for free
        (its metric is known: 0 for every run that does not rank it).
    distribution : ndarray (m,), SamplingDistribution, or callable
        Fixed ``q`` (``SamplingDistribution.q`` is used), or ``distribution(state) -> q`` for
        adaptive sampling, called before every draw with a `LoopState`. Each draw records
        the probability it was drawn with; earlier propensities are never recomputed.
    query_weight : ndarray, shape (m,)
        ``p(x)``; must sum to 1 for ``self_normalised=False``.
    budget : float or None
        Labelling budget in cost units; None for no budget (then ``max_draws`` is required).
    rng : numpy.random.Generator
        One uniform variate is consumed per draw (inverse-CDF sampling), so a seeded run is
        reproduced by `estimation.simulation.batch.simulate_query_level_batch` with one
        repetition.
    max_draws : int, optional
        Upper limit on the number of draws.
    confidence : float
        Level of the CLT interval.
    self_normalised : bool
        Passed to `query_level_estimate`.

    Returns
    -------
    SimulationResult
    """
    query_cost = check_costs(query_cost, name="query costs")
    if query_cost.ndim != 1:
        raise ValueError(f"query_cost must have shape (m,), got {query_cost.shape}")
    n_queries = query_cost.size
    query_weight = _check_query_weight(query_weight, n_queries)
    oracle = _query_oracle(true_values, n_queries)
    confidence = check_confidence(confidence)
    run = budget_loop(
        n_units=n_queries,
        unit_cost=query_cost,
        distribution=distribution,
        oracle=oracle,
        budget=budget,
        max_draws=max_draws,
        rng=rng,
    )
    if run.draws.size == 0:
        estimate = _empty_estimate(confidence, "clt", run.spent)
    else:
        estimate = query_level_estimate(
            run.values,
            run.propensities,
            query_weight[run.draws],
            confidence=confidence,
            self_normalised=self_normalised,
            n_judged=run.n_judged,
            budget_spent=run.spent,
        )
    return SimulationResult(
        estimate=estimate,
        draws=run.draws,
        propensities=run.propensities,
        values=run.values,
        n_judged=run.n_judged,
        spent=run.spent,
        stop_reason=run.stop_reason,
    )


def simulate_item_level(
    true_labels: np.ndarray,
    distribution: DistributionLike,
    target_weights: np.ndarray,
    rng: np.random.Generator,
    *,
    n_draws: int | None = None,
    budget: float | None = None,
    item_cost: np.ndarray | None = None,
    interval: IntervalKind = "clt",
    confidence: float = 0.95,
) -> ItemSimulationResult:
    """Draw (query, item) pairs from a fixed ``Q``, label them, estimate each system.

    Schnabel et al. (2016): pairs are drawn with replacement from ``Q``; every system's
    estimate ``(1/n) sum u_j P_S(x_j, z_j) / Q(x_j, z_j)`` uses the same draws.

    Parameters
    ----------
    true_labels : ndarray, shape (m, n)
        ``u(x, z)`` in [0, 1] (the oracle).
    distribution : ndarray (m, n) or SamplingDistribution
        ``Q`` over pairs, summing to 1.
    target_weights : ndarray, shape (S, m, n)
        ``P(x, z; S) = p(x) lambda_S(x, z)`` per system (`estimation.sampling.items.system_weights`).
    rng : numpy.random.Generator
    n_draws : int, optional
        Number of draws (without a budget: exactly this many; with one: at most).
    budget : float, optional
        Budget in cost units; needs ``item_cost``. At least one of ``n_draws`` and ``budget``.
    item_cost : ndarray, shape (m, n), optional
        ``c(z) >= 0`` per pair; a pair drawn again costs nothing.
    interval : {"clt", "hoeffding", "bernstein"}
        Interval kind for every system's estimate; the bounds ``max P_S / Q`` come from the
        pool before sampling.
    confidence : float

    Returns
    -------
    ItemSimulationResult
        For a difference of two systems from the same draws call
        ``item_level_difference_estimate(result.labels, P_a[x, z], P_b[x, z], result.propensities)``
        with ``x, z = result.draws.T``.
    """
    true_labels, q_pairs, target_weights = _check_item_inputs(true_labels, distribution, target_weights)
    n_queries, n_slots = true_labels.shape
    flat_cost = _item_cost(item_cost, budget, (n_queries, n_slots))
    flat_labels = true_labels.ravel()
    confidence = check_confidence(confidence)
    run = budget_loop(
        n_units=flat_labels.size,
        unit_cost=flat_cost,
        distribution=q_pairs.ravel(),
        oracle=lambda unit: float(flat_labels[unit]),
        budget=budget,
        max_draws=n_draws,
        rng=rng,
    )
    bounds = np.array([item_level_weight_bound(weights, q_pairs) for weights in target_weights])
    spent = run.spent if budget is not None or item_cost is not None else float("nan")
    estimates = []
    for weights, bound in zip(target_weights, bounds, strict=True):
        if run.draws.size == 0:
            estimates.append(_empty_estimate(confidence, interval, spent))
            continue
        estimates.append(
            item_level_estimate(
                run.values,
                weights.ravel()[run.draws],
                run.propensities,
                confidence=confidence,
                interval=interval,
                weight_bound=bound,
                n_judged=run.n_judged,
                budget_spent=spent,
            )
        )
    pairs = np.stack(np.divmod(run.draws, n_slots), axis=1) if run.draws.size else np.zeros((0, 2), int)
    return ItemSimulationResult(
        estimates=tuple(estimates),
        draws=pairs,
        propensities=run.propensities,
        labels=run.values,
        weight_bounds=bounds,
        n_judged=run.n_judged,
        spent=spent,
        stop_reason=run.stop_reason,
    )


def _check_query_weight(query_weight: np.ndarray, n_queries: int) -> np.ndarray:
    query_weight = np.asarray(query_weight, dtype=float)
    if query_weight.shape != (n_queries,):
        raise ValueError(f"query_weight must have shape ({n_queries},), got {query_weight.shape}")
    if not np.all(np.isfinite(query_weight)) or np.any(query_weight < 0):
        raise ValueError("query_weight must be finite and >= 0")
    return query_weight


def _query_oracle(true_values: np.ndarray | Callable[[int], float], n_queries: int) -> Callable[[int], float]:
    if callable(true_values):
        return true_values
    values = np.asarray(true_values, dtype=float)
    if values.shape != (n_queries,):
        raise ValueError(f"true_values must have shape ({n_queries},), got {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("true_values must be finite")
    return lambda query: float(values[query])


def _check_item_inputs(
    true_labels: np.ndarray, distribution: DistributionLike, target_weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    true_labels = np.asarray(true_labels, dtype=float)
    if true_labels.ndim != 2:
        raise ValueError(f"true_labels must have shape (m, n), got {true_labels.shape}")
    if not np.all(np.isfinite(true_labels)) or np.any(true_labels < 0) or np.any(true_labels > 1):
        raise ValueError("true_labels must lie in [0, 1]")
    q_pairs = checked_distribution(distribution, true_labels.size).reshape(true_labels.shape)
    target_weights = np.asarray(target_weights, dtype=float)
    if target_weights.ndim == 2:
        target_weights = target_weights[None]
    if target_weights.ndim != 3 or target_weights.shape[1:] != true_labels.shape:
        raise ValueError(
            f"target_weights must have shape (S, {true_labels.shape[0]}, {true_labels.shape[1]})"
        )
    if not np.all(np.isfinite(target_weights)) or np.any(target_weights < 0):
        raise ValueError("target_weights must be finite and >= 0")
    return true_labels, q_pairs, target_weights


def _item_cost(item_cost: np.ndarray | None, budget: float | None, shape: tuple[int, int]) -> np.ndarray:
    if item_cost is None:
        if budget is not None:
            raise ValueError("a budget needs item_cost (the cost of labelling each pair)")
        return np.zeros(shape[0] * shape[1])
    item_cost = check_costs(item_cost, name="item costs")
    if item_cost.shape != shape:
        raise ValueError(f"item_cost must have shape {shape}, got {item_cost.shape}")
    return item_cost.ravel()


def _empty_estimate(confidence: float, interval: str, spent: float) -> Estimate:
    """No draw was affordable: nothing is known."""
    return Estimate(
        value=float("nan"),
        standard_error=float("nan"),
        low=float("-inf"),
        high=float("inf"),
        confidence=confidence,
        interval=interval,
        n_draws=0,
        n_judged=0,
        budget_spent=spent,
    )
