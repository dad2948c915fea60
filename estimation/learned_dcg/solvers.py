"""The two solvers of the DCGLearn problem (Zhou et al. 2014, eqs. 1-3 and 6-8).

Both minimise, over ``W`` of shape (K, L) flattened to ``w``,

    wᵀw + Σ_i a_i C_i h_i(w)²,
    h_i = max(0, m_i - wᵀd_i)      for a strict pair (d_i oriented from the preferred list),
    h_i = max(0, |wᵀd_i| - 1)      for a tie,

subject to ``W[k, l+1] >= W[k, l]`` (gains monotone in the grade at every position), where
``a_i >= 0`` is a multiplicity (duplicates merged, cross-validation folds and bootstrap
replicates as integer weights) and ``m_i`` the margin (1 in the paper). Squared slacks make
the explicit ``ξ`` of the paper's QP equal to ``h_i`` at the optimum, so the two forms are the
same problem:

- `solve_qp`: the paper's QP with slack variables, through qpsolvers + Clarabel (interior
  point). Also takes the optional non-increasing-discount constraints, which are not bounds.
- `solve_newton` (used for the many refits of `learn_dcg`) and `solve_bounded`: the bound-only
  reparametrisation ``W[k, l] = a_k + Σ_{1<=m<=l} δ_{k,m}``, ``a`` free, ``δ >= 0``, of the
  same problem. ``a`` is free rather than 0 so that the objective is the QP's exactly (``wᵀw``
  is not invariant to row shifts), which the tests check. `solve_newton` is a projected
  Newton method on the piecewise-quadratic objective (warm starts make cross-validation and
  bootstrap refits a few milliseconds); `solve_bounded` is the L-BFGS-B route the method note
  suggests, kept as a second reference: as exact, but its time depends on the data (from
  a few times Newton's on noisy answers to ~100 times on separable ones; see
  ``bench/bench_learned_dcg.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

# qpsolvers, scipy.sparse and scipy.optimize are imported by the functions that solve: every
# Django process imports this module, and only the one that fits needs them (about a second of
# imports; estimation/distributions.py says more).
if TYPE_CHECKING:
    import scipy.sparse as sp


@dataclass(frozen=True)
class Design:
    """Informative pairs merged into unique rows; `rows` maps each pair to its unique row.

    ``d`` (u, K*L), ``margin`` (u,), ``is_tie`` (u,) describe the unique rows; a fit's weights
    over pairs become weights over rows with ``np.bincount(rows, weights)``.
    """

    d: np.ndarray
    margin: np.ndarray
    is_tie: np.ndarray
    rows: np.ndarray
    shape: tuple[int, int]

    @cached_property
    def d_theta(self) -> np.ndarray:
        """``d`` in the bound-only coordinates θ (``wᵀd = θᵀ(Mᵀd)``), computed once per design."""
        return self.d @ _cumulative_map(*self.shape)

    def row_weights(self, pair_weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.rows, weights=pair_weights, minlength=self.d.shape[0])


def merge_pairs(d: np.ndarray, margin: np.ndarray, is_tie: np.ndarray, shape: tuple[int, int]) -> Design:
    """Merge identical (d, margin, tie) rows; on real runs many answers repeat a grade pattern."""
    key = np.hstack([d, margin[:, None], is_tie[:, None].astype(float)])
    unique, rows = np.unique(key, axis=0, return_inverse=True)
    width = d.shape[1]
    return Design(
        d=np.ascontiguousarray(unique[:, :width]),
        margin=unique[:, width],
        is_tie=unique[:, width + 1] > 0.5,
        rows=rows.reshape(-1),
        shape=shape,
    )


def objective(w: np.ndarray, design: Design, weights: np.ndarray, c_strict: float, c_tie: float) -> float:
    """The DCGLearn objective at ``w`` with the slacks at their optimum (the squared hinges)."""
    scores = design.d @ w
    hinge = np.where(
        design.is_tie, np.maximum(0.0, np.abs(scores) - 1.0), np.maximum(0.0, design.margin - scores)
    )
    cost = np.where(design.is_tie, c_tie, c_strict) * weights
    return float(w @ w + cost @ hinge**2)


def _monotone_rows(n_positions: int, n_grades: int) -> sp.csr_matrix:
    """G with ``G w <= 0`` meaning ``W[k, l] - W[k, l+1] <= 0``."""
    import scipy.sparse as sp

    rows, cols, vals = [], [], []
    row = 0
    for k in range(n_positions):
        for grade in range(n_grades - 1):
            rows += [row, row]
            cols += [k * n_grades + grade, k * n_grades + grade + 1]
            vals += [1.0, -1.0]
            row += 1
    return sp.csr_matrix((vals, (rows, cols)), shape=(row, n_positions * n_grades))


def _discount_rows(n_positions: int, n_grades: int) -> sp.csr_matrix:
    """``T[k+1, l] - T[k, l] <= 0`` with ``T = W - W[:, :1]``: discounts non-increasing."""
    import scipy.sparse as sp

    rows, cols, vals = [], [], []
    row = 0
    for k in range(n_positions - 1):
        for grade in range(1, n_grades):
            here, below = k * n_grades, (k + 1) * n_grades
            rows += [row] * 4
            cols += [below + grade, below, here + grade, here]
            vals += [1.0, -1.0, -1.0, 1.0]
            row += 1
    return sp.csr_matrix((vals, (rows, cols)), shape=(row, n_positions * n_grades))


def solve_qp(
    design: Design,
    weights: np.ndarray,
    c_strict: float,
    c_tie: float,
    *,
    monotone_discounts: bool = False,
) -> np.ndarray:
    """The paper's QP in (w, ξ) solved by Clarabel; returns ``w`` of length K*L."""
    n_positions, n_grades = design.shape
    dim = n_positions * n_grades
    keep = weights > 0
    d, margin, is_tie = design.d[keep], design.margin[keep], design.is_tie[keep]
    cost = np.where(is_tie, c_tie, c_strict) * weights[keep]
    n = d.shape[0]
    import qpsolvers
    import scipy.sparse as sp

    # qpsolvers minimises xᵀPx / 2 + qᵀx.
    P = sp.diags(np.concatenate([np.full(dim, 2.0), 2.0 * cost])).tocsc()
    q = np.zeros(dim + n)
    slack = -sp.identity(n, format="csr")
    d_sparse = sp.csr_matrix(d)
    strict = ~is_tie
    tie_index = np.flatnonzero(is_tie)
    blocks = [
        sp.hstack([-d_sparse[strict], slack[strict]]),  # wᵀd >= m - ξ
        sp.hstack([d_sparse[tie_index], slack[tie_index]]),  # wᵀd <= 1 + ξ
        sp.hstack([-d_sparse[tie_index], slack[tie_index]]),  # wᵀd >= -1 - ξ
        sp.hstack([sp.csr_matrix((n, dim)), slack]),  # ξ >= 0
        sp.hstack([_monotone_rows(n_positions, n_grades), sp.csr_matrix((dim - n_positions, n))]),
    ]
    h = [-margin[strict], np.ones(tie_index.size), np.ones(tie_index.size), np.zeros(n)]
    h.append(np.zeros(dim - n_positions))
    if monotone_discounts and n_positions > 1:
        discount = _discount_rows(n_positions, n_grades)
        blocks.append(sp.hstack([discount, sp.csr_matrix((discount.shape[0], n))]))
        h.append(np.zeros(discount.shape[0]))
    G = sp.vstack(blocks).tocsc()
    x = qpsolvers.solve_qp(P, q, G, np.concatenate(h), solver="clarabel", verbose=False)
    if x is None:
        raise ValueError("the DCGLearn QP solver (Clarabel) found no solution")
    return np.asarray(x[:dim], dtype=float)


def _cumulative_map(n_positions: int, n_grades: int) -> np.ndarray:
    """M with ``w = M θ``, ``θ = [a_k, δ_{k,1..L-1}]`` per position (row-major like ``w``)."""
    block = np.tril(np.ones((n_grades, n_grades)))
    block[:, 0] = 1.0
    return np.kron(np.eye(n_positions), block)


def solve_bounded(
    design: Design,
    weights: np.ndarray,
    c_strict: float,
    c_tie: float,
    *,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """The same problem by L-BFGS-B on the bound-only form; returns ``w`` of length K*L."""
    n_positions, n_grades = design.shape
    keep = weights > 0
    M = _cumulative_map(n_positions, n_grades)
    d_theta = design.d[keep] @ M
    margin, is_tie = design.margin[keep], design.is_tie[keep]
    cost = np.where(is_tie, c_tie, c_strict) * weights[keep]
    gram = M.T @ M
    sign_tie = is_tie

    def value_and_gradient(theta: np.ndarray) -> tuple[float, np.ndarray]:
        scores = d_theta @ theta
        # Strict: h = m - s (active when > 0), dh/ds = -1. Tie: h = |s| - 1, dh/ds = sign(s).
        hinge = np.where(sign_tie, np.abs(scores) - 1.0, margin - scores)
        active = hinge > 0
        slope = np.where(sign_tie, np.sign(scores), -1.0)
        weighted = np.where(active, cost * hinge, 0.0)
        value = theta @ gram @ theta + weighted @ hinge
        gradient = 2.0 * (gram @ theta) + 2.0 * (d_theta.T @ (weighted * slope))
        return float(value), gradient

    bounds = [
        (None, None) if grade == 0 else (0.0, None) for _ in range(n_positions) for grade in range(n_grades)
    ]
    theta0 = np.zeros(M.shape[1]) if start is None else np.linalg.solve(M, start)
    theta0 = np.where([b[0] == 0.0 for b in bounds], np.maximum(theta0, 0.0), theta0)
    from scipy.optimize import minimize

    result = minimize(
        value_and_gradient,
        theta0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-10, "maxcor": 30},
    )
    return M @ result.x


def _bounded_quadratic(
    hessian: np.ndarray, linear: np.ndarray, start: np.ndarray, bounded: np.ndarray
) -> np.ndarray:
    """argmin ½θᵀHθ - bᵀθ subject to θ_j ≥ 0 for the `bounded` j (H positive definite).

    A primal active-set method (Nocedal & Wright, Alg. 16.3) from the feasible `start`:
    at most a few dozen 50 x 50 solves for our sizes.
    """
    theta = start.copy()
    at_bound = bounded & (theta <= 0.0)
    theta[at_bound] = 0.0
    for _ in range(10 * theta.size + 10):
        free = ~at_bound
        target = np.zeros_like(theta)
        target[free] = np.linalg.solve(hessian[np.ix_(free, free)], linear[free])
        step = target - theta
        blocking = free & bounded & (step < 0)
        if np.any(blocking):
            ratios = -theta[blocking] / step[blocking]
            alpha = float(ratios.min())
            if alpha < 1.0:
                theta = theta + alpha * step
                hit = np.flatnonzero(blocking)[ratios <= alpha + 1e-15]
                theta[hit] = 0.0
                at_bound[hit] = True
                continue
        theta = target
        gradient = hessian @ theta - linear
        # A variable at its lower bound may leave it when the gradient points inward.
        releasable = at_bound & (gradient < -1e-12 * (1.0 + np.abs(linear).max()))
        if not np.any(releasable):
            return theta
        at_bound[np.flatnonzero(releasable)[np.argmin(gradient[releasable])]] = False
    return theta


def solve_newton(
    design: Design,
    weights: np.ndarray,
    c_strict: float,
    c_tie: float,
    *,
    start: np.ndarray | None = None,
    max_iterations: int = 100,
) -> np.ndarray:
    """The same problem as `solve_bounded`, by a projected Newton method on its bound-only form.

    The objective is piecewise quadratic: with the set of active hinges fixed it is a
    quadratic, minimised exactly under the bounds (`_bounded_quadratic`); an exact line
    search on the true objective follows (its derivative is piecewise linear and increasing).
    When the active hinges stop changing the quadratic model is exact and the step lands on
    the optimum (Chapelle 2007's primal Newton for the L2-SVM, with bounds).
    """
    n_positions, n_grades = design.shape
    keep = weights > 0
    M = _cumulative_map(n_positions, n_grades)
    d_theta = design.d_theta[keep]
    margin, is_tie = design.margin[keep], design.is_tie[keep]
    cost = np.where(is_tie, c_tie, c_strict) * weights[keep]
    gram = M.T @ M
    bounded = np.tile(np.arange(n_grades) > 0, n_positions)
    theta = np.zeros(M.shape[1]) if start is None else np.linalg.solve(M, start)
    theta[bounded] = np.maximum(theta[bounded], 0.0)

    def hinge_terms(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hinge value, target of the active quadratic piece) per row."""
        hinge = np.where(is_tie, np.abs(scores) - 1.0, margin - scores)
        return hinge, np.where(is_tie, np.sign(scores), margin)

    scores = d_theta @ theta
    for _ in range(max_iterations):
        hinge, target = hinge_terms(scores)
        active = hinge > 0
        rows, weight = d_theta[active], cost[active]
        hessian = 2.0 * gram + 2.0 * (rows.T * weight) @ rows
        linear = 2.0 * rows.T @ (weight * target[active])
        proposal = _bounded_quadratic(hessian, linear, theta, bounded)
        direction = proposal - theta
        if np.abs(direction).max() <= 1e-13 * (1.0 + np.abs(theta).max()):
            break
        along = d_theta @ direction
        step = _line_search(theta, direction, scores, along, gram, margin, is_tie, cost)
        theta = theta + step * direction
        scores = scores + step * along
    return M @ theta


def _line_search(
    theta: np.ndarray,
    direction: np.ndarray,
    scores: np.ndarray,
    along: np.ndarray,
    gram: np.ndarray,
    margin: np.ndarray,
    is_tie: np.ndarray,
    cost: np.ndarray,
) -> float:
    """The t in [0, 1] minimising the objective on θ + t·direction (both ends are feasible)."""
    quad_a = float(direction @ gram @ direction)
    quad_b = float(theta @ gram @ direction)

    def slope_and_curvature(t: float) -> tuple[float, float]:
        s = scores + t * along
        hinge = np.where(is_tie, np.abs(s) - 1.0, margin - s)
        slope = np.where(is_tie, np.sign(s), -1.0) * along
        active = hinge > 0
        derivative = 2.0 * (quad_b + t * quad_a) + 2.0 * float(np.sum((cost * hinge * slope)[active]))
        return derivative, 2.0 * quad_a + 2.0 * float(np.sum((cost * slope**2)[active]))

    derivative, curvature = slope_and_curvature(1.0)
    if derivative <= 0:
        return 1.0
    low, high, t = 0.0, 1.0, 1.0
    for _ in range(60):
        if derivative > 0:
            high = t
        else:
            low = t
        newton = t - derivative / curvature if curvature > 0 else -1.0
        t = newton if low < newton < high else 0.5 * (low + high)
        derivative, curvature = slope_and_curvature(t)
        if abs(derivative) <= 1e-12 * (1.0 + abs(quad_b)) or high - low < 1e-14:
            break
    return t
