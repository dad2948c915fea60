"""Topics, documents, qrels and prior uploads never hold the write lock while they parse: every
file is read with no transaction open, then stored in short transactions; a failure while
storing takes back what the upload stored.

Toy campaign (tests/conftest.py): topics 1-3 and documents d1-1 .. d3-7 are stubs the
runs alpha and beta made; grades 0-2. The imports store `STORE_ROWS` rows per transaction,
set to 2 here so that a seven-line file takes four.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from django.db import DatabaseError, connection, connections

from labeling.import_reports import ImportReport, UploadedFile
from labeling.models import Campaign, Document, Judgment, PoolItem, Topic
from uploads import imports

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql

TOPICS = "".join(
    f'{{"id": "{qid}", "title": "topic {qid}"}}\n' for qid in ("1", "2", "3", "q4", "q5", "q6", "q7")
)
DOCUMENTS = "".join(
    f'{{"docno": "{docno}", "text": "text of {docno}"}}\n'
    for docno in ("d1-1", "d1-2", "d1-3", "new-4", "new-5", "new-6", "new-7")
)
QRELS = "1 0 d1-1 2\n1 0 d1-2 1\n2 0 d2-1 0\n9 0 zz-4 1\n9 0 zz-5 1\n9 0 zz-6 2\n9 0 zz-7 0\n"
PRIORS = (
    "".join(
        f"{qid} d{qid}-{d} {p} {1 - p} 0\n"
        for qid, d, p in ((1, 1, 0.5), (1, 2, 0.5), (2, 3, 0.25), (2, 4, 0.75))
    )
    + "3 d3-3 0.125 0.875 0\n3 d3-4 0.5 0.5 0\n3 d3-5 1 0 0\n"
)


class ReadsRecorder(io.BytesIO):
    """An upload that records, at each read, whether a transaction was open."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.in_transaction: list[bool] = []

    def read(self, size: int | None = -1) -> bytes:
        self.in_transaction.append(connection.in_atomic_block)
        return super().read(size)

    def readline(self, size: int | None = -1) -> bytes:
        self.in_transaction.append(connection.in_atomic_block)
        return super().readline(size)


def topics_upload(campaign: Campaign, files: Sequence[UploadedFile]) -> ImportReport:
    return imports.topics_import(campaign=campaign, files=files, file_format="jsonl")


def documents_upload(campaign: Campaign, files: Sequence[UploadedFile]) -> ImportReport:
    return imports.documents_import(campaign=campaign, files=files)


def qrels_upload(campaign: Campaign, files: Sequence[UploadedFile]) -> ImportReport:
    return imports.qrels_import(campaign=campaign, files=files)


def priors_upload(campaign: Campaign, files: Sequence[UploadedFile]) -> ImportReport:
    return imports.labels_import(campaign=campaign, files=files)


def stored(campaign: Campaign) -> dict[str, set[tuple[Any, ...]]]:
    """Everything these uploads write, as sets of rows."""
    return {
        "topics": set(
            Topic.objects.filter(campaign=campaign).values_list("id", "qid", "title", "narrative", "is_stub")
        ),
        "documents": set(
            Document.objects.filter(campaign=campaign).values_list("id", "docno", "text", "length", "is_stub")
        ),
        "judgments": set(
            Judgment.objects.filter(campaign=campaign).values_list(
                "topic_id", "document_id", "grade", "source"
            )
        ),
        "pool": {
            (pk, str(prior), prejudged)
            for pk, prior, prejudged in PoolItem.objects.filter(campaign=campaign).values_list(
                "id", "prior", "prejudged"
            )
        },
    }


def committed_elsewhere(count: Callable[[], int]) -> int:
    """`count()` on another connection: what other requests see committed right now."""
    seen: list[int] = []

    def look() -> None:
        try:
            seen.append(count())
        finally:
            connections.close_all()  # this thread's own connections

    thread = threading.Thread(target=look)
    thread.start()
    thread.join()
    return seen[0]


@pytest.fixture
def short_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # raising=False: the test must run (and fail) where imports stored in one transaction.
    monkeypatch.setattr(imports, "STORE_ROWS", 2, raising=False)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("short_batches")
def test_it_parses_topics_documents_qrels_and_priors_with_no_transaction_open(
    draft_campaign: Campaign,
) -> None:
    for upload, text, lines in (
        (topics_upload, TOPICS, 7),
        (documents_upload, DOCUMENTS, 7),
        (qrels_upload, QRELS, 7),
        (priors_upload, PRIORS, 7),
    ):
        first, second = ReadsRecorder(text.encode()), ReadsRecorder(text.encode())
        files = (
            [("first.txt", first)]
            if upload in (topics_upload, documents_upload)
            else [
                ("first.txt", first),
                ("second.txt", second),
            ]
        )
        report = upload(draft_campaign, files)
        assert report.lines == lines * len(files), upload.__name__
        for recorder in (first, second)[: len(files)]:
            assert recorder.in_transaction, upload.__name__
            assert not any(recorder.in_transaction), f"{upload.__name__} read inside a transaction"
    assert Topic.objects.get(campaign=draft_campaign, qid="q7").title == "topic q7"
    assert Document.objects.get(campaign=draft_campaign, docno="new-7").text == "text of new-7"
    assert Judgment.objects.filter(campaign=draft_campaign, source="qrels").count() == 7
    assert PoolItem.objects.get(campaign=draft_campaign, topic__qid="3", document__docno="d3-3").prior == [
        0.125,
        0.875,
        0.0,
    ]


def fail_at(table: str, marker: str, when_failing: Callable[[], None]) -> Callable[..., Any]:
    """A statement wrapper failing the first write into `table` whose values hold `marker`
    (as a lost connection or a full disk would), after calling `when_failing`."""

    def wrapper(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        rows = params if many else [params]
        values = [str(value) for row in rows or [] for value in (row or [])]
        writes = sql.lstrip().upper().startswith(("INSERT", "UPDATE"))
        if writes and f'"{table}"' in sql and any(marker in value for value in values):
            when_failing()
            raise DatabaseError("disk I/O error")
        return execute(sql, params, many, context)

    return wrapper


# (upload, text, table and marker of a write of the third batch, rows it committed before)
FAILURES = {
    "topics": (
        topics_upload,
        TOPICS,
        ("labeling_topic", "topic q5"),
        lambda campaign: Topic.objects.filter(campaign=campaign, title__startswith="topic").count(),
    ),
    "documents": (
        documents_upload,
        DOCUMENTS,
        ("labeling_document", "text of new-5"),
        lambda campaign: Document.objects.filter(campaign=campaign, text__startswith="text of").count(),
    ),
    "qrels": (
        qrels_upload,
        QRELS,
        ("labeling_document", "zz-5"),
        lambda campaign: Judgment.objects.filter(campaign=campaign, source="qrels").count(),
    ),
    "priors": (
        priors_upload,
        PRIORS,
        ("labeling_poolitem", "0.125"),
        lambda campaign: PoolItem.objects.filter(campaign=campaign, prior__isnull=False).count(),
    ),
}


@pytest.fixture
def earlier_uploads(draft_campaign: Campaign) -> Iterator[Campaign]:
    """Values a failed upload must put back: a topic and a document with text, a prior."""
    imports.topics_import(
        campaign=draft_campaign, files=[("t.jsonl", io.BytesIO(b'{"id": "2", "title": "cats"}\n'))]
    )
    imports.documents_import(
        campaign=draft_campaign, files=[("d.jsonl", io.BytesIO(b'{"docno": "d1-2", "text": "old"}\n'))]
    )
    imports.labels_import(campaign=draft_campaign, files=[("p.txt", io.BytesIO(b"1 d1-2 0 0 1\n"))])
    yield draft_campaign


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("short_batches")
@pytest.mark.parametrize("kind", FAILURES)
def test_it_takes_back_an_upload_whose_storing_fails_midway(earlier_uploads: Campaign, kind: str) -> None:
    campaign = earlier_uploads
    upload, text, (table, marker), count = FAILURES[kind]
    before = stored(campaign)
    committed: list[int] = []
    failing = fail_at(table, marker, lambda: committed.append(committed_elsewhere(lambda: count(campaign))))
    with connection.execute_wrapper(failing), pytest.raises(DatabaseError):
        upload(campaign, [("upload.txt", io.BytesIO(text.encode()))])
    # Two batches of two lines were committed (others could see them: no long transaction)
    # before the third failed; all of it is taken back.
    assert committed == [4], committed
    assert stored(campaign) == before
