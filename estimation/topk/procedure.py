"""The engine of the HeapSort top-k state machine: the procedure, replayed from a log.

`estimation.topk.state` is the public interface; this module holds what it replays. The
procedure (Niu et al., SIGIR 2012, Algorithm 1) is a generator that yields comparison
requests ``(x, y)`` and receives the relation of x to y (`MORE`, `TIE` or `LESS`);
`HeapProcedure` drives it, answering from the bad marks, earlier answers and the
transitive closure of this assessor's preferences where it can, and stopping at the first
comparison only the assessor can answer (`HeapProcedure.pending`).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from estimation.learned_dcg.preferences import Outcome

# Relation of x to y in a request (x, y): x more relevant, tied, or less relevant.
MORE, TIE, LESS = 1, 0, -1
RELATION_OF_OUTCOME: dict[str, int] = {"left": MORE, "tie": TIE, "right": LESS}


@dataclass(frozen=True)
class AnswerEvent:
    """The assessor's answer to a pair: `outcome` is relative to (left, right) as answered."""

    left: str
    right: str
    outcome: Outcome


@dataclass(frozen=True)
class BadMarkEvent:
    """The assessor marked `document` clearly irrelevant."""

    document: str


Event = AnswerEvent | BadMarkEvent


class TopKConfig(Protocol):
    """What the procedure reads from a `estimation.topk.state.TopKState`."""

    @property
    def documents(self) -> tuple[str, ...]: ...
    @property
    def k(self) -> int: ...
    @property
    def insertion_order(self) -> tuple[str, ...]: ...
    @property
    def reuse_answers(self) -> bool: ...
    @property
    def use_transitivity(self) -> bool: ...
    @property
    def allow_bad_shortcut(self) -> bool: ...


class PreferenceGraph:
    """One assessor's answers on one topic, transitively closed; ties are equivalences.

    Bit i of ``below[j]`` says document i is less relevant than j, and so on. Answers are
    only added for pairs the graph could not decide, so they never contradict it.
    """

    def __init__(self, n: int) -> None:
        self.tied = [1 << i for i in range(n)]
        self.below = [0] * n
        self.above = [0] * n

    def relation(self, x: int, y: int) -> int | None:
        bit = 1 << y
        if self.tied[x] & bit:
            return TIE
        if self.below[x] & bit:
            return MORE
        if self.above[x] & bit:
            return LESS
        return None

    def add(self, x: int, y: int, relation: int) -> None:
        if relation == LESS:
            x, y, relation = y, x, MORE
        if relation == MORE:
            upper = self.above[x] | self.tied[x]
            lower = self.below[y] | self.tied[y]
            for member in _bits(upper):
                self.below[member] |= lower
            for member in _bits(lower):
                self.above[member] |= upper
            return
        merged = self.tied[x] | self.tied[y]
        upper = self.above[x] | self.above[y]
        lower = self.below[x] | self.below[y]
        for member in _bits(merged):
            self.tied[member], self.above[member], self.below[member] = merged, upper, lower
        for member in _bits(upper):
            self.below[member] |= merged | lower
        for member in _bits(lower):
            self.above[member] |= merged | upper


def _bits(mask: int) -> Iterator[int]:
    while mask:
        lowest = mask & -mask
        yield lowest.bit_length() - 1
        mask ^= lowest


class HeapProcedure:
    """The procedure driven by a state's log, stopped at the first unanswered comparison."""

    def __init__(self, state: TopKConfig) -> None:
        self.state = state
        self.events: tuple[Event, ...] = ()
        self.index = {docno: i for i, docno in enumerate(state.documents)}
        self.graph = PreferenceGraph(len(state.documents)) if state.use_transitivity else None
        self.answered: dict[tuple[str, str], int] = {}
        self.bad: set[str] = set()
        self.judgments = 0
        self.inferred = 0
        self.order: list[str] = []  # the top-k found so far, best first
        self.heap: list[str] = []
        self.rejected: list[str] = []
        self.procedure = self._procedure()
        self.pending: tuple[str, str] | None = None
        self._advance(next(self.procedure, None))

    # The procedure -------------------------------------------------------------------------

    def _procedure(self) -> Generator[tuple[str, str], int, None]:
        """Algorithm 1, then refill rounds if bad marks emptied places in the top-k.

        A document marked bad after it was preferred to others can stay in the heap past
        its turn; it is dropped from the order, and the missing places are filled by a
        top-(k - found) round over the rest, which lost to the heap and so lies below it.
        """
        pool = list(self.state.insertion_order)
        while True:
            wanted = self.state.k - len(self.order)
            # Lay the first documents out worst-expected first: a correct prior is a min-heap.
            self.heap = list(reversed(pool[:wanted]))
            self.rejected = []
            yield from self._heap_topk(pool[wanted:])
            self.order.extend(docno for docno in self.heap if docno not in self.bad)
            out = set(self.rejected)
            pool = [docno for docno in pool if docno in out and docno not in self.bad]
            if len(self.order) >= self.state.k or not pool:
                return

    def _heap_topk(self, candidates: Sequence[str]) -> Generator[tuple[str, str], int, None]:
        heap = self.heap
        size = len(heap)
        for node in reversed(range(size // 2)):
            yield from self._sift_down(node, size)
        for candidate in candidates:
            if (yield (candidate, heap[0])) == MORE:
                self.rejected.append(heap[0])
                heap[0] = candidate
                yield from self._sift_down(0, size)
            else:
                self.rejected.append(candidate)
        # Heap-sort extraction: the root (least relevant) goes behind the shrinking heap,
        # so the array ends in descending order of relevance.
        for end in range(size - 1, 0, -1):
            heap[0], heap[end] = heap[end], heap[0]
            yield from self._sift_down(0, end)

    def _sift_down(self, node: int, size: int) -> Generator[tuple[str, str], int, None]:
        heap = self.heap
        while (child := 2 * node + 1) < size:
            right = child + 1
            if right < size and (yield (heap[right], heap[child])) == LESS:
                child = right
            if (yield (heap[child], heap[node])) != LESS:
                return  # a tie with the parent is no reason to move
            heap[node], heap[child] = heap[child], heap[node]
            node = child

    # Answers ---------------------------------------------------------------------------------

    def _known(self, x: str, y: str) -> int | None:
        """The relation of x to y if it needs no question, else None."""
        if x in self.bad or y in self.bad:
            return TIE if (x in self.bad and y in self.bad) else (LESS if x in self.bad else MORE)
        if self.state.reuse_answers:
            known = self.answered.get((x, y))
            if known is not None:
                return known
        if self.graph is not None:
            return self.graph.relation(self.index[x], self.index[y])
        return None

    def _advance(self, request: tuple[str, str] | None) -> None:
        """Send known relations until a comparison needs the assessor or the procedure ends."""
        while request is not None:
            relation = self._known(*request)
            if relation is None:
                self.pending = request
                return
            self.inferred += 1
            request = self._send(relation)
        self.pending = None

    def _send(self, relation: int) -> tuple[str, str] | None:
        try:
            return self.procedure.send(relation)
        except StopIteration:
            return None

    def apply(self, event: Event, number: int) -> None:
        """Feed one logged event; raises ValueError (naming event `number`) before any change."""
        if self.pending is None:
            raise ValueError(f"event {number}: the top-k is already complete")
        if isinstance(event, BadMarkEvent):
            self._check_bad_mark(event.document, number)
            self.bad.add(event.document)
            self._advance(self.pending)
            return
        x, y = self.pending
        if {event.left, event.right} != {x, y} or event.left == event.right:
            raise ValueError(
                f"event {number}: answers the pair ({event.left!r}, {event.right!r}) but the pending "
                f"pair is ({x!r}, {y!r})"
            )
        relation = RELATION_OF_OUTCOME[event.outcome]
        if event.left != x:
            relation = -relation
        self.judgments += 1
        self.answered[(x, y)] = relation
        self.answered[(y, x)] = -relation
        if self.graph is not None and self.graph.relation(self.index[x], self.index[y]) is None:
            self.graph.add(self.index[x], self.index[y], relation)
        self._advance(self._send(relation))

    def _check_bad_mark(self, document: str, number: int) -> None:
        if not self.state.allow_bad_shortcut:
            raise ValueError(f"event {number}: the clearly-irrelevant shortcut is off for this top-k")
        if document not in self.index:
            raise ValueError(f"event {number}: {document!r} is not one of the topic's documents")
        if document in self.bad:
            raise ValueError(f"event {number}: {document!r} is already marked clearly irrelevant")


__all__ = [
    "LESS",
    "MORE",
    "RELATION_OF_OUTCOME",
    "TIE",
    "AnswerEvent",
    "BadMarkEvent",
    "Event",
    "HeapProcedure",
    "PreferenceGraph",
    "TopKConfig",
]
