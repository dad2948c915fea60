"""Item features and default priors for the label model (`estimation.label_models.ordinal`).

Sawade et al. (2013), Sect. 5.1, predict an item's grade from what the ranked systems say
about it. Per pool slot the features are, for each system ``s``: the rank discount
``1 / log2(1 + rank)`` (0 when ``s`` does not rank it) and the within-topic z-scored score
(0 when unranked); then the number of systems ranking it in their top K, ``log(1 + length)``
(0 when the length is unknown), and, when priors are given, the expected grade under the prior.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def label_feature_names(system_names: Sequence[str], with_priors: bool) -> list[str]:
    """Names of the columns `label_features` returns, in order."""
    names = []
    for name in system_names:
        names += [f"discount[{name}]", f"score_z[{name}]"]
    names += ["systems_in_top_k", "log_length"]
    if with_priors:
        names.append("prior_expected_grade")
    return names


def label_features(
    rankings: np.ndarray,
    scores: np.ndarray,
    lengths: np.ndarray,
    slot_used: np.ndarray,
    cutoff: int,
    priors: np.ndarray | None = None,
) -> np.ndarray:
    """The feature vector of every slot (module docstring; Sawade et al. 2013, Sect. 5.1).

    Parameters
    ----------
    rankings : ndarray of int, shape (S, m, D)
        Slot per position of each system, -1 = empty.
    scores : ndarray, shape (S, m, n)
        Each system's score of each slot, nan where it does not rank it.
    lengths : ndarray, shape (m, n)
        Document lengths, nan where unknown.
    slot_used : ndarray of bool, shape (m, n)
        Which slots hold an item; every feature is 0 on the others.
    cutoff : int
        K: the top K counted by ``systems_in_top_k``.
    priors : ndarray, shape (m, n, G), optional
        Prior grade probabilities per slot, nan rows where none.

    Returns
    -------
    ndarray, shape (m, n, d)
        ``d = 2 S + 2`` (+ 1 with priors), columns as `label_feature_names`.
    """
    n_systems, m, depth = rankings.shape
    n = slot_used.shape[1]
    columns: list[np.ndarray] = []
    in_top_k = np.zeros((m, n))
    rows = np.broadcast_to(np.arange(m)[:, None], (m, depth))
    position_discount = 1.0 / np.log2(np.arange(depth) + 2.0)
    for s in range(n_systems):
        ranking = rankings[s]
        filled = ranking >= 0
        discount = np.zeros((m, n))
        discount[rows[filled], ranking[filled]] = np.broadcast_to(position_discount, (m, depth))[filled]
        top = np.zeros((m, n))
        top_filled = filled[:, :cutoff]
        top[rows[:, :cutoff][top_filled], ranking[:, :cutoff][top_filled]] = 1.0
        in_top_k += top
        columns += [discount, _within_topic_z_scores(scores[s])]
    columns += [in_top_k, np.where(np.isfinite(lengths), np.log1p(np.nan_to_num(lengths)), 0.0)]
    if priors is not None:
        grades = np.arange(priors.shape[2], dtype=float)
        expected = priors @ grades
        columns.append(np.where(np.isfinite(expected), expected, 0.0))
    features = np.stack(columns, axis=-1)
    return np.where(slot_used[:, :, None], features, 0.0)


def _within_topic_z_scores(scores: np.ndarray) -> np.ndarray:
    """(score - topic mean) / topic standard deviation over the ranked slots, shape (m, n);
    0 where unranked or where the topic's scores do not spread."""
    ranked = np.isfinite(scores)
    count = np.maximum(ranked.sum(axis=1, keepdims=True), 1)
    mean = np.where(ranked, scores, 0.0).sum(axis=1, keepdims=True) / count
    spread = np.sqrt(np.where(ranked, (scores - mean) ** 2, 0.0).sum(axis=1, keepdims=True) / count)
    return np.where(
        ranked & (spread > 0), (np.nan_to_num(scores) - mean) / np.where(spread > 0, spread, 1.0), 0.0
    )


def default_item_priors(priors: np.ndarray | None, slot_used: np.ndarray, n_grades: int) -> np.ndarray:
    """Each slot's default prior over the grades, shape (m, n, G): its own prior where one is
    given (a finite row of `priors`), else uniform."""
    uniform = np.full(slot_used.shape + (n_grades,), 1.0 / n_grades)
    if priors is None:
        return uniform
    known = np.all(np.isfinite(priors), axis=-1, keepdims=True)
    return np.where(known, priors, uniform)
