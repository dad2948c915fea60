"""The bootstrap LightGBM ensemble and uploaded scores."""

from __future__ import annotations

import numpy as np
import pytest

from estimation.formats.letor import LetorPool
from estimation.formats.trec import InputFileError
from estimation.training.ensembles import BootstrapLightGBM, UploadedScores, read_scores


def small_pool(seed: int = 0) -> LetorPool:
    rng = np.random.default_rng(seed)
    offsets = np.arange(0, 41 * 12, 12)
    features = rng.normal(size=(offsets[-1], 5)).astype(np.float32)
    grades = np.clip(np.round(features[:, 0] + 0.5 * features[:, 1] + 1), 0, 2).astype(np.int64)
    grades[offsets[-1] // 2 :] = -1  # the second half is the unlabeled pool
    return LetorPool(
        features,
        grades,
        tuple(str(q) for q in range(40)),
        offsets,
        tuple(f"d{r % 12}" for r in range(offsets[-1])),
    )


def test_it_scores_every_row_deterministically_for_a_seed() -> None:
    pool = small_pool()
    ensemble = BootstrapLightGBM(n_members=3, rounds=30)
    scores = ensemble.fit(pool.features, pool.grades, pool.query_offsets, seed=4)
    assert scores.shape == (pool.n_docs, 3)
    np.testing.assert_array_equal(
        scores, ensemble.fit(pool.features, pool.grades, pool.query_offsets, seed=4)
    )
    assert not np.array_equal(scores, ensemble.fit(pool.features, pool.grades, pool.query_offsets, seed=5))
    # Members differ (bootstrap) yet learn the signal on the unlabeled half.
    unlabeled = ~pool.labeled
    assert scores[unlabeled].std(axis=1).mean() > 0
    assert np.corrcoef(scores[unlabeled].mean(axis=1), pool.features[unlabeled, 0])[0, 1] > 0.5


def test_it_needs_labeled_rows() -> None:
    pool = small_pool()
    with pytest.raises(ValueError, match="no labeled rows"):
        BootstrapLightGBM(n_members=2).fit(pool.features, np.full(pool.n_docs, -1), pool.query_offsets, 0)


def test_it_reads_uploaded_scores_aligned_with_the_pool() -> None:
    pool = small_pool().subset([0, 1])
    lines = ["# qid docid s1 s2"] + [
        f"{pool.query_ids[q]} {pool.doc_ids[r]} {r} {2 * r}"
        for q in range(2)
        for r in range(q * 12, q * 12 + 12)
    ][::-1]
    uploaded = read_scores(lines, "scores.tsv", pool)
    assert isinstance(uploaded, UploadedScores) and uploaded.n_members == 2
    np.testing.assert_array_equal(uploaded.scores[:, 1], 2 * np.arange(24))
    assert uploaded.fit(pool.features, pool.grades, pool.query_offsets, 0) is uploaded.scores


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        (["0 d0 1"], r"scores.tsv: 23 pool rows have no scores, e.g. query 0 document d1"),
        (["0 d0"], r"scores.tsv:1: expected 'qid docid"),
        (["0 d0 1 2", "0 d1 1"], r"scores.tsv:2: 1 scores, but earlier lines have 2"),
        (["9 d0 1"], r"scores.tsv:1: query 9 document d0 is not in the pool"),
        (["0 d0 1", "0 d0 1"], r"scores.tsv:2: document d0 of query 0 scored twice \(first on line 1\)"),
        (["0 d0 inf"], r"scores.tsv:1: score"),
        ([], r"scores.tsv: no scores"),
    ],
)
def test_it_names_the_line_of_bad_scores(lines: list[str], match: str) -> None:
    with pytest.raises(InputFileError, match=match):
        read_scores(lines, "scores.tsv", small_pool().subset([0, 1]))
