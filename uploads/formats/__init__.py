"""Readers for uploaded files: TREC topics, JSONL topics and documents, and a bounded-memory
wrapper around the TREC run reader of `estimation.formats.trec`. Every problem raises
`estimation.formats.trec.InputFileError` (file, line, reason)."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from typing import BinaryIO

from django.conf import settings

from estimation.formats.trec import InputFileError, text_lines

_GZIP_MAGIC = b"\x1f\x8b"


def upload_lines(filename: str, stream: BinaryIO, *, count_lines: bool = True) -> Iterator[str]:
    """Yield the text lines of an uploaded binary stream, gunzipping when it starts like gzip.

    Streams one line at a time under the upload limits (settings LABELING_UPLOAD_MAX_LINE_BYTES,
    LABELING_UPLOAD_MAX_BYTES counted after decompression, and, unless `count_lines` is False,
    LABELING_UPLOAD_MAX_LINES), with the rules every text file shares
    (`estimation.formats.trec.text_lines`: BOM dropped, CRLF read, NUL refused).
    """
    # A Django UploadedFile wraps the real file object (BytesIO or a temporary file).
    stream = getattr(stream, "file", stream)
    if hasattr(stream, "seek"):
        stream.seek(0)
    head = stream.read(2)
    if hasattr(stream, "seek"):
        stream.seek(0)
        raw: BinaryIO = stream
    else:
        # _Prefixed is a RawIOBase (readinto); typeshed's BufferedReader wants its own stream type.
        raw = io.BufferedReader(_Prefixed(head, stream))  # type: ignore[type-var]
    binary: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if head == _GZIP_MAGIC else raw  # type: ignore[assignment]  # a GzipFile reads like the binary stream
    lines = text_lines(
        binary,
        filename,
        max_line_bytes=settings.LABELING_UPLOAD_MAX_LINE_BYTES,
        max_bytes=settings.LABELING_UPLOAD_MAX_BYTES,
    )
    if not count_lines:
        yield from lines
        return
    max_lines = settings.LABELING_UPLOAD_MAX_LINES
    for number, line in enumerate(lines, start=1):
        if number > max_lines:
            reason = f"more than {max_lines} lines, the limit on one upload (LABELING_UPLOAD_MAX_LINES)"
            raise InputFileError(filename, number, reason)
        yield line


class _Prefixed(io.RawIOBase):
    """A raw stream that replays bytes already read from a non-seekable stream."""

    def __init__(self, prefix: bytes, rest: BinaryIO) -> None:
        self._prefix = prefix
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]  # RawIOBase.readinto takes any writable buffer; we fill a bytearray
        if self._prefix:
            count = min(len(buffer), len(self._prefix))
            buffer[:count] = self._prefix[:count]
            self._prefix = self._prefix[count:]
            return count
        data = self._rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def sniff_format(filename: str, stream: BinaryIO, candidates: tuple[str, ...]) -> str:
    """Guess an upload's format from its first meaningful line: "jsonl" or "trec"."""
    stream = getattr(stream, "file", stream)
    for line in upload_lines(filename, stream):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        guess = "jsonl" if text.startswith("{") else "trec"
        if hasattr(stream, "seek"):
            stream.seek(0)
        if guess not in candidates:
            raise InputFileError(
                filename, None, f"cannot tell the format; give one of {', '.join(candidates)}"
            )
        return guess
    raise InputFileError(filename, None, "the file is empty")


__all__ = ["InputFileError", "sniff_format", "upload_lines"]
