"""Conditional Poisson sampling: a fixed-size draw whose inclusion probabilities, first and second
order, are all known exactly and whose joint inclusion probabilities are all positive.

Why this design (and not systematic PPS). A systematic draw hits given first-order
probabilities exactly, but its joint inclusion probabilities ``pi_xy`` are unknown and some are
zero (two units never drawn together), so no unbiased variance estimator exists for totals
estimated from its sample. Poisson sampling (independent Bernoulli(pi_x)) has
``pi_xy = pi_x pi_y > 0`` but a random sample size, which would overrun a label budget.
Conditional Poisson sampling (CPS; Hájek 1964; Chen, Dempster & Liu 1994, Biometrika 81:457;
Tillé 2006, *Sampling Algorithms* §5.6) keeps the size fixed at n: it is Poisson sampling with
working odds ``w_x`` conditioned on the sample size being n,

    P(S) = prod_{x in S} w_x / sum_{|S'| = n} prod_{x in S'} w_x ,   |S| = n,             (C1)

the maximum-entropy design for its first-order probabilities. Every pair has
``pi_xy > 0`` (for n >= 2), and both orders are computed exactly:

* first order, through the sequential form of (C1) (Chen et al. 1994 §5; Tillé 2006 §5.6.5):
  with ``rho_k[r] = e_r(w_k..w_N) / e_{r-1}(w_k..w_N)`` (``e_r`` the elementary symmetric
  polynomial of degree r), unit k is drawn, when r units are still to draw, with probability
  ``q(k, r) = w_k / (w_k + rho_{k+1}[r])``, and

      rho_k[r] = rho_{k+1}[r-1] (rho_{k+1}[r] + w_k) / (rho_{k+1}[r-1] + w_k),           (R1)
      pi_k = sum_r P_k[r] q(k, r),   P_{k+1}[r] = P_k[r] (1 - q(k, r)) + P_k[r+1] q(k, r+1),  (R2)

  where ``P_k[r]`` is the probability that r units are still to draw at unit k. Every term is
  positive, so nothing cancels; the better-known size recursion
  ``pi_x(m) = m w_x (1 - pi_x(m-1)) / sum_y w_y (1 - pi_y(m-1))`` (Tillé 2006 eq. 5.23) subtracts
  and loses all accuracy for spread-out odds (seen at N = 60, n = 25). It is run on the smaller of
  S and its complement (the complement of a CPS sample is CPS of size N - n with odds 1 / w);
* second order, from the same computation on the population without x: given x in S, the rest
  of S is CPS of size n - 1 from U \\ {x} with the same odds, so
  ``pi_xy = pi_x pi_y^{(-x)}(n - 1)``.

The working odds that give target probabilities ``pi*`` are found by the fixed point of Chen et
al. (1994 §4), here on the log-odds scale: ``log w <- log w + logit pi* - logit pi(w)``.
Units with ``pi* = 1`` are taken for sure and the rest drawn with size ``n - #sure``. A sample is
drawn by rejection (Poisson draws with ``p_x = lambda w_x / (1 + lambda w_x)``, ``sum p = n``,
until one has size n), which gives (C1) exactly; about ``sqrt(2 pi sum p(1 - p))`` tries.

Cost: (R1)-(R2) is O(N min(n, N - n)) with a Python step per unit (about 0.7 s to fit the odds
of 3,840 of 5,600 documents); the joint probabilities of a sample of n units cost n times that,
meant for the variance of moderate samples (hundreds of units), not for every draw.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

# The fixed point stops when every first-order probability is this close to its target.
TOLERANCE = 1e-10
MAX_ITERATIONS = 500
# Up to this many units the odds are fitted by Newton steps (N first-order computations each).
NEWTON_UNITS = 60
# Rejection sampling needs about sqrt(2 pi n) tries; this many means the design is broken.
MAX_TRIES = 1_000_000


@dataclass(frozen=True, eq=False)
class ConditionalPoissonDesign:
    """A conditional Poisson design over N units.

    Attributes
    ----------
    inclusion : ndarray, shape (N,)
        First-order inclusion probabilities ``pi_x`` (1 for units taken for sure), sum = size.
    odds : ndarray, shape (N,)
        Working odds ``w_x`` of (C1) for the units not taken for sure (``inf`` for those).
    size : int
        The sample size n.
    """

    inclusion: np.ndarray
    odds: np.ndarray
    size: int

    @property
    def sure(self) -> np.ndarray:
        """Mask of the units every sample holds."""
        return np.isinf(self.odds)


def _suffix_ratio_step(ratio: np.ndarray, weight: float) -> np.ndarray:
    """``rho_k`` from ``rho_{k+1}`` and ``w_k`` (R1): positive terms only, hence stable."""
    previous = ratio[:-1]
    updated = np.empty_like(ratio)
    updated[0] = np.inf
    updated[1] = ratio[1] + weight
    with np.errstate(invalid="ignore"):
        # rho_{k+1}[r - 1] = 0 means the suffix is too short for r - 1 units: rho_k[r] is 0 too.
        tail = previous[1:] * (ratio[2:] + weight) / (previous[1:] + weight)
    updated[2:] = np.where(previous[1:] > 0, tail, 0.0)
    return updated


def _inclusion_from_odds(odds: np.ndarray, size: int) -> np.ndarray:
    """First-order probabilities of (C1) by the sequential design (R1)-(R2), on the smaller of
    the sample and its complement; checkpoints keep the memory at O(sqrt(N) n)."""
    n_units = odds.size
    if size == 0:
        return np.zeros(n_units)
    if size == n_units:
        return np.ones(n_units)
    if size > n_units - size:
        return 1.0 - _inclusion_from_odds(1.0 / odds, n_units - size)
    odds = odds / odds.max()  # (C1) is scale-free; this keeps the ratios in range
    block = max(1, int(np.ceil(np.sqrt(n_units))))
    empty = np.zeros(size + 1)
    empty[0] = np.inf
    # Backward pass (R1): rho of the suffix starting at every block boundary.
    checkpoints = {n_units: empty}
    ratio = empty
    for unit in range(n_units - 1, -1, -1):
        ratio = _suffix_ratio_step(ratio, odds[unit])
        if unit % block == 0:
            checkpoints[unit] = ratio
    # Forward pass (R2): the distribution of the number of units still to draw.
    remaining = np.zeros(size + 1)
    remaining[size] = 1.0
    pi = np.empty(n_units)
    for start in range(0, n_units, block):
        stop = min(start + block, n_units)
        suffix = [checkpoints[stop]]
        for unit in range(stop - 1, start, -1):
            suffix.append(_suffix_ratio_step(suffix[-1], odds[unit]))
        suffix.reverse()  # suffix[i] = rho_{start + i + 1}
        for offset, unit in enumerate(range(start, stop)):
            after = suffix[offset][1:]
            take = odds[unit] / (odds[unit] + after)  # q(k, r) for r = 1..n
            leave = after / (odds[unit] + after)
            pi[unit] = float(remaining[1:] @ take)
            moved = remaining[1:] * take
            remaining[1:] *= leave
            remaining[:-1] += moved
    return pi


def conditional_poisson_inclusion(odds: np.ndarray, size: int) -> np.ndarray:
    """First-order inclusion probabilities of CPS (C1) with working `odds` (> 0), shape of odds."""
    odds = np.asarray(odds, dtype=np.float64)
    if not 0 <= size <= odds.size:
        raise ValueError(f"cannot draw {size} of {odds.size} units")
    if np.any(~np.isfinite(odds)) or np.any(odds <= 0):
        raise ValueError("odds must be finite and > 0")
    return np.clip(_inclusion_from_odds(odds, size), 0.0, 1.0)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-300, 1 - 1e-16)
    return np.log(p) - np.log1p(-p)


def _free_inclusion(theta: np.ndarray, size: int) -> np.ndarray:
    return conditional_poisson_inclusion(np.exp(theta - theta.max()), size)


def _joint_of_free(theta: np.ndarray, pi: np.ndarray, size: int) -> np.ndarray:
    odds = np.exp(theta - theta.max())
    design = ConditionalPoissonDesign(inclusion=pi, odds=odds, size=size)
    return conditional_poisson_joint(design, np.arange(pi.size))


def conditional_poisson_design(inclusion: np.ndarray) -> ConditionalPoissonDesign:
    """The CPS design whose first-order inclusion probabilities are `inclusion` (in (0, 1],
    summing to an integer n): the working odds by the fixed point of Chen et al. (1994 §4).
    The arrays of the result are read-only: the same targets return the same (cached) design,
    since fitting the odds costs far more than a draw."""
    target = np.asarray(inclusion, dtype=np.float64)
    size = int(round(target.sum()))
    if target.ndim != 1 or np.any(target <= 0) or np.any(target > 1):
        raise ValueError("inclusion probabilities must lie in (0, 1]")
    if abs(target.sum() - size) > 1e-6:
        raise ValueError(f"inclusion probabilities must sum to an integer, got {target.sum()}")
    return _design(target.tobytes(), size)


@functools.lru_cache(maxsize=256)
def _design(data: bytes, size: int) -> ConditionalPoissonDesign:
    target = np.frombuffer(data, dtype=np.float64)
    sure = target >= 1.0
    odds = np.full(target.size, np.inf)
    rest = target[~sure]
    rest_size = size - int(sure.sum())
    if rest.size:
        logit = _logit(rest)
        theta = logit.copy()
        pi = _free_inclusion(theta, rest_size)
        error = np.max(np.abs(pi - rest))
        for _ in range(MAX_ITERATIONS):
            if error < TOLERANCE:
                break
            # The diagonal step (logit difference) treats the units as independent; it is an
            # ascent direction of the design's concave log-likelihood but overshoots when a few
            # units compete for few places (two of three units drawn: it flips for thousands of
            # iterations). Small designs take the Newton step with the exact Jacobian, the
            # covariance pi_xy - pi_x pi_y; both are halved until the error falls.
            if rest.size <= NEWTON_UNITS:
                covariance = _joint_of_free(theta, pi, rest_size) - np.outer(pi, pi)
                step = np.linalg.lstsq(covariance, rest - pi, rcond=None)[0]
            else:
                step = logit - _logit(pi)
            for _ in range(60):
                trial = _free_inclusion(theta + step, rest_size)
                trial_error = np.max(np.abs(trial - rest))
                if trial_error < error:
                    break
                step /= 2
            theta, pi, error = theta + step, trial, trial_error
        else:
            raise ValueError("the conditional Poisson odds did not converge")
        odds[~sure] = np.exp(theta - theta.max())
    inclusion = target.copy()
    inclusion.setflags(write=False)
    odds.setflags(write=False)
    return ConditionalPoissonDesign(inclusion=inclusion, odds=odds, size=size)


def conditional_poisson_draw(design: ConditionalPoissonDesign, rng: np.random.Generator) -> np.ndarray:
    """Indices (ascending) of one CPS sample of `design`: the sure units and a rejective draw."""
    sure = design.sure
    free = np.flatnonzero(~sure)
    wanted = design.size - int(sure.sum())
    chosen = np.zeros(0, dtype=np.int64)
    if wanted == free.size:
        chosen = free
    elif wanted > 0:
        odds = design.odds[free]
        # Scale lambda so the Poisson size has mean n: this maximises the acceptance rate.
        low, high = -60.0, 60.0
        for _ in range(64):  # 120 / 2^64: far below any rounding
            middle = (low + high) / 2
            p = 1.0 / (1.0 + np.exp(-(np.log(odds) + middle)))
            low, high = (middle, high) if p.sum() < wanted else (low, middle)
        for _ in range(MAX_TRIES):
            hit = rng.random(free.size) < p
            if int(hit.sum()) == wanted:
                chosen = free[hit]
                break
        else:
            raise RuntimeError("no conditional Poisson sample of the wanted size was found")
    return np.sort(np.r_[np.flatnonzero(sure), chosen]).astype(np.int64)


def conditional_poisson_joint(design: ConditionalPoissonDesign, units: np.ndarray) -> np.ndarray:
    """Joint inclusion probabilities ``pi_xy`` among `units` (indices), shape (k, k), with
    ``pi_xx = pi_x`` on the diagonal: ``pi_xy = pi_x pi_y^{(-x)}(n - 1)`` (module doc)."""
    units = np.asarray(units, dtype=np.int64)
    inclusion = design.inclusion
    joint = np.outer(inclusion[units], inclusion[units])  # exact for sure units
    sure = design.sure
    free = np.flatnonzero(~sure)
    wanted = design.size - int(sure.sum())
    position = np.full(inclusion.size, -1)
    position[free] = np.arange(free.size)
    for row, unit in enumerate(units.tolist()):
        if sure[unit]:
            continue
        others = np.delete(free, position[unit])
        conditional = np.ones(inclusion.size)  # sure units stay sure
        if others.size:
            conditional[others] = conditional_poisson_inclusion(design.odds[others], wanted - 1)
        conditional[unit] = 1.0
        joint[row] = inclusion[unit] * conditional[units]
    joint = (joint + joint.T) / 2  # the two orders of a pair agree up to rounding
    np.fill_diagonal(joint, inclusion[units])
    return joint
