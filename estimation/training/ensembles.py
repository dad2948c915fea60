"""The ensemble of rankers whose disagreement ELO-DCG measures, behind a small interface.

An `Ensemble` turns a pool (features of every row, grades with -1 for the unlabeled rows,
query offsets) and a seed into predicted grades for every row, shape (n_docs, N). Two
implementations:

- `BootstrapLightGBM` (the default; Long et al. 2010 §5.2, N = 8): member i is a LightGBM
  regression of the grade on the features, trained on a bootstrap resample of the labeled
  QUERIES (each keeps all its labeled documents); deterministic for a seed (single thread,
  ``deterministic=True``, no row or feature subsampling; the seed fixes the resamples and
  LightGBM's own seeds).
- `UploadedScores`: a team's own N models' scores, read from ``qid docid s_1 ... s_N`` lines
  (`read_scores`); no model is fitted, so the selection depends only on the formulas.

`fit_ranker` / `predict` fit one LightGBM model (also used to score a training set's quality).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from estimation.formats.letor import LetorPool
from estimation.formats.trec import InputFileError, _content_lines, _finite_float

if TYPE_CHECKING:
    import lightgbm

DEFAULT_MEMBERS = 8
DEFAULT_PARAMS: dict[str, Any] = {
    "objective": "regression",
    "learning_rate": 0.1,
    "num_leaves": 15,
    "max_bin": 63,
    "min_data_in_leaf": 10,
    "feature_fraction": 1.0,
    "bagging_fraction": 1.0,
    "lambda_l2": 1.0,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
    "verbosity": -1,
}
DEFAULT_ROUNDS = 100
"""100 trees of 15 leaves at rate 0.1 over 63-bin histograms: a small, quick GBDT member (the
paper's learner is a GBDT too); the ensemble refits N of them every round."""


class Ensemble(Protocol):
    """Predicted grades of every pool row by N members."""

    n_members: int

    def fit(
        self, features: np.ndarray, grades: np.ndarray, query_offsets: np.ndarray, seed: int
    ) -> np.ndarray:
        """Fit on the labeled rows (grade >= 0) and return scores for ALL rows, shape (n_docs, N)."""
        ...


def fit_ranker(
    features: np.ndarray,
    grades: np.ndarray,
    seed: int,
    *,
    params: dict[str, Any] | None = None,
    rounds: int = DEFAULT_ROUNDS,
) -> lightgbm.Booster:
    """One pointwise LightGBM regression of `grades` on `features` (rows, not queries)."""
    # Imported on first fit: every Django process imports this module (the training app's
    # services), and most never fit a model.
    import lightgbm

    settings = {**DEFAULT_PARAMS, **(params or {}), "seed": int(seed)}
    data = lightgbm.Dataset(
        np.asarray(features, dtype=np.float32),
        label=np.asarray(grades, dtype=np.float64),
        params={"verbosity": -1},
    )
    return lightgbm.train(settings, data, num_boost_round=rounds)


def predict(model: lightgbm.Booster, features: np.ndarray) -> np.ndarray:
    """Scores of `model` for feature rows, shape (n_rows,)."""
    return np.asarray(model.predict(np.asarray(features, dtype=np.float32), num_threads=1), dtype=np.float64)


@dataclass(frozen=True)
class BootstrapLightGBM:
    """N LightGBM regressors on bootstrap resamples of the labeled queries."""

    n_members: int = DEFAULT_MEMBERS
    rounds: int = DEFAULT_ROUNDS
    params: dict[str, Any] = field(default_factory=dict)

    def fit(
        self, features: np.ndarray, grades: np.ndarray, query_offsets: np.ndarray, seed: int
    ) -> np.ndarray:
        grades = np.asarray(grades)
        offsets = np.asarray(query_offsets, dtype=np.int64)
        if self.n_members < 1:
            raise ValueError(f"the ensemble needs >= 1 member, got {self.n_members}")
        labeled_rows = [
            np.flatnonzero(grades[a:b] >= 0) + a for a, b in zip(offsets[:-1], offsets[1:], strict=True)
        ]
        labeled_queries = [rows for rows in labeled_rows if rows.size]
        if not labeled_queries:
            raise ValueError("no labeled rows to fit the ensemble on")
        rng = np.random.default_rng(seed)
        scores = np.empty((grades.size, self.n_members))
        for member in range(self.n_members):
            resample = rng.integers(len(labeled_queries), size=len(labeled_queries))
            rows = np.concatenate([labeled_queries[q] for q in resample])
            model = fit_ranker(
                features[rows],
                grades[rows],
                int(rng.integers(2**31 - 1)),
                params=self.params,
                rounds=self.rounds,
            )
            scores[:, member] = predict(model, features)
        return scores


@dataclass(frozen=True, eq=False)
class UploadedScores:
    """Scores a team computed with its own N models, aligned with the pool's rows."""

    scores: np.ndarray

    @property
    def n_members(self) -> int:
        return int(self.scores.shape[1])

    def fit(
        self, features: np.ndarray, grades: np.ndarray, query_offsets: np.ndarray, seed: int
    ) -> np.ndarray:
        if self.scores.shape[0] != np.shape(grades)[0]:
            raise ValueError(f"{self.scores.shape[0]} scored rows for a pool of {np.shape(grades)[0]}")
        return self.scores


def read_scores(lines: Iterable[str | bytes], filename: str, pool: LetorPool) -> UploadedScores:
    """Parse ``qid docid s_1 ... s_N`` lines into scores for every row of `pool`.

    Every line must name a (qid, docid) of the pool, once, with the same N >= 1 finite scores;
    every pool row must be scored. ``#`` comments and blank lines are skipped.
    """
    row_of = pool.row_index()
    scores: np.ndarray | None = None
    line_of = np.zeros(pool.n_docs, dtype=np.int64)
    for number, fields in _content_lines(lines, filename):
        if len(fields) < 3:
            raise InputFileError(filename, number, "expected 'qid docid s_1 ... s_N' (at least one score)")
        if scores is None:
            scores = np.full((pool.n_docs, len(fields) - 2), np.nan)
        elif len(fields) - 2 != scores.shape[1]:
            raise InputFileError(
                filename, number, f"{len(fields) - 2} scores, but earlier lines have {scores.shape[1]}"
            )
        row = row_of.get((fields[0], fields[1]))
        if row is None:
            raise InputFileError(
                filename, number, f"query {fields[0]} document {fields[1]} is not in the pool"
            )
        if line_of[row]:
            raise InputFileError(
                filename,
                number,
                f"document {fields[1]} of query {fields[0]} scored twice (first on line {line_of[row]})",
            )
        line_of[row] = number
        scores[row] = [_finite_float(text, "score", filename, number) for text in fields[2:]]
    if scores is None:
        raise InputFileError(filename, None, "no scores")
    missing = np.flatnonzero(line_of == 0)
    if missing.size:
        r = int(missing[0])
        query = pool.query_ids[int(pool.query_of_row()[r])]
        raise InputFileError(
            filename,
            None,
            f"{missing.size} pool rows have no scores, e.g. query {query} document {pool.doc_ids[r]}",
        )
    return UploadedScores(scores)
