"""Blocks of plain ASCII lines as numpy columns, without a Python object per line.

The readers that must be fast on millions of lines (`estimation.formats.run_top`,
`estimation.formats.qrels_fast`) find the fields of a whole block with numpy over its bytes,
gather a column into a fixed-width bytes array (``S<width>``, NUL-padded), and convert it
there: decimal numbers to doubles exactly as ``float()`` reads them, integers checked as
``int()`` checks them, strings hashed for the duplicate check. A block they do not handle here
(a byte where ``str.split`` and ``bytes.split`` could disagree, a comment line, a line of
another width) is refused with None, and its reader takes its general path; so nothing is
ever accepted that the line reader (`estimation.formats.trec`) refuses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# Each byte's class, for bytes.translate: 0 whitespace (what bytes.split() and, on ASCII,
# str.split() split on), 1 part of a field, 2 not plain: NUL (the line reader refuses it), the
# information separators \x1c-\x1f and anything not ASCII (\x85, \xa0, ...), which str.split
# alone treats as whitespace.
_CLASSES = bytes(
    0 if byte in b" \t\n\r\x0b\x0c" else 2 if byte == 0 or 0x1C <= byte <= 0x1F or byte >= 0x80 else 1
    for byte in range(256)
)
_PAD = 64
"""Bytes of padding after a block: fields up to this wide are gathered without a copy."""
_HASH_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd, so its powers mod 2**64 are distinct
_EXACT_MANTISSA = 2**53  # every integer up to here is a double
_POW10_FLOAT = np.array([10.0**k for k in range(23)])  # exact doubles up to 1e22


@dataclass(frozen=True)
class FieldTable:
    """Where the fields of a block's content lines are.

    Attributes
    ----------
    data : ndarray of uint8
        The block's bytes, after one space and followed by spaces.
    starts, widths : ndarray of int64, shape (n, n_fields)
        Offset and length of field ``j`` of content line ``i`` (blank lines hold none).
    """

    data: np.ndarray
    starts: np.ndarray
    widths: np.ndarray

    def __len__(self) -> int:
        return self.starts.shape[0]

    def strings(self, column: int, *, align: int = 1) -> np.ndarray:
        """Field `column` of every line as a NUL-padded ``S<width>`` array, shape (n,), the
        width a multiple of `align` (8 lets `string_hashes` read whole 64-bit words)."""
        starts, widths = self.starts[:, column], self.widths[:, column]
        width = -(-max(int(widths.max(initial=0)), 1) // align) * align
        padded = self.data if width <= _PAD else np.concatenate((self.data, np.zeros(width, np.uint8)))
        chars = sliding_window_view(padded, width)[starts]  # one copied row per line
        chars *= np.arange(width) < widths[:, None]  # the next fields' bytes -> NUL
        return chars.view(f"S{width}").ravel()


def plain_fields(block: bytes, n_fields: int) -> FieldTable | None:
    """The fields of `block` (whole lines), or None if its reader must take the general path.

    None unless every byte is ASCII other than NUL and ``\\x1c``-``\\x1f``, every line holds
    exactly `n_fields` whitespace-separated fields or none, and no line is a ``#`` comment.
    """
    padded = b" " + block + b" " * _PAD
    classes = padded.translate(_CLASSES)
    if b"\x02" in classes:
        return None
    data = np.frombuffer(padded, dtype=np.uint8)
    # Field boundaries alternate start, stop (the padding is whitespace); a stop is exclusive.
    inside = np.frombuffer(classes, dtype=bool)  # 0 or 1 once no byte is of class 2
    edges = np.flatnonzero(inside[1:] != inside[:-1]) + 1
    field_starts, field_stops = edges[0::2], edges[1::2]
    line_ends = np.append(np.flatnonzero(data == 10), data.size)
    per_line = np.diff(np.searchsorted(field_starts, line_ends), prepend=0)
    if not bool(((per_line == 0) | (per_line == n_fields)).all()):
        return None
    starts = field_starts.reshape(-1, n_fields)
    widths = field_stops.reshape(-1, n_fields) - starts
    if bool((data[starts[:, 0]] == ord("#")).any()):
        return None
    return FieldTable(data, starts, widths)


def _chars(strings: np.ndarray) -> np.ndarray:
    return strings.view(np.uint8).reshape(strings.size, strings.itemsize)


def decimal_values(strings: np.ndarray) -> np.ndarray:
    """``float()`` of every entry of a NUL-padded ``S`` array, shape (n,) float64.

    Entries of the form ``[+-]digits[.digits]`` whose digits, read as one integer, stay below
    2**53 with at most 22 after the point are computed with numpy as that integer over a power
    of ten: both are exact doubles, and one IEEE division rounds correctly, so the result is
    the correctly rounded value ``float()`` returns (Clinger 1990, the fast path of every
    correct strtod). Other entries (exponents, longer mantissas) go through ``float()``.

    Raises
    ------
    ValueError
        An entry ``float()`` refuses.
    """
    columns = np.ascontiguousarray(_chars(strings).T)  # one row per character position
    n = strings.size
    mantissa = np.zeros(n, dtype=np.int64)
    n_digits = np.zeros(n, dtype=np.int64)
    fraction = np.zeros(n, dtype=np.int64)
    seen_dot = np.zeros(n, dtype=bool)
    exact = np.ones(n, dtype=bool)
    negative = columns[0] == ord("-")
    for position, chars in enumerate(columns):
        value = chars - np.uint8(ord("0"))  # a digit's value; >= 10 (wrapped) for anything else
        digit = value < 10
        dot = chars == ord(".")
        other = ~(digit | dot | (chars == 0))
        if position == 0:
            other &= ~(negative | (chars == ord("+")))
        exact &= ~other & ~(dot & seen_dot)
        # At most 18 digits keep the int64 exact; more leave the entry to float().
        mantissa = np.where(digit, mantissa * 10 + value, mantissa)
        n_digits += digit
        fraction += digit & seen_dot
        seen_dot |= dot
    exact &= (n_digits >= 1) & (n_digits <= 18) & (mantissa <= _EXACT_MANTISSA) & (fraction <= 22)
    values = mantissa.astype(np.float64) / _POW10_FLOAT[np.minimum(fraction, 22)]
    values = np.where(negative, -values, values)
    others = np.flatnonzero(~exact)
    if others.size:
        values[others] = [float(text) for text in strings[others].tolist()]
    return values


def check_integers(strings: np.ndarray) -> None:
    """Raise ValueError unless ``int()`` reads every entry of a NUL-padded ``S`` array."""
    chars = _chars(strings)
    digit = (chars >= ord("0")) & (chars <= ord("9"))
    allowed = digit | (chars == 0)
    allowed[:, 0] |= (chars[:, 0] == ord("+")) | (chars[:, 0] == ord("-"))
    plain = allowed.all(axis=1) & digit.any(axis=1)
    for text in strings[~plain].tolist():
        int(text)  # "1_000", say: int() decides


def string_hashes(strings: np.ndarray) -> np.ndarray:
    """A 64-bit hash per entry of a NUL-padded ``S`` array whose width is a multiple of 8.

    For duplicate checks: equal strings have equal hashes (their padding is NUL, and a field
    holds no NUL); distinct ones collide rarely, and never when at most 8 bytes wide. A caller
    treats a collision as a possible duplicate (its general path decides).
    """
    if strings.itemsize % 8:
        raise ValueError(f"string_hashes needs a width that is a multiple of 8, got {strings.itemsize}")
    words = strings.view(np.uint64).reshape(strings.size, strings.itemsize // 8)
    powers = np.cumprod(np.full(words.shape[1], _HASH_BASE, dtype=np.uint64))
    return words @ powers


def runs_of_equal(strings: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """The values of consecutive runs of equal entries and where each run starts.

    A run file lists a query's lines together, so its qid and tag columns hold few runs; their
    values become Python objects once per run, not once per line.
    """
    if strings.size == 0:
        return [], np.empty(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], strings[1:] != strings[:-1])))
    return strings[starts].tolist(), starts


__all__ = [
    "FieldTable",
    "check_integers",
    "decimal_values",
    "plain_fields",
    "runs_of_equal",
    "string_hashes",
]
