"""Imports of topics, documents, runs and qrels: streamed, batched, all or nothing.

Every import runs in one transaction. Each file gets its own savepoint so that, when one
file is malformed, the others are still read to report their errors too; then everything
rolls back and `ImportFailed` lists the errors (file, line, reason).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from django.db import connection, transaction
from django.db.models import Exists, F, Model, OuterRef
from django.utils import timezone

from estimation.formats.trec import InputFileError, iter_labels, iter_qrels
from labeling.formats import sniff_format, upload_lines
from labeling.formats.documents import iter_documents_jsonl
from labeling.formats.fields import DOCNO_MAX_CHARS, QID_MAX_CHARS
from labeling.formats.topics import TopicRecord, iter_topics_jsonl, iter_topics_trec
from labeling.models import Campaign, Document, Judgment, PoolItem, RankingEntry, Topic
from labeling.selectors import ranking_positions

BATCH_SIZE = 2000
NOTES_SHOWN = 5
"""How many examples a note of the import report lists."""
UploadedFile = tuple[str, BinaryIO]


class ImportFailed(ValueError):
    """One or more files were malformed; nothing was stored. `errors` lists them all."""

    def __init__(self, errors: Sequence[InputFileError]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(str(error) for error in self.errors))


@dataclass
class ImportReport:
    """What an import did: rows `created`, `updated` (changed, or a stub filled in) and left
    `unchanged` (the same values were stored already, or an earlier qrels grade was kept),
    with `notes` saying why anything was left as it was."""

    files: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    lines: int = 0
    systems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def each_file(
    files: Sequence[UploadedFile], importer: Callable[[str, BinaryIO, ImportReport], None]
) -> ImportReport:
    """Run `importer` on every file inside the caller's transaction; collect every file's error."""
    if not files:
        raise ImportFailed([InputFileError("(no file)", None, "no file was uploaded")])
    report = ImportReport()
    errors: list[InputFileError] = []
    for name, stream in files:
        try:
            with transaction.atomic():
                importer(name, stream, report)
            report.files += 1
        except InputFileError as error:
            errors.append(error)
    if errors:
        raise ImportFailed(errors)
    return report


def batches(records: Iterable, size: int = BATCH_SIZE) -> Iterable[list]:
    """Records in lists of `size` (the last shorter): uploads insert a batch at a time."""
    batch: list = []
    for record in records:
        batch.append(record)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _format_of(name: str, stream: BinaryIO, given: str | None, candidates: tuple[str, ...]) -> str:
    if given:
        if given not in candidates:
            raise InputFileError(
                name, None, f"unknown format {given!r}; expected one of {', '.join(candidates)}"
            )
        return given
    return sniff_format(name, stream, candidates)


@transaction.atomic
def topics_import(
    *, campaign: Campaign, files: Sequence[UploadedFile], file_format: str | None = None
) -> ImportReport:
    """Import TREC topic files or JSONL topics; existing topics (and stubs) are updated."""

    def one(name: str, stream: BinaryIO, report: ImportReport) -> None:
        kind = _format_of(name, stream, file_format, ("trec", "jsonl"))
        reader = iter_topics_trec if kind == "trec" else iter_topics_jsonl
        records: Iterable[TopicRecord] = reader(upload_lines(name, stream), name)
        for batch in batches(records):
            stored = {
                qid: values
                for qid, *values in Topic.objects.filter(
                    campaign=campaign, qid__in=[r.qid for r in batch]
                ).values_list("qid", "title", "description", "narrative", "is_stub")
            }
            changed = [r for r in batch if stored.get(r.qid) != [r.title, r.description, r.narrative, False]]
            Topic.objects.bulk_create(
                [
                    Topic(
                        campaign=campaign,
                        qid=r.qid,
                        title=r.title,
                        description=r.description,
                        narrative=r.narrative,
                        is_stub=False,
                    )
                    for r in changed
                ],
                update_conflicts=True,
                unique_fields=["campaign", "qid"],
                update_fields=["title", "description", "narrative", "is_stub"],
            )
            _count(report, len(batch), len(changed), sum(1 for r in changed if r.qid in stored))
            filled[0] += sum(1 for r in changed if r.qid in stored and stored[r.qid][3])

    # Runs name topics before their text comes: such a topic counts as "updated", and the report
    # says so, so that "0 new, 5 updated" is not mistaken for nothing new.
    filled = [0]
    report = each_file(files, one)
    if filled[0]:
        report.notes.append(f"{filled[0]} of the updated topics were named by runs and now have their text")
    return report


@transaction.atomic
def documents_import(
    *, campaign: Campaign, files: Sequence[UploadedFile], file_format: str | None = None
) -> ImportReport:
    """Import JSONL documents; stubs that runs created are filled in."""

    def one(name: str, stream: BinaryIO, report: ImportReport) -> None:
        _format_of(name, stream, file_format, ("jsonl",))
        for batch in batches(iter_documents_jsonl(upload_lines(name, stream), name)):
            stored = {
                docno: values
                for docno, *values in Document.objects.filter(
                    campaign=campaign, docno__in=[r.docno for r in batch]
                ).values_list("docno", "title", "text", "url", "length", "is_stub")
            }
            changed = [r for r in batch if stored.get(r.docno) != [r.title, r.text, r.url, r.length, False]]
            Document.objects.bulk_create(
                [
                    Document(
                        campaign=campaign,
                        docno=r.docno,
                        title=r.title,
                        text=r.text,
                        url=r.url,
                        length=r.length,
                        is_stub=False,
                    )
                    for r in changed
                ],
                update_conflicts=True,
                unique_fields=["campaign", "docno"],
                update_fields=["title", "text", "url", "length", "is_stub"],
            )
            _count(report, len(batch), len(changed), sum(1 for r in changed if r.docno in stored))

    return each_file(files, one)


def _count(report: ImportReport, lines: int, written: int, updated: int) -> None:
    """Count a batch: `written` rows were stored (`updated` of them existed), the rest unchanged."""
    report.lines += lines
    report.updated += updated
    report.created += written - updated
    report.unchanged += lines - written


def _topic_ids(campaign: Campaign, qids: set[str], cache: dict[str, int]) -> dict[str, int]:
    """qid -> topic id, creating stubs for topics no upload gave yet."""
    missing = [qid for qid in qids if qid not in cache]
    if missing:
        Topic.objects.bulk_create(
            [Topic(campaign=campaign, qid=qid, title=qid, is_stub=True) for qid in missing],
            ignore_conflicts=True,
        )
        cache.update(Topic.objects.filter(campaign=campaign, qid__in=missing).values_list("qid", "id"))
    return cache


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


def _document_ids(campaign: Campaign, docnos: set[str]) -> dict[str, int]:
    """docno -> document id for one batch, creating stubs for documents no upload gave."""
    known = dict(Document.objects.filter(campaign=campaign, docno__in=docnos).values_list("docno", "id"))
    missing = docnos.difference(known)
    if missing:
        _insert_rows(
            Document,
            ["campaign_id", "docno", "title", "text", "url", "is_stub"],
            [(campaign.pk, docno, "", "", "", True) for docno in missing],
        )
        known.update(Document.objects.filter(campaign=campaign, docno__in=missing).values_list("docno", "id"))
    return known


@transaction.atomic
def qrels_import(*, campaign: Campaign, files: Sequence[UploadedFile]) -> ImportReport:
    """Import existing qrels as judgments already made (never sampled again).

    Negative grades (TREC's junk/spam marks) count as 0, as in trec_eval; grades above the
    campaign's scale are errors. A pair already judged by earlier qrels keeps its grade: the
    report counts it as unchanged, and a note says when the new file gave another grade.
    """
    top_grade = campaign.grade_count - 1
    topic_cache = dict(Topic.objects.filter(campaign=campaign).values_list("qid", "id"))
    regraded: list[str] = []

    def one(name: str, stream: BinaryIO, report: ImportReport) -> None:
        for batch in batches(iter_qrels(upload_lines(name, stream), name)):
            for line in batch:
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
            _topic_ids(campaign, {line.qid for line in batch}, topic_cache)
            document_ids = _document_ids(campaign, {line.docno for line in batch})
            earlier_grades = {
                (topic_id, document_id): grade
                for topic_id, document_id, grade in Judgment.objects.filter(
                    campaign=campaign,
                    source=Judgment.Source.QRELS,
                    topic_id__in={topic_cache[line.qid] for line in batch},
                    document_id__in=set(document_ids.values()),
                ).values_list("topic_id", "document_id", "grade")
            }
            new_lines = []
            for line in batch:
                earlier = earlier_grades.get((topic_cache[line.qid], document_ids[line.docno]))
                if earlier is None:
                    new_lines.append(line)
                elif earlier != max(0, line.grade):
                    regraded.append(
                        f"{name}:{line.line}: query {line.qid!r} document {line.docno!r} has grade "
                        f"{earlier} from earlier qrels; kept (this file says {line.grade})"
                    )
            now = timezone.now()
            _insert_rows(
                Judgment,
                ["campaign_id", "topic_id", "document_id", "grade", "cost", "source", "created_at"],
                [
                    (
                        campaign.pk,
                        topic_cache[line.qid],
                        document_ids[line.docno],
                        max(0, line.grade),
                        0.0,
                        Judgment.Source.QRELS.value,
                        now,
                    )
                    for line in new_lines
                ],
            )
            report.lines += len(batch)
            report.created += len(new_lines)
            report.unchanged += len(batch) - len(new_lines)

    report = each_file(files, one)
    if regraded:
        shown = regraded[:NOTES_SHOWN]
        more = f" (and {len(regraded) - len(shown)} more)" if len(regraded) > len(shown) else ""
        report.notes.append(
            f"{len(regraded)} judged pair(s) were given another grade than the stored one; the stored "
            f"grade is kept{more}: " + "; ".join(shown)
        )
    pool_mark_prejudged(campaign=campaign)
    return report


def pool_mark_prejudged(*, campaign: Campaign) -> int:
    """Flag pool items that imported qrels already judge; returns how many were flagged."""
    judged = Judgment.objects.filter(
        campaign=campaign,
        source=Judgment.Source.QRELS,
        topic_id=OuterRef("topic_id"),
        document_id=OuterRef("document_id"),
    )
    return (
        PoolItem.objects.filter(campaign=campaign, prejudged=False)
        .filter(Exists(judged))
        .update(prejudged=True)
    )


@transaction.atomic
def pool_rebuild(*, campaign: Campaign) -> int:
    """Pool the top-d documents of every run and topic (trec_eval order: score descending,
    docno descending); add new items and refresh best ranks. Returns the pool size.

    The positions are read first, outside any write (a reader blocks no one, on SQLite in WAL
    mode as on PostgreSQL); the pool rows are then written in one short transaction (a savepoint
    inside a caller's), so a big run's pool never holds the write lock while it is read.
    """
    depth = campaign.effective_pool_depth
    positions = ranking_positions(
        RankingEntry.objects.filter(system__campaign=campaign, system__evaluation_only=False), depth
    ).values_list("topic_id", "document_id", "position")
    best: dict[tuple[int, int], int] = {}
    for topic_id, document_id, position in positions.iterator(chunk_size=BATCH_SIZE):
        key = (topic_id, document_id)
        if position < best.get(key, depth + 1):
            best[key] = position
    items = [
        PoolItem(campaign=campaign, topic_id=topic_id, document_id=document_id, best_rank=rank)
        for (topic_id, document_id), rank in best.items()
    ]
    with transaction.atomic():
        PoolItem.objects.bulk_create(
            items,
            batch_size=BATCH_SIZE,
            update_conflicts=True,
            unique_fields=["campaign", "topic", "document"],
            update_fields=["best_rank"],
        )
        pool_mark_prejudged(campaign=campaign)
        # The cached pool arrays and the sampling state are keyed by this version.
        Campaign.objects.filter(pk=campaign.pk).update(pool_version=F("pool_version") + 1)
    campaign.refresh_from_db(fields=["pool_version"])
    return PoolItem.objects.filter(campaign=campaign).count()


@transaction.atomic
def labels_import(*, campaign: Campaign, files: Sequence[UploadedFile]) -> ImportReport:
    """Import prior grade probabilities (`qid docno p_0 .. p_ymax`) for pool items; the label
    model uses them as each item's default prior and as a feature. Rows for pairs outside the
    pool are ignored (counted as unchanged, with a note)."""
    width = campaign.grade_count

    def one(name: str, stream: BinaryIO, report: ImportReport) -> None:
        for batch in batches(iter_labels(upload_lines(name, stream), name)):
            for line in batch:
                if len(line.probabilities) != width:
                    reason = (
                        f"expected {width} probabilities (grades 0..{width - 1} of the campaign), "
                        f"found {len(line.probabilities)}"
                    )
                    raise InputFileError(name, line.line, reason)
            items = {
                (qid, docno): pk
                for pk, qid, docno in PoolItem.objects.filter(
                    campaign=campaign,
                    topic__qid__in={line.qid for line in batch},
                    document__docno__in={line.docno for line in batch},
                ).values_list("pk", "topic__qid", "document__docno")
            }
            updates = [
                PoolItem(pk=items[(line.qid, line.docno)], prior=list(line.probabilities))
                for line in batch
                if (line.qid, line.docno) in items
            ]
            PoolItem.objects.bulk_update(updates, ["prior"], batch_size=BATCH_SIZE)
            report.lines += len(batch)
            report.updated += len(updates)
            report.unchanged += len(batch) - len(updates)

    report = each_file(files, one)
    if report.unchanged:
        report.notes.append(f"{report.unchanged} row(s) name a pair outside the pool and were ignored")
    Campaign.objects.filter(pk=campaign.pk).update(pool_version=F("pool_version") + 1)
    campaign.refresh_from_db(fields=["pool_version"])
    return report
