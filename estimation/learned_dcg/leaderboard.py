"""The decision a learned DCG is for: does it rank the systems differently from standard DCG?

`compare_leaderboards` ranks systems by their mean utility over topics under a learned weight
table ``W`` (`estimation.learned_dcg.fit`) and under standard DCG@K (gain ``2^y - 1``, discount
``1/log2(1+k)``), with Kendall's τ between the two orders and the system pairs whose order
flips. `disagreeing_answers` counts the side-by-side answers on which the two utilities
predict different winners, and which of them the assessor sided with.

The learned utility of a list is ``Σ_k T(W)[k, y_k]`` with ``T(W) = W - W[:, :1]``: it equals
``wᵀs`` up to a constant for full lists (no comparison changes) and, like DCG, gives grade 0
and an empty position (a run shorter than K) nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.stats import kendalltau, rankdata

from estimation.learned_dcg.lists import standard_weights, transformed_weights, utilities

__all__ = [
    "AnswerDisagreement",
    "Flip",
    "LeaderboardComparison",
    "compare_leaderboards",
    "disagreeing_answers",
]


@dataclass(frozen=True)
class Flip:
    """Two systems ordered one way by learned DCG and the other way by standard DCG.

    Differences are ``first - second`` (mean utility), one under each metric; their signs
    differ (or exactly one is 0).
    """

    first: str
    second: str
    learned_difference: float
    standard_difference: float


@dataclass(frozen=True)
class LeaderboardComparison:
    """Mean utilities per system (in the order given), ranks (1 = best; ties share the best
    rank), Kendall's τ-b between the two orders (nan with fewer than two systems or a constant
    score) and the flipped pairs, the largest learned difference first."""

    systems: tuple[str, ...]
    learned: np.ndarray
    standard: np.ndarray
    rank_learned: np.ndarray
    rank_standard: np.ndarray
    kendall_tau: float
    flips: tuple[Flip, ...]


def _mean_utilities(table: np.ndarray, lists: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.array([float(utilities(table, grades).mean()) for grades in lists.values()])


def compare_leaderboards(weights: np.ndarray, lists: Mapping[str, np.ndarray]) -> LeaderboardComparison:
    """Leaderboards of the systems under learned and standard DCG@K.

    Parameters
    ----------
    weights : array, shape (K, L)
        Learned W (only ``T(W)`` matters).
    lists : mapping of system name -> array of int, shape (n_topics_s, K)
        Grades of each system's top K per topic (``-1`` past the end of a short list); a
        system's score is its mean over its own topics (every system needs at least one).

    Returns
    -------
    LeaderboardComparison
    """
    table = transformed_weights(np.asarray(weights, dtype=float))
    k, n_grades = table.shape
    if not lists:
        raise ValueError("no systems to rank")
    for name, grades in lists.items():
        grades = np.asarray(grades)
        if grades.ndim != 2 or grades.shape[0] == 0 or grades.shape[1] != k:
            raise ValueError(f"system {name!r}: need an (n_topics >= 1, {k}) grade array, got {grades.shape}")
    learned = _mean_utilities(table, lists)
    standard = _mean_utilities(standard_weights(k, n_grades, "exp"), lists)
    systems = tuple(lists)
    tau = float("nan")
    if len(systems) >= 2 and np.ptp(learned) > 0 and np.ptp(standard) > 0:
        tau = float(kendalltau(learned, standard).statistic)
    flips = [
        Flip(systems[i], systems[j], float(learned[i] - learned[j]), float(standard[i] - standard[j]))
        for i in range(len(systems))
        for j in range(i + 1, len(systems))
        if np.sign(learned[i] - learned[j]) != np.sign(standard[i] - standard[j])
    ]
    flips.sort(key=lambda flip: -abs(flip.learned_difference))
    return LeaderboardComparison(
        systems=systems,
        learned=learned,
        standard=standard,
        rank_learned=rankdata(-learned, method="min").astype(int),
        rank_standard=rankdata(-standard, method="min").astype(int),
        kendall_tau=tau,
        flips=tuple(flips),
    )


@dataclass(frozen=True)
class AnswerDisagreement:
    """Answers on which learned and standard DCG predict different winners (`count`; one may
    predict a tie), and how many of those had a direction that the learned / standard one got
    right."""

    count: int
    learned_right: int
    standard_right: int


def disagreeing_answers(
    weights: np.ndarray, left: np.ndarray, right: np.ndarray, preference: np.ndarray
) -> AnswerDisagreement:
    """Compare learned and standard DCG@K on answered pairs.

    ``left``, ``right`` (n, K) grades; ``preference`` (n,) -2..2, negative = left better (the
    `estimation.learned_dcg.fit.PreferenceData` convention).
    """
    table = transformed_weights(np.asarray(weights, dtype=float))
    k, n_grades = table.shape
    preference = np.asarray(preference)
    if len(preference) == 0:
        return AnswerDisagreement(0, 0, 0)
    standard = standard_weights(k, n_grades, "exp")
    learned_sign = np.sign(utilities(table, left) - utilities(table, right))
    standard_sign = np.sign(utilities(standard, left) - utilities(standard, right))
    wanted = -np.sign(preference)  # left better: u(left) - u(right) > 0
    differ = learned_sign != standard_sign
    directed = differ & (wanted != 0)
    return AnswerDisagreement(
        count=int(differ.sum()),
        learned_right=int(np.sum(directed & (learned_sign == wanted))),
        standard_right=int(np.sum(directed & (standard_sign == wanted))),
    )
