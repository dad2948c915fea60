"""The draw queue's sampling loop: units drawn with replacement from q by inverse CDF.

Sawade et al. (2013), Algorithm 1 (query level) and Schnabel et al. (2016), Sect. 3
(item level) draw units ``x ~ q`` with replacement until the budget is spent. A *unit* is a
flat index into ``q``: a topic when ``q`` has shape (m,), a (topic, slot) pair
``topic * n + slot`` when it has shape (m, n). A draw of a unit whose items are all covered
already (judged or queued) costs nothing but is kept: it counts in the estimator with its
propensity ``q(unit) / sum(q)``.

Each draw is seeded by the campaign's seed and the draw's order number, so the same q gives
the same draws however the drawing is split into batches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from estimation.sampling.costs import fits_budget

STOP_BUDGET = "budget"
STOP_EXHAUSTED = "exhausted"

UnitItems = Callable[[int, np.ndarray], tuple[int, np.ndarray]]


def seeded_draw(cumulative: np.ndarray, seed: int, order: int) -> int:
    """The unit drawn by inverse CDF for the draw numbered `order`.

    Parameters
    ----------
    cumulative : ndarray, shape (u,)
        ``cumsum(q)`` over the flat units (q need not be normalised).
    seed, order : int
        The generator is ``default_rng([seed, order])``: one uniform per draw.

    Returns
    -------
    int
        The smallest unit ``i`` with ``cumulative[i] > U * cumulative[-1]``, ``U ~ U[0, 1)``.
    """
    uniform = np.random.default_rng([seed, order]).random()
    unit = int(np.searchsorted(cumulative, uniform * cumulative[-1], side="right"))
    return min(unit, cumulative.size - 1)


def topic_unit_items(unit: int, slot_used: np.ndarray) -> tuple[int, np.ndarray]:
    """A query-level unit: the topic ``unit`` and every used slot of it (Sawade et al.)."""
    return unit, np.flatnonzero(slot_used[unit])


def pair_unit_items(unit: int, slot_used: np.ndarray) -> tuple[int, np.ndarray]:
    """An item-level unit ``topic * n + slot``: the topic and that slot if used (Schnabel et al.)."""
    topic, slot = divmod(unit, slot_used.shape[1])
    return topic, np.array([slot] if slot_used[topic, slot] else [], dtype=int)


@dataclass(frozen=True, eq=False)
class DrawBatch:
    """Draws of one batch, in order.

    Attributes
    ----------
    units : ndarray, shape (k,)
        The flat unit index of each draw into ``q``.
    topics : ndarray, shape (k,)
        The topic (row of the pool) of each draw.
    new_slots : tuple of k ndarrays
        The slots each draw covers for the first time (empty for a repeat).
    propensities : ndarray, shape (k,)
        ``q(unit) / sum(q)`` in force at each draw.
    costs : ndarray, shape (k,)
        The predicted cost of each draw's new slots.
    stopped : str
        Why drawing stopped before the target: ``"budget"`` (the next draw would cost more than
        is left), ``"exhausted"`` (every item is covered), or ``""``.
    """

    units: np.ndarray
    topics: np.ndarray
    new_slots: tuple[np.ndarray, ...]
    propensities: np.ndarray
    costs: np.ndarray
    stopped: str

    @property
    def n_draws(self) -> int:
        return int(self.units.size)


def draw_batch(
    q: np.ndarray,
    slot_used: np.ndarray,
    unit_items: UnitItems,
    *,
    seed: int,
    first_order: int,
    covered_row: Callable[[int], np.ndarray],
    uncovered: int,
    cost: Callable[[int, np.ndarray], float],
    budget_left: float,
    items_wanted: int,
    copies: int = 1,
    max_draws: int = 5000,
) -> DrawBatch:
    """Draw units from q with replacement until enough new items, the budget or the pool runs out.

    Sawade et al. (2013), Algorithm 1: draw ``x ~ q``, label what it needs, stop when the next
    draw's cost would exceed the budget left.

    Parameters
    ----------
    q : ndarray, shape (m,) or (m, n)
        The sampling distribution over the units (flattened in C order).
    slot_used : ndarray of bool, shape (m, n)
        Which slots hold an item.
    unit_items : callable
        ``(unit, slot_used) -> (topic, candidate slots)``: `topic_unit_items` or `pair_unit_items`.
    seed, first_order : int
        Draw ``j`` of the batch uses `seeded_draw` with order ``first_order + j``.
    covered_row : callable
        ``topic -> (n,) bool``: the slots of a topic already covered before this batch; read
        once per topic reached (the caller may read it lazily from storage).
    uncovered : int
        The number of used slots not covered yet; drawing stops when it reaches 0.
    cost : callable
        ``(topic, slots) -> float``: the predicted cost of labelling these new slots.
    budget_left : float
        What the batch may spend; a draw fits when the batch's spending stays within it up to
        rounding (`estimation.sampling.costs.fits_budget`), so a draw costing exactly what is left fits.
    items_wanted : int
        Stop once the new slots times `copies` reach this.
    copies : int
        Tasks per new slot (the campaign's overlap).
    max_draws : int
        At most this many draws (repeats of covered units cost nothing).

    Returns
    -------
    DrawBatch
    """
    q = np.asarray(q, dtype=float).ravel()
    cumulative = np.cumsum(q)
    rows: dict[int, np.ndarray] = {}
    units: list[int] = []
    topics: list[int] = []
    new_slots: list[np.ndarray] = []
    propensities: list[float] = []
    costs: list[float] = []
    stopped = ""
    created = 0
    batch_spent = 0.0
    for _ in range(max_draws):
        if uncovered == 0:
            stopped = STOP_EXHAUSTED
            break
        unit = seeded_draw(cumulative, seed, first_order + len(units))
        topic, candidates = unit_items(unit, slot_used)
        if topic not in rows:
            rows[topic] = np.array(covered_row(topic), dtype=bool)
        slots = candidates[~rows[topic][candidates]]
        draw_cost = cost(topic, slots)
        if not fits_budget(batch_spent + draw_cost, budget_left):
            stopped = STOP_BUDGET
            break
        batch_spent += draw_cost
        rows[topic][slots] = True
        uncovered -= int(slots.size)
        units.append(unit)
        topics.append(topic)
        new_slots.append(slots)
        propensities.append(float(q[unit] / cumulative[-1]))
        costs.append(draw_cost)
        created += slots.size * copies
        if created >= items_wanted:
            break
    return DrawBatch(
        units=np.array(units, dtype=np.int64),
        topics=np.array(topics, dtype=np.int64),
        new_slots=tuple(new_slots),
        propensities=np.array(propensities, dtype=float),
        costs=np.array(costs, dtype=float),
        stopped=stopped,
    )
