"""How far a judge and the human assessors agree, on the items both labelled.

Rows of the confusion matrix are the human grades, columns the judge's (a judge distribution
counts at the grade nearest its expected grade, as in `estimation.judges.calibration`).
Cohen's kappa on the grades, quadratic-weighted kappa (disagreement costs the squared grade
distance), binary kappa at a relevance threshold, and leniency: mean judge grade minus mean
human grade (positive: the judge is more generous).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from estimation.learned_dcg.preferences import cohen_kappa


@dataclass(frozen=True, eq=False)
class Agreement:
    """Agreement of judge and humans on ``n_items`` items.

    Attributes
    ----------
    confusion : ndarray of int, shape (G, G)
        ``confusion[y, f]``: items humans graded y and the judge f.
    kappa, weighted_kappa, binary_kappa : float
        nan when undefined (one category throughout, or no item).
    leniency : float
        Mean judge grade minus mean human grade.
    exact : float
        Share of items with the same grade.
    """

    confusion: np.ndarray
    kappa: float
    weighted_kappa: float
    binary_kappa: float
    leniency: float
    exact: float

    @property
    def n_items(self) -> int:
        return int(self.confusion.sum())

    def as_dict(self) -> dict[str, object]:
        return {
            "n_items": self.n_items,
            "confusion": self.confusion.tolist(),
            "kappa": _finite_or_none(self.kappa),
            "weighted_kappa": _finite_or_none(self.weighted_kappa),
            "binary_kappa": _finite_or_none(self.binary_kappa),
            "leniency": _finite_or_none(self.leniency),
            "exact": _finite_or_none(self.exact),
        }


def agreement(
    human_grades: Sequence[int] | np.ndarray,
    judge_grades: Sequence[int] | np.ndarray,
    *,
    n_grades: int,
    relevant_from: int | None = None,
) -> Agreement:
    """Confusion matrix, kappa, quadratic-weighted kappa, binary kappa and leniency.

    Parameters
    ----------
    human_grades, judge_grades : sequence of int, length n
        Grades in 0..n_grades-1 of the same items (a human grade averaged over assessors:
        round it first).
    n_grades : int
    relevant_from : int, optional
        The binary kappa's threshold (grade >= it is relevant); default the upper half of the
        scale (2 on 0-3, 1 on 0-1).
    """
    human = np.asarray(human_grades, dtype=np.int64)
    judge = np.asarray(judge_grades, dtype=np.int64)
    if human.shape != judge.shape or human.ndim != 1:
        raise ValueError("human_grades and judge_grades must be 1-D arrays of one length")
    if n_grades < 2:
        raise ValueError("agreement needs at least two grades")
    for name, grades in (("human", human), ("judge", judge)):
        if np.any((grades < 0) | (grades >= n_grades)):
            raise ValueError(f"{name} grades must lie in 0..{n_grades - 1}")
    threshold = (n_grades + 1) // 2 if relevant_from is None else relevant_from
    confusion = np.zeros((n_grades, n_grades), dtype=np.int64)
    np.add.at(confusion, (human, judge), 1)
    if human.size == 0:
        nan = float("nan")
        return Agreement(confusion, nan, nan, nan, nan, nan)
    binary = np.zeros((2, 2), dtype=np.int64)
    np.add.at(binary, ((human >= threshold).astype(np.int64), (judge >= threshold).astype(np.int64)), 1)
    return Agreement(
        confusion=confusion,
        kappa=cohen_kappa(confusion),
        weighted_kappa=quadratic_weighted_kappa(confusion),
        binary_kappa=cohen_kappa(binary),
        leniency=float(judge.mean() - human.mean()),
        exact=float(np.mean(judge == human)),
    )


def quadratic_weighted_kappa(confusion: np.ndarray) -> float:
    """``1 - sum w O / sum w E`` with ``w_ij = (i - j)^2``, O the observed and E the
    chance-expected table (Cohen 1968); nan when E puts no weight off the diagonal."""
    table = np.asarray(confusion, dtype=float)
    size = table.shape[0]
    grades = np.arange(size)
    weights = (grades[:, None] - grades[None, :]) ** 2
    total = table.sum()
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / total if total else table
    denominator = float((weights * expected).sum())
    if denominator <= 0:
        return float("nan")
    return float(1.0 - (weights * table).sum() / denominator)


def kendall_tau(first: Sequence[float] | np.ndarray, second: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b between two scorings of the same systems (nan for fewer than two)."""
    first = np.asarray(first, dtype=float)
    second = np.asarray(second, dtype=float)
    if first.shape != second.shape:
        raise ValueError("both scorings must list the same systems")
    if first.size < 2:
        return float("nan")
    # Imported here: scipy.stats takes about a second to import, and every Django process
    # imports this module (the outbound rules read the judges' endpoint settings).
    from scipy.stats import kendalltau

    return float(kendalltau(first, second).statistic)


def _finite_or_none(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
