"""Run imports in short transactions: check and stage, then publish, then pool.

A million-line run written in one transaction held SQLite's write lock for tens of seconds
(and PostgreSQL's row locks on the campaign's pool), so judging in every other campaign stalled
or failed with "database is locked". Now:

1. **Stage.** Each file is parsed and checked by the block reader (`estimation.formats.run_blocks`;
   the line reader words the error when a file is bad) with no transaction open, and its rows
   are written to `StagedRunLine` a few thousand at a time, each batch its own short
   transaction. A bad file stages nothing that survives; every file's error is reported.
2. **Publish.** Only when every file passed: the system row, the topic and document stubs and
   then the ranking entries, `PUBLISH_ROWS` staged rows per transaction with INSERT ... SELECT
   (no row goes through Python twice). The SQL of staging and publishing is the database's own
   (`run_import_writes`: COPY on PostgreSQL).
3. **Pool.** The pool's positions are read with no transaction open; the pool rows are written
   in one short transaction.

Staged rows are deleted after publishing or on failure; a failure while publishing (which the
checks leave to the database itself: a disk full, a lost connection) deletes, through the
upload's undo log (`infrastructure.undo_log`), the systems this import created and the topic and
document stubs it made that nothing refers to, so no half-published run stays behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from django.db import connection, transaction
from django.db.models import Max, Min, Model, QuerySet

from estimation.formats.run_blocks import ColumnLimits, NeedsLineReader, RunBlock, iter_run_blocks
from estimation.formats.trec import InputFileError
from infrastructure.undo_log import UndoLog
from labeling.fields import DOCNO_MAX_CHARS, INT32_MAX, INT32_MIN, QID_MAX_CHARS, TAG_MAX_CHARS
from labeling.import_reports import BATCH_SIZE, ImportFailed, ImportReport, UploadedFile
from labeling.models import (
    Campaign,
    Document,
    Draw,
    Judgment,
    PoolItem,
    RankingEntry,
    System,
    Topic,
)
from labeling.services.pools import pool_rebuild
from uploads.formats import upload_lines
from uploads.formats.runs import iter_run_bounded
from uploads.models import StagedRunLine
from uploads.run_import_writes import PublishStep, StagedRow, StepIncomplete, run_import_writes

APP_BLOCK_BYTES = 1 << 20
"""Block size of the app's reads: small enough that a server process grows by little."""
SQLITE_CACHE_KIB = 24576
"""SQLite page cache of the importing connection while it imports (KiB)."""
STAGE_ROWS = 5000
"""Staged rows written per transaction."""
PUBLISH_ROWS = 20000
"""Staged rows published into ranking entries per transaction (tens of milliseconds)."""

LIMITS = ColumnLimits(
    qid_chars=QID_MAX_CHARS,
    docno_chars=DOCNO_MAX_CHARS,
    tag_chars=TAG_MAX_CHARS,
    rank_min=INT32_MIN,
    rank_max=INT32_MAX,
)


@dataclass
class _StagedFile:
    """One checked file in the staging table."""

    index: int
    name: str
    tag: str
    lines: int = 0
    qids: set[str] = field(default_factory=set)
    first_line: int = 1


@dataclass(frozen=True)
class StagedRuns:
    """The checked files of an import before anything is published (what `runs_import`'s
    `staged_check` reads)."""

    import_key: str
    file_count: int

    def top_documents(self, file_index: int, qids: set[str], depth: int) -> dict[str, list[str]]:
        """Per topic of `qids`, the file's first `depth` documents in trec_eval order (score
        descending, then docno descending, as the pool orders them)."""
        rows = (
            StagedRunLine.objects.filter(import_key=self.import_key, file_index=file_index, qid__in=qids)
            .order_by("qid", "-score", "-docno")
            .values_list("qid", "docno")
        )
        top: dict[str, list[str]] = {}
        for qid, docno in rows.iterator(chunk_size=BATCH_SIZE):
            documents = top.setdefault(qid, [])
            if len(documents) < depth:
                documents.append(docno)
        return top


def runs_import(
    *,
    campaign: Campaign,
    files: Sequence[UploadedFile],
    evaluation_only: bool = False,
    staged_check: Callable[[StagedRuns], None] | None = None,
) -> ImportReport:
    """Import TREC runs (one system per file, named by its tag: a file with two tags is refused
    at the first line of the second), then rebuild the pool.

    With `evaluation_only` the runs are stored to be evaluated on the stored draws
    (`sampling.evaluation`): they are not pooled and the sampling ignores them.
    Raises `ImportFailed` listing every bad file; then nothing is stored. `staged_check` reads
    the checked files before they are published and may refuse them with a ValueError (nothing
    is stored then either).

    Call it outside any transaction: its point is to commit in short steps (inside a
    caller's transaction the steps become savepoints and the lock is held to the end).
    """
    if not files:
        raise ImportFailed([InputFileError("(no file)", None, "no file was uploaded")])
    if not evaluation_only:
        _check_pooled_room(campaign, files)
    import_key = uuid.uuid4().hex
    # Once draws were made, the pool's topics are what they were drawn from (the estimators
    # weigh each topic 1/m): a pooled run may add documents to them, not new topics.
    pooled_qids: set[str] | None = None
    if not evaluation_only and Draw.objects.filter(campaign=campaign).exists():
        pooled_qids = set(PoolItem.objects.filter(campaign=campaign).values_list("topic__qid", flat=True))
    cache_before = _sqlite_cache_grow()
    try:
        staged: list[_StagedFile] = []
        errors: list[InputFileError] = []
        tags_taken = set(System.objects.filter(campaign=campaign).values_list("name", flat=True))
        for index, (name, stream) in enumerate(files):
            try:
                staged_file = _stage_file(import_key, index, name, stream, tags_taken, pooled_qids)
            except InputFileError as error:
                errors.append(error)
                _delete_staged(import_key, index)
                continue
            tags_taken.add(staged_file.tag)
            staged.append(staged_file)
        if errors:
            raise ImportFailed(errors)
        if staged_check is not None:
            staged_check(StagedRuns(import_key=import_key, file_count=len(staged)))
        report = _publish(campaign, import_key, staged, evaluation_only)
    finally:
        _delete_staged(import_key)
        _sqlite_cache_restore(cache_before)
    if not evaluation_only:
        pool_rebuild(campaign=campaign)
    return report


def _check_pooled_room(campaign: Campaign, files: Sequence[UploadedFile]) -> None:
    """ImportFailed, before anything is read, when the runs would take the campaign past the
    operator's LABELING_MAX_POOLED_RUNS."""
    from django.conf import settings

    ceiling = settings.LABELING_MAX_POOLED_RUNS
    pooled = System.objects.filter(campaign=campaign, evaluation_only=False).count()
    if pooled + len(files) > ceiling:
        reason = (
            f"the campaign pools {pooled} runs and may pool at most {ceiling} (the operator's "
            "LABELING_MAX_POOLED_RUNS): import it for evaluation only, or start a new campaign"
        )
        raise ImportFailed([InputFileError(files[0][0], None, reason)])


def _lines_checked(name: str, total: int, added: Sequence[int]) -> None:
    """InputFileError at the first line past the operator's LABELING_MAX_RUN_LINES; `total` run
    lines so far, the last of them on the file lines `added`."""
    from django.conf import settings

    ceiling = settings.LABELING_MAX_RUN_LINES
    if total > ceiling:
        reason = f"a run may hold at most {ceiling} lines (the operator's LABELING_MAX_RUN_LINES)"
        raise InputFileError(name, int(added[len(added) - (total - ceiling)]), reason)


def _sqlite_cache_grow() -> int | None:
    """Give this SQLite connection a 24 MB page cache for the import; returns the old setting.

    With SQLite's default 2 MB, inserting a million ranking entries reads index pages back
    from the OS for most rows (their document ids arrive in no order).
    """
    if connection.vendor != "sqlite":
        return None
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        before = int(cursor.fetchone()[0])
        cursor.execute(f"PRAGMA cache_size = {-SQLITE_CACHE_KIB}")
    return before


def _sqlite_cache_restore(before: int | None) -> None:
    if before is not None:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA cache_size = {int(before)}")


# ---------------------------------------------------------------------------------------------
# Stage


def _stage_file(
    import_key: str,
    index: int,
    name: str,
    stream: BinaryIO,
    tags_taken: set[str],
    pooled_qids: set[str] | None,
) -> _StagedFile:
    """Check one file and write its lines to the staging table; InputFileError if it is bad."""
    from django.conf import settings

    raw = _binary(name, stream)
    try:
        staged: _StagedFile | None = None
        blocks = iter_run_blocks(
            raw,
            block_bytes=APP_BLOCK_BYTES,
            max_line_bytes=settings.LABELING_UPLOAD_MAX_LINE_BYTES,
            max_bytes=settings.LABELING_UPLOAD_MAX_BYTES,
            limits=LIMITS,
        )
        for block in blocks:
            if staged is None:
                staged = _first_block(index, name, block, tags_taken)
            if any(tag != staged.tag for tag in block.tags):
                raise NeedsLineReader  # the line reader names the first line of another run
            _check_pooled(block, pooled_qids)
            staged.qids.update(block.qids)
            staged.lines += len(block)
            _lines_checked(name, staged.lines, block.lines.tolist())
            _stage_rows(
                import_key,
                index,
                zip(
                    block.qids,
                    block.docnos,
                    block.ranks.tolist(),
                    block.scores.tolist(),
                    block.lines.tolist(),
                    strict=True,
                ),
            )
        assert staged is not None  # iter_run_blocks raises NeedsLineReader on an empty run
        return staged
    except NeedsLineReader:
        # The line reader words the first problem exactly (file, line, reason).
        _delete_staged(import_key, index)
        return _stage_file_by_lines(import_key, index, name, stream, tags_taken, pooled_qids)


def _binary(name: str, stream: BinaryIO) -> BinaryIO:
    """The upload's bytes, gunzipped, from the start (the line reader re-reads the stream)."""
    import gzip

    stream = getattr(stream, "file", stream)
    stream.seek(0)
    head = stream.read(2)
    stream.seek(0)
    return gzip.GzipFile(fileobj=stream, mode="rb") if head == b"\x1f\x8b" else stream  # type: ignore[return-value]  # a GzipFile reads like the binary stream


def _first_block(index: int, name: str, block: RunBlock, tags_taken: set[str]) -> _StagedFile:
    if block.tags[0] in tags_taken:
        raise NeedsLineReader  # which error comes first in the file is the line reader's to say
    return _StagedFile(index=index, name=name, tag=block.tags[0])


def _not_pooled(name: str, line: int, qid: str) -> InputFileError:
    reason = (
        f"topic {qid!r} is not in the pool, and this campaign has drawn from the "
        "pool already: a new topic would change the topic weights the draws were made "
        "with. Import the run for evaluation only, or start a new campaign"
    )
    return InputFileError(name, line, reason)


def _check_pooled(block: RunBlock, pooled_qids: set[str] | None) -> None:
    if pooled_qids is not None and not pooled_qids.issuperset(block.qids):
        # A document listed twice earlier in the file would come first: the line reader
        # reports whichever problem comes first.
        raise NeedsLineReader


def _stage_file_by_lines(
    import_key: str,
    index: int,
    name: str,
    stream: BinaryIO,
    tags_taken: set[str],
    pooled_qids: set[str] | None,
) -> _StagedFile:
    """The line reader's way: slower, and it names the first bad line exactly."""
    staged: _StagedFile | None = None
    pending: list[tuple[str, str, int, float, int]] = []

    def flush() -> None:
        _stage_rows(import_key, index, pending)
        pending.clear()

    def stored_docnos(qid: str) -> set[str]:
        flush()
        rows = StagedRunLine.objects.filter(import_key=import_key, file_index=index, qid=qid)
        return set(rows.values_list("docno", flat=True))

    stream = getattr(stream, "file", stream)
    stream.seek(0)
    for run_line in iter_run_bounded(upload_lines(name, stream, count_lines=False), name, stored_docnos):
        if staged is None:
            if run_line.tag in tags_taken:
                reason = f"a run tagged {run_line.tag!r} is already in this campaign"
                raise InputFileError(name, run_line.line, reason)
            staged = _StagedFile(index=index, name=name, tag=run_line.tag, first_line=run_line.line)
        elif run_line.tag != staged.tag:
            reason = (
                f"the run tag {run_line.tag!r} differs from {staged.tag!r} (line {staged.first_line}): one "
                "file holds one run; split the file by its last column"
            )
            raise InputFileError(name, run_line.line, reason)
        if pooled_qids is not None and run_line.qid not in pooled_qids:
            raise _not_pooled(name, run_line.line, run_line.qid)
        staged.qids.add(run_line.qid)
        staged.lines += 1
        _lines_checked(name, staged.lines, [run_line.line])
        pending.append((run_line.qid, run_line.docno, run_line.rank, run_line.score, run_line.line))
        if len(pending) >= BATCH_SIZE:
            flush()
    flush()
    assert staged is not None  # iter_run_bounded refuses an empty run
    return staged


def _stage_rows(import_key: str, index: int, rows) -> None:  # noqa: ANN001
    """Write (qid, docno, rank, score, line) rows to the staging table, STAGE_ROWS per transaction."""
    stage = run_import_writes().stage
    batch: list[StagedRow] = []
    for row in rows:
        batch.append((import_key, index, *row))
        if len(batch) >= STAGE_ROWS:
            stage(batch)
            batch = []
    if batch:
        stage(batch)


def _delete_staged(import_key: str, index: int | None = None) -> None:
    """Delete staged rows in short transactions (a million rows at once would hold the lock)."""
    rows = StagedRunLine.objects.filter(import_key=import_key)
    if index is not None:
        rows = rows.filter(file_index=index)
    bounds = rows.aggregate(low=Min("id"), high=Max("id"))
    if bounds["low"] is None:
        return
    for start in range(bounds["low"], bounds["high"] + 1, PUBLISH_ROWS):
        with transaction.atomic():
            rows.filter(id__gte=start, id__lt=start + PUBLISH_ROWS).delete()


# ---------------------------------------------------------------------------------------------
# Publish


def _publish(
    campaign: Campaign, import_key: str, staged: list[_StagedFile], evaluation_only: bool
) -> ImportReport:
    report = ImportReport()
    documents_before = Document.objects.filter(campaign=campaign).aggregate(high=Max("id"))["high"] or 0
    with UndoLog(delete_created=_systems_delete) as log:
        # Taken back last: the stubs the publish made that nothing refers to by then.
        stub_qids: set[str] = set()
        log.call(lambda: _stubs_delete_unused(campaign, stub_qids, documents_before))
        for staged_file in staged:
            with transaction.atomic():
                if System.objects.filter(campaign=campaign, name=staged_file.tag).exists():
                    # Another import took the tag while this one was staging.
                    reason = f"a run tagged {staged_file.tag!r} is already in this campaign"
                    raise ImportFailed([InputFileError(staged_file.name, None, reason)])
                system = System.objects.create(
                    campaign=campaign,
                    name=staged_file.tag,
                    filename=staged_file.name[:500],
                    evaluation_only=evaluation_only,
                )
                stub_qids |= _topic_stubs(campaign, staged_file.qids)
            log.created(System, [system.pk])
            _publish_entries(campaign, system, import_key, staged_file)
            report.systems.append(system.name)
            report.created += 1
            report.lines += staged_file.lines
            report.files += 1
    return report


def _systems_delete(model: type[Model], ids: list[int]) -> None:
    """Take back a half-published run: its ranking entries, then the run."""
    for pk in ids:
        RankingEntry.objects.filter(system_id=pk).delete()
        model._base_manager.filter(pk=pk).delete()


def _topic_stubs(campaign: Campaign, qids: set[str]) -> set[str]:
    """Stub topics for the qids the campaign does not know yet; those qids."""
    known = set(Topic.objects.filter(campaign=campaign, qid__in=qids).values_list("qid", flat=True))
    new = qids - known
    Topic.objects.bulk_create(
        [Topic(campaign=campaign, qid=qid, title=qid, is_stub=True) for qid in new],
        ignore_conflicts=True,
        batch_size=BATCH_SIZE,
    )
    return new


def _stubs_delete_unused(campaign: Campaign, qids: set[str], documents_before: int) -> None:
    """After a failed publish: the stubs it created that nothing refers to (a concurrent import
    into the same campaign may already rank one of them; a topics upload may have filled one)."""
    topics = Topic.objects.filter(campaign=campaign, qid__in=qids, is_stub=True)
    documents = Document.objects.filter(campaign=campaign, is_stub=True, pk__gt=documents_before)
    referring: tuple[type[RankingEntry] | type[PoolItem] | type[Judgment], ...] = (
        RankingEntry,
        PoolItem,
        Judgment,
    )
    for model in referring:
        used_topics: QuerySet[Any] = model.objects.filter(topic__campaign=campaign).values("topic_id")
        used_documents: QuerySet[Any] = model.objects.filter(document__campaign=campaign).values(
            "document_id"
        )
        topics = topics.exclude(pk__in=used_topics)
        documents = documents.exclude(pk__in=used_documents)
    with transaction.atomic():
        topics.delete()
        documents.delete()


def _publish_entries(campaign: Campaign, system: System, import_key: str, staged_file: _StagedFile) -> None:
    """Document stubs and ranking entries from the staged rows, PUBLISH_ROWS per transaction."""
    rows = StagedRunLine.objects.filter(import_key=import_key, file_index=staged_file.index)
    bounds = rows.aggregate(low=Min("id"), high=Max("id"))
    if bounds["low"] is None:
        return
    publish = run_import_writes().publish
    for number, start in enumerate(range(bounds["low"], bounds["high"] + 1, PUBLISH_ROWS)):
        step = PublishStep(
            number=number,
            campaign_id=campaign.pk,
            system_id=system.pk,
            import_key=import_key,
            file_index=staged_file.index,
            start=start,
            stop=start + PUBLISH_ROWS,
        )
        try:
            publish(step)
        except StepIncomplete as error:
            reason = (
                f"{error.staged - error.published} line(s) found no topic, document or run: "
                "the campaign, the run or a topic or document was deleted while it was imported"
            )
            raise ImportFailed([InputFileError(staged_file.name, None, reason)]) from error


# ---------------------------------------------------------------------------------------------
# Pool


__all__ = ["StagedRuns", "runs_import"]
