"""An ordinal label model: p(y_z | x, z; theta) from item features.

The active sampling distributions of Sawade et al. need, for every (query, item) pair, a
probability vector over the grades (their eq. 3 and Sect. 5.1). Following their *Logit*
model, this module fits a proportional-odds (cumulative logit) model (McCullagh 1980):

    P(y <= k | z) = sigmoid(t_k - w . f(z)),    k = 0 .. G-2,   t_0 < t_1 < ... < t_{G-2}

by L2-regularised maximum likelihood. Before any label exists, an application can use
`prior_model` (weights 0, thresholds reproducing a prior distribution) and, as labels
arrive, fit with ``prior_strength`` so that the fitted probabilities are shrunk towards the
prior while the sample is small.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit

# Bounds that keep the optimiser finite when a grade never occurs: a middle grade that is
# never observed drives its threshold gap to 0, an unobserved top or bottom grade drives a
# threshold to infinity. Both limits are reached to within negligible probability mass.
_MIN_LOG_GAP = np.log(1e-8)
_MAX_LOG_GAP = np.log(60.0)
_MAX_ABS_FIRST_THRESHOLD = 60.0
_PROBABILITY_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class OrdinalModel:
    """A fitted cumulative-logit model, optionally mixed with a prior.

    Attributes
    ----------
    weights : ndarray, shape (d,)
        w, in the units of the raw features passed to `fit_ordinal_model`.
    thresholds : ndarray, shape (G - 1,)
        t_0 < ... < t_{G-2}, the cut points of the latent score.
    prior : ndarray or None, shape (G,)
        A distribution over grades mixed into every prediction.
    prior_weight : float
        Weight of ``prior`` in the mixture ``(1 - prior_weight) * model + prior_weight * prior``.
    """

    weights: np.ndarray
    thresholds: np.ndarray
    prior: np.ndarray | None = None
    prior_weight: float = 0.0

    def __post_init__(self) -> None:
        weights = np.asarray(self.weights, dtype=float)
        thresholds = np.asarray(self.thresholds, dtype=float)
        if weights.ndim != 1:
            raise ValueError(f"weights must be 1-D, got shape {weights.shape}")
        if thresholds.ndim != 1 or thresholds.size < 1:
            raise ValueError("thresholds must be a 1-D array with at least one cut point (two grades)")
        if not (np.all(np.isfinite(weights)) and np.all(np.isfinite(thresholds))):
            raise ValueError("weights and thresholds must be finite")
        if np.any(np.diff(thresholds) < 0):
            raise ValueError("thresholds must be non-decreasing")
        prior_weight = float(self.prior_weight)
        if not 0.0 <= prior_weight <= 1.0:
            raise ValueError(f"prior_weight must lie in [0, 1], got {prior_weight!r}")
        prior = None
        if self.prior is not None:
            prior = _check_prior(self.prior, thresholds.size + 1)
        elif prior_weight > 0:
            raise ValueError("prior_weight > 0 needs a prior distribution")
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "thresholds", thresholds)
        object.__setattr__(self, "prior", prior)
        object.__setattr__(self, "prior_weight", prior_weight)

    @property
    def n_features(self) -> int:
        return self.weights.size

    @property
    def n_grades(self) -> int:
        return self.thresholds.size + 1

    def latent_score(self, features: np.ndarray) -> np.ndarray:
        """w . f(z) per row, shape (N,): larger means more relevant."""
        return _check_features(features, self.n_features) @ self.weights

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """Grade probabilities per row, shape (N, G); each row sums to 1.

        Parameters
        ----------
        features : ndarray, shape (N, d)
        """
        score = self.latent_score(features)
        cumulative = expit(self.thresholds[None, :] - score[:, None])
        cumulative = np.concatenate([np.zeros((score.size, 1)), cumulative, np.ones((score.size, 1))], axis=1)
        # Thresholds are sorted, so the differences are >= 0 up to rounding.
        probabilities = np.clip(np.diff(cumulative, axis=1), 0.0, None)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        if self.prior is not None and self.prior_weight > 0:
            probabilities = (1.0 - self.prior_weight) * probabilities + self.prior_weight * self.prior
        return probabilities

    def with_prior(self, prior: np.ndarray, prior_weight: float) -> OrdinalModel:
        """The same model mixed with ``prior`` at ``prior_weight`` (a new frozen object)."""
        return dataclasses.replace(self, prior=np.asarray(prior, dtype=float), prior_weight=prior_weight)


def default_prior(n_grades: int) -> np.ndarray:
    """The uniform distribution over ``n_grades`` grades, shape (G,).

    Sawade et al. (Sect. 5, *active_uniD*) use it when no relevance model is available.
    """
    if n_grades < 2:
        raise ValueError(f"n_grades must be >= 2, got {n_grades}")
    return np.full(n_grades, 1.0 / n_grades)


def prior_model(n_features: int, prior: np.ndarray) -> OrdinalModel:
    """A model that ignores the features and predicts ``prior`` for every item.

    Its thresholds are the logits of the prior's cumulative distribution, so it is an
    `OrdinalModel` like any fitted one; grades with prior mass 0 get (near-)equal cut points.
    """
    if n_features < 0:
        raise ValueError(f"n_features must be >= 0, got {n_features}")
    prior = np.asarray(prior, dtype=float)
    prior = _check_prior(prior, prior.size)
    cumulative = np.clip(np.cumsum(prior)[:-1], 1e-12, 1.0 - 1e-12)
    thresholds = np.maximum.accumulate(np.log(cumulative) - np.log1p(-cumulative))
    return OrdinalModel(weights=np.zeros(n_features), thresholds=thresholds, prior=prior, prior_weight=0.0)


def fit_ordinal_model(
    features: np.ndarray,
    grades: np.ndarray,
    n_grades: int,
    *,
    l2: float = 1.0,
    prior: np.ndarray | None = None,
    prior_strength: float = 0.0,
    max_iterations: int = 2000,
) -> OrdinalModel:
    """Fit a proportional-odds (cumulative logit) model by penalised maximum likelihood.

    The *Logit* relevance model of Sawade et al. (Sect. 5.1; McCullagh 1980). Features are
    standardised internally (so ``l2`` acts on comparable scales and constant columns get
    weight 0); the returned weights and thresholds are converted back to raw feature units.

    Parameters
    ----------
    features : ndarray, shape (N, d)
        Item features, finite.
    grades : ndarray, shape (N,)
        Observed integer grades in ``0 .. n_grades - 1``. A grade that never occurs is
        allowed: it gets (almost) no probability mass.
    n_grades : int
        G = y_max + 1, the campaign's scale.
    l2 : float
        Penalty ``l2 / 2 * ||w_std||^2`` on the weights of the standardised features
        (the thresholds are not penalised). Must be > 0 when features are collinear.
    prior : ndarray, shape (G,), optional
        A distribution over grades to shrink towards; `default_prior` when ``prior_strength``
        > 0 and no prior is given.
    prior_strength : float
        Pseudo-count of the prior: the prediction is mixed with the prior at weight
        ``prior_strength / (prior_strength + N)``, so the prior fades as labels accumulate.
    max_iterations : int
        L-BFGS-B iteration limit.

    Returns
    -------
    OrdinalModel
    """
    features = np.asarray(features, dtype=float)
    if features.ndim != 2:
        raise ValueError(f"features must have shape (N, d), got {features.shape}")
    if features.shape[0] == 0:
        raise ValueError("features: at least one labelled item is needed to fit a model")
    if not np.all(np.isfinite(features)):
        raise ValueError("features must be finite (found NaN or infinity)")
    if int(n_grades) != n_grades or n_grades < 2:
        raise ValueError(f"n_grades must be an integer >= 2, got {n_grades!r}")
    n_grades = int(n_grades)
    grades = _check_grades(grades, features.shape[0], n_grades)
    l2 = float(l2)
    if not np.isfinite(l2) or l2 < 0:
        raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")
    prior_strength = float(prior_strength)
    if not np.isfinite(prior_strength) or prior_strength < 0:
        raise ValueError(f"prior_strength must be a finite number >= 0, got {prior_strength!r}")
    if prior is not None:
        prior = _check_prior(prior, n_grades)
    elif prior_strength > 0:
        prior = default_prior(n_grades)

    center = features.mean(axis=0)
    scale = features.std(axis=0)
    scale = np.where(scale > 1e-12, scale, 1.0)
    standardized = (features - center) / scale

    initial = _initial_parameters(standardized.shape[1], grades, n_grades)
    bounds = (
        [(None, None)] * standardized.shape[1]
        + [(-_MAX_ABS_FIRST_THRESHOLD, _MAX_ABS_FIRST_THRESHOLD)]
        + [(_MIN_LOG_GAP, _MAX_LOG_GAP)] * (n_grades - 2)
    )
    # Imported on the first fit: scipy.optimize takes half a second to import, and every
    # Django process imports this module while only the worker fits.
    from scipy.optimize import minimize

    result = minimize(
        _penalised_negative_log_likelihood,
        initial,
        args=(standardized, grades, n_grades, l2),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iterations},
    )
    weights_std, thresholds_std = _unpack(result.x, standardized.shape[1])
    if not (np.all(np.isfinite(weights_std)) and np.all(np.isfinite(thresholds_std))):
        raise ValueError("the ordinal model fit diverged (non-finite parameters); increase l2")

    # w_std . (f - center) / scale = (w_std / scale) . f - w_std . (center / scale)
    weights = weights_std / scale
    thresholds = thresholds_std + float(weights @ center)
    prior_weight = prior_strength / (prior_strength + grades.size) if prior is not None else 0.0
    return OrdinalModel(weights=weights, thresholds=thresholds, prior=prior, prior_weight=prior_weight)


def _initial_parameters(n_features: int, grades: np.ndarray, n_grades: int) -> np.ndarray:
    """Weights 0 and thresholds at the (smoothed) empirical cumulative logits."""
    counts = np.bincount(grades, minlength=n_grades) + 0.5
    cumulative = np.cumsum(counts)[:-1] / counts.sum()
    thresholds = np.log(cumulative) - np.log1p(-cumulative)
    gaps = np.clip(np.log(np.maximum(np.diff(thresholds), 1e-8)), _MIN_LOG_GAP, _MAX_LOG_GAP)
    first = np.clip(thresholds[0], -_MAX_ABS_FIRST_THRESHOLD, _MAX_ABS_FIRST_THRESHOLD)
    return np.concatenate([np.zeros(n_features), [first], gaps])


def _unpack(parameters: np.ndarray, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Split the optimiser's vector into weights and increasing thresholds."""
    weights = parameters[:n_features]
    first = parameters[n_features]
    gaps = np.exp(parameters[n_features + 1 :])
    thresholds = first + np.concatenate([[0.0], np.cumsum(gaps)])
    return weights, thresholds


def _penalised_negative_log_likelihood(
    parameters: np.ndarray, features: np.ndarray, grades: np.ndarray, n_grades: int, l2: float
) -> tuple[float, np.ndarray]:
    """Objective and gradient of the cumulative-logit fit.

    For an item of grade k, with upper cut ``b = t_k - eta`` and lower cut ``a = t_{k-1} - eta``
    (``t_{-1} = -inf``, ``t_{G-1} = +inf``):
    ``P = sigmoid(b) - sigmoid(a) = sigmoid(b) * sigmoid(-a) * (1 - exp(a - b))``,
    whose logarithm stays finite even when both cuts lie far in a tail.
    """
    n_features = features.shape[1]
    weights, thresholds = _unpack(parameters, n_features)
    eta = features @ weights
    padded = np.concatenate([[-np.inf], thresholds, [np.inf]])
    upper = padded[grades + 1] - eta
    lower = padded[grades] - eta
    has_upper = grades < n_grades - 1
    has_lower = grades > 0
    both = has_upper & has_lower

    log_p = np.zeros_like(eta)
    log_p[has_upper] += log_expit(upper[has_upper])
    log_p[has_lower] += log_expit(-lower[has_lower])
    gap = upper[both] - lower[both]
    log_p[both] += np.log(-np.expm1(-gap))

    # d log P / d upper and d log P / d lower; the 1/expm1(gap) terms cancel in d/d eta.
    d_upper = np.zeros_like(eta)
    d_lower = np.zeros_like(eta)
    d_upper[has_upper] = expit(-upper[has_upper])
    d_lower[has_lower] = -expit(lower[has_lower])
    inverse_gap = 1.0 / np.expm1(gap)
    d_upper_thresholds = d_upper.copy()
    d_lower_thresholds = d_lower.copy()
    d_upper_thresholds[both] += inverse_gap
    d_lower_thresholds[both] -= inverse_gap

    d_eta = -(d_upper + d_lower)
    # d log-likelihood / d t_k, summed over items
    gradient_thresholds = (
        np.bincount(grades[has_upper], weights=d_upper_thresholds[has_upper], minlength=n_grades - 1)[
            : n_grades - 1
        ]
        + np.bincount(grades[has_lower] - 1, weights=d_lower_thresholds[has_lower], minlength=n_grades - 1)[
            : n_grades - 1
        ]
    )

    objective = -float(log_p.sum()) + 0.5 * l2 * float(weights @ weights)
    gradient_weights = -(features.T @ d_eta) + l2 * weights
    # t_k = first + sum_{j<=k} exp(log_gap_j): chain rule through the cumulative sum.
    tail_sums = np.cumsum(gradient_thresholds[::-1])[::-1]
    gradient_first = -tail_sums[0]
    gradient_gaps = -np.exp(parameters[n_features + 1 :]) * tail_sums[1:]
    return objective, np.concatenate([gradient_weights, [gradient_first], gradient_gaps])


def _check_features(features: np.ndarray, n_features: int) -> np.ndarray:
    features = np.asarray(features, dtype=float)
    if features.ndim != 2 or features.shape[1] != n_features:
        raise ValueError(f"features must have shape (N, {n_features}), got {features.shape}")
    if not np.all(np.isfinite(features)):
        raise ValueError("features must be finite (found NaN or infinity)")
    return features


def _check_grades(grades: np.ndarray, n_items: int, n_grades: int) -> np.ndarray:
    grades = np.asarray(grades)
    if grades.shape != (n_items,):
        raise ValueError(f"grades must have shape ({n_items},) to match the features, got {grades.shape}")
    if grades.dtype.kind == "f":
        if not np.all(np.isfinite(grades)) or np.any(grades != np.round(grades)):
            raise ValueError("grades must be integers")
    elif grades.dtype.kind not in "iub":
        raise ValueError(f"grades must be integers, got dtype {grades.dtype}")
    grades = grades.astype(np.int64)
    if grades.min() < 0 or grades.max() >= n_grades:
        raise ValueError(
            f"grades must lie in 0..{n_grades - 1}, found {int(grades.min())}..{int(grades.max())}"
        )
    return grades


def _check_prior(prior: np.ndarray, n_grades: int) -> np.ndarray:
    prior = np.asarray(prior, dtype=float)
    if prior.shape != (n_grades,):
        raise ValueError(f"prior must have shape ({n_grades},), got {prior.shape}")
    if not np.all(np.isfinite(prior)) or np.any(prior < 0):
        raise ValueError("prior must be finite and non-negative")
    if abs(prior.sum() - 1.0) > 1e-6:
        raise ValueError(f"prior must sum to 1, sums to {prior.sum():.6g}")
    return prior / prior.sum()
