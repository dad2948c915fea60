"""A fast TREC run reader: large byte blocks in, column arrays out.

The line reader (`estimation.formats.trec.iter_run`) builds one record per line and spends ~6 µs a
line in Python; a 1,000,000-line run then takes seconds just to parse. This reader reads the
file in blocks of several megabytes, checks each block's bytes at once (NUL, UTF-8, line
lengths), splits its lines with ``str.split`` (the same splitting as the line reader), and
converts whole columns (``int`` and ``float`` over a column, numpy for the range and
finiteness checks, a hash per (qid, docno) for documents listed twice).

It only ever *accepts* what the line reader accepts, with the same values. When a block holds
anything it does not handle on its fast path (a malformed line, a document listed twice, a
value outside the caller's column limits, a corrupt gzip stream, a file over the size limit),
it raises `NeedsLineReader`; the caller then re-reads the file with the line reader, which
names the file, the first bad line and the reason exactly as it always has. So errors stay
word for word those of the line reader, and the fast path is checked against it by property
tests (`tests/estimation/test_run_blocks.py`).
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from estimation.formats.trec import BOM_BYTES, InputFileError

BLOCK_BYTES = 8 << 20
"""How much of the file one block holds (whole lines; the last line is carried over)."""

_GZIP_MAGIC = b"\x1f\x8b"


class NeedsLineReader(Exception):
    """The fast path met something only the line reader reports word for word."""


@dataclass(frozen=True)
class ColumnLimits:
    """The columns a run is stored in: anything outside them goes to the line reader."""

    qid_chars: int
    docno_chars: int
    tag_chars: int
    rank_min: int
    rank_max: int


@dataclass(frozen=True)
class RunBlock:
    """The content lines of one block of a run, as columns.

    Attributes
    ----------
    qids, docnos, tags : list of str, length n
    ranks : ndarray of int64, shape (n,)
    scores : ndarray of float64, shape (n,), finite
    lines : ndarray of int64, shape (n,), 1-based line numbers in the file
    """

    qids: list[str]
    docnos: list[str]
    ranks: np.ndarray
    scores: np.ndarray
    tags: list[str]
    lines: np.ndarray

    def __len__(self) -> int:
        return len(self.qids)


def _byte_blocks(binary: BinaryIO, block_bytes: int, max_line_bytes: int | None) -> Iterator[bytes]:
    """Yield blocks of whole lines (each ends with a newline, except perhaps the last)."""
    carry = b""
    while True:
        try:
            chunk = binary.read(block_bytes)
        except (OSError, EOFError):
            raise NeedsLineReader from None
        if not chunk:
            break
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
        else:
            carry = data[cut + 1 :]
            yield data[: cut + 1]
        if max_line_bytes is not None and len(carry) > max_line_bytes:
            raise NeedsLineReader  # one line longer than the limit: never held whole
    if carry:
        yield carry


def _check_bytes(block: bytes, max_line_bytes: int | None) -> int:
    """The number of lines in `block`, after the byte-level checks of `text_lines`."""
    if b"\x00" in block:
        raise NeedsLineReader
    newlines = block.count(b"\n")
    count = newlines if block.endswith(b"\n") else newlines + 1
    if max_line_bytes is not None and len(block) > max_line_bytes:
        ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
        starts = np.concatenate(([0], ends + 1))
        stops = np.concatenate((ends + 1, [len(block)]))
        if int((stops - starts).max()) > max_line_bytes:
            raise NeedsLineReader
    return count


_ASCII_SPACE = np.zeros(256, dtype=bool)
_ASCII_SPACE[[9, 10, 11, 12, 13, 32]] = True
# Bytes where str.split() and a split on ASCII whitespace could disagree: information
# separators \x1c-\x1f (whitespace to str.split) and anything non-ASCII (\x85, \xa0, ...).
_NOT_PLAIN = np.zeros(256, dtype=bool)
_NOT_PLAIN[0x1C:0x20] = True
_NOT_PLAIN[0x80:] = True


def _field_bytes(data: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The fields data[starts[i]:stops[i]] as one fixed-width bytes array (NUL-padded)."""
    widths = stops - starts
    width = int(widths.max())
    offsets = np.arange(width)
    index = np.minimum(starts[:, None] + offsets, data.size - 1)
    chars = np.where(offsets < widths[:, None], data[index], 0).astype(np.uint8)
    return np.ascontiguousarray(chars).view(f"S{width}").ravel()


def _labels(values: np.ndarray) -> list[str]:
    """A list of str, one per bytes value, decoding each distinct value once."""
    distinct, inverse = np.unique(values, return_inverse=True)
    names = np.empty(distinct.size, dtype=object)
    names[:] = [value.decode("ascii") for value in distinct.tolist()]
    return names[inverse.ravel()].tolist()


def _parse_plain_block(block: bytes, first_line: int, limits: ColumnLimits | None) -> RunBlock | None:
    """`_parse_block` for a block of plain ASCII, with numpy over the bytes; None if a line
    is a comment (the general path handles those)."""
    data = np.frombuffer(block, dtype=np.uint8)
    separator = _ASCII_SPACE[data]
    inside = ~separator
    edges = np.diff(np.concatenate(([False], inside, [False])).view(np.int8))
    # One row per line once checked (six fields), one entry per field before.
    starts: np.ndarray = np.flatnonzero(edges == 1)
    stops: np.ndarray = np.flatnonzero(edges == -1)
    if starts.size == 0:
        return RunBlock([], [], np.empty(0, np.int64), np.empty(0), [], np.empty(0, np.int64))
    newlines = np.flatnonzero(data == 10)
    line_of = np.searchsorted(newlines, starts)
    first_of_line = np.concatenate(([True], line_of[1:] != line_of[:-1]))
    if bool((data[starts[first_of_line]] == ord("#")).any()):
        return None
    line_index, counts = np.unique(line_of, return_counts=True)
    if bool((counts != 6).any()):
        raise NeedsLineReader
    starts = starts.reshape(-1, 6)
    stops = stops.reshape(-1, 6)
    docno_bytes = _field_bytes(data, starts[:, 2], stops[:, 2])
    try:
        ranks = np.fromiter(
            map(int, _field_bytes(data, starts[:, 3], stops[:, 3]).tolist()), np.int64, line_index.size
        )
        scores = np.fromiter(
            map(float, _field_bytes(data, starts[:, 4], stops[:, 4]).tolist()), np.float64, line_index.size
        )
    except (ValueError, OverflowError):
        raise NeedsLineReader from None
    if not np.isfinite(scores).all():
        raise NeedsLineReader
    qids = _labels(_field_bytes(data, starts[:, 0], stops[:, 0]))
    tags = _labels(_field_bytes(data, starts[:, 5], stops[:, 5]))
    if limits is not None:
        widths = stops - starts
        if (
            int(widths[:, 0].max()) > limits.qid_chars
            or int(widths[:, 2].max()) > limits.docno_chars
            or int(widths[:, 5].max()) > limits.tag_chars
            or int(ranks.min()) < limits.rank_min
            or int(ranks.max()) > limits.rank_max
        ):
            raise NeedsLineReader
    docnos = docno_bytes.astype(f"U{docno_bytes.itemsize}").tolist()
    return RunBlock(qids, docnos, ranks, scores, tags, line_index.astype(np.int64) + first_line)


def _parse_block(text: str, first_line: int, limits: ColumnLimits | None) -> RunBlock:
    """Columns of the content lines of `text` (whole lines starting at line `first_line`)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    rows = list(map(str.split, lines))
    lengths = list(map(len, rows))
    numbers: np.ndarray | None = None
    if rows and min(lengths) == 6 == max(lengths):
        qids, _, docnos, rank_texts, score_texts, tags = zip(*rows, strict=True)
        if any(qid.startswith("#") for qid in set(qids)):
            rows, numbers = _content_rows(rows, lengths)
    else:
        rows, numbers = _content_rows(rows, lengths)
    if not rows:
        return RunBlock([], [], np.empty(0, np.int64), np.empty(0), [], np.empty(0, np.int64))
    if numbers is not None:
        qids, _, docnos, rank_texts, score_texts, tags = zip(*rows, strict=True)
        numbers = numbers + first_line
    else:
        numbers = np.arange(first_line, first_line + len(rows), dtype=np.int64)
    try:
        ranks = np.fromiter(map(int, rank_texts), dtype=np.int64, count=len(rank_texts))
        scores = np.fromiter(map(float, score_texts), dtype=np.float64, count=len(score_texts))
    except (ValueError, OverflowError):
        raise NeedsLineReader from None
    if not np.isfinite(scores).all():
        raise NeedsLineReader
    if limits is not None:
        if (
            max(map(len, set(qids))) > limits.qid_chars
            or max(map(len, docnos)) > limits.docno_chars
            or max(map(len, set(tags))) > limits.tag_chars
            or int(ranks.min()) < limits.rank_min
            or int(ranks.max()) > limits.rank_max
        ):
            raise NeedsLineReader
    return RunBlock(list(qids), list(docnos), ranks, scores, list(tags), numbers)


def parse_text_block(block: bytes) -> RunBlock:
    """The content lines of a block of whole lines, split as the line reader splits them
    (any UTF-8 text; blank and comment lines skipped); `RunBlock.lines` count from 1."""
    _check_bytes(block, None)
    return _parse_block(_decoded(block), 1, None)


def _content_rows(rows: list[list[str]], lengths: list[int]) -> tuple[list[list[str]], np.ndarray]:
    """Drop blank and comment lines; any other line without six fields is the line reader's."""
    keep = [index for index, row in enumerate(rows) if row and not row[0].startswith("#")]
    if any(lengths[index] != 6 for index in keep):
        raise NeedsLineReader
    return [rows[index] for index in keep], np.asarray(keep, dtype=np.int64)


def iter_run_blocks(
    binary: BinaryIO,
    *,
    block_bytes: int = BLOCK_BYTES,
    max_line_bytes: int | None = None,
    max_bytes: int | None = None,
    limits: ColumnLimits | None = None,
) -> Iterator[RunBlock]:
    """Yield the content lines of a run (a binary stream, already gunzipped) block by block.

    Accepts exactly what `text_lines` + `iter_run` accept (BOM at the start dropped, CRLF
    read, blank and ``#`` lines skipped), plus the caller's `limits`. Raises `NeedsLineReader`
    otherwise, at the latest after the last block (documents listed twice are found there),
    and for a file without any content line.

    Memory: one block, the blocks' columns the caller keeps, and 8 bytes a line.
    """
    line = 1
    total = 0
    keys: list[np.ndarray] = []
    for index, block in enumerate(_byte_blocks(binary, block_bytes, max_line_bytes)):
        total += len(block)
        if max_bytes is not None and total > max_bytes:
            raise NeedsLineReader
        count = _check_bytes(block, max_line_bytes)
        if index == 0 and block.startswith(BOM_BYTES):
            block = block[len(BOM_BYTES) :]
        plain = None
        if not _NOT_PLAIN[np.frombuffer(block, dtype=np.uint8)].any():
            plain = _parse_plain_block(block, line, limits)
        if plain is not None:
            run_block = plain
        else:
            run_block = _parse_block(_decoded(block), line, limits)
        line += count
        if len(run_block):
            pairs = zip(run_block.qids, run_block.docnos, strict=True)
            keys.append(np.fromiter(map(hash, pairs), np.int64, len(run_block)))
            yield run_block
    if not keys:
        raise NeedsLineReader  # the line reader says "the run holds no lines"
    hashes = np.sort(np.concatenate(keys))
    if hashes.size > 1 and bool((hashes[1:] == hashes[:-1]).any()):
        # A document listed twice (or, rarely, two keys with one hash): the line reader decides.
        raise NeedsLineReader


def _decoded(block: bytes) -> str:
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError:
        raise NeedsLineReader from None


def open_binary(path: str | os.PathLike[str], buffer_bytes: int = BLOCK_BYTES) -> BinaryIO:
    """Open `path` for reading bytes, gunzipping (through a `buffer_bytes` buffer) when it
    starts like gzip."""
    filename = os.fspath(path)
    try:
        with open(filename, "rb") as probe:
            compressed = probe.read(2) == _GZIP_MAGIC
        if compressed:
            return io.BufferedReader(gzip.open(filename, "rb"), buffer_size=buffer_bytes)
        return open(filename, "rb")
    except OSError as error:
        raise InputFileError(filename, None, f"cannot read: {error.strerror or error}") from None


__all__ = [
    "BLOCK_BYTES",
    "ColumnLimits",
    "NeedsLineReader",
    "RunBlock",
    "iter_run_blocks",
    "open_binary",
    "parse_text_block",
]
