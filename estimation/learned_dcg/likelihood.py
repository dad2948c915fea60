"""Learned DCG by likelihood: an ordered-probit model of the five side-by-side answers.

The paper's QP (`estimation.learned_dcg.solvers`) treats an answer as a margin constraint and
ties as a band of width 2 around 0; both the band and the squared hinge pull ``T(W)`` towards
flat gains and discounts, and no choice of C undoes it (simulated answers from gains
[0, 0.75, 1] and discounts 1/k^1.4 stay at g1 0.70, c2 0.46 with 30,000 answers). Here the
answer itself is modelled. With ``x = wᵀ(s_left - s_right)`` the utility difference and the
answers ordered from "right much better" (category 0) to "left much better" (category J-1),

    P(answer <= j | x) = Φ(τ_j - x),     τ_0 < τ_1 < ... < τ_{J-2} learned cut points,

so "about the same" is the band between two learned cut points, "much better" the tails, and
a side bias shifts the cut points. The noise has unit variance, which fixes the scale of W.
``W[k, 0] = 0`` (empty position = worst grade, as DCG counts them) and ``W[k, l] = Σ_{m<=l}
δ_{k,m}`` with ``δ >= 0`` (gains monotone in the grade at every position); optionally the
discounts are non-increasing. A ridge ``‖T(W)‖² / (2C)`` (C = inf: none) keeps the fit finite
on separable answers; C is chosen by cross-validation of the held-out log-likelihood.

The negative log-likelihood of the ordered probit is convex in ``(W, τ)`` (Pratt 1981), so a
projected Fisher-scoring Newton method (expected information, always positive semi-definite,
bounds by the active-set solver of the QP route) with a backtracking line search reaches the
optimum; with non-increasing discounts each step's quadratic is solved by Clarabel.

`fit_rank_one` fits the same model under ``W = c ⊗ g`` (``c >= 0``, ``g`` monotone, ``g_0 = 0``)
by alternating the two convex halves; `form_test` compares the two maximised likelihoods
(likelihood ratio against χ² with ``(K-1)(L-2)`` degrees of freedom).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from estimation.distributions import chi2_sf, normal_ppf
from estimation.learned_dcg.lists import PreferenceData, encode_lists
from estimation.learned_dcg.solvers import _bounded_quadratic

_SQRT_2PI = np.sqrt(2.0 * np.pi)
_TINY = 1e-300


def _pdf(z: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * z * z) / _SQRT_2PI


@dataclass(frozen=True)
class OrdinalDesign:
    """Informative answers merged into unique (list difference, answer) rows.

    ``cumulative`` (u, K, L-1): ``1(y_left,k >= m) - 1(y_right,k >= m)`` for grades m = 1..L-1,
    so that ``x = Σ δ_{k,m} cumulative[k, m]``; ``category`` (u,) the ordinal answer 0..J-1;
    ``rows`` maps each used answer to its unique row; ``answer`` the index of each used answer
    in the data; ``levels`` the preference value (-2..2) of each category.
    """

    cumulative: np.ndarray
    category: np.ndarray
    rows: np.ndarray
    answer: np.ndarray
    levels: np.ndarray
    shape: tuple[int, int]

    @property
    def n_categories(self) -> int:
        return int(self.levels.size)

    @property
    def flat(self) -> np.ndarray:
        """``cumulative`` as a (u, K(L-1)) design over the increments δ."""
        return self.cumulative.reshape(self.cumulative.shape[0], -1)

    def row_weights(self, answer_weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.rows, weights=answer_weights, minlength=self.category.size)


def ordinal_design(data: PreferenceData, n_grades: int, *, ties: bool = True) -> OrdinalDesign:
    """The answers the likelihood uses: every answer whose two lists differ (ties included
    unless ``ties`` is False), as categories of the observed answer levels in order."""
    identical = data.identical()
    used = ~identical & ((data.preference != 0) | ties)
    answer = np.flatnonzero(used)
    left = encode_lists(data.left[answer], n_grades).reshape(answer.size, data.cutoff, n_grades)
    right = encode_lists(data.right[answer], n_grades).reshape(answer.size, data.cutoff, n_grades)
    # 1(y >= m) for m = 1..L-1: the reversed cumulative sum of the one-hot.
    at_least = lambda s: np.cumsum(s[:, :, ::-1], axis=2)[:, :, ::-1][:, :, 1:]  # noqa: E731
    cumulative = at_least(left) - at_least(right)
    # Higher category = the left list better (x = utility of left minus right).
    ordinal = -data.preference[answer]
    levels = np.unique(ordinal)
    category = np.searchsorted(levels, ordinal)
    key = np.hstack([cumulative.reshape(answer.size, -1), category[:, None]])
    unique, rows = np.unique(key, axis=0, return_inverse=True)
    return OrdinalDesign(
        cumulative=np.ascontiguousarray(unique[:, :-1]).reshape(-1, data.cutoff, n_grades - 1),
        category=unique[:, -1].astype(np.int64),
        rows=rows.reshape(-1),
        answer=answer,
        levels=-levels,
        shape=(data.cutoff, n_grades),
    )


# ---------------------------------------------------------------------------------------------
# The generic ordinal regression: x = X β, cut points τ, bounds on β, a ridge on β.


@dataclass(frozen=True)
class _Problem:
    X: np.ndarray  # (u, p)
    category: np.ndarray  # (u,)
    weight: np.ndarray  # (u,) multiplicities
    n_categories: int
    penalty: np.ndarray  # (p, p), 0 for none
    bounded: np.ndarray  # (p,) bool: β_j >= 0
    constraints: np.ndarray | None = None  # (r, p): A β >= 0 besides the bounds


def _cuts(free: np.ndarray, n_categories: int) -> np.ndarray:
    """τ from ``[τ_0, κ_1, ...]`` (κ = gaps >= 0)."""
    return free[0] + np.concatenate([[0.0], np.cumsum(free[1:])]) if n_categories > 1 else free[:0]


def _category_terms(x: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row and category boundary: Φ(τ_j - x) and φ(τ_j - x), shape (u, J-1)."""
    z = cuts[None, :] - x[:, None]
    return ndtr(z), _pdf(z)


def _negative_loglik(problem: _Problem, beta: np.ndarray, cut_free: np.ndarray) -> float:
    cuts = _cuts(cut_free, problem.n_categories)
    if np.any(np.diff(cuts) < 0):
        return np.inf
    x = problem.X @ beta
    padded = np.concatenate([[-np.inf], cuts, [np.inf]])
    upper = padded[problem.category + 1] - x
    lower = padded[problem.category] - x
    # Φ(u) - Φ(l), computed on the side of 0 where it does not cancel: reflected when l > 0.
    side = np.where(lower > 0, -1.0, 1.0)
    p = side * (ndtr(side * upper) - ndtr(side * lower))
    if np.any(p <= 0):
        return np.inf
    return float(-(problem.weight @ np.log(np.maximum(p, _TINY))) + 0.5 * beta @ problem.penalty @ beta)


def _gradient_and_information(
    problem: _Problem, beta: np.ndarray, cut_free: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient of the penalised negative log-likelihood and its expected information, in the
    coordinates ``[β, τ_0, κ]``.

    Written for the fit's inner loop (thousands of calls on a few thousand rows, where numpy's
    per-call cost is most of the time): the ±∞ ends are padded in place, the observed
    category's terms are gathered rather than masked, and the cut-point sums are bincounts."""
    J = problem.n_categories
    cuts = _cuts(cut_free, J)
    X, category, w = problem.X, problem.category, problem.weight
    x = X @ beta
    u = x.size
    z = cuts[None, :] - x[:, None]
    # Cumulative probabilities and densities padded with the ±∞ ends: F_{-1} = 0, F_{J-1} = 1.
    F_pad = np.empty((u, J + 1))
    F_pad[:, 0], F_pad[:, -1] = 0.0, 1.0
    F_pad[:, 1:-1] = ndtr(z)
    f_pad = np.zeros((u, J + 1))
    f = f_pad[:, 1:-1]
    f[...] = _pdf(z)
    p = np.maximum(F_pad[:, 1:] - F_pad[:, :-1], _TINY)  # (u, J)
    # ∂p_c/∂x = f_{c-1} - f_c; ∂p_c/∂τ_c = f_c; ∂p_c/∂τ_{c-1} = -f_{c-1} (f_{-1} = f_{J-1} = 0).
    slope = f_pad[:, :-1] - f_pad[:, 1:]  # (u, J)
    rows = np.arange(u)
    f_below, f_above = f_pad[rows, category], f_pad[rows, category + 1]
    inverse = w / p[rows, category]
    gradient_x = (f_above - f_below) * inverse  # of the negative log-likelihood
    # Σ over rows of ∂(-log p_c)/∂τ_j: -f_j/p_c where c = j, +f_j/p_c where c = j + 1.
    gradient_cuts = (
        np.bincount(category, weights=f_below * inverse, minlength=J)[1:]
        - np.bincount(category, weights=f_above * inverse, minlength=J)[:-1]
    )
    # Expected information Σ_c ∂p_c ∂p_cᵀ / p_c (weighted), in closed form: the cut-point
    # block is tridiagonal.
    ratio = slope / p
    info_xx = w * np.einsum("uj,uj->u", slope, ratio)
    weighted_f = w[:, None] * f
    info_xc = weighted_f * (ratio[:, :-1] - ratio[:, 1:])
    reciprocal = 1.0 / p
    info_cc = np.diag(np.einsum("uj,uj->j", weighted_f * f, reciprocal[:, :-1] + reciprocal[:, 1:]))
    if J > 2:
        off = -np.einsum("uj,uj->j", weighted_f[:, :-1] * f[:, 1:], reciprocal[:, 1:-1])
        info_cc += np.diag(off, 1) + np.diag(off, -1)
    # Chain rule to (β, τ_0, κ): x = Xβ; τ = T [τ_0, κ] with T lower-triangular ones, so a
    # product with T is a cumulative sum from the right.
    p_beta = beta.size
    gradient = np.empty(p_beta + J - 1)
    gradient[:p_beta] = X.T @ gradient_x + problem.penalty @ beta
    gradient[p_beta:] = np.cumsum(gradient_cuts[::-1])[::-1]
    hessian = np.empty((p_beta + J - 1, p_beta + J - 1))
    hessian[:p_beta, :p_beta] = (X.T * info_xx) @ X + problem.penalty
    H_bc = np.cumsum((X.T @ info_xc)[:, ::-1], axis=1)[:, ::-1]
    hessian[:p_beta, p_beta:] = H_bc
    hessian[p_beta:, :p_beta] = H_bc.T
    H_cc = np.cumsum(np.cumsum(info_cc[::-1, ::-1], axis=0), axis=1)[::-1, ::-1]
    hessian[p_beta:, p_beta:] = H_cc
    return gradient, hessian


@dataclass(frozen=True)
class _Solution:
    beta: np.ndarray
    cut_free: np.ndarray
    nll: float  # penalised
    converged: bool

    @property
    def cuts(self) -> np.ndarray:
        return _cuts(self.cut_free, self.cut_free.size + 1)


def _start_cuts(problem: _Problem) -> np.ndarray:
    """Cut points of the answer shares at x = 0 (the fit with W = 0)."""
    J = problem.n_categories
    shares = np.bincount(problem.category, weights=problem.weight, minlength=J) + 0.5
    cumulative = np.cumsum(shares / shares.sum())[:-1]

    cuts = normal_ppf(cumulative)
    return np.concatenate([cuts[:1], np.maximum(np.diff(cuts), 1e-3)])


def _solve(problem: _Problem, start: _Solution | None = None, max_iterations: int = 200) -> _Solution:
    """Projected Newton with the expected information and a backtracking line search."""
    p = problem.X.shape[1]
    J = problem.n_categories
    if start is None:
        beta = np.zeros(p)
        cut_free = _start_cuts(problem)
    else:
        beta, cut_free = (
            np.maximum(start.beta, 0.0, where=problem.bounded, out=start.beta.copy()),
            start.cut_free,
        )
    # τ_0 is free; β (where bounded) and the gaps κ are >= 0.
    bounded = np.concatenate([problem.bounded, [False], np.ones(J - 2, dtype=bool)])
    phi = np.concatenate([beta, cut_free])
    value = _negative_loglik(problem, phi[:p], phi[p:])
    if not np.isfinite(value):
        phi = np.concatenate([np.zeros(p), _start_cuts(problem)])
        value = _negative_loglik(problem, phi[:p], phi[p:])
    converged = False
    for _ in range(max_iterations):
        gradient, hessian = _gradient_and_information(problem, phi[:p], phi[p:])
        hessian = hessian + 1e-10 * np.eye(hessian.shape[0]) * (1.0 + np.abs(np.diag(hessian)).max())
        target = _newton_target(problem, hessian, gradient, phi, bounded)
        direction = target - phi
        decrease = float(gradient @ direction)  # the Newton decrement, up to sign
        tolerance = 1e-9 * (1.0 + abs(value))
        if np.abs(direction).max() <= 1e-10 * (1.0 + np.abs(phi).max()) or abs(decrease) <= tolerance:
            converged = True
            break
        if decrease > 0:  # not a descent direction: only rounding at the optimum does this
            converged = decrease <= 1e-6 * (1.0 + abs(value))
            break
        step, accepted = 1.0, False
        while step >= 1e-10:
            candidate = phi + step * direction
            new_value = _negative_loglik(problem, candidate[:p], candidate[p:])
            if new_value <= value + 1e-4 * step * decrease:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            # No descent left at the precision of the quadratic model: at the optimum when the
            # decrement is negligible, else stuck (reported as not converged).
            converged = -decrease <= 1e-6 * (1.0 + abs(value))
            break
        phi = phi + step * direction
        improvement = value - new_value
        value = new_value
        if improvement <= 1e-12 * (1.0 + abs(value)) and step == 1.0:
            converged = True
            break
    return _Solution(phi[:p].copy(), phi[p:].copy(), value, converged)


def _newton_target(
    problem: _Problem, hessian: np.ndarray, gradient: np.ndarray, phi: np.ndarray, bounded: np.ndarray
) -> np.ndarray:
    """argmin of the quadratic model ``gᵀ(φ' - φ) + ½(φ' - φ)ᵀH(φ' - φ)`` over the feasible φ'."""
    linear = hessian @ phi - gradient
    if problem.constraints is None:
        return _bounded_quadratic(hessian, linear, phi, bounded)
    # Imported here, where a constrained step needs them (estimation/distributions.py says why).
    import qpsolvers
    import scipy.sparse as sp

    p = problem.X.shape[1]
    extra = np.hstack([problem.constraints, np.zeros((problem.constraints.shape[0], phi.size - p))])
    G = sp.csc_matrix(np.vstack([-np.eye(phi.size)[bounded], -extra]))
    h = np.zeros(G.shape[0])
    solution = qpsolvers.solve_qp(
        sp.csc_matrix(0.5 * (hessian + hessian.T)), -linear, G, h, solver="clarabel", verbose=False
    )
    if solution is None:  # keep the current point: the loop then stops
        return phi
    return np.asarray(solution, dtype=float)


# ---------------------------------------------------------------------------------------------
# The learned-DCG fits


@dataclass(frozen=True)
class OrdinalFit:
    """W (K, L) with ``W[:, 0] = 0``, the cut points, and the maximised log-likelihood
    (without the ridge)."""

    weights: np.ndarray
    cuts: np.ndarray
    loglik: float
    converged: bool
    increments: np.ndarray  # δ, for warm starts
    categories: np.ndarray  # the design categories the fit saw, in order


def _ridge(n_positions: int, n_grades: int, c: float) -> np.ndarray:
    """``‖T(W)‖² / C`` in the increments: ``T(W)[k, l] = Σ_{m<=l} δ_{k,m}``."""
    if not np.isfinite(c):
        return np.zeros((n_positions * (n_grades - 1),) * 2)
    block = np.triu(np.ones((n_grades - 1, n_grades - 1)))  # Σ_l (Σ_{m<=l} δ_m)² = δᵀ(UᵀU)δ
    gram = block @ block.T
    return np.kron(np.eye(n_positions), gram) / c


def _discount_constraints(n_positions: int, n_grades: int) -> np.ndarray:
    """Rows A with ``A δ >= 0`` meaning ``T(W)[k, l] >= T(W)[k+1, l]`` for every k and l >= 1."""
    width = n_grades - 1
    rows = []
    for k in range(n_positions - 1):
        for grade in range(1, n_grades):
            row = np.zeros(n_positions * width)
            row[k * width : k * width + grade] = 1.0
            row[(k + 1) * width : (k + 1) * width + grade] = -1.0
            rows.append(row)
    return np.array(rows).reshape(-1, n_positions * width)


def _weights_from_increments(increments: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    n_positions, n_grades = shape
    table = np.zeros(shape)
    table[:, 1:] = np.cumsum(increments.reshape(n_positions, n_grades - 1), axis=1)
    return table


def _loglik(problem: _Problem, solution: _Solution) -> float:
    return -(solution.nll - 0.5 * solution.beta @ problem.penalty @ solution.beta)


def fit_ordinal(
    design: OrdinalDesign,
    row_weights: np.ndarray,
    c: float,
    *,
    monotone_discounts: bool = False,
    monotone_gains: bool = True,
    start: OrdinalFit | None = None,
) -> OrdinalFit:
    """The ordered-probit fit of W on the design's rows, weighted (folds, bootstrap counts).

    Raises ValueError when fewer than two answer categories carry weight (no cut point, no
    scale: nothing to learn).
    """
    keep = row_weights > 0
    n_positions, n_grades = design.shape
    levels_used = np.unique(design.category[keep])
    if levels_used.size < 2:
        raise ValueError(
            "the likelihood fit needs answers of at least two kinds (e.g. left and right better)"
        )
    category = np.searchsorted(levels_used, design.category[keep])
    problem = _Problem(
        X=design.flat[keep],
        category=category,
        weight=row_weights[keep],
        n_categories=int(levels_used.size),
        penalty=_ridge(n_positions, n_grades, c),
        bounded=np.full(n_positions * (n_grades - 1), monotone_gains),
        constraints=_discount_constraints(n_positions, n_grades)
        if monotone_discounts and n_positions > 1
        else None,
    )
    warm = None
    if start is not None and start.cuts.size == levels_used.size - 1:
        warm = _Solution(
            start.increments, np.concatenate([start.cuts[:1], np.diff(start.cuts)]), np.inf, True
        )
    solution = _solve(problem, warm)
    return OrdinalFit(
        weights=_weights_from_increments(solution.beta, design.shape),
        cuts=solution.cuts,
        loglik=_loglik(problem, solution),
        converged=solution.converged,
        increments=solution.beta,
        categories=levels_used,
    )


def heldout_loglik(fit: OrdinalFit, design: OrdinalDesign, row_weights: np.ndarray) -> float:
    """Σ weight · log P(answer | fit) over the rows; categories the fit never saw (absent from
    its training answers) take the probability of the nearest band it has."""
    keep = row_weights > 0
    if not np.any(keep):
        return 0.0
    x = design.flat[keep] @ fit.increments
    J = fit.cuts.size + 1
    F, _ = _category_terms(x, fit.cuts)
    F_pad = np.hstack([np.zeros((x.size, 1)), F, np.ones((x.size, 1))])
    p = np.diff(F_pad, axis=1)
    # A held-out category the fit never saw reads the band of the nearest one it saw.
    nearest = np.abs(design.category[keep][:, None] - fit.categories[None, :]).argmin(axis=1)
    category = np.minimum(nearest, J - 1)
    return float(row_weights[keep] @ np.log(np.maximum(p[np.arange(x.size), category], 1e-12)))


# ---------------------------------------------------------------------------------------------
# The DCG form: W = c ⊗ g, and the likelihood-ratio test of it


@dataclass(frozen=True)
class RankOneFit:
    gains: np.ndarray  # (L,), g_0 = 0, g_{L-1} = 1
    discounts: np.ndarray  # (K,), c_1 = 1 when c_1 > 0
    loglik: float
    converged: bool


def fit_rank_one(
    design: OrdinalDesign,
    row_weights: np.ndarray,
    *,
    start: np.ndarray | None = None,
    bounded: bool = True,
    max_cycles: int = 100,
) -> RankOneFit:
    """The ordered-probit fit under the DCG form ``W[k, l] = c_k g_l`` (unpenalised).

    Alternates the two halves, each an ordinal regression: discounts given the gain
    increments, gain increments given the discounts, both ``>= 0`` when ``bounded`` (free for
    the form test). Starts from the rank-1 part of ``start`` (a full W) or from
    standard-DCG shapes.
    """
    keep = row_weights > 0
    n_positions, n_grades = design.shape
    levels_used = np.unique(design.category[keep])
    category = np.searchsorted(levels_used, design.category[keep])
    cumulative = design.cumulative[keep]
    weight = row_weights[keep]
    J = int(levels_used.size)
    if start is not None and np.abs(start).max() > 0:
        u, sigma, vt = np.linalg.svd(start - start[:, :1], full_matrices=False)
        discounts, gains = sigma[0] * u[:, 0], vt[0]
        if gains[-1] < gains[0]:
            discounts, gains = -discounts, -gains
        increments = np.maximum(np.diff(gains), 1e-3)
        discounts = np.maximum(discounts, 1e-3)
    else:
        increments = np.ones(n_grades - 1)
        discounts = 1.0 / np.log2(np.arange(2, n_positions + 2))

    def half(X: np.ndarray, warm: _Solution | None) -> tuple[_Problem, _Solution]:
        problem = _Problem(
            X=X, category=category, weight=weight, n_categories=J,
            penalty=np.zeros((X.shape[1], X.shape[1])), bounded=np.full(X.shape[1], bounded),
        )  # fmt: skip
        return problem, _solve(problem, warm)

    previous = -np.inf
    solution: _Solution | None = None
    converged = False
    problem = None
    for _ in range(max_cycles):
        warm = None if solution is None else _Solution(increments, solution.cut_free, np.inf, True)
        problem, solution = half(np.einsum("ukm,k->um", cumulative, discounts), warm)
        increments = solution.beta
        problem, solution = half(
            np.einsum("ukm,m->uk", cumulative, increments),
            _Solution(discounts, solution.cut_free, np.inf, True),
        )
        discounts = solution.beta
        loglik = _loglik(problem, solution)
        if loglik - previous <= 1e-9 * (1.0 + abs(loglik)):
            converged = solution.converged
            break
        previous = loglik
    assert solution is not None and problem is not None
    gains = np.concatenate([[0.0], np.cumsum(increments)])
    scale_g = gains[-1] if gains[-1] != 0 else 1.0
    scale_c = discounts[0] * scale_g if discounts[0] != 0 else 1.0
    discounts = discounts * scale_g  # c ⊗ g unchanged
    return RankOneFit(gains / scale_g, discounts / scale_c, _loglik(problem, solution), converged)


@dataclass(frozen=True)
class FormTest:
    """Likelihood-ratio test of "W is rank one" (the DCG form ``c ⊗ g``) against the full W.

    ``statistic = 2 (ℓ_full - ℓ_rank1)``, ``df = (K-1)(L-2)``, ``p_value`` from χ²(df); nan
    (with ``reason``) when the test does not apply (K = 1 or L = 2: every W is then of DCG form)
    or a fit did not converge.
    """

    statistic: float
    df: int
    p_value: float
    loglik_full: float
    loglik_rank_one: float
    reason: str = ""

    @property
    def sentence(self) -> str:
        if not np.isfinite(self.p_value):
            return f"The test of the DCG form does not apply: {self.reason}."
        verdict = (
            "the answers contradict the DCG form (gain x discount): a grade's value depends on its position"
            if self.p_value < 0.05
            else "the answers are consistent with the DCG form (gain x discount)"
        )
        return (
            f"Likelihood-ratio test of the DCG form against a free weight per grade and position: "
            f"statistic {self.statistic:.2f} on {self.df} degrees of freedom, p-value {self.p_value:.3g}; "
            f"at the 5 % level {verdict}."
        )

    def to_json(self) -> dict:
        return {
            "statistic": self.statistic,
            "df": self.df,
            "p_value": self.p_value,
            "loglik_full": self.loglik_full,
            "loglik_rank_one": self.loglik_rank_one,
            "reason": self.reason,
            "sentence": self.sentence,
        }


def form_test(design: OrdinalDesign, row_weights: np.ndarray | None = None) -> FormTest:
    """Test the DCG form on the design's answers (unpenalised, unconstrained fits of both
    models: a free weight per grade and position against a free gain x a free discount)."""
    n_positions, n_grades = design.shape
    weights = np.ones(design.category.size) if row_weights is None else row_weights
    df = (n_positions - 1) * (n_grades - 2)
    nan = float("nan")
    if df == 0:
        why = "with one position" if n_positions == 1 else "with two grades"
        return FormTest(nan, 0, nan, nan, nan, reason=f"{why} every weight table has the DCG form")
    try:
        # Both models without the monotone bounds: at a bound the statistic is no longer χ²
        # (a mixture with fewer degrees of freedom; the test would reject far less than 5 %
        # of true DCG forms), and the form is a question of rank, not of order.
        full = fit_ordinal(design, weights, np.inf, monotone_gains=False)
        reduced = fit_rank_one(design, weights, start=full.weights, bounded=False)
    except ValueError as error:
        return FormTest(nan, df, nan, nan, nan, reason=str(error))
    if not (full.converged and reduced.converged):
        return FormTest(
            nan, df, nan, full.loglik, reduced.loglik,
            reason="a maximum-likelihood fit did not converge (answers perfectly separated by the lists?)",
        )  # fmt: skip
    statistic = max(0.0, 2.0 * (full.loglik - reduced.loglik))
    return FormTest(statistic, df, float(chi2_sf(statistic, df)), full.loglik, reduced.loglik)
