"""Document files: JSONL with docno, title, text, url, length, streamed one line at a time."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from estimation.trec import InputFileError
from labeling.formats.topics import _json_object, _text_field

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
        docno = _text_field(record, "docno", filename, number).strip()
        if not docno:
            raise InputFileError(filename, number, 'missing "docno"')
        if any(character.isspace() for character in docno):
            raise InputFileError(filename, number, f"docno {docno!r} contains whitespace")
        if len(docno) > 200:
            raise InputFileError(filename, number, "docno longer than 200 characters")
        url = _text_field(record, "url", filename, number).strip()
        if url:
            try:
                _url_valid(url)
            except ValidationError:
                raise InputFileError(filename, number, f"url {url[:80]!r} is not an http(s) URL") from None
        text = _text_field(record, "text", filename, number)
        length_value = record.get("length")
        if length_value is None:
            length = len(text.split()) if text else None
        elif isinstance(length_value, int) and not isinstance(length_value, bool) and length_value >= 0:
            length = length_value
        else:
            raise InputFileError(filename, number, f"length {length_value!r} is not a whole number >= 0")
        if docno in seen:
            raise InputFileError(
                filename, number, f"docno {docno!r} given twice (lines {seen[docno]} and {number})"
            )
        seen[docno] = number
        yield DocumentRecord(
            docno=docno,
            title=_text_field(record, "title", filename, number).strip(),
            text=text,
            url=url,
            length=length,
            line=number,
        )
    if not seen:
        raise InputFileError(filename, None, "the file holds no documents")
