"""Tests for the ordinal (cumulative logit) label model."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from estimation.label_models.ordinal import (
    OrdinalModel,
    _penalised_negative_log_likelihood,
    default_prior,
    fit_ordinal_model,
    prior_model,
)


def _sample_ordinal(
    rng: np.random.Generator, features: np.ndarray, weights: np.ndarray, thresholds: np.ndarray
) -> np.ndarray:
    """Grades from the latent-variable form: y = #{k : t_k < w.f + logistic noise}."""
    latent = features @ weights + rng.logistic(size=features.shape[0])
    return np.searchsorted(thresholds, latent)


def test_it_recovers_weights_and_thresholds_from_synthetic_data() -> None:
    rng = np.random.default_rng(20240601)
    true_weights = np.array([1.0, -0.5, 2.0])
    true_thresholds = np.array([-1.0, 1.5])
    features = rng.normal(size=(20_000, 3))
    grades = _sample_ordinal(rng, features, true_weights, true_thresholds)

    model = fit_ordinal_model(features, grades, 3, l2=1e-3)

    np.testing.assert_allclose(model.weights, true_weights, atol=0.08)
    np.testing.assert_allclose(model.thresholds, true_thresholds, atol=0.08)


def test_it_reports_parameters_in_raw_feature_units() -> None:
    rng = np.random.default_rng(7)
    features = rng.normal(size=(5_000, 2))
    grades = _sample_ordinal(rng, features, np.array([1.0, -1.0]), np.array([0.0, 2.0]))
    shifted = features * np.array([10.0, 0.1]) + np.array([3.0, -4.0])

    plain = fit_ordinal_model(features, grades, 3, l2=1e-4)
    rescaled = fit_ordinal_model(shifted, grades, 3, l2=1e-4)

    # Standardisation makes the fit invariant to affine feature changes: same predictions.
    np.testing.assert_allclose(rescaled.predict_proba(shifted), plain.predict_proba(features), atol=1e-5)


def test_it_returns_valid_probabilities_and_monotone_thresholds() -> None:
    rng = np.random.default_rng(3)
    features = rng.normal(size=(2_000, 4)) * 5
    grades = _sample_ordinal(rng, features, np.array([2.0, 0.0, -1.0, 0.5]), np.array([-3.0, 0.0, 4.0]))

    model = fit_ordinal_model(features, grades, 4, l2=0.1)
    probabilities = model.predict_proba(rng.normal(size=(500, 4)) * 50)

    assert probabilities.shape == (500, 4)
    assert np.all(probabilities >= 0)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(np.diff(model.thresholds) > 0)


def test_it_gives_higher_grades_to_higher_latent_scores() -> None:
    rng = np.random.default_rng(11)
    features = rng.normal(size=(3_000, 1))
    grades = _sample_ordinal(rng, features, np.array([1.5]), np.array([-0.5, 1.0]))
    model = fit_ordinal_model(features, grades, 3)

    expected_grade = model.predict_proba(np.linspace(-3, 3, 13)[:, None]) @ np.arange(3)

    assert np.all(np.diff(expected_grade) > 0)


def test_it_gives_almost_no_mass_to_a_grade_that_never_occurs() -> None:
    rng = np.random.default_rng(5)
    features = rng.normal(size=(1_000, 2))
    grades = _sample_ordinal(rng, features, np.array([1.0, 1.0]), np.array([0.0]))
    grades = np.where(grades == 1, 2, 0)  # grades 0 and 2 only; grade 1 and 3 never occur

    model = fit_ordinal_model(features, grades, 4, l2=1.0)
    probabilities = model.predict_proba(features)

    assert np.all(np.isfinite(model.thresholds))
    assert probabilities[:, 1].max() < 1e-4
    assert probabilities[:, 3].max() < 1e-4
    assert probabilities[:, 2].mean() == pytest.approx(np.mean(grades == 2), abs=0.02)


def test_it_fits_a_sample_of_one_grade_without_diverging() -> None:
    features = np.random.default_rng(2).normal(size=(50, 3))
    model = fit_ordinal_model(features, np.zeros(50, dtype=int), 3)

    assert model.predict_proba(features)[:, 0].min() > 0.99


def test_it_matches_the_gradient_of_the_objective_numerically() -> None:
    rng = np.random.default_rng(13)
    features = rng.normal(size=(300, 3))
    grades = rng.integers(0, 4, size=300)
    parameters = np.concatenate([rng.normal(size=3), [-0.5], [0.2, -0.4]])

    analytic = _penalised_negative_log_likelihood(parameters, features, grades, 4, 0.7)[1]
    numeric = approx_fprime(
        parameters, lambda p: _penalised_negative_log_likelihood(p, features, grades, 4, 0.7)[0], 1e-7
    )

    np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-3)


def test_it_predicts_the_prior_before_any_label_exists() -> None:
    prior = np.array([0.7, 0.2, 0.1, 0.0])
    model = prior_model(5, prior)

    probabilities = model.predict_proba(np.random.default_rng(0).normal(size=(10, 5)))

    np.testing.assert_allclose(probabilities, np.tile(prior, (10, 1)), atol=1e-9)
    np.testing.assert_allclose(default_prior(3), [1 / 3, 1 / 3, 1 / 3])


def test_it_shrinks_towards_the_prior_and_fades_it_as_labels_accumulate() -> None:
    rng = np.random.default_rng(17)
    features = rng.normal(size=(4_000, 2))
    grades = _sample_ordinal(rng, features, np.array([3.0, 0.0]), np.array([-1.0, 1.0]))
    prior = default_prior(3)

    few = fit_ordinal_model(features[:20], grades[:20], 3, prior=prior, prior_strength=20.0)
    many = fit_ordinal_model(features, grades, 3, prior=prior, prior_strength=20.0)
    bare = fit_ordinal_model(features[:20], grades[:20], 3)

    assert few.prior_weight == pytest.approx(0.5)
    assert many.prior_weight == pytest.approx(20 / 4020)
    np.testing.assert_allclose(
        few.predict_proba(features[:5]), 0.5 * bare.predict_proba(features[:5]) + 0.5 * prior, atol=1e-5
    )
    mixed = bare.with_prior(prior, 0.25).predict_proba(features[:5])
    np.testing.assert_allclose(mixed, 0.75 * bare.predict_proba(features[:5]) + 0.25 * prior)


@pytest.mark.parametrize(
    ("features", "grades", "n_grades", "kwargs", "message"),
    [
        (np.zeros(5), np.zeros(5, dtype=int), 3, {}, "shape \\(N, d\\)"),
        (np.zeros((0, 2)), np.zeros(0, dtype=int), 3, {}, "at least one"),
        (np.full((3, 2), np.nan), np.zeros(3, dtype=int), 3, {}, "finite"),
        (np.zeros((3, 2)), np.zeros(4, dtype=int), 3, {}, "match the features"),
        (np.zeros((3, 2)), np.array([0, 1, 3]), 3, {}, "0..2"),
        (np.zeros((3, 2)), np.array([0, -1, 1]), 3, {}, "0..2"),
        (np.zeros((3, 2)), np.array([0.5, 1.0, 0.0]), 3, {}, "integers"),
        (np.zeros((3, 2)), np.zeros(3, dtype=int), 1, {}, "n_grades"),
        (np.zeros((3, 2)), np.zeros(3, dtype=int), 3, {"l2": -1.0}, "l2"),
        (np.zeros((3, 2)), np.zeros(3, dtype=int), 3, {"prior_strength": -1.0}, "prior_strength"),
        (np.zeros((3, 2)), np.zeros(3, dtype=int), 3, {"prior": np.array([0.5, 0.5])}, "prior"),
        (np.zeros((3, 2)), np.zeros(3, dtype=int), 3, {"prior": np.array([0.5, 0.6, 0.1])}, "sum to 1"),
    ],
)
def test_it_rejects_bad_fit_input(
    features: np.ndarray, grades: np.ndarray, n_grades: int, kwargs: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        fit_ordinal_model(features, grades, n_grades, **kwargs)


def test_it_rejects_bad_models_and_prediction_input() -> None:
    model = OrdinalModel(weights=np.array([1.0, 2.0]), thresholds=np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="shape \\(N, 2\\)"):
        model.predict_proba(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="non-decreasing"):
        OrdinalModel(weights=np.array([1.0]), thresholds=np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="needs a prior"):
        OrdinalModel(weights=np.array([1.0]), thresholds=np.array([0.0]), prior_weight=0.5)
    with pytest.raises(ValueError, match="prior_weight"):
        model.with_prior(default_prior(3), 1.5)


def _read_letor(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Features and grades of a LETOR 4.0 file (``grade qid:Q 1:v ... 46:v #docid = ...``)."""
    features, grades = [], []
    with gzip.open(path, "rt") as handle:
        for line in handle:
            tokens = line.partition("#")[0].split()
            grades.append(int(tokens[0]))
            features.append([float(token.partition(":")[2]) for token in tokens[2:]])
    return np.asarray(features), np.asarray(grades)


def test_it_predicts_real_mq2008_grades_better_than_their_frequencies(shared_data: Path) -> None:
    train_features, train_grades = _read_letor(shared_data / "mq2008" / "S1.txt.gz")
    test_features, test_grades = _read_letor(shared_data / "mq2008" / "S4.txt.gz")

    model = fit_ordinal_model(train_features, train_grades, 3, l2=100.0)
    probabilities = model.predict_proba(test_features)

    frequencies = np.bincount(train_grades, minlength=3) / train_grades.size
    rows = np.arange(test_grades.size)
    model_loglik = np.mean(np.log(probabilities[rows, test_grades]))
    frequency_loglik = np.mean(np.log(frequencies[test_grades]))
    assert model_loglik > frequency_loglik + 0.03
    # Well calibrated on average: the predicted share of each grade is near the observed one.
    observed = np.bincount(test_grades, minlength=3) / test_grades.size
    np.testing.assert_allclose(probabilities.mean(axis=0), observed, atol=0.05)
