"""The two fits `learn_dcg` can repeat over folds and bootstrap replicates, behind one surface.

- `LikelihoodFitter` (the default): the ordered-probit likelihood of the five answers
  (`estimation.learned_dcg.likelihood`); its grid is the ridge's C; cross-validation maximises
  the held-out log-likelihood of every answer (ties and "much better" included).
- `QPFitter`: the paper's QP (DCGLearn, squared hinges, ties as a band of width 2); its grid
  is every pair (C, C_t) (or C_t = C, "same"); cross-validation maximises the
  held-out accuracy on answers with a direction, as the paper does.

Both take weights over all answers of the data (topic multiplicities of a fold or a bootstrap
replicate; 0 drops an answer) and return W (K, L); `score` is what cross-validation sums over
the held-out answers, higher is better.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr

from estimation.learned_dcg.likelihood import (
    OrdinalDesign,
    OrdinalFit,
    fit_ordinal,
    heldout_loglik,
    ordinal_design,
)
from estimation.learned_dcg.lists import PreferenceData, _correct, encode_lists
from estimation.learned_dcg.solvers import Design, merge_pairs, solve_newton, solve_qp

LIKELIHOOD = "likelihood"
QP = "qp"
METHODS = (LIKELIHOOD, QP)
METHOD_NAMES = {
    LIKELIHOOD: "ordered-probit likelihood (default)",
    QP: "the paper's QP (DCGLearn, Zhou et al. 2014)",
}


@dataclass(frozen=True)
class Scored:
    """The answers with a direction and distinct lists, as accuracy is measured on them."""

    rows: np.ndarray  # index into the data
    d: np.ndarray  # s_left - s_right, (n, K*L)
    wanted: np.ndarray  # -1: left better, +1: right better


def scored_answers(data: PreferenceData, n_grades: int) -> Scored:
    rows = np.flatnonzero((data.preference != 0) & ~data.identical())
    d = encode_lists(data.left[rows], n_grades) - encode_lists(data.right[rows], n_grades)
    return Scored(rows, d, np.sign(data.preference[rows]).astype(float))


def tie_answers(data: PreferenceData, n_grades: int) -> Scored:
    """The "about the same" answers with distinct lists (for the share of ties predicted)."""
    rows = np.flatnonzero((data.preference == 0) & ~data.identical())
    d = encode_lists(data.left[rows], n_grades) - encode_lists(data.right[rows], n_grades)
    return Scored(rows, d, np.zeros(rows.size))


@dataclass(frozen=True)
class Pairs:
    """The informative answers of a `PreferenceData` as rows of the paper's QP."""

    design: Design
    answer: np.ndarray  # index of the answer behind each informative pair
    is_tie: np.ndarray
    n_identical: int


def informative_pairs(data: PreferenceData, n_grades: int, *, ties: bool, much_better_margin: float) -> Pairs:
    """Strict answers (oriented from the preferred list, ``wᵀd >= margin``) and, when ``ties``,
    tied ones; answers with identical lists carry nothing and are left out."""
    if much_better_margin < 1.0 or not np.isfinite(much_better_margin):
        raise ValueError(f"much_better_margin must be a finite number >= 1, got {much_better_margin}")
    s_left = encode_lists(data.left, n_grades)
    s_right = encode_lists(data.right, n_grades)
    identical = data.identical()
    strict = (data.preference != 0) & ~identical
    tied = (data.preference == 0) & ~identical if ties else np.zeros(len(data), dtype=bool)
    answer = np.flatnonzero(strict | tied)
    sign = np.where(data.preference[answer] > 0, -1.0, 1.0)
    d = (s_left[answer] - s_right[answer]) * sign[:, None]
    is_tie = tied[answer]
    margin = np.where(np.abs(data.preference[answer]) == 2, much_better_margin, 1.0)
    design = merge_pairs(d, margin, is_tie, (data.cutoff, n_grades))
    return Pairs(design, answer, is_tie, int(identical.sum()))


class LikelihoodFitter:
    """The ordered-probit fit; parameters ``(C,)``, the ridge ``‖T(W)‖²/(2C)``."""

    method = LIKELIHOOD

    def __init__(self, data: PreferenceData, n_grades: int, *, ties: bool, monotone_discounts: bool) -> None:
        self.design: OrdinalDesign = ordinal_design(data, n_grades, ties=ties)
        self.n_answers = len(data)
        self.monotone_discounts = monotone_discounts
        self.used = np.zeros(len(data), dtype=bool)
        self.used[self.design.answer] = True

    def row_weights(self, answer_weights: np.ndarray) -> np.ndarray:
        return self.design.row_weights(answer_weights[self.design.answer])

    def fit(self, answer_weights: np.ndarray, params: tuple[float, ...], start: Any = None) -> OrdinalFit:
        return fit_ordinal(
            self.design,
            self.row_weights(answer_weights),
            params[0],
            monotone_discounts=self.monotone_discounts,
            start=start if isinstance(start, OrdinalFit) else None,
        )

    @staticmethod
    def table(model: Any) -> np.ndarray:
        return model.weights

    def score(self, model: Any, answer_weights: np.ndarray, scored: Scored) -> float:
        return heldout_loglik(model, self.design, self.row_weights(answer_weights))

    def predicts_tie(self, model: Any, d: np.ndarray) -> np.ndarray:
        """The "about the same" band is the most probable answer."""
        levels = self.design.levels[model.categories]
        if not np.any(levels == 0):
            return np.zeros(d.shape[0], dtype=bool)
        x = d @ model.weights.reshape(-1)
        edges = np.hstack(
            [np.zeros((x.size, 1)), ndtr(model.cuts[None, :] - x[:, None]), np.ones((x.size, 1))]
        )
        return np.diff(edges, axis=1).argmax(axis=1) == int(np.flatnonzero(levels == 0)[0])


class QPFitter:
    """The paper's QP; parameters ``(C, C_t)``."""

    method = QP

    def __init__(
        self,
        data: PreferenceData,
        n_grades: int,
        *,
        ties: bool,
        monotone_discounts: bool,
        much_better_margin: float,
    ) -> None:
        pairs = informative_pairs(data, n_grades, ties=ties, much_better_margin=much_better_margin)
        self.answer = pairs.answer
        self.design: Design = pairs.design
        self.monotone_discounts = monotone_discounts
        self.shape = (data.cutoff, n_grades)

    def fit(self, answer_weights: np.ndarray, params: tuple[float, ...], start: Any = None) -> np.ndarray:
        c_strict, c_tie = params
        row_weights = self.design.row_weights(answer_weights[self.answer])
        if not np.any(row_weights[~self.design.is_tie] > 0):
            raise ValueError("no strict preference carries weight: nothing fixes the scale of W")
        if self.monotone_discounts:
            w = solve_qp(self.design, row_weights, c_strict, c_tie, monotone_discounts=True)
        else:
            w = solve_newton(self.design, row_weights, c_strict, c_tie, start=start)
        return w

    def table(self, model: Any) -> np.ndarray:
        return model.reshape(self.shape)

    def score(self, model: Any, answer_weights: np.ndarray, scored: Scored) -> float:
        weight = answer_weights[scored.rows]
        keep = weight > 0
        return float(weight[keep] @ _correct(model, scored.d[keep], scored.wanted[keep]))

    @staticmethod
    def predicts_tie(model: Any, d: np.ndarray) -> np.ndarray:
        """Inside the QP's tie band ``|wᵀd| < 1``."""
        return np.abs(d @ model) < 1.0


Fitter = LikelihoodFitter | QPFitter
