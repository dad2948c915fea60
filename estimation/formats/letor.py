"""Streamed reader for feature pools in LETOR / SVMlight format, into compact arrays.

A line reads ``grade qid:Q 1:v 2:v ... # docid = D ...``:

- ``grade`` is an integer >= 0, or ``-1`` for an unlabeled row; a line may also start directly
  with ``qid:`` (no grade: unlabeled). A grade written as ``2.0`` is read as 2.
- ``qid:Q`` is required (ranking data is grouped by query); the rows of a query must be
  contiguous within the files read together, as in LETOR 4.0 and MSLR-WEB.
- features ``index:value`` with 1 <= index <= `MAX_FEATURE_INDEX` (or the caller's lower
  ``max_feature_index``), each index at most once per line, finite values within float32's
  range (the matrix's type); absent features are 0 (SVMlight's sparse convention). The
  feature count is the largest index seen (or ``n_features`` when given).
- the comment after ``#`` may carry ``docid = D`` (LETOR 4.0); other comment fields (``inc``,
  ``prob``) are ignored. A file either names every document or none: without docids (MSLR-WEB)
  a document's id is its 1-based position within its query (``"1"``, ``"2"``, ...), so a
  qrels file for such a pool must use those positions. A docid repeated within a query is an
  error.

Blank lines and lines whose first non-blank character is ``#`` are skipped. Problems raise
`estimation.formats.trec.InputFileError` (``FILE:LINE: reason``). Files may be gzip-compressed
(detected from their first bytes). Features are stored as one float32 matrix grown in blocks,
never as a row object per value, so a pool of 3.6 million rows x 136 features takes ~2 GB. The
matrix is dense (one column per index up to the largest named: 20,000 rows naming feature
10,000 are 800 MB), so a caller that reads untrusted files bounds both the index
(``max_feature_index``) and the matrix (``max_matrix_bytes`` of `letor_from_rows`, checked as
rows arrive, before the memory is taken).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from estimation.formats.trec import InputFileError, iter_lines, iter_qrels

UNLABELED = -1
_BLOCK_ROWS = 8192
_BLOCK_BYTES = 4 * 1024 * 1024
"""A block holds at most this many bytes (fewer rows when rows are wide)."""
MAX_FEATURE_INDEX = 10_000
"""Features are stored densely (one float32 column per index up to the largest seen), so an index
bounds the pool's memory; the widest public learning-to-rank sets have 700 (Yahoo! LTR)."""
_FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclass(frozen=True, slots=True)
class LetorRow:
    """One parsed line: features as parallel (0-based index, value) arrays."""

    qid: str
    docid: str | None
    grade: int
    indices: np.ndarray
    values: np.ndarray
    line: int


@dataclass(frozen=True, eq=False)
class LetorPool:
    """Query-document rows grouped by query (rows of query ``q`` are
    ``query_offsets[q]:query_offsets[q + 1]``), in file order.

    Attributes
    ----------
    features : ndarray of float32, shape (n_docs, n_features)
    grades : ndarray of int64, shape (n_docs,)
        ``-1`` (`UNLABELED`) for rows without a label.
    query_ids : tuple of str, length n_queries
    query_offsets : ndarray of int64, shape (n_queries + 1,)
    doc_ids : tuple of str, length n_docs
    doc_ids_from_position : bool
        True when the files carried no docids and ids are 1-based positions within queries.
    """

    features: np.ndarray
    grades: np.ndarray
    query_ids: tuple[str, ...]
    query_offsets: np.ndarray
    doc_ids: tuple[str, ...]
    doc_ids_from_position: bool = False

    @property
    def n_docs(self) -> int:
        return int(self.grades.size)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def labeled(self) -> np.ndarray:
        """Boolean mask of rows with a grade, shape (n_docs,)."""
        return self.grades >= 0

    def query_of_row(self) -> np.ndarray:
        """Index into `query_ids` of every row, shape (n_docs,)."""
        return np.repeat(np.arange(self.n_queries), np.diff(self.query_offsets))

    def row_index(self) -> dict[tuple[str, str], int]:
        """(query id, doc id) -> row."""
        queries = self.query_of_row().tolist()
        return {
            (self.query_ids[q], doc): row
            for row, (q, doc) in enumerate(zip(queries, self.doc_ids, strict=True))
        }

    def subset(self, queries: np.ndarray | Sequence[int]) -> LetorPool:
        """The pool restricted to the given query indices, in the order given."""
        queries = np.asarray(queries, dtype=np.int64)
        starts, stops = self.query_offsets[queries], self.query_offsets[queries + 1]
        rows = np.concatenate(
            [np.arange(a, b) for a, b in zip(starts, stops, strict=True)] or [np.zeros(0, int)]
        )
        return LetorPool(
            features=self.features[rows],
            grades=self.grades[rows],
            query_ids=tuple(self.query_ids[q] for q in queries),
            query_offsets=np.r_[0, np.cumsum(stops - starts)].astype(np.int64),
            doc_ids=tuple(self.doc_ids[r] for r in rows),
            doc_ids_from_position=self.doc_ids_from_position,
        )

    def with_grades(self, grades: np.ndarray) -> LetorPool:
        """The same pool with other grades (same shape; -1 = unlabeled)."""
        grades = np.asarray(grades, dtype=np.int64)
        if grades.shape != self.grades.shape:
            raise ValueError(f"grades have shape {grades.shape}, the pool {self.grades.shape}")
        return LetorPool(
            self.features,
            grades,
            self.query_ids,
            self.query_offsets,
            self.doc_ids,
            self.doc_ids_from_position,
        )


def _grade(text: str, filename: str, number: int) -> int:
    try:
        value = float(text)
    except ValueError:
        raise InputFileError(filename, number, f"grade {text!r} is not a number") from None
    if not value.is_integer():
        raise InputFileError(filename, number, f"grade {text!r} is not an integer")
    grade = int(value)
    if grade < UNLABELED:
        raise InputFileError(filename, number, f"grade {grade} is negative (use -1 for an unlabeled row)")
    return grade


def _feature_index(text: str, filename: str, number: int, largest: int) -> int:
    """A feature's index (decimal digits), 1..`largest`."""
    index = int(text)
    if index < 1:
        raise InputFileError(filename, number, f"feature index {index} is below 1")
    if index > largest:
        raise InputFileError(
            filename,
            number,
            f"feature index {text} is above {largest} (features are stored densely: one column per index)",
        )
    return index


def _docid(comment: str, filename: str, number: int) -> str | None:
    fields = comment.replace("=", " = ").split()
    if "docid" not in fields:
        return None
    position = fields.index("docid")
    if len(fields) < position + 3 or fields[position + 1] != "=":
        raise InputFileError(filename, number, "'docid' without '= D' in the comment")
    return fields[position + 2]


def iter_letor(
    lines: Iterable[str | bytes], filename: str = "<letor>", *, max_feature_index: int = MAX_FEATURE_INDEX
) -> Iterator[LetorRow]:
    """Yield one `LetorRow` per data line; validates each line as it comes (see module doc).
    A feature index above ``max_feature_index`` (at most `MAX_FEATURE_INDEX`) is an error."""
    largest = min(max_feature_index, MAX_FEATURE_INDEX)
    for number, text in enumerate(lines, start=1):
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                raise InputFileError(filename, number, "not valid UTF-8 text") from None
        data, _, comment = text.partition("#")
        tokens = data.split()
        if not tokens:
            continue  # blank, or a comment line
        if tokens[0].startswith("qid:"):
            grade = UNLABELED
        else:
            grade = _grade(tokens[0], filename, number)
            tokens = tokens[1:]
        if not tokens or not tokens[0].startswith("qid:"):
            raise InputFileError(filename, number, "expected 'grade qid:Q index:value ...'")
        qid = tokens[0][4:]
        if not qid:
            raise InputFileError(filename, number, "empty query id after 'qid:'")
        indices = np.empty(len(tokens) - 1, dtype=np.int64)
        values = np.empty(len(tokens) - 1, dtype=np.float64)
        for position, token in enumerate(tokens[1:]):
            index, colon, value = token.partition(":")
            try:
                if not colon or not (index.isascii() and index.isdigit()):
                    raise ValueError
                values[position] = float(value)
            except ValueError:
                raise InputFileError(
                    filename, number, f"bad feature {token!r} (expected index:value)"
                ) from None
            indices[position] = _feature_index(index, filename, number, largest)
        if indices.size:
            if np.unique(indices).size != indices.size:
                raise InputFileError(filename, number, "a feature index appears twice")
            if not np.all(np.isfinite(values)):
                raise InputFileError(filename, number, "a feature value is not finite")
            if np.abs(values).max() > _FLOAT32_MAX:
                raise InputFileError(
                    filename, number, f"a feature value is beyond float32's range (±{_FLOAT32_MAX:.4g})"
                )
        yield LetorRow(
            qid, _docid(comment, filename, number), grade, indices - 1, values.astype(np.float32), number
        )


class _FeatureBlocks:
    """A float32 matrix grown in row blocks (at most `_BLOCK_BYTES` each); widened when a larger
    feature index appears. `max_bytes` bounds the matrix: checked before a row is added."""

    def __init__(self, width: int, max_bytes: int | None = None) -> None:
        self.width = width
        self.max_bytes = max_bytes
        self.blocks: list[np.ndarray] = []
        self.filled = 0
        self.rows = 0

    def add(self, indices: np.ndarray, values: np.ndarray, filename: str, line: int) -> None:
        if indices.size and int(indices.max()) >= self.width:
            self.width = int(indices.max()) + 1
        size = (self.rows + 1) * self.width * 4
        if self.max_bytes is not None and size > self.max_bytes:
            reason = (
                f"the feature matrix would exceed {self.max_bytes} bytes ({self.rows + 1} rows x "
                f"{self.width} features x 4 bytes: features are stored densely)"
            )
            raise InputFileError(filename, line, reason)
        if not self.blocks or self.filled == self.blocks[-1].shape[0]:
            rows = max(1, min(_BLOCK_ROWS, _BLOCK_BYTES // (4 * max(self.width, 1))))
            self.blocks.append(np.zeros((rows, self.width), dtype=np.float32))
            self.filled = 0
        block = self.blocks[-1]
        if block.shape[1] < self.width:
            block = np.pad(block, ((0, 0), (0, self.width - block.shape[1])))
            self.blocks[-1] = block
        block[self.filled, indices] = values
        self.filled += 1
        self.rows += 1

    def matrix(self) -> np.ndarray:
        """The rows as one matrix; each block is let go once copied, so the peak is the matrix
        and one block more (np.zeros takes the matrix's pages as they are written)."""
        matrix = np.zeros((self.rows, self.width), dtype=np.float32)
        start = 0
        while self.blocks:
            block = self.blocks.pop(0)
            used = block[: min(block.shape[0], self.rows - start)]
            matrix[start : start + used.shape[0], : used.shape[1]] = used
            start += used.shape[0]
            del block, used
        return matrix


def letor_from_rows(
    files: Iterable[tuple[str, Iterable[LetorRow]]],
    n_features: int | None = None,
    *,
    max_matrix_bytes: int | None = None,
) -> LetorPool:
    """Collect the rows of one or more files, ``(filename, rows)``, into a `LetorPool`.

    Raises `InputFileError` for a query split into two blocks, a docid repeated within a query,
    files that name some documents but not others, a feature index above ``n_features``, a
    feature matrix past ``max_matrix_bytes`` (float32, rows x largest index), or no rows at all.
    """
    blocks = _FeatureBlocks(n_features or 0, max_matrix_bytes)
    grades: list[int] = []
    doc_ids: list[str | None] = []
    query_ids: list[str] = []
    offsets: list[int] = [0]
    seen_query: dict[str, tuple[str, int]] = {}
    named: bool | None = None
    names: list[str] = []
    for filename, rows in files:
        names.append(filename)
        previous: str | None = None
        docs_of_query: dict[str, int] = {}
        for row in rows:
            if named is None:
                named = row.docid is not None
            elif named != (row.docid is not None):
                reason = (
                    "no docid here, but other rows name theirs"
                    if named
                    else "a docid here, but other rows have none"
                )
                raise InputFileError(filename, row.line, reason)
            if row.qid != previous:
                if row.qid in seen_query:
                    first_file, first_line = seen_query[row.qid]
                    raise InputFileError(
                        filename,
                        row.line,
                        f"query {row.qid} appears in two separate blocks "
                        f"(first at {first_file}:{first_line})",
                    )
                seen_query[row.qid] = (filename, row.line)
                if query_ids:
                    offsets.append(len(grades))
                query_ids.append(row.qid)
                previous = row.qid
                docs_of_query = {}
            if row.docid is not None:
                if row.docid in docs_of_query:
                    raise InputFileError(
                        filename,
                        row.line,
                        f"document {row.docid} listed twice for query {row.qid} "
                        f"(first on line {docs_of_query[row.docid]})",
                    )
                docs_of_query[row.docid] = row.line
            if n_features is not None and row.indices.size and int(row.indices.max()) >= n_features:
                raise InputFileError(
                    filename, row.line, f"feature index {int(row.indices.max()) + 1} is above {n_features}"
                )
            blocks.add(row.indices, row.values, filename, row.line)
            grades.append(row.grade)
            doc_ids.append(row.docid)
    if not grades:
        raise InputFileError(", ".join(names) or "<letor>", None, "no query-document rows")
    offsets.append(len(grades))
    query_offsets = np.asarray(offsets, dtype=np.int64)
    if named:
        ids = tuple(str(d) for d in doc_ids)
    else:
        positions = np.arange(len(grades)) - np.repeat(query_offsets[:-1], np.diff(query_offsets)) + 1
        ids = tuple(str(p) for p in positions.tolist())
    return LetorPool(
        features=blocks.matrix(),
        grades=np.asarray(grades, dtype=np.int64),
        query_ids=tuple(query_ids),
        query_offsets=query_offsets,
        doc_ids=ids,
        doc_ids_from_position=not named,
    )


def read_letor(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], n_features: int | None = None
) -> LetorPool:
    """Read LETOR / SVMlight files (plain or gzip) into one `LetorPool`; see the module doc."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return letor_from_rows(
        ((os.fspath(p), iter_letor(iter_lines(p), os.fspath(p))) for p in paths), n_features=n_features
    )


def drop_last_query(pool: LetorPool) -> LetorPool:
    """The pool without its last query (the MSLR sample files end in the middle of one)."""
    return pool.subset(np.arange(pool.n_queries - 1))


def concat_pools(pools: Sequence[LetorPool]) -> LetorPool:
    """Pools read separately, one after the other (query ids must not repeat)."""
    query_ids = tuple(q for pool in pools for q in pool.query_ids)
    if len(set(query_ids)) != len(query_ids):
        raise ValueError("a query id appears in more than one of the pools")
    width = max(pool.features.shape[1] for pool in pools)
    sizes = np.concatenate([np.diff(pool.query_offsets) for pool in pools])
    return LetorPool(
        features=np.concatenate(
            [np.pad(p.features, ((0, 0), (0, width - p.features.shape[1]))) for p in pools]
        ),
        grades=np.concatenate([pool.grades for pool in pools]),
        query_ids=query_ids,
        query_offsets=np.r_[0, np.cumsum(sizes)].astype(np.int64),
        doc_ids=tuple(d for pool in pools for d in pool.doc_ids),
        doc_ids_from_position=any(pool.doc_ids_from_position for pool in pools),
    )


_GRADE_MAX = int(np.iinfo(np.int64).max)  # what a pool's grade array holds


@dataclass(frozen=True)
class LabelsApplied:
    """A pool with labels from a file merged in, and how many of the file's labels applied."""

    pool: LetorPool
    applied: int
    unknown: int


def apply_labels(
    lines: Iterable[str | bytes], filename: str, pool: LetorPool, *, top_grade: int | None = None
) -> LabelsApplied:
    """Merge existing labels into `pool`: qrels lines (``qid iter docid grade``) or labeled
    LETOR rows (``grade qid:Q ... # docid = D``), told apart by the first data line.

    A label for a (qid, docid) of the pool overrides the pool's grade; labels of pairs the pool
    lacks are counted in ``unknown`` and otherwise ignored; negative qrels grades count 0
    (as in trec_eval); unlabeled LETOR rows (grade -1) are skipped. LETOR rows without docids
    take ids from their position within their query in the labels file. A grade above
    `top_grade` (by default, above what an int64 holds) raises `InputFileError` naming its line.
    """
    top = _GRADE_MAX if top_grade is None else top_grade

    def checked(grade: int, number: int) -> int:
        if grade > top:
            shown = str(grade) if len(str(grade)) <= 20 else f"{str(grade)[:8]}... ({len(str(grade))} digits)"
            raise InputFileError(filename, number, f"grade {shown} is above the top grade {top}")
        return grade

    stream = iter(lines)
    head: list[str | bytes] = []
    letor = False
    for text in stream:
        head.append(text)
        decoded = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        tokens = decoded.partition("#")[0].split()
        if tokens:
            letor = any(token.startswith("qid:") for token in tokens[:2])
            break
    lines = _chain(head, stream)
    row_of = pool.row_index()
    grades = pool.grades.copy()
    applied = unknown = 0
    if letor:
        positions: dict[str, int] = {}
        for row in iter_letor(lines, filename):
            positions[row.qid] = positions.get(row.qid, 0) + 1
            if row.grade < 0:
                continue
            docid = row.docid if row.docid is not None else str(positions[row.qid])
            target = row_of.get((row.qid, docid))
            if target is None:
                unknown += 1
                continue
            grades[target] = checked(row.grade, row.line)
            applied += 1
    else:
        for label in iter_qrels(lines, filename):
            target = row_of.get((label.qid, label.docno))
            if target is None:
                unknown += 1
                continue
            grades[target] = max(0, checked(label.grade, label.line))
            applied += 1
    return LabelsApplied(pool.with_grades(grades), applied, unknown)


def _chain(head: list[str | bytes], rest: Iterator[str | bytes]) -> Iterator[str | bytes]:
    yield from head
    yield from rest
