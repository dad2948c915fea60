"""Query-level sampling distributions: which queries to label (Sawade et al. 2013).

A query drawn from ``q`` is labelled in full (every item of the chosen systems' top K) at cost
``lambda(x)``; the self-normalised importance-weighted estimate ``sum w L / sum w`` with
``w = p / q`` is consistent for any ``q > 0`` wherever ``p > 0``. Among those, the
distribution that minimises its asymptotic variance for a given expected labelling cost is
(Theorems 1 and 2, Corollary 1)

    q*(x) ∝ p(x) sqrt(E[(L(x) - R_theta)^2 | x; theta]) / sqrt(lambda(x)),

with ``R_theta = sum_x p(x) E[L | x; theta]``, and the same with the difference ``delta`` of
two systems, or the sum over k systems, under the square root. ``theta`` is the pool's label
model; the exact moments come from `estimation.metrics.moments`.

For item-level sampling of (query, item) pairs (Schnabel et al. 2016) see
`estimation.sampling.items`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from estimation._checks import check_costs, check_goal_arity, check_mix, check_systems
from estimation.metrics.moments import difference_moments, ranking_moments
from estimation.metrics.spec import Metric
from estimation.sampling.costs import needed_slots, query_costs
from estimation.sampling.pool import Pool
from estimation.sampling.results import SamplingDistribution

QueryGoal = Literal["one", "difference", "leaderboard"]
SYSTEMS_PER_GOAL: dict[str, tuple[int, int | None]] = {
    "one": (1, 1),
    "difference": (2, 2),
    "leaderboard": (1, None),
}

DEFAULT_MIX = 0.1
"""Weight of p in the defensive mixture ``q = (1 - mix) q* + mix p``: every query keeps at
least a tenth of its passive probability, so the importance weights ``p / q`` never exceed
``1 / mix = 10`` even when theta is badly wrong, at the price of a tenth of the budget."""


def passive_distribution(pool: Pool, *, query_cost: np.ndarray | None = None) -> SamplingDistribution:
    """The passive baseline: draw queries from the test distribution itself, ``q = p``.

    Parameters
    ----------
    pool : Pool
    query_cost : ndarray, shape (m,), optional
        lambda(x), stored in ``cost`` for budget bookkeeping; it does not change ``q``.

    Returns
    -------
    SamplingDistribution
        ``q = optimal = p(x)``, ``mix = 0``.
    """
    p = pool.query_weight
    # No system ranks it: free.
    known = np.asarray(~needed_slots(pool, range(pool.n_systems)).any(axis=1))
    cost = None if query_cost is None else _check_query_cost(query_cost, pool, known)
    return SamplingDistribution(q=p.copy(), optimal=p.copy(), mix=0.0, cost=cost)


def optimal_query_distribution(
    pool: Pool,
    metric: Metric,
    goal: QueryGoal,
    systems: Sequence[int] = (0,),
    *,
    query_cost: np.ndarray | None = None,
    mix: float = DEFAULT_MIX,
    uniform_labels: bool = False,
    unit_costs: bool = False,
) -> SamplingDistribution:
    """Cost-optimal query sampling distribution, mixed with p for safety.

    ``q*(x) ∝ p(x) sqrt(a(x)) / sqrt(lambda(x))`` (Sawade et al. 2013, Theorem 1 and
    Corollary 1, Eq. 16, for ``"one"``; Theorem 2 and Eq. 17 for ``"difference"``; Lemma 2
    with ``a(x) = p(x)^2 sum_S E[(L_S - R_S)^2 | x]`` for ``"leaderboard"``), where ``a(x)`` is

    - ``"one"``: ``E[(L_S - R_theta)^2 | x; theta]``, ``R_theta = sum_x p(x) E[L_S | x; theta]``;
    - ``"difference"``: ``E[(delta - Delta_theta)^2 | x; theta]`` with ``delta = L_S1 - L_S2``
      and ``Delta_theta = sum_x p(x) E[delta | x; theta]``;
    - ``"leaderboard"``: ``sum_S E[(L_S - R_S)^2 | x; theta]``, which minimises the sum of the
      k systems' variances (with one system it equals ``"one"``).

    The result is ``q = (1 - mix) q* + mix p``, so ``q > 0`` wherever ``p > 0`` when
    ``mix > 0``. If ``p(x) sqrt(a(x))`` is zero for every query (the label model is certain of
    every label and every query sits at the reference, or a difference of two identical
    rankings), no query is more informative than another and ``q*`` falls back to ``p``.

    Parameters
    ----------
    pool : Pool
    metric : Metric
        DCG@K or ERR@K (nDCG is reported, not used to build sampling distributions).
    goal : {"one", "difference", "leaderboard"}
    systems : sequence of int
        Indices into ``pool.rankings``: exactly one for ``"one"``, exactly two for
        ``"difference"`` (``delta = L_first - L_second``), at least one for ``"leaderboard"``.
    query_cost : ndarray, shape (m,), optional
        lambda(x), > 0 wherever p(x) > 0 and the chosen systems rank an item (a topic none of
        them ranks is known, metric 0, and may cost 0). Default:
        `estimation.sampling.costs.query_costs` over the union of the chosen systems' top K
        (K = the metric's cutoff), normalised to a
        p-weighted mean of 1. Scaling the costs does not change q.
    mix : float
        Weight of p in the mixture, in [0, 1]. Default 0.1 (see `DEFAULT_MIX`).
    uniform_labels : bool
        The ``active_uniD`` baseline: compute the moments with theta uniform over the grades
        instead of the pool's label model.
    unit_costs : bool
        The ``active_uniC`` baseline: ignore costs in q (lambda = 1). ``cost`` still reports
        the real query costs, which the budget is charged.

    Returns
    -------
    SamplingDistribution
        ``q``, ``optimal`` (q*), ``mix``, ``cost`` (lambda(x)), ``expected`` (E[L_S | x; theta]
        for ``"one"``, E[delta | x; theta] for ``"difference"``, the mean over the systems of
        E[L_S | x; theta] for ``"leaderboard"``) and ``second_moment`` (``a(x)`` above), all of
        shape (m,); moments use the uniform theta when ``uniform_labels`` is set.

    Raises
    ------
    ValueError
        nDCG, an unknown goal, the wrong number of systems, a mix outside [0, 1], or a query
        cost that is not > 0 where p(x) > 0 and there is an item to label.
    """
    if metric.name == "nDCG":
        raise ValueError("nDCG is not used to build sampling distributions: plan with DCG@K or ERR@K")
    mix = check_mix(mix)
    chosen = check_systems(pool.n_systems, systems)
    check_goal_arity(goal, len(chosen), SYSTEMS_PER_GOAL)
    p = pool.query_weight
    # A topic none of the chosen systems ranks has nothing to label: its metric is known
    # (0 for every system) and it costs nothing.
    known = np.asarray(~needed_slots(pool, chosen, cutoff=metric.cutoff).any(axis=1))
    if query_cost is None:
        cost = query_costs(pool, chosen, cutoff=metric.cutoff) if not np.all(known) else np.zeros(len(p))
    else:
        cost = _check_query_cost(query_cost, pool, known)

    theta = np.full_like(pool.theta, 1.0 / pool.n_grades) if uniform_labels else pool.theta
    if goal == "difference":
        moments = difference_moments(theta, pool.rankings[chosen[0]], pool.rankings[chosen[1]], metric)
        expected = moments.mean
        second_moment = moments.second_moment_about(float(p @ moments.mean))
    else:
        per_system = [ranking_moments(theta, pool.rankings[system], metric) for system in chosen]
        expected = np.mean([moments.mean for moments in per_system], axis=0)
        second_moment = np.sum(
            [moments.second_moment_about(float(p @ moments.mean)) for moments in per_system], axis=0
        )
    # Rounding can leave -1e-17 where the exact value is 0; the square root needs >= 0.
    second_moment = np.clip(second_moment, 0.0, None)

    charged = np.ones_like(cost) if unit_costs else cost
    # q* divides by sqrt(lambda); a known topic is free, and is charged in q like the cheapest
    # topic with something to label, so that it keeps a finite, positive share wherever its
    # (exactly known) metric lies away from R and the self-normalised estimate stays unbiased.
    priced = charged[(p > 0) & (charged > 0)]
    floor = float(priced.min()) if priced.size else 1.0
    safe_cost = np.where((p > 0) & (charged > 0), charged, floor)
    score = np.where(p > 0, p * np.sqrt(second_moment) / np.sqrt(safe_cost), 0.0)
    total = score.sum()
    optimal = score / total if total > 0 else p.copy()
    q = (1.0 - mix) * optimal + mix * p
    return SamplingDistribution(
        q=q / q.sum(),
        optimal=optimal,
        mix=mix,
        cost=cost,
        expected=expected,
        second_moment=second_moment,
    )


def _check_query_cost(query_cost: np.ndarray, pool: Pool, known: np.ndarray | None = None) -> np.ndarray:
    """Query costs >= 0, and > 0 wherever p(x) > 0 and the topic has something to label."""
    p = pool.query_weight
    cost = check_costs(np.asarray(query_cost, dtype=float), name="query costs")
    if cost.shape != p.shape:
        raise ValueError(f"query costs must have shape {p.shape}, got {cost.shape}")
    free = (cost <= 0) & (p > 0)
    if known is not None:
        free &= ~known
    if np.any(free):
        raise ValueError(
            f"query costs must be > 0 for every query with p(x) > 0 that has an item to label "
            f"(lambda(x) >= eps > 0); query {_first_free_query(free, pool)} costs 0"
        )
    return cost


def _first_free_query(free: np.ndarray, pool: Pool) -> str:
    """The id (or index) of the first query flagged in `free`, for messages."""
    index = int(np.argmax(free))
    return repr(pool.query_ids[index]) if pool.query_ids else f"#{index}"
