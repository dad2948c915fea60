"""Which (query, document) pairs to label next for training a ranker: ELO-DCG and baselines.

Strategies (Long et al. 2010 §4-5; method note §4-5). The budget ``M`` counts labels; only
unlabeled rows are ever selected, and exactly ``min(M, unlabeled rows reachable)`` are:

``elo_qd``    two-stage (the paper's best, the default): queries by EL(q) descending, in each
              the ``docs_per_query`` (15) unlabeled documents with the largest EL(j).
``elo_q``     queries by EL(q), all their unlabeled documents (the last query truncated to
              the budget, its documents by EL(j)).
``elo_d``     documents by EL(j) over the whole pool.
``random_q``  random queries, all their unlabeled documents (the last truncated at random).
``random_d``  random unlabeled documents.
``random_qd`` random queries, up to ``docs_per_query`` random documents each.
``top_k``     random queries, up to ``docs_per_query`` documents with the highest mean
              prediction of the ensemble (what search teams usually judge).
``variance``  documents by the variance of the members' predictions (the paper's VR).

EL is computed with labeled rows fixed at their grade for every member (no uncertainty left),
so a partly labeled query's EL(q) reflects only its unlabeled documents.

Drawn variant (``draw=True``; ``elo_qd``, ``elo_q``, ``elo_d``; method note §6): units are drawn
by conditional Poisson sampling with target probabilities proportional to
``q = (1 - eps) EL / sum EL + eps / |U|`` (`estimation.training.drawn`, whose doc says why this
design and how the budget is honoured: elo_d spends it exactly, the two-stage rules at most).
Every selected item carries its marginal inclusion probability (two-stage: also ``pi_q`` and
``pi_{j|q}``, whose product it is); ``sum y / inclusion_probability`` over the labels is then
unbiased for the pool's total of any per-document quantity y, e.g. a ranker's DCG@10 (a sum of
per-document terms), and `Selection.total_estimate` adds an unbiased variance estimate. A
deterministic selection has no probabilities and must never feed the estimators.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimation.formats.letor import LetorPool
from estimation.sampling.inclusion import TotalEstimate
from estimation.training.drawn import DrawnSelection, draw_selection, drawn_total_estimate
from estimation.training.elo_dcg import ExpectedLoss, discounts, expected_loss

SELECTION_RULES = ("elo_qd", "elo_q", "elo_d", "random_q", "random_d", "random_qd", "top_k", "variance")
DRAWABLE_RULES = ("elo_qd", "elo_q", "elo_d")
NEEDS_SCORES = ("elo_qd", "elo_q", "elo_d", "top_k", "variance")
DEFAULT_DOCS_PER_QUERY = 15
DEFAULT_EPSILON = 0.1


@dataclass(frozen=True, eq=False)
class Selection:
    """One round's selection, items in selection order (grouped by query for query strategies).

    Attributes
    ----------
    rows : ndarray of int64, shape (m,)
        Pool rows selected.
    items : tuple of (query id, doc id), length m
    el_query, el_doc : ndarray, shape (m,)
        EL(q) of the item's query and EL(j) of the item (NaN when no scores were given).
    inclusion_probability : ndarray, shape (m,), or None
        Drawn variant: the item's marginal probability of being selected (two-stage: the
        product of the next two); None when deterministic.
    query_inclusion_probability : ndarray, shape (m,), or None
        Drawn two-stage selections (elo_qd, elo_q): the inclusion probability of the item's query.
    document_inclusion_probability_given_query : ndarray, shape (m,), or None
        Drawn two-stage selections: the item's inclusion probability given its query is drawn.
    drawn : DrawnSelection or None
        Drawn variant: the stages' designs, for `total_estimate`.
    strategy, seed, budget, docs_per_query, cutoff, draw, epsilon : as requested
    """

    rows: np.ndarray
    items: tuple[tuple[str, str], ...]
    el_query: np.ndarray
    el_doc: np.ndarray
    inclusion_probability: np.ndarray | None
    query_inclusion_probability: np.ndarray | None
    document_inclusion_probability_given_query: np.ndarray | None
    drawn: DrawnSelection | None
    strategy: str
    seed: int
    budget: int
    docs_per_query: int
    cutoff: int | None
    draw: bool
    epsilon: float

    def __len__(self) -> int:
        return int(self.rows.size)

    def total_estimate(self, values: np.ndarray, *, confidence: float = 0.95) -> TotalEstimate:
        """Horvitz-Thompson total over the pool's unlabeled rows of a per-row quantity, from its
        `values` on the selected rows (selection order), with an unbiased variance estimate."""
        if self.drawn is None:
            raise ValueError("a deterministic selection is no sample: it gives no estimate")
        return drawn_total_estimate(self.drawn, values, confidence=confidence)


def _validate(
    pool: LetorPool, scores: np.ndarray | None, strategy: str, budget: int, docs_per_query: int, draw: bool
) -> None:
    if strategy not in SELECTION_RULES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(SELECTION_RULES)}")
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    if docs_per_query < 1:
        raise ValueError(f"docs_per_query must be >= 1, got {docs_per_query}")
    if draw and strategy not in DRAWABLE_RULES:
        raise ValueError(f"draw applies to {', '.join(DRAWABLE_RULES)}, not {strategy}")
    if scores is None:
        if strategy in NEEDS_SCORES:
            raise ValueError(f"strategy {strategy} needs the ensemble's scores")
    elif np.shape(scores)[0] != pool.n_docs or np.ndim(scores) != 2:
        raise ValueError(f"scores must have shape (n_docs={pool.n_docs}, N), got {np.shape(scores)}")


def pool_expected_loss(
    pool: LetorPool, scores: np.ndarray, *, max_grade: float, cutoff: int | None = 10
) -> ExpectedLoss:
    """EL(q) and EL(j) of a pool, labeled rows fixed at their grade for every member."""
    known = np.where(pool.labeled[:, None], pool.grades[:, None].astype(np.float64), scores)
    return expected_loss(known, pool.query_offsets, max_grade=max_grade, cutoff=cutoff)


def _ranked_candidates(pool: LetorPool, key: np.ndarray) -> list[np.ndarray]:
    """Per query: its unlabeled rows by `key` descending (ties: row order)."""
    query = pool.query_of_row()
    candidates = np.flatnonzero(~pool.labeled)
    order = candidates[np.lexsort((candidates, -key[candidates], query[candidates]))]
    bounds = np.searchsorted(query[order], np.arange(pool.n_queries + 1))
    return [order[bounds[q] : bounds[q + 1]] for q in range(pool.n_queries)]


def _take_queries(
    ranked: list[np.ndarray], query_order: np.ndarray, cap: int | None, budget: int
) -> np.ndarray:
    taken: list[np.ndarray] = []
    left = budget
    for q in query_order:
        if left == 0:
            break
        rows = ranked[q][: left if cap is None else min(cap, left)]
        taken.append(rows)
        left -= rows.size
    return np.concatenate(taken) if taken else np.zeros(0, dtype=np.int64)


def _top_documents(pool: LetorPool, key: np.ndarray, budget: int) -> np.ndarray:
    candidates = np.flatnonzero(~pool.labeled)
    return candidates[np.lexsort((candidates, -key[candidates]))][:budget]


def select_training(
    pool: LetorPool,
    scores: np.ndarray | None,
    *,
    strategy: str = "elo_qd",
    budget: int,
    max_grade: float | None = None,
    docs_per_query: int = DEFAULT_DOCS_PER_QUERY,
    cutoff: int | None = 10,
    seed: int = 0,
    draw: bool = False,
    epsilon: float = DEFAULT_EPSILON,
    loss: ExpectedLoss | None = None,
) -> Selection:
    """Choose up to `budget` unlabeled (query, document) pairs of `pool` to label next.

    Parameters
    ----------
    pool : LetorPool
        Rows with ``grades == -1`` are the candidates; labeled rows are never selected.
    scores : ndarray, shape (n_docs, N), or None
        The ensemble's predicted grades (`estimation.training.ensembles`); None only for the random
        strategies (EL columns are then NaN).
    strategy, budget, docs_per_query, cutoff, draw, epsilon
        See the module doc; ``cutoff`` is K of BDCG (None: no cut-off).
    max_grade : float, optional
        ``y_max`` for clipping and gains; default the largest grade in the pool.
    seed : int
        Seeds every random choice: the same inputs and seed give the same selection.
    loss : ExpectedLoss, optional
        EL already computed by `pool_expected_loss` for these scores (skips recomputing).
    """
    _validate(pool, scores, strategy, budget, docs_per_query, draw)
    if max_grade is None:
        if not pool.labeled.any():
            raise ValueError("no labeled row to infer the top grade from; give max_grade")
        max_grade = float(max(1, pool.grades.max()))
    rng = np.random.default_rng(seed)
    if scores is not None and loss is None:
        loss = pool_expected_loss(pool, scores, max_grade=max_grade, cutoff=cutoff)
    candidates = np.flatnonzero(~pool.labeled)
    budget_used = min(budget, candidates.size)
    drawn = None
    if draw:
        assert loss is not None
        drawn = draw_selection(
            pool,
            loss,
            _ranked_candidates(pool, loss.document),
            strategy,
            budget_used,
            docs_per_query,
            epsilon,
            rng,
        )
        rows = drawn.rows
    elif strategy in ("elo_q", "elo_qd"):
        assert loss is not None
        query_order = np.lexsort((np.arange(pool.n_queries), -loss.query))
        cap = docs_per_query if strategy == "elo_qd" else None
        rows = _take_queries(_ranked_candidates(pool, loss.document), query_order, cap, budget_used)
    elif strategy in ("random_q", "random_qd", "top_k"):
        query_order = rng.permutation(pool.n_queries)
        key = (
            np.asarray(scores, dtype=np.float64).mean(axis=1)
            if strategy == "top_k"
            else rng.random(pool.n_docs)
        )
        cap = None if strategy == "random_q" else docs_per_query
        rows = _take_queries(_ranked_candidates(pool, key), query_order, cap, budget_used)
    elif strategy == "elo_d":
        assert loss is not None
        rows = _top_documents(pool, loss.document, budget_used)
    elif strategy == "variance":
        rows = _top_documents(pool, np.asarray(scores, dtype=np.float64).var(axis=1), budget_used)
    else:  # random_d
        rows = rng.permutation(candidates)[:budget_used]
    rows = np.asarray(rows, dtype=np.int64)
    query = pool.query_of_row()[rows]
    nan = np.full(rows.size, np.nan)
    return Selection(
        rows=rows,
        items=tuple(
            (pool.query_ids[q], pool.doc_ids[r]) for q, r in zip(query.tolist(), rows.tolist(), strict=True)
        ),
        el_query=loss.query[query] if loss is not None else nan,
        el_doc=loss.document[rows] if loss is not None else nan.copy(),
        inclusion_probability=None if drawn is None else drawn.inclusion_probability,
        query_inclusion_probability=None if drawn is None else drawn.query_inclusion_probability,
        document_inclusion_probability_given_query=(
            None if drawn is None else drawn.document_inclusion_probability_given_query
        ),
        drawn=drawn,
        strategy=strategy,
        seed=seed,
        budget=budget,
        docs_per_query=docs_per_query,
        cutoff=cutoff,
        draw=draw,
        epsilon=epsilon,
    )


def pool_mean_dcg(pool: LetorPool, scores: np.ndarray, cutoff: int | None = 10) -> float:
    """Mean DCG@cutoff (gains 2^y - 1, discounts 1/log2(1 + r)) over the pool's queries of the
    ranking by `scores` (shape (n_docs,); ties keep row order): how well a ranker does on
    labeled test queries. Unlabeled rows (grade -1) gain nothing."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (pool.n_docs,):
        raise ValueError(f"scores must have shape ({pool.n_docs},), got {scores.shape}")
    if pool.n_queries == 0:
        raise ValueError("the pool has no query")
    values = []
    offsets = pool.query_offsets
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        order = np.argsort(-scores[a:b], kind="stable")
        gains = np.exp2(np.maximum(pool.grades[a:b][order], 0)) - 1.0
        values.append(float(gains @ discounts(b - a, cutoff)))
    return float(np.mean(values))


_RENAMED = {"STRATEGIES": "SELECTION_RULES", "DRAWABLE_STRATEGIES": "DRAWABLE_RULES"}


def __getattr__(name: str) -> object:
    """The old names of the selection rules still import, with a DeprecationWarning."""
    if name in _RENAMED:
        import warnings

        warnings.warn(f"{__name__}.{name} is now {_RENAMED[name]}", DeprecationWarning, stacklevel=2)
        return globals()[_RENAMED[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
