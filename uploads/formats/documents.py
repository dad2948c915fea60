"""Document files: JSONL with docno, title, text, url, length, streamed one line at a time."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from estimation.formats.trec import InputFileError
from labeling.fields import DOCNO_MAX_CHARS, INT32_MAX, URL_MAX_CHARS, title_max_chars
from uploads.formats.topics import _json_object, _text_field

_url_valid = URLValidator(schemes=["http", "https"])


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """One document as read from a file."""

    docno: str
    title: str
    text: str
    url: str
    length: int | None
    line: int


def iter_documents_jsonl(lines: Iterable[str], filename: str = "<documents>") -> Iterator[DocumentRecord]:
    """Yield documents from JSONL: {"docno", "title", "text", "url", "length"} per line.

    Only docno is required; length defaults to the text's word count. The docnos seen are
    kept (about 100 bytes each) to reject a docno given twice.
    """
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record = _json_object(line, filename, number)
        docno = _text_field(record, "docno", filename, number, DOCNO_MAX_CHARS).strip()
        if not docno:
            raise InputFileError(filename, number, 'missing "docno"')
        if any(character.isspace() for character in docno):
            raise InputFileError(filename, number, f"docno {docno!r} contains whitespace")
        url = _text_field(record, "url", filename, number, URL_MAX_CHARS).strip()
        if url:
            try:
                _url_valid(url)
            except ValidationError:
                raise InputFileError(filename, number, f"url {url[:80]!r} is not an http(s) URL") from None
        text = _text_field(record, "text", filename, number)
        length_value = record.get("length")
        if length_value is None:
            length = len(text.split()) if text else None
        elif (
            isinstance(length_value, int)
            and not isinstance(length_value, bool)
            and 0 <= length_value <= INT32_MAX
        ):
            length = length_value
        else:
            shown = repr(length_value)[:40]
            raise InputFileError(filename, number, f"length {shown} is not a whole number in 0..{INT32_MAX}")
        if docno in seen:
            raise InputFileError(
                filename, number, f"docno {docno!r} given twice (lines {seen[docno]} and {number})"
            )
        seen[docno] = number
        yield DocumentRecord(
            docno=docno,
            title=_text_field(record, "title", filename, number, title_max_chars()).strip(),
            text=text,
            url=url,
            length=length,
            line=number,
        )
    if not seen:
        raise InputFileError(filename, None, "the file holds no documents")
