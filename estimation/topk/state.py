"""The HeapSort top-k procedure as a resumable, JSON-serialisable state machine.

Niu et al. (SIGIR 2012), section 3.1.2 and Algorithm 1; the procedure is spelled out in
``docs/judging.md``, "HeapSort top-k":

1. build a min-heap of the first k documents with pairwise judgments (root = the least
   relevant; Floyd's bottom-up construction, O(k) judgments);
2. compare every remaining document with the root; a document judged more relevant
   replaces the root, which is then sifted down; a tie is "not more relevant" (the
   document goes to the rest and the tie is recorded);
3. heap-sort extraction orders the k survivors, best first; the other n - k documents
   form the unordered rest. With n < k the heap holds all n documents.

The machine waits for a human between comparisons. Its state is the configuration and
the log of answers (`TopKState`); `next_pair` and `result` replay the log, so a state
persisted after every answer (``state.to_json()`` in a JSONField) resumes exactly after a
closed browser or a restarted server, and `undo` is dropping the last entry. Replays are
cached in memory, so a sequence of `answer` calls costs one pass, not one pass per answer.

Improvements that ask fewer questions and, for a consistent assessor, return the same
top-k; each can be switched off to run the paper's plain algorithm:

- ``reuse_answers``: never ask a pair twice (the plain algorithm may ask a pair again,
  e.g. in the extraction phase);
- ``use_transitivity``: never ask a pair whose order follows from this assessor's earlier
  answers on the topic (a preference graph, ties as equivalence classes, kept transitively
  closed with bit sets);
- ``prior_order``: insert the documents in the order of an existing ranking (the imported
  runs fused, best first) instead of at random, so the heap fills with strong candidates;
- ``allow_bad_shortcut``: `mark_bad` ("clearly irrelevant", one click) puts a document
  below every other document: it is never asked about again and never enters the top-k.

A bad mark is applied to the comparisons still to come; answers given earlier stand. A
document marked bad after it was preferred to others may sit in the heap past its turn: it
is dropped from the order, and a refill round (a top-(k - found) heap over the rest, which
lost to the heap) fills its place. The order always holds min(k, documents not marked bad)
documents, and the procedure terminates whatever the answers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from estimation.learned_dcg.preferences import Outcome
from estimation.topk.procedure import (
    RELATION_OF_OUTCOME,
    AnswerEvent,
    BadMarkEvent,
    Event,
    HeapProcedure,
)

STATE_VERSION = 1


@dataclass(frozen=True)
class Pair:
    """The two documents of a pending comparison; answers name `left` and `right`."""

    left: str
    right: str


@dataclass(frozen=True)
class TopKResult:
    """Where a top-k procedure stands.

    Attributes
    ----------
    order : tuple of str
        The top-k documents, best first, once `done` (empty before). Shorter than k when
        n < k or when fewer than k documents were left unmarked by `mark_bad`.
    rest : tuple of str
        Documents known to be outside the top-k (all others once `done`), in the order of
        the input documents: the rest is unordered.
    judgments : int
        Pairwise answers given by the assessor.
    bad_marks : int
        Documents marked clearly irrelevant (one click each).
    inferred : int
        Comparisons the procedure needed but did not ask: answered before, implied by
        transitivity, or involving a document marked bad.
    done : bool
    """

    order: tuple[str, ...]
    rest: tuple[str, ...]
    judgments: int
    bad_marks: int
    inferred: int
    done: bool


@dataclass(eq=False)
class _ReplayCache:
    """Holds the replay of the state it was made for; never serialised or compared."""

    replay: HeapProcedure | None = None


@dataclass(frozen=True)
class TopKState:
    """The configuration of one (topic, assessor) heap and the log of answers so far.

    Build with `start_topk`; advance with `answer`, `mark_bad` and `undo`; persist with
    `to_json` / `from_json`. Two states are equal when configuration and log are equal.
    """

    documents: tuple[str, ...]
    k: int
    insertion_order: tuple[str, ...]
    reuse_answers: bool = True
    use_transitivity: bool = True
    allow_bad_shortcut: bool = True
    events: tuple[Event, ...] = ()
    _cache: _ReplayCache = field(default_factory=_ReplayCache, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """A dict of JSON types (``json.dumps``-able): store it after every answer."""
        return {
            "version": STATE_VERSION,
            "documents": list(self.documents),
            "k": self.k,
            "insertion_order": list(self.insertion_order),
            "reuse_answers": self.reuse_answers,
            "use_transitivity": self.use_transitivity,
            "allow_bad_shortcut": self.allow_bad_shortcut,
            "events": [_event_to_json(event) for event in self.events],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> TopKState:
        """Rebuild a state from `to_json` output (a dict or its JSON text) and replay it.

        Raises
        ------
        ValueError
            A missing or mistyped field, an unknown version, documents that repeat or an
            insertion order that is not a permutation of them, or a log whose answers do
            not answer the pairs the procedure asked (the event is named).
        """
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as error:
                raise ValueError(f"top-k state: not valid JSON ({error})") from None
        if not isinstance(data, Mapping):
            raise ValueError("top-k state: expected a JSON object")
        if data.get("version") != STATE_VERSION:
            raise ValueError(
                f"top-k state: unknown version {data.get('version')!r}; expected {STATE_VERSION}"
            )
        try:
            documents = _string_tuple(data["documents"], "documents")
            insertion_order = _string_tuple(data["insertion_order"], "insertion_order")
            k = data["k"]
            flags = {name: data[name] for name in ("reuse_answers", "use_transitivity", "allow_bad_shortcut")}
            raw_events = data["events"]
        except KeyError as missing:
            raise ValueError(f"top-k state: missing field {missing}") from None
        if not all(isinstance(value, bool) for value in flags.values()):
            raise ValueError(
                "top-k state: reuse_answers, use_transitivity and allow_bad_shortcut must be booleans"
            )
        if not isinstance(raw_events, list):
            raise ValueError("top-k state: events must be a list")
        _check_documents(documents, k)
        if sorted(insertion_order) != sorted(documents):
            raise ValueError("top-k state: insertion_order must be a permutation of documents")
        events = tuple(_event_from_json(raw, number) for number, raw in enumerate(raw_events, start=1))
        state = cls(documents, k, insertion_order, events=events, **flags)
        _replay_of(state)  # validates the log against the procedure
        return state


def start_topk(
    documents: Sequence[str],
    k: int,
    *,
    prior_order: Sequence[str] | None = None,
    reuse_answers: bool = True,
    use_transitivity: bool = True,
    allow_bad_shortcut: bool = True,
    seed: int | None = None,
) -> TopKState:
    """A new top-k procedure over a topic's documents (Niu et al. 2012, Algorithm 1).

    Parameters
    ----------
    documents : sequence of str
        The topic's docnos, distinct.
    k : int
        How many documents to select and order (>= 1); with fewer documents, all are ordered.
    prior_order : sequence of str, optional
        An existing ranking, best first (e.g. `fused_prior_order` of the imported runs):
        documents are inserted in this order. Documents it omits follow in random order.
        Without it the insertion order is random (the paper's plain algorithm).
    reuse_answers, use_transitivity, allow_bad_shortcut : bool
        The improvements of the module docstring; all off plus no prior is the paper.
    seed : int, optional
        Seeds the random insertion order (stored in the state, so the seed itself is not).

    Raises
    ------
    ValueError
        No documents, a docno that is not a non-empty string or appears twice, k < 1, or a
        prior that repeats a document or names one not in `documents`.
    """
    documents = tuple(documents)
    _check_documents(documents, k)
    rng = np.random.default_rng(seed)
    if prior_order is None:
        insertion_order = tuple(documents[i] for i in rng.permutation(len(documents)))
    else:
        prior = tuple(prior_order)
        known = set(documents)
        unknown = [docno for docno in prior if docno not in known]
        if unknown:
            raise ValueError(f"prior_order names {unknown[0]!r}, which is not one of the documents")
        if len(set(prior)) != len(prior):
            raise ValueError("prior_order lists a document twice")
        ranked = set(prior)
        unranked = [docno for docno in documents if docno not in ranked]
        insertion_order = prior + tuple(unranked[i] for i in rng.permutation(len(unranked)))
    return TopKState(
        documents=documents,
        k=int(k),
        insertion_order=insertion_order,
        reuse_answers=reuse_answers,
        use_transitivity=use_transitivity,
        allow_bad_shortcut=allow_bad_shortcut,
    )


def next_pair(state: TopKState) -> Pair | None:
    """The pair to show the assessor next, or None when the top-k is complete."""
    pending = _replay_of(state).pending
    return None if pending is None else Pair(*pending)


def answer(state: TopKState, pair: Pair, outcome: Outcome) -> TopKState:
    """The state after the assessor's answer to the pending pair.

    Parameters
    ----------
    pair : Pair
        The pair answered: the pending pair, in either orientation (a page that swapped the
        sides for display passes the pair as displayed).
    outcome : {"left", "tie", "right"}
        Relative to `pair`: ``"left"`` means ``pair.left`` is more relevant.

    Raises
    ------
    ValueError
        An unknown outcome, a completed procedure, or a pair that is not the pending one.
    """
    if outcome not in RELATION_OF_OUTCOME:
        raise ValueError(f"outcome must be 'left', 'tie' or 'right', got {outcome!r}")
    return _extended(state, AnswerEvent(pair.left, pair.right, outcome))


def mark_bad(state: TopKState, document: str) -> TopKState:
    """The state after the assessor marks `document` clearly irrelevant (one click).

    The document goes to the rest: every comparison with it still to come is decided
    without asking (below every other document, tied with other bad ones).

    Raises
    ------
    ValueError
        The shortcut is off for this state, the procedure is complete, the document is
        unknown or already marked.
    """
    return _extended(state, BadMarkEvent(document))


def undo(state: TopKState) -> TopKState:
    """The state before the last answer or bad mark.

    Raises
    ------
    ValueError
        Nothing to undo.
    """
    if not state.events:
        raise ValueError("nothing to undo: no answer has been given yet")
    return replace(state, events=state.events[:-1], _cache=_ReplayCache())


def result(state: TopKState) -> TopKResult:
    """The top-k order (once done), the rest, and the judgment counts."""
    replay = _replay_of(state)
    done = replay.pending is None
    bad = replay.bad
    if done:
        order = tuple(replay.order)
        outside = set(state.documents) - set(order)
    else:
        order = ()
        outside = set(replay.rejected) | bad
    return TopKResult(
        order=order,
        rest=tuple(docno for docno in state.documents if docno in outside),
        judgments=replay.judgments,
        bad_marks=len(bad),
        inferred=replay.inferred,
        done=done,
    )


def fused_prior_order(rankings: Sequence[Sequence[str]], *, constant: float = 60.0) -> list[str]:
    """One insertion order from several runs' rankings: reciprocal rank fusion.

    ``score(d) = sum_runs 1 / (constant + rank_run(d))`` (Cormack, Clarke & Buettcher,
    SIGIR 2009), best first; equal scores keep the order of first appearance. Pass the
    result, restricted to the topic's documents, as `start_topk`'s ``prior_order``.
    """
    if constant < 0:
        raise ValueError(f"constant must be >= 0, got {constant}")
    score: dict[str, float] = {}
    for ranking in rankings:
        if len(set(ranking)) != len(ranking):
            raise ValueError("a ranking lists a document twice")
        for rank, docno in enumerate(ranking, start=1):
            score[docno] = score.get(docno, 0.0) + 1.0 / (constant + rank)
    # sorted() is stable and dicts keep insertion order: ties keep first appearance.
    return sorted(score, key=lambda docno: -score[docno])


def _replay_of(state: TopKState) -> HeapProcedure:
    """The replay of exactly `state.events`, reusing the cached one when it still matches."""
    cached = state._cache.replay
    if cached is not None and cached.events is state.events:
        return cached
    replay = HeapProcedure(state)
    for number, event in enumerate(state.events, start=1):
        replay.apply(event, number)
    replay.events = state.events
    state._cache.replay = replay
    return replay


def _extended(state: TopKState, event: Event) -> TopKState:
    replay = _replay_of(state)
    replay.apply(event, len(state.events) + 1)  # validates before it changes anything
    events = state.events + (event,)
    replay.events = events  # the old state no longer matches and would replay afresh
    return replace(state, events=events, _cache=_ReplayCache(replay))


# ---------------------------------------------------------------------------------------------
# Validation and JSON


def _check_documents(documents: tuple[str, ...], k: object) -> None:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if not documents:
        raise ValueError("documents: a top-k needs at least one document")
    for docno in documents:
        if not isinstance(docno, str) or not docno:
            raise ValueError(f"documents: docnos must be non-empty strings, got {docno!r}")
    seen: set[str] = set()
    for docno in documents:
        if docno in seen:
            raise ValueError(f"documents: {docno!r} appears twice")
        seen.add(docno)


def _string_tuple(value: object, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"top-k state: {name} must be a list of strings")
    return tuple(value)


def _event_to_json(event: Event) -> dict[str, str]:
    if isinstance(event, BadMarkEvent):
        return {"kind": "bad", "document": event.document}
    return {"kind": "answer", "left": event.left, "right": event.right, "outcome": event.outcome}


def _event_from_json(raw: object, number: int) -> Event:
    if isinstance(raw, Mapping) and raw.get("kind") == "bad" and isinstance(raw.get("document"), str):
        return BadMarkEvent(raw["document"])
    if (
        isinstance(raw, Mapping)
        and raw.get("kind") == "answer"
        and isinstance(raw.get("left"), str)
        and isinstance(raw.get("right"), str)
        and raw.get("outcome") in RELATION_OF_OUTCOME
    ):
        return AnswerEvent(raw["left"], raw["right"], raw["outcome"])
    raise ValueError(f"top-k state: event {number} is malformed: {raw!r}")


__all__ = [
    "AnswerEvent",
    "BadMarkEvent",
    "Pair",
    "TopKResult",
    "TopKState",
    "answer",
    "fused_prior_order",
    "mark_bad",
    "next_pair",
    "result",
    "start_topk",
    "undo",
]
