"""Topic files: TREC SGML-like topic files and JSONL, streamed one topic at a time."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from estimation.formats.trec import InputFileError
from labeling.fields import QID_MAX_CHARS, checked_text, text_max_chars, title_max_chars

_FIELD_TAGS = {"num": "qid", "title": "title", "desc": "description", "narr": "narrative"}
_TAG = re.compile(r"<\s*(/?)\s*(top|num|title|desc|narr)\s*>", re.IGNORECASE)
# TREC topic files prefix field text with a label, e.g. "Number: 301" or "Description:".
_LABELS = {
    "qid": re.compile(r"^\s*number\s*:\s*", re.IGNORECASE),
    "title": re.compile(r"^\s*topic\s*:\s*", re.IGNORECASE),
    "description": re.compile(r"^\s*description\s*:\s*", re.IGNORECASE),
    "narrative": re.compile(r"^\s*narrative\s*:\s*", re.IGNORECASE),
}


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """One topic as read from a file."""

    qid: str
    title: str
    description: str
    narrative: str
    line: int


def _clean(field: str, text: str) -> str:
    return " ".join(_LABELS[field].sub("", text, count=1).split())


def iter_topics_trec(lines: Iterable[str], filename: str = "<topics>") -> Iterator[TopicRecord]:
    """Yield the topics of a TREC topic file (<top><num><title><desc><narr></top>, closing
    field tags optional, as in the classic TREC files)."""
    in_top = False
    top_line = 0
    fields: dict[str, list[str]] = {}
    current: str | None = None
    seen: dict[str, int] = {}
    number = 0
    for number, text in enumerate(lines, start=1):
        position = 0
        for match in _TAG.finditer(text):
            chunk = text[position : match.start()]
            if current is not None:
                _append(fields, current, chunk, filename, number)
            elif chunk.strip() and not in_top:
                raise InputFileError(filename, number, f"text outside <top>: {chunk.strip()[:40]!r}")
            position = match.end()
            closing, tag = match.group(1) == "/", match.group(2).lower()
            if tag == "top" and not closing:
                if in_top:
                    raise InputFileError(
                        filename, number, f"<top> opened again before </top> (line {top_line})"
                    )
                in_top, top_line, fields, current = True, number, {}, None
            elif tag == "top":
                if not in_top:
                    raise InputFileError(filename, number, "</top> without <top>")
                record = _finish(fields, filename, top_line, number)
                if record.qid in seen:
                    reason = f"topic {record.qid!r} given twice (lines {seen[record.qid]} and {top_line})"
                    raise InputFileError(filename, top_line, reason)
                seen[record.qid] = top_line
                yield record
                in_top, current = False, None
            elif not in_top:
                raise InputFileError(filename, number, f"<{tag}> outside <top>")
            elif closing:
                current = None
            else:
                current = _FIELD_TAGS[tag]
                if current in fields:
                    raise InputFileError(filename, number, f"<{tag}> given twice in one topic")
                fields[current] = []
        rest = text[position:]
        if current is not None:
            _append(fields, current, rest, filename, number)
        elif rest.strip() and not in_top:
            raise InputFileError(filename, number, f"text outside <top>: {rest.strip()[:40]!r}")
    if in_top:
        raise InputFileError(filename, top_line, "<top> is never closed")
    if not seen:
        raise InputFileError(filename, None, "no <top> topics found")


def _field_limit(name: str) -> int:
    return {"qid": QID_MAX_CHARS, "title": title_max_chars()}.get(name, text_max_chars())


def _append(fields: dict[str, list[str]], name: str, chunk: str, filename: str, number: int) -> None:
    """Add a chunk of a field's text, refusing a field that outgrows its cap (a topic file's
    field may run over many lines; without this a huge one would be held whole)."""
    parts = fields[name]
    parts.append(chunk)
    limit = _field_limit(name)
    # Whitespace is collapsed later, so twice the cap (plus slack) still reads a legal field.
    if sum(len(part) for part in parts) > 2 * limit + 1024:
        raise InputFileError(filename, number, f"{name} longer than {limit} characters (the limit)")


def _finish(fields: dict[str, list[str]], filename: str, top_line: int, number: int) -> TopicRecord:
    values = {
        name: checked_text(_clean(name, " ".join(parts)), name, _field_limit(name), filename, top_line)
        for name, parts in fields.items()
    }
    qid = values.get("qid", "")
    if not qid:
        raise InputFileError(filename, top_line, "topic without a <num>")
    if " " in qid:
        raise InputFileError(filename, top_line, f"topic number {qid!r} contains spaces")
    return TopicRecord(
        qid=qid,
        title=values.get("title", ""),
        description=values.get("description", ""),
        narrative=values.get("narrative", ""),
        line=top_line,
    )


def _json_object(text: str, filename: str, number: int) -> dict[str, object]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputFileError(filename, number, f"not valid JSON: {error.msg}") from None
    except (ValueError, RecursionError) as error:
        # An integer of more than 4300 digits (ValueError), or nesting deeper than the
        # interpreter's recursion limit.
        reason = (
            "not valid JSON: nested too deeply"
            if isinstance(error, RecursionError)
            else f"not valid JSON: {error}"
        )
        raise InputFileError(filename, number, reason) from None
    if not isinstance(value, dict):
        raise InputFileError(filename, number, "each line must be a JSON object")
    return value


def _text_field(
    record: dict[str, object], key: str, filename: str, number: int, max_chars: int | None = None
) -> str:
    """A string field (an integer is read as its digits, as ids often are); `max_chars`
    defaults to the cap on free text. NUL and lone surrogates are refused."""
    value = record.get(key, "")
    if value is None:
        return ""
    # bool is an int subclass: {"id": true} must not become topic "True".
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputFileError(filename, number, f"field {key!r} must be a string or an integer")
    limit = text_max_chars() if max_chars is None else max_chars
    if isinstance(value, int):
        value = str(value)
    return checked_text(value, f"field {key!r}", limit, filename, number)


def iter_topics_jsonl(lines: Iterable[str], filename: str = "<topics>") -> Iterator[TopicRecord]:
    """Yield topics from JSONL: {"id" (or "qid"), "title", "description", "narrative"} per line."""
    seen: dict[str, int] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        record = _json_object(text, filename, number)
        qid = _text_field(record, "id", filename, number, QID_MAX_CHARS) or _text_field(
            record, "qid", filename, number, QID_MAX_CHARS
        )
        qid = qid.strip()
        if not qid:
            raise InputFileError(filename, number, 'missing "id" (the topic number)')
        if any(character.isspace() for character in qid):
            raise InputFileError(filename, number, f"topic id {qid!r} contains whitespace")
        if qid in seen:
            raise InputFileError(
                filename, number, f"topic {qid!r} given twice (lines {seen[qid]} and {number})"
            )
        seen[qid] = number
        yield TopicRecord(
            qid=qid,
            title=_text_field(record, "title", filename, number, title_max_chars()).strip(),
            description=_text_field(record, "description", filename, number).strip(),
            narrative=_text_field(record, "narrative", filename, number).strip(),
            line=number,
        )
    if not seen:
        raise InputFileError(filename, None, "the file holds no topics")
