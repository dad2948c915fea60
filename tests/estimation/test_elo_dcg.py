"""EL(q) (A1) and EL(j) (A2) of ELO-DCG against a literal transcription of the paper's loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimation.training.elo_dcg import (
    best_dcg,
    expected_loss,
    expected_loss_documents,
    expected_loss_queries,
    gains_of,
)

MAX_GRADE = 4.0


# --- The reference: Algorithms 1 and 2 of Long et al. (2010), loop for loop. ----------------
# s[i][j] is member i's predicted grade of document j of ONE query.


def ref_gain(score: float) -> float:
    return 2.0 ** min(max(score, 0.0), MAX_GRADE) - 1.0


def ref_bdcg(gains: list[float], cutoff: int | None) -> float:
    ordered = sorted(gains, reverse=True)
    top = len(ordered) if cutoff is None else min(cutoff, len(ordered))
    return sum(ordered[r] / math.log2(r + 2) for r in range(top))


def ref_algorithm_1(s: list[list[float]], cutoff: int | None) -> float:
    n_members, n_docs = len(s), len(s[0])
    d = [ref_bdcg([ref_gain(s[i][j]) for j in range(n_docs)], cutoff) for i in range(n_members)]
    t = [sum(ref_gain(s[i][j]) for i in range(n_members)) / n_members for j in range(n_docs)]
    return sum(d) / n_members - ref_bdcg(t, cutoff)


def ref_algorithm_2(s: list[list[float]], cutoff: int | None) -> list[float]:
    n_members, n_docs = len(s), len(s[0])
    losses = []
    for j in range(n_docs):
        el = 0.0
        for i in range(n_members):
            d = []
            for p in range(n_members):
                t = [ref_gain(s[i][k]) for k in range(n_docs)]
                t[j] = ref_gain(s[p][j])
                d.append(ref_bdcg(t, cutoff))
            g = [ref_gain(s[i][k]) for k in range(n_docs)]
            g[j] = sum(ref_gain(s[p][j]) for p in range(n_members)) / n_members  # the mean gain
            el += sum(d) / n_members - ref_bdcg(g, cutoff)
        losses.append(el / n_members)
    return losses


# --- Random pools: a few queries of 1-6 documents, 1-4 members, scores in and out of [0, 4]. ---

score = st.one_of(
    st.floats(min_value=-1.0, max_value=5.0, allow_nan=False),
    st.sampled_from([0.0, 1.0, 2.0, 4.0]),  # exact ties across members and documents
)


@st.composite
def pools(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n_members = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
    rows = sum(sizes)
    values = draw(st.lists(score, min_size=rows * n_members, max_size=rows * n_members))
    return np.array(values).reshape(rows, n_members), np.r_[0, np.cumsum(sizes)]


CUTOFFS = st.sampled_from([None, 1, 2, 3, 10])


@settings(max_examples=150, deadline=None)
@given(pools(), CUTOFFS)
def test_it_equals_algorithm_1_looped(pool: tuple[np.ndarray, np.ndarray], cutoff: int | None) -> None:
    scores, offsets = pool
    got = expected_loss_queries(scores, offsets, max_grade=MAX_GRADE, cutoff=cutoff)
    for q in range(offsets.size - 1):
        s = scores[offsets[q] : offsets[q + 1]].T.tolist()
        assert got[q] == pytest.approx(max(ref_algorithm_1(s, cutoff), 0.0), abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(pools(), CUTOFFS)
def test_it_equals_algorithm_2_looped(pool: tuple[np.ndarray, np.ndarray], cutoff: int | None) -> None:
    scores, offsets = pool
    got = expected_loss_documents(scores, offsets, max_grade=MAX_GRADE, cutoff=cutoff)
    for q in range(offsets.size - 1):
        s = scores[offsets[q] : offsets[q + 1]].T.tolist()
        want = np.maximum(ref_algorithm_2(s, cutoff), 0.0)
        np.testing.assert_allclose(got[offsets[q] : offsets[q + 1]], want, rtol=0, atol=1e-12)


def test_it_gives_the_toy_value_of_the_method_note() -> None:
    # K = n = 2, N = 2; member 1 predicts grades [2, 0], member 2 [0, 2]:
    # EL = 3 - (1.5 + 1.5 / log2 3) = 0.553605.
    scores = np.array([[2.0, 0.0], [0.0, 2.0]])  # rows: documents, columns: members
    loss = expected_loss_queries(scores, np.array([0, 2]), max_grade=2, cutoff=2)
    assert loss[0] == pytest.approx(3 - (1.5 + 1.5 / math.log2(3)), abs=1e-12)
    assert loss[0] == pytest.approx(0.553605, abs=5e-7)


def random_pool(
    rng: np.random.Generator, n_queries: int = 20, n_members: int = 5
) -> tuple[np.ndarray, np.ndarray]:
    sizes = rng.integers(1, 40, n_queries)
    offsets = np.r_[0, np.cumsum(sizes)]
    return rng.normal(1.5, 1.2, (offsets[-1], n_members)), offsets


@pytest.mark.parametrize("cutoff", [None, 5, 10])
def test_it_is_never_negative(cutoff: int | None) -> None:
    scores, offsets = random_pool(np.random.default_rng(1))
    loss = expected_loss(scores, offsets, max_grade=MAX_GRADE, cutoff=cutoff)
    assert np.all(loss.query >= 0) and np.all(loss.document >= 0)
    assert loss.query.max() > 0 and loss.document.max() > 0


def test_it_is_zero_when_the_members_agree() -> None:
    rng = np.random.default_rng(2)
    column, offsets = random_pool(rng, n_members=1)
    agreeing = np.repeat(column, 6, axis=1)
    loss = expected_loss(agreeing, offsets, max_grade=MAX_GRADE, cutoff=10)
    np.testing.assert_allclose(loss.query, 0.0, atol=1e-12)
    np.testing.assert_allclose(loss.document, 0.0, atol=1e-12)


def test_it_is_zero_for_a_document_the_members_agree_on() -> None:
    scores, offsets = random_pool(np.random.default_rng(3))
    scores[offsets[2], :] = 1.7
    document = expected_loss_documents(scores, offsets, max_grade=MAX_GRADE, cutoff=10)
    assert document[offsets[2]] == pytest.approx(0.0, abs=1e-12)


def test_it_is_invariant_to_permuting_documents_within_queries() -> None:
    rng = np.random.default_rng(4)
    scores, offsets = random_pool(rng)
    permutation = np.concatenate(
        [rng.permutation(np.arange(a, b)) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    )
    before = expected_loss(scores, offsets, max_grade=MAX_GRADE, cutoff=10)
    after = expected_loss(scores[permutation], offsets, max_grade=MAX_GRADE, cutoff=10)
    np.testing.assert_allclose(after.query, before.query, rtol=0, atol=1e-12)
    np.testing.assert_allclose(after.document, before.document[permutation], rtol=0, atol=1e-12)


def test_it_does_not_depend_on_how_queries_are_chunked(monkeypatch: pytest.MonkeyPatch) -> None:
    import estimation.training.elo_dcg as module

    scores, offsets = random_pool(np.random.default_rng(5), n_queries=60)
    whole = expected_loss(scores, offsets, max_grade=MAX_GRADE, cutoff=10)
    monkeypatch.setattr(module, "_CHUNK_ELEMENTS", 1)  # one query per chunk
    split = expected_loss(scores, offsets, max_grade=MAX_GRADE, cutoff=10)
    np.testing.assert_allclose(split.query, whole.query, atol=1e-12)
    np.testing.assert_allclose(split.document, whole.document, atol=1e-12)


def test_it_handles_empty_queries_and_an_empty_pool() -> None:
    scores = np.array([[2.0, 0.0], [0.0, 2.0]])  # the members disagree on the order
    loss = expected_loss(scores, np.array([0, 0, 2, 2]), max_grade=2, cutoff=10)
    assert loss.query[0] == 0.0 and loss.query[2] == 0.0 and loss.query[1] > 0
    empty = expected_loss(np.zeros((0, 3)), np.array([0]), max_grade=2, cutoff=10)
    assert empty.query.size == 0 and empty.document.size == 0


def test_it_clips_predictions_to_the_grade_range() -> None:
    assert gains_of(np.array([-1.0, 0.0, 1.0, 9.0]), 2).tolist() == [0.0, 0.0, 1.0, 3.0]
    assert best_dcg(np.array([0.0, 3.0, 1.0]), 1) == 3.0


@pytest.mark.parametrize(
    ("scores", "offsets", "match"),
    [
        (np.zeros(3), np.array([0, 3]), "shape"),
        (np.zeros((3, 2)), np.array([0, 2]), "offsets"),
        (np.full((2, 2), np.nan), np.array([0, 2]), "finite"),
    ],
)
def test_it_rejects_malformed_input(scores: np.ndarray, offsets: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        expected_loss_queries(scores, offsets, max_grade=2)
