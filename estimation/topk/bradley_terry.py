"""Merging several assessors' pairwise preferences into one order: Bradley-Terry with ties.

The model is Davidson's (1970) extension of Bradley-Terry (1952) to ties: with strengths
``pi_i = exp(theta_i)`` and a tie parameter ``nu > 0``,

    P(i > j) = pi_i / D,   P(j > i) = pi_j / D,   P(i ~ j) = nu sqrt(pi_i pi_j) / D,
    D = pi_i + pi_j + nu sqrt(pi_i pi_j).

A tie is evidence that two documents are close, not half a win for each; ``nu`` is fitted
(``nu = 1`` gives a tie probability of 1/3 between equal documents). Independent normal
priors ``theta_i ~ N(0, prior_variance)`` and ``log nu ~ N(0, prior_variance)`` make the
maximum a posteriori estimate finite and unique for every input: a document that won
every comparison (perfect separation), documents in separate components of the
comparison graph (their relative scale then comes from the prior only), and documents
never compared (score 0). The negative log posterior is convex (each log-likelihood term
is linear minus a log-sum-exp of linear functions) and is minimised with L-BFGS on its
exact gradient.

Why not crowd-kit (Toloka): it installs pandas, scikit-learn, nltk and transformers into a
core that otherwise needs numpy and scipy only; its ``BradleyTerry`` (Hunter's MM
algorithm) takes a winner per comparison, so it has no ties, and needs a strongly
connected comparison graph, which a top-k heap does not produce (the rest documents
lose once and are never compared again).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from estimation.learned_dcg.preferences import Preference, as_preferences, canonical_preference

DEFAULT_PRIOR_VARIANCE = 10.0
_OUTCOME_CODE = {"left": 0, "right": 1, "tie": 2}


@dataclass(frozen=True, eq=False)
class BradleyTerryFit:
    """Fitted log-strengths.

    Attributes
    ----------
    theta : ndarray, shape (n_items,)
        log pi_i, in the order of the items given to `fit_bradley_terry`.
    tie_parameter : float
        Davidson's nu.
    converged : bool
        Whether L-BFGS met its tolerance.
    """

    theta: np.ndarray
    tie_parameter: float
    converged: bool

    def probabilities(self, first: int, second: int) -> tuple[float, float, float]:
        """(P(first > second), P(tie), P(second > first)) under the fitted model."""
        log_terms = np.array(
            [
                self.theta[first],
                np.log(self.tie_parameter) + (self.theta[first] + self.theta[second]) / 2,
                self.theta[second],
            ]
        )
        shares = np.exp(log_terms - logsumexp(log_terms))
        return float(shares[0]), float(shares[1]), float(shares[2])


def fit_bradley_terry(
    first: np.ndarray,
    second: np.ndarray,
    outcome: np.ndarray,
    n_items: int,
    *,
    prior_variance: float = DEFAULT_PRIOR_VARIANCE,
) -> BradleyTerryFit:
    """MAP fit of Davidson's Bradley-Terry model with ties (see the module docstring).

    Parameters
    ----------
    first, second : array of int, shape (c,)
        Item indices of each comparison, in ``0..n_items-1``, different from each other.
    outcome : array, shape (c,)
        ``"left"`` (first more relevant), ``"tie"`` or ``"right"``, per comparison.
    n_items : int
    prior_variance : float
        Variance of the normal priors on theta and on log nu; larger is weaker.

    Raises
    ------
    ValueError
        Mismatched lengths, an index out of range, an item compared with itself, an
        unknown outcome, or a non-positive prior variance.
    """
    first = np.asarray(first)
    second = np.asarray(second)
    outcome = np.asarray(outcome)
    if not (first.shape == second.shape == outcome.shape) or first.ndim != 1:
        raise ValueError("first, second and outcome must be 1-D arrays of the same length")
    if n_items < 1:
        raise ValueError(f"n_items must be >= 1, got {n_items}")
    if not np.isfinite(prior_variance) or prior_variance <= 0:
        raise ValueError(f"prior_variance must be > 0, got {prior_variance}")
    if first.size:
        if first.dtype.kind not in "iu" or second.dtype.kind not in "iu":
            raise ValueError("first and second must be integer item indices")
        if min(first.min(), second.min()) < 0 or max(first.max(), second.max()) >= n_items:
            raise ValueError(f"an item index is outside 0..{n_items - 1}")
        if np.any(first == second):
            raise ValueError("an item is compared with itself")
    try:
        codes = np.array([_OUTCOME_CODE[str(value)] for value in outcome], dtype=np.int64)
    except KeyError as unknown:
        raise ValueError(f"outcome must be 'left', 'tie' or 'right', got {unknown}") from None

    # counts[c, o]: how often pair c = (i, j), i < j, had outcome o (i wins, j wins, tie).
    low = np.minimum(first, second)
    high = np.maximum(first, second)
    swapped = first > second
    codes = np.where(swapped & (codes < 2), 1 - codes, codes)
    pairs, pair_of = np.unique(np.stack([low, high], axis=1), axis=0, return_inverse=True)
    pair_of = pair_of.reshape(-1)
    counts = np.zeros((len(pairs), 3))
    np.add.at(counts, (pair_of, codes), 1.0)
    precision = 1.0 / prior_variance

    def objective(parameters: np.ndarray) -> tuple[float, np.ndarray]:
        theta, log_nu = parameters[:-1], parameters[-1]
        a, b = theta[pairs[:, 0]], theta[pairs[:, 1]]
        log_terms = np.stack([a, b, log_nu + (a + b) / 2], axis=1)
        log_norm = logsumexp(log_terms, axis=1, keepdims=True)
        shares = np.exp(log_terms - log_norm)
        totals = counts.sum(axis=1, keepdims=True)
        log_likelihood = float((counts * (log_terms - log_norm)).sum())
        # d/dx of sum_o counts_o (term_o - log_norm): observed minus expected, per term.
        residual = counts - totals * shares
        gradient_a = residual[:, 0] + residual[:, 2] / 2
        gradient_b = residual[:, 1] + residual[:, 2] / 2
        gradient_theta = np.bincount(pairs[:, 0], gradient_a, n_items) + np.bincount(
            pairs[:, 1], gradient_b, n_items
        )
        gradient_log_nu = residual[:, 2].sum()
        penalty = 0.5 * precision * float(parameters @ parameters)
        gradient = -np.append(gradient_theta, gradient_log_nu) + precision * parameters
        return -log_likelihood + penalty, gradient

    if len(pairs) == 0:
        return BradleyTerryFit(np.zeros(n_items), 1.0, True)
    from scipy.optimize import minimize  # on first fit: estimation/distributions.py says why

    solution = minimize(
        objective, np.zeros(n_items + 1), jac=True, method="L-BFGS-B", options={"gtol": 1e-9, "maxiter": 2000}
    )
    return BradleyTerryFit(solution.x[:-1].copy(), float(np.exp(solution.x[-1])), bool(solution.success))


@dataclass(frozen=True)
class MergedOrder:
    """Several assessors' preferences on one topic merged into one order.

    Attributes
    ----------
    topic : str
    order : tuple of str
        Best first (fitted strength descending; equal strengths keep the input order).
    scores : tuple of float
        log-strength theta of each document of `order`, aligned with it.
    tie_parameter : float
        Davidson's nu.
    n_comparisons : int
    assessors : tuple of str
    """

    topic: str
    order: tuple[str, ...]
    scores: tuple[float, ...]
    tie_parameter: float
    n_comparisons: int
    assessors: tuple[str, ...]


def merge_preferences(
    preferences: Iterable[Preference | Sequence[str]],
    *,
    documents: Sequence[str] | None = None,
    prior_variance: float = DEFAULT_PRIOR_VARIANCE,
) -> MergedOrder:
    """One order from every assessor's pairwise answers on a topic (Davidson-Bradley-Terry).

    Every answer counts once (an assessor who answered a pair twice counts twice).

    Parameters
    ----------
    preferences : iterable of Preference or (topic, first, second, outcome, assessor)
        All of one topic.
    documents : sequence of str, optional
        Every document of the topic, so the never-compared ones get a score (0) too;
        by default the documents that appear in the preferences, in order of appearance.
    prior_variance : float

    Raises
    ------
    ValueError
        No preferences, more than one topic, or a compared document missing from
        `documents`.
    """
    rows = [canonical_preference(preference) for preference in as_preferences(preferences)]
    if not rows:
        raise ValueError("merge_preferences: no preferences")
    topics = {row.topic for row in rows}
    if len(topics) > 1:
        raise ValueError(f"merge_preferences works on one topic at a time, got {len(topics)}")
    if documents is None:
        documents = list(dict.fromkeys(docno for row in rows for docno in (row.first, row.second)))
    if len(set(documents)) != len(documents):
        raise ValueError("documents lists a document twice")
    index = {docno: i for i, docno in enumerate(documents)}
    missing = [docno for row in rows for docno in (row.first, row.second) if docno not in index]
    if missing:
        raise ValueError(f"document {missing[0]!r} is compared but not among documents")
    fit = fit_bradley_terry(
        np.array([index[row.first] for row in rows]),
        np.array([index[row.second] for row in rows]),
        np.array([row.outcome for row in rows]),
        len(documents),
        prior_variance=prior_variance,
    )
    ranked = sorted(range(len(documents)), key=lambda i: -fit.theta[i])
    return MergedOrder(
        topic=rows[0].topic,
        order=tuple(documents[i] for i in ranked),
        scores=tuple(float(fit.theta[i]) for i in ranked),
        tie_parameter=fit.tie_parameter,
        n_comparisons=len(rows),
        assessors=tuple(dict.fromkeys(row.assessor for row in rows)),
    )


__all__ = [
    "DEFAULT_PRIOR_VARIANCE",
    "BradleyTerryFit",
    "MergedOrder",
    "fit_bradley_terry",
    "merge_preferences",
]
