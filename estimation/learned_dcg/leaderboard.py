"""The decision a learned DCG is for: does it rank the systems differently from standard DCG?

`compare_leaderboards` ranks systems by their mean score over topics under three metrics:

- **learned DCG**: the rank-1 gains ``g`` and discounts ``c`` of ``T(W)`` (Zhou et al. 2014, §4.3
  end), ``Σ_k c_k g_{y_k}``: the DCG a campaign measures when it takes the learned gains and
  discounts (the headline; its order flips against standard DCG are listed);
- **learned utility**: the full table, ``Σ_k T(W)[k, y_k]`` with ``T(W) = W - W[:, :1]``. It is
  what the fit scores answers with, but not a DCG: when ``σ₂/σ₁`` is not small a grade's worth
  depends on the position in a way no gain x discount reproduces, and no campaign can apply it;
- **standard DCG@K** (gain ``2^y - 1``, discount ``1/log2(1+k)``),

with Kendall's τ of each learned order against the standard one. `disagreeing_answers` counts
the side-by-side answers on which a learned table and standard DCG predict different winners,
and which of them the assessor sided with.

Like DCG, every table gives grade 0 and an empty position (a run shorter than K) nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from estimation.learned_dcg.lists import rank_one, standard_weights, transformed_weights, utilities

__all__ = [
    "AnswerDisagreement",
    "Flip",
    "LeaderboardComparison",
    "compare_leaderboards",
    "dcg_table",
    "disagreeing_answers",
]


@dataclass(frozen=True)
class Flip:
    """Two systems ordered one way by a learned metric and the other way by standard DCG.

    Differences are ``first - second`` (mean score), one under each metric; their signs differ
    (or exactly one is 0). In `LeaderboardComparison.flips` the learned metric is the learned
    DCG, in `LeaderboardComparison.utility_flips` the learned utility.
    """

    first: str
    second: str
    learned_difference: float
    standard_difference: float


@dataclass(frozen=True)
class LeaderboardComparison:
    """Mean scores per system (in the order given) under learned DCG (``learned``), the learned
    utility (``utility``) and standard DCG@K (``standard``); ranks (1 = best; ties share the
    best rank); Kendall's τ-b of each learned order against the standard one (nan with fewer
    than two systems or a constant score); the flipped pairs, the largest learned difference
    first; and the gains and discounts the learned DCG used."""

    systems: tuple[str, ...]
    learned: np.ndarray
    utility: np.ndarray
    standard: np.ndarray
    rank_learned: np.ndarray
    rank_utility: np.ndarray
    rank_standard: np.ndarray
    kendall_tau: float
    kendall_tau_utility: float
    flips: tuple[Flip, ...]
    utility_flips: tuple[Flip, ...]
    gains: np.ndarray
    discounts: np.ndarray


def dcg_table(gains: ArrayLike, discounts: ArrayLike) -> np.ndarray:
    """``W = c ⊗ g`` (shape (K, L)): the utility table of DCG with these gains and discounts."""
    gains = np.asarray(gains, dtype=float)
    discounts = np.asarray(discounts, dtype=float)
    if gains.ndim != 1 or discounts.ndim != 1 or gains.size < 2 or discounts.size < 1:
        raise ValueError(
            f"need 1-D gains (L >= 2) and discounts (K >= 1), got shapes {gains.shape} and {discounts.shape}"
        )
    return np.outer(discounts, gains)


def _mean_scores(table: np.ndarray, lists: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.array([float(utilities(table, grades).mean()) for grades in lists.values()])


def _tau(first: np.ndarray, second: np.ndarray) -> float:
    if first.size < 2 or np.ptp(first) == 0 or np.ptp(second) == 0:
        return float("nan")
    from scipy.stats import kendalltau  # on first use: estimation/distributions.py says why

    return float(kendalltau(first, second).statistic)


def _flips(systems: tuple[str, ...], learned: np.ndarray, standard: np.ndarray) -> tuple[Flip, ...]:
    flips = [
        Flip(systems[i], systems[j], float(learned[i] - learned[j]), float(standard[i] - standard[j]))
        for i in range(len(systems))
        for j in range(i + 1, len(systems))
        if np.sign(learned[i] - learned[j]) != np.sign(standard[i] - standard[j])
    ]
    flips.sort(key=lambda flip: -abs(flip.learned_difference))
    return tuple(flips)


def _ranks(scores: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata  # on first use: estimation/distributions.py says why

    return rankdata(-scores, method="min").astype(int)


def compare_leaderboards(
    weights: np.ndarray,
    lists: Mapping[str, np.ndarray],
    *,
    gains: np.ndarray | None = None,
    discounts: np.ndarray | None = None,
) -> LeaderboardComparison:
    """Leaderboards of the systems under learned DCG, the learned utility and standard DCG@K.

    Parameters
    ----------
    weights : array, shape (K, L)
        Learned W (only ``T(W)`` matters).
    lists : mapping of system name -> array of int, shape (n_topics_s, K)
        Grades of each system's top K per topic (``-1`` past the end of a short list); a
        system's score is its mean over its own topics (every system needs at least one).
    gains, discounts : array, shape (L,) and (K,), optional
        The learned DCG's gains and discounts, e.g. rounded as a campaign stores them; by
        default `rank_one` of ``T(W)`` (both or neither).

    Returns
    -------
    LeaderboardComparison

    Raises
    ------
    ValueError
        No system, a grade array of the wrong shape, only one of gains and discounts, or
        gains and discounts that do not match W's shape.
    """
    table = transformed_weights(np.asarray(weights, dtype=float))
    k, n_grades = table.shape
    if not lists:
        raise ValueError("no systems to rank")
    for name, grades in lists.items():
        grades = np.asarray(grades)
        if grades.ndim != 2 or grades.shape[0] == 0 or grades.shape[1] != k:
            raise ValueError(f"system {name!r}: need an (n_topics >= 1, {k}) grade array, got {grades.shape}")
    if (gains is None) != (discounts is None):
        raise ValueError("give both gains and discounts, or neither (then the rank-1 form of T(W))")
    if gains is None or discounts is None:
        form = rank_one(table)
        gains, discounts = form.gains, form.discounts
    learned_table = dcg_table(gains, discounts)
    if learned_table.shape != table.shape:
        raise ValueError(f"gains and discounts make a {learned_table.shape} table, W is {table.shape}")
    learned = _mean_scores(learned_table, lists)
    utility = _mean_scores(table, lists)
    standard = _mean_scores(standard_weights(k, n_grades, "exp"), lists)
    systems = tuple(lists)
    return LeaderboardComparison(
        systems=systems,
        learned=learned,
        utility=utility,
        standard=standard,
        rank_learned=_ranks(learned),
        rank_utility=_ranks(utility),
        rank_standard=_ranks(standard),
        kendall_tau=_tau(learned, standard),
        kendall_tau_utility=_tau(utility, standard),
        flips=_flips(systems, learned, standard),
        utility_flips=_flips(systems, utility, standard),
        gains=np.asarray(gains, dtype=float),
        discounts=np.asarray(discounts, dtype=float),
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
    """Compare a learned table and standard DCG@K on answered pairs.

    ``weights`` (K, L): the learned table, `dcg_table` of the learned gains and discounts (the
    learned DCG) or W (the learned utility; only ``T(W)`` matters). ``left``, ``right`` (n, K)
    grades; ``preference`` (n,) -2..2, negative = left better (the
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
