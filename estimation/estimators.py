"""Importance-weighted estimators of ranking performance: the query level, and what is shared.

Two sampling units:

- *query level* (Sawade et al. 2013, Algorithm 1), here: draw queries ``x_j ~ q_j``, label
  every item the system(s) rank for them, estimate with the self-normalised
  importance-weighted mean. Works for any metric (DCG, nDCG, ERR) and for the difference of
  two systems.
- *item level* (Schnabel et al. 2016), in `estimation.item_estimators`: draw (query, item)
  pairs ``(x_j, z_j) ~ Q``, label one item each, estimate a *linear* metric (DCG, P@k) with
  the plain importance-weighted mean, which is exactly unbiased.

The functions take arrays over the draws, never a pool: whoever drew the sample records each
draw's own propensity (the distribution in force *at that draw*, which may have changed
since: adaptive sampling), and passes it in. Old propensities are never recomputed.
"""

from __future__ import annotations

import numpy as np

from estimation.intervals import check_confidence, clt_interval
from estimation.results import Estimate


def query_level_estimate(
    values: np.ndarray,
    propensities: np.ndarray,
    query_weights: np.ndarray,
    *,
    confidence: float = 0.95,
    self_normalised: bool = True,
    n_judged: int | None = None,
    budget_spent: float = float("nan"),
) -> Estimate:
    """Importance-weighted estimate of ``R = sum_x p(x) L(x)`` from queries drawn with replacement.

    Sawade et al. (2013), Section 4 and Algorithm 1: weights ``w_j = p(x_j) / q_j(x_j)``,

    - self-normalised (default): ``R_hat = sum_j w_j L_j / sum_j w_j``, with the delta-method
      variance ``Var_hat = sum_j w_j^2 (L_j - R_hat)^2 / (sum_j w_j)^2``. Consistent, with a
      bias of order 1/n (a ratio estimator); invariant to rescaling ``p``.
    - plain (``self_normalised=False``): ``R_hat = (1/n) sum_j w_j L_j``, exactly unbiased for
      every n when ``p`` sums to 1 over the pool (also under adaptive ``q_j``: each term has
      conditional expectation R), with ``Var_hat = s^2 / n``, ``s^2`` the sample variance of
      ``w_j L_j``.

    For a comparison pass ``values = delta_j = L_1(x_j) - L_2(x_j)``: the estimate is then of
    ``Delta``. The interval is the CLT interval ``R_hat ± z_{alpha/2} sqrt(Var_hat)``.

    Parameters
    ----------
    values : ndarray, shape (n_draws,)
        ``L_j`` (or ``delta_j``) of each drawn query; a query drawn twice appears twice.
    propensities : ndarray, shape (n_draws,)
        ``q_j(x_j)``, the probability with which draw j picked its query, in (0, 1].
    query_weights : ndarray, shape (n_draws,)
        ``p(x_j)``, the weight of the drawn query in the target quantity, >= 0.
    confidence : float
        Level of the CLT interval.
    self_normalised : bool
        See above.
    n_judged : int, optional
        Distinct queries labelled; defaults to ``n_draws`` (pass the real count when queries
        repeat).
    budget_spent : float
        Cost units spent, carried into the result.

    Returns
    -------
    Estimate
        ``interval="clt"``. With a single draw the variance cannot be estimated: the standard
        error is nan and the interval ``(-inf, inf)`` (the delta-method formula would give a
        misleading 0).
    """
    confidence = check_confidence(confidence)
    values, propensities, query_weights = check_draw_arrays(
        values=values, propensities=propensities, query_weights=query_weights
    )
    weights = query_weights / propensities
    n_draws = values.size
    if self_normalised:
        total_weight = weights.sum()
        if total_weight <= 0:
            raise ValueError("query_weights: the drawn queries all have weight p(x) = 0")
        value = float(weights @ values / total_weight)
        variance = float(np.sum(weights**2 * (values - value) ** 2) / total_weight**2)
    else:
        terms = weights * values
        value = float(terms.mean())
        variance = float(terms.var(ddof=1) / n_draws) if n_draws > 1 else float("nan")
    standard_error = float(np.sqrt(variance)) if n_draws > 1 else float("nan")
    low, high = clt_interval(value, standard_error, confidence)
    return Estimate(
        value=value,
        standard_error=standard_error,
        low=float(low),
        high=float(high),
        confidence=confidence,
        interval="clt",
        n_draws=n_draws,
        n_judged=n_draws if n_judged is None else int(n_judged),
        budget_spent=float(budget_spent),
    )


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
