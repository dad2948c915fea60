"""Davidson-Bradley-Terry merge of pairwise preferences."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.stats import spearmanr

from estimation.learned_dcg.preferences import Preference
from estimation.topk.bradley_terry import fit_bradley_terry, merge_preferences


def simulate(theta: np.ndarray, nu: float, n_comparisons: int, seed: int) -> tuple[np.ndarray, ...]:
    """Comparisons of random pairs drawn from Davidson's model."""
    rng = np.random.default_rng(seed)
    n = theta.size
    first = rng.integers(0, n, n_comparisons)
    second = (first + rng.integers(1, n, n_comparisons)) % n
    pi_first, pi_second = np.exp(theta[first]), np.exp(theta[second])
    tie = nu * np.sqrt(pi_first * pi_second)
    total = pi_first + pi_second + tie
    draw = rng.random(n_comparisons) * total
    outcome = np.where(draw < pi_first, "left", np.where(draw < pi_first + pi_second, "right", "tie"))
    return first, second, outcome


def negative_log_posterior(parameters: np.ndarray, first, second, outcome, variance: float) -> float:
    """Written out per comparison, independently of the module's vectorised version."""
    theta, nu = parameters[:-1], np.exp(parameters[-1])
    total = 0.0
    for i, j, result in zip(first, second, outcome, strict=True):
        pi_i, pi_j = np.exp(theta[i]), np.exp(theta[j])
        norm = pi_i + pi_j + nu * np.sqrt(pi_i * pi_j)
        numerator = {"left": pi_i, "right": pi_j, "tie": nu * np.sqrt(pi_i * pi_j)}[result]
        total -= np.log(numerator / norm)
    return total + 0.5 * float(parameters @ parameters) / variance


def test_it_recovers_the_order_from_simulated_comparisons() -> None:
    theta = np.linspace(1.5, -1.5, 8)
    first, second, outcome = simulate(theta, nu=0.6, n_comparisons=4000, seed=1)
    fit = fit_bradley_terry(first, second, outcome, 8)
    assert fit.converged
    assert list(np.argsort(-fit.theta)) == list(range(8))
    # The prior pulls to 0 only slightly with 500 comparisons per item.
    assert np.abs((fit.theta - fit.theta.mean()) - theta).max() < 0.2
    assert fit.tie_parameter == pytest.approx(0.6, abs=0.1)


def test_it_reaches_a_stationary_point_of_the_posterior() -> None:
    theta = np.array([0.8, 0.1, -0.4, -0.5, 0.0])
    first, second, outcome = simulate(theta, nu=1.2, n_comparisons=60, seed=4)
    fit = fit_bradley_terry(first, second, outcome, 5, prior_variance=3.0)
    optimum = np.append(fit.theta, np.log(fit.tie_parameter))
    gradient = approx_fprime(optimum, negative_log_posterior, 1e-6, first, second, outcome, 3.0)
    assert np.abs(gradient).max() < 1e-3


def test_it_stays_finite_under_perfect_separation() -> None:
    # a beats b beats c beats d, every time: the plain maximum likelihood would diverge.
    first = np.array([0, 1, 2, 0, 1] * 3)
    second = np.array([1, 2, 3, 2, 3] * 3)
    outcome = np.array(["left"] * 15)
    fit = fit_bradley_terry(first, second, outcome, 4)
    assert np.all(np.isfinite(fit.theta))
    assert list(np.argsort(-fit.theta)) == [0, 1, 2, 3]
    assert fit.tie_parameter < 1.0  # no tie was seen


def test_it_handles_disconnected_and_uncompared_items() -> None:
    preferences = [
        Preference("q", "a", "b", "left", "u1"),
        Preference("q", "c", "d", "left", "u2"),
    ]
    merged = merge_preferences(preferences, documents=["a", "b", "c", "d", "e"])
    score = dict(zip(merged.order, merged.scores, strict=True))
    assert score["a"] > score["e"] > score["b"]
    # Two mirror-image components get mirror-image scores; e, never compared, keeps 0.
    assert score["a"] == pytest.approx(score["c"], abs=1e-6)
    assert score["b"] == pytest.approx(score["d"], abs=1e-6)
    assert score["e"] == pytest.approx(0.0, abs=1e-6)
    assert merged.assessors == ("u1", "u2")


def test_it_reads_both_orientations_of_a_pair_alike() -> None:
    one_way = [Preference("q", "a", "b", "left", "u")] * 3 + [Preference("q", "b", "c", "tie", "u")]
    other_way = [Preference("q", "b", "a", "right", "u")] * 3 + [Preference("q", "c", "b", "tie", "u")]
    left = merge_preferences(one_way, documents=["a", "b", "c"])
    right = merge_preferences(other_way, documents=["a", "b", "c"])
    assert left.order == right.order
    assert left.scores == pytest.approx(right.scores)


def test_it_merges_assessors_who_disagree() -> None:
    # Two assessors agree a > b > c; a third says c > a once. The majority order wins.
    rows = []
    for assessor in ("u1", "u2"):
        rows += [
            ("q", "a", "b", "left", assessor),
            ("q", "b", "c", "left", assessor),
            ("q", "a", "c", "left", assessor),
        ]
    rows.append(("q", "a", "c", "right", "u3"))
    merged = merge_preferences(rows)
    assert merged.order == ("a", "b", "c")
    assert merged.n_comparisons == 7


def test_it_ties_documents_only_ever_tied() -> None:
    rows = [("q", "a", "b", "tie", "u")] * 5
    merged = merge_preferences(rows)
    assert merged.scores[0] == pytest.approx(merged.scores[1], abs=1e-6)
    assert merged.tie_parameter > 1.0


def test_it_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="one topic"):
        merge_preferences([("q1", "a", "b", "left", "u"), ("q2", "a", "b", "left", "u")])
    with pytest.raises(ValueError, match="no preferences"):
        merge_preferences([])
    with pytest.raises(ValueError, match="not among documents"):
        merge_preferences([("q", "a", "b", "left", "u")], documents=["a"])
    with pytest.raises(ValueError, match="outcome"):
        fit_bradley_terry(np.array([0]), np.array([1]), np.array(["win"]), 2)
    with pytest.raises(ValueError, match="itself"):
        fit_bradley_terry(np.array([1]), np.array([1]), np.array(["left"]), 2)
    with pytest.raises(ValueError, match="outside"):
        fit_bradley_terry(np.array([0]), np.array([5]), np.array(["left"]), 2)


def test_it_orders_like_the_simulated_strengths_with_few_comparisons() -> None:
    theta = np.random.default_rng(9).normal(0, 1, 30)
    first, second, outcome = simulate(theta, nu=0.4, n_comparisons=900, seed=10)
    fit = fit_bradley_terry(first, second, outcome, 30)
    assert spearmanr(fit.theta, theta).statistic > 0.9
