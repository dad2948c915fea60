"""Topic and document texts for judges outside the app (``python -m estimation judge``), in the
formats research collections ship: TSV (``qid<TAB>query``, MS MARCO's ``collection.tsv`` with
``docid<TAB>text``) or JSONL (``{"qid", "title", "description", "narrative"}`` or ``"query"``;
``{"docno"|"docid"|"_id"|"id", "title", "text"|"contents"}``, BEIR's corpus included). Errors
name the file and line."""

from __future__ import annotations

import json
import os
from typing import Any

from estimation.formats.trec import InputFileError, content_texts, iter_lines
from estimation.judges.prompts import DocumentText, TopicText

_DOC_IDS = ("docno", "docid", "_id", "id", "doc_id")
_QUERY_IDS = ("qid", "query_id", "_id", "id")


def read_topic_texts(path: str | os.PathLike[str]) -> dict[str, TopicText]:
    """qid -> the topic's text fields."""
    filename = os.fspath(path)
    topics: dict[str, TopicText] = {}
    for number, text in content_texts(iter_lines(filename), filename):
        if text.lstrip().startswith("{"):
            record = _json_record(text, filename, number)
            qid = _first_id(record, _QUERY_IDS, filename, number)
            title = _text(record, ("title", "query", "text"), filename, number)
            topic = TopicText(
                qid,
                title,
                _text(record, ("description",), filename, number),
                _text(record, ("narrative",), filename, number),
            )
        else:
            qid, query = _tsv(text, filename, number, "qid<TAB>query")
            topic = TopicText(qid, query)
        if not topic.query:
            raise InputFileError(filename, number, f"topic {topic.qid} has no text")
        topics[topic.qid] = topic
    return topics


def read_document_texts(
    path: str | os.PathLike[str], wanted: set[str] | None = None
) -> dict[str, DocumentText]:
    """docno -> the document's title and text (only the wanted ones when given: a collection
    can be far larger than a pool)."""
    filename = os.fspath(path)
    documents: dict[str, DocumentText] = {}
    for number, text in content_texts(iter_lines(filename), filename):
        if text.lstrip().startswith("{"):
            record = _json_record(text, filename, number)
            docno = _first_id(record, _DOC_IDS, filename, number)
            if wanted is None or docno in wanted:
                documents[docno] = DocumentText(
                    docno,
                    _text(record, ("title",), filename, number),
                    _text(record, ("text", "contents", "body"), filename, number),
                )
        else:
            docno, body = _tsv(text, filename, number, "docid<TAB>text")
            if wanted is None or docno in wanted:
                documents[docno] = DocumentText(docno, "", body)
    return documents


def _json_record(text: str, filename: str, number: int) -> dict[str, Any]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputFileError(filename, number, f"not valid JSON: {error.msg}") from None
    if not isinstance(record, dict):
        raise InputFileError(filename, number, "a JSONL line must be an object")
    return record


def _first_id(record: dict[str, Any], names: tuple[str, ...], filename: str, number: int) -> str:
    for name in names:
        value = record.get(name)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    raise InputFileError(filename, number, f"no identifier: expected one of {', '.join(names)}")


def _text(record: dict[str, Any], names: tuple[str, ...], filename: str, number: int) -> str:
    for name in names:
        value = record.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise InputFileError(filename, number, f'"{name}" must be a string')
        return value.strip()
    return ""


def _tsv(text: str, filename: str, number: int, shape: str) -> tuple[str, str]:
    key, tab, rest = text.partition("\t")
    if not tab or not key.strip():
        raise InputFileError(filename, number, f"expected {shape} or a JSON object")
    return key.strip(), rest.strip()
