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
from collections.abc import Iterable, Mapping, Sequence
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
