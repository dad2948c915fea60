"""A TREC run read for evaluation at a cutoff: each query's first `depth` documents, streamed.

``python -m estimation evaluate`` needs, per query, only the documents a metric at cutoff K
sees. `read_run_top` reads the file in blocks of about a megabyte; from each block it keeps
each query's first `depth` lines in trec_eval's order (vectorised over all queries of the
block), and a last selection over the blocks' keepers gives the run. A 64-bit key of each
line's (query, docno) serves the duplicate check; the keys of the queries a block finishes
are checked and dropped there. So memory holds a block, the keepers and the open query's keys,
not the Python objects of every line (a file whose queries resume after others is read a
second time, keeping 8 bytes a line), and nothing of a run is kept once it is evaluated.

The result is exactly `estimation.formats.trec.read_run`'s `Run` with every ranking and its
scores cut to their first `depth` entries, in trec_eval's order (score descending, then docno
descending: the rank column is ignored), and a file the line reader refuses raises the same
`InputFileError`: any block this reader does not handle on its fast path (`byte_columns`) takes
the general path of `run_blocks`, and anything that one does not accept (a malformed line, a
document listed twice, a hash collision, a corrupt gzip stream) sends the whole file to the
line reader. `tests/estimation/test_run_top.py` checks both against the line reader.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from estimation.formats.byte_columns import (
    check_integers,
    decimal_values,
    plain_fields,
    runs_of_equal,
    string_hashes,
)
from estimation.formats.run_blocks import NeedsLineReader, _byte_blocks, open_binary, parse_text_block
from estimation.formats.trec import BOM_BYTES, Run, read_run

TOP_BLOCK_BYTES = 1 << 20
"""How much of the file one block holds: large enough for numpy to pay, small enough that a
block's temporary arrays stay a few megabytes."""

_QUERY_MIX = np.uint64(0xD6E8FEB86659FD93)  # odd: distinct queries shift a docno's hash apart


@dataclass(frozen=True)
class _Columns:
    """One block's content lines: qids and tags as runs of equal values, the rest per line."""

    qids: list[bytes]  # the value of each run of equal qids
    qid_starts: np.ndarray  # where each run starts, shape (r,)
    docnos: np.ndarray  # NUL-padded bytes, shape (n,)
    scores: np.ndarray  # float64, finite, shape (n,)
    tags: list[bytes]


def _plain_columns(block: bytes) -> _Columns | None:
    table = plain_fields(block, 6)
    if table is None:
        return None
    if len(table) == 0:
        return _Columns([], np.empty(0, np.int64), np.empty(0, "S1"), np.empty(0), [])
    try:
        check_integers(table.strings(3))
        scores = decimal_values(table.strings(4))
    except (ValueError, OverflowError):
        raise NeedsLineReader from None
    qids, qid_starts = runs_of_equal(table.strings(0))
    tags, _ = runs_of_equal(table.strings(5))
    return _Columns(qids, qid_starts, table.strings(2, align=8), scores, tags)


def _text_columns(block: bytes) -> _Columns:
    """The general path (comments, non-ASCII text): `run_blocks`' ``str.split`` parser."""
    run_block = parse_text_block(block)
    qids = np.array([qid.encode() for qid in run_block.qids], dtype=bytes)
    docnos = np.array([docno.encode() for docno in run_block.docnos], dtype=bytes)
    width = -(-max(docnos.itemsize, 1) // 8) * 8
    docnos = docnos.astype(f"S{width}")  # string_hashes reads whole 64-bit words
    qid_values, qid_starts = runs_of_equal(qids)
    tags = [tag.encode() for tag in run_block.tags]
    return _Columns(qid_values, qid_starts, docnos, run_block.scores, tags)


def _blocks(path: str, block_bytes: int) -> Iterator[_Columns]:
    with open_binary(path, buffer_bytes=block_bytes) as binary:
        for index, block in enumerate(_byte_blocks(binary, block_bytes, None)):
            if index == 0 and block.startswith(BOM_BYTES):
                block = block[len(BOM_BYTES) :]
            columns = _plain_columns(block)
            yield _text_columns(block) if columns is None else columns


class _QueryResumes(Exception):
    """A query's lines resume after another query's, once its keys were checked and dropped."""


def _first_places(codes: np.ndarray, scores: np.ndarray, docnos: np.ndarray, depth: int) -> np.ndarray:
    """Indices of each query's first `depth` lines in trec_eval's order, grouped by query.

    Vectorised over all queries: a numeric sort orders each query's lines by score descending
    and keeps those scoring at least its depth-th best score; only the kept lines that tie on
    (query, score) are then sorted by docno, descending (bytes order is str order for UTF-8,
    so the docnos compare as the line reader's do).
    """
    if codes.size == 0:
        return np.empty(0, dtype=np.int64)
    # Runs usually list each query by score already: then the sort is the identity.
    listed_in_order = (codes[1:] > codes[:-1]) | ((codes[1:] == codes[:-1]) & (scores[1:] <= scores[:-1]))
    order = np.arange(codes.size) if listed_in_order.all() else np.lexsort((-scores, codes))
    starts, sizes = _groups(codes[order])
    depth_th = scores[order[np.minimum(starts + depth - 1, codes.size - 1)]]
    threshold = np.repeat(np.where(sizes >= depth, depth_th, -np.inf), sizes)
    kept = order[scores[order] >= threshold]
    kept_codes, kept_scores = codes[kept], scores[kept]
    tie = (kept_codes[1:] == kept_codes[:-1]) & (kept_scores[1:] == kept_scores[:-1])
    if tie.any():
        tied = np.flatnonzero(np.concatenate(([False], tie)) | np.concatenate((tie, [False])))
        # (query, score descending, docno descending) is (-query, score, docno) read backwards.
        by_docno = np.lexsort((docnos[kept[tied]], kept_scores[tied], -kept_codes[tied]))[::-1]
        kept[tied] = kept[tied][by_docno]
    starts, sizes = _groups(codes[kept])
    rank = np.arange(kept.size) - np.repeat(starts, sizes)
    return kept[rank < depth]


def _groups(sorted_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and size of each stretch of equal values."""
    starts = np.flatnonzero(np.concatenate(([True], sorted_codes[1:] != sorted_codes[:-1])))
    return starts, np.diff(np.append(starts, sorted_codes.size))


class _TopCollector:
    """The candidates for each query's first `depth` places, and the duplicate check.

    Each block keeps its first `depth` lines per query (`_first_places`); the last selection
    over all blocks' keepers gives the run. Runs list each query's lines together, so the
    hashes of the queries a block finishes are checked for duplicates at once and dropped:
    memory holds the open query's hashes, not the file's. A query that resumes after a block
    finished it raises `_QueryResumes`, and the file is read again with `keep_hashes` (every
    hash kept, checked at the end).
    """

    def __init__(self, depth: int, *, keep_hashes: bool) -> None:
        self.depth = depth
        self.keep_hashes = keep_hashes
        self.code_of: dict[bytes, int] = {}  # qid -> code, in order of first appearance
        self.tags: dict[bytes, None] = {}
        self.kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # codes, scores, docnos
        self.keys: list[np.ndarray] = []  # a hash of (query, docno) per line not yet checked
        self.open = -1  # the query of the last line read
        self.done: set[int] = set()  # queries whose hashes were checked and dropped

    def add(self, columns: _Columns) -> None:
        self.tags.update(dict.fromkeys(columns.tags))
        n = columns.scores.size
        if n == 0:
            return
        stretch_codes = [self.code_of.setdefault(qid, len(self.code_of)) for qid in columns.qids]
        if not self.keep_hashes and (
            not self.done.isdisjoint(stretch_codes)
            or len(set(stretch_codes)) != len(stretch_codes)
            or self.open in stretch_codes[1:]
        ):
            raise _QueryResumes
        codes = np.repeat(stretch_codes, np.diff(np.append(columns.qid_starts, n)))
        keep = _first_places(codes, columns.scores, columns.docnos, self.depth)
        self.kept.append((codes[keep], columns.scores[keep], columns.docnos[keep]))
        self.keys.append(string_hashes(columns.docnos) ^ (codes.astype(np.uint64) * _QUERY_MIX))
        if not self.keep_hashes:
            # Every query but the block's last is finished: check and drop their keys.
            finished = {self.open, *stretch_codes[:-1]} - {stretch_codes[-1], -1}
            self.open = stretch_codes[-1]
            if finished:
                self._check_duplicates(open_lines=n - int(columns.qid_starts[-1]))
                self.done |= finished

    def _check_duplicates(self, open_lines: int = 0) -> None:
        """Check the keys of every line but the last `open_lines` (the open query's, kept)."""
        keys = np.concatenate(self.keys)
        checked = np.sort(keys[: keys.size - open_lines])
        self.keys = [keys[keys.size - open_lines :].copy()] if open_lines else []
        if bool((checked[1:] == checked[:-1]).any()):
            raise NeedsLineReader  # a document listed twice (or, rarely, two lines with one key)

    def run(self) -> Run:
        if not self.code_of:
            raise NeedsLineReader  # the line reader says "the run holds no lines"
        self._check_duplicates()
        codes = np.concatenate([part for part, _, _ in self.kept])
        scores = np.concatenate([part for _, part, _ in self.kept])
        docnos = np.concatenate([part for _, _, part in self.kept])
        top = _first_places(codes, scores, docnos, self.depth)  # queries in order of appearance
        codes, score_list, docno_list = codes[top], scores[top].tolist(), docnos[top].tolist()
        starts, _ = _groups(codes)
        qids = list(self.code_of)
        rankings: dict[str, tuple[str, ...]] = {}
        run_scores: dict[str, tuple[float, ...]] = {}
        for start, stop in pairwise([*starts.tolist(), codes.size]):
            qid = qids[int(codes[start])].decode()
            rankings[qid] = tuple(docno.decode() for docno in docno_list[start:stop])
            run_scores[qid] = tuple(score_list[start:stop])
        tags = tuple(tag.decode() for tag in self.tags)
        return Run(tag=tags[0], rankings=rankings, scores=run_scores, tags=tags)


def _collect(filename: str, depth: int, block_bytes: int, *, keep_hashes: bool) -> Run:
    collector = _TopCollector(depth, keep_hashes=keep_hashes)
    for columns in _blocks(filename, block_bytes):
        collector.add(columns)
    return collector.run()


def read_run_top(path: str | os.PathLike[str], depth: int, *, block_bytes: int = TOP_BLOCK_BYTES) -> Run:
    """Read a TREC run (plain or gzip) keeping each query's first `depth` documents.

    Parameters
    ----------
    path : str or path-like
    depth : int
        How many documents of each query to keep (the largest cutoff to evaluate), >= 1.
    block_bytes : int
        How much of the file to read at a time.

    Returns
    -------
    Run
        ``read_run(path)`` with each ranking and its scores cut to their first `depth`
        entries; every query of the file is there.

    Raises
    ------
    InputFileError
        Whatever ``read_run(path)`` raises, word for word.
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    filename = os.fspath(path)
    try:
        try:
            return _collect(filename, depth, block_bytes, keep_hashes=False)
        except _QueryResumes:
            return _collect(filename, depth, block_bytes, keep_hashes=True)
    except NeedsLineReader:
        run = read_run(filename)
        return Run(
            tag=run.tag,
            rankings={qid: docnos[:depth] for qid, docnos in run.rankings.items()},
            scores={qid: values[:depth] for qid, values in run.scores.items()},
            tags=run.tags,
        )


__all__ = ["TOP_BLOCK_BYTES", "read_run_top"]
