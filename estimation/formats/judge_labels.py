"""Streaming readers for the relevance labels of a model judge (an LLM, a cross-encoder).

As in `estimation.formats.trec`, the reader comes in two layers: `iter_judge_labels(lines,
filename)` validates one line at a time and yields a frozen `JudgeLabelLine` carrying its
1-based line number; `read_judge_labels(path)` opens a path (gzip detected from the file's
first bytes) and collects the labels by (qid, docno). Every problem raises `InputFileError`,
whose text is ``FILE:LINE: reason``.

Formats (detected from the first content line)
----------------------------------------------
qrels      ``qid iter docid grade``, exactly four fields separated by any whitespace, an
           integer grade; ``iter`` is ignored. Detected when the first content line is
           neither JSON nor a BEIR header.
jsonl      One JSON object per line, detected by a first content line opening with ``{``:
           ``{"qid": ..., "docid": ..., "grade": 2}`` or ``{..., "probs": [p_0, p_1, ...]}``,
           a distribution over grades 0..len-1. The Hugging Face / BEIR names ``"query-id"``,
           ``"corpus-id"`` and ``"score"`` (the grade) are read too, as is ``"docno"`` for
           ``"docid"``; exactly one of ``grade``, ``score`` and ``probs``. Ids are JSON
           strings or integers (BEIR files often have integer ids; they are read as text).
           A grade is a JSON integer (``2.0`` and ``true`` are refused). Optional:
           ``"rationale"`` (a string), ``"seconds"`` and ``"cost"`` (numbers >= 0); null
           counts as absent. Other keys are ignored. NaN and Infinity are not JSON and are
           refused, as is a number no float holds (an integer of hundreds of digits).
beir-tsv   A header naming the columns ``query-id``, ``corpus-id`` and ``score`` separated by
           tabs (in any order; other columns are ignored), then one row per label, fields
           separated by tabs, as many as in the header. The header is required: a
           tab-separated first line of three fields that is not a header is refused.

Rules for every format
----------------------
- A grade is >= 0: unlike a human assessor's qrels (-1 and -2 for junk or spam), a model
  has no junk mark. With `y_max` given (the campaign's top grade), a grade above it is
  refused and a ``probs`` row must have exactly ``y_max + 1`` entries.
- ``probs`` holds at least two finite, non-negative numbers summing to 1 within
  `LABEL_SUM_TOLERANCE` (then rescaled to sum to 1, as `iter_labels` does); every probs row of
  a file has the same width.
- A (qid, docid) labelled twice is an error naming both lines.
- A qid holds 1 to `QID_MAX_CHARS` characters, a docid 1 to `DOCNO_MAX_CHARS`, neither a NUL
  character nor a lone surrogate (what a database column can store).
- A file with no label is an error.

Blank lines and lines whose first non-blank character is ``#`` are skipped in every format. A
UTF-8 byte-order mark at the start is dropped and CRLF line ends are read like LF.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from estimation.formats.trec import (
    LABEL_SUM_TOLERANCE,
    QRELS_FIELDS,
    InputFileError,
    _field_count,
    _integer,
    _twice,
    content_texts,
    iter_lines,
)

JUDGE_LABEL_FORMATS = ("qrels", "jsonl", "beir-tsv")
BEIR_COLUMNS = ("query-id", "corpus-id", "score")
# These match the web application's identifier columns (labeling.fields reads them from
# the models, Topic.qid and Document.docno); estimation/ cannot import Django to read them.
QID_MAX_CHARS = 64
DOCNO_MAX_CHARS = 200
_QID_KEYS = ("qid", "query-id")
_DOCID_KEYS = ("docid", "docno", "corpus-id")
_GRADE_KEYS = ("grade", "score", "probs")


@dataclass(frozen=True, slots=True)
class JudgeLabelLine:
    """One label of a model judge: a grade, or a distribution over grades 0..len(probs)-1.

    Exactly one of `grade` and `probs` is set. `rationale`, `seconds` (the time the judge
    took) and `cost` are given by JSONL files only, and None when absent.
    """

    qid: str
    docno: str
    grade: int | None
    probs: tuple[float, ...] | None
    rationale: str | None
    seconds: float | None
    cost: float | None
    line: int

    def expected_grade(self) -> float:
        """The grade, or the mean grade ``sum_y y p(y)`` of the distribution."""
        if self.grade is not None:
            return float(self.grade)
        assert self.probs is not None
        return math.fsum(y * p for y, p in enumerate(self.probs))


def detect_judge_label_format(first_content_line: str) -> str:
    """The format of a judge labels file, one of `JUDGE_LABEL_FORMATS`, from its first content line.

    Raises
    ------
    ValueError
        The line is three tab-separated fields that are not a BEIR header (a BEIR file
        without its header, whose columns cannot be told apart).
    """
    text = first_content_line.strip()
    if text.startswith(("{", "[")):
        return "jsonl"
    fields = text.split()
    if any(name in fields for name in BEIR_COLUMNS[:2]):
        return "beir-tsv"
    if "\t" in text and len(text.split("\t")) == 3:
        raise ValueError(
            "three tab-separated fields but no header: a BEIR file starts with the header "
            "query-id<TAB>corpus-id<TAB>score"
        )
    return "qrels"


def iter_judge_labels(
    lines: Iterable[str | bytes],
    filename: str = "<judge labels>",
    *,
    y_max: int | None = None,
    fmt: str | None = None,
) -> Iterator[JudgeLabelLine]:
    """Validate and yield the labels of a model judge (see the module docstring for the formats).

    Parameters
    ----------
    lines : iterable of str or bytes
        The file's lines, e.g. an open text file or `iter_lines(path)`.
    filename : str
        Used in error messages only.
    y_max : int, optional
        The campaign's top grade: grades above it are refused and probs rows must have
        ``y_max + 1`` entries.
    fmt : str, optional
        One of `JUDGE_LABEL_FORMATS`; detected from the first content line when None.

    Raises
    ------
    InputFileError
        Any breach of the rules in the module docstring, naming the line (or, for a file
        with no label, naming none).
    ValueError
        `fmt` is not a known format, or `y_max` is below 1.
    """
    if fmt is not None and fmt not in JUDGE_LABEL_FORMATS:
        known = ", ".join(JUDGE_LABEL_FORMATS)
        raise ValueError(f"unknown judge label format {fmt!r}: expected one of {known}")
    if y_max is not None and y_max < 1:
        raise ValueError(f"y_max must be at least 1, found {y_max}")
    check = _Checks(filename, y_max)
    columns: dict[str, int] | None = None
    width = 0
    for number, text in content_texts(lines, filename):
        if fmt is None:
            try:
                fmt = detect_judge_label_format(text)
            except ValueError as error:
                raise InputFileError(filename, number, str(error)) from None
        if fmt == "qrels":
            fields = text.split()
            _field_count(fields, QRELS_FIELDS, filename, number)
            qid, _, docno, grade_text = fields
            label = check.label(number, qid, docno, _integer(grade_text, "grade", filename, number))
        elif fmt == "jsonl":
            label = check.json_label(number, text)
        elif columns is None:
            columns, width = _beir_header(text, filename, number)
            continue
        else:
            fields = [field.strip() for field in text.rstrip("\r\n").split("\t")]
            if len(fields) != width:
                reason = f"expected {width} tab-separated fields (as in the header), found {len(fields)}"
                raise InputFileError(filename, number, reason)
            qid, docno = fields[columns["query-id"]], fields[columns["corpus-id"]]
            grade = _integer(fields[columns["score"]], "score", filename, number)
            label = check.label(number, qid, docno, grade)
        yield label
    if not check.first_line_of:
        raise InputFileError(filename, None, "the file holds no labels")


def read_judge_labels(
    path: str | os.PathLike[str], *, y_max: int | None = None
) -> dict[tuple[str, str], JudgeLabelLine]:
    """Read a judge labels file (plain or gzip) into (qid, docno) -> label; see `iter_judge_labels`."""
    filename = os.fspath(path)
    return {
        (label.qid, label.docno): label
        for label in iter_judge_labels(iter_lines(filename), filename, y_max=y_max)
    }


# ---------------------------------------------------------------------------------------------
# Helpers


def _beir_header(text: str, filename: str, number: int) -> tuple[dict[str, int], int]:
    """Column name -> index of the BEIR columns in a header line, and its field count."""
    names = [name.strip() for name in text.rstrip("\r\n").split("\t")]
    expected = "query-id<TAB>corpus-id<TAB>score, in any order"
    if len(names) == 1:
        raise InputFileError(filename, number, f"the header is not tab-separated (expected {expected})")
    columns: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in BEIR_COLUMNS and columns.setdefault(name, index) != index:
            raise InputFileError(filename, number, f"column {name!r} twice in the header")
    missing = [name for name in BEIR_COLUMNS if name not in columns]
    if missing:
        raise InputFileError(filename, number, f"the header lacks {missing[0]!r} (expected {expected})")
    return columns, len(names)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _json_shown(value: Any) -> str:
    shown = json.dumps(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _json_kind(value: Any) -> str:
    kinds = {bool: "a boolean", type(None): "null", float: "a number", list: "an array", dict: "an object"}
    return kinds.get(type(value), "a string" if isinstance(value, str) else "a number")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number_shown(value: int | float) -> str:
    """A number for an error message: a float as Python writes it (inf), an integer of hundreds
    of digits by its length."""
    shown = repr(value)
    return shown if len(shown) <= 20 else f"{shown[:8]}... ({len(shown)} digits)"


def _finite_float(value: int | float) -> float | None:
    """A JSON number as a float, None when no finite float holds it: JSON integers are
    unbounded, and a 400-digit one overflows `float()` and every comparison with a float."""
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


class _Checks:
    """The rules every format shares, and the state they need: the first line of each
    (qid, docno) and the width of the file's first probs row."""

    def __init__(self, filename: str, y_max: int | None) -> None:
        self.filename = filename
        self.y_max = y_max
        self.first_line_of: dict[tuple[str, str], int] = {}
        self.probs_width: tuple[int, int] | None = None  # (width, line)

    def fail(self, number: int, reason: str) -> InputFileError:
        return InputFileError(self.filename, number, reason)

    def label(
        self,
        number: int,
        qid: str,
        docno: str,
        grade: int | None,
        probs: tuple[float, ...] | None = None,
        rationale: str | None = None,
        seconds: float | None = None,
        cost: float | None = None,
    ) -> JudgeLabelLine:
        self.identifier(number, qid, "qid", QID_MAX_CHARS)
        self.identifier(number, docno, "docid", DOCNO_MAX_CHARS)
        if grade is not None:
            if grade < 0:
                raise self.fail(number, f"grade {_number_shown(grade)} is negative")
            if self.y_max is not None and grade > self.y_max:
                reason = f"grade {_number_shown(grade)} is above {self.y_max}, the campaign's top grade"
                raise self.fail(number, reason)
        earlier = self.first_line_of.setdefault((qid, docno), number)
        if earlier != number:
            raise self.fail(number, _twice(f"document {docno!r} labelled", qid, earlier, number))
        return JudgeLabelLine(qid, docno, grade, probs, rationale, seconds, cost, number)

    def identifier(self, number: int, value: str, what: str, limit: int) -> None:
        if not value:
            raise self.fail(number, f"{what} is empty")
        if len(value) > limit:
            raise self.fail(number, f"{what} longer than {limit} characters (the limit)")
        self.text(number, value, what)

    def text(self, number: int, value: str, what: str) -> None:
        # JSON escapes can spell what no database column stores.
        if "\x00" in value:
            raise self.fail(number, f"{what} contains a NUL character")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise self.fail(number, f"{what} contains a lone surrogate (not valid Unicode text)") from None

    def json_label(self, number: int, text: str) -> JudgeLabelLine:
        try:
            record = json.loads(text.strip(), parse_constant=_refuse_constant)
        except json.JSONDecodeError as error:
            # The decoder's own "line 1 column 12" would contradict the file's line number.
            raise self.fail(number, f"not a JSON object: {error.msg} (column {error.colno})") from None
        except RecursionError:
            raise self.fail(number, "not a JSON object: nested too deeply") from None
        except ValueError as error:  # NaN or Infinity (`_refuse_constant`), an integer too long
            raise self.fail(number, f"not a JSON object: {error}") from None
        if not isinstance(record, dict):
            raise self.fail(number, f"not a JSON object (found {_json_kind(record)})")
        qid = self.json_id(number, record, _QID_KEYS)
        docno = self.json_id(number, record, _DOCID_KEYS)
        given = [key for key in _GRADE_KEYS if record.get(key) is not None]
        if len(given) != 1:
            found = f" (found {' and '.join(repr(key) for key in given)})" if given else ""
            raise self.fail(number, f'give exactly one of "grade", "score" and "probs"{found}')
        key = given[0]
        grade, probs = None, None
        if key == "probs":
            probs = self.probs(number, record[key])
        else:
            value = record[key]
            if isinstance(value, float):
                hint = f" (write {int(value)})" if value.is_integer() else ""
                raise self.fail(number, f'"{key}" {value!r} is not an integer{hint}')
            if isinstance(value, bool) or not isinstance(value, int):
                reason = f'"{key}" {_json_shown(value)} is {_json_kind(value)}, not an integer'
                raise self.fail(number, reason)
            grade = value
        rationale = record.get("rationale")
        if rationale is not None:
            if not isinstance(rationale, str):
                raise self.fail(number, f'"rationale" is {_json_kind(rationale)}, not a string')
            self.text(number, rationale, '"rationale"')
        seconds = self.json_amount(number, record, "seconds")
        cost = self.json_amount(number, record, "cost")
        return self.label(number, qid, docno, grade, probs, rationale, seconds, cost)

    def json_id(self, number: int, record: dict[str, Any], keys: tuple[str, ...]) -> str:
        given = [key for key in keys if key in record]
        names = ", ".join(f'"{key}"' for key in keys)
        if not given:
            raise self.fail(number, f"no {keys[0]}: give one of {names}")
        if len(given) > 1:
            raise self.fail(number, f"give one of {names}, not several (found {', '.join(given)})")
        value = record[given[0]]
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        reason = f'"{given[0]}" is {_json_kind(value)} ({_json_shown(value)}), not a string or an integer'
        raise self.fail(number, reason)

    def json_amount(self, number: int, record: dict[str, Any], key: str) -> float | None:
        value = record.get(key)
        if value is None:
            return None
        if not _is_number(value):
            raise self.fail(number, f'"{key}" is {_json_kind(value)}, not a number')
        amount = _finite_float(value)
        if amount is None:
            raise self.fail(number, f'"{key}" {_number_shown(value)} is not finite')
        if amount < 0:
            raise self.fail(number, f'"{key}" {value!r} is negative')
        return amount

    def probs(self, number: int, value: Any) -> tuple[float, ...]:
        if not isinstance(value, list):
            raise self.fail(number, f'"probs" is {_json_kind(value)}, not an array of numbers')
        if len(value) < 2:
            raise self.fail(number, f'"probs" holds {len(value)} entries, fewer than two')
        if self.y_max is not None and len(value) != self.y_max + 1:
            reason = (
                f"expected {self.y_max + 1} probabilities (grades 0 to {self.y_max}, the campaign's), "
                f"found {len(value)}"
            )
            raise self.fail(number, reason)
        if self.probs_width is None:
            self.probs_width = (len(value), number)
        elif len(value) != self.probs_width[0]:
            width, first = self.probs_width
            reason = f"expected {width} probabilities (as on line {first}), found {len(value)}"
            raise self.fail(number, reason)
        probs: list[float] = []
        for p in value:
            if not _is_number(p):
                raise self.fail(number, f"probability {_json_shown(p)} is {_json_kind(p)}, not a number")
            finite = _finite_float(p)
            if finite is None:
                raise self.fail(number, f"probability {_number_shown(p)} is not finite")
            if finite < 0:
                raise self.fail(number, f"probability {p!r} is negative")
            probs.append(finite)
        try:
            total = math.fsum(probs)
        except OverflowError:  # two probabilities of 1e308
            total = math.inf
        if abs(total - 1.0) > LABEL_SUM_TOLERANCE:
            raise self.fail(
                number,
                f"probabilities sum to {total:.9g}, not 1 (rows may be off by at most "
                f"{LABEL_SUM_TOLERANCE:g}, e.g. from rounding to a few decimals; they are rescaled)",
            )
        return tuple(p / total for p in probs)


__all__ = [
    "DOCNO_MAX_CHARS",
    "JUDGE_LABEL_FORMATS",
    "QID_MAX_CHARS",
    "JudgeLabelLine",
    "detect_judge_label_format",
    "iter_judge_labels",
    "read_judge_labels",
]
