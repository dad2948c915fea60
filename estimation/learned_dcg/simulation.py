"""Simulated side-by-side answers for learned DCG (no public side-by-side data exists).

- `permutation_preferences`: the simulation of Zhou et al. 2014, §5.2: both lists are random
  permutations of the grades [4, 4, 3, 3, 2, 2, 1, 1, 0, 0]; the truth is
  ``W[k, l] = g_l / log2(k + 1)`` with ``g = l`` (Data 1, "linear") or ``2^l - 1`` (Data 2,
  "exp"); a share of the labels can be reversed (§5.3).
- `run_preferences`: lists are the top K of real runs on real topics with their qrels grades;
  a ground truth ``w* = c* ⊗ g*`` (possibly not a standard DCG); Thurstone noise
  ``z = Δ / (ν sd(Δ)) + N(0, 1)`` with ``Δ = w*ᵀ(s_A - s_B)``, five answers by thresholds on
  ``z`` that reproduce the label shares of the paper's Table 1 (news search, 766 queries:
  13 / 108 / 473 / 148 / 24 answers), and an optional side bias added to ``z``.

Both return `PreferenceData` (negative preference: the left list, A, is better) and draw
everything from the ``rng`` they are given.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.stats import logistic, norm

from estimation.learned_dcg.fit import PreferenceData, utilities

PAPER_GRADES = (4, 4, 3, 3, 2, 2, 1, 1, 0, 0)
TABLE1_COUNTS = (13, 108, 473, 148, 24)
"""Answers per label in Zhou et al. 2014, Table 1, from "A much better" to "B much better"."""


def permutation_preferences(
    n_pairs: int,
    truth: np.ndarray,
    rng: np.random.Generator,
    *,
    grades: tuple[int, ...] = PAPER_GRADES,
    reversed_share: float = 0.0,
) -> PreferenceData:
    """Pairs of random permutations of `grades`, labelled by ``truth`` (K, L).

    Every pair is its own group. An exact tie under the truth gets preference 0; a share
    ``reversed_share`` of the other labels is reversed at random (label noise).
    """
    if n_pairs < 0 or not 0.0 <= reversed_share <= 1.0:
        raise ValueError("need n_pairs >= 0 and reversed_share in [0, 1]")
    base = np.asarray(grades, dtype=np.int64)
    if truth.shape[0] != base.size:
        raise ValueError(f"truth has {truth.shape[0]} positions but the lists have {base.size}")
    left = rng.permuted(np.tile(base, (n_pairs, 1)), axis=1)
    right = rng.permuted(np.tile(base, (n_pairs, 1)), axis=1)
    difference = utilities(truth, left) - utilities(truth, right)
    preference = np.where(np.abs(difference) < 1e-12, 0, np.where(difference > 0, -1, 1))
    flip = rng.random(n_pairs) < reversed_share
    preference = np.where(flip, -preference, preference)
    return PreferenceData(left, right, preference, np.arange(n_pairs))


NOISES = ("probit", "logistic")
_LOGISTIC_SCALE = np.sqrt(3.0) / np.pi  # unit variance, as the probit's


def _noise_cdf(noise: str):
    if noise == "probit":
        return norm.cdf
    if noise == "logistic":
        return lambda t: logistic.cdf(t, scale=_LOGISTIC_SCALE)
    raise ValueError(f"noise must be one of {', '.join(NOISES)}, got {noise!r}")


def table1_thresholds(
    signal: np.ndarray, shares: np.ndarray | None = None, *, noise: str = "probit"
) -> np.ndarray:
    """Cut points on ``z = signal + ε`` whose label shares match Table 1.

    ``signal`` holds ``Δ / (ν sd(Δ))`` over the population of pairs the answers are drawn
    from; ε is standard normal (``noise="probit"``) or logistic with unit variance; the
    marginal CDF of ``z`` is ``mean_i F(t - signal_i)``. Returns 4 increasing thresholds;
    labels run from "B much better" (below the first) to "A much better" (above the last).
    """
    cdf = _noise_cdf(noise)
    counts = np.asarray(TABLE1_COUNTS[::-1] if shares is None else shares, dtype=float)
    cumulative = np.cumsum(counts / counts.sum())[:-1]
    low, high = float(signal.min()) - 20.0, float(signal.max()) + 20.0
    return np.array(
        [brentq(lambda t, p=p: float(cdf(t - signal).mean()) - p, low, high, xtol=1e-12) for p in cumulative]
    )


def run_preferences(
    lists: np.ndarray,
    n_answers: int,
    truth: np.ndarray,
    rng: np.random.Generator,
    *,
    nu: float = 1.0,
    side_bias: float = 0.0,
    noise: str = "probit",
    careless: float = 0.0,
    ties: bool = True,
) -> tuple[PreferenceData, np.ndarray]:
    """Side-by-side answers on real lists under a ground truth ``truth`` (K, L).

    Parameters
    ----------
    lists : array of int, shape (m, S, K)
        Grades of the top K of each of S systems on m topics (-1: empty position).
    n_answers : int
        Answers to draw: a topic and an ordered pair of systems whose lists differ, uniformly
        among all such (topic, A, B).
    nu : float
        Noise: ``z = Δ / (ν sd(Δ)) + ε``, ``sd(Δ)`` over that population (larger ν,
        noisier answers).
    side_bias : float
        Added to ``z`` after the thresholds are set: a positive bias favours the left list
        (A) and moves the label shares away from Table 1's.
    noise : {"probit", "logistic"}
        The law of ε (both with unit variance).
    careless : float
        Share of answers given at random, uniformly over the answer levels offered.
    ties : bool
        Offer "about the same"; without it the assessor must pick a side: the tie band is
        split at its middle (four answers, -2, -1, 1, 2).

    Returns
    -------
    (PreferenceData, ndarray)
        The answers (groups = topic index) and, per answer, the systems shown ``(n, 2)``.
    """
    lists = np.asarray(lists)
    if lists.ndim != 3 or lists.shape[1] < 2:
        raise ValueError(f"lists must have shape (topics, systems >= 2, K), got {lists.shape}")
    if nu <= 0:
        raise ValueError(f"nu must be > 0, got {nu}")
    if not 0.0 <= careless <= 1.0:
        raise ValueError(f"careless must lie in [0, 1], got {careless}")
    m, n_systems, cutoff = lists.shape
    grid = np.meshgrid(np.arange(m), np.arange(n_systems), np.arange(n_systems), indexing="ij")
    topic, a, b = (axis.reshape(-1) for axis in grid)
    differ = (a != b) & np.any(lists[topic, a] != lists[topic, b], axis=1)
    topic, a, b = topic[differ], a[differ], b[differ]
    if topic.size == 0:
        raise ValueError("no topic has two systems with different lists")
    delta = utilities(truth, lists[topic, a]) - utilities(truth, lists[topic, b])
    spread = float(delta.std())
    if spread == 0:
        raise ValueError("the ground truth rates every pair of lists the same")
    signal = delta / (nu * spread)
    # Thresholds from the unbiased answers, so that a side bias shows as a shift of the shares.
    thresholds = table1_thresholds(signal, noise=noise)
    values = np.array([2, 1, 0, -1, -2])
    if not ties:
        middle = 0.5 * (thresholds[1] + thresholds[2])
        thresholds = np.array([thresholds[0], middle, thresholds[3]])
        values = np.array([2, 1, -1, -2])
    drawn = rng.integers(0, topic.size, n_answers)
    if noise == "probit":
        epsilon = rng.standard_normal(n_answers)
    else:
        epsilon = rng.logistic(0.0, _LOGISTIC_SCALE, n_answers)
    z = signal[drawn] + side_bias + epsilon
    # Level 0 (below the first cut) is "B much better" (+2) ... the top level "A much better" (-2).
    preference = values[np.searchsorted(thresholds, z)]
    if careless > 0:
        random_answer = rng.random(n_answers) < careless
        preference = np.where(random_answer, rng.choice(values, n_answers), preference)
    data = PreferenceData(
        lists[topic[drawn], a[drawn]], lists[topic[drawn], b[drawn]], preference, topic[drawn]
    )
    return data, np.stack([a[drawn], b[drawn]], axis=1)
