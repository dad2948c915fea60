"""Top-K lists as vectors, utilities over them, and what a utility says about preferences.

The building blocks of learned DCG (Zhou, Zha, Chang and Xue, *Learning the gain values and
discount factors of DCG*, IEEE TKDE 26(2), 2014; see `estimation.learned_dcg.fit`). Grades ``y``
run ``0..L-1``, higher is better (the paper numbers its labels the other way round). A top-K
list is the one-hot encoding ``s`` of its grades per position (§4.2); a utility
``u = wᵀs = Σ_k W[k, y_k]`` generalises DCG (``W = c ⊗ g``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EMPTY = -1

# ---------------------------------------------------------------------------------------------
# Encoding and utilities


def _grade_matrix(grades: np.ndarray, n_grades: int | None, *, name: str) -> np.ndarray:
    array = np.asarray(grades)
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D (lists x positions), got shape {array.shape}")
    if array.size and array.dtype.kind not in "iu":
        if array.dtype.kind != "f" or not np.all(array == np.round(array)):
            raise ValueError(f"{name}: grades must be integers (-1 marks an empty position)")
    array = array.astype(np.int64, copy=False)
    top = None if n_grades is None else n_grades - 1
    if array.size and (array.min() < EMPTY or (top is not None and array.max() > top)):
        raise ValueError(f"{name}: grades must lie in -1..{top} (-1 marks an empty position)")
    return array


def encode_lists(grades: np.ndarray, n_grades: int) -> np.ndarray:
    """The binary encoding ``s(π)`` of lists (Zhou et al. 2014, §4.2).

    Parameters
    ----------
    grades : array of int, shape (n, K)
        Grade at each position; ``-1`` marks an empty position.
    n_grades : int
        L, the number of grades (``0..L-1``).

    Returns
    -------
    ndarray of float, shape (n, K*L)
        Block ``k`` is the one-hot of the grade at position ``k`` (all zeros when empty).
    """
    if n_grades < 2:
        raise ValueError(f"n_grades must be >= 2, got {n_grades}")
    matrix = _grade_matrix(grades, n_grades, name="grades")
    n, n_positions = matrix.shape
    encoded = np.zeros((n, n_positions, n_grades))
    rows, positions = np.nonzero(matrix >= 0)
    encoded[rows, positions, matrix[rows, positions]] = 1.0
    return encoded.reshape(n, n_positions * n_grades)


def _check_weights(weights: np.ndarray) -> np.ndarray:
    table = np.asarray(weights, dtype=float)
    if table.ndim != 2 or table.shape[1] < 2:
        raise ValueError(f"weights must have shape (K, L) with L >= 2, got {table.shape}")
    if not np.all(np.isfinite(table)):
        raise ValueError("weights must be finite")
    return table


def utilities(weights: np.ndarray, grades: np.ndarray) -> np.ndarray:
    """``u = Σ_k W[k, y_k]`` per list, shape (n,); empty positions add 0.

    ``weights`` has shape (K, L); ``grades`` (n, K) with ``-1`` for an empty position.
    """
    table = _check_weights(weights)
    matrix = _grade_matrix(grades, table.shape[1], name="grades")
    if matrix.shape[1] != table.shape[0]:
        raise ValueError(f"grades have {matrix.shape[1]} positions but weights have {table.shape[0]}")
    padded = np.hstack([table, np.zeros((table.shape[0], 1))])  # index -1 reads 0
    return padded[np.arange(table.shape[0]), matrix].sum(axis=1)


def standard_weights(cutoff: int, n_grades: int, gain: str) -> np.ndarray:
    """DCG@K as ``W = c ⊗ g``: ``c_k = 1/log2(k+1)``, ``g = 2^y - 1`` ("exp") or ``y`` ("linear")."""
    if cutoff < 1 or n_grades < 2:
        raise ValueError(f"need cutoff >= 1 and n_grades >= 2, got {cutoff} and {n_grades}")
    grades = np.arange(n_grades, dtype=float)
    if gain == "exp":
        gains = 2.0**grades - 1.0
    elif gain == "linear":
        gains = grades
    else:
        raise ValueError(f"gain must be 'exp' or 'linear', got {gain!r}")
    return np.outer(1.0 / np.log2(np.arange(1, cutoff + 1) + 1.0), gains)


def transformed_weights(weights: np.ndarray) -> np.ndarray:
    """``T(W) = W - W[:, :1]``: the worst grade is worth 0 at every position (eq. 4)."""
    table = _check_weights(weights)
    return table - table[:, :1]


# ---------------------------------------------------------------------------------------------
# Preference data


@dataclass(frozen=True)
class PreferenceData:
    """Side-by-side answers: for each, two lists and the assessor's preference.

    Attributes
    ----------
    left, right : array of int, shape (n, K)
        Grades of the two lists per position, ``-1`` for an empty position.
    preference : array of int, shape (n,)
        ``-2..2``: negative means the left list is better (-2 much better), 0 about the same.
    groups : array, shape (n,)
        Topic of each answer; cross-validation and the bootstrap resample whole topics.
    """

    left: np.ndarray
    right: np.ndarray
    preference: np.ndarray
    groups: np.ndarray

    def __post_init__(self) -> None:
        left = _grade_matrix(self.left, None, name="left")
        right = _grade_matrix(self.right, None, name="right")
        if left.shape != right.shape:
            raise ValueError(f"left and right must have the same shape, got {left.shape} and {right.shape}")
        preference = np.asarray(self.preference)
        if preference.shape != (left.shape[0],):
            raise ValueError(f"preference must have shape ({left.shape[0]},), got {preference.shape}")
        if preference.size and (
            preference.dtype.kind not in "iuf"
            or np.any(preference != np.round(preference))
            or np.any(np.abs(preference) > 2)
        ):
            raise ValueError("preference must hold integers in -2..2 (negative: left better, 0: same)")
        groups = np.asarray(self.groups)
        if groups.shape != (left.shape[0],):
            raise ValueError(f"groups must have shape ({left.shape[0]},), got {groups.shape}")
        object.__setattr__(self, "left", left)
        object.__setattr__(self, "right", right)
        object.__setattr__(self, "preference", preference.astype(np.int64))
        object.__setattr__(self, "groups", groups)

    def __len__(self) -> int:
        return int(self.preference.shape[0])

    @property
    def cutoff(self) -> int:
        return int(self.left.shape[1])

    def identical(self) -> np.ndarray:
        """Answers whose two lists have the same encoding (same grade at every position)."""
        return np.all(self.left == self.right, axis=1)


# ---------------------------------------------------------------------------------------------
# Gains and discounts, accuracy


@dataclass(frozen=True)
class RankOne:
    """Gains (worst grade 0, best 1), discounts (``c_1 = 1``) and ``σ₂/σ₁`` of ``T(W)``."""

    gains: np.ndarray
    discounts: np.ndarray
    sigma_ratio: float


def rank_one(transformed: np.ndarray) -> RankOne:
    """The best DCG form ``c ⊗ g`` of ``T(W)`` from its leading singular pair (§4.3 end).

    ``T(W) = U Σ Vᵀ``; ``c̃ = σ₁ U[:, 0]``, ``g̃ = V[0, :]``, both signs flipped when
    ``g̃[L-1] < g̃[0]``; ``g = (g̃ - g̃₀) / (g̃_{L-1} - g̃₀)``, ``c = c̃ / c̃₁``. ``σ₂/σ₁`` near 0
    means the DCG form holds; large means the gains depend on the position.

    Raises
    ------
    ValueError
        ``T(W)`` is zero, its gains give the best and worst grade the same value, or its
        first position has no weight (no normalisation exists).
    """
    table = _check_weights(transformed)
    u, sigma, vt = np.linalg.svd(table, full_matrices=False)
    scale = float(np.abs(table).max())
    if sigma[0] <= 1e-12 * max(scale, 1e-300) or scale == 0.0:
        raise ValueError("T(W) is zero: the fit learned no gains or discounts")
    discounts, gains = sigma[0] * u[:, 0], vt[0].copy()
    if gains[-1] < gains[0]:
        discounts, gains = -discounts, -gains
    spread = gains[-1] - gains[0]
    if spread <= 1e-12 * np.abs(gains).max():
        raise ValueError("the rank-1 gains give the best and the worst grade the same value")
    if abs(discounts[0]) <= 1e-12 * np.abs(discounts).max():
        raise ValueError("the rank-1 discount of position 1 is 0; cannot normalise c_1 = 1")
    ratio = float(sigma[1] / sigma[0]) if sigma.size > 1 else 0.0
    return RankOne((gains - gains[0]) / spread, discounts / discounts[0], ratio)


def _correct(w: np.ndarray, d: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per answer: 1 if ``w`` predicts its direction, 0.5 for a predicted exact tie, else 0."""
    difference = d @ w
    tolerance = 1e-9 * max(float(np.abs(w).max()), 1e-300) * d.shape[1]
    predicted = np.where(np.abs(difference) <= tolerance, 0.0, -np.sign(difference))
    return np.where(predicted == 0, 0.5, (predicted == wanted).astype(float))


def _scored_rows(data: PreferenceData) -> np.ndarray:
    return np.flatnonzero((data.preference != 0) & ~data.identical())


def preference_accuracy(weights: np.ndarray, data: PreferenceData) -> float:
    """Share of the non-tied answers with distinct lists whose direction ``W`` predicts.

    A predicted exact tie counts half. Raises ValueError when no such answer exists.
    """
    rows = _scored_rows(data)
    if rows.size == 0:
        raise ValueError("no answer with a direction (non-tied, lists not identical) to score")
    table = _check_weights(weights)
    n_grades = table.shape[1]
    d = encode_lists(data.left[rows], n_grades) - encode_lists(data.right[rows], n_grades)
    if d.shape[1] != table.size:
        raise ValueError(f"the lists have {data.cutoff} positions but weights have {table.shape[0]}")
    return float(_correct(table.reshape(-1), d, np.sign(data.preference[rows])).mean())


# ---------------------------------------------------------------------------------------------
# Active selection


def simple_margin(
    weights: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    groups: np.ndarray,
    *,
    batch: int = 1,
    exclude: np.ndarray | None = None,
) -> np.ndarray:
    """SimpleMargin (Tong & Koller 2001; Zhou et al. 2014, §5.5): the pairs to ask next.

    Candidates are ranked by ``|wᵀ(s_left - s_right)|``, smallest first (ties by index); a
    batch takes at most one pair per group (topic), never a pair whose lists have identical
    encodings and never an excluded one (answered pairs, pairs with unjudged documents).

    Start a campaign with random pairs: the paper and our simulation see active selection
    lose to random selection below about 30 labels, while the fit is still poor.

    Returns
    -------
    ndarray of int, shape (<= batch,)
        Indices into the candidates, in the order to ask them; fewer than ``batch`` when
        the eligible candidates or groups run out.
    """
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    table = _check_weights(weights)
    left_grades = _grade_matrix(left, table.shape[1], name="left")
    right_grades = _grade_matrix(right, table.shape[1], name="right")
    if left_grades.shape != right_grades.shape:
        raise ValueError(
            f"left and right must have the same shape, got {left_grades.shape} and {right_grades.shape}"
        )
    n = left_grades.shape[0]
    groups = np.asarray(groups)
    if groups.shape != (n,):
        raise ValueError(f"groups must have shape ({n},), got {groups.shape}")
    eligible = ~np.all(left_grades == right_grades, axis=1)
    if exclude is not None:
        excluded = np.asarray(exclude)
        if excluded.shape != (n,) or excluded.dtype != bool:
            raise ValueError(f"exclude must be a boolean mask of shape ({n},)")
        eligible &= ~excluded
    candidates = np.flatnonzero(eligible)
    margins = np.abs(utilities(table, left_grades[candidates]) - utilities(table, right_grades[candidates]))
    ordered = candidates[np.argsort(margins, kind="stable")]
    _, first = np.unique(groups[ordered], return_index=True)  # the best pair of each group
    return ordered[np.sort(first)][:batch]
