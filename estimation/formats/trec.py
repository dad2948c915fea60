"""Streaming readers for the files IR teams already have: TREC runs and qrels, label
distributions and judging costs.

Every reader comes in two layers. ``iter_*(lines, filename)`` is a generator over an
iterable of text (or bytes) lines that validates one line at a time and yields a small frozen
record carrying its 1-based line number, so a caller (the web application's import, say) can
stream an upload without holding it. ``read_*(path)`` opens a path (gzip detected from the
file's first bytes, whatever its name), runs the generator and collects the result. Every
problem raises `InputFileError`, whose text is ``FILE:LINE: reason``.

Formats and rules
-----------------
run      ``qid Q0 docno rank score tag``, fields separated by any whitespace (spaces or tabs).
         Exactly six fields. The second field is not checked (``Q0``, ``0``, ...). ``rank``
         must be an integer but is otherwise ignored: like trec_eval, the ranking of a query
         is its documents ordered by score descending, ties broken by docno descending
         (plain string order), whatever the rank column says (runs number ranks from 0 or 1,
         and some contradict their own scores). A document listed twice for one query is an
         error naming both lines. Scores are read as doubles, as current trec_eval does;
         trec_eval before its float-to-double change (PR #38), and the pytrec-eval-terrier
         wheel, store them as 32-bit floats, which ties scores that agree to ~7 digits
         (MQ2008's ListNet run differs from pytrec_eval on 165 topics for this reason).
         A file is one run; if its lines carry several tags, the first tag names the run
         and all tags are kept in `Run.tags` (trec_eval prints the last line's tag).
         trec_eval ignores text after the sixth field; this reader rejects it, because a
         seventh field usually means a shifted column.
qrels    ``qid iter docno grade``, exactly four fields, integer grade. ``iter`` is ignored.
         Negative grades (TREC uses -1 and -2 for junk or spam) are kept by `iter_qrels` and
         read as 0 by `read_qrels`: trec_eval gives them no gain either. A (qid, docno)
         judged twice is an error naming both lines.
labels   ``qid docno p_0 p_1 ... p_ymax``: the label distribution of one document, the
         probabilities finite, non-negative and summing to 1 within 1e-6, every row of a
         file the same width (at least two probabilities).
costs    ``docno cost``: the cost of judging one document, finite and >= 0.

In every format, blank lines and lines whose first non-blank character is ``#`` are
skipped, as trec_eval does for runs and qrels (a ``#`` inside a docno, as in MS MARCO
passage ids, is an ordinary character). A UTF-8 byte-order mark at the start of a file is
dropped, CRLF line ends are read like LF, and a NUL character is an error (`text_lines`).
A qrels, labels or costs file with no content line is an error, as an empty run is.
"""

from __future__ import annotations

import gzip
import io
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

RUN_FIELDS = ("qid", "Q0", "docno", "rank", "score", "tag")
QRELS_FIELDS = ("qid", "iter", "docno", "grade")
_GZIP_MAGIC = b"\x1f\x8b"
# A byte-order mark some editors put before the first line: dropped, as text and as bytes.
BOM = "\ufeff"
BOM_BYTES = BOM.encode()
LABEL_SUM_TOLERANCE = 1e-4
"""How far a label row may sum from 1 and still be read (then rescaled to sum to 1)."""


class InputFileError(ValueError):
    """A malformed input file: names the file, the 1-based line (None if not line-specific)
    and the reason. ``str()`` gives ``FILE:LINE: reason`` (``FILE: reason`` without a line)."""

    def __init__(self, file: str, line: int | None, reason: str) -> None:
        self.file = file
        self.line = line
        self.reason = reason
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.file}: {self.reason}"
        return f"{self.file}:{self.line}: {self.reason}"

    def __reduce__(self) -> tuple:
        # ValueError pickles its args only; keep the three attributes across processes
        # (a Celery worker re-raising an import error, say).
        return (InputFileError, (self.file, self.line, self.reason))


@dataclass(frozen=True, slots=True)
class RunLine:
    """One line of a TREC run."""

    qid: str
    docno: str
    rank: int
    score: float
    tag: str
    line: int


@dataclass(frozen=True, slots=True)
class QrelsLine:
    """One line of a qrels file; `grade` as written (possibly negative)."""

    qid: str
    docno: str
    grade: int
    line: int


@dataclass(frozen=True)
class LabelLine:
    """One line of a labels file: the grade distribution of (qid, docno)."""

    qid: str
    docno: str
    probabilities: tuple[float, ...]
    line: int


@dataclass(frozen=True)
class CostLine:
    """One line of a costs file."""

    docno: str
    cost: float
    line: int


@dataclass(frozen=True)
class Run:
    """A TREC run, each query's documents in trec_eval's order.

    Attributes
    ----------
    tag : str
        The run name: the tag of the file's first line.
    rankings : dict of str to tuple of str
        qid -> docnos, by score descending then docno descending (the rank column is ignored).
    scores : dict of str to tuple of float
        qid -> the scores, aligned with `rankings`.
    tags : tuple of str
        Every distinct tag in the file, in order of first appearance (usually just `tag`).
    """

    tag: str
    rankings: dict[str, tuple[str, ...]]
    scores: dict[str, tuple[float, ...]] = field(repr=False)
    tags: tuple[str, ...] = ()

    @property
    def n_queries(self) -> int:
        return len(self.rankings)


# ---------------------------------------------------------------------------------------------
# Lines


def text_lines(
    binary: BinaryIO,
    filename: str,
    *,
    max_line_bytes: int | None = None,
    max_bytes: int | None = None,
) -> Iterator[str]:
    """Yield the decoded text lines of a binary stream (plain bytes, or a gzip reader over one).

    The one place every text file (runs, qrels, labels, costs, and the web application's topics
    and documents) is turned into text, so every format obeys the same rules: a UTF-8
    byte-order mark at the start is dropped (editors on Windows write one, and it would
    otherwise become part of the first qid); line ends may be LF or CRLF; a NUL character or
    bytes that are not UTF-8 are refused, naming the line (PostgreSQL cannot store NUL in
    text, and the other database should not take what one refuses).

    `max_line_bytes` and `max_bytes` bound what one line and the whole (decompressed) stream
    may hold. A line is read at most `max_line_bytes` + 1 bytes at a time, so a gzip bomb that
    expands to one huge line is refused after reading just past the limit, never held whole.
    """
    read_line = binary.readline
    limit = -1 if max_line_bytes is None else max_line_bytes + 1
    total = 0
    number = 0
    try:
        while True:
            raw = read_line(limit)
            if not raw:
                return
            number += 1
            if max_line_bytes is not None and len(raw) > max_line_bytes:
                reason = f"line longer than {max_line_bytes} bytes (the limit on one line)"
                raise InputFileError(filename, number, reason)
            total += len(raw)
            if max_bytes is not None and total > max_bytes:
                reason = f"the file is larger than {max_bytes} bytes (decompressed), the limit on one upload"
                raise InputFileError(filename, number, reason)
            if b"\x00" in raw:
                raise InputFileError(filename, number, "contains a NUL character")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputFileError(filename, number, "not valid UTF-8 text") from None
            if number == 1 and text.startswith(BOM):
                text = text[1:]
            yield text
    except (OSError, EOFError) as error:
        # gzip raises BadGzipFile (an OSError) or EOFError on a truncated stream.
        raise InputFileError(filename, number + 1, f"cannot read: {error}") from None


def iter_lines(
    path: str | os.PathLike[str], *, max_line_bytes: int | None = None, max_bytes: int | None = None
) -> Iterator[str]:
    """Yield the text lines of `path`, gunzipping transparently (detected from the magic bytes).

    Raises `InputFileError` when the file cannot be opened, is not valid UTF-8 or holds a NUL
    character (naming the line), or is a corrupt gzip stream; see `text_lines` for the rules
    and the optional limits.
    """
    filename = os.fspath(path)
    try:
        with open(filename, "rb") as probe:
            compressed = probe.read(2) == _GZIP_MAGIC
        # GzipFile's own readline is slow; a buffered reader on top reads lines 2x faster.
        stream = io.BufferedReader(gzip.open(filename, "rb")) if compressed else open(filename, "rb")
    except OSError as error:
        raise InputFileError(filename, None, f"cannot read: {error.strerror or error}") from None
    with stream:
        yield from text_lines(stream, filename, max_line_bytes=max_line_bytes, max_bytes=max_bytes)


def content_texts(lines: Iterable[str | bytes], filename: str) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) for every line that is neither blank nor a comment, the text
    whole (formats that split their own way, JSON and tab-separated rows, start here)."""
    for number, text in enumerate(lines, start=1):
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                raise InputFileError(filename, number, "not valid UTF-8 text") from None
        if number == 1 and text.startswith(BOM):
            # Lines that did not come through `text_lines` (an open text file, a list).
            text = text[1:]
        stripped = text.strip()
        if stripped and not stripped.startswith("#"):
            yield number, text


def _content_lines(lines: Iterable[str | bytes], filename: str) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number, fields) for every line that is neither blank nor a comment."""
    for number, text in content_texts(lines, filename):
        yield number, text.split()


def _twice(subject: str, qid: str | None, earlier: int, number: int) -> str:
    where = "" if qid is None else f" for query {qid!r}"
    return f"{subject} twice{where} (lines {earlier} and {number})"


def _finite_float(text: str, what: str, filename: str, number: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputFileError(filename, number, f"{what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise InputFileError(filename, number, f"{what} {text!r} is not finite")
    return value


def _integer(text: str, what: str, filename: str, number: int) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputFileError(filename, number, f"{what} {text!r} is not an integer") from None


def _field_count(fields: list[str], names: tuple[str, ...], filename: str, number: int) -> None:
    if len(fields) != len(names):
        raise InputFileError(
            filename,
            number,
            f"expected {len(names)} fields ({' '.join(names)}), found {len(fields)}",
        )


# ---------------------------------------------------------------------------------------------
# Runs


def iter_run(lines: Iterable[str | bytes], filename: str = "<run>") -> Iterator[RunLine]:
    """Validate and yield the lines of a TREC run (see the module docstring for the format).

    Parameters
    ----------
    lines : iterable of str or bytes
        The file's lines, e.g. an open text file or `iter_lines(path)`.
    filename : str
        Used in error messages only.

    Raises
    ------
    InputFileError
        Wrong field count, non-integer rank, non-numeric or non-finite score, or a
        document listed twice for one query (the message names both lines).
    """
    for qid, docno, rank, score, tag, number in _run_rows(lines, filename):
        yield RunLine(qid=qid, docno=docno, rank=rank, score=score, tag=tag, line=number)


def _run_rows(lines: Iterable[str | bytes], filename: str) -> Iterator[tuple[str, str, int, float, str, int]]:
    """`iter_run`'s lines as plain tuples (qid, docno, rank, score, tag, line number).

    The loop every run file goes through, a million lines for a large one: the checks are
    written inline (a function call per field was a third of the time), and a helper is called
    only to word an error."""
    first_line_of: dict[tuple[str, str], int] = {}
    remember = first_line_of.setdefault
    field_count = len(RUN_FIELDS)
    isfinite = math.isfinite
    for number, text in content_texts(lines, filename):
        fields = text.split()
        if len(fields) != field_count:
            _field_count(fields, RUN_FIELDS, filename, number)
        qid, _, docno, rank_text, score_text, tag = fields
        try:
            rank = int(rank_text)
        except ValueError:
            rank = _integer(rank_text, "rank", filename, number)
        try:
            score = float(score_text)
        except ValueError:
            score = _finite_float(score_text, "score", filename, number)
        if not isfinite(score):
            _finite_float(score_text, "score", filename, number)
        earlier = remember((qid, docno), number)
        if earlier != number:
            raise InputFileError(filename, number, _twice(f"document {docno!r} listed", qid, earlier, number))
        yield qid, docno, rank, score, tag, number


def run_from_lines(run_lines: Iterable[RunLine], filename: str = "<run>") -> Run:
    """Collect validated run lines into a `Run`, ordering each query as trec_eval does."""
    return _run_from_rows(
        ((line.qid, line.docno, line.rank, line.score, line.tag, line.line) for line in run_lines), filename
    )


def _run_from_rows(rows: Iterable[tuple[str, str, int, float, str, int]], filename: str) -> Run:
    by_query: dict[str, list[tuple[float, str]]] = {}
    tags: dict[str, None] = {}
    last_qid: str | None = None
    last_tag: str | None = None
    entries: list[tuple[float, str]] = []
    for qid, docno, _, score, tag, _ in rows:
        # A run lists each query's lines together: the list is looked up once per query.
        if qid != last_qid:
            entries = by_query.setdefault(qid, [])
            last_qid = qid
        entries.append((score, docno))
        if tag != last_tag:
            tags.setdefault(tag, None)
            last_tag = tag
    if not by_query:
        raise InputFileError(filename, None, "the run holds no lines")
    rankings: dict[str, tuple[str, ...]] = {}
    scores: dict[str, tuple[float, ...]] = {}
    for qid, entries in by_query.items():
        # trec_eval: score descending, then docno descending (strcmp order).
        entries.sort(reverse=True)
        scores[qid] = tuple(score for score, _ in entries)
        rankings[qid] = tuple(docno for _, docno in entries)
    all_tags = tuple(tags)
    return Run(tag=all_tags[0], rankings=rankings, scores=scores, tags=all_tags)


def read_run(path: str | os.PathLike[str]) -> Run:
    """Read a TREC run file (plain or gzip) into a `Run`; see `iter_run` for the rules."""
    filename = os.fspath(path)
    return _run_from_rows(_run_rows(iter_lines(filename), filename), filename)


# ---------------------------------------------------------------------------------------------
# Qrels


def iter_qrels(lines: Iterable[str | bytes], filename: str = "<qrels>") -> Iterator[QrelsLine]:
    """Validate and yield the lines of a qrels file, grades as written.

    Raises
    ------
    InputFileError
        Wrong field count, non-integer grade, a (qid, docno) judged twice, or no judgment
        at all.
    """
    first_line_of: dict[tuple[str, str], int] = {}
    for number, fields in _content_lines(lines, filename):
        _field_count(fields, QRELS_FIELDS, filename, number)
        qid, _, docno, grade_text = fields
        grade = _integer(grade_text, "grade", filename, number)
        earlier = first_line_of.setdefault((qid, docno), number)
        if earlier != number:
            raise InputFileError(filename, number, _twice(f"document {docno!r} judged", qid, earlier, number))
        yield QrelsLine(qid=qid, docno=docno, grade=grade, line=number)
    if not first_line_of:
        raise InputFileError(filename, None, "the qrels hold no judgments")


def qrels_from_lines(
    qrels_lines: Iterable[QrelsLine], filename: str = "<qrels>"
) -> dict[str, dict[str, int]]:
    """Collect qrels lines into qid -> docno -> grade, negative grades read as 0."""
    qrels: dict[str, dict[str, int]] = {}
    for qrels_line in qrels_lines:
        qrels.setdefault(qrels_line.qid, {})[qrels_line.docno] = max(qrels_line.grade, 0)
    if not qrels:
        raise InputFileError(filename, None, "the qrels hold no judgments")
    return qrels


def read_qrels(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """Read a qrels file (plain or gzip) into qid -> docno -> grade (negative grades -> 0)."""
    filename = os.fspath(path)
    return qrels_from_lines(iter_qrels(iter_lines(filename), filename), filename)


# ---------------------------------------------------------------------------------------------
# Labels and costs


def iter_labels(lines: Iterable[str | bytes], filename: str = "<labels>") -> Iterator[LabelLine]:
    """Validate and yield the lines of a labels file: ``qid docno p_0 ... p_ymax``.

    Raises
    ------
    InputFileError
        Fewer than two probabilities, a row wider or narrower than the first, a value that
        is not a finite non-negative number, a row not summing to 1 within
        `LABEL_SUM_TOLERANCE` (1e-4), or a (qid, docno) given twice.

    Notes
    -----
    Files written with a few decimals do not sum to exactly 1 (three grades at 6 decimals
    give 0.999999). A row within `LABEL_SUM_TOLERANCE` of 1 is divided by its sum, so the
    yielded probabilities sum to 1 up to rounding and pass the core's 1e-6 check on theta.
    """
    width: int | None = None
    first_line_of: dict[tuple[str, str], int] = {}
    for number, fields in _content_lines(lines, filename):
        if len(fields) < 4:
            reason = f"expected qid, docno and at least two probabilities, found {len(fields)} fields"
            raise InputFileError(filename, number, reason)
        qid, docno, *probability_texts = fields
        if width is None:
            width = len(probability_texts)
        elif len(probability_texts) != width:
            raise InputFileError(
                filename,
                number,
                f"expected {width} probabilities (as on the first row), found {len(probability_texts)}",
            )
        probabilities = tuple(
            _finite_float(text, "probability", filename, number) for text in probability_texts
        )
        negative = [p for p in probabilities if p < 0]
        if negative:
            raise InputFileError(filename, number, f"probability {negative[0]!r} is negative")
        total = math.fsum(probabilities)
        if abs(total - 1.0) > LABEL_SUM_TOLERANCE:
            raise InputFileError(
                filename,
                number,
                f"probabilities sum to {total:.9g}, not 1 (rows may be off by at most "
                f"{LABEL_SUM_TOLERANCE:g}, e.g. from rounding to a few decimals; they are rescaled)",
            )
        if total != 1.0:
            probabilities = tuple(p / total for p in probabilities)
        earlier = first_line_of.setdefault((qid, docno), number)
        if earlier != number:
            raise InputFileError(filename, number, _twice(f"document {docno!r} given", qid, earlier, number))
        yield LabelLine(qid=qid, docno=docno, probabilities=probabilities, line=number)
    if not first_line_of:
        raise InputFileError(filename, None, "the labels file holds no rows")


def read_labels(path: str | os.PathLike[str]) -> dict[tuple[str, str], tuple[float, ...]]:
    """Read a labels file into (qid, docno) -> probabilities of grades 0..y_max."""
    filename = os.fspath(path)
    labels = {(row.qid, row.docno): row.probabilities for row in iter_labels(iter_lines(filename), filename)}
    if not labels:
        raise InputFileError(filename, None, "the labels file holds no rows")
    return labels


def iter_costs(lines: Iterable[str | bytes], filename: str = "<costs>") -> Iterator[CostLine]:
    """Validate and yield the lines of a costs file: ``docno cost``.

    Raises
    ------
    InputFileError
        Not two fields, a cost that is not a finite number >= 0, or a docno given twice.
    """
    first_line_of: dict[str, int] = {}
    for number, fields in _content_lines(lines, filename):
        _field_count(fields, ("docno", "cost"), filename, number)
        docno, cost_text = fields
        cost = _finite_float(cost_text, "cost", filename, number)
        if cost < 0:
            raise InputFileError(filename, number, f"cost {cost_text!r} is negative")
        earlier = first_line_of.setdefault(docno, number)
        if earlier != number:
            raise InputFileError(filename, number, _twice(f"document {docno!r} given", None, earlier, number))
        yield CostLine(docno=docno, cost=cost, line=number)
    if not first_line_of:
        raise InputFileError(filename, None, "the costs file holds no rows")


def read_costs(path: str | os.PathLike[str]) -> dict[str, float]:
    """Read a costs file into docno -> cost."""
    filename = os.fspath(path)
    costs = {row.docno: row.cost for row in iter_costs(iter_lines(filename), filename)}
    if not costs:
        raise InputFileError(filename, None, "the costs file holds no rows")
    return costs


__all__ = [
    "CostLine",
    "InputFileError",
    "LabelLine",
    "QrelsLine",
    "Run",
    "RunLine",
    "iter_costs",
    "iter_labels",
    "iter_lines",
    "text_lines",
    "iter_qrels",
    "iter_run",
    "qrels_from_lines",
    "read_costs",
    "read_labels",
    "read_qrels",
    "read_run",
    "run_from_lines",
]
