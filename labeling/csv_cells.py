"""CSV that is safe to open in a spreadsheet: every CSV the app produces is written here.

Judge names, models, rationales (an LLM's own text), notes, ids and file names are written by
people or programs outside the operator's control, and a spreadsheet runs a cell that starts
with ``=``, ``+``, ``-`` or ``@`` (or a tab or carriage return before one) as a formula: CSV
injection. As OWASP recommends, such a text cell gets a leading single quote, which the
spreadsheet shows as text. Numbers stay numbers: an int or a float, and a text cell that is
one plain decimal number (``-0.25``, ``-1e-05``, as exports write floats with `repr`), are
written as they are, since no spreadsheet reads a formula in them; ``-1+2`` is not one number
and gets its quote.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from labeling.budgets import PLAIN_DECIMAL

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


class _TextBuffer(Protocol):
    def write(self, text: str, /) -> int: ...


def csv_cell(value: Any) -> Any:
    """`value` as a CSV cell: text starting with a formula character gets a leading single
    quote unless it is one decimal number; numbers and everything else pass unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES) and not PLAIN_DECIMAL.fullmatch(value):
        return "'" + value
    return value


class CsvWriter:
    """`csv.writer` whose rows pass through `csv_cell`."""

    def __init__(self, buffer: _TextBuffer, **options: Any) -> None:
        self._writer = csv.writer(buffer, **options)

    def writerow(self, row: Iterable[Any]) -> None:
        self._writer.writerow([csv_cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


class CsvDictWriter:
    """`csv.DictWriter` whose values pass through `csv_cell` (the header is the app's own)."""

    def __init__(self, buffer: _TextBuffer, fieldnames: Sequence[str], **options: Any) -> None:
        self._writer = csv.DictWriter(buffer, fieldnames=fieldnames, **options)

    def writeheader(self) -> None:
        self._writer.writeheader()

    def writerow(self, row: Mapping[str, Any]) -> None:
        self._writer.writerow({key: csv_cell(value) for key, value in row.items()})


CSV_CHUNK_CHARS = 64 * 1024
"""How much text a streamed CSV export yields at a time: one write per chunk, not one per row."""


def csv_stream(header: Sequence[str], rows: Iterable[Iterable[Any]], **options: Any) -> Iterator[str]:
    """Formula-safe CSV text of `rows` under `header`, streamed: the header at once, then about
    CSV_CHUNK_CHARS at a time, so a download starts at once and memory stays bounded whatever
    the number of rows."""
    buffer = io.StringIO()
    writer = CsvWriter(buffer, **options)
    writer.writerow(header)
    return _chunked(buffer, writer.writerow, rows)


def csv_dict_stream(
    fields: Sequence[str], rows: Iterable[Mapping[str, Any]], **options: Any
) -> Iterator[str]:
    """`csv_stream` for rows given as dicts (`fields` is the header)."""
    buffer = io.StringIO()
    writer = CsvDictWriter(buffer, fields, **options)
    writer.writeheader()
    return _chunked(buffer, writer.writerow, rows)


def _chunked(buffer: io.StringIO, write: Callable[[Any], None], rows: Iterable[Any]) -> Iterator[str]:
    yield buffer.getvalue()  # the header
    buffer.seek(0)
    buffer.truncate()
    for row in rows:
        write(row)
        if buffer.tell() >= CSV_CHUNK_CHARS:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()
