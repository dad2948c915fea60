"""The bulk writes of a run import, one way per database (`run_import_writes()` chooses by vendor).

Both ways write the same rows: staged lines 5,000 per transaction, then each step of the
publish (document stubs, then ranking entries from an INSERT ... SELECT over the staged rows)
in a transaction of its own. PostgreSQL's way differs where its costs differ from SQLite's:

- staged rows go in with COPY (psycopg's `executemany` costs tens of microseconds a row, COPY
  a few), into a table that is not WAL-logged (migration 0018: staged rows are worthless after
  a crash, which kills the import that wrote them anyway);
- document stubs are inserted for the docnos not yet stored only (an anti-join: ON CONFLICT
  alone makes PostgreSQL try every docno of the step against the unique index, most of them
  known after the first steps);
- ranking entries go in without ON CONFLICT (the system is this import's own and the readers
  refuse a document listed twice for a topic, so nothing can conflict; PostgreSQL pays for a
  speculative insertion per row otherwise), in index order;
- a step deletes the staged rows it published, so the delete after the publish finds none.

Each step checks that it published every staged row of its range: ranking entries have no
foreign-key constraints (`RankingEntry`), so a system, topic or document deleted while its run
is published (its campaign deleted, or a failed import's stubs) would otherwise go unnoticed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db import connection, transaction

from labeling.models import Document, RankingEntry, System, Topic
from uploads.models import StagedRunLine

STAGED_COLUMNS = ("import_key", "file_index", "qid", "docno", "rank", "score", "line")
StagedRow = tuple[str, int, str, str, int, float, int]
"""A staged row, in the order of STAGED_COLUMNS."""
ANALYZE_EVERY = 10
"""PostgreSQL: fresh statistics every this many publish steps (see `_publish_postgresql`)."""


@dataclass(frozen=True)
class PublishStep:
    """Staged rows `start <= id < stop` of one file, published into `system_id`'s entries."""

    number: int
    campaign_id: int
    system_id: int
    import_key: str
    file_index: int
    start: int
    stop: int

    def params(self) -> dict[str, int | str]:
        return {
            "campaign": self.campaign_id,
            "system": self.system_id,
            "key": self.import_key,
            "file": self.file_index,
            "start": self.start,
            "stop": self.stop,
        }


class StepIncomplete(Exception):
    """A publish step found fewer topics, documents or systems than its staged rows name."""

    def __init__(self, staged: int, published: int) -> None:
        super().__init__(f"{published} of {staged} staged rows published")
        self.staged = staged
        self.published = published


@dataclass(frozen=True)
class RunImportWrites:
    """Writes staged rows (one transaction) and publishes one step (one transaction, rolled
    back with StepIncomplete when a staged row found no system, topic or document)."""

    stage: Callable[[Sequence[StagedRow]], None]
    publish: Callable[[PublishStep], None]


def run_import_writes() -> RunImportWrites:
    """The bulk writes for the database of the default connection."""
    return _POSTGRESQL if connection.vendor == "postgresql" else _PORTABLE


def _tables() -> dict[str, str]:
    quote = connection.ops.quote_name
    return {
        "staged": quote(StagedRunLine._meta.db_table),
        "document": quote(Document._meta.db_table),
        "topic": quote(Topic._meta.db_table),
        "entry": quote(RankingEntry._meta.db_table),
        "system": quote(System._meta.db_table),
        "staged_columns": ", ".join(quote(name) for name in STAGED_COLUMNS),
    }


# The staged rows of one step, by the primary key (the staging table has no other index).
_STEP_ROWS = "s.import_key = %(key)s AND s.file_index = %(file)s AND s.id >= %(start)s AND s.id < %(stop)s"


# ---------------------------------------------------------------------------------------------
# SQLite (and any other database): the portable SQL


# A step's ranking entries, joined from its staged rows (each database adds its own ending).
_ENTRIES_INSERT = (
    "INSERT INTO {entry} (system_id, topic_id, document_id, rank, score) "
    "SELECT y.id, t.id, d.id, s.rank, s.score FROM {staged} s "
    "JOIN {system} y ON y.id = %(system)s "
    "JOIN {topic} t ON t.campaign_id = %(campaign)s AND t.qid = s.qid "
    "JOIN {document} d ON d.campaign_id = %(campaign)s AND d.docno = s.docno "
)


def _stage_portable(rows: Sequence[StagedRow]) -> None:
    sql = "INSERT INTO {staged} ({staged_columns}) VALUES (%s, %s, %s, %s, %s, %s, %s)".format(**_tables())
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def _publish_portable(step: PublishStep) -> None:
    tables = _tables()
    stubs = (
        "INSERT INTO {document} (campaign_id, docno, title, text, url, is_stub) "
        "SELECT DISTINCT %(campaign)s, s.docno, '', '', '', %(true)s FROM {staged} s "
        f"WHERE {_STEP_ROWS} ON CONFLICT DO NOTHING"
    ).format(**tables)
    entries = (_ENTRIES_INSERT + f"WHERE {_STEP_ROWS} ON CONFLICT DO NOTHING").format(**tables)
    staged = f"SELECT COUNT(*) FROM {{staged}} s WHERE {_STEP_ROWS}".format(**tables)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(stubs, {**step.params(), "true": True})
        cursor.execute(entries, step.params())
        published = cursor.rowcount
        cursor.execute(staged, step.params())
        (count,) = cursor.fetchone()
        if published != count:
            raise StepIncomplete(count, published)


_PORTABLE = RunImportWrites(stage=_stage_portable, publish=_publish_portable)


# ---------------------------------------------------------------------------------------------
# PostgreSQL


def _stage_postgresql(rows: Sequence[StagedRow]) -> None:
    sql = "COPY {staged} ({staged_columns}) FROM STDIN".format(**_tables())
    with transaction.atomic(), connection.cursor() as cursor:
        with cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)


# PostgreSQL's entries: each staged row looks its topic and document up by their unique index
# (a LATERAL subquery, `OFFSET 0` keeping the planner from flattening it into a plain join). The
# plain join was planned from statistics the import had outgrown: a document table estimated at
# one row for the campaign became the outer loop, and every document re-read the step's staged
# rows (a 1,500-line run took 4 s a step).
_ENTRIES_INSERT_POSTGRESQL = (
    "INSERT INTO {entry} (system_id, topic_id, document_id, rank, score) "
    "SELECT y.id, t.id, d.id, s.rank, s.score FROM {staged} s "
    "JOIN {system} y ON y.id = %(system)s "
    "CROSS JOIN LATERAL (SELECT id FROM {topic} WHERE campaign_id = %(campaign)s AND qid = s.qid "
    "OFFSET 0) t "
    "CROSS JOIN LATERAL (SELECT id FROM {document} WHERE campaign_id = %(campaign)s "
    "AND docno = s.docno OFFSET 0) d "
)


def _publish_postgresql(step: PublishStep) -> None:
    tables = _tables()
    stubs = (
        "INSERT INTO {document} (campaign_id, docno, title, text, url, is_stub) "
        "SELECT %(campaign)s, n.docno, '', '', '', true "
        f"FROM (SELECT DISTINCT s.docno FROM {{staged}} s WHERE {_STEP_ROWS}) n "
        "WHERE NOT EXISTS (SELECT 1 FROM {document} d WHERE d.campaign_id = %(campaign)s "
        "AND d.docno = n.docno) "
        # A concurrent import into the same campaign may add the same docno meanwhile.
        "ON CONFLICT DO NOTHING"
    ).format(**tables)
    entries = (_ENTRIES_INSERT_POSTGRESQL + f"WHERE {_STEP_ROWS} ORDER BY t.id, d.id").format(**tables)
    deleted = f"DELETE FROM {{staged}} s WHERE {_STEP_ROWS}".format(**tables)
    if step.number % ANALYZE_EVERY == 0:
        # Planned on a staging or document table autovacuum has not looked at yet, PostgreSQL
        # joins them by scanning (about a second a step).
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE {staged}, {document}, {topic}".format(**tables))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(stubs, step.params())
        cursor.execute(entries, step.params())
        published = cursor.rowcount
        cursor.execute(deleted, step.params())
        if published != cursor.rowcount:
            raise StepIncomplete(cursor.rowcount, published)


_POSTGRESQL = RunImportWrites(stage=_stage_postgresql, publish=_publish_postgresql)
