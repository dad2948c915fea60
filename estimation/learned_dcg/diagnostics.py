"""Where a learned DCG agrees with the assessors better than standard DCG: the paper's diagnostics.

Zhou, Zha, Chang and Xue, *Learning the gain values and discount factors of DCG*, IEEE TKDE
26(2), 2014: accuracy over subsets of the answers split by the DCG difference of the two lists
(§5.2.2, Figs. 4-5; §5.3), and by the strength of the answer, "much better" against "better"
(§5.4, Figs. 16 and 18: Set1 = labels 1 and 5, Set2 = labels 2 and 4).

`answer_diagnostics` takes, per metric, the predicted difference ``u(left) - u(right)`` of every
answer (`utility_differences` of a table, or held-out predictions from cross-validation), and
scores each answer with a direction as the fit's accuracy does: 1 when the metric predicts the
assessor's direction, 1/2 when it predicts an exact tie, 0 otherwise. Answers whose two lists hold
the same grade at every position carry no information and are left out, as in the fit.

Differences computed from a table fitted on the same answers are *in sample*: the learned
metric's accuracy is then optimistic (the standard DCGs, not fitted, are not); the result says
which it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from estimation.learned_dcg.lists import PreferenceData, standard_weights, utilities

__all__ = [
    "AnswerDiagnostics",
    "DifferenceBin",
    "StrengthRow",
    "answer_diagnostics",
    "utility_differences",
]

MIN_PER_BIN = 5
"""Fewer bins than asked when the answers would leave a bin with fewer than this many."""
STRENGTHS = ((2, "much better"), (1, "better"))
"""|preference| and its words, strongest first (the paper's Set1 and Set2)."""


@dataclass(frozen=True)
class DifferenceBin:
    """Answers whose |standard DCG difference| lies in ``[low, high]`` (the smallest and largest
    in the bin: bins do not overlap), how many, and each metric's accuracy on them."""

    low: float
    high: float
    answers: int
    accuracy: dict[str, float]


@dataclass(frozen=True)
class StrengthRow:
    """Answers of one strength (|preference| = `preference`), each metric's accuracy on them and
    its mean |predicted difference| (the paper's Fig. 18: larger for "much better" means the
    metric also sees the size of a preference; each metric on its own scale)."""

    strength: str
    preference: int
    answers: int
    accuracy: dict[str, float]
    mean_difference: dict[str, float]


@dataclass(frozen=True)
class AnswerDiagnostics:
    """Accuracy by |standard DCG difference| bin and by answer strength.

    ``answers`` counts every answer, ``identical`` those whose lists hold the same grades (left
    out), ``scored`` the answers with a direction and distinct lists, ``ties`` the "about the
    same" answers on distinct lists and ``tie_share`` their share of the answers on distinct
    lists. ``in_sample``: the differences came from a table fitted on these answers.
    ``reference`` names the metric whose |difference| defines the bins.
    """

    metrics: tuple[str, ...]
    reference: str
    in_sample: bool
    by_difference: tuple[DifferenceBin, ...]
    by_strength: tuple[StrengthRow, ...]
    answers: int
    identical: int
    scored: int
    ties: int
    tie_share: float

    def to_json(self) -> dict:
        """Plain floats, ints, lists and dicts (nan stays nan: the caller decides)."""
        return {
            "metrics": list(self.metrics),
            "reference": self.reference,
            "in_sample": self.in_sample,
            "by_difference": [
                {"low": b.low, "high": b.high, "answers": b.answers, "accuracy": dict(b.accuracy)}
                for b in self.by_difference
            ],
            "by_strength": [
                {
                    "strength": row.strength,
                    "preference": row.preference,
                    "answers": row.answers,
                    "accuracy": dict(row.accuracy),
                    "mean_difference": dict(row.mean_difference),
                }
                for row in self.by_strength
            ],
            "answers": self.answers,
            "identical": self.identical,
            "scored": self.scored,
            "ties": self.ties,
            "tie_share": self.tie_share,
        }


def utility_differences(table: np.ndarray, data: PreferenceData) -> np.ndarray:
    """``u(left) - u(right)`` per answer, shape (n,), under a (K, L) utility table (W, T(W), or
    a DCG's ``c ⊗ g``)."""
    return utilities(table, data.left) - utilities(table, data.right)


def _credit(difference: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """1 if the predicted direction is the wanted one, 0.5 for a predicted exact tie, else 0.

    ``wanted`` is -1 (left better) or +1; a difference within 1e-9 of the largest one is a tie
    (rounding noise of sums such as 0.5 + 0.25 against 0.75).
    """
    scale = float(np.abs(difference).max()) if difference.size else 0.0
    tolerance = 1e-9 * max(scale, 1e-300)
    predicted = np.where(np.abs(difference) <= tolerance, 0.0, -np.sign(difference))
    return np.where(predicted == 0, 0.5, (predicted == wanted).astype(float))


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")


def _bin_index(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Quantile bins of ``values``: about equal counts, every bin non-empty, equal values in one
    bin (DCG differences of short lists take few distinct values, so there may be fewer)."""
    # Edges are values of the data ("inverted_cdf"), so each bin (e_i, e_{i+1}] holds e_{i+1}.
    edges = np.unique(np.quantile(values, np.linspace(0.0, 1.0, n_bins + 1), method="inverted_cdf"))
    return np.searchsorted(edges[1:-1], values, side="left")


def answer_diagnostics(
    data: PreferenceData,
    differences: Mapping[str, np.ndarray],
    n_grades: int,
    *,
    in_sample: bool,
    bins: int = 4,
    min_per_bin: int = MIN_PER_BIN,
    reference: str = "exp",
) -> AnswerDiagnostics:
    """Accuracy of each metric by |standard DCG difference| bin and by answer strength.

    Parameters
    ----------
    data : PreferenceData
        The answers (preference -2..2, negative = left better).
    differences : mapping of metric name -> array, shape (n,)
        Predicted ``u(left) - u(right)`` of every answer under each metric (in the order
        shown), e.g. `utility_differences` of the learned DCG's ``c ⊗ g`` and of the standard
        DCGs, or held-out predictions.
    n_grades : int
        L (grades ``0..L-1``), for the reference DCG.
    in_sample : bool
        Whether the learned differences come from a fit on these same answers (then its
        accuracy here is optimistic); recorded in the result.
    bins : int
        Quantile bins of |difference| under the reference (fewer when the answers would leave
        a bin with fewer than ``min_per_bin``, or when the differences take fewer values).
    min_per_bin : int
    reference : {"exp", "linear"}
        The standard DCG@K (discount ``1/log2(1+k)``) whose |difference| between the two lists
        defines the bins: the paper splits by the DCG difference of the pair (Figs. 4-5).

    Returns
    -------
    AnswerDiagnostics
        Accuracies are nan where no answer is scored.

    Raises
    ------
    ValueError
        No metric, a difference array of the wrong shape or not finite, ``bins`` or
        ``min_per_bin`` below 1.
    """
    if not differences:
        raise ValueError("no metric to diagnose")
    if bins < 1 or min_per_bin < 1:
        raise ValueError(f"bins and min_per_bin must be >= 1, got {bins} and {min_per_bin}")
    n = len(data)
    predicted = {}
    for name, values in differences.items():
        array = np.asarray(values, dtype=float)
        if array.shape != (n,) or not np.all(np.isfinite(array)):
            raise ValueError(f"differences[{name!r}] must be {n} finite numbers, got shape {array.shape}")
        predicted[name] = array
    identical = data.identical()
    distinct = ~identical
    scored = np.flatnonzero((data.preference != 0) & distinct)
    wanted = np.sign(data.preference[scored]).astype(float)
    credit = {name: _credit(values[scored], wanted) for name, values in predicted.items()}

    by_difference: list[DifferenceBin] = []
    if scored.size:
        gap = np.abs(utility_differences(standard_weights(data.cutoff, n_grades, reference), data))[scored]
        index = _bin_index(gap, min(bins, max(1, gap.size // min_per_bin)))
        for number in np.unique(index):
            members = index == number
            by_difference.append(
                DifferenceBin(
                    low=float(gap[members].min()),
                    high=float(gap[members].max()),
                    answers=int(members.sum()),
                    accuracy={name: _mean(values[members]) for name, values in credit.items()},
                )
            )

    strength = np.abs(data.preference[scored])
    by_strength = []
    for level, words in STRENGTHS:
        members = strength == level
        by_strength.append(
            StrengthRow(
                strength=words,
                preference=level,
                answers=int(members.sum()),
                accuracy={name: _mean(values[members]) for name, values in credit.items()},
                mean_difference={
                    name: _mean(np.abs(values[scored][members])) for name, values in predicted.items()
                },
            )
        )
    ties = int(np.sum((data.preference == 0) & distinct))
    n_distinct = int(distinct.sum())
    return AnswerDiagnostics(
        metrics=tuple(predicted),
        reference=reference,
        in_sample=in_sample,
        by_difference=tuple(by_difference),
        by_strength=tuple(by_strength),
        answers=n,
        identical=int(identical.sum()),
        scored=int(scored.size),
        ties=ties,
        tie_share=ties / n_distinct if n_distinct else float("nan"),
    )
