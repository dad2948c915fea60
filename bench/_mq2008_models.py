"""Rankers and label-model inputs for the MQ2008 reproduction (fitted on one LETOR subset).

Two linear rankers over the 46 LETOR features (standardised on the fitting subset):

- ``ridge``: pointwise ridge regression of the grade on the features (closed form);
- ``pairwise``: a pairwise logistic (linear RankNet) ranker, L2-regularised, fitted on every
  within-query pair of documents with different grades.

Documents are ordered by score, ties broken by docno descending (trec_eval's rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from letor import LetorSet
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from estimation.label_models.ordinal import OrdinalModel, fit_ordinal_model


@dataclass(frozen=True, eq=False)
class Standardizer:
    """z-scores with the fitting subset's mean and standard deviation (constant columns: 1)."""

    center: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, features: np.ndarray) -> Standardizer:
        scale = features.std(axis=0)
        return cls(center=features.mean(axis=0), scale=np.where(scale > 1e-12, scale, 1.0))

    def __call__(self, features: np.ndarray) -> np.ndarray:
        return (features - self.center) / self.scale


@dataclass(frozen=True, eq=False)
class LinearRanker:
    """score = weights . standardised features."""

    name: str
    weights: np.ndarray
    standardizer: Standardizer

    def scores(self, features: np.ndarray) -> np.ndarray:
        return self.standardizer(features) @ self.weights


def fit_ridge_ranker(data: LetorSet, standardizer: Standardizer, alpha: float = 10.0) -> LinearRanker:
    """Least squares of the grade on the features with penalty ``alpha ||w||^2`` (intercept free)."""
    design = np.c_[standardizer(data.features), np.ones(data.grades.size)]
    penalty = alpha * np.eye(design.shape[1])
    penalty[-1, -1] = 0.0
    coefficients = np.linalg.solve(design.T @ design + penalty, design.T @ data.grades.astype(float))
    return LinearRanker("ridge", coefficients[:-1], standardizer)


def fit_pairwise_ranker(data: LetorSet, standardizer: Standardizer, l2: float = 1.0) -> LinearRanker:
    """Minimise ``sum log(1 + exp(-w.(f_i - f_j))) + l2/2 ||w||^2`` over pairs with y_i > y_j."""
    features = standardizer(data.features)
    better, worse = [], []
    for rows in data.query_slices():
        grades = data.grades[rows]
        high, low = np.nonzero(grades[:, None] > grades[None, :])
        better.append(high + rows.start)
        worse.append(low + rows.start)
    differences = features[np.concatenate(better)] - features[np.concatenate(worse)]

    def objective(weights: np.ndarray) -> tuple[float, np.ndarray]:
        margin = differences @ weights
        value = -float(log_expit(margin).sum()) + 0.5 * l2 * float(weights @ weights)
        return value, -(differences.T @ expit(-margin)) + l2 * weights

    result = minimize(objective, np.zeros(features.shape[1]), jac=True, method="L-BFGS-B")
    return LinearRanker("pairwise", result.x, standardizer)


def rank_rows(data: LetorSet, scores: np.ndarray) -> list[np.ndarray]:
    """Per query: row indices (global) best first; score descending, then docno descending."""
    ranked = []
    for rows in data.query_slices():
        local = sorted(
            range(rows.stop - rows.start),
            key=lambda i: (scores[rows.start + i], data.docnos[rows.start + i]),
            reverse=True,
        )
        ranked.append(np.asarray(local, dtype=np.int64) + rows.start)
    return ranked


def label_model_features(
    data: LetorSet, standardizer: Standardizer, rankers: list[LinearRanker]
) -> np.ndarray:
    """What the label model sees for each document, shape (N, 46 + 1 + 2 * len(rankers)).

    The standardised LETOR features; log of the number of candidate documents of the query
    (LETOR 4.0 features are min-max normalised within each query, so this is the only
    query-level signal); and per ranker its score and the DCG discount ``1 / log2(1 + rank)``
    of the document's rank. No label of the pool is used.
    """
    counts = np.bincount(data.query_of_row)[data.query_of_row]
    columns = [standardizer(data.features), np.log(counts)[:, None]]
    for ranker in rankers:
        scores = ranker.scores(data.features)
        discount = np.empty(scores.size)
        for ranked in rank_rows(data, scores):
            discount[ranked] = 1.0 / np.log2(np.arange(2, ranked.size + 2))
        columns += [scores[:, None], discount[:, None]]
    return np.hstack(columns)


def fit_label_model(
    features: np.ndarray,
    data: LetorSet,
    n_grades: int,
    l2_grid: tuple[float, ...],
    rng: np.random.Generator,
) -> tuple[OrdinalModel, float, dict[float, float]]:
    """Choose l2 on a random half of the fitting queries (validation log-likelihood), refit on all.

    Sawade et al. (Sect. 5.1) tune on half of the training fold in the same way.

    Returns
    -------
    (model, chosen l2, {l2: mean validation log-likelihood per document})
    """
    validation_queries = rng.permutation(data.n_queries)[: data.n_queries // 2]
    validation = np.isin(data.query_of_row, validation_queries)
    scores = {}
    for l2 in l2_grid:
        model = fit_ordinal_model(features[~validation], data.grades[~validation], n_grades, l2=l2)
        probabilities = model.predict_proba(features[validation])
        picked = probabilities[np.arange(validation.sum()), data.grades[validation]]
        scores[l2] = float(np.mean(np.log(np.maximum(picked, 1e-300))))
    chosen = max(scores, key=scores.get)
    return fit_ordinal_model(features, data.grades, n_grades, l2=chosen), chosen, scores
