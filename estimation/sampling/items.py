"""Item-level importance sampling distributions over (query, item) pairs (Schnabel et al. 2016).

A linear metric such as DCG@K is an expectation over pairs:
``U_S = sum_x p(x) sum_z lambda_S(x, z) u(x, z)`` with ``u = g(y) / g(y_max)`` in [0, 1] and
``lambda_S(x, z)`` the discount of z's position in S's ranking of x (0 if z is not in the top K).
Writing ``P(x, z; S) = p(x) lambda_S(x, z)``, the estimator ``(1/n) sum_j u_j P_j / Q_j`` over
pairs drawn from ``Q`` is unbiased whenever ``Q > 0`` wherever ``P u > 0``. This module builds
the distributions ``Q`` that minimise its variance for four goals.

ERR and nDCG are not linear in the item labels, so item-level sampling does not apply to them;
sample whole queries instead (`estimation.sampling.queries.optimal_query_distribution`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from estimation._checks import check_goal_arity, check_mix, check_systems
from estimation.metrics.spec import Metric
from estimation.sampling.pool import EMPTY, Pool
from estimation.sampling.results import SamplingDistribution

ItemGoal = Literal["one", "difference", "absolute", "relative"]
SYSTEMS_PER_GOAL: dict[str, tuple[int, int | None]] = {
    "one": (1, 1),
    "difference": (2, 2),
    "absolute": (1, None),
    "relative": (2, None),
}
Prior = Literal["model", "uniform"]

DEFAULT_MIX = 0.1


def system_weights(pool: Pool, metric: Metric, system: int) -> np.ndarray:
    """The weight ``P(x, z; S) = p(x) * d(rank of z in S(x))`` of every (query, slot) pair.

    Schnabel et al. (2016), Sect. 2: the metric is ``sum_{x,z} P(x, z; S) u(x, z)``. For DCG@K
    the discount is ``d(i) = 1 / log2(i + 1)`` (or the metric's custom discounts) for positions
    ``i <= K``, and 0 for an item S does not rank in its top K.

    Parameters
    ----------
    pool : Pool
    metric : Metric
        A DCG metric (linear in the labels).
    system : int
        Index into ``pool.rankings``.

    Returns
    -------
    ndarray, shape (m, n)
        Non-negative; sums to ``sum_x p(x) sum_{i <= K} d(i)`` over the filled positions.

    Raises
    ------
    ValueError
        For ERR or nDCG, or an unknown system index.
    """
    _check_linear(metric)
    (chosen,) = check_systems(pool.n_systems, (system,))
    return _weights(pool, metric, (chosen,))[0]


def item_sampling_distribution(
    pool: Pool,
    metric: Metric,
    goal: ItemGoal,
    systems: Sequence[int] = (0,),
    *,
    prior: Prior = "model",
    mix: float = DEFAULT_MIX,
    floor_systems: Sequence[int] | None = None,
) -> SamplingDistribution:
    """Variance-optimal distribution over (query, slot) pairs for estimating DCG.

    With ``u~(x, z) = E[g(y) / g_max | x, z; theta]`` (``prior="model"``) or ``u~ = 1``
    (``prior="uniform"``, the minimax choice when nothing is known about the labels), the
    optimal distributions of Schnabel et al. (2016) are:

    - ``"one"`` (Sect. 3, Eqs. 5-6): ``Q* ∝ u~ P_S`` for a single system S;
    - ``"absolute"`` (SQRT, Sect. 4.1, Eqs. 10-11): ``Q* ∝ u~ sqrt(sum_S P_S^2)``, minimising
      the summed variances of the k systems' estimates;
    - ``"difference"`` (Sect. 5.1, Eq. 13): ``Q* ∝ u~ |P_S - P_S'|`` for ``U_S - U_S'``;
    - ``"relative"`` (KREL, Sect. 5.2, Eq. 15): ``Q* ∝ u~ sqrt(sum_S (P_S - mean_S' P_S')^2)``,
      for each system's difference from the mean of the k systems.

    The distribution returned is the defensive mixture ``Q = (1 - mix) Q* + mix F`` where ``F``
    is uniform over the pairs that any system of the pool (not only the chosen ones) ranks in
    its top K for a query with ``p(x) > 0``. So every such pair keeps a positive probability
    when ``mix > 0``: the weights ``P / Q`` stay bounded when the prior is wrong, and the stored
    draws stay unbiased for every system of the pool, not only the ones planned for (Sect. 3.4).
    If ``Q*`` is zero everywhere (e.g. the prior puts all mass on grade 0, or the two systems of
    a difference rank identically), ``Q*`` falls back to ``F``.

    Parameters
    ----------
    pool : Pool
    metric : Metric
        DCG@K (linear in the labels). The pool's rankings are cut at K.
    goal : {"one", "difference", "absolute", "relative"}
    systems : sequence of int
        Indices into ``pool.rankings``: exactly one for ``"one"``, exactly two for
        ``"difference"``, at least one for ``"absolute"``, at least two for ``"relative"``.
    prior : {"model", "uniform"}
        Where ``u~`` comes from: the pool's label model ``theta``, or 1 everywhere.
    mix : float
        Weight of the uniform component, in [0, 1]. Default 0.1.
    floor_systems : sequence of int, optional
        The systems whose pairs the uniform component covers (default every system of the
        pool): a campaign's pool before a run arrived, replayed on the grown pool.

    Returns
    -------
    SamplingDistribution
        ``q`` and ``optimal`` of shape (m, n), zero on unused slots and on pairs no system of
        the pool ranks; ``cost`` is the pool's item cost c(z) per pair.

    Raises
    ------
    ValueError
        For ERR or nDCG, an unknown goal or prior, the wrong number of systems, a mix outside
        [0, 1], or a pool in which no system ranks any item of a query with ``p(x) > 0``.
    """
    _check_linear(metric)
    mix = check_mix(mix)
    chosen = check_systems(pool.n_systems, systems)
    check_goal_arity(goal, len(chosen), SYSTEMS_PER_GOAL)
    if prior not in ("model", "uniform"):
        raise ValueError(f"unknown prior {prior!r}; expected 'model' or 'uniform'")

    all_weights = _weights(pool, metric, tuple(range(pool.n_systems)))
    weights = all_weights[list(chosen)]
    utility = expected_utility(pool, metric) if prior == "model" else np.ones(pool.slot_used.shape)

    if goal == "one":
        spread = weights[0]
    elif goal == "absolute":
        spread = np.sqrt((weights**2).sum(axis=0))
    elif goal == "difference":
        spread = np.abs(weights[0] - weights[1])
    else:
        spread = np.sqrt(((weights - weights.mean(axis=0)) ** 2).sum(axis=0))

    covered = check_systems(pool.n_systems, floor_systems)
    support = (all_weights[list(covered)] > 0).any(axis=0)
    if not support.any():
        raise ValueError("no system ranks any item of a query with p(x) > 0: nothing to sample")
    floor = support / support.sum()
    optimal = np.where(support, utility * spread, 0.0)
    total = optimal.sum()
    optimal = optimal / total if total > 0 else floor
    q = (1.0 - mix) * optimal + mix * floor
    return SamplingDistribution(q=q / q.sum(), optimal=optimal, mix=mix, cost=pool.item_cost)


def expected_utility(pool: Pool, metric: Metric) -> np.ndarray:
    """``u~(x, z) = E[g(y) / g_max | x, z; theta]`` per (query, slot), shape (m, n), 0 on unused slots.

    ``g_max`` is the largest gain of the metric's scale (``g(y_max)`` for monotone gains), so
    ``u~`` lies in [0, 1] as Schnabel et al. (2016) require of ``u``.
    """
    gains = metric.gain_table()
    if gains.shape[0] != pool.n_grades:
        raise ValueError(
            f"the metric's grade scale 0..{metric.y_max} does not match the pool's {pool.n_grades} grades"
        )
    if np.any(gains < 0) or gains.max() <= 0:
        raise ValueError("item-level sampling needs non-negative gains with a positive maximum")
    utility = pool.theta @ (gains / gains.max())
    return np.where(pool.slot_used, utility, 0.0)


def _weights(pool: Pool, metric: Metric, systems: tuple[int, ...]) -> np.ndarray:
    """P_S for each listed system, shape (len(systems), m, n)."""
    depth = min(metric.cutoff, pool.cutoff)
    discounts = metric.discount_table(depth)
    rankings = pool.rankings[np.asarray(systems, dtype=np.int64), :, :depth]
    weights = np.zeros((len(systems), pool.n_queries, pool.n_slots + 1))
    # Empty positions (-1) write into the extra last column, which is dropped.
    slots = np.where(rankings == EMPTY, pool.n_slots, rankings)
    system_index = np.arange(len(systems))[:, None, None]
    query_index = np.arange(pool.n_queries)[None, :, None]
    weights[system_index, query_index, slots] = np.broadcast_to(discounts, slots.shape)
    return weights[:, :, :-1] * pool.query_weight[None, :, None]


def _check_linear(metric: Metric) -> None:
    if not metric.is_linear_in_labels:
        raise ValueError(
            f"{metric} is not linear in the item labels: item-level sampling applies to DCG only; "
            "sample whole queries instead"
        )
