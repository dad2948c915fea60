"""The HeapSort top-k state machine: correctness under a noiseless oracle, resumption, refusals.

"Exactly the true top-k" with ties: the hidden relevance is a weak order (integer values,
equal values are ties). A result is correct when its order lists min(n, k) documents whose
values, read best first, equal the min(n, k) largest values in descending order (so every
document left in the rest is no more relevant than the last one in the order). Without
ties this is the one true top-k order, document by document.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from estimation.topk.procedure import LESS, MORE, TIE, PreferenceGraph
from estimation.topk.state import (
    Pair,
    TopKState,
    answer,
    fused_prior_order,
    mark_bad,
    next_pair,
    result,
    start_topk,
    undo,
)

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def oracle_outcome(values: dict[str, int], pair: Pair) -> str:
    left, right = values[pair.left], values[pair.right]
    return "left" if left > right else "right" if left < right else "tie"


def run_to_end(state: TopKState, values: dict[str, int]) -> tuple[TopKState, list[Pair]]:
    asked: list[Pair] = []
    while (pair := next_pair(state)) is not None:
        asked.append(pair)
        state = answer(state, pair, oracle_outcome(values, pair))  # type: ignore[arg-type]
    return state, asked


def is_correct_topk(order: tuple[str, ...], values: dict[str, int], k: int) -> bool:
    expected = sorted(values.values(), reverse=True)[: min(k, len(values))]
    return [values[docno] for docno in order] == expected


@st.composite
def topics(draw: st.DrawFn, max_n: int = 24) -> tuple[dict[str, int], int, int, list[str] | None]:
    """(hidden values, k, seed, prior or None); few distinct values means many ties."""
    n = draw(st.integers(1, max_n))
    levels = draw(st.integers(1, n))
    values = {f"doc{i:02d}": draw(st.integers(0, levels - 1)) for i in range(n)}
    k = draw(st.integers(1, n + 3))
    seed = draw(st.integers(0, 2**16))
    prior = None
    if draw(st.booleans()):
        prior = draw(st.permutations(sorted(values)))[: draw(st.integers(0, n))]
    return values, k, seed, prior


flags = st.fixed_dictionaries(
    {"reuse_answers": st.booleans(), "use_transitivity": st.booleans(), "allow_bad_shortcut": st.booleans()}
)


@FAST
@given(topic=topics(), options=flags)
def test_it_returns_the_true_topk_under_a_noiseless_oracle(topic, options) -> None:
    values, k, seed, prior = topic
    state, asked = run_to_end(start_topk(list(values), k, prior_order=prior, seed=seed, **options), values)
    outcome = result(state)
    assert outcome.done
    assert is_correct_topk(outcome.order, values, k)
    assert set(outcome.order) | set(outcome.rest) == set(values)
    assert not set(outcome.order) & set(outcome.rest)
    assert outcome.judgments == len(asked)


@FAST
@given(topic=topics(max_n=30))
def test_it_returns_the_exact_order_when_there_are_no_ties(topic) -> None:
    values, k, seed, prior = topic
    distinct = {docno: rank for rank, docno in enumerate(sorted(values, key=lambda d: (values[d], d)))}
    state, _ = run_to_end(start_topk(list(distinct), k, prior_order=prior, seed=seed), distinct)
    truth = tuple(sorted(distinct, key=lambda docno: -distinct[docno])[:k])
    assert result(state).order == truth


@FAST
@given(topic=topics(max_n=30), reuse=st.booleans())
def test_it_finds_the_same_topk_with_and_without_transitivity(topic, reuse) -> None:
    values, k, seed, prior = topic
    with_graph, asked_with = run_to_end(
        start_topk(list(values), k, prior_order=prior, seed=seed, reuse_answers=reuse), values
    )
    without_graph, asked_without = run_to_end(
        start_topk(
            list(values), k, prior_order=prior, seed=seed, reuse_answers=reuse, use_transitivity=False
        ),
        values,
    )
    assert result(with_graph).order == result(without_graph).order
    assert result(with_graph).rest == result(without_graph).rest
    assert len(asked_with) <= len(asked_without)


@FAST
@given(topic=topics(max_n=30), transitivity=st.booleans(), coin=st.randoms(use_true_random=False))
def test_it_never_asks_a_pair_twice_even_for_an_inconsistent_assessor(topic, transitivity, coin) -> None:
    # Random answers and random bad marks: the procedure still ends, never repeats a
    # question, and fills the order with min(k, unmarked documents) documents.
    values, k, seed, prior = topic
    state = start_topk(list(values), k, prior_order=prior, seed=seed, use_transitivity=transitivity)
    asked: list[frozenset[str]] = []
    marked: set[str] = set()
    while (pair := next_pair(state)) is not None:
        if coin.random() < 0.1:
            marked.add(pair.left)
            state = mark_bad(state, pair.left)
            continue
        asked.append(frozenset((pair.left, pair.right)))
        state = answer(state, pair, coin.choice(["left", "tie", "right"]))
    assert len(asked) == len(set(asked))
    outcome = result(state)
    assert len(outcome.order) == min(k, len(values) - len(marked))
    assert not set(outcome.order) & marked
    assert sorted(outcome.order + outcome.rest) == sorted(values)


def test_it_asks_a_pair_again_in_the_plain_algorithm() -> None:
    # 50 distinct values, random insertion: the extraction phase re-asks earlier pairs.
    values = {f"d{i}": (37 * i) % 50 for i in range(50)}
    plain = start_topk(list(values), 10, seed=3, reuse_answers=False, use_transitivity=False)
    _, asked = run_to_end(plain, values)
    unordered = [frozenset((pair.left, pair.right)) for pair in asked]
    assert len(unordered) > len(set(unordered))


def test_it_follows_algorithm_1_on_a_hand_worked_example() -> None:
    # Values a=3 > b=2 > c=1, inserted a, b, c, k = 2. The heap [b, a] (worst-expected first)
    # is checked with one comparison (a, b); c is compared with the root b and rejected; the
    # extraction of a two-element heap needs no comparison.
    values = {"a": 3, "b": 2, "c": 1}
    state = start_topk(
        ["a", "b", "c"], 2, prior_order=["a", "b", "c"], reuse_answers=False, use_transitivity=False
    )
    state, asked = run_to_end(state, values)
    assert asked == [Pair("a", "b"), Pair("c", "b")]
    assert result(state).order == ("a", "b")
    assert result(state).rest == ("c",)


def test_it_orders_all_documents_when_there_are_fewer_than_k() -> None:
    values = {"x": 1, "y": 5, "z": 3}
    state, _ = run_to_end(start_topk(list(values), 10, seed=1), values)
    assert result(state).order == ("y", "z", "x")
    assert result(state).rest == ()


def test_it_needs_no_judgment_for_a_single_document() -> None:
    state = start_topk(["only"], 3)
    assert next_pair(state) is None
    assert result(state) == result(state) and result(state).order == ("only",)
    assert result(state).judgments == 0


@pytest.mark.parametrize(
    ("documents", "k", "message"),
    [
        (["a", "b", "a"], 2, "appears twice"),
        ([], 2, "at least one document"),
        (["a", "b"], 0, "k must be"),
        (["a", ""], 1, "non-empty strings"),
    ],
)
def test_it_rejects_bad_input(documents, k, message) -> None:
    with pytest.raises(ValueError, match=message):
        start_topk(documents, k)


def test_it_rejects_a_prior_that_names_unknown_or_repeated_documents() -> None:
    with pytest.raises(ValueError, match="not one of the documents"):
        start_topk(["a", "b"], 1, prior_order=["a", "zz"])
    with pytest.raises(ValueError, match="twice"):
        start_topk(["a", "b"], 1, prior_order=["a", "a"])


def test_it_inserts_in_prior_order_and_the_unranked_documents_after() -> None:
    state = start_topk(["a", "b", "c", "d", "e"], 2, prior_order=["d", "b"], seed=0)
    assert state.insertion_order[:2] == ("d", "b")
    assert sorted(state.insertion_order[2:]) == ["a", "c", "e"]


def test_it_refuses_an_answer_to_a_pair_that_is_not_pending() -> None:
    values = {f"d{i}": i for i in range(6)}
    state = start_topk(list(values), 3, seed=5)
    pending = next_pair(state)
    assert pending is not None
    stranger = next(docno for docno in values if docno not in (pending.left, pending.right))
    with pytest.raises(ValueError, match="pending pair"):
        answer(state, Pair(pending.left, stranger), "left")
    with pytest.raises(ValueError, match="outcome"):
        answer(state, pending, "both")  # type: ignore[arg-type]
    finished, _ = run_to_end(state, values)
    with pytest.raises(ValueError, match="already complete"):
        answer(finished, pending, "left")


def test_it_reads_an_answer_to_the_swapped_pair_relative_to_that_pair() -> None:
    state = start_topk(["a", "b", "c", "d"], 2, seed=2)
    pending = next_pair(state)
    assert pending is not None
    as_asked = answer(state, pending, "left")
    as_displayed = answer(state, Pair(pending.right, pending.left), "right")
    assert next_pair(as_asked) == next_pair(as_displayed)
    assert result(as_asked) == result(as_displayed)


@settings(max_examples=80, deadline=None)
@given(topic=topics(max_n=16), options=flags)
def test_it_resumes_identically_from_every_persisted_state(topic, options) -> None:
    values, k, seed, prior = topic
    start = start_topk(list(values), k, prior_order=prior, seed=seed, **options)
    uninterrupted, asked = run_to_end(start, values)
    state, resumed_pairs = start, []
    while True:
        state = TopKState.from_json(json.dumps(state.to_json()))  # a restart after every answer
        pair = next_pair(state)
        if pair is None:
            break
        resumed_pairs.append(pair)
        state = answer(state, pair, oracle_outcome(values, pair))  # type: ignore[arg-type]
    assert resumed_pairs == asked
    assert result(state) == result(uninterrupted)
    assert state == uninterrupted


def test_it_round_trips_through_json() -> None:
    values = {f"d{i}": i % 3 for i in range(9)}
    state = start_topk(list(values), 4, seed=11)
    for _ in range(5):
        pair = next_pair(state)
        assert pair is not None
        state = answer(state, pair, oracle_outcome(values, pair))  # type: ignore[arg-type]
    pending = next_pair(state)
    assert pending is not None
    state = mark_bad(state, next(d for d in values if d not in (pending.left, pending.right)))
    restored = TopKState.from_json(state.to_json())
    assert restored == state
    assert next_pair(restored) == next_pair(state)


def test_it_rejects_a_tampered_log() -> None:
    values = {f"d{i}": i for i in range(6)}
    state = start_topk(list(values), 3, seed=4)
    pair = next_pair(state)
    state = answer(state, pair, "left")  # type: ignore[arg-type]
    data = state.to_json()
    data["events"][0]["right"] = next(d for d in values if d not in (pair.left, pair.right))
    with pytest.raises(ValueError, match="event 1"):
        TopKState.from_json(data)
    with pytest.raises(ValueError, match="version"):
        TopKState.from_json({**state.to_json(), "version": 99})
    with pytest.raises(ValueError, match="permutation"):
        TopKState.from_json({**state.to_json(), "insertion_order": ["d0"]})
    with pytest.raises(ValueError, match="malformed"):
        TopKState.from_json({**state.to_json(), "events": [{"kind": "answer", "left": "d0"}]})


def test_it_undoes_the_last_answer() -> None:
    values = {f"d{i}": i for i in range(8)}
    state = start_topk(list(values), 3, seed=9)
    first = next_pair(state)
    after = answer(state, first, "right")  # type: ignore[arg-type]
    assert undo(after) == state
    assert next_pair(undo(after)) == first
    with pytest.raises(ValueError, match="nothing to undo"):
        undo(state)
    # The undone branch and the original branch stay independent.
    assert next_pair(after) == next_pair(answer(state, first, "right"))  # type: ignore[arg-type]


@FAST
@given(topic=topics(max_n=24), data=st.data())
def test_it_takes_a_document_marked_bad_out_of_consideration(topic, data) -> None:
    values, k, seed, prior = topic
    assume(len(values) >= 2)
    # The bad documents are the least relevant ones (a consistent assessor): marked up front
    # or the first time they are shown.
    ranked = sorted(values, key=lambda docno: values[docno])
    n_bad = data.draw(st.integers(0, len(values)))
    bad = set(ranked[:n_bad])
    upfront = data.draw(st.sets(st.sampled_from(sorted(bad)))) if bad else set()
    state = start_topk(list(values), k, prior_order=prior, seed=seed)
    for docno in sorted(upfront):
        if next_pair(state) is None:  # every comparison already decided by earlier marks
            break
        state = mark_bad(state, docno)
    marked = {event.document for event in state.events}
    while (pair := next_pair(state)) is not None:
        assert not {pair.left, pair.right} & marked
        shown_bad = [docno for docno in (pair.left, pair.right) if docno in bad]
        if shown_bad:
            state = mark_bad(state, shown_bad[0])
            marked.add(shown_bad[0])
            continue
        state = answer(state, pair, oracle_outcome(values, pair))  # type: ignore[arg-type]
    outcome = result(state)
    # A bad document never shown (it only met documents already marked) is never marked;
    # the order is the true top-k of the documents not marked.
    assert not set(outcome.order) & marked
    assert set(outcome.rest) >= marked
    unmarked = {docno: value for docno, value in values.items() if docno not in marked}
    assert is_correct_topk(outcome.order, unmarked, k) if unmarked else outcome.order == ()
    assert outcome.bad_marks == len(marked)


def test_it_leaves_a_document_marked_bad_late_out_of_the_order() -> None:
    # Mark bad the document just preferred to the others (an assessor changing their mind).
    values = {f"d{i}": i for i in range(7)}
    state = start_topk(list(values), 3, prior_order=sorted(values, reverse=True), seed=0)
    pair = next_pair(state)
    winner = pair.left if values[pair.left] > values[pair.right] else pair.right
    state = answer(state, pair, oracle_outcome(values, pair))  # type: ignore[arg-type]
    state = mark_bad(state, winner)
    state, _ = run_to_end(state, values)
    # d6 was preferred to d5, then marked bad: the order is the top 3 of the others.
    assert winner == "d6"
    assert result(state).order == ("d5", "d4", "d3")
    assert "d6" in result(state).rest


def test_it_refuses_bad_marks_it_cannot_take() -> None:
    state = start_topk(["a", "b", "c"], 2, seed=0)
    with pytest.raises(ValueError, match="not one of"):
        mark_bad(state, "zz")
    marked = mark_bad(state, "a")
    with pytest.raises(ValueError, match="already marked"):
        mark_bad(marked, "a")
    plain = start_topk(["a", "b", "c"], 2, seed=0, allow_bad_shortcut=False)
    with pytest.raises(ValueError, match="shortcut is off"):
        mark_bad(plain, "a")


def test_it_fuses_runs_by_reciprocal_rank() -> None:
    # x: 1/61 + 1/62, y: 1/62 + 1/61 (tied, x seen first), z: 1/63, w: 1/63 (z seen first).
    assert fused_prior_order([["x", "y", "z"], ["y", "x", "w"]]) == ["x", "y", "z", "w"]
    with pytest.raises(ValueError, match="twice"):
        fused_prior_order([["x", "x"]])


@FAST
@given(data=st.data(), n=st.integers(2, 12))
def test_it_closes_the_preference_graph_transitively(data, n) -> None:
    # Answers from a weak order; the graph must know exactly the relations that a chain of
    # answers implies (brute-force closure: a path of >= answers, strict if any step is).
    values = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40))
    graph = PreferenceGraph(n)
    at_least = np.eye(n, dtype=bool)  # at_least[x, y]: a chain says x >= y
    strictly = np.zeros((n, n), dtype=bool)
    for x, y in pairs:
        if x == y or graph.relation(x, y) is not None:
            continue
        relation = MORE if values[x] > values[y] else LESS if values[x] < values[y] else TIE
        graph.add(x, y, relation)
        high, low = (x, y) if relation != LESS else (y, x)
        at_least[high, low] = True
        strictly[high, low] |= relation != TIE
        if relation == TIE:
            at_least[low, high] = True
    for middle in range(n):  # Floyd-Warshall on (>=, strict)
        through = at_least[:, [middle]] & at_least[[middle], :]
        strict_through = through & (strictly[:, [middle]] | strictly[[middle], :])
        at_least |= through
        strictly |= strict_through
    for x in range(n):
        for y in range(n):
            if x == y:
                continue
            expected = None
            if at_least[x, y] and at_least[y, x] and not (strictly[x, y] or strictly[y, x]):
                expected = TIE
            elif at_least[x, y] and strictly[x, y]:
                expected = MORE
            elif at_least[y, x] and strictly[y, x]:
                expected = LESS
            assert graph.relation(x, y) == expected
