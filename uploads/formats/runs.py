"""TREC runs in bounded memory, on top of `estimation.formats.trec.iter_run`.

`iter_run` remembers every (qid, docno) of a file to catch a document listed twice, which
grows with the file (about 240 bytes a line). Runs list their queries in contiguous blocks,
so this wrapper hands `iter_run` one query block at a time (line numbers shifted back to the
file's) and only remembers which queries it has finished. A query that comes back after
another one is checked against what the caller has already stored (`stored_docnos`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from estimation.formats.trec import InputFileError, RunLine, iter_run
from labeling.fields import DOCNO_MAX_CHARS, INT32_MAX, INT32_MIN, QID_MAX_CHARS, TAG_MAX_CHARS


def _query_blocks(lines: Iterable[str]) -> Iterator[tuple[int, str | None, list[str]]]:
    """Split lines into (first line number - 1, qid, lines) blocks of one query each."""
    block: list[str] = []
    block_qid: str | None = None
    start = 0
    for number, text in enumerate(lines, start=1):
        head = text.split(None, 1)
        qid = head[0] if head and not head[0].startswith("#") else None
        if qid is not None and block_qid is not None and qid != block_qid:
            yield start, block_qid, block
            block, start = [], number - 1
        if qid is not None:
            block_qid = qid
        block.append(text)
    if block:
        yield start, block_qid, block


def iter_run_bounded(
    lines: Iterable[str],
    filename: str,
    stored_docnos: Callable[[str], set[str]],
) -> Iterator[RunLine]:
    """Validate and yield run lines like `iter_run`, holding one query's lines at a time.

    `stored_docnos(qid)` returns the docnos already stored for a query that reappears after
    another one (the caller flushes its pending rows first); duplicates against them are errors.
    Every line is also checked against the columns it goes to (`_fits_columns`).
    """
    finished: set[str] = set()
    count = 0
    for offset, qid, block in _query_blocks(lines):
        earlier: set[str] = set()
        if qid is not None and qid in finished:
            earlier = stored_docnos(qid)
        for run_line in _shifted(iter_run(block, filename), filename, offset):
            if run_line.docno in earlier:
                where = f"for query {qid!r} (again on line {run_line.line})"
                reason = f"document {run_line.docno!r} listed twice {where}"
                raise InputFileError(filename, run_line.line, reason)
            _fits_columns(run_line, filename)
            count += 1
            yield run_line
        if qid is not None:
            finished.add(qid)
    if count == 0:
        raise InputFileError(filename, None, "the run holds no lines")


def _fits_columns(run_line: RunLine, filename: str) -> None:
    """Refuse a qid, docno or tag longer than its column, or a rank outside a 32-bit integer."""
    for what, value, limit in (
        ("qid", run_line.qid, QID_MAX_CHARS),
        ("docno", run_line.docno, DOCNO_MAX_CHARS),
        ("tag", run_line.tag, TAG_MAX_CHARS),
    ):
        if len(value) > limit:
            raise InputFileError(
                filename, run_line.line, f"{what} longer than {limit} characters (the limit)"
            )
    if not INT32_MIN <= run_line.rank <= INT32_MAX:
        reason = f"rank {run_line.rank} is outside {INT32_MIN}..{INT32_MAX}"
        raise InputFileError(filename, run_line.line, reason)


def _shifted(run_lines: Iterator[RunLine], filename: str, offset: int) -> Iterator[RunLine]:
    """Renumber a block's lines (and its errors) from block-relative to file line numbers."""
    try:
        for run_line in run_lines:
            yield RunLine(
                qid=run_line.qid,
                docno=run_line.docno,
                rank=run_line.rank,
                score=run_line.score,
                tag=run_line.tag,
                line=run_line.line + offset,
            )
    except InputFileError as error:
        if offset == 0 or error.line is None:
            raise
        raise InputFileError(filename, error.line + offset, _shift(error.reason, offset)) from None


def _shift(reason: str, offset: int) -> str:
    """Shift the "(lines a and b)" of a duplicate message by the block's offset."""
    return re.sub(
        r"\(lines (\d+) and (\d+)\)",
        lambda match: f"(lines {int(match.group(1)) + offset} and {int(match.group(2)) + offset})",
        reason,
    )
