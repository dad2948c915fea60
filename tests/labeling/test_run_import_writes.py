"""The bulk writes of run imports: PostgreSQL's COPY path stores what SQLite's path stores, and
a bad line or a step that finds its rows gone leaves nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from labeling.import_reports import ImportFailed
from labeling.models import Campaign, Document, Judgment, PoolItem, RankingEntry, System, Topic
from tests.conftest import REPO_ROOT, upload
from tests.database_template import sqlite_database_from_template
from uploads import run_import_writes, run_imports
from uploads.models import StagedRunLine
from uploads.run_imports import runs_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql

STORED = (Topic, Document, System, RankingEntry, PoolItem, Judgment, StagedRunLine)

IMPORT_AND_DUMP = """
import json, sys, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from labeling.models import Document, PoolItem, RankingEntry, System, Topic
from uploads.models import StagedRunLine
from labeling.services import campaigns
from uploads import imports, run_imports
from labeling.import_reports import ImportFailed
user = get_user_model().objects.create_user("carl")
campaign = campaigns.campaign_create(creator=user, name="c", metric="DCG@10", budget=10)
imports.documents_import(campaign=campaign, files=[("docs.jsonl", open(sys.argv[1], "rb"))])
def stored():
    models = (Topic, Document, System, RankingEntry, PoolItem, StagedRunLine)
    return [model.objects.count() for model in models]
before = stored()
try:
    run_imports.runs_import(campaign=campaign, files=[("bad.run", open(sys.argv[2], "rb"))])
    bad = None
except ImportFailed as failed:
    bad = [[error.file, error.line, error.reason] for error in failed.errors]
assert stored() == before, (stored(), before)
report = run_imports.runs_import(campaign=campaign, files=[(name, open(name, "rb")) for name in sys.argv[3:]])
entries = RankingEntry.objects.values_list("system__name", "topic__qid", "document__docno", "rank", "score")
print(json.dumps({
    "bad": bad,
    "systems": report.systems,
    "entries": sorted(entries),
    "documents": sorted(Document.objects.values_list("docno", "is_stub", "title")),
    "topics": sorted(Topic.objects.values_list("qid", "is_stub")),
    "pool": sorted(PoolItem.objects.values_list("topic__qid", "document__docno", "best_rank")),
    "staged": StagedRunLine.objects.count(),
}))
"""


def _stored() -> list[int]:
    return [model.objects.count() for model in STORED]


def _runs(folder: Path) -> list[str]:
    """Two runs over shared documents: tied scores (trec_eval breaks ties by docno), docnos
    with a backslash, a tab-free unicode and a known document, exponents and negative scores,
    more lines than one staging batch and one publish step hold."""
    first, second = folder / "first.run", folder / "second.run"
    with first.open("w") as out:
        for topic in range(30):
            for rank in range(1, 1001):
                score = float(1000 - rank // 3)  # three documents per score: ties
                out.write(f"q{topic} Q0 d{(topic * 37 + rank * 11) % 4000} {rank} {score:.1f} first\n")
    second.write_text(
        "q1 Q0 known 1 1e-300 second\n"
        "q1 Q0 back\\slash 2 -0.5 second\n"
        "q1 Q0 dé 2 -0.5 second\n"
        "q2 Q0 d7 9 0.30000000000000004 second\n"
        "q40 Q0 d7 1 3 second\n"
    )
    return [str(first), str(second)]


@pytest.mark.servers
def test_it_stores_on_postgresql_exactly_what_it_stores_on_sqlite(tmp_path: Path, postgres_url: str) -> None:
    documents = tmp_path / "docs.jsonl"
    documents.write_text('{"docno": "known", "title": "A known document"}\n')
    bad = tmp_path / "bad.run"
    with bad.open("w") as out:
        out.writelines(f"q{line // 1000} Q0 d{line} {line % 1000 + 1} 1.0 bad\n" for line in range(12000))
        out.write("q12 Q0 d-bad 1 not-a-score bad\n")
        out.writelines(f"q13 Q0 d{line} {line} 1.0 bad\n" for line in range(1, 5000))
    runs = _runs(tmp_path)
    with psycopg.connect(postgres_url, autocommit=True) as server:
        # A database of its own: other tests of the session share the server's first one.
        server.execute("DROP DATABASE IF EXISTS same_rows")
        server.execute("CREATE DATABASE same_rows")
    postgresql_url = postgres_url.rsplit("/", 1)[0] + "/same_rows"
    dumps = {}
    sqlite_database_from_template(tmp_path / "db.sqlite3")
    for vendor, url in (("sqlite", f"sqlite:///{tmp_path / 'db.sqlite3'}"), ("postgresql", postgresql_url)):
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PYTHONPATH": str(REPO_ROOT),
            "DATABASE_URL": url,
            "VAR_DIR": str(tmp_path / vendor),
        }
        env.pop("REDIS_URL", None)
        child = subprocess.run(
            [sys.executable, "-c", IMPORT_AND_DUMP, str(documents), str(bad), *runs],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert child.returncode == 0, child.stderr[-3000:]
        dumps[vendor] = json.loads(child.stdout.strip().splitlines()[-1])
    sqlite, postgresql = dumps["sqlite"], dumps["postgresql"]
    assert sqlite["bad"] == [["bad.run", 12001, "score 'not-a-score' is not a number"]]
    assert len(sqlite["entries"]) == 30 * 1000 + 5
    assert sqlite["staged"] == 0
    assert postgresql == sqlite


def test_a_bad_line_in_the_middle_of_a_file_leaves_nothing_stored(draft_campaign: Campaign) -> None:
    lines = [f"{line // 100} Q0 m{line} {line % 100 + 1} 2.5 middle\n" for line in range(9000)]
    lines[6000] = "60 Q0 m6000 1 2.5\n"  # the tag is missing
    before = _stored()
    with pytest.raises(ImportFailed) as raised:
        runs_import(campaign=draft_campaign, files=[upload("middle.run", "".join(lines))])
    [error] = raised.value.errors
    assert (error.file, error.line) == ("middle.run", 6001)
    assert _stored() == before


def test_it_unpublishes_a_run_whose_topic_vanishes_while_it_is_published(
    draft_campaign: Campaign, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Steps of three staged rows (one topic each); before the second, its topic is deleted (as
    # a failed import's stub cleanup in the same campaign would): no foreign key notices.
    monkeypatch.setattr(run_imports, "PUBLISH_ROWS", 3)
    writes = run_import_writes.run_import_writes()

    def publish(step: run_import_writes.PublishStep) -> None:
        if step.number == 1:
            Topic.objects.filter(campaign=draft_campaign, qid="72").delete()
        writes.publish(step)

    monkeypatch.setattr(
        run_imports,
        "run_import_writes",
        lambda: run_import_writes.RunImportWrites(stage=writes.stage, publish=publish),
    )
    before = _stored()
    lines = [f"{qid} Q0 v{rank} {rank} {10 - rank} vanishing\n" for qid in (71, 72) for rank in (1, 2, 3)]
    run = "".join(lines)
    with pytest.raises(ImportFailed) as raised:
        runs_import(campaign=draft_campaign, files=[upload("vanishing.run", run)])
    [error] = raised.value.errors
    assert error.file == "vanishing.run"
    assert "deleted while it was imported" in error.reason
    assert _stored() == before


def test_topics_and_documents_are_found_by_their_unique_index_whatever_the_statistics(
    draft_campaign: Campaign,
) -> None:
    """No index on the campaign alone competes with the unique (campaign, qid) and (campaign,
    docno) ones; on PostgreSQL a publish step's lookups probe them per staged row even when the
    tables were analyzed empty (an import outgrows its statistics): the plain join made every
    document re-read the step's rows (4 s a step for a 1,500-line run)."""
    with connection.cursor() as cursor:
        for table in (Topic._meta.db_table, Document._meta.db_table):
            indexes = connection.introspection.get_constraints(cursor, table).values()
            assert [index["columns"] for index in indexes if index["index"] and not index["unique"]] == []
    if connection.vendor != "postgresql":
        return
    tables = run_import_writes._tables()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE {topic}, {document}, {staged}".format(**tables))
    lines = "".join(f"{q} Q0 d{q}-{d} {d} {1000 - d}.0 big\n" for q in range(1, 31) for d in range(1, 101))
    runs_import(campaign=draft_campaign, files=[upload("big.run", lines)])  # documents now outnumber stats
    step = run_import_writes.PublishStep(
        0, draft_campaign.pk, System.objects.get(name="big").pk, "k", 0, 0, 10
    )
    statement = (
        run_import_writes._ENTRIES_INSERT_POSTGRESQL + f"WHERE {run_import_writes._STEP_ROWS}"
    ).format(**tables)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {statement}", step.params())
        plan = "\n".join(row[0] for row in cursor.fetchall())
    # 3,000 documents: each staged row probes their unique index (an index or a bitmap scan; 30
    # topics fit one page, which a scan reads as cheaply).
    probes = [line for line in plan.splitlines() if "Index Cond" in line and "= (s.docno)" in line]
    assert probes and "document_docno_unique" in plan, plan
    assert "Hash Join" not in plan and "Seq Scan on labeling_document" not in plan, plan
