"""Leaderboards under learned DCG (rank-1 gains x discounts), the learned utility (full T(W)) and
standard DCG: hand-worked toy lists, Kendall's tau, flips, and the answers on which learned and
standard DCG predict different winners."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from estimation.learned_dcg.leaderboard import compare_leaderboards, dcg_table, disagreeing_answers
from estimation.learned_dcg.lists import rank_one, standard_weights
from estimation.metrics.spec import Metric
from estimation.metrics.values import metric_values

D2 = 1 / math.log2(3)  # standard discount of position 2
# A learned table (K = 2, grades 0..2) that rates grade 1 as high as grade 2 (gains [0, 1, 1])
# and does not discount position 2; W[:, 0] = 5 is an offset T(W) removes.
FLAT = np.array([[5.0, 6.0, 6.0], [5.0, 6.0, 6.0]])


def test_it_scores_systems_by_mean_utility_under_both_metrics() -> None:
    # "fair" lists two grade-1 documents, "sharp" one grade-2 document then grade 0.
    lists = {"fair": np.array([[1, 1], [1, 1]]), "sharp": np.array([[2, 0], [2, -1]])}
    board = compare_leaderboards(FLAT, lists)
    assert board.systems == ("fair", "sharp")
    # T(FLAT) is rank one (gains [0, 1, 1], discounts [1, 1]): learned DCG = learned utility.
    np.testing.assert_allclose(board.gains, [0.0, 1.0, 1.0])
    np.testing.assert_allclose(board.discounts, [1.0, 1.0])
    # learned: fair 1 + 1 = 2, sharp 1 (+ 0 for grade 0 and for the empty position)
    np.testing.assert_allclose(board.learned, [2.0, 1.0])
    np.testing.assert_allclose(board.utility, [2.0, 1.0])
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
    np.testing.assert_allclose(board.utility, 7.0 * board.standard)
    # The rank-1 form normalises the top gain to 1: gains (2^y - 1) / 3, discounts 1/log2(1+k).
    np.testing.assert_allclose(board.gains, [0.0, 1 / 3, 1.0])
    np.testing.assert_allclose(board.learned, board.standard / 3.0)
    assert list(board.rank_learned) == list(board.rank_standard) == list(board.rank_utility)
    assert board.kendall_tau == pytest.approx(1.0) and board.flips == ()
    assert board.kendall_tau_utility == pytest.approx(1.0) and board.utility_flips == ()


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


PHI = (1 + math.sqrt(5)) / 2
# T(W) = [[0, 1, 1], [0, 0, 1]] is not rank one: T Tᵀ = [[2, 1], [1, 1]] has eigenvalues
# (3 ± √5) / 2 = φ², 1/φ², so σ₂/σ₁ = 1/φ²; its leading singular pair gives gains [0, 1/φ, 1]
# and discounts [1, 1/φ]. Position 1 values grades 1 and 2 alike, position 2 only grade 2.
NOT_RANK_ONE = np.array([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])


def test_a_table_that_is_not_rank_one_ranks_differently_as_utility_and_as_learned_dcg() -> None:
    form = rank_one(NOT_RANK_ONE)
    np.testing.assert_allclose(form.gains, [0.0, 1 / PHI, 1.0])
    np.testing.assert_allclose(form.discounts, [1.0, 1 / PHI])
    assert form.sigma_ratio == pytest.approx(1 / PHI**2)
    lists = {"mixed": np.array([[1, 2]]), "top": np.array([[2, 1]])}
    board = compare_leaderboards(NOT_RANK_ONE, lists)
    # utility: mixed 1 + 1 = 2, top 1 + 0 = 1
    np.testing.assert_allclose(board.utility, [2.0, 1.0])
    # learned DCG: mixed 1/φ + 1/φ = 1.236, top 1 + 1/φ² = 1.382
    np.testing.assert_allclose(board.learned, [2 / PHI, 1 + 1 / PHI**2])
    # standard DCG@2: mixed 1 + 3/log2(3) = 2.893, top 3 + 1/log2(3) = 3.631
    np.testing.assert_allclose(board.standard, [1 + 3 * D2, 3 + D2])
    assert list(board.rank_learned) == [2, 1] and list(board.rank_utility) == [1, 2]
    assert board.kendall_tau == pytest.approx(1.0) and board.flips == ()
    assert board.kendall_tau_utility == pytest.approx(-1.0)
    assert [(f.first, f.second) for f in board.utility_flips] == [("mixed", "top")]
    assert board.utility_flips[0].learned_difference == pytest.approx(1.0)


def test_the_learned_dcg_scores_are_a_campaigns_custom_dcg_over_the_same_lists() -> None:
    rng = np.random.default_rng(11)
    lists = {f"s{i}": rng.integers(-1, 3, size=(7, 4)) for i in range(4)}
    weights = rng.normal(size=(4, 3)) + np.array([0.0, 1.0, 2.0])
    form = rank_one(weights - weights[:, :1])
    gains, discounts = np.round(form.gains, 4) + 0.0, np.round(form.discounts, 4)  # as a campaign stores them
    board = compare_leaderboards(weights, lists, gains=gains, discounts=discounts)
    # The metric a campaign measures with custom_dcg (labeling.metric.campaign_metric).
    metric = replace(
        Metric.parse("DCG@4", y_max=2),
        gain_values=tuple(float(g) for g in gains),
        discount_values=tuple(float(c) for c in discounts),
    )
    expected = [metric_values(np.asarray(grades), metric).mean() for grades in lists.values()]
    np.testing.assert_allclose(board.learned, expected, rtol=1e-12)
    np.testing.assert_array_equal(board.gains, gains)
    assert not np.allclose(board.learned, board.utility), "the full T(W) is another metric"


def test_it_takes_gains_and_discounts_together_and_of_the_table_s_shape() -> None:
    lists = {"a": np.array([[1, 2]])}
    with pytest.raises(ValueError, match="both gains and discounts"):
        compare_leaderboards(FLAT, lists, gains=np.array([0.0, 0.5, 1.0]))
    with pytest.raises(ValueError, match="table"):
        compare_leaderboards(FLAT, lists, gains=np.array([0.0, 1.0]), discounts=np.array([1.0, 0.5]))
    np.testing.assert_allclose(dcg_table([0.0, 0.5, 1.0], [1.0, 0.5]), [[0, 0.5, 1], [0, 0.25, 0.5]])
