"""Simulated side-by-side answers: the paper's permutation lists and Thurstone answers on real lists."""

from __future__ import annotations

import numpy as np
from scipy.stats import binomtest, norm

from estimation.learned_dcg.fit import standard_weights, utilities
from estimation.learned_dcg.simulation import (
    TABLE1_COUNTS,
    permutation_preferences,
    run_preferences,
    table1_thresholds,
)


def test_it_labels_permutations_by_the_truth_and_reverses_the_asked_share() -> None:
    truth = standard_weights(10, 5, "linear")
    clean = permutation_preferences(2000, truth, np.random.default_rng(0))
    assert np.all(np.sort(clean.left, axis=1) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    difference = utilities(truth, clean.left) - utilities(truth, clean.right)
    np.testing.assert_array_equal(clean.preference[difference > 1e-9], -1)
    np.testing.assert_array_equal(clean.preference[difference < -1e-9], 1)
    noisy = permutation_preferences(2000, truth, np.random.default_rng(0), reversed_share=0.25)
    flipped = int(np.sum(noisy.preference != clean.preference))
    assert binomtest(flipped, int(np.sum(clean.preference != 0)), 0.25).pvalue > 1e-3


def random_lists(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.choice(3, size=(60, 6, 5), p=[0.7, 0.2, 0.1])


def test_it_reproduces_the_table_1_label_shares() -> None:
    truth = np.outer(1.0 / np.arange(1, 6), [0.0, 1.0, 1.5])
    data, shown = run_preferences(random_lists(1), 40000, truth, np.random.default_rng(2), nu=1.0)
    counts = np.array([np.sum(data.preference == level) for level in (-2, -1, 0, 1, 2)])
    expected = np.array(TABLE1_COUNTS) / sum(TABLE1_COUNTS)
    np.testing.assert_allclose(counts / counts.sum(), expected, atol=0.01)
    assert shown.shape == (40000, 2) and np.all(shown[:, 0] != shown[:, 1])
    assert not np.any(data.identical())


def test_it_answers_by_the_truth_more_often_with_less_noise() -> None:
    truth = np.outer(1.0 / np.arange(1, 6), [0.0, 1.0, 1.5])

    def agreement(nu: float) -> float:
        data, _ = run_preferences(random_lists(3), 5000, truth, np.random.default_rng(4), nu=nu)
        strict = data.preference != 0
        delta = utilities(truth, data.left[strict]) - utilities(truth, data.right[strict])
        return float(np.mean(np.sign(delta) == -np.sign(data.preference[strict])))

    assert agreement(0.3) > agreement(1.0) > agreement(3.0) > 0.5


def test_it_shifts_answers_towards_the_left_list_with_a_side_bias() -> None:
    truth = np.outer(1.0 / np.arange(1, 6), [0.0, 1.0, 1.5])
    lists = random_lists(5)
    plain, _ = run_preferences(lists, 5000, truth, np.random.default_rng(6))
    biased, _ = run_preferences(lists, 5000, truth, np.random.default_rng(6), side_bias=0.5)
    # Same draws, z shifted up: every answer moves towards "A better" (negative) or stays.
    assert np.all(biased.preference <= plain.preference)
    assert np.mean(biased.preference < 0) > np.mean(plain.preference < 0) + 0.05


def test_it_places_thresholds_that_split_a_pure_noise_population_at_normal_quantiles() -> None:
    thresholds = table1_thresholds(np.zeros(10))
    shares = np.diff(np.concatenate([[0.0], norm.cdf(thresholds), [1.0]]))
    np.testing.assert_allclose(shares, np.array(TABLE1_COUNTS[::-1]) / sum(TABLE1_COUNTS), atol=1e-9)
