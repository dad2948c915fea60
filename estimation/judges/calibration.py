"""What a judge's label means in human grades: h(f) = E[G(y) | f] and sigma(f) = sd(G(y) | f).

A judge label is reduced to a *class*: its grade, or for a distribution over grades the grade
nearest its expected grade (the "predicted grade bin" recalibration: the raw probabilities are
as uncalibrated as the grades), and one more class, `MISSING`, for an item the judge did not
label. The calibration holds, per class, the mean and the standard deviation of the human gain
on items that carry both labels, each shrunk toward the pooled value with ``prior_strength``
pseudo-counts so that a class seen once or never gets a sane value.

The judge's raw gain G(f) is never used as the control variate: judges grade on a shifted scale
(more generous than NIST on the shared DL data), and the class means absorb that shift.

External calibration (labels of the same judge version on other topics with human grades) is
fitted once, outside the campaign's sample, so it cannot bias it. Internal calibration fits on
the campaign's own first-stage human labels; `cross_fitted_residuals` gives each first-stage
label the h fitted on the other fold, which keeps the first stage's estimate unbiased.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MISSING = -1
"""The class of an item the judge gave no label (stored as the last class)."""
DEFAULT_PRIOR_STRENGTH = 2.0


@dataclass(frozen=True, eq=False)
class Calibration:
    """h and sigma per judge class, classes 0..G-1 (grades) and G (no judge label).

    Attributes
    ----------
    mean_gain : ndarray, shape (G + 1,)
        h per class: the expected human gain of an item the judge put in that class.
    sd_gain : ndarray, shape (G + 1,)
        sigma per class.
    counts : ndarray of int, shape (G + 1,)
        Items with both labels per class.
    source : str
        ``"external"``, ``"internal"`` or ``"none"`` (no item with both labels: h = the pooled
        prior, the design falls back to the no-model one).
    """

    mean_gain: np.ndarray
    sd_gain: np.ndarray
    counts: np.ndarray
    source: str

    @property
    def n_grades(self) -> int:
        return self.mean_gain.shape[0] - 1

    @property
    def n_items(self) -> int:
        return int(self.counts.sum())

    def h(self, classes: np.ndarray) -> np.ndarray:
        """h(f) for an array of classes (`judge_classes`; `MISSING` allowed)."""
        return self.mean_gain[_index(classes, self.n_grades)]

    def sigma(self, classes: np.ndarray) -> np.ndarray:
        """sigma(f) for an array of classes."""
        return self.sd_gain[_index(classes, self.n_grades)]

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: what exports and stored states keep."""
        return {
            "source": self.source,
            "mean_gain": [float(value) for value in self.mean_gain],
            "sd_gain": [float(value) for value in self.sd_gain],
            "counts": [int(value) for value in self.counts],
        }

    @classmethod
    def from_dict(cls, data: dict) -> Calibration:
        return cls(
            mean_gain=np.asarray(data["mean_gain"], dtype=float),
            sd_gain=np.asarray(data["sd_gain"], dtype=float),
            counts=np.asarray(data["counts"], dtype=np.int64),
            source=str(data["source"]),
        )


def judge_classes(
    grades: Sequence[int | None] | np.ndarray,
    probs: Sequence[Sequence[float] | None] | None = None,
    *,
    n_grades: int,
) -> np.ndarray:
    """The class of each judge label: its grade; the grade nearest the expected grade of a
    distribution; `MISSING` where neither is given.

    Parameters
    ----------
    grades : sequence of int or None, length n
    probs : sequence of (sequence of float or None), length n, optional
        A distribution over grades 0..G-1 for the items labelled that way (its grade is None).
    n_grades : int
        G, the campaign's number of grades. A judge grade above G - 1 is an error.

    Returns
    -------
    ndarray of int, shape (n,)
    """
    classes = np.full(len(grades), MISSING, dtype=np.int64)
    for index, grade in enumerate(grades):
        if grade is not None:
            if not 0 <= int(grade) < n_grades:
                raise ValueError(f"judge grade {grade} outside the scale 0..{n_grades - 1}")
            classes[index] = int(grade)
        elif probs is not None and probs[index] is not None:
            distribution = np.asarray(probs[index], dtype=float)
            if distribution.shape != (n_grades,):
                raise ValueError(f"a judge distribution has {distribution.size} grades, expected {n_grades}")
            classes[index] = int(np.clip(np.rint(distribution @ np.arange(n_grades)), 0, n_grades - 1))
    return classes


def fit_calibration(
    classes: np.ndarray,
    human_gains: np.ndarray,
    *,
    n_grades: int,
    source: str,
    prior_strength: float = DEFAULT_PRIOR_STRENGTH,
) -> Calibration:
    """Class means and standard deviations of the human gain, shrunk toward the pooled ones.

    ``h_c = (S_c + k mu) / (n_c + k)`` and ``sigma_c^2 = (SS_c + k v) / (n_c + k)`` where
    ``S_c``, ``SS_c`` are the class's sum and sum of squared deviations from its own mean, ``mu``
    and ``v`` the pooled mean and variance, and ``k = prior_strength``.

    Parameters
    ----------
    classes : ndarray of int, shape (n,)
        `judge_classes` of the items with both labels (each item once).
    human_gains : ndarray, shape (n,)
        G(y) of their human grade (several assessors: their mean gain).
    n_grades : int
    source : str
        ``"external"`` or ``"internal"``, kept on the result.
    prior_strength : float
        Pseudo-counts toward the pooled values (>= 0).

    Returns
    -------
    Calibration
        With no item at all, `no_calibration`.
    """
    classes = np.asarray(classes, dtype=np.int64)
    gains = np.asarray(human_gains, dtype=float)
    if classes.shape != gains.shape or classes.ndim != 1:
        raise ValueError("classes and human_gains must be 1-D arrays of one length")
    if not np.all(np.isfinite(gains)):
        raise ValueError("human gains must be finite")
    if not prior_strength >= 0:
        raise ValueError(f"prior_strength must be >= 0, got {prior_strength}")
    if gains.size == 0:
        return no_calibration(n_grades)
    index = _index(classes, n_grades)
    width = n_grades + 1
    counts = np.bincount(index, minlength=width)
    sums = np.bincount(index, weights=gains, minlength=width)
    pooled_mean = float(gains.mean())
    pooled_variance = float(gains.var()) if gains.size > 1 else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        own_mean = np.where(counts > 0, sums / np.maximum(counts, 1), pooled_mean)
    squares = np.bincount(index, weights=(gains - own_mean[index]) ** 2, minlength=width)
    denominator = counts + prior_strength
    safe = np.where(denominator > 0, denominator, 1.0)
    mean_gain = np.where(denominator > 0, (sums + prior_strength * pooled_mean) / safe, pooled_mean)
    variance = np.where(denominator > 0, (squares + prior_strength * pooled_variance) / safe, pooled_variance)
    return Calibration(
        mean_gain=mean_gain, sd_gain=np.sqrt(np.maximum(variance, 0.0)), counts=counts, source=source
    )


def no_calibration(n_grades: int) -> Calibration:
    """h = 0 and sigma = 1 everywhere: the judged estimator becomes plain importance sampling
    and its design the no-model one (q proportional to |a|, mixed with w)."""
    width = n_grades + 1
    return Calibration(
        mean_gain=np.zeros(width),
        sd_gain=np.ones(width),
        counts=np.zeros(width, dtype=np.int64),
        source="none",
    )


def cross_fitted_residuals(
    classes: np.ndarray,
    human_gains: np.ndarray,
    folds: np.ndarray,
    *,
    n_grades: int,
    prior_strength: float = DEFAULT_PRIOR_STRENGTH,
) -> tuple[Calibration, Calibration]:
    """The two calibrations of a two-fold cross-fit: the first fitted on fold 1, the second on
    fold 0, so that a fold-0 label is paired with the calibration that never saw it.

    Parameters
    ----------
    classes, human_gains : ndarray, shape (n,)
        One row per labelled draw's item.
    folds : ndarray of int, shape (n,)
        0 or 1 per row.

    Returns
    -------
    (for fold 0, for fold 1) : tuple of Calibration
    """
    folds = np.asarray(folds)
    if folds.shape != np.shape(classes) or not np.all((folds == 0) | (folds == 1)):
        raise ValueError("folds must be 0 or 1 per row")
    other_of = [folds == 1, folds == 0]
    fitted = tuple(
        fit_calibration(
            np.asarray(classes)[rows],
            np.asarray(human_gains)[rows],
            n_grades=n_grades,
            source="internal",
            prior_strength=prior_strength,
        )
        for rows in other_of
    )
    return fitted[0], fitted[1]


def _index(classes: np.ndarray, n_grades: int) -> np.ndarray:
    classes = np.asarray(classes, dtype=np.int64)
    if np.any((classes < MISSING) | (classes >= n_grades)):
        raise ValueError(f"judge classes must lie in 0..{n_grades - 1} or be MISSING")
    return np.where(classes == MISSING, n_grades, classes)


def grade_distributions(
    classes: np.ndarray,
    human_grades: np.ndarray,
    *,
    n_grades: int,
    prior_strength: float = DEFAULT_PRIOR_STRENGTH,
) -> np.ndarray:
    """P(y | f) per judge class: the judge as a label model for the other strategies.

    Row c is the distribution of the human grade over items the judge put in class c, shrunk
    toward the pooled grade distribution with ``prior_strength`` pseudo-counts (the last row,
    `MISSING`, likewise). The active (Sawade) and item-level (Schnabel) designs take these rows
    as their label model theta.

    Returns
    -------
    ndarray, shape (G + 1, G)
        Rows sum to 1; uniform rows when no item carries both labels.
    """
    index = _index(np.asarray(classes, dtype=np.int64), n_grades)
    grades = np.asarray(human_grades, dtype=np.int64)
    if grades.shape != index.shape:
        raise ValueError("classes and human_grades must have one length")
    if np.any((grades < 0) | (grades >= n_grades)):
        raise ValueError(f"human grades must lie in 0..{n_grades - 1}")
    if grades.size == 0:
        return np.full((n_grades + 1, n_grades), 1.0 / n_grades)
    counts = np.zeros((n_grades + 1, n_grades))
    np.add.at(counts, (index, grades), 1.0)
    pooled = np.bincount(grades, minlength=n_grades) / grades.size
    rows = counts + prior_strength * pooled[None, :]
    totals = rows.sum(axis=1, keepdims=True)
    return np.where(totals > 0, rows / np.where(totals > 0, totals, 1.0), 1.0 / n_grades)
