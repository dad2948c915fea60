"""The drawn variant of training-data selection (method note §6): ELO-DCG's preferences turned
into a probability design, so the labels that train the ranker also give unbiased totals with
an unbiased variance estimate.

Design. Units are drawn with target inclusion probabilities proportional to
``q = (1 - eps) EL / sum EL + eps / |U|`` (capped at 1: `inclusion_probabilities`) by
conditional Poisson sampling (`estimation.sampling.conditional_poisson`): a fixed sample size,
first- and second-order inclusion probabilities known exactly, every joint probability > 0.
(The systematic PPS draw used before had unknown and partly zero joint probabilities.)

``elo_d``   one stage: ``budget`` documents of the pool; the label budget is spent exactly.
``elo_qd``  two stages: queries by EL(q), then in each drawn query ``m_q = min(cap, unlabeled,
            budget)`` documents by EL(j).
``elo_q``   two stages: queries by EL(q), then ``m_q = min(unlabeled, budget)`` of their
            documents uniformly (all of them when they fit the budget).

The second stage's size ``m_q`` depends on the query alone, never on which other queries were
drawn, and the queries' second stages are drawn independently: that is what makes a document's
marginal inclusion probability the product ``pi_q pi_{j|q}`` and the two-stage variance
estimator unbiased (Särndal, Swensson & Wretman 1992 §4.3: invariance and independence). The
price is the budget: the number of queries is the largest n for which ANY n queries fit it
(the n largest ``m_q`` sum to at most the budget), so a two-stage draw spends at most the
budget and, when queries differ in size, less (in the app the next round spends the rest).
With a single query drawn (n = 1) no pair of queries is ever drawn together and the between-
query variance cannot be estimated (the estimate then says so with a NaN variance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimation.formats.letor import LetorPool
from estimation.sampling.conditional_poisson import (
    ConditionalPoissonDesign,
    conditional_poisson_design,
    conditional_poisson_draw,
    conditional_poisson_joint,
)
from estimation.sampling.inclusion import (
    TotalEstimate,
    horvitz_thompson_estimate,
    inclusion_probabilities,
    mixture_weights,
    two_stage_estimate,
)
from estimation.training.elo_dcg import ExpectedLoss


@dataclass(frozen=True, eq=False)
class DrawnStage:
    """One conditional Poisson stage: the candidates, the design over them, the drawn ones.

    Attributes
    ----------
    candidates : ndarray of int64, shape (N,)
        Pool rows (document stage) or query indices (query stage) the stage draws from.
    design : ConditionalPoissonDesign
    drawn : ndarray of int64, shape (n,)
        Positions in `candidates` of the drawn units, in selection order.
    """

    candidates: np.ndarray
    design: ConditionalPoissonDesign
    drawn: np.ndarray

    @property
    def inclusion(self) -> np.ndarray:
        """Inclusion probabilities of the drawn units, shape (n,)."""
        return self.design.inclusion[self.drawn]

    def joint(self) -> np.ndarray:
        """Joint inclusion probabilities of the drawn units, shape (n, n)."""
        return conditional_poisson_joint(self.design, self.drawn)


@dataclass(frozen=True, eq=False)
class DrawnSelection:
    """Rows of a drawn selection, their probabilities and the stages that drew them.

    Attributes
    ----------
    rows : ndarray of int64, shape (m,)
    inclusion_probability : ndarray, shape (m,)
        Each row's marginal probability of being selected (two-stage: ``pi_q pi_{j|q}``).
    query_inclusion_probability, document_inclusion_probability_given_query : ndarray or None
        Two-stage only: the stage probabilities ``pi_q`` and ``pi_{j|q}`` of each row.
    first_stage : DrawnStage
        Documents (elo_d) or queries (two-stage).
    second_stage : tuple of DrawnStage
        Two-stage only: one per drawn query, in the order of `first_stage.drawn`.
    """

    rows: np.ndarray
    inclusion_probability: np.ndarray
    query_inclusion_probability: np.ndarray | None
    document_inclusion_probability_given_query: np.ndarray | None
    first_stage: DrawnStage
    second_stage: tuple[DrawnStage, ...]


def _stage(candidates: np.ndarray, inclusion: np.ndarray, rng: np.random.Generator) -> DrawnStage:
    design = conditional_poisson_design(inclusion)
    return DrawnStage(candidates=candidates, design=design, drawn=conditional_poisson_draw(design, rng))


def _empty_stage() -> DrawnStage:
    empty = np.zeros(0, dtype=np.int64)
    return DrawnStage(empty, ConditionalPoissonDesign(np.zeros(0), np.zeros(0), 0), empty)


def query_count(stage_sizes: np.ndarray, budget: int) -> int:
    """The largest n for which any n queries' stage sizes fit the budget (0 without budget)."""
    spend = np.cumsum(np.sort(stage_sizes)[::-1])
    return int(np.searchsorted(spend, budget, side="right"))


def draw_selection(
    pool: LetorPool,
    loss: ExpectedLoss,
    ranked: list[np.ndarray],
    strategy: str,
    budget: int,
    docs_per_query: int,
    epsilon: float,
    rng: np.random.Generator,
) -> DrawnSelection:
    """Draw `strategy`'s selection (module doc); `ranked` holds each query's unlabeled rows by
    EL(j) descending, `budget` is at most the number of unlabeled rows."""
    if budget == 0:
        empty = np.zeros(0)
        two_stage = None if strategy == "elo_d" else empty
        return DrawnSelection(np.zeros(0, dtype=np.int64), empty, two_stage, two_stage, _empty_stage(), ())
    if strategy == "elo_d":
        candidates = np.flatnonzero(~pool.labeled)
        target = inclusion_probabilities(mixture_weights(loss.document[candidates], epsilon), budget)
        stage = _stage(candidates, target, rng)
        # Highest EL(j) first, as the deterministic rule orders them.
        order = np.lexsort((candidates[stage.drawn], -loss.document[candidates[stage.drawn]]))
        stage = DrawnStage(candidates, stage.design, stage.drawn[order])
        return DrawnSelection(candidates[stage.drawn], stage.inclusion, None, None, stage, ())
    available = np.array([rows.size for rows in ranked])
    queries = np.flatnonzero(available > 0)
    capacity = available[queries] if strategy == "elo_q" else np.minimum(available[queries], docs_per_query)
    stage_size = np.minimum(capacity, budget)
    n_queries = min(query_count(stage_size, budget), queries.size)  # >= 1: m_q <= budget
    first = _stage(
        queries, inclusion_probabilities(mixture_weights(loss.query[queries], epsilon), n_queries), rng
    )
    by_loss = np.lexsort((queries[first.drawn], -loss.query[queries[first.drawn]]))  # highest EL first
    first = DrawnStage(queries, first.design, first.drawn[by_loss])
    rows, query_pi, document_pi, second = [], [], [], []
    for position in first.drawn.tolist():
        query_rows = ranked[queries[position]]
        size = int(stage_size[position])
        if strategy == "elo_q":
            target = np.full(query_rows.size, size / query_rows.size)
        else:
            target = inclusion_probabilities(mixture_weights(loss.document[query_rows], epsilon), size)
        inner = _stage(query_rows, target, rng)  # drawn ascending = by EL(j) descending
        second.append(inner)
        rows.append(query_rows[inner.drawn])
        document_pi.append(inner.inclusion)
        query_pi.append(np.full(inner.drawn.size, first.design.inclusion[position]))
    query_probability, document_probability = np.concatenate(query_pi), np.concatenate(document_pi)
    return DrawnSelection(
        rows=np.concatenate(rows),
        inclusion_probability=query_probability * document_probability,
        query_inclusion_probability=query_probability,
        document_inclusion_probability_given_query=document_probability,
        first_stage=first,
        second_stage=tuple(second),
    )


def drawn_total_estimate(
    drawn: DrawnSelection, values: np.ndarray, *, confidence: float = 0.95
) -> TotalEstimate:
    """Horvitz-Thompson estimate of ``sum over the pool's candidate rows of y`` from `values`
    (``y`` of the selected rows, in selection order) with its unbiased variance estimate
    (one stage: SSW eq. 2.8.9; two stages: Result 4.3.1). With one query drawn the variance
    is NaN (module doc)."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != drawn.rows.shape:
        raise ValueError(f"values must have shape {drawn.rows.shape}, got {values.shape}")
    if not drawn.second_stage:
        return horvitz_thompson_estimate(
            values, drawn.inclusion_probability, drawn.first_stage.joint(), confidence=confidence
        )
    sizes = [stage.drawn.size for stage in drawn.second_stage]
    estimate = two_stage_estimate(
        values,
        np.repeat(np.arange(len(sizes)), sizes),
        drawn.first_stage.inclusion,
        drawn.first_stage.joint(),
        drawn.document_inclusion_probability_given_query,  # type: ignore[arg-type]
        [stage.joint() for stage in drawn.second_stage],
        confidence=confidence,
    )
    if drawn.first_stage.drawn.size == 1 and drawn.first_stage.inclusion[0] < 1:
        nan = float("nan")
        return TotalEstimate(estimate.total, nan, nan, nan, nan, confidence)
    return estimate
