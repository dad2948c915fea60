"""Learned DCG (Zhou et al. 2014): encoding, the QP and its fast solvers, rank-1, SimpleMargin."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from estimation.learned_dcg.fit import (
    PreferenceData,
    encode_lists,
    fit_weights,
    learn_dcg,
    preference_accuracy,
    rank_one,
    simple_margin,
    standard_weights,
    transformed_weights,
    utilities,
)
from estimation.learned_dcg.simulation import permutation_preferences
from estimation.learned_dcg.solvers import merge_pairs, objective, solve_bounded, solve_newton, solve_qp

LOG3 = math.log2(3)


def simulated(n: int, gain: str = "linear", seed: int = 0, reversed_share: float = 0.0) -> PreferenceData:
    rng = np.random.default_rng(seed)
    return permutation_preferences(n, standard_weights(10, 5, gain), rng, reversed_share=reversed_share)


def mixed_lists(n: int, seed: int, n_topics: int = 20) -> PreferenceData:
    """Lists of independent grades (multisets differ), labelled by a noisy exp-gain DCG@5."""
    rng = np.random.default_rng(seed)
    left, right = rng.integers(0, 4, (n, 5)), rng.integers(0, 4, (n, 5))
    truth = standard_weights(5, 4, "exp")
    z = utilities(truth, left) - utilities(truth, right) + rng.normal(0, 1.0, n)
    preference = np.select([z > 1.5, z > 0.3, z < -1.5, z < -0.3], [-2, -1, 2, 1], 0)
    return PreferenceData(left, right, preference, rng.integers(0, n_topics, n))


# ---------------------------------------------------------------------------------------------
# Encoding and utilities


def test_it_encodes_the_papers_example_2() -> None:
    # Zhou et al. §4.2, Example 2: L = 5, the top three are Perfect, Bad, Good, and with the
    # paper's labels ordered best first s = [1,0,0,0,0, 0,0,0,0,1, 0,0,1,0,0]. Our grades run
    # worst first (Perfect = 4, Good = 2, Bad = 0), so each block reads reversed.
    paper = np.array([1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0], dtype=float)
    ours = encode_lists(np.array([[4, 0, 2]]), 5)
    assert ours.shape == (1, 15)
    np.testing.assert_array_equal(ours.reshape(3, 5)[:, ::-1].reshape(-1), paper)


def test_it_encodes_an_empty_position_as_a_zero_block() -> None:
    encoded = encode_lists(np.array([[1, -1], [-1, -1]]), 3)
    np.testing.assert_array_equal(encoded, [[0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]])


def test_it_rejects_grades_outside_the_scale() -> None:
    with pytest.raises(ValueError, match="-1..2"):
        encode_lists(np.array([[3]]), 3)
    with pytest.raises(ValueError, match="integers"):
        encode_lists(np.array([[0.5]]), 3)


def test_it_computes_utilities_and_the_standard_dcgs_by_hand() -> None:
    W = np.array([[0.0, 1.0, 5.0], [0.0, 2.0, 3.0]])
    # [2, 1] -> 5 + 2; [1, -1] -> 1 (empty position adds 0); [-1, 2] -> 3
    np.testing.assert_allclose(utilities(W, np.array([[2, 1], [1, -1], [-1, 2]])), [7.0, 1.0, 3.0])
    np.testing.assert_allclose(standard_weights(2, 3, "exp"), [[0, 1, 3], [0, 1 / LOG3, 3 / LOG3]])
    np.testing.assert_allclose(standard_weights(2, 3, "linear"), [[0, 1, 2], [0, 1 / LOG3, 2 / LOG3]])
    # DCG@2 of grades [2, 1] with exp gain: 3 + 1/log2(3)
    assert utilities(standard_weights(2, 3, "exp"), np.array([[2, 1]]))[0] == pytest.approx(3 + 1 / LOG3)


def test_it_shows_the_incoherence_of_example_1() -> None:
    # Zhou et al. §3.2, Example 1: K = 2, x1, x2, x3 graded l2, l1, l3 (ours: 1, 2, 0) with
    # gains 2, 3, 1/2; c = (1 + e, 1 - e), e = 1/2. pi1 = (1, 3, 2) shows grades [1, 0],
    # pi2 = (3, 2, 1) shows [0, 2]. Gains A prefer pi1; B = A^k (order-preserving) prefers pi2.
    c = np.array([1.5, 0.5])
    gains_a = np.array([0.5, 2.0, 3.0])
    pi1, pi2 = np.array([[1, 0]]), np.array([[0, 2]])
    a = np.outer(c, gains_a)
    b = np.outer(c, gains_a**10)
    assert utilities(a, pi1)[0] == pytest.approx(2 * 1.5 + 0.5 * 0.5)
    assert utilities(a, pi1)[0] > utilities(a, pi2)[0]
    assert utilities(b, pi1)[0] < utilities(b, pi2)[0]
    # The two standard DCG@2 disagree the same way on [1, 1] vs [0, 2] (grades 0..2):
    # linear 1 + 1/log2(3) = 1.63 > 2/log2(3) = 1.26; exp 1.63 < 3/log2(3) = 1.89.
    pair = PreferenceData(np.array([[1, 1]]), np.array([[0, 2]]), np.array([-1]), np.array([0]))
    assert preference_accuracy(standard_weights(2, 3, "linear"), pair) == 1.0
    assert preference_accuracy(standard_weights(2, 3, "exp"), pair) == 0.0


def test_it_scores_accuracy_without_ties_or_identical_lists_and_half_for_a_predicted_tie() -> None:
    W = np.array([[0.0, 1.0], [0.0, 1.0]])
    data = PreferenceData(
        left=np.array([[1, 0], [0, 0], [1, 1], [1, 0], [1, 0]]),
        right=np.array([[0, 0], [1, 0], [1, 1], [0, 0], [0, 1]]),
        # right, wrong, identical lists (skipped), a tie answer (skipped), W predicts a tie
        preference=np.array([-1, -2, 1, 0, 1]),
        groups=np.zeros(5),
    )
    assert preference_accuracy(W, data) == pytest.approx((1 + 0 + 0.5) / 3)


def test_it_validates_preference_data() -> None:
    lists = np.zeros((2, 3), dtype=int)
    with pytest.raises(ValueError, match="same shape"):
        PreferenceData(lists, np.zeros((2, 4), dtype=int), np.array([0, 1]), np.arange(2))
    with pytest.raises(ValueError, match="-2..2"):
        PreferenceData(lists, lists, np.array([0, 3]), np.arange(2))
    with pytest.raises(ValueError, match="groups"):
        PreferenceData(lists, lists, np.array([0, 1]), np.arange(3))
    with pytest.raises(ValueError, match="-1 marks"):
        PreferenceData(lists - 2, lists, np.array([0, 1]), np.arange(2))


# ---------------------------------------------------------------------------------------------
# The QP


def test_it_satisfies_monotone_gains_and_discounts_and_beats_feasible_perturbations() -> None:
    data = mixed_lists(400, seed=1)
    for monotone_discounts in (False, True):
        W = fit_weights(data, 4, c_strict=10.0, monotone_discounts=monotone_discounts)
        assert W.shape == (5, 4)
        assert np.all(np.diff(W, axis=1) >= -1e-8)
        T = transformed_weights(W)
        if monotone_discounts:
            assert np.all(T[:-1] - T[1:] >= -1e-8)
    # Optimality: no feasible perturbation (gains kept monotone) lowers the objective.
    from estimation.learned_dcg.fit import _informative_pairs

    pairs = _informative_pairs(data, 4, ties=True, much_better_margin=1.0)
    weights = pairs.design.row_weights(np.ones(pairs.answer.size))
    w = fit_weights(data, 4, c_strict=10.0).reshape(-1)
    best = objective(w, pairs.design, weights, 10.0, 10.0)
    rng = np.random.default_rng(0)
    for _ in range(200):
        other = np.maximum.accumulate((w + rng.normal(0, 1e-3, w.size)).reshape(5, 4), axis=1)
        assert objective(other.reshape(-1), pairs.design, weights, 10.0, 10.0) >= best - 1e-7 * best


def test_it_meets_the_margin_on_separable_data_with_a_large_c() -> None:
    data = simulated(150, gain="exp")
    W = fit_weights(data, 5, c_strict=1e5)
    difference = utilities(W, data.left) - utilities(W, data.right)
    strict = data.preference != 0
    # Oriented from the preferred list, every strict pair clears the margin 1 (slack ~ 0).
    assert np.min(-np.sign(data.preference[strict]) * difference[strict]) >= 1 - 1e-3


def test_it_asks_a_larger_margin_of_much_better_answers_when_told() -> None:
    data = simulated(150, gain="exp")
    preference = np.where(np.arange(len(data)) % 2 == 0, 2 * data.preference, data.preference)
    data = PreferenceData(data.left, data.right, preference, data.groups)
    much = np.abs(data.preference) == 2
    for margin in (1.0, 3.0):
        W = fit_weights(data, 5, c_strict=1e5, much_better_margin=margin)
        oriented = -np.sign(data.preference) * (utilities(W, data.left) - utilities(W, data.right))
        assert np.min(oriented[much]) >= margin - 1e-3
    assert np.min(oriented[much]) > 2.0 > np.min(oriented[~much & (data.preference != 0)])


def test_it_shrinks_tied_pairs_as_the_tie_cost_grows() -> None:
    data = mixed_lists(400, seed=2)
    tied = (data.preference == 0) & ~data.identical()
    spreads = []
    for c_tie in (0.01, 1.0, 100.0, 1e4):
        W = fit_weights(data, 4, c_strict=10.0, c_tie=c_tie)
        spreads.append(np.abs(utilities(W, data.left[tied]) - utilities(W, data.right[tied])).max())
    assert all(later <= earlier + 1e-6 for earlier, later in zip(spreads, spreads[1:], strict=False))
    assert spreads[0] > 1.5 and spreads[-1] < 1.0 + 1e-2


def test_it_refuses_data_without_a_strict_pair() -> None:
    lists = np.array([[1, 0], [0, 1]])
    data = PreferenceData(lists, lists[::-1], np.array([0, 0]), np.arange(2))
    with pytest.raises(ValueError, match="no informative strict preference"):
        fit_weights(data, 2, c_strict=1.0)


@pytest.mark.parametrize("solver", [solve_newton, solve_bounded])
def test_it_solves_the_same_problem_with_the_bound_only_form(solver) -> None:
    data = mixed_lists(600, seed=3)
    from estimation.learned_dcg.fit import _informative_pairs

    pairs = _informative_pairs(data, 4, ties=True, much_better_margin=2.0)
    rng = np.random.default_rng(4)
    # Integer weights as a bootstrap replicate gives them, some rows dropped.
    weights = pairs.design.row_weights(rng.integers(0, 3, pairs.answer.size).astype(float))
    for c in (0.1, 10.0):
        qp = solve_qp(pairs.design, weights, c, 2 * c)
        fast = solver(pairs.design, weights, c, 2 * c)
        f_qp, f_fast = (
            objective(qp, pairs.design, weights, c, 2 * c),
            objective(fast, pairs.design, weights, c, 2 * c),
        )
        assert f_fast == pytest.approx(f_qp, rel=1e-6)
        np.testing.assert_allclose(
            transformed_weights(fast.reshape(5, 4)), transformed_weights(qp.reshape(5, 4)), atol=1e-4
        )


def test_it_merges_duplicate_pairs_into_weighted_rows() -> None:
    d = np.array([[1.0, -1.0], [1.0, -1.0], [0.0, 1.0]])
    design = merge_pairs(d, np.ones(3), np.array([False, False, True]), (1, 2))
    assert design.d.shape == (2, 2)
    np.testing.assert_array_equal(np.sort(design.row_weights(np.ones(3))), [1.0, 2.0])


# ---------------------------------------------------------------------------------------------
# Gains and discounts


def test_it_recovers_an_exact_dcg_form_with_zero_second_singular_value() -> None:
    c = 3.7 / np.log2(np.arange(2, 8))
    g = np.array([0.0, 0.5, 2.0, 5.0])
    for W in (np.outer(c, g), np.outer(c, g) + np.arange(6)[:, None], np.outer(-c, -g)):
        form = rank_one(transformed_weights(W))
        np.testing.assert_allclose(form.gains, g / 5.0, atol=1e-12)
        np.testing.assert_allclose(form.discounts, c / c[0], atol=1e-12)
        assert form.sigma_ratio == pytest.approx(0.0, abs=1e-12)


def test_it_reports_a_large_sigma_ratio_when_gains_depend_on_the_position() -> None:
    W = np.array([[0.0, 1.0, 2.0], [0.0, 2.0, 2.1]])
    assert rank_one(W).sigma_ratio > 0.1
    with pytest.raises(ValueError, match="zero"):
        rank_one(np.zeros((3, 3)))


# ---------------------------------------------------------------------------------------------
# SimpleMargin


def test_it_picks_the_smallest_margins_one_per_group_never_identical_or_excluded() -> None:
    W = np.array([[0.0, 1.0, 3.0], [0.0, 1.0, 3.0]])
    left = np.array([[2, 0], [1, 1], [2, 1], [0, 2], [1, 0], [2, 2]])
    right = np.array([[2, 0], [2, 0], [1, 2], [2, 0], [0, 0], [0, 0]])
    # margins:      identical, 2,      0,      0,      1,      6
    groups = np.array([0, 1, 1, 2, 3, 4])
    exclude = np.array([False, False, False, True, False, False])
    picked = simple_margin(W, left, right, groups, batch=4, exclude=exclude)
    # pair 0 identical, pair 3 excluded, pair 1 shares group 1 with the better pair 2.
    np.testing.assert_array_equal(picked, [2, 4, 5])
    np.testing.assert_array_equal(simple_margin(W, left, right, groups), [2])
    np.testing.assert_array_equal(simple_margin(W, left, right, np.arange(6), batch=2), [2, 3])


def test_it_never_picks_two_of_a_group_in_a_batch_on_random_pools() -> None:
    rng = np.random.default_rng(5)
    left, right = rng.integers(0, 3, (500, 4)), rng.integers(0, 3, (500, 4))
    left[:50] = right[:50]
    groups = rng.integers(0, 30, 500)
    exclude = rng.random(500) < 0.3
    picked = simple_margin(standard_weights(4, 3, "exp"), left, right, groups, batch=40, exclude=exclude)
    eligible = ~exclude & np.any(left != right, axis=1)
    assert len(picked) == np.unique(groups[eligible]).size  # fewer groups than the batch
    assert len(set(groups[picked])) == len(picked)
    assert not np.any(exclude[picked]) and np.all(picked >= 50)


# ---------------------------------------------------------------------------------------------
# The full procedure


def test_it_learns_the_simulated_gains_and_is_deterministic_for_a_seed() -> None:
    data = simulated(800, gain="exp", seed=6)
    data = PreferenceData(data.left, data.right, data.preference, np.arange(len(data)) % 40)
    first = learn_dcg(data, 5, bootstrap=4, seed=3)
    again = learn_dcg(data, 5, bootstrap=4, seed=3)
    other = learn_dcg(data, 5, bootstrap=4, seed=4)
    assert first.to_json() == again.to_json()
    assert first.to_json()["gains_low"] != other.to_json()["gains_low"]
    json.dumps(first.to_json())
    # Data 2 truth g = 2^l - 1 normalised: [0, 1/15, 3/15, 7/15, 1]; the doc's reproduction
    # recovers [0, .08, .21, .52, 1] at 800 pairs.
    np.testing.assert_allclose(first.gains, np.array([0, 1, 3, 7, 15]) / 15, atol=0.07)
    assert np.all(first.gains_low <= first.gains + 1e-12) and np.all(first.gains <= first.gains_high + 1e-12)
    assert first.accuracy["learned"] > 0.95 and first.accuracy["exp"] == 1.0
    assert first.accuracy["linear"] < 0.95
    assert first.pairs + first.ties + first.dropped_identical == len(data)
    assert first.groups == 40 and first.cutoff == 10 and first.n_grades == 5
    curve = first.accuracy_curve
    assert [row["answers"] for row in curve][:3] == [50, 100, 200]
    assert curve[-1]["learned"] > curve[0]["learned"]


def test_it_says_how_many_informative_answers_it_needs() -> None:
    data = simulated(30)
    tiny = PreferenceData(data.left[:8], data.right[:8], data.preference[:8], np.arange(8))
    with pytest.raises(ValueError, match="at least 10 informative answers .* at least 2 topics; got 8"):
        learn_dcg(tiny, 5)
    one_topic = PreferenceData(data.left, data.right, data.preference, np.zeros(30))
    with pytest.raises(ValueError, match="over 1 topic"):
        learn_dcg(one_topic, 5)


def test_it_comes_close_to_the_oracle_on_simulated_answers_over_real_robust03_runs(shared_data) -> None:
    from estimation.cli.learn_dcg import top_k_grades
    from estimation.formats.trec import read_qrels, read_run
    from estimation.learned_dcg.simulation import run_preferences

    qrels = read_qrels(shared_data / "robust03" / "qrels.txt")
    names = ("input.aplrob03a.gz", "input.UIUC03Rd1.gz", "input.pircRBa1.gz", "input.uwmtCR0.gz")
    runs = [read_run(shared_data / "robust03" / "runs" / name) for name in names]
    lists = top_k_grades(runs, qrels, 10)
    grades = np.array([[lists.get((run.tag, qid), np.full(10, -1)) for run in runs] for qid in sorted(qrels)])
    # A truth that is no standard DCG: discount 1/k, grade 2 only half again as good as grade 1.
    truth = np.outer(1.0 / np.arange(1, 11), [0.0, 1.0, 1.5])
    rng = np.random.default_rng(11)
    answers, _ = run_preferences(grades, 2000, truth, rng)
    fresh, _ = run_preferences(grades, 10000, truth, rng)
    result = learn_dcg(answers, 3, bootstrap=0, curve=False)
    assert preference_accuracy(result.weights, fresh) >= preference_accuracy(truth, fresh) - 0.02
    assert result.gains[1] == pytest.approx(2 / 3, abs=0.15)
