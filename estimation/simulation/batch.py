"""Vectorised repetitions of the budget loop for a fixed sampling distribution.

Benchmarks run thousands of repetitions for many budgets and methods; the one-draw-at-a-time
loop of `estimation.simulation.loop` is too slow for that. For a *fixed* distribution (no
adaptivity) the draws of a repetition do not depend on the labels, so all of them can be
drawn up front as a matrix ``(n_repetitions, N)``; the stopping rule of
`estimation.sampling.budget_loop` then reduces to array operations (`estimation.simulation.kernels`):

- mark the first occurrence of each unit in its row (only those cost anything);
- cumulative cost of the first occurrences; the loop stops at the first draw whose
  cumulative cost exceeds the budget (that draw is not taken), after the draw that labels
  the last drawable unit (pool exhausted), or at ``max_draws``;
- if a row has not stopped within ``N`` columns, more columns are drawn.

With one repetition and the same seeded generator the draws, and therefore the estimates,
are exactly those of the loop (both consume one uniform per draw, in order).

Several budgets share one set of draws (common random numbers, as if one campaign were
stopped at each budget), which makes curves over the budget smooth and cheap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimation._checks import check_budget, check_costs
from estimation.sampling.budget_loop import checked_distribution
from estimation.sampling.intervals import (
    INTERVAL_KINDS,
    check_confidence,
    clt_interval,
    empirical_bernstein_halfwidth,
    hoeffding_halfwidth,
    t_interval,
)
from estimation.sampling.item_estimators import item_level_weight_bound
from estimation.sampling.results import SamplingDistribution
from estimation.simulation.kernels import mean_reduce, query_level_reduce, run_batches


@dataclass(frozen=True, eq=False)
class QueryBatchResult:
    """Many independent runs of the query-level budget loop.

    Shapes: ``B`` budgets (the axis is absent for a scalar budget), ``R`` repetitions, ``k``
    quantities (absent for 1-D ``true_values``).

    Attributes
    ----------
    estimates : ndarray, shape ([B,] R[, k])
        ``R_hat`` per run and quantity; nan when no draw was affordable.
    standard_errors : ndarray, shape ([B,] R[, k])
        ``sqrt(Var_hat)``; nan with fewer than two draws.
    n_draws, n_judged : ndarray of int, shape ([B,] R)
        Draws taken (repeats included) and distinct queries labelled.
    spent : ndarray, shape ([B,] R)
        Cost units spent, <= budget.
    budgets : ndarray, shape ([B]), or None
        None for a fixed number of draws.
    confidence : float
        Level of `interval`.
    """

    estimates: np.ndarray
    standard_errors: np.ndarray
    n_draws: np.ndarray
    n_judged: np.ndarray
    spent: np.ndarray
    budgets: np.ndarray | None
    confidence: float

    def interval(self, kind: str = "t") -> tuple[np.ndarray, np.ndarray]:
        """Bounds ``estimate ± t_{alpha/2, k-1} sqrt(Var_hat)`` (``kind="t"``, ``k`` distinct
        topics, as `estimation.sampling.estimators.query_level_estimate` with ``interval="t"``) or
        ``estimate ± z sqrt(Var_hat)`` (``kind="clt"``), each shaped like ``estimates``.

        ``(-inf, inf)`` for runs with fewer than two distinct topics, as in `estimation.simulation.loop`.
        """
        if kind not in ("t", "clt"):
            raise ValueError(f"interval must be 't' or 'clt', got {kind!r}")
        errors = np.where(self._judged_like_estimates() >= 2, self.standard_errors, np.nan)
        if kind == "clt":
            low, high = clt_interval(self.estimates, errors, self.confidence)
        else:
            low, high = t_interval(self.estimates, errors, self._judged_like_estimates() - 1, self.confidence)
        return _unknown_where_empty(self.estimates, low, high)

    def covers(self, truth: float | np.ndarray, kind: str = "t") -> np.ndarray:
        """Whether each run's interval holds ``truth`` (a scalar, or shape (k,))."""
        low, high = self.interval(kind)
        return (low <= truth) & (truth <= high)

    def _judged_like_estimates(self) -> np.ndarray:
        judged = np.asarray(self.n_judged, dtype=float)
        return judged[..., None] if self.estimates.ndim > judged.ndim else judged


@dataclass(frozen=True, eq=False)
class ItemBatchResult:
    """Many independent runs of the item-level loop; ``S`` target weight vectors.

    Attributes
    ----------
    estimates : ndarray, shape ([B,] R, S)
        ``U_hat`` per run and target.
    standard_errors : ndarray, shape ([B,] R, S)
        ``s / sqrt(n)``; nan with fewer than two draws.
    sample_variances : ndarray, shape ([B,] R, S)
        ``s^2`` of the terms ``u P / Q`` (for the Bernstein interval).
    n_draws, n_judged : ndarray of int, shape ([B,] R)
    spent : ndarray, shape ([B,] R)
        nan without item costs.
    value_ranges : ndarray, shape (S,)
        Length of the interval each term ``u P_S / Q`` lies in, for u in [0, 1]:
        ``max(0, max P/Q) - min(0, min P/Q)`` (``max P/Q`` for a system; at most
        ``2 max |P_a - P_b| / Q`` for a signed difference target).
    budgets : ndarray, shape ([B]), or None
    confidence : float
    """

    estimates: np.ndarray
    standard_errors: np.ndarray
    sample_variances: np.ndarray
    n_draws: np.ndarray
    n_judged: np.ndarray
    spent: np.ndarray
    value_ranges: np.ndarray
    budgets: np.ndarray | None
    confidence: float

    def interval(self, kind: str = "clt") -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the ``"clt"``, ``"hoeffding"`` or ``"bernstein"`` interval per run and target."""
        if kind not in INTERVAL_KINDS:
            raise ValueError(f"interval must be one of {', '.join(INTERVAL_KINDS)}, got {kind!r}")
        if kind == "clt":
            low, high = clt_interval(self.estimates, self.standard_errors, self.confidence)
            return _unknown_where_empty(self.estimates, low, high)
        n_draws = np.maximum(self.n_draws, 1)[..., None]
        if kind == "hoeffding":
            halfwidth = hoeffding_halfwidth(self.value_ranges, n_draws, self.confidence)
        else:
            variance = np.nan_to_num(self.sample_variances, nan=0.0)
            halfwidth = empirical_bernstein_halfwidth(variance, self.value_ranges, n_draws, self.confidence)
        # A target with range 0 weights no pair: its value is 0 with certainty, as in
        # `estimation.sampling.item_estimators` (even Bernstein's one-draw infinity does not apply).
        halfwidth = np.where(self.value_ranges == 0, 0.0, halfwidth)
        return _unknown_where_empty(self.estimates, self.estimates - halfwidth, self.estimates + halfwidth)

    def covers(self, truth: np.ndarray, kind: str = "clt") -> np.ndarray:
        """Whether each run's interval holds ``truth`` (shape (S,)), shape ([B,] R, S)."""
        low, high = self.interval(kind)
        return (low <= truth) & (truth <= high)


def simulate_query_level_batch(
    true_values: np.ndarray,
    query_cost: np.ndarray,
    distribution: np.ndarray | SamplingDistribution,
    query_weight: np.ndarray,
    budget: float | np.ndarray | None,
    n_repetitions: int,
    rng: np.random.Generator,
    *,
    max_draws: int | None = None,
    confidence: float = 0.95,
    self_normalised: bool = True,
) -> QueryBatchResult:
    """Repeat Sawade et al.'s Algorithm 1 ``n_repetitions`` times with a fixed ``q``.

    Equivalent to calling `estimation.simulation.loop.simulate_query_level` once per repetition
    (identical results for one repetition and the same seed), but vectorised.

    Parameters
    ----------
    true_values : ndarray, shape (m,) or (m, k)
        The oracle's ``L(x)``; several columns (e.g. ``L_a``, ``L_b``, ``L_a - L_b``) are
        estimated from the same draws at once.
    query_cost : ndarray, shape (m,)
        ``lambda(x) >= 0``; a topic with nothing to label costs 0 and is labelled for free
        (its metric is known: 0 for every run that does not rank it).
    distribution : ndarray (m,) or SamplingDistribution
        The fixed sampling distribution ``q``.
    query_weight : ndarray, shape (m,)
        ``p(x)``.
    budget : float, ndarray of shape (B,), or None
        One budget or several; several share the same draws. None: no budget, each run
        takes exactly ``max_draws`` draws (a fixed sample size).
    n_repetitions : int
    rng : numpy.random.Generator
    max_draws : int, optional
        Cap on the draws per run.
    confidence : float
        Level of `QueryBatchResult.interval`.
    self_normalised : bool
        See `estimation.sampling.estimators.query_level_estimate`.

    Returns
    -------
    QueryBatchResult
    """
    query_cost = check_costs(query_cost, name="query costs")
    if query_cost.ndim != 1:
        raise ValueError(f"query_cost must have shape (m,), got {query_cost.shape}")
    n_queries = query_cost.size
    values = np.asarray(true_values, dtype=float)
    if values.shape[:1] != (n_queries,) or values.ndim not in (1, 2):
        raise ValueError(
            f"true_values must have shape ({n_queries},) or ({n_queries}, k), got {values.shape}"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError("true_values must be finite")
    q = checked_distribution(distribution, n_queries)
    query_weight = np.asarray(query_weight, dtype=float)
    if (
        query_weight.shape != (n_queries,)
        or np.any(query_weight < 0)
        or not np.all(np.isfinite(query_weight))
    ):
        raise ValueError(f"query_weight must be finite, >= 0, of shape ({n_queries},)")
    if budget is None and max_draws is None:
        raise ValueError("give a budget, max_draws, or both")
    budgets, scalar_budget = (np.array([np.inf]), True) if budget is None else _check_budgets(budget)
    confidence = check_confidence(confidence)
    columns = values if values.ndim == 2 else values[:, None]
    importance_weight = np.divide(query_weight, q, out=np.zeros(n_queries), where=q > 0)

    def reduce(draws: np.ndarray, n_draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return query_level_reduce(draws, n_draws, columns, importance_weight, self_normalised=self_normalised)

    stats, n_draws, n_judged, spent = run_batches(
        q=q,
        unit_cost=query_cost,
        budgets=budgets,
        n_repetitions=n_repetitions,
        max_draws=max_draws,
        rng=rng,
        reduce=reduce,
        width=columns.shape[1],
    )
    estimates, standard_errors = stats
    # As in `query_level_estimate`: one distinct topic, however often drawn, shows no spread.
    standard_errors = np.where(n_judged[..., None] >= 2, standard_errors, np.nan)
    if values.ndim == 1:
        estimates, standard_errors = estimates[..., 0], standard_errors[..., 0]
    if scalar_budget:
        estimates, standard_errors = estimates[0], standard_errors[0]
        n_draws, n_judged, spent = n_draws[0], n_judged[0], spent[0]
    return QueryBatchResult(
        estimates=estimates,
        standard_errors=standard_errors,
        n_draws=n_draws,
        n_judged=n_judged,
        spent=spent,
        budgets=None if budget is None else (budgets[0] if scalar_budget else budgets),
        confidence=confidence,
    )


def simulate_item_level_batch(
    true_labels: np.ndarray,
    distribution: np.ndarray | SamplingDistribution,
    target_weights: np.ndarray,
    n_repetitions: int,
    rng: np.random.Generator,
    *,
    n_draws: int | None = None,
    budget: float | np.ndarray | None = None,
    item_cost: np.ndarray | None = None,
    confidence: float = 0.95,
) -> ItemBatchResult:
    """Repeat the item-level loop of Schnabel et al. (2016) ``n_repetitions`` times.

    Equivalent to `estimation.simulation.loop.simulate_item_level` per repetition (identical for one
    repetition and the same seed).

    Parameters
    ----------
    true_labels : ndarray, shape (m, n)
        ``u(x, z)`` in [0, 1].
    distribution : ndarray (m, n) or SamplingDistribution
        The fixed ``Q`` over pairs.
    target_weights : ndarray, shape (S, m, n)
        ``P(x, z; S)`` per target. Signed targets are allowed here, e.g. ``P_a - P_b`` to
        estimate a difference from the same draws.
    n_repetitions : int
    rng : numpy.random.Generator
    n_draws : int, optional
        Draws per run (without a budget: exactly; with one: at most).
    budget : float or ndarray of shape (B,), optional
        Needs ``item_cost``.
    item_cost : ndarray, shape (m, n), optional
    confidence : float

    Returns
    -------
    ItemBatchResult
    """
    true_labels = np.asarray(true_labels, dtype=float)
    if true_labels.ndim != 2:
        raise ValueError(f"true_labels must have shape (m, n), got {true_labels.shape}")
    if not np.all(np.isfinite(true_labels)) or np.any(true_labels < 0) or np.any(true_labels > 1):
        raise ValueError("true_labels must lie in [0, 1]")
    q = checked_distribution(distribution, true_labels.size)
    targets = np.asarray(target_weights, dtype=float)
    if targets.ndim == 2:
        targets = targets[None]
    if targets.ndim != 3 or targets.shape[1:] != true_labels.shape:
        raise ValueError(
            f"target_weights must have shape (S, {true_labels.shape[0]}, {true_labels.shape[1]})"
        )
    if not np.all(np.isfinite(targets)):
        raise ValueError("target_weights must be finite")
    if budget is None and n_draws is None:
        raise ValueError("give n_draws, a budget, or both")
    if item_cost is None:
        if budget is not None:
            raise ValueError("a budget needs item_cost (the cost of labelling each pair)")
        unit_cost = np.zeros(true_labels.size)
    else:
        unit_cost = check_costs(item_cost, name="item costs")
        if unit_cost.shape != true_labels.shape:
            raise ValueError(f"item_cost must have shape {true_labels.shape}, got {unit_cost.shape}")
        unit_cost = unit_cost.ravel()
    budgets, scalar_budget = (np.array([np.inf]), True) if budget is None else _check_budgets(budget)
    confidence = check_confidence(confidence)
    flat_targets = targets.reshape(targets.shape[0], -1)
    # terms[unit, s] = u P_s / Q: what a draw of that unit adds to target s.
    terms = np.zeros((true_labels.size, flat_targets.shape[0]))
    drawable = q > 0
    terms[drawable] = (true_labels.ravel()[drawable, None] * flat_targets[:, drawable].T) / q[drawable, None]
    value_ranges = np.array([_value_range(weights, q) for weights in flat_targets])

    def reduce(draws: np.ndarray, taken: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return mean_reduce(draws, taken, terms)

    stats, n_taken, n_judged, spent = run_batches(
        q=q,
        unit_cost=unit_cost,
        budgets=budgets,
        n_repetitions=n_repetitions,
        max_draws=n_draws,
        rng=rng,
        reduce=reduce,
        width=terms.shape[1],
    )
    estimates, standard_errors, sample_variances = stats
    if item_cost is None:
        spent = np.full_like(spent, np.nan)
    if scalar_budget:
        estimates, standard_errors, sample_variances = estimates[0], standard_errors[0], sample_variances[0]
        n_taken, n_judged, spent = n_taken[0], n_judged[0], spent[0]
    return ItemBatchResult(
        estimates=estimates,
        standard_errors=standard_errors,
        sample_variances=sample_variances,
        n_draws=n_taken,
        n_judged=n_judged,
        spent=spent,
        value_ranges=value_ranges,
        budgets=None if budget is None else (budgets[0] if scalar_budget else budgets),
        confidence=confidence,
    )


def _unknown_where_empty(
    estimates: np.ndarray, low: float | np.ndarray, high: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A run without draws has no estimate (nan) and the honest interval (-inf, inf)."""
    empty = np.isnan(estimates)
    return np.where(empty, -np.inf, low), np.where(empty, np.inf, high)


def _check_budgets(budget: float | np.ndarray) -> tuple[np.ndarray, bool]:
    budgets = np.asarray(budget, dtype=float)
    if budgets.ndim > 1 or budgets.size == 0:
        raise ValueError(f"budget must be a number or a 1-D array of budgets, got shape {budgets.shape}")
    scalar = budgets.ndim == 0
    return np.array([check_budget(b) for b in np.atleast_1d(budgets)]), scalar


def _value_range(weights: np.ndarray, q: np.ndarray) -> float:
    """Length of the interval holding ``u P / Q`` for u in [0, 1] (inf if P != 0 where Q = 0)."""
    if not np.isfinite(item_level_weight_bound(weights, q)):
        return float("inf")
    drawable = q > 0
    ratios = weights[drawable] / q[drawable]
    if ratios.size == 0:
        return 0.0
    return float(max(0.0, ratios.max()) - min(0.0, ratios.min()))
