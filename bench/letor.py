"""Read LETOR 4.0 files (SVMlight format with ``#docid = ...`` comments) into arrays.

A line reads ``grade qid:Q 1:v 2:v ... 46:v #docid = GX... inc = ... prob = ...``. The files
may be gzip-compressed; they are streamed line by line by the core's reader
(`estimation.formats.letor`); this module keeps the float64 row layout the MQ2008 reproduction uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from estimation.formats.letor import read_letor as core_read_letor


@dataclass(frozen=True, eq=False)
class LetorSet:
    """Query-document pairs of one or more LETOR files, grouped by query (contiguous rows).

    Attributes
    ----------
    features : ndarray, shape (N, d)
    grades : ndarray of int, shape (N,)
    query_ids : tuple of str, length m
        In order of first appearance.
    query_of_row : ndarray of int, shape (N,)
        Index into ``query_ids`` for every row.
    docnos : tuple of str, length N
    """

    features: np.ndarray
    grades: np.ndarray
    query_ids: tuple[str, ...]
    query_of_row: np.ndarray
    docnos: tuple[str, ...]

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def query_slices(self) -> list[slice]:
        """The row range of every query (rows of a query are contiguous)."""
        starts = np.flatnonzero(np.r_[True, np.diff(self.query_of_row) != 0])
        stops = np.r_[starts[1:], self.query_of_row.size]
        return [slice(int(a), int(b)) for a, b in zip(starts, stops, strict=True)]


def read_letor(paths: list[Path], n_features: int = 46) -> LetorSet:
    """Parse fully labeled LETOR files with docids through `estimation.formats.letor.read_letor`.

    Raises
    ------
    ValueError
        Naming file and line (`estimation.formats.trec.InputFileError`), on a malformed line, a feature
        index above n_features, an unlabeled row, a missing ``#docid``, or a query id seen in
        two places.
    """
    pool = core_read_letor([Path(p) for p in paths], n_features=n_features)
    if pool.doc_ids_from_position:
        raise ValueError(f"{[str(p) for p in paths]}: missing '#docid = ...' comments")
    if not pool.labeled.all():
        raise ValueError(f"{[str(p) for p in paths]}: unlabeled rows (grade -1) in a benchmark file")
    return LetorSet(
        features=np.pad(pool.features, ((0, 0), (0, n_features - pool.features.shape[1]))).astype(np.float64),
        grades=pool.grades,
        query_ids=pool.query_ids,
        query_of_row=pool.query_of_row(),
        docnos=pool.doc_ids,
    )
