"""The pool: the array layout every vectorised function of the numeric core shares.

A pool holds ``m`` queries. Each query has up to ``n`` candidate items, stored in *slots*
``0..n-1`` (the union of the documents the systems rank for it, plus any judged ones).
A system's ranking of a query is a row of slot indices, truncated to the cutoff ``K``;
``-1`` marks an empty position (a ranking shorter than ``K``, or a query a run omits).

Shapes
------
theta        (m, n, G)  label distribution per slot over grades 0..G-1 (G = y_max + 1)
slot_used    (m, n)     which slots hold an item
rankings     (S, m, K)  slot index per rank and system, -1 = empty
item_cost    (m, n)     cost c(z) of labelling each slot, 0 on unused slots
query_weight (m,)       p(x), sums to 1 (uniform by default)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimation._checks import check_costs, check_probability_rows, check_weights

EMPTY = -1


@dataclass(frozen=True, eq=False)
class Pool:
    """Queries, their candidate items, the label model and the systems' rankings.

    See the module docstring for the array shapes. ``query_ids``, ``item_ids`` (a list of
    per-query lists of docnos, slot order) and ``system_names`` carry the identifiers that
    reports print; the numeric functions use only the arrays.
    """

    theta: np.ndarray
    slot_used: np.ndarray
    rankings: np.ndarray
    item_cost: np.ndarray
    query_weight: np.ndarray
    query_ids: tuple[str, ...] = ()
    item_ids: tuple[tuple[str, ...], ...] = ()
    system_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        theta = np.asarray(self.theta, dtype=float)
        if theta.ndim != 3:
            raise ValueError(f"theta must have shape (m, n, G), got {theta.shape}")
        m, n, _ = theta.shape
        slot_used = np.asarray(self.slot_used, dtype=bool)
        if slot_used.shape != (m, n):
            raise ValueError(f"slot_used must have shape {(m, n)}, got {slot_used.shape}")
        check_probability_rows(theta, used=slot_used)
        rankings = np.asarray(self.rankings)
        if rankings.ndim != 3 or rankings.shape[1] != m:
            raise ValueError(f"rankings must have shape (S, {m}, K), got {rankings.shape}")
        if rankings.size and (rankings.min() < EMPTY or rankings.max() >= n):
            raise ValueError("rankings hold slot indices in 0..n-1, or -1 for an empty position")
        filled = rankings >= 0
        if np.any(~slot_used[np.arange(m)[None, :, None], np.where(filled, rankings, 0)] & filled):
            raise ValueError("a ranking points at an unused slot")
        _check_no_duplicates(rankings)
        item_cost = check_costs(np.asarray(self.item_cost, dtype=float), name="item costs")
        if item_cost.shape != (m, n):
            raise ValueError(f"item_cost must have shape {(m, n)}, got {item_cost.shape}")
        query_weight = check_weights(self.query_weight)
        if query_weight.shape != (m,):
            raise ValueError(f"query_weight must have shape ({m},), got {query_weight.shape}")
        object.__setattr__(self, "theta", theta)
        object.__setattr__(self, "slot_used", slot_used)
        object.__setattr__(self, "rankings", rankings.astype(np.int64, copy=False))
        object.__setattr__(self, "item_cost", item_cost)
        object.__setattr__(self, "query_weight", query_weight / query_weight.sum())

    @property
    def n_queries(self) -> int:
        return self.theta.shape[0]

    @property
    def n_slots(self) -> int:
        return self.theta.shape[1]

    @property
    def n_grades(self) -> int:
        return self.theta.shape[2]

    @property
    def n_systems(self) -> int:
        return self.rankings.shape[0]

    @property
    def cutoff(self) -> int:
        return self.rankings.shape[2]


def _check_no_duplicates(rankings: np.ndarray) -> None:
    """No slot may appear twice in one system's ranking of one query."""
    if rankings.shape[-1] < 2:
        return
    ordered = np.sort(rankings, axis=-1)
    repeated = (ordered[..., 1:] == ordered[..., :-1]) & (ordered[..., 1:] >= 0)
    if np.any(repeated):
        system, query, _ = np.argwhere(repeated)[0]
        raise ValueError(f"system {int(system)} ranks an item twice for query {int(query)}")
