"""A TREC run read for evaluation at a cutoff: each query's first `depth` documents, streamed.

``python -m estimation evaluate`` needs, per query, only the documents a metric at cutoff K
sees. `read_run_top` reads the file in blocks of about a megabyte and keeps, per query, the
documents scoring at least the depth-th best score seen so far (ties at that score included,
since the docno decides among them), and a 64-bit hash of each docno of the query being read
for the duplicate check, dropped once the next query starts. So memory holds a block, the
candidates and one query's hashes, not the Python objects of every line (a file whose queries
interleave is read a second time, keeping 8 bytes a line), and nothing of a run is kept once
it is evaluated.

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
from estimation.formats.trec import Run, iter_lines, iter_run, run_from_lines

TOP_BLOCK_BYTES = 1 << 20
"""How much of the file one block holds: large enough for numpy to pay, small enough that a
block's temporary arrays stay a few megabytes."""

_BOM = "\ufeff".encode()


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
            if index == 0 and block.startswith(_BOM):
                block = block[len(_BOM) :]
            columns = _plain_columns(block)
            yield _text_columns(block) if columns is None else columns


class _QueryResumes(Exception):
    """A query's lines resume after another query's, and its hashes were already dropped."""


class _TopCollector:
    """Per query: the candidates for its first `depth` places and the hashes of its docnos.

    Runs list each query's lines together, so the hashes of a query are checked for
    duplicates and dropped as soon as the next query starts; memory then holds one query's
    hashes, not the file's. A query that resumes later raises `_QueryResumes`, and the file is
    read again with `keep_hashes` (every hash kept, checked at the end).
    """

    def __init__(self, depth: int, *, keep_hashes: bool) -> None:
        self.depth = depth
        self.keep_hashes = keep_hashes
        self.code_of: dict[bytes, int] = {}  # qid -> code, in order of first appearance
        self.tags: dict[bytes, None] = {}
        self.scores: list[np.ndarray] = []
        self.docnos: list[np.ndarray] = []
        self.hashes: list[list[np.ndarray]] = []
        self.current = -1  # the query of the last line read
        self.done: set[int] = set()  # queries whose hashes were checked and dropped

    def add(self, columns: _Columns) -> None:
        self.tags.update(dict.fromkeys(columns.tags))
        n = columns.scores.size
        if n == 0:
            return
        hashes = string_hashes(columns.docnos)
        codes = [self._code(qid) for qid in columns.qids]
        bounds = [*columns.qid_starts.tolist(), n]
        if len(set(codes)) == len(codes):  # each query in one stretch, as runs list them
            groups = [(code, slice(*pair)) for code, pair in zip(codes, pairwise(bounds), strict=True)]
            self._add_groups(groups, columns.scores, columns.docnos, hashes)
            return
        if not self.keep_hashes:
            raise _QueryResumes
        # Queries interleaved: group this block's lines by query first (stable: file order).
        line_codes = np.repeat(codes, np.diff(bounds))
        order = np.argsort(line_codes, kind="stable")
        sorted_codes = line_codes[order]
        starts = np.flatnonzero(np.concatenate(([True], sorted_codes[1:] != sorted_codes[:-1])))
        groups = [(int(sorted_codes[a]), slice(a, b)) for a, b in pairwise([*starts.tolist(), n])]
        self._add_groups(groups, columns.scores[order], columns.docnos[order], hashes[order])

    def _code(self, qid: bytes) -> int:
        code = self.code_of.setdefault(qid, len(self.code_of))
        if code == len(self.scores):
            self.scores.append(np.empty(0))
            self.docnos.append(np.empty(0, dtype="S1"))
            self.hashes.append([])
        return code

    def _add_groups(
        self, groups: list[tuple[int, slice]], scores: np.ndarray, docnos: np.ndarray, hashes: np.ndarray
    ) -> None:
        for code, lines in groups:
            if code != self.current and not self.keep_hashes:
                if self.current >= 0:
                    self._check_duplicates(self.current)
                    self.done.add(self.current)
                if code in self.done:
                    raise _QueryResumes
            self.current = code
            self.hashes[code].append(hashes[lines])
            merged_scores = np.concatenate((self.scores[code], scores[lines]))
            merged_docnos = np.concatenate((self.docnos[code], docnos[lines]))
            if merged_scores.size > self.depth:
                cut = merged_scores.size - self.depth
                threshold = np.partition(merged_scores, cut)[cut]  # the depth-th best score
                keep = merged_scores >= threshold
                merged_scores, merged_docnos = merged_scores[keep], merged_docnos[keep]
            self.scores[code], self.docnos[code] = merged_scores, merged_docnos

    def _check_duplicates(self, code: int) -> None:
        hashes = np.sort(np.concatenate(self.hashes[code]))
        if bool((hashes[1:] == hashes[:-1]).any()):
            raise NeedsLineReader  # a document listed twice (or two docnos with one hash)
        self.hashes[code] = []

    def run(self) -> Run:
        if not self.code_of:
            raise NeedsLineReader  # the line reader says "the run holds no lines"
        for code, parts in enumerate(self.hashes):
            if parts:
                self._check_duplicates(code)
        rankings: dict[str, tuple[str, ...]] = {}
        scores: dict[str, tuple[float, ...]] = {}
        for qid, code in self.code_of.items():
            # trec_eval's order, as `run_from_lines` sorts: (score, docno) descending. Bytes
            # order is str order for UTF-8, so the docnos compare as the line reader's do.
            pairs = zip(self.scores[code].tolist(), self.docnos[code].tolist(), strict=True)
            entries = sorted(pairs, reverse=True)
            top = entries[: self.depth]
            rankings[qid.decode()] = tuple(docno.decode() for _, docno in top)
            scores[qid.decode()] = tuple(score for score, _ in top)
        tags = tuple(tag.decode() for tag in self.tags)
        return Run(tag=tags[0], rankings=rankings, scores=scores, tags=tags)


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
        run = run_from_lines(iter_run(iter_lines(filename), filename), filename)
        return Run(
            tag=run.tag,
            rankings={qid: docnos[:depth] for qid, docnos in run.rankings.items()},
            scores={qid: values[:depth] for qid, values in run.scores.items()},
            tags=run.tags,
        )


__all__ = ["TOP_BLOCK_BYTES", "read_run_top"]
