"""Every malformed upload is a 400 naming file, line and reason, with nothing stored, on both
databases (SQLite would store an over-long value that PostgreSQL refuses); BOM, CRLF and the
import report's counts."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, connection
from rest_framework.test import APIClient

from labeling.import_reports import ImportFailed
from labeling.models import Campaign, Document, Judgment, RankingEntry, System, Topic
from labeling.services.campaigns import campaign_create
from tests.conftest import upload
from uploads.run_imports import runs_import

LONG = "x" * 201


@pytest.fixture
def empty_campaign(coordinator: AbstractBaseUser) -> Campaign:
    return campaign_create(
        creator=coordinator, name="rules", metric="DCG@5", grades=["Bad", "Fair", "Good"], budget=10
    )


@pytest.fixture
def client(api: Callable[..., APIClient], coordinator: AbstractBaseUser) -> APIClient:
    return api(coordinator)


def _stored(campaign: Campaign) -> tuple[int, ...]:
    return (
        Topic.objects.filter(campaign=campaign).count(),
        Document.objects.filter(campaign=campaign).count(),
        System.objects.filter(campaign=campaign).count(),
        RankingEntry.objects.filter(system__campaign=campaign).count(),
        Judgment.objects.filter(campaign=campaign).count(),
    )


def _post(client: APIClient, campaign: Campaign, kind: str, name: str, content: bytes, **extra: str):
    body = {"file": io.BytesIO(content), **extra}
    body["file"].name = name  # type: ignore[attr-defined]
    return client.post(f"/api/campaigns/{campaign.pk}/{kind}/", body, format="multipart")


def _jsonl(*records: dict) -> bytes:
    # ensure_ascii keeps escapes such as \\u0000 and \\ud800 as the JSON text a client sends.
    return "".join(json.dumps(record) + "\n" for record in records).encode()


GOOD_RUN = b"1 Q0 d1 1 2.0 tag\n"
REFUSED = [
    # (kind, file name, content, line, words of the reason)
    ("runs", "r.run", GOOD_RUN + f"1 Q0 {LONG} 2 1.0 tag\n".encode(), 2, "docno longer than 200"),
    ("runs", "r.run", GOOD_RUN + f"{'q' * 65} Q0 d2 2 1.0 tag\n".encode(), 2, "qid longer than 64"),
    ("runs", "r.run", f"1 Q0 d1 1 2.0 {LONG}\n".encode(), 1, "tag longer than 200"),
    ("runs", "r.run", GOOD_RUN + b"1 Q0 d2 2147483648 1.0 tag\n", 2, "rank 2147483648 is outside"),
    ("runs", "r.run", GOOD_RUN + b"1 Q0 d2 100000000000000000000 1.0 tag\n", 2, "is outside"),
    ("runs", "r.run", GOOD_RUN + b"1 Q0 d2 -2147483649 1.0 tag\n", 2, "is outside"),
    ("runs", "r.run", GOOD_RUN + b"1 Q0 d\x002 2 1.0 tag\n", 2, "NUL character"),
    ("runs", "r.run", GOOD_RUN + b"1\x00 Q0 d2 2 1.0 tag\n", 2, "NUL character"),
    ("runs", "r.run", b"", None, "no lines"),
    ("qrels", "q.txt", b"", None, "hold no judgments"),
    ("qrels", "q.txt", b"# only a comment\n\n", None, "hold no judgments"),
    ("qrels", "q.txt", f"1 0 {LONG} 1\n".encode(), 1, "docno longer than 200"),
    ("qrels", "q.txt", f"{'q' * 65} 0 d1 1\n".encode(), 1, "qid longer than 64"),
    ("qrels", "q.txt", b"1 0 d\x001 1\n", 1, "NUL character"),
    ("topics", "t.jsonl", _jsonl({"id": True, "title": "yes"}), 1, "string or an integer"),
    ("topics", "t.jsonl", _jsonl({"id": "1"}, {"id": "q" * 65}), 2, "longer than 64"),
    ("topics", "t.jsonl", _jsonl({"id": "1", "title": "a\u0000b"}), 1, "NUL character"),
    ("topics", "t.jsonl", _jsonl({"id": "1", "title": "a\ud800b"}), 1, "lone surrogate"),
    ("topics", "t.jsonl", _jsonl({"id": "1", "narrative": "\udfff"}), 1, "lone surrogate"),
    ("topics", "t.jsonl", b'{"id": ' + b"9" * 5000 + b"}\n", 1, "not valid JSON"),
    ("topics", "t.jsonl", b'{"a": ' * 5000 + b"1" + b"}" * 5000 + b"\n", 1, "not valid JSON"),
    ("topics", "t.jsonl", b"", None, "empty"),
    ("topics", "t.txt", b"<top><num> 1\x00 <title> t </top>\n", 1, "NUL character"),
    ("topics", "t.txt", f"<top><num> {'q' * 65} <title> t </top>\n".encode(), 1, "longer than 64"),
    ("documents", "d.jsonl", _jsonl({"docno": "d1"}, {"docno": LONG}), 2, "longer than 200"),
    (
        "documents",
        "d.jsonl",
        _jsonl({"docno": "d1", "url": "http://e.org/" + "a" * 1988}),
        1,
        "longer than 2000",
    ),
    ("documents", "d.jsonl", _jsonl({"docno": "d1", "length": 2**31}), 1, "whole number in 0..2147483647"),
    ("documents", "d.jsonl", _jsonl({"docno": "d1", "length": 10**20}), 1, "whole number"),
    ("documents", "d.jsonl", _jsonl({"docno": "d1", "length": float("nan")}), 1, "whole number"),
    ("documents", "d.jsonl", _jsonl({"docno": "d1", "text": "\u0000"}), 1, "NUL character"),
    ("documents", "d.jsonl", _jsonl({"docno": "d\u00001"}), 1, "NUL character"),
    ("documents", "d.jsonl", _jsonl({"docno": "d1", "title": "\ud800"}), 1, "lone surrogate"),
    ("documents", "d.jsonl", b"", None, "empty"),
    ("labels", "l.txt", b"", None, "holds no rows"),
]


@pytest.mark.parametrize(("kind", "name", "content", "line", "reason"), REFUSED)
def test_it_refuses_a_malformed_upload_with_file_line_and_reason(
    client: APIClient,
    empty_campaign: Campaign,
    kind: str,
    name: str,
    content: bytes,
    line: int | None,
    reason: str,
) -> None:
    response = _post(client, empty_campaign, kind, name, content)
    assert response.status_code == 400, response.content[:500]
    [error] = response.json()["errors"]
    assert error["file"] == name and error["line"] == line
    assert reason in error["message"]
    assert _stored(empty_campaign) == (0, 0, 0, 0, 0)


def test_it_stores_nothing_when_a_run_fails_after_its_first_batches(
    client: APIClient, empty_campaign: Campaign
) -> None:
    # 4,500 good lines (two batches written inside the transaction), then a docno too long.
    good = "".join(f"{q} Q0 d{q}-{d} {d} {1000 - d}.0 tag\n" for q in range(1, 10) for d in range(500))
    content = (good + f"99 Q0 {LONG} 1 1.0 tag\n").encode()
    response = _post(client, empty_campaign, "runs", "big.run", content)
    assert response.status_code == 400 and response.json()["errors"][0]["line"] == 4501
    assert _stored(empty_campaign) == (0, 0, 0, 0, 0)


def _refuse_ranking_entries_ranked(rank: int) -> None:
    """A database that fails mid-publish (as a full disk would): a trigger refuses one row."""
    table = RankingEntry._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION refuse_rank() RETURNS trigger AS $$ BEGIN "
                f"IF NEW.rank = {rank} THEN RAISE EXCEPTION 'disk full'; END IF; RETURN NEW; END "
                "$$ LANGUAGE plpgsql"
            )
            cursor.execute(
                f"CREATE TRIGGER refuse_rank BEFORE INSERT ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION refuse_rank()"
            )
        else:
            cursor.execute(
                f"CREATE TRIGGER refuse_rank BEFORE INSERT ON {table} WHEN NEW.rank = {rank} "
                "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
            )


def test_a_run_that_fails_while_publishing_leaves_no_system_and_no_stub(campaign: Campaign) -> None:
    # The toy campaign holds topics 1-3 with their documents (and draws): only pooled topics.
    before = _stored(campaign)
    known_documents = set(Document.objects.filter(campaign=campaign).values_list("docno", flat=True))
    _refuse_ranking_entries_ranked(999)
    first = "1 Q0 d1-1 1 2.0 first\n1 Q0 new-a 2 1.0 first\n"
    second = "2 Q0 d2-1 1 2.0 second\n2 Q0 new-b 999 1.0 second\n"
    with pytest.raises(DatabaseError, match="disk full"):
        runs_import(campaign=campaign, files=[upload("first.run", first), upload("second.run", second)])
    assert _stored(campaign) == before, "no system, entry, topic or document of the failed import"
    assert set(Document.objects.filter(campaign=campaign).values_list("docno", flat=True)) == known_documents


def test_a_failed_publish_keeps_the_stubs_another_run_already_ranks(empty_campaign: Campaign) -> None:
    _refuse_ranking_entries_ranked(999)
    runs_import(campaign=empty_campaign, files=[upload("kept.run", "7 Q0 shared 1 1.0 kept\n")])
    failing = "7 Q0 shared 1 1.0 lost\n8 Q0 only-lost 999 1.0 lost\n"
    with pytest.raises(DatabaseError):
        runs_import(campaign=empty_campaign, files=[upload("lost.run", failing)])
    assert list(System.objects.filter(campaign=empty_campaign).values_list("name", flat=True)) == ["kept"]
    assert set(Topic.objects.filter(campaign=empty_campaign).values_list("qid", flat=True)) >= {"7"}
    assert not Topic.objects.filter(campaign=empty_campaign, qid="8").exists()
    documents = set(Document.objects.filter(campaign=empty_campaign).values_list("docno", flat=True))
    assert "shared" in documents and "only-lost" not in documents


def test_it_caps_titles_and_texts_at_the_settings_naming_the_limit(
    client: APIClient, empty_campaign: Campaign, settings: object
) -> None:
    settings.LABELING_MAX_TITLE_CHARS = 10  # type: ignore[attr-defined]
    settings.LABELING_MAX_TEXT_CHARS = 20  # type: ignore[attr-defined]
    cases = [
        ("topics", "t.jsonl", _jsonl({"id": "1", "title": "t" * 11}), "longer than 10 characters"),
        ("topics", "t.jsonl", _jsonl({"id": "1", "description": "t" * 21}), "longer than 20 characters"),
        ("topics", "t.txt", b"<top><num> 1 <title> " + b"t" * 11 + b" </top>\n", "longer than 10 characters"),
        ("documents", "d.jsonl", _jsonl({"docno": "d", "text": "t" * 21}), "longer than 20 characters"),
        ("documents", "d.jsonl", _jsonl({"docno": "d", "title": "t" * 11}), "longer than 10 characters"),
    ]
    for kind, name, content, reason in cases:
        response = _post(client, empty_campaign, kind, name, content)
        assert response.status_code == 400 and reason in response.json()["errors"][0]["message"], name
    ok = _post(client, empty_campaign, "documents", "d.jsonl", _jsonl({"docno": "d", "title": "t" * 10}))
    assert ok.status_code == 201
    assert _stored(empty_campaign)[:2] == (0, 1)


BOM = b"\xef\xbb\xbf"


def test_it_drops_a_byte_order_mark_and_reads_crlf_in_every_format(
    client: APIClient, empty_campaign: Campaign
) -> None:
    run = BOM + b"1 Q0 d1 1 2.0 tag\r\n1 Q0 d2 2 1.0 tag\r\n2 Q0 d1 1 1.0 tag\r\n"
    assert _post(client, empty_campaign, "runs", "r.run", run).status_code == 201
    run_gz = gzip.compress(BOM + b"1 Q0 d3 1 2.0 other\r\n")
    assert _post(client, empty_campaign, "runs", "r2.run.gz", run_gz).status_code == 201
    qrels = BOM + b"1 0 d1 2\r\n2 0 d1 0\r\n"
    assert _post(client, empty_campaign, "qrels", "q.txt", qrels).status_code == 201
    topics = BOM + b'{"id": "1", "title": "cats"}\r\n'
    assert _post(client, empty_campaign, "topics", "t.jsonl", topics).status_code == 201
    trec_topics = BOM + b"<top>\r\n<num> Number: 2\r\n<title> dogs\r\n</top>\r\n"
    assert _post(client, empty_campaign, "topics", "t.txt", trec_topics).status_code == 201
    documents = BOM + b'{"docno": "d1", "title": "a cat"}\r\n'
    assert _post(client, empty_campaign, "documents", "d.jsonl", documents).status_code == 201

    topics_stored = dict(Topic.objects.filter(campaign=empty_campaign).values_list("qid", "title"))
    assert topics_stored == {"1": "cats", "2": "dogs"}
    assert set(Document.objects.filter(campaign=empty_campaign).values_list("docno", flat=True)) == {
        "d1",
        "d2",
        "d3",
    }
    assert Document.objects.get(campaign=empty_campaign, docno="d1").title == "a cat"
    judged = Judgment.objects.filter(campaign=empty_campaign).values_list(
        "topic__qid", "document__docno", "grade"
    )
    assert sorted(judged) == [("1", "d1", 2), ("2", "d1", 0)]
    assert sorted(System.objects.filter(campaign=empty_campaign).values_list("name", flat=True)) == [
        "other",
        "tag",
    ]


def test_it_reports_what_a_topics_and_documents_import_really_stored(
    client: APIClient, empty_campaign: Campaign
) -> None:
    assert _post(client, empty_campaign, "runs", "r.run", b"1 Q0 d1 1 2.0 tag\n").status_code == 201
    topics = _jsonl({"id": "1", "title": "cats"}, {"id": "2", "title": "dogs"})
    first = _post(client, empty_campaign, "topics", "t.jsonl", topics).json()
    # Topic 1 was a stub the run made: filled in (updated); topic 2 is new.
    assert (first["created"], first["updated"], first["unchanged"]) == (1, 1, 0)
    again = _post(client, empty_campaign, "topics", "t.jsonl", topics).json()
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 2)
    changed = _jsonl({"id": "1", "title": "cats"}, {"id": "2", "title": "wolves"})
    third = _post(client, empty_campaign, "topics", "t.jsonl", changed).json()
    assert (third["created"], third["updated"], third["unchanged"]) == (0, 1, 1)

    documents = _jsonl({"docno": "d1", "text": "a"}, {"docno": "d2", "text": "b"})
    report = _post(client, empty_campaign, "documents", "d.jsonl", documents).json()
    assert (report["created"], report["updated"], report["unchanged"]) == (1, 1, 0)
    report = _post(client, empty_campaign, "documents", "d.jsonl", documents).json()
    assert (report["created"], report["updated"], report["unchanged"]) == (0, 0, 2)


def test_it_says_truthfully_that_a_regraded_qrels_pair_keeps_its_stored_grade(
    client: APIClient, empty_campaign: Campaign
) -> None:
    first = _post(client, empty_campaign, "qrels", "q1.txt", b"1 0 d1 2\n1 0 d2 1\n").json()
    assert (first["created"], first["unchanged"], first["notes"]) == (2, 0, [])
    same = _post(client, empty_campaign, "qrels", "q1.txt", b"1 0 d1 2\n1 0 d2 1\n").json()
    assert (same["created"], same["unchanged"], same["notes"]) == (0, 2, [])
    regraded = _post(client, empty_campaign, "qrels", "q2.txt", b"1 0 d1 0\n1 0 d3 1\n").json()
    assert (regraded["created"], regraded["unchanged"]) == (1, 1)
    [note] = regraded["notes"]
    assert "q2.txt:1" in note and "grade 2" in note and "kept" in note
    grades = dict(Judgment.objects.filter(campaign=empty_campaign).values_list("document__docno", "grade"))
    assert grades == {"d1": 2, "d2": 1, "d3": 1}


def _write_gzip_bomb(path: object, expanded_bytes: int) -> int:
    """Write a gzip file that expands to one line of `expanded_bytes` bytes, streaming (never
    holding more than a megabyte); returns its compressed size."""
    chunk = b"a" * (1 << 20)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as bomb:  # type: ignore[call-overload]
        for _ in range(expanded_bytes // len(chunk)):
            bomb.write(chunk)
    return path.stat().st_size  # type: ignore[attr-defined]


def test_it_refuses_a_gzip_bomb_of_one_gigabyte_line_in_bounded_memory(
    empty_campaign: Campaign, tmp_path: object
) -> None:
    import resource
    import tracemalloc

    bomb = tmp_path / "bomb.run.gz"  # type: ignore[operator]
    assert _write_gzip_bomb(bomb, 1 << 30) < 2 * 1024 * 1024
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    try:
        with open(bomb, "rb") as stream, pytest.raises(ImportFailed) as caught:
            runs_import(campaign=empty_campaign, files=[("bomb.run.gz", stream)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before
    [error] = caught.value.errors
    assert error.line == 1 and "longer than 8388608 bytes" in error.reason
    assert peak < 100 * 1024 * 1024
    assert rss_growth < 100 * 1024 * 1024
    assert _stored(empty_campaign) == (0, 0, 0, 0, 0)


def test_it_refuses_an_upload_over_the_decompressed_size_limit(
    client: APIClient, empty_campaign: Campaign, settings: object
) -> None:
    settings.LABELING_UPLOAD_MAX_BYTES = 10_000  # type: ignore[attr-defined]
    lines = "".join(f"1 Q0 d{d} {d} 1.0 tag\n" for d in range(2000)).encode()
    response = _post(client, empty_campaign, "runs", "r.run.gz", gzip.compress(lines))
    assert response.status_code == 400
    assert "larger than 10000 bytes" in response.json()["errors"][0]["message"]
    assert _stored(empty_campaign) == (0, 0, 0, 0, 0)
