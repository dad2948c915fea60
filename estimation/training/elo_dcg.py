"""Expected DCG loss of an ensemble of rankers: ELO-DCG (Long et al., SIGIR 2010).

The ensemble's members ``i = 1..N`` predict a grade ``s_ij`` for every document ``j`` of a
query; ``G(s) = 2^s - 1`` on the predictions clipped to ``[0, y_max]``; ``BDCG_K(g)`` is the
best DCG of a gain vector (sorted descending, discount ``1/log2(1 + r)`` for ``r <= K``).

- query level, Algorithm 1, eq. (A1) of the method note::

      EL(q) = <BDCG({G(s_ij)}_j)>_i - BDCG({<G(s_ij)>_i}_j)

- document level, Algorithm 2, eq. (A2)::

      EL(j) = < <BDCG(g_i[j <- G(s_pj)])>_p - BDCG(g_i[j <- <G(s_.j)>]) >_i

  with ``g_i = (G(s_i1), ..., G(s_in))`` and ``[j <- v]`` replacing entry j (the second term
  takes the MEAN gain of j, which makes EL(j) >= 0 by Jensen: BDCG is convex in one entry).

Both are >= 0 and 0 when the members agree. Layout: the documents of all queries are rows of
one array, query ``q`` owning rows ``query_offsets[q]:query_offsets[q+1]``; scores have shape
(n_docs, N). The kernels pad queries of similar length into 3-d blocks (zero gains, which
change no BDCG) and process them in chunks, so memory stays bounded.

EL(j) without the naive O(N^2 n^2 log n): replacing entry j of member i's sorted gains ``a`` by
v moves v to the rank ``#{a > v}`` (j's own entry excluded) and shifts the entries between
the old and the new rank by one place; with prefix sums of ``a_t (d_{t+1} - d_t)`` the new BDCG
is O(1) after a binary search, so a query costs O(N^2 n log n).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

_CHUNK_ELEMENTS = 1 << 21
"""Upper bound on the elements of one chunk's largest temporary array (~16 MB of float64)."""


@dataclass(frozen=True, eq=False)
class ExpectedLoss:
    """EL(q) per query and EL(j) per document of one pool under one ensemble.

    Attributes
    ----------
    query : ndarray, shape (n_queries,)
        EL(q), eq. (A1).
    document : ndarray, shape (n_docs,)
        EL(j), eq. (A2), of each document within its query.
    cutoff : int or None
        K (None: no cut-off, the paper's form).
    """

    query: np.ndarray
    document: np.ndarray
    cutoff: int | None


def gains_of(scores: np.ndarray, max_grade: float) -> np.ndarray:
    """``G(s) = 2^s - 1`` of predicted grades clipped to ``[0, max_grade]`` (any shape)."""
    if not max_grade > 0:
        raise ValueError(f"max_grade must be > 0, got {max_grade}")
    return np.exp2(np.clip(np.asarray(scores, dtype=np.float64), 0.0, max_grade)) - 1.0


def discounts(length: int, cutoff: int | None) -> np.ndarray:
    """``d(r) = 1/log2(1 + r)`` for ranks ``r = 1..length``, 0 past the cut-off; shape (length,)."""
    ranks = np.arange(1, length + 1)
    values = 1.0 / np.log2(1.0 + ranks)
    if cutoff is not None:
        values[ranks > cutoff] = 0.0
    return values


def best_dcg(gains: np.ndarray, cutoff: int | None) -> np.ndarray:
    """``BDCG_K`` of gain vectors along the last axis (sorted descending); shape ``gains.shape[:-1]``."""
    gains = np.asarray(gains, dtype=np.float64)
    ordered = -np.sort(-gains, axis=-1)
    return ordered @ discounts(gains.shape[-1], cutoff)


def _validate(
    scores: np.ndarray, query_offsets: np.ndarray, cutoff: int | None
) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(query_offsets, dtype=np.int64)
    if scores.ndim != 2 or scores.shape[1] < 1:
        raise ValueError(f"scores must have shape (n_docs, N) with N >= 1, got {scores.shape}")
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != scores.shape[0]:
        raise ValueError("query_offsets must run from 0 to n_docs")
    if np.any(np.diff(offsets) < 0):
        raise ValueError("query_offsets must be non-decreasing")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite")
    if cutoff is not None and cutoff < 1:
        raise ValueError(f"cutoff must be >= 1 or None, got {cutoff}")
    return scores, offsets


def _chunks(offsets: np.ndarray, per_row: int) -> Iterator[tuple[np.ndarray, int]]:
    """Queries grouped by length (indices, padded length) so a chunk's block stays bounded."""
    lengths = np.diff(offsets)
    order = np.argsort(lengths, kind="stable")
    start = 0
    while start < order.size:
        stop = start + 1
        # Lengths ascend, so the last query of a chunk sets its width.
        while (
            stop < order.size
            and (stop - start + 1) * max(int(lengths[order[stop]]), 1) * per_row <= _CHUNK_ELEMENTS
        ):
            stop += 1
        yield order[start:stop], max(int(lengths[order[stop - 1]]), 1)
        start = stop


def _padded(
    gains: np.ndarray, offsets: np.ndarray, queries: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Gains of `queries` as a zero-padded block (C, width, N) and the mask of real rows (C, width)."""
    lengths = offsets[queries + 1] - offsets[queries]
    position = np.arange(width)
    real = position[None, :] < lengths[:, None]
    rows = np.where(real, offsets[queries][:, None] + position[None, :], 0)
    block = np.where(real[..., None], gains[rows], 0.0)
    return block, real


def expected_loss_queries(
    scores: np.ndarray, query_offsets: np.ndarray, *, max_grade: float, cutoff: int | None = 10
) -> np.ndarray:
    """EL(q) of every query, eq. (A1) (Algorithm 1), shape (n_queries,).

    Parameters
    ----------
    scores : ndarray, shape (n_docs, N)
        ``s_ij``: member i's predicted grade of each document (clipped to [0, max_grade]).
    query_offsets : ndarray of int, shape (n_queries + 1,)
    max_grade : float
        ``y_max``.
    cutoff : int or None
        K of ``BDCG_K`` (None: every document counts, as in the paper).
    """
    scores, offsets = _validate(scores, query_offsets, cutoff)
    gains = gains_of(scores, max_grade)
    n_members = gains.shape[1]
    result = np.zeros(offsets.size - 1)
    for queries, width in _chunks(offsets, n_members + 1):
        block, _ = _padded(gains, offsets, queries, width)
        members = best_dcg(np.swapaxes(block, 1, 2), cutoff).mean(axis=1)
        consensus = best_dcg(block.mean(axis=2), cutoff)
        result[queries] = members - consensus
    return np.maximum(result, 0.0)  # >= 0 in exact arithmetic; drop rounding noise


def expected_loss_documents(
    scores: np.ndarray, query_offsets: np.ndarray, *, max_grade: float, cutoff: int | None = 10
) -> np.ndarray:
    """EL(j) of every document within its query, eq. (A2) (Algorithm 2), shape (n_docs,).

    Parameters as `expected_loss_queries`.
    """
    scores, offsets = _validate(scores, query_offsets, cutoff)
    gains = gains_of(scores, max_grade)
    n_members = gains.shape[1]
    result = np.zeros(gains.shape[0])
    span = float(gains.max(initial=0.0)) + 1.0
    for queries, width in _chunks(offsets, n_members * (n_members + 1)):
        block, real = _padded(gains, offsets, queries, width)
        losses = _document_losses(block, cutoff, span)
        result[(offsets[queries][:, None] + np.arange(width)[None, :])[real]] = losses[real]
    return np.maximum(result, 0.0)


def _document_losses(block: np.ndarray, cutoff: int | None, span: float) -> np.ndarray:
    """EL(j) for a padded block of gains (C, n, N); returns (C, n)."""
    n_queries, width, n_members = block.shape
    member_gains = np.swapaxes(block, 1, 2)  # (C, N, n): g_i
    order = np.argsort(-member_gains, axis=2, kind="stable")
    ordered = np.take_along_axis(member_gains, order, axis=2)  # a, descending
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(width)[None, None, :], axis=2)  # 0-based rank of j
    discount = np.r_[discounts(width, cutoff), 0.0]  # d at 0-based ranks 0..width (sentinel 0)
    best = ordered @ discount[:width]  # (C, N)
    # Moving the entry at rank t one place down (up) changes its term by a_t (d_{t+1} - d_t)
    # (a_t (d_{t-1} - d_t)); prefix sums over t give any run of shifted entries at once.
    down = np.zeros((n_queries, n_members, width + 1))
    down[..., 1:] = np.cumsum(ordered * (discount[1:] - discount[:-1]), axis=2)
    up = np.zeros((n_queries, n_members, width + 1))
    up[..., 2:] = np.cumsum(ordered[..., 1:] * (discount[:-2] - discount[1:-1]), axis=2)

    # The values j may take: every member's gain G(s_pj), then the mean gain.
    values = np.concatenate([block, block.mean(axis=2, keepdims=True)], axis=2)  # (C, n, N+1)
    n_values = n_members + 1
    # #{a_i > v} by one binary search over all rows: row r's ascending gains shifted by r * span.
    rows = n_queries * n_members
    shift = (np.arange(rows, dtype=np.float64) * span).reshape(n_queries, n_members, 1)
    ascending = (ordered[..., ::-1] + shift).ravel()
    targets = values.reshape(n_queries, 1, width * n_values) + shift  # (C, N, n*(N+1))
    above = width - (
        np.searchsorted(ascending, targets.ravel(), side="right").reshape(targets.shape)
        - (np.arange(rows).reshape(n_queries, n_members, 1) * width)
    )
    above = above.reshape(n_queries, n_members, width, n_values)
    own = member_gains[..., None]  # a_i at j's own rank, (C, N, n, 1)
    # j's own entry does not count; compare as the search did (shifted), so the two agree
    # even where the shift rounds a value onto its neighbour.
    shifted_own = own + shift[..., None]
    new_rank = above - (shifted_own > targets.reshape(above.shape))
    old_rank = rank[..., None]  # (C, N, n, 1)
    flat_new = new_rank.reshape(n_queries, n_members, -1)
    down_new = np.take_along_axis(down, flat_new, axis=2).reshape(new_rank.shape)
    up_new = np.take_along_axis(up, flat_new + 1, axis=2).reshape(new_rank.shape)
    down_old = np.take_along_axis(down, rank, axis=2)[..., None]
    up_old = np.take_along_axis(up, rank + 1, axis=2)[..., None]
    shifted = np.where(
        new_rank < old_rank, down_old - down_new, np.where(new_rank > old_rank, up_new - up_old, 0.0)
    )
    replaced = (
        best[:, :, None, None]
        - own * discount[old_rank]
        + values[:, None, :, :] * discount[new_rank]
        + shifted
    )  # (C, N, n, N+1): BDCG of g_i with entry j replaced by each value
    loss = replaced[..., :n_members].mean(axis=3) - replaced[..., n_members]  # (C, N, n)
    return loss.mean(axis=1)


def expected_loss(
    scores: np.ndarray, query_offsets: np.ndarray, *, max_grade: float, cutoff: int | None = 10
) -> ExpectedLoss:
    """Both EL(q) (A1) and EL(j) (A2); see `expected_loss_queries`."""
    return ExpectedLoss(
        query=expected_loss_queries(scores, query_offsets, max_grade=max_grade, cutoff=cutoff),
        document=expected_loss_documents(scores, query_offsets, max_grade=max_grade, cutoff=cutoff),
        cutoff=cutoff,
    )
