"""Topic files: TREC SGML-like topic files and JSONL, streamed one topic at a time."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from estimation.trec import InputFileError

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
                fields[current].append(chunk)
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
            fields[current].append(rest)
        elif rest.strip() and not in_top:
            raise InputFileError(filename, number, f"text outside <top>: {rest.strip()[:40]!r}")
    if in_top:
        raise InputFileError(filename, top_line, "<top> is never closed")
    if not seen:
        raise InputFileError(filename, None, "no <top> topics found")


def _finish(fields: dict[str, list[str]], filename: str, top_line: int, number: int) -> TopicRecord:
    values = {name: _clean(name, " ".join(parts)) for name, parts in fields.items()}
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
    if not isinstance(value, dict):
        raise InputFileError(filename, number, "each line must be a JSON object")
    return value


def _text_field(record: dict[str, object], key: str, filename: str, number: int) -> str:
    value = record.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str | int):
        raise InputFileError(filename, number, f"field {key!r} must be a string")
    return str(value)


def iter_topics_jsonl(lines: Iterable[str], filename: str = "<topics>") -> Iterator[TopicRecord]:
    """Yield topics from JSONL: {"id" (or "qid"), "title", "description", "narrative"} per line."""
    seen: dict[str, int] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        record = _json_object(text, filename, number)
        qid = _text_field(record, "id", filename, number) or _text_field(record, "qid", filename, number)
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
            title=_text_field(record, "title", filename, number).strip(),
            description=_text_field(record, "description", filename, number).strip(),
            narrative=_text_field(record, "narrative", filename, number).strip(),
            line=number,
        )
    if not seen:
        raise InputFileError(filename, None, "the file holds no topics")
