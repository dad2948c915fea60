"""Imports of real TREC files, and malformed files that must leave nothing behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractBaseUser

from estimation.formats.trec import read_qrels, read_run
from labeling.import_reports import ImportFailed
from labeling.models import Campaign, Document, Judgment, PoolItem, RankingEntry, System, Topic
from labeling.services.campaigns import campaign_create
from tests.conftest import upload
from uploads.imports import documents_import, qrels_import, topics_import
from uploads.models import StagedRunLine
from uploads.run_imports import runs_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql

IMPORTERS = {
    "topics": topics_import,
    "documents": documents_import,
    "runs": runs_import,
    "qrels": qrels_import,
}


def _campaign(coordinator: AbstractBaseUser, grades: int = 3, metric: str = "DCG@10") -> Campaign:
    names = [f"g{value}" for value in range(grades)]
    return campaign_create(creator=coordinator, name="real", metric=metric, grades=names, budget=50)


def _file(path: Path) -> tuple[str, object]:
    return path.name, path.open("rb")


def _counts(campaign: Campaign) -> tuple[int, ...]:
    return (
        Topic.objects.filter(campaign=campaign).count(),
        Document.objects.filter(campaign=campaign).count(),
        System.objects.filter(campaign=campaign).count(),
        RankingEntry.objects.filter(system__campaign=campaign).count(),
        PoolItem.objects.filter(campaign=campaign).count(),
        Judgment.objects.filter(campaign=campaign).count(),
    )


@pytest.mark.slow
def test_it_imports_gzipped_robust03_runs_and_pools_trec_eval_top_k(
    coordinator: AbstractBaseUser, shared_data: Path
) -> None:
    campaign = _campaign(coordinator)
    paths = [shared_data / "robust03" / "runs" / name for name in ("input.pircRBa1.gz", "input.uwmtCR0.gz")]
    report = runs_import(campaign=campaign, files=[_file(path) for path in paths])
    runs = [read_run(path) for path in paths]
    assert report.systems == [run.tag for run in runs]
    assert RankingEntry.objects.filter(system__campaign=campaign).count() == report.lines == 200_000
    # The pool is the union of each run's top 10 in trec_eval order (score desc, docno desc),
    # whatever the rank column says (pircRBa1 numbers ranks from 0).
    expected = {(qid, docno) for run in runs for qid, docnos in run.rankings.items() for docno in docnos[:10]}
    pooled = set(PoolItem.objects.filter(campaign=campaign).values_list("topic__qid", "document__docno"))
    assert pooled == expected
    assert Document.objects.filter(campaign=campaign, is_stub=False).count() == 0
    first = runs[0].rankings["303"][0]
    assert PoolItem.objects.get(campaign=campaign, topic__qid="303", document__docno=first).best_rank == 1


def test_it_imports_mq2008_runs_and_qrels_as_already_judged(
    coordinator: AbstractBaseUser, shared_data: Path
) -> None:
    campaign = _campaign(coordinator)
    runs = [shared_data / "mq2008" / "runs" / name for name in ("AdaRank.run", "RankBoost.run")]
    runs_import(campaign=campaign, files=[_file(path) for path in runs])
    qrels_path = shared_data / "mq2008" / "qrels.txt"
    report = qrels_import(campaign=campaign, files=[_file(qrels_path)])
    qrels = read_qrels(qrels_path)
    assert report.lines == sum(len(docs) for docs in qrels.values())
    stored = {
        (qid, docno): grade
        for qid, docno, grade in Judgment.objects.filter(campaign=campaign, source="qrels").values_list(
            "topic__qid", "document__docno", "grade"
        )
    }
    assert stored == {(qid, docno): grade for qid, docs in qrels.items() for docno, grade in docs.items()}
    # Every MQ2008 run document is judged, so nothing is left to sample.
    assert PoolItem.objects.filter(campaign=campaign).count() > 0
    assert not PoolItem.objects.filter(campaign=campaign, prejudged=False).exists()


def test_it_imports_trec_eval_fixtures_with_negative_grades_and_hashes_in_docnos(
    coordinator: AbstractBaseUser, shared_data: Path
) -> None:
    folder = shared_data / "trec_eval_testdata"
    campaign = _campaign(coordinator, grades=5)
    runs_import(
        campaign=campaign, files=[_file(folder / "results.test"), _file(folder / "results.comment.test")]
    )
    report = qrels_import(
        campaign=campaign, files=[_file(folder / "qrels.rel_level"), _file(folder / "qrels.comment.test")]
    )
    assert System.objects.filter(campaign=campaign).count() == 2
    negative = sum(
        1
        for name in ("qrels.rel_level", "qrels.comment.test")
        for fields in (line.split() for line in (folder / name).read_text().splitlines())
        if len(fields) == 4 and fields[3].lstrip("-").isdigit() and int(fields[3]) < 0
    )
    notes = " ".join(report.notes)
    assert negative > 0 and f"{negative} line(s) have a negative grade" in notes, report.notes
    assert Document.objects.filter(campaign=campaign, docno__contains="#").exists()
    qrels = read_qrels(folder / "qrels.rel_level")  # negative grades read as 0, as trec_eval does
    some_qid = next(iter(qrels))
    stored = dict(
        Judgment.objects.filter(campaign=campaign, topic__qid=some_qid).values_list(
            "document__docno", "grade"
        )
    )
    assert stored == qrels[some_qid]


def test_it_imports_topics_and_documents_and_fills_stubs(draft_campaign: Campaign) -> None:
    topics = "<top>\n<num> Number: 1\n<title> cats\n<desc> Description:\nabout cats\n</top>\n"
    topics_import(campaign=draft_campaign, files=[upload("topics.txt", topics)])
    topics_import(campaign=draft_campaign, files=[upload("t.jsonl", '{"id": "2", "title": "dogs"}\n')])
    documents = '{"docno": "d1-1", "title": "Cats", "text": "all about cats"}\n{"docno": "new", "url": "https://x.org"}\n'
    report = documents_import(campaign=draft_campaign, files=[upload("docs.jsonl", documents)])
    assert (report.updated, report.created) == (1, 1)
    topic = Topic.objects.get(campaign=draft_campaign, qid="1")
    assert (topic.title, topic.description, topic.is_stub) == ("cats", "about cats", False)
    assert Topic.objects.get(campaign=draft_campaign, qid="3").is_stub
    document = Document.objects.get(campaign=draft_campaign, docno="d1-1")
    assert (document.title, document.length, document.is_stub) == ("Cats", 3, False)


@pytest.mark.parametrize(
    ("importer", "name", "text", "line", "reason"),
    [
        ("runs", "bad.run", "1 Q0 d1 1 2.0 r\n1 Q0 d2 2 2.0\n", 2, "expected 6 fields"),
        ("runs", "bad.run", "1 Q0 d1 1 high r\n", 1, "is not a number"),
        ("runs", "bad.run", "1 Q0 d1 1 2.0 r\n2 Q0 d1 1 2.0 r\n2 Q0 d1 2 1.0 r\n", 3, "twice"),
        ("qrels", "bad.qrels", "1 0 d1 1\n1 0 d2 x\n", 2, "not an integer"),
        ("qrels", "bad.qrels", "1 0 d1 7\n", 1, "above the campaign's top grade"),
        ("topics", "bad.jsonl", '{"id": "1", "title": "a"}\n{"id": "1", "title": "b"}\n', 2, "twice"),
        ("documents", "bad.jsonl", '{"docno": "x"}\n{"docno": "y", "length": "long"}\n', 2, "length"),
    ],
)
def test_it_rejects_a_malformed_file_whole_and_stores_nothing(
    draft_campaign: Campaign, importer: str, name: str, text: str, line: int, reason: str
) -> None:
    before = _counts(draft_campaign)
    service: Callable[..., object] = IMPORTERS[importer]
    good = upload("good.run", "9 Q0 fresh 1 1.0 fine\n") if importer == "runs" else None
    files = [good, upload(name, text)] if good else [upload(name, text)]
    with pytest.raises(ImportFailed) as raised:
        service(campaign=draft_campaign, files=files)
    [error] = raised.value.errors
    assert (error.file, error.line) == (name, line)
    assert reason in error.reason
    assert _counts(draft_campaign) == before


def test_it_reports_every_bad_file_of_a_multi_file_upload(draft_campaign: Campaign) -> None:
    files = [
        upload("one.run", "1 Q0 d 1 x r\n"),
        upload("two.run", "1 Q0 d 1\n"),
        upload("ok.run", "1 Q0 d 1 1 ok\n"),
    ]
    with pytest.raises(ImportFailed) as raised:
        runs_import(campaign=draft_campaign, files=files)
    assert [(error.file, error.line) for error in raised.value.errors] == [("one.run", 1), ("two.run", 1)]
    assert not System.objects.filter(campaign=draft_campaign, name="ok").exists()


def test_it_refuses_a_second_run_with_the_same_tag(draft_campaign: Campaign) -> None:
    with pytest.raises(ImportFailed, match="already in this campaign"):
        runs_import(campaign=draft_campaign, files=[upload("again.run", "1 Q0 d1-1 1 1.0 alpha\n")])


def test_it_names_the_first_problem_of_a_run_whatever_its_kind(campaign: Campaign) -> None:
    # Line 2 lists d1-9 again (found only after the whole file by the block reader); line 3 has
    # a topic outside the pool. The first in the file is reported, as the line reader would.
    run = "1 Q0 d1-9 1 3.0 gamma\n1 Q0 d1-9 2 2.0 gamma\n4 Q0 d4-1 1 2.0 gamma\n"
    with pytest.raises(ImportFailed) as failure:
        runs_import(campaign=campaign, files=[upload("gamma.run", run)])
    error = failure.value.errors[0]
    assert (error.line, error.reason) == (2, "document 'd1-9' listed twice for query '1' (lines 1 and 2)")
    assert not StagedRunLine.objects.exists()


def test_it_refuses_a_pooled_run_with_new_topics_once_draws_were_made(campaign: Campaign) -> None:
    # The running toy campaign has drawn from topics 1-3; topic 4 would change their 1/m weights.
    assert campaign.draws.exists()
    run = "1 Q0 d1-9 1 3.0 gamma\n4 Q0 d4-1 1 2.0 gamma\n"
    with pytest.raises(ImportFailed) as failure:
        runs_import(campaign=campaign, files=[upload("gamma.run", run)])
    error = failure.value.errors[0]
    assert (error.file, error.line) == ("gamma.run", 2) and "topic '4' is not in the pool" in error.reason
    assert not System.objects.filter(campaign=campaign, name="gamma").exists(), "nothing half-imported"
    assert not Topic.objects.filter(campaign=campaign, qid="4").exists()
    # New documents for the pooled topics are fine, and new topics are fine for evaluation.
    runs_import(campaign=campaign, files=[upload("delta.run", "1 Q0 d1-9 1 3.0 delta\n")])
    assert PoolItem.objects.filter(campaign=campaign, document__docno="d1-9").exists()
    runs_import(campaign=campaign, files=[upload("gamma.run", run)], evaluation_only=True)
    assert System.objects.get(campaign=campaign, name="gamma").evaluation_only


def test_topics_named_by_runs_are_reported_as_filled_in(draft_campaign: Campaign) -> None:
    report = topics_import(
        campaign=draft_campaign,
        files=[upload("t.jsonl", '{"id": "1", "title": "a"}\n{"id": "2", "title": "b"}\n')],
    )
    assert (report.created, report.updated) == (0, 2)
    assert report.notes == ["2 of the updated topics were named by runs and now have their text"]
