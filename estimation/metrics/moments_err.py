"""ERR kernels for the exact moments: the backward recurrence and the cross moment E[L1 L2].

Private to :mod:`estimation.metrics.moments`, which validates inputs, gathers the label statistics of
each ranked position and calls these kernels chunk by chunk. Every array here is one chunk of
queries; positions are 0-based; an empty position (``-1`` in a ranking) arrives with ``l = 0``
almost surely (statistics ``e1 = e2 = 0``, ``E[1 - l] = E[(1 - l)^2] = 1``) and weight 0, so it
neither adds to ERR nor stops the cascade.

Reference: Sawade, Bickel, von Oertzen, Scheffer, Landwehr, "Active evaluation of ranking
functions based on graded relevance", Machine Learning 92 (2013): Theorem 3 and its proof in
the appendix. The formulas are restated in ``docs/estimation.md``, sections "Exact moments
under theta (one ranking)" and "Exact moments for comparing two rankings".
"""

from __future__ import annotations

import numpy as np

# Columns of the per-position statistics array, shape (c, K, len(ERR_COLUMNS)).
E_L, E_L2, E_L_ONE_MINUS_L, E_ONE_MINUS_L, E_ONE_MINUS_L_SQ = range(5)
ERR_COLUMNS = 5

# log(rho) for rho = E[l (1 - l)] / (E[l] E[1 - l]) is floored here: the impulses of the cross
# moment come in +/- pairs that must cancel exactly, so they must stay finite. A floored rho
# can only arise when E[l (1 - l)] underflows, i.e. when the term is below 1e-300 anyway.
_LOG_FLOOR = -700.0


def err_statistics_table(relevance: np.ndarray) -> np.ndarray:
    """Values whose expectations the ERR kernels need, per grade: shape (G, 5).

    Columns: ``l``, ``l^2``, ``l (1 - l)``, ``1 - l``, ``(1 - l)^2``. Taking ``l (1 - l)`` and
    ``(1 - l)^2`` directly (rather than ``e1 - e2`` and ``1 - 2 e1 + e2``) avoids cancellation.
    """
    stop = 1.0 - relevance
    return np.stack([relevance, relevance**2, relevance * stop, stop, stop**2], axis=1)


def err_first_two_moments(stats: np.ndarray, discount: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E[L] and E[L^2] of ERR for a chunk of rankings, by the backward recurrence.

    ``S_{K+1} = 0``, ``S_i = a_i l_i + (1 - l_i) S_{i+1}``, ``L = S_1``; since ``l_i`` is
    independent of ``S_{i+1}`` (Sawade et al., eq. 3):
    ``E[S_i] = a_i e1 + (1 - e1) E[S_{i+1}]`` and
    ``E[S_i^2] = a_i^2 e2 + 2 a_i E[l(1-l)] E[S_{i+1}] + E[(1-l)^2] E[S_{i+1}^2]``.

    Parameters
    ----------
    stats : ndarray, shape (c, K, 5)
        Per-position expectations in the column order of :func:`err_statistics_table`.
    discount : ndarray, shape (K,)
        ``a_i = 1 / i``.

    Returns
    -------
    mean, second : ndarray, shape (c,)
        E[L | x] and E[L^2 | x].
    """
    chunk, depth, _ = stats.shape
    mean = np.zeros(chunk)
    second = np.zeros(chunk)
    # One step per position (K steps), each vectorised over the chunk of queries.
    for position in range(depth - 1, -1, -1):
        a = discount[position]
        column = stats[:, position, :]
        second = (
            a * a * column[:, E_L2]
            + 2.0 * a * column[:, E_L_ONE_MINUS_L] * mean
            + column[:, E_ONE_MINUS_L_SQ] * second
        )
        mean = a * column[:, E_L] + column[:, E_ONE_MINUS_L] * mean
    return mean, second


def err_cross_moment_chunk(
    stats_a: np.ndarray,
    discount_a: np.ndarray,
    position_in_b: np.ndarray,
    stats_b: np.ndarray,
    discount_b: np.ndarray,
    workspace: np.ndarray | None = None,
) -> np.ndarray:
    """E[L1 L2] for ERR of two rankings of the same queries (one chunk), exactly.

    ``L1 L2 = sum_{i, j} C1_i C2_j`` over positions ``i`` of r1 and ``j`` of r2. With ``z = r1_i``,
    ``z' = r2_j``, ``A`` the items above ``i`` in r1 and ``B`` those above ``j`` in r2, every term
    factorises over items (Sawade et al., proof of Theorem 3)::

        z != z':  a_i a'_j  E[l_z (1-l_z)^[z in B]]  E[l_z' (1-l_z')^[z' in A]]
                  * prod_{w in (A u B) \\ {z, z'}} E[(1 - l_w)^([w in A] + [w in B])]
        z == z':  a_i a'_j  E[l_z^2]  prod_{w in A u B} E[(1 - l_w)^([w in A] + [w in B])]

    In logs the product is ``La[i] + Lb[j] + O[i, j]`` plus two step corrections:
    ``La``/``Lb`` are prefix sums of ``log E[1 - l]`` down each ranking, ``O`` adds
    ``h_w = log E[(1-l_w)^2] - 2 log E[1-l_w]`` for items above ``(i, j)`` in both rankings, and
    when ``z`` lies above ``j`` in r2 (or ``z'`` above ``i`` in r1) its ``E[l]`` and the factor
    ``E[1 - l]`` counted in the prefix sum are replaced by ``E[l (1 - l)]``, i.e. the log grows by
    ``log rho = log(E[l (1-l)] / (E[l] E[1-l]))``. Each of these is a 2-D prefix sum of O(K)
    impulses on the (position in r1, position in r2) grid, so the whole log grid costs two
    cumulative sums; the exponent never exceeds 0 (a product of expectations of numbers in
    (0, 1], and rho <= 1 by Chebyshev's sum inequality), so ``exp`` cannot overflow. The
    ``E[l_z]`` and ``E[l_z']`` factors and the discounts multiply afterwards as a matrix-vector
    product; the diagonal cells ``z == z'`` are taken out of the grid and added separately.

    Parameters
    ----------
    stats_a, stats_b : ndarray, shape (c, K1, 5) and (c, K2, 5)
        Per-position expectations (columns of :func:`err_statistics_table`).
    discount_a, discount_b : ndarray, shape (K1,) and (K2,)
        ``a_i = 1 / i``.
    position_in_b : ndarray of int, shape (c, K1)
        Position in r2 of the item at each position of r1, ``-1`` if absent (or empty); it
        lists every shared item once, which is all the grid needs from either side.
    workspace : ndarray of float, optional
        A buffer of at least ``(K1 + 1) * (K2 + 1) * c`` cells to reuse across chunks (fresh pages for
        every chunk cost more than the arithmetic).

    Returns
    -------
    ndarray, shape (c,)
        E[L(r1) L(r2) | x; theta].
    """
    chunk, depth_a, _ = stats_a.shape
    depth_b = stats_b.shape[1]
    log_keep_a = np.log(stats_a[:, :, E_ONE_MINUS_L])
    log_keep_b = np.log(stats_b[:, :, E_ONE_MINUS_L])
    log_rho_a = _log_rho(stats_a)

    # Layout (position in r1, position in r2, query), padded by one row and one column so that
    # every impulse has a cell: both prefix sums then add whole contiguous blocks, which numpy
    # vectorises (np.cumsum along an axis does not).
    rows, columns = depth_a + 1, depth_b + 1
    size = rows * columns * chunk
    if workspace is None or workspace.size < size:
        workspace = np.empty(size)
    flat = workspace[:size]
    flat.fill(0.0)
    grid = flat.reshape(rows, columns, chunk)

    # La[i] = sum_{k < i} log E[1 - l_{r1_k}]: impulse at (k + 1, 0); Lb likewise at (0, l + 1).
    grid[1:, 0, :] += log_keep_a.T
    grid[0, 1:, :] += log_keep_b.T
    # Each shared item w, at (i, j) = (position in r1, position in r2), adds three impulses;
    # within one of them the cells are distinct, so buffered fancy-index addition is exact.
    shared = position_in_b >= 0
    query, i_shared = np.nonzero(shared)
    j_shared = position_in_b[shared]
    stats_shared = stats_a[shared]
    log_rho = log_rho_a[shared]
    # O: h_w = log E[(1-l)^2] - 2 log E[1-l] for cells below and right of (i, j).
    log_overlap = np.log(stats_shared[:, E_ONE_MINUS_L_SQ]) - 2.0 * log_keep_a[shared]
    cell = (i_shared * columns + j_shared) * chunk + query
    # w = r1_i lies above column j' in r2 for j' > j: + log rho on row i only (from (i, j + 1),
    # cancelled from row i + 1); w = r2_j lies above row i' in r1 for i' > i: + log rho on
    # column j only (from (i + 1, j), cancelled from column j + 1). Both cancellations fall on
    # (i + 1, j + 1), where O's impulse sits too.
    flat[cell + chunk] += log_rho
    flat[cell + columns * chunk] += log_rho
    flat[cell + (columns + 1) * chunk] += log_overlap - 2.0 * log_rho

    for row in range(1, depth_a):
        np.add(grid[row - 1], grid[row], out=grid[row])
    for column in range(1, depth_b):
        np.add(grid[:depth_a, column - 1], grid[:depth_a, column], out=grid[:depth_a, column])

    diagonal_log = flat[cell]
    flat[cell] = -np.inf
    terms = grid[:depth_a, :depth_b]
    np.exp(terms, out=terms)

    terms *= (discount_b[:, None] * stats_b[:, :, E_L].T)[None, :, :]
    weight_a = discount_a[:, None] * stats_a[:, :, E_L].T
    distinct = np.einsum("ic,ic->c", terms.sum(axis=1), weight_a)

    same = discount_a[i_shared] * discount_b[j_shared] * stats_shared[:, E_L2] * np.exp(diagonal_log)
    same_per_query = np.bincount(query, weights=same, minlength=chunk)
    return distinct + same_per_query


def _log_rho(stats: np.ndarray) -> np.ndarray:
    """log(E[l (1-l)] / (E[l] E[1-l])) per position; 0 where E[l] = 0 (the term vanishes)."""
    e1 = stats[:, :, E_L]
    relevant = e1 > 0
    ratio = np.ones_like(e1)
    np.divide(
        stats[:, :, E_L_ONE_MINUS_L],
        e1 * stats[:, :, E_ONE_MINUS_L],
        out=ratio,
        where=relevant,
    )
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(ratio), _LOG_FLOOR)
