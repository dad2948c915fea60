"""Read LETOR 4.0 files (SVMlight format with ``#docid = ...`` comments) into arrays.

A line reads ``grade qid:Q 1:v 2:v ... 46:v #docid = GX... inc = ... prob = ...``. The files
may be gzip-compressed; they are streamed line by line.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np


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


def _open_text(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        yield from handle


def read_letor(paths: list[Path], n_features: int = 46) -> LetorSet:
    """Parse LETOR files; rows of the same query must be contiguous within a file.

    Raises
    ------
    ValueError
        Naming file and line, on a malformed line, a feature index out of 1..n_features,
        a negative grade, a missing ``#docid``, or a query id seen in two places.
    """
    rows: list[np.ndarray] = []
    grades: list[int] = []
    docnos: list[str] = []
    query_index: list[int] = []
    query_ids: list[str] = []
    position: dict[str, int] = {}
    for path in paths:
        previous = None
        for line_number, line in enumerate(_open_text(Path(path)), start=1):
            if not line.strip():
                continue
            where = f"{path}, line {line_number}"
            data, _, comment = line.partition("#")
            tokens = data.split()
            if len(tokens) < 2 or not tokens[1].startswith("qid:"):
                raise ValueError(f"{where}: expected 'grade qid:Q f:v ...'")
            try:
                grade = int(tokens[0])
            except ValueError:
                raise ValueError(f"{where}: grade {tokens[0]!r} is not an integer") from None
            if grade < 0:
                raise ValueError(f"{where}: negative grade {grade}")
            qid = tokens[1][4:]
            if qid != previous:
                if qid in position:
                    raise ValueError(f"{where}: query {qid} appears in two separate blocks")
                position[qid] = len(query_ids)
                query_ids.append(qid)
                previous = qid
            values = np.zeros(n_features)
            for token in tokens[2:]:
                index, _, value = token.partition(":")
                try:
                    feature = int(index)
                    values[feature - 1] = float(value)
                except (ValueError, IndexError):
                    raise ValueError(f"{where}: bad feature {token!r}") from None
                if not 1 <= feature <= n_features:
                    raise ValueError(f"{where}: feature index {feature} outside 1..{n_features}")
            fields = comment.split()
            if len(fields) < 3 or fields[0] != "docid" or fields[1] != "=":
                raise ValueError(f"{where}: missing '#docid = ...' comment")
            rows.append(values)
            grades.append(grade)
            docnos.append(fields[2])
            query_index.append(position[qid])
    if not rows:
        raise ValueError(f"no query-document pairs in {[str(p) for p in paths]}")
    return LetorSet(
        features=np.vstack(rows),
        grades=np.asarray(grades, dtype=np.int64),
        query_ids=tuple(query_ids),
        query_of_row=np.asarray(query_index, dtype=np.int64),
        docnos=tuple(docnos),
    )
