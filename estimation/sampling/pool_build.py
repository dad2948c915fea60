"""Build a `Pool` from systems' runs, a label model and document costs.

The pool's queries are the union of the runs' queries; a query's slots are the union of the
documents the runs rank in their top K for it (plus any extra documents, e.g. ones already
judged). Everything past the per-run loop is vectorised over the whole pool, so that 30,000
queries with 120 documents each build in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from estimation.sampling.pool import EMPTY, Pool

ESTIMAND_RULE = (
    "the mean over every topic of the qrels (as evaluate averages), or over the runs' topics "
    "when no qrels are given; a topic no run ranks counts 0 for every run and needs no label"
)
"""One rule for what the estimates target, stated wherever a pool is built and reported."""


class RunLike(Protocol):
    """A system's run: its name and, per query id, its docnos best first (trec_eval order)."""

    @property
    def tag(self) -> str: ...

    @property
    def rankings(self) -> Mapping[str, Sequence[str]]: ...


RunInput = RunLike | tuple[str, Mapping[str, Sequence[str]]]


def build_pool(
    runs: Sequence[RunInput],
    cutoff: int,
    *,
    y_max: int,
    labels: Mapping[tuple[str, str], Sequence[float]] | None = None,
    item_cost: Mapping[str, float] | None = None,
    query_weight: Mapping[str, float] | np.ndarray | None = None,
    extra_items: Mapping[str, Sequence[str]] | None = None,
    topics: Sequence[str] | None = None,
) -> Pool:
    """Assemble the pool that the sampling distributions and estimators work on.

    Parameters
    ----------
    runs : sequence of Run or (name, {qid: docnos})
        The systems, in the order of ``pool.rankings``. Each ranking lists docnos best first;
        it is truncated to ``cutoff``. A query a run does not list gets an all-empty ranking.
    cutoff : int
        K, the ranking depth kept (the metric's cutoff).
    y_max : int
        The campaign's top grade; theta has ``y_max + 1`` grades.
    labels : mapping (qid, docno) -> probabilities, optional
        The label model: ``y_max + 1`` probabilities per pair. Pairs not listed (and all pairs,
        when omitted) get the uniform distribution over the grades. Pairs outside the pool are
        ignored.
    item_cost : mapping docno -> float, optional
        Cost of labelling each document; default 1 per document. Every document of the pool must
        be listed.
    query_weight : mapping qid -> weight or array (m,), optional
        p(x), normalised to sum to 1; an array follows the pool's (sorted) query order.
        Default uniform.
    extra_items : mapping qid -> docnos, optional
        Documents to add as slots after the runs' documents (e.g. judged documents no run
        ranks in its top K). Queries only listed here are added to the pool.
    topics : sequence of str, optional
        The estimand's topics (`ESTIMAND_RULE`): the pool holds exactly these queries, in
        the order below. A topic no run ranks gets a row without items (nothing to label,
        cost 0, metric 0 for every run); run topics not listed are dropped. Default: the
        union of the runs' (and extra items') queries.

    Returns
    -------
    Pool
        Queries sorted numerically when every query id is an integer, otherwise as strings.
        Within a query, slots follow first appearance: run 0's top K in rank order, then the
        new documents of run 1, and so on, then the extra items.

    Raises
    ------
    ValueError
        No runs or no queries, cutoff < 1, a run ranking a document twice for a query, a label row of the
        wrong length, a document without a cost, or a query weight missing for a query.
    """
    if cutoff < 1:
        raise ValueError(f"cutoff must be >= 1, got {cutoff}")
    if y_max < 1:
        raise ValueError(f"y_max must be >= 1, got {y_max}")
    named = [_as_named_run(run) for run in runs]
    if not named:
        raise ValueError("build_pool needs at least one run")
    named, extra, query_ids = _restricted_to_topics(named, dict(extra_items or {}), topics)
    query_index = {qid: index for index, qid in enumerate(query_ids)}
    m = len(query_ids)
    if m == 0:
        raise ValueError("the runs hold no queries")

    docs, system_of, query_of, rank_of = _entries(named, extra, query_index, cutoff)
    # Docnos get integer codes in order of first appearance: dict.fromkeys keeps that order.
    doc_names = list(dict.fromkeys(docs))
    doc_code = dict(zip(doc_names, range(len(doc_names)), strict=True))
    code_of = np.fromiter(map(doc_code.__getitem__, docs), dtype=np.int64, count=len(docs))
    n_docs = max(len(doc_names), 1)

    pair_key = query_of * n_docs + code_of
    pair_keys, pair_slot, entry_pair = _assign_slots(pair_key, m, n_docs)
    slot_of_entry = pair_slot[entry_pair]
    n_slots = int(pair_slot.max()) + 1 if len(pair_slot) else 1

    rankings = np.full((len(named), m, cutoff), EMPTY, dtype=np.int64)
    in_run = system_of >= 0
    rankings[system_of[in_run], query_of[in_run], rank_of[in_run]] = slot_of_entry[in_run]
    _check_no_repeats(rankings, named, query_ids)

    pair_query = pair_keys // n_docs
    pair_doc = pair_keys % n_docs
    slot_used = np.zeros((m, n_slots), dtype=bool)
    slot_used[pair_query, pair_slot] = True

    n_grades = y_max + 1
    theta = np.full((m, n_slots, n_grades), 1.0 / n_grades)
    if labels:
        _fill_labels(theta, labels, query_index, doc_code, pair_keys, pair_slot, n_docs)

    costs = np.zeros((m, n_slots))
    costs[pair_query, pair_slot] = _document_costs(doc_names, item_cost)[pair_doc]

    item_ids = _item_ids(pair_query, pair_slot, pair_doc, doc_names, m)
    return Pool(
        theta=theta,
        slot_used=slot_used,
        rankings=rankings,
        item_cost=costs,
        query_weight=_query_weights(query_weight, query_ids),
        query_ids=tuple(query_ids),
        item_ids=item_ids,
        system_names=tuple(name for name, _ in named),
    )


def _restricted_to_topics(
    named: list[tuple[str, Mapping[str, Sequence[str]]]],
    extra: dict[str, Sequence[str]],
    topics: Sequence[str] | None,
) -> tuple[list[tuple[str, Mapping[str, Sequence[str]]]], dict[str, Sequence[str]], list[str]]:
    """The runs and extra items on the estimand's topics (all of theirs when `topics` is None),
    and the pool's query ids in order."""
    if topics is None:
        return named, extra, _sorted_query_ids({qid for _, ranking in named for qid in ranking} | set(extra))
    wanted = {str(qid) for qid in topics}
    kept: list[tuple[str, Mapping[str, Sequence[str]]]] = [
        (name, {qid: docs for qid, docs in ranking.items() if qid in wanted}) for name, ranking in named
    ]
    return kept, {qid: docs for qid, docs in extra.items() if qid in wanted}, _sorted_query_ids(wanted)


def _entries(
    named: list[tuple[str, Mapping[str, Sequence[str]]]],
    extra: dict[str, Sequence[str]],
    query_index: dict[str, int],
    cutoff: int,
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """One entry per (system, query, rank) in the top K, the extra items as system -1: the docnos
    and, per entry, its system, query and 0-based rank. Python touches each query once
    (list.extend); the per-document work runs in C."""
    chunk_system: list[int] = []
    chunk_query: list[int] = []
    chunk_length: list[int] = []
    docs: list[str] = []
    for system, (_, ranking) in enumerate(named):
        for qid, docnos in ranking.items():
            top = docnos[:cutoff]
            docs.extend(top)
            chunk_system.append(system)
            chunk_query.append(query_index[qid])
            chunk_length.append(len(top))
    for qid, docnos in extra.items():
        docs.extend(docnos)
        chunk_system.append(-1)
        chunk_query.append(query_index[qid])
        chunk_length.append(len(docnos))
    lengths = np.asarray(chunk_length, dtype=np.int64)
    system_of = np.repeat(np.asarray(chunk_system, dtype=np.int64), lengths)
    query_of = np.repeat(np.asarray(chunk_query, dtype=np.int64), lengths)
    chunk_start = np.cumsum(lengths) - lengths
    return docs, system_of, query_of, np.arange(len(docs)) - np.repeat(chunk_start, lengths)


def _as_named_run(run: RunInput) -> tuple[str, Mapping[str, Sequence[str]]]:
    if isinstance(run, tuple):
        name, ranking = run
        return str(name), ranking
    return str(run.tag), run.rankings


def _sorted_query_ids(query_ids: set[str]) -> list[str]:
    """Numeric order when every id is an integer (TREC topics), string order otherwise."""
    if all(qid.isdigit() for qid in query_ids):
        return sorted(query_ids, key=lambda qid: (int(qid), qid))
    return sorted(query_ids)


def _check_no_repeats(
    rankings: np.ndarray, named: list[tuple[str, Mapping[str, Sequence[str]]]], query_ids: list[str]
) -> None:
    """A document listed twice in one run's top K for a query lands twice in the same slot."""
    ordered = np.sort(rankings, axis=-1)
    repeated = (ordered[..., 1:] == ordered[..., :-1]) & (ordered[..., 1:] != EMPTY)
    if np.any(repeated):
        system, query, _ = np.argwhere(repeated)[0]
        raise ValueError(f"run {named[system][0]!r} ranks a document twice for query {query_ids[query]!r}")


def _assign_slots(pair_key: np.ndarray, m: int, n_docs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (query, document) keys sorted, the slot of each (first appearance within its
    query), and for each entry the index of its key."""
    pair_keys, first_entry, entry_pair = np.unique(pair_key, return_index=True, return_inverse=True)
    pair_query = pair_keys // n_docs
    order = np.lexsort((first_entry, pair_query))
    counts = np.bincount(pair_query, minlength=m)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot_of_pair = np.empty(len(pair_keys), dtype=np.int64)
    slot_of_pair[order] = np.arange(len(pair_keys)) - starts[pair_query[order]]
    return pair_keys, slot_of_pair, entry_pair.ravel()


def _fill_labels(
    theta: np.ndarray,
    labels: Mapping[tuple[str, str], Sequence[float]],
    query_index: Mapping[str, int],
    doc_code: Mapping[str, int],
    pair_keys: np.ndarray,
    pair_slot: np.ndarray,
    n_docs: int,
) -> None:
    """Write the listed label distributions into theta for the pairs that are in the pool."""
    n_grades = theta.shape[2]
    rows, keys = [], []
    for (qid, docno), probabilities in labels.items():
        if len(probabilities) != n_grades:
            raise ValueError(
                f"label row for query {qid!r}, document {docno!r} has {len(probabilities)} "
                f"probabilities, expected {n_grades} (grades 0..{n_grades - 1})"
            )
        query = query_index.get(qid)
        code = doc_code.get(docno)
        if query is None or code is None:
            continue
        rows.append(probabilities)
        keys.append(query * n_docs + code)
    if not rows or not len(pair_keys):
        return
    key = np.asarray(keys, dtype=np.int64)
    position = np.searchsorted(pair_keys, key).clip(max=len(pair_keys) - 1)
    in_pool = pair_keys[position] == key
    theta[key[in_pool] // n_docs, pair_slot[position[in_pool]]] = np.asarray(rows, dtype=float)[in_pool]


def _document_costs(doc_names: list[str], item_cost: Mapping[str, float] | None) -> np.ndarray:
    if item_cost is None:
        return np.ones(len(doc_names))
    missing = [doc for doc in doc_names if doc not in item_cost]
    if missing:
        raise ValueError(f"no cost given for {len(missing)} document(s) of the pool, e.g. {missing[0]!r}")
    return np.array([item_cost[doc] for doc in doc_names], dtype=float)


def _query_weights(query_weight: Mapping[str, float] | np.ndarray | None, query_ids: list[str]) -> np.ndarray:
    if query_weight is None:
        return np.full(len(query_ids), 1.0 / len(query_ids))
    if isinstance(query_weight, Mapping):
        missing = [qid for qid in query_ids if qid not in query_weight]
        if missing:
            raise ValueError(f"no query weight given for {len(missing)} query(ies), e.g. {missing[0]!r}")
        return np.array([query_weight[qid] for qid in query_ids], dtype=float)
    weights = np.asarray(query_weight, dtype=float)
    if weights.shape != (len(query_ids),):
        raise ValueError(f"query_weight must have shape ({len(query_ids)},), got {weights.shape}")
    return weights


def _item_ids(
    pair_query: np.ndarray, pair_slot: np.ndarray, pair_doc: np.ndarray, doc_names: list[str], m: int
) -> tuple[tuple[str, ...], ...]:
    """Docnos per query in slot order."""
    order = np.lexsort((pair_slot, pair_query))
    names = [doc_names[code] for code in pair_doc[order].tolist()]
    bounds = np.cumsum(np.bincount(pair_query, minlength=m)).tolist()
    starts = [0, *bounds[:-1]]
    return tuple(tuple(names[start:end]) for start, end in zip(starts, bounds, strict=True))
