"""Importance-weighted estimators of ranking performance: the query level, and what is shared.

Two sampling units:

- *query level* (Sawade et al. 2013, Algorithm 1), here: draw queries ``x_j ~ q_j``, label
  every item the system(s) rank for them, estimate with the self-normalised
  importance-weighted mean. Works for any metric (DCG, nDCG, ERR) and for the difference of
  two systems.
- *item level* (Schnabel et al. 2016), in `estimation.sampling.item_estimators`: draw (query, item)
  pairs ``(x_j, z_j) ~ Q``, label one item each, estimate a *linear* metric (DCG, P@k) with
  the plain importance-weighted mean, which is exactly unbiased.

The functions take arrays over the draws, never a pool: whoever drew the sample records each
draw's own propensity (the distribution in force *at that draw*, which may have changed
since: adaptive sampling), and passes it in. Old propensities are never recomputed.
"""

from __future__ import annotations

import numpy as np

from estimation.sampling.intervals import (
    QUERY_INTERVAL_KINDS,
    QueryIntervalKind,
    check_confidence,
    check_value_bounds,
    clip_interval,
    clt_interval,
    empirical_bernstein_halfwidth,
    hoeffding_halfwidth,
    skew_t_interval,
    t_interval,
)
from estimation.sampling.results import Estimate

MIN_RELIABLE_TOPICS = 5
"""Below this many distinct judged topics no CLT-type interval (``clt``, ``t``, ``skew_t``) is
trusted: with 2-4 skewed per-topic values even the skewness estimate is noise. The seeded
coverage tests on the real data (tests/estimation/test_coverage_real.py) check the intervals
from here on."""


def query_level_estimate(
    values: np.ndarray,
    propensities: np.ndarray,
    query_weights: np.ndarray,
    *,
    confidence: float = 0.95,
    self_normalised: bool = True,
    interval: QueryIntervalKind | None = None,
    n_judged: int | None = None,
    topics: np.ndarray | None = None,
    budget_spent: float = float("nan"),
    value_bounds: tuple[float, float] | None = None,
    weight_bound: float | None = None,
    reliable_from: int = MIN_RELIABLE_TOPICS,
) -> Estimate:
    """Importance-weighted estimate of ``R = sum_x p(x) L(x)`` from queries drawn with replacement.

    Sawade et al. (2013), Section 4 and Algorithm 1: weights ``w_j = p(x_j) / q_j(x_j)``,

    - self-normalised (default): ``R_hat = sum_j w_j L_j / sum_j w_j``. Consistent, with a
      bias of order 1/n (a ratio estimator); invariant to rescaling ``p``. Its linearisation
      (delta method) is the mean of ``e_j = w_j (L_j - R_hat) / mean(w)``.
    - plain (``self_normalised=False``): ``R_hat = (1/n) sum_j w_j L_j``, exactly unbiased for
      every n when ``p`` sums to 1 over the pool (also under adaptive ``q_j``: each term has
      conditional expectation R); ``e_j = w_j L_j - R_hat``.

    Which to use: both coincide under passive sampling (``q = p``, all ``w_j = 1``). Under
    active sampling the self-normalised estimator is the one Sawade et al.'s ``q*`` minimises
    the variance of; its ratio bias is ``O(1/n)`` in absolute terms, negligible beside the
    standard error of one system's value, but not beside a *small* truth: for a difference
    of two systems (ERR on real data: +26 % / +14 % of the truth at 5 / 10 topics) it is
    of the order of the quantity itself. When ``p`` is known and normalised (the app: uniform
    over the pooled topics) the plain estimator has no such bias and, since ``Delta`` is
    small, almost the same variance (``E[w^2 delta^2] - Delta^2`` against
    ``E[w^2 (delta - Delta)^2]``): use it for differences, the self-normalised one for a
    system's own value.

    Variance: ``Var_hat = s^2 / n`` with ``s^2 = sum_j e_j^2 / (n - 1)``, ``n`` the number of
    *draws*. The draws, not the topics, are the i.i.d. units of the derivation (with
    replacement, each draw is an independent ``x_j ~ q_j``; a repeated topic is a second
    independent draw that happens to hit the same ``x``), so the ``n / (n - 1)`` correction
    uses the draws: for the self-normalised estimator ``Var_hat`` is the delta-method
    ``sum w_j^2 (L_j - R_hat)^2 / (sum w_j)^2`` times ``n / (n - 1)``, which under passive
    sampling is exactly the unbiased ``s^2 / n`` of the item level (ddof = 1). The *spread*,
    though, is only seen through distinct topics: the degrees of freedom of the t quantile are
    ``k - 1`` with ``k`` distinct judged topics (conservative when topics repeat), and with
    ``k < 2`` the variance is unknown (nan), however many draws repeat the one topic.

    Intervals (``interval``):

    - ``skew_t`` (default for the self-normalised estimator): Hall's (1992)
      skewness-corrected t interval on the terms ``e_j`` (`estimation.sampling.intervals.skew_t_interval`);
      per-topic DCG and ERR are right-skewed, and
      the symmetric intervals then miss the truth mostly on one side. Chosen over a
      studentised bootstrap because it is closed-form: deterministic (the dashboard shows
      the same interval on every recompute without storing a seed), vectorisable, and cheap.
    - ``t`` (default for the plain estimator): ``R_hat ± t_{alpha/2, k-1} sqrt(Var_hat)``. The
      plain estimator serves differences, whose per-topic values are heavy-tailed but not
      consistently skewed: there the skewness estimate from 10-20 topics is mostly noise and
      shifts the interval the wrong way as often as the right one (seeded coverage on
      Robust03 and MSLR: 0.91-0.92 with ``skew_t`` against 0.94-0.97 with ``t`` at 10 topics).
    - ``clt``: ``R_hat ± z_{alpha/2} sqrt(Var_hat)`` (Sawade et al.; under-covers for small n).
    - ``hoeffding`` / ``bernstein``: any-n bounds (below).

    Any-n bounds: the plain terms ``w_j L_j`` are independent with mean R (``p`` normalised)
    and lie in an interval of length ``W (max(b, 0) - min(a, 0))`` for ``L`` in
    ``value_bounds = (a, b)`` and ``w <= W = weight_bound``; Hoeffding's (1963) and the
    empirical Bernstein (Maurer & Pontil 2009) intervals around the plain mean then hold for
    every n. ``any_n_low, any_n_high`` of the result is the Hoeffding one (valid from one
    draw on). They need ``value_bounds``; without ``weight_bound`` the largest drawn weight
    is used, which is exact under passive sampling (``W = 1``) and otherwise an
    approximation (with the defensive mixture ``q >= mix p`` pass ``W = 1 / mix``).

    Every interval, and the any-n bounds, is cut to ``value_bounds`` when given.

    Parameters
    ----------
    values : ndarray, shape (n_draws,)
        ``L_j`` (or ``delta_j``) of each drawn query; a query drawn twice appears twice.
    propensities : ndarray, shape (n_draws,)
        ``q_j(x_j)``, the probability with which draw j picked its query, in (0, 1].
    query_weights : ndarray, shape (n_draws,)
        ``p(x_j)``, the weight of the drawn query in the target quantity, >= 0.
    confidence : float
        Level of the interval.
    self_normalised : bool
        See above.
    interval : {"skew_t", "t", "clt", "hoeffding", "bernstein"}, optional
        Default ``skew_t`` when self-normalised, else ``t``.
    n_judged : int, optional
        Distinct queries labelled. Defaults to the number of distinct ``topics`` if given,
        else to ``n_draws`` (pass the real count, or ``topics``, when queries repeat).
    topics : ndarray of int, shape (n_draws,), optional
        The drawn query of each draw; its distinct count is ``n_judged``.
    budget_spent : float
        Cost units spent, carried into the result.
    value_bounds : (float, float), optional
        ``(a, b)``, the range of one ``L`` (``Metric.value_bounds()``; for a difference
        ``(a - b, b - a)``).
    weight_bound : float, optional
        ``W >= max p / q`` over the pool, for the any-n bounds.
    reliable_from : int
        Distinct judged topics from which a CLT-type interval is trusted (``reliable``).

    Returns
    -------
    Estimate
        With fewer than two distinct judged topics the standard error is nan and a CLT-type
        interval ``(-inf, inf)`` (the formula would give a misleading 0).
    """
    confidence = check_confidence(confidence)
    if interval is None:
        interval = "skew_t" if self_normalised else "t"
    if interval not in QUERY_INTERVAL_KINDS:
        raise ValueError(f"interval must be one of {', '.join(QUERY_INTERVAL_KINDS)}, got {interval!r}")
    values, propensities, query_weights = check_draw_arrays(
        values=values, propensities=propensities, query_weights=query_weights
    )
    n_draws = values.size
    n_distinct = _distinct_count(topics, n_judged, n_draws)
    weights = query_weights / propensities
    if self_normalised:
        total_weight = weights.sum()
        if total_weight <= 0:
            raise ValueError("query_weights: the drawn queries all have weight p(x) = 0")
        value = float(weights @ values / total_weight)
        terms = weights * (values - value) / weights.mean()
    else:
        value = float(np.mean(weights * values))
        terms = weights * values - value
    if n_distinct >= 2 and n_draws >= 2:
        sample_variance = float(np.sum(terms**2) / (n_draws - 1))
        standard_error = float(np.sqrt(sample_variance / n_draws))
        skewness = float(np.mean(terms**3) / sample_variance**1.5) if sample_variance > 0 else 0.0
    else:
        sample_variance = standard_error = skewness = float("nan")
    any_low, any_high = _any_n_bounds(values, weights, value_bounds, weight_bound, confidence, "hoeffding")
    if interval == "clt":
        low, high = clt_interval(value, standard_error, confidence)
    elif interval == "t":
        low, high = t_interval(value, standard_error, n_distinct - 1, confidence)
    elif interval == "skew_t":
        low, high = skew_t_interval(value, standard_error, skewness, n_draws, n_distinct - 1, confidence)
    elif interval == "hoeffding":
        low, high = any_low, any_high
    else:
        low, high = _any_n_bounds(values, weights, value_bounds, weight_bound, confidence, "bernstein")
    low, high = clip_interval(low, high, value_bounds)
    exact = interval in ("hoeffding", "bernstein")
    return Estimate(
        value=value,
        standard_error=standard_error,
        low=float(low),
        high=float(high),
        confidence=confidence,
        interval=interval,
        n_draws=n_draws,
        n_judged=n_distinct,
        budget_spent=float(budget_spent),
        reliable=bool(exact or (n_distinct >= reliable_from and np.isfinite(standard_error))),
        reliable_from=0 if exact else int(reliable_from),
        any_n_low=float(any_low),
        any_n_high=float(any_high),
    )


def _distinct_count(topics: np.ndarray | None, n_judged: int | None, n_draws: int) -> int:
    if topics is not None:
        topic_array = np.asarray(topics)
        if topic_array.shape != (n_draws,):
            raise ValueError(
                f"topics must have one entry per draw ({n_draws}), got shape {topic_array.shape}"
            )
        distinct = int(np.unique(topic_array).size)
        if n_judged is not None and int(n_judged) != distinct:
            raise ValueError(f"n_judged = {n_judged} but topics holds {distinct} distinct queries")
        return distinct
    if n_judged is None:
        return n_draws
    if not 1 <= int(n_judged) <= n_draws:
        raise ValueError(f"n_judged must lie between 1 and the number of draws ({n_draws}), got {n_judged}")
    return int(n_judged)


def _any_n_bounds(
    values: np.ndarray,
    weights: np.ndarray,
    value_bounds: tuple[float, float] | None,
    weight_bound: float | None,
    confidence: float,
    kind: str,
) -> tuple[float, float]:
    """Hoeffding or empirical-Bernstein interval around the plain mean of ``w_j L_j``."""
    if value_bounds is None:
        return float("-inf"), float("inf")
    lowest, highest = check_value_bounds(value_bounds)
    bound = float(weights.max()) if weight_bound is None else float(weight_bound)
    if np.isnan(bound) or bound <= 0:
        raise ValueError(f"weight_bound must be > 0, got {weight_bound!r}")
    if np.any(weights > bound * (1 + 1e-9)):
        raise ValueError(
            "weight_bound is smaller than p / q of a drawn query; it must bound p / q everywhere"
        )
    value_range = bound * (max(highest, 0.0) - min(lowest, 0.0))
    terms = weights * values
    centre, n = float(terms.mean()), terms.size
    if kind == "hoeffding":
        halfwidth = float(hoeffding_halfwidth(value_range, n, confidence))
    else:
        variance = float(terms.var(ddof=1)) if n > 1 else 0.0
        halfwidth = float(empirical_bernstein_halfwidth(variance, value_range, n, confidence))
    low, high = clip_interval(centre - halfwidth, centre + halfwidth, (lowest, highest))
    return float(low), float(high)


def unreachable_mass(
    target_weights: np.ndarray, reachable: np.ndarray, *, prior_labels: np.ndarray | None = None
) -> float:
    """Target mass that no stored draw could have reached.

    Schnabel et al. (2016), Section 3.4 (reusing judgements): an importance-sampling estimate
    for a new system is unbiased iff every unit it weights could have been drawn (``Q > 0``
    wherever ``P_new u > 0``). This returns ``sum |P_new| u~`` over units with ``Q = 0``.

    - item level: ``target_weights = P(x, z; S_new)`` of shape (m, n), ``reachable`` = the
      pairs with ``Q > 0``. With ``u`` in [0, 1] and no prior, the reuse estimate of ``U``
      is low by at most this mass.
    - query level: ``target_weights = p(x)`` of shape (m,), ``reachable`` = queries with
      ``q(x) > 0``; the self-normalised estimate then targets the metric averaged over the
      reachable queries only, and this is the share of ``p`` it leaves out.

    With adaptive sampling a unit is reachable if any of the distributions used gave it a
    positive probability: pass the union (``np.any(Q_t > 0 for t)``).

    Parameters
    ----------
    target_weights : ndarray, shape (m, n) or (m,)
        The new system's weights over the whole pool.
    reachable : ndarray of bool (or of propensities; ``> 0`` is taken), same shape
    prior_labels : ndarray, same shape, optional
        ``u~ = E[u | x, z; theta]`` in [0, 1]; default 1 (a worst-case bound).

    Returns
    -------
    float
        >= 0; 0 means reuse is unbiased.
    """
    target_weights = np.asarray(target_weights, dtype=float)
    reachable_array = np.asarray(reachable)
    if reachable_array.shape != target_weights.shape:
        raise ValueError(
            f"reachable {reachable_array.shape} and target_weights {target_weights.shape} differ"
        )
    if not np.all(np.isfinite(target_weights)):
        raise ValueError("target_weights must be finite")
    reachable_mask = reachable_array if reachable_array.dtype == bool else reachable_array > 0
    mass = np.abs(target_weights)
    if prior_labels is not None:
        prior = np.asarray(prior_labels, dtype=float)
        if prior.shape != target_weights.shape:
            raise ValueError(f"prior_labels {prior.shape} and target_weights {target_weights.shape} differ")
        if np.any(prior < 0) or np.any(prior > 1):
            raise ValueError("prior_labels must lie in [0, 1]")
        mass = mass * prior
    return float(mass[~reachable_mask].sum())


def check_draw_arrays(**arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Arrays over the draws: 1-D, equal non-zero lengths, finite; propensities in (0, 1]; p >= 0."""
    checked = {name: np.asarray(array, dtype=float) for name, array in arrays.items()}
    lengths = {name: array.shape for name, array in checked.items()}
    for name, array in checked.items():
        if array.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array over the draws, got shape {array.shape}")
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name} must be finite")
    if len(set(lengths.values())) != 1:
        described = ", ".join(f"{name} {shape[0]}" for name, shape in lengths.items())
        raise ValueError(f"one entry per draw is needed, but the lengths differ: {described}")
    if next(iter(checked.values())).size == 0:
        raise ValueError("at least one draw is needed")
    propensities = checked.get("propensities")
    if propensities is not None and (np.any(propensities <= 0) or np.any(propensities > 1)):
        bad = int(np.argmax((propensities <= 0) | (propensities > 1)))
        raise ValueError(
            f"propensities must lie in (0, 1]: draw {bad} has q = {propensities[bad]!r} "
            "(a drawn unit cannot have probability 0)"
        )
    query_weights = checked.get("query_weights")
    if query_weights is not None and np.any(query_weights < 0):
        raise ValueError("query_weights must be >= 0")
    return tuple(checked.values())
