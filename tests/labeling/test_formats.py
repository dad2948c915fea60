"""Readers for topics, documents and the bounded-memory run wrapper."""

from __future__ import annotations

import gzip
import io

import pytest

from estimation.formats.trec import InputFileError
from uploads.formats import sniff_format, upload_lines
from uploads.formats.documents import iter_documents_jsonl
from uploads.formats.runs import iter_run_bounded
from uploads.formats.topics import iter_topics_jsonl, iter_topics_trec

TREC_TOPICS = """<top>
<num> Number: 301
<title> International Organized Crime

<desc> Description:
Identify organizations that participate in international
criminal activity.

<narr> Narrative:
A relevant document must as a minimum identify the organization.
</top>

<top>
<num> Number: 302 </num>
<title> Poliomyelitis and Post-Polio </title>
<desc> Description: Is the disease of Poliomyelitis under control? </desc>
</top>
"""


def test_it_reads_classic_and_closed_tag_trec_topics() -> None:
    topics = list(iter_topics_trec(TREC_TOPICS.splitlines(keepends=True), "t.txt"))
    assert [topic.qid for topic in topics] == ["301", "302"]
    assert topics[0].title == "International Organized Crime"
    assert (
        topics[0].description == "Identify organizations that participate in international criminal activity."
    )
    assert topics[0].narrative.startswith("A relevant document must")
    assert topics[1].title == "Poliomyelitis and Post-Polio"
    assert topics[1].narrative == ""
    assert topics[1].line == 13


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("<top>\n<num> Number: 1\n<title> a\n", 1, "never closed"),
        ("<top>\n<title> a\n</top>\n", 1, "without a <num>"),
        ("hello\n<top><num>1</top>\n", 1, "outside <top>"),
        ("<top><num>1</top>\n<top><num>1</top>\n", 2, "given twice"),
        ("<top><num>1\n<top><num>2</top>\n", 2, "opened again"),
    ],
)
def test_it_rejects_malformed_trec_topics(text: str, line: int, reason: str) -> None:
    with pytest.raises(InputFileError) as raised:
        list(iter_topics_trec(text.splitlines(keepends=True), "bad.txt"))
    assert raised.value.file == "bad.txt"
    assert raised.value.line == line
    assert reason in raised.value.reason


def test_it_reads_jsonl_topics_and_names_the_bad_line() -> None:
    good = '{"id": "7", "title": "cats", "description": "about cats"}\n\n{"qid": 8, "title": "dogs"}\n'
    topics = list(iter_topics_jsonl(good.splitlines(keepends=True), "t.jsonl"))
    assert [(t.qid, t.title, t.line) for t in topics] == [("7", "cats", 1), ("8", "dogs", 3)]
    with pytest.raises(InputFileError) as raised:
        list(iter_topics_jsonl(['{"id": "1", "title": "a"}\n', '{"title": "no id"}\n'], "t.jsonl"))
    assert (raised.value.line, raised.value.reason) == (2, 'missing "id" (the topic number)')
    with pytest.raises(InputFileError, match="not valid JSON"):
        list(iter_topics_jsonl(['{"id": 1,\n'], "t.jsonl"))


def test_it_reads_documents_and_rejects_bad_fields() -> None:
    lines = [
        '{"docno": "d1", "title": "T", "text": "one two three"}\n',
        '{"docno": "d2", "url": "https://example.org/x", "length": 12}\n',
    ]
    documents = list(iter_documents_jsonl(lines, "d.jsonl"))
    assert [(d.docno, d.length, d.url) for d in documents] == [
        ("d1", 3, ""),
        ("d2", 12, "https://example.org/x"),
    ]
    for bad, reason in [
        ('{"docno": "d1", "length": -1}\n', "length"),
        ('{"docno": "d1", "url": "ftp://x"}\n', "not an http"),
        ('{"title": "x"}\n', "docno"),
        ('["d1"]\n', "JSON object"),
    ]:
        with pytest.raises(InputFileError, match=reason):
            list(iter_documents_jsonl([bad], "d.jsonl"))
    with pytest.raises(InputFileError) as raised:
        list(iter_documents_jsonl(lines + ['{"docno": "d1"}\n'], "d.jsonl"))
    assert raised.value.line == 3 and "twice" in raised.value.reason


def test_it_reads_uploads_plain_or_gzipped_and_sniffs_the_format() -> None:
    text = "1 Q0 d 1 2.0 run\n"
    assert list(upload_lines("r", io.BytesIO(text.encode()))) == [text]
    assert list(upload_lines("r.gz", io.BytesIO(gzip.compress(text.encode())))) == [text]
    assert sniff_format("t", io.BytesIO(b'\n{"id": 1}\n'), ("trec", "jsonl")) == "jsonl"
    assert sniff_format("t", io.BytesIO(b"<top>\n"), ("trec", "jsonl")) == "trec"
    with pytest.raises(InputFileError, match="not valid UTF-8"):
        list(upload_lines("r", io.BytesIO(b"ok\n\xff\xfe\n")))


def test_it_keeps_file_line_numbers_across_query_blocks() -> None:
    lines = ["1 Q0 a 1 3 r\n", "1 Q0 b 2 2 r\n", "# comment\n", "2 Q0 a 1 3 r\n", "2 Q0 a 2 2 r\n"]
    with pytest.raises(InputFileError) as raised:
        list(iter_run_bounded(lines, "r.txt", lambda qid: set()))
    assert raised.value.line == 5
    assert "lines 4 and 5" in raised.value.reason
    good = list(iter_run_bounded(lines[:4], "r.txt", lambda qid: set()))
    assert [(line.qid, line.docno, line.line) for line in good] == [
        ("1", "a", 1),
        ("1", "b", 2),
        ("2", "a", 4),
    ]


def test_it_checks_a_returning_query_against_what_is_stored() -> None:
    lines = ["1 Q0 a 1 3 r\n", "2 Q0 a 1 3 r\n", "1 Q0 b 2 2 r\n", "1 Q0 a 3 1 r\n"]
    asked: list[str] = []

    def stored(qid: str) -> set[str]:
        asked.append(qid)
        return {"a"}

    with pytest.raises(InputFileError) as raised:
        list(iter_run_bounded(lines, "r.txt", stored))
    assert asked == ["1"]
    assert raised.value.line == 4
