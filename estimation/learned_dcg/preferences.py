"""Pairwise preferences: canonical form, preferences inferred from grades, assessor agreement.

Niu et al. (SIGIR 2012), section 4.1.2 and Tables 2-3; the definitions are in
``docs/judging.md``, "Assessor agreement":

- the 3x3 table of one assessor's answer (rows: A>B, A~B, A<B) against another's
  (columns), row-normalised: cell (X1, X2) estimates P(other says X2 | one says X1);
- overall agreement: the share of doubly judged pairs on which the two answers agree;
- agreement ignoring ties: the same over the pairs neither assessor called a tie;
- chance-corrected agreement: Cohen's kappa (Cohen 1960) for two assessors, Fleiss' kappa
  (Fleiss 1971) for more;
- for graded campaigns, preferences inferred from grades: A>B when grade(A) > grade(B),
  A~B when the grades are equal (the paper's Table 3).

A preference is ``(topic, first, second, outcome, assessor)`` with ``outcome`` one of
``"left"`` (the first document is more relevant), ``"tie"`` or ``"right"`` (the second is).
The same judgment can be written either way round, ``(A, B, "left")`` or ``(B, A, "right")``;
`canonical_preference` puts the smaller docno first so that both forms compare equal.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Outcome = Literal["left", "tie", "right"]
OUTCOMES: tuple[Outcome, ...] = ("left", "tie", "right")
# Row/column order of the agreement tables: A>B, A~B, A<B for the canonical pair (A, B).
_OUTCOME_INDEX: dict[str, int] = {"left": 0, "tie": 1, "right": 2}
_FLIPPED: dict[str, Outcome] = {"left": "right", "tie": "tie", "right": "left"}


@dataclass(frozen=True)
class Preference:
    """One pairwise judgment.

    Attributes
    ----------
    topic : str
    first, second : str
        The two docnos, as presented (or in any order: see `canonical_preference`).
    outcome : {"left", "tie", "right"}
        ``"left"``: `first` is more relevant; ``"right"``: `second` is; ``"tie"``.
    assessor : str
    """

    topic: str
    first: str
    second: str
    outcome: Outcome
    assessor: str

    def __post_init__(self) -> None:
        if self.outcome not in _OUTCOME_INDEX:
            raise ValueError(f"outcome must be 'left', 'tie' or 'right', got {self.outcome!r}")
        if self.first == self.second:
            raise ValueError(
                f"topic {self.topic!r}: a document ({self.first!r}) cannot be compared with itself"
            )


def flip_outcome(outcome: Outcome) -> Outcome:
    """The same judgment seen with the two documents swapped."""
    if outcome not in _FLIPPED:
        raise ValueError(f"outcome must be 'left', 'tie' or 'right', got {outcome!r}")
    return _FLIPPED[outcome]


def canonical_preference(preference: Preference) -> Preference:
    """The judgment with the smaller docno first: ``(B, A, right)`` becomes ``(A, B, left)``."""
    if preference.first <= preference.second:
        return preference
    return Preference(
        preference.topic,
        preference.second,
        preference.first,
        flip_outcome(preference.outcome),
        preference.assessor,
    )


def as_preferences(
    rows: Iterable[Preference | Sequence[str]],
) -> list[Preference]:
    """Accept `Preference` objects or plain ``(topic, first, second, outcome, assessor)`` rows."""
    result: list[Preference] = []
    for number, row in enumerate(rows, start=1):
        if isinstance(row, Preference):
            result.append(row)
            continue
        if len(row) != 5:
            raise ValueError(
                f"preference row {number}: expected (topic, first, second, outcome, assessor), got {row!r}"
            )
        topic, first, second, outcome, assessor = (str(value) for value in row)
        try:
            result.append(Preference(topic, first, second, outcome, assessor))  # type: ignore[arg-type]  # the outcome is checked to be one of the literal ones
        except ValueError as error:
            raise ValueError(f"preference row {number}: {error}") from None
    return result


def preferences_from_grades(
    judgments: Iterable[tuple[str, str, int, str]],
) -> list[Preference]:
    """Preferences inferred from graded judgments (Niu et al. 2012, section 4.1.2).

    For every topic and assessor, every pair of documents that assessor graded becomes
    one preference: A>B when grade(A) > grade(B), A~B when equal. Pairs are canonical
    (smaller docno first).

    Parameters
    ----------
    judgments : iterable of (topic, docno, grade, assessor)
        An assessor who graded a document twice keeps the last grade.

    Returns
    -------
    list of Preference
        ``m (m - 1) / 2`` preferences per (topic, assessor) with ``m`` graded documents.
    """
    grades: dict[tuple[str, str], dict[str, int]] = {}
    for number, row in enumerate(judgments, start=1):
        if len(row) != 4:
            raise ValueError(f"judgment row {number}: expected (topic, docno, grade, assessor), got {row!r}")
        topic, docno, grade, assessor = row
        if isinstance(grade, bool) or not float(grade).is_integer():
            raise ValueError(f"judgment row {number}: grade {grade!r} is not an integer")
        grades.setdefault((str(topic), str(assessor)), {})[str(docno)] = int(grade)
    inferred: list[Preference] = []
    for (topic, assessor), grade_of in grades.items():
        for first, second in itertools.combinations(sorted(grade_of), 2):
            difference = grade_of[first] - grade_of[second]
            outcome: Outcome = "left" if difference > 0 else "right" if difference < 0 else "tie"
            inferred.append(Preference(topic, first, second, outcome, assessor))
    return inferred


def _answers_by_assessor(preferences: Iterable[Preference]) -> dict[str, dict[tuple[str, str, str], int]]:
    """assessor -> canonical (topic, A, B) -> outcome index; a repeated pair keeps the last answer."""
    answers: dict[str, dict[tuple[str, str, str], int]] = {}
    for preference in preferences:
        canonical = canonical_preference(preference)
        key = (canonical.topic, canonical.first, canonical.second)
        answers.setdefault(canonical.assessor, {})[key] = _OUTCOME_INDEX[canonical.outcome]
    return answers


# ---------------------------------------------------------------------------------------------
# Chance-corrected coefficients


def cohen_kappa(counts: np.ndarray) -> float:
    """Cohen's kappa (Cohen 1960) of a square contingency table of two raters.

    ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the diagonal share and
    ``p_e = sum_c p_row(c) p_col(c)`` the agreement expected from the marginals.

    Parameters
    ----------
    counts : array, shape (C, C)
        ``counts[i, j]``: items rater 1 put in category i and rater 2 in category j.

    Returns
    -------
    float
        1 for perfect agreement, 0 at chance; NaN when ``p_e = 1`` (both raters used one
        and the same category throughout: kappa is undefined).
    """
    table = _check_counts(counts, square=True)
    total = table.sum()
    observed = np.trace(table) / total
    expected = float(table.sum(axis=1) @ table.sum(axis=0)) / total**2
    if np.isclose(expected, 1.0):
        return float("nan")
    return float((observed - expected) / (1.0 - expected))


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa (Fleiss 1971) of items rated by several raters.

    ``P_i = sum_c n_ic (n_ic - 1) / (n_i (n_i - 1))``, ``P_bar = mean_i P_i``,
    ``p_c = sum_i n_ic / sum_i n_i``, ``P_e = sum_c p_c^2``,
    ``kappa = (P_bar - P_e) / (1 - P_e)``. With the same number of ratings per item this is
    Fleiss' coefficient; items with different numbers of ratings (>= 2) use the same
    per-item agreement ``P_i`` (the usual generalisation).

    Parameters
    ----------
    counts : array, shape (items, C)
        ``counts[i, c]``: raters who put item i in category c. Items with fewer than two
        ratings carry no agreement information and are ignored.

    Returns
    -------
    float
        NaN when ``P_e = 1`` (one category used throughout).

    Raises
    ------
    ValueError
        Negative or non-integer counts, or no item with at least two ratings.
    """
    table = _check_counts(counts, square=False)
    ratings = table.sum(axis=1)
    table = table[ratings >= 2]
    ratings = ratings[ratings >= 2]
    if table.shape[0] == 0:
        raise ValueError("fleiss_kappa: no item has two or more ratings")
    per_item = (table * (table - 1)).sum(axis=1) / (ratings * (ratings - 1))
    category_share = table.sum(axis=0) / ratings.sum()
    expected = float(category_share @ category_share)
    if np.isclose(expected, 1.0):
        return float("nan")
    return float((per_item.mean() - expected) / (1.0 - expected))


def _check_counts(counts: np.ndarray, *, square: bool) -> np.ndarray:
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or (square and table.shape[0] != table.shape[1]):
        shape = "square (C, C)" if square else "(items, categories)"
        raise ValueError(f"counts must be a {shape} table, got shape {table.shape}")
    if not np.all(np.isfinite(table)) or np.any(table < 0) or np.any(table != np.round(table)):
        raise ValueError("counts must be non-negative integers")
    if table.sum() == 0:
        raise ValueError("counts: the table is empty")
    return table


# ---------------------------------------------------------------------------------------------
# Agreement between assessors


@dataclass(frozen=True, eq=False)
class Agreement:
    """Agreement on doubly judged pairs (Niu et al. 2012, Tables 2-3).

    Attributes
    ----------
    counts : ndarray of int, shape (3, 3)
        Rows: one assessor's answer, columns: the other's, in the order (A>B, A~B, A<B)
        for the canonical pair (smaller docno A).
    overall : float
        Share of the counted answer pairs that agree (the table's trace over its total).
    ignoring_ties : float
        The same over the answer pairs where neither said "tie"; NaN if there is none.
    kappa : float
        Cohen's kappa (two assessors) or Fleiss' kappa (pooled over several).
    kappa_kind : {"cohen", "fleiss"}
    n_pairs : int
        Distinct (topic, A, B) pairs judged by at least two of the assessors counted.
    """

    counts: np.ndarray
    overall: float
    ignoring_ties: float
    kappa: float
    kappa_kind: Literal["cohen", "fleiss"]
    n_pairs: int

    @property
    def row_normalised(self) -> np.ndarray:
        """P(column answer | row answer), shape (3, 3); a row nobody used is NaN."""
        row_totals = self.counts.sum(axis=1, keepdims=True).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(row_totals > 0, self.counts / row_totals, np.nan)


def _agreement_shares(counts: np.ndarray) -> tuple[float, float]:
    overall = float(np.trace(counts) / counts.sum())
    strict = counts[np.ix_([0, 2], [0, 2])]
    ignoring_ties = float(np.trace(strict) / strict.sum()) if strict.sum() else float("nan")
    return overall, ignoring_ties


def agreement_between(
    preferences: Iterable[Preference | Sequence[str]], first_assessor: str, second_assessor: str
) -> Agreement:
    """The agreement table and Cohen's kappa of two assessors on the pairs both judged.

    Parameters
    ----------
    preferences : iterable of Preference or (topic, first, second, outcome, assessor)
        Either orientation of a pair; an assessor's repeated answer to a pair keeps the last.
    first_assessor, second_assessor : str
        Rows of the table are `first_assessor`'s answers.

    Raises
    ------
    ValueError
        The same assessor twice, or no pair judged by both.
    """
    if first_assessor == second_assessor:
        raise ValueError(f"agreement_between needs two different assessors, got {first_assessor!r} twice")
    answers = _answers_by_assessor(as_preferences(preferences))
    first = answers.get(first_assessor, {})
    second = answers.get(second_assessor, {})
    shared = first.keys() & second.keys()
    if not shared:
        raise ValueError(f"assessors {first_assessor!r} and {second_assessor!r} judged no pair in common")
    counts = np.zeros((3, 3), dtype=np.int64)
    for key in shared:
        counts[first[key], second[key]] += 1
    overall, ignoring_ties = _agreement_shares(counts)
    return Agreement(counts, overall, ignoring_ties, cohen_kappa(counts), "cohen", len(shared))


def agreement_pooled(preferences: Iterable[Preference | Sequence[str]]) -> Agreement:
    """Agreement over every pair of assessors who judged the same pair (the paper's tables).

    Every ordered pair of distinct assessors (u, v) who both judged a pair adds one count
    at (u's answer, v's answer), so the table is symmetric in the assessors and a row reads
    "one assessor said X1, another said X2". The coefficient is Fleiss' kappa over the
    pairs judged at least twice.

    Raises
    ------
    ValueError
        No pair judged by two or more assessors.
    """
    answers = _answers_by_assessor(as_preferences(preferences))
    by_pair: dict[tuple[str, str, str], list[int]] = {}
    for answer_of in answers.values():
        for key, outcome in answer_of.items():
            by_pair.setdefault(key, []).append(outcome)
    shared = [outcomes for outcomes in by_pair.values() if len(outcomes) >= 2]
    if not shared:
        raise ValueError("no pair was judged by two or more assessors")
    counts = np.zeros((3, 3), dtype=np.int64)
    category_counts = np.zeros((len(shared), 3), dtype=np.int64)
    for row, outcomes in enumerate(shared):
        for one, other in itertools.permutations(outcomes, 2):
            counts[one, other] += 1
        category_counts[row] = np.bincount(outcomes, minlength=3)
    overall, ignoring_ties = _agreement_shares(counts)
    return Agreement(counts, overall, ignoring_ties, fleiss_kappa(category_counts), "fleiss", len(shared))


__all__ = [
    "OUTCOMES",
    "Agreement",
    "Outcome",
    "Preference",
    "agreement_between",
    "agreement_pooled",
    "as_preferences",
    "canonical_preference",
    "cohen_kappa",
    "flip_outcome",
    "fleiss_kappa",
    "preferences_from_grades",
]
