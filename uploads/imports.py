"""Imports of topics, documents, runs and qrels: streamed, batched, all or nothing.

Each import reads and checks every file whole first, with no transaction open: a bad file
stores nothing, and `ImportFailed` lists every file's error (file, line, reason). Only then
are the rows stored, `STORE_ROWS` per short transaction, so the write lock (SQLite's IMMEDIATE
transactions) is never held while a file is parsed and an assessor's answer waits for one
batch at most. If storing fails midway (a lost connection, a full disk), the upload's undo
log (`infrastructure.undo_log`) takes back what it stored. Call the imports outside any
transaction (inside one, the batches become savepoints of it and the lock is held throughout).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, BinaryIO

from django.db import connection
from django.db.models import F, Max, Model
from django.utils import timezone

from estimation.formats.trec import InputFileError, LabelLine, QrelsLine, iter_labels, iter_qrels
from infrastructure.db import brief_write
from infrastructure.pair_lookup import PairLookup
from infrastructure.undo_log import UndoLog
from labeling.fields import DOCNO_MAX_CHARS, QID_MAX_CHARS
from labeling.import_reports import BATCH_SIZE, ImportReport, UploadedFile, batches, uploads_check
from labeling.models import Campaign, Document, Judgment, PoolItem, Topic
from labeling.services.pools import pool_mark_prejudged
from uploads.formats import sniff_format, upload_lines
from uploads.formats.documents import DocumentRecord, iter_documents_jsonl
from uploads.formats.topics import TopicRecord, iter_topics_jsonl, iter_topics_trec

STORE_ROWS = 250
"""Rows an upload stores per transaction: tens of milliseconds of the write lock on SQLite
(20,000-line uploads on a machine at load 7 on 2 cores, median per transaction: 250 topics
27 ms, 250 documents of 2 KB 29 ms, 250 qrels lines 22 ms)."""
NOTES_SHOWN = 5
"""How many examples a note of the import report lists."""


def _format_of(name: str, stream: BinaryIO, given: str | None, candidates: tuple[str, ...]) -> str:
    if given:
        if given not in candidates:
            raise InputFileError(
                name, None, f"unknown format {given!r}; expected one of {', '.join(candidates)}"
            )
        return given
    return sniff_format(name, stream, candidates)


def _upload_log(*, gives_text: bool) -> UndoLog:
    """The undo log of one upload (`infrastructure.undo_log`). A created topic or document that
    something came to refer to meanwhile (a run uploaded at the same time) is turned back into
    the stub that run would have made rather than deleted with what refers to it; the stubs a
    qrels upload made are deleted only while still stubs that nothing refers to."""
    return UndoLog(delete_created=partial(_delete_created, gave_text=gives_text))


def _store(log: UndoLog, write: Callable[[], tuple[dict[type[Model], list[int]], list[_Changed]]]) -> None:
    """Run `write` in one short transaction; log the ids it created and the rows it changed."""
    with brief_write():
        created, changed = write()
    for model, ids in created.items():
        log.created(model, ids)
    for rows in changed:
        log.changed(rows.model, rows.fields, rows.values)


@dataclass
class _Changed:
    """Rows a batch is about to change: `values` are (pk, *fields) as stored before."""

    model: type[Model]
    fields: list[str]
    values: list[list[Any]]


_STUB_VALUES: dict[type[Model], dict[str, Any]] = {
    Topic: {"title": F("qid"), "description": "", "narrative": "", "is_stub": True},
    Document: {"title": "", "text": "", "url": "", "length": None, "is_stub": True},
}


def _delete_created(model: type[Model], ids: list[int], gave_text: bool) -> None:
    """Delete the rows an upload created. A topic or document that something refers to by now
    is kept as a stub (deleting it would delete what refers to it): the upload's text is taken
    off if it `gave_text`; a stub it made is left alone once another upload filled it."""
    rows = model._base_manager.filter(pk__in=ids)
    stub = _STUB_VALUES.get(model)
    if stub is None:
        rows.delete()
        return
    if gave_text:
        rows.update(**stub)
    rows = rows.filter(is_stub=True)
    for relation in model._meta.get_fields(include_hidden=True):
        if relation.auto_created and not relation.concrete and (relation.one_to_many or relation.one_to_one):
            referring = relation.related_model._base_manager.filter(  # type: ignore[union-attr]  # a reverse relation's model
                **{f"{relation.field.name}__in": ids}  # type: ignore[union-attr]  # its foreign key
            )
            rows = rows.exclude(pk__in=referring.values(relation.field.attname))  # type: ignore[union-attr]
    rows.delete()


def topics_import(
    *, campaign: Campaign, files: Sequence[UploadedFile], file_format: str | None = None
) -> ImportReport:
    """Import TREC topic files or JSONL topics; existing topics (and stubs) are updated."""

    def records(name: str, stream: BinaryIO) -> Iterator[TopicRecord]:
        kind = _format_of(name, stream, file_format, ("trec", "jsonl"))
        reader = iter_topics_trec if kind == "trec" else iter_topics_jsonl
        return reader(upload_lines(name, stream), name)

    def write(batch: list[TopicRecord]) -> tuple[dict[type[Model], list[int]], list[_Changed]]:
        rows = [
            {"qid": r.qid, "title": r.title, "description": r.description, "narrative": r.narrative}
            for r in batch
        ]
        created, changes = _text_rows_upsert(Topic, campaign, "qid", rows, report)
        filled[0] += sum(1 for row in changes[0].values if row[-1])  # is_stub before
        return created, changes

    uploads_check(files, records)
    report = ImportReport(files=len(files))
    # Runs name topics before their text comes: such a topic counts as "updated", and the report
    # says so, so that "0 new, 5 updated" is not mistaken for nothing new.
    filled = [0]
    with _upload_log(gives_text=True) as log:
        for name, stream in files:
            for batch in batches(records(name, stream), STORE_ROWS):
                _store(log, partial(write, batch))
    if filled[0]:
        report.notes.append(f"{filled[0]} of the updated topics were named by runs and now have their text")
    return report


def documents_import(
    *, campaign: Campaign, files: Sequence[UploadedFile], file_format: str | None = None
) -> ImportReport:
    """Import JSONL documents; stubs that runs created are filled in."""

    def records(name: str, stream: BinaryIO) -> Iterator[DocumentRecord]:
        _format_of(name, stream, file_format, ("jsonl",))
        return iter_documents_jsonl(upload_lines(name, stream), name)

    def write(batch: list[DocumentRecord]) -> tuple[dict[type[Model], list[int]], list[_Changed]]:
        rows = [
            {"docno": r.docno, "title": r.title, "text": r.text, "url": r.url, "length": r.length}
            for r in batch
        ]
        return _text_rows_upsert(Document, campaign, "docno", rows, report)

    uploads_check(files, records)
    report = ImportReport(files=len(files))
    with _upload_log(gives_text=True) as log:
        for name, stream in files:
            for batch in batches(records(name, stream), STORE_ROWS):
                _store(log, partial(write, batch))
    return report


def _text_rows_upsert(
    model: type[Topic] | type[Document],
    campaign: Campaign,
    key: str,
    rows: list[dict[str, Any]],
    report: ImportReport,
) -> tuple[dict[type[Model], list[int]], list[_Changed]]:
    """Store a batch of topics or documents by their key (`qid`, `docno`): new ones created,
    stubs that runs named filled in, changed ones updated, identical ones left alone and counted
    as unchanged. (The created rows' ids, and the replaced rows' old values: the upload's undo
    log takes both.)"""
    fields = [*(name for name in (rows[0] if rows else {}) if name != key), "is_stub"]
    stored = {
        found: (pk, values)
        for pk, found, *values in model.objects.filter(
            campaign=campaign, **{f"{key}__in": [row[key] for row in rows]}
        ).values_list("pk", key, *fields)
    }
    changed = [
        row
        for row in rows
        if row[key] not in stored or stored[row[key]][1] != [*(row[name] for name in fields[:-1]), False]
    ]
    model.objects.bulk_create(
        [model(campaign=campaign, **row, is_stub=False) for row in changed],  # type: ignore[misc]
        update_conflicts=True,
        unique_fields=["campaign", key],
        update_fields=fields,
    )
    replaced = [[pk, *values] for pk, values in (stored[row[key]] for row in changed if row[key] in stored)]
    new = [row[key] for row in changed if row[key] not in stored]
    _count(report, len(rows), len(changed), len(replaced))
    created = list(
        model.objects.filter(campaign=campaign, **{f"{key}__in": new}).values_list("pk", flat=True)
    )
    return {model: created}, [_Changed(model, fields, replaced)]


def _count(report: ImportReport, lines: int, written: int, updated: int) -> None:
    """Count a batch: `written` rows were stored (`updated` of them existed), the rest unchanged."""
    report.lines += lines
    report.updated += updated
    report.created += written - updated
    report.unchanged += lines - written


def _topic_ids(campaign: Campaign, qids: set[str], cache: dict[str, int]) -> list[int]:
    """Fill `cache` (qid -> topic id), creating stubs for topics no upload gave yet; the ids
    of the stubs created."""
    missing = [qid for qid in qids if qid not in cache]
    if not missing:
        return []
    Topic.objects.bulk_create(
        [Topic(campaign=campaign, qid=qid, title=qid, is_stub=True) for qid in missing],
        ignore_conflicts=True,
    )
    made = dict(Topic.objects.filter(campaign=campaign, qid__in=missing).values_list("qid", "id"))
    cache.update(made)
    return list(made.values())


def _insert_rows(model: type[Model], columns: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """INSERT ... ON CONFLICT DO NOTHING with executemany: the ORM's per-object cost (about
    100 microseconds a row) would dominate a million-line run."""
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    marks = ", ".join(["%s"] * len(columns))
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} ({names}) VALUES ({marks}) ON CONFLICT DO NOTHING",
            list(rows),  # type: ignore[arg-type]  # column values the database adapts (str, int, ...)
        )


def _document_ids(campaign: Campaign, docnos: set[str]) -> tuple[dict[str, int], list[int]]:
    """docno -> document id for one batch, creating stubs for documents no upload gave; and
    the ids of the stubs created."""
    known = dict(Document.objects.filter(campaign=campaign, docno__in=docnos).values_list("docno", "id"))
    missing = docnos.difference(known)
    if not missing:
        return known, []
    _insert_rows(
        Document,
        ["campaign_id", "docno", "title", "text", "url", "is_stub"],
        [(campaign.pk, docno, "", "", "", True) for docno in missing],
    )
    made = dict(Document.objects.filter(campaign=campaign, docno__in=missing).values_list("docno", "id"))
    known.update(made)
    return known, list(made.values())


def _qrels_grades(campaign: Campaign, pairs: set[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """The grades earlier qrels gave these (topic id, document id) pairs, in one statement that
    probes the qrels' unique index once per pair (`PairLookup`), where topic and document
    lists read every qrels row of the batch's topics (100 ms a batch at 20,000 rows). The source
    is written out so that the databases may use that partial index."""
    rows = PairLookup(
        table=Judgment._meta.db_table,
        columns=("topic_id", "document_id", "grade"),
        condition=f"campaign_id = %s AND source = '{Judgment.Source.QRELS.value}'",
        parameters=[campaign.pk],
        pair_columns=("topic_id", "document_id"),
    ).rows(list(pairs))
    return {(topic_id, document_id): grade for topic_id, document_id, grade in rows}


def qrels_import(*, campaign: Campaign, files: Sequence[UploadedFile]) -> ImportReport:
    """Import existing qrels as judgments already made (never sampled again).

    Negative grades (TREC's junk/spam marks) count as 0, as in trec_eval; grades above the
    campaign's scale are errors. A pair already judged by earlier qrels keeps its grade: the
    report counts it as unchanged, and a note says when the new file gave another grade.
    """
    top_grade = campaign.grade_count - 1
    regraded: list[str] = []
    negative_lines = 0

    def records(name: str, stream: BinaryIO) -> Iterator[QrelsLine]:
        for line in iter_qrels(upload_lines(name, stream), name):
            if line.grade > top_grade:
                reason = f"grade {line.grade} is above the campaign's top grade {top_grade}"
                raise InputFileError(name, line.line, reason)
            for what, value, limit in (
                ("qid", line.qid, QID_MAX_CHARS),
                ("docno", line.docno, DOCNO_MAX_CHARS),
            ):
                if len(value) > limit:
                    raise InputFileError(
                        name, line.line, f"{what} longer than {limit} characters (the limit)"
                    )
            yield line

    def write(name: str, batch: list[QrelsLine]) -> tuple[dict[type[Model], list[int]], list[_Changed]]:
        nonlocal negative_lines
        negative_lines += sum(1 for line in batch if line.grade < 0)
        topic_stubs = _topic_ids(campaign, {line.qid for line in batch}, topic_cache)
        document_ids, document_stubs = _document_ids(campaign, {line.docno for line in batch})
        earlier_grades = _qrels_grades(
            campaign, {(topic_cache[line.qid], document_ids[line.docno]) for line in batch}
        )
        new_pairs: dict[tuple[int, int], int] = {}
        for line in batch:
            pair = (topic_cache[line.qid], document_ids[line.docno])
            earlier = earlier_grades.get(pair)
            if earlier is None:
                new_pairs.setdefault(pair, max(0, line.grade))
            elif earlier != max(0, line.grade):
                regraded.append(
                    f"{name}:{line.line}: query {line.qid!r} document {line.docno!r} has grade "
                    f"{earlier} from earlier qrels; kept (this file says {line.grade})"
                )
        floor = Judgment.objects.aggregate(top=Max("id"))["top"] or 0
        now = timezone.now()
        _insert_rows(
            Judgment,
            ["campaign_id", "topic_id", "document_id", "grade", "cost", "source", "created_at"],
            [
                (campaign.pk, topic_id, document_id, grade, 0.0, Judgment.Source.QRELS.value, now)
                for (topic_id, document_id), grade in new_pairs.items()
            ],
        )
        inserted = [
            pk
            for pk, topic_id, document_id in Judgment.objects.filter(
                campaign=campaign,
                source=Judgment.Source.QRELS,
                pk__gt=floor,
                topic_id__in={pair[0] for pair in new_pairs},
            ).values_list("pk", "topic_id", "document_id")
            if (topic_id, document_id) in new_pairs
        ]
        kept = sum(1 for line in batch if (topic_cache[line.qid], document_ids[line.docno]) in earlier_grades)
        report.lines += len(batch)
        report.created += len(batch) - kept
        report.unchanged += kept
        return {Topic: topic_stubs, Document: document_stubs, Judgment: inserted}, []

    uploads_check(files, records)
    report = ImportReport(files=len(files))
    topic_cache = dict(Topic.objects.filter(campaign=campaign).values_list("qid", "id"))
    with _upload_log(gives_text=False) as log:
        for name, stream in files:
            for batch in batches(records(name, stream), STORE_ROWS):
                _store(log, partial(write, name, batch))
        pool_mark_prejudged(campaign=campaign)
    if negative_lines:
        report.notes.append(
            f"{negative_lines} line(s) have a negative grade (TREC's mark for junk or spam) and count "
            "as grade 0, as in trec_eval"
        )
    if regraded:
        shown = regraded[:NOTES_SHOWN]
        more = f" (and {len(regraded) - len(shown)} more)" if len(regraded) > len(shown) else ""
        report.notes.append(
            f"{len(regraded)} judged pair(s) were given another grade than the stored one; the stored "
            f"grade is kept{more}: " + "; ".join(shown)
        )
    return report


def labels_import(*, campaign: Campaign, files: Sequence[UploadedFile]) -> ImportReport:
    """Import prior grade probabilities (`qid docno p_0 .. p_ymax`) for pool items; the label
    model uses them as each item's default prior and as a feature. Rows for pairs outside the
    pool are ignored (counted as unchanged, with a note)."""
    width = campaign.grade_count

    def records(name: str, stream: BinaryIO) -> Iterator[LabelLine]:
        for line in iter_labels(upload_lines(name, stream), name):
            if len(line.probabilities) != width:
                reason = (
                    f"expected {width} probabilities (grades 0..{width - 1} of the campaign), "
                    f"found {len(line.probabilities)}"
                )
                raise InputFileError(name, line.line, reason)
            yield line

    def write(batch: list[LabelLine]) -> tuple[dict[type[Model], list[int]], list[_Changed]]:
        items = {
            (qid, docno): (pk, prior)
            for pk, qid, docno, prior in PoolItem.objects.filter(
                campaign=campaign,
                topic__qid__in={line.qid for line in batch},
                document__docno__in={line.docno for line in batch},
            ).values_list("pk", "topic__qid", "document__docno", "prior")
        }
        updates = {
            items[(line.qid, line.docno)][0]: list(line.probabilities)
            for line in batch
            if (line.qid, line.docno) in items
        }
        earlier = [[pk, prior] for pk, prior in items.values() if pk in updates]
        PoolItem.objects.bulk_update(
            [PoolItem(pk=pk, prior=prior) for pk, prior in updates.items()], ["prior"], batch_size=BATCH_SIZE
        )
        in_pool = sum(1 for line in batch if (line.qid, line.docno) in items)
        report.lines += len(batch)
        report.updated += in_pool
        report.unchanged += len(batch) - in_pool
        return {}, [_Changed(PoolItem, ["prior"], earlier)]

    uploads_check(files, records)
    report = ImportReport(files=len(files))
    try:
        with _upload_log(gives_text=False) as log:
            for name, stream in files:
                for batch in batches(records(name, stream), STORE_ROWS):
                    _store(log, partial(write, batch))
    finally:
        # The cached pool arrays are keyed by this version: readers during the upload may have
        # cached some of its priors, so the version moves on whether it was stored or taken back.
        Campaign.objects.filter(pk=campaign.pk).update(pool_version=F("pool_version") + 1)
        campaign.refresh_from_db(fields=["pool_version"])
    if report.unchanged:
        report.notes.append(f"{report.unchanged} row(s) name a pair outside the pool and were ignored")
    return report
