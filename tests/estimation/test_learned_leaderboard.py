"""Leaderboards under learned and standard DCG: hand-worked toy lists, Kendall's tau, flips, and
the answers on which the two predict different winners."""

from __future__ import annotations

import math

import numpy as np
import pytest

from estimation.learned_dcg.leaderboard import compare_leaderboards, disagreeing_answers
from estimation.learned_dcg.lists import standard_weights

D2 = 1 / math.log2(3)  # standard discount of position 2
# A learned table (K = 2, grades 0..2) that rates grade 1 as high as grade 2 (gains [0, 1, 1])
# and does not discount position 2; W[:, 0] = 5 is an offset T(W) removes.
FLAT = np.array([[5.0, 6.0, 6.0], [5.0, 6.0, 6.0]])


def test_it_scores_systems_by_mean_utility_under_both_metrics() -> None:
    # "fair" lists two grade-1 documents, "sharp" one grade-2 document then grade 0.
    lists = {"fair": np.array([[1, 1], [1, 1]]), "sharp": np.array([[2, 0], [2, -1]])}
    board = compare_leaderboards(FLAT, lists)
    assert board.systems == ("fair", "sharp")
    # learned: fair 1 + 1 = 2, sharp 1 (+ 0 for grade 0 and for the empty position)
    np.testing.assert_allclose(board.learned, [2.0, 1.0])
    # standard DCG@2, gain 2^y - 1: fair 1 + 1/log2(3) = 1.631, sharp 3
    np.testing.assert_allclose(board.standard, [1 + D2, 3.0])
    assert list(board.rank_learned) == [1, 2] and list(board.rank_standard) == [2, 1]
    assert board.kendall_tau == pytest.approx(-1.0)
    assert len(board.flips) == 1
    flip = board.flips[0]
    assert (flip.first, flip.second) == ("fair", "sharp")
    assert flip.learned_difference == pytest.approx(1.0)
    assert flip.standard_difference == pytest.approx(1 + D2 - 3.0)


def test_it_agrees_with_itself_when_the_learned_table_is_standard_dcg() -> None:
    rng = np.random.default_rng(3)
    lists = {f"s{i}": rng.integers(-1, 3, size=(6, 4)) for i in range(5)}
    board = compare_leaderboards(7.0 * standard_weights(4, 3, "exp"), lists)  # scale is irrelevant
    np.testing.assert_allclose(board.learned, 7.0 * board.standard)
    assert list(board.rank_learned) == list(board.rank_standard)
    assert board.kendall_tau == pytest.approx(1.0) and board.flips == ()


def test_it_leaves_tau_undefined_for_one_system_and_refuses_bad_lists() -> None:
    assert math.isnan(compare_leaderboards(FLAT, {"only": np.array([[1, 2]])}).kendall_tau)
    with pytest.raises(ValueError, match="grade array"):
        compare_leaderboards(FLAT, {"short": np.array([[1, 2, 0]])})
    with pytest.raises(ValueError, match="no systems"):
        compare_leaderboards(FLAT, {})


def test_it_counts_answers_where_the_two_metrics_pick_different_winners() -> None:
    left = np.array([[1, 1], [1, 1], [2, 0], [0, 0]])
    right = np.array([[2, 0], [2, 0], [1, 1], [1, 0]])
    # 1: assessor prefers the two grade-1 documents (left): learned right, standard wrong
    # 2: same lists, assessor prefers right: standard right
    # 3: a tie answered on lists the two metrics order differently: counts, nobody is "right"
    # 4: both metrics prefer right, as the assessor does: no disagreement
    preference = np.array([-1, 2, 0, 1])
    found = disagreeing_answers(FLAT, left, right, preference)
    assert (found.count, found.learned_right, found.standard_right) == (3, 1, 1)
    assert disagreeing_answers(FLAT, left[:0], right[:0], preference[:0]).count == 0
