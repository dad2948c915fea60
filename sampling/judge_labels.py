"""Model judges' labels: upload a judge's labels and a calibration set (errors name file, line
and reason; nothing half-stored), and map its labels onto the pool.

A judge's labels are kept for every (qid, docno) uploaded, in the pool or not; a calibration
set (human grades + the same judge's labels on other topics) is kept beside them with its human
grade, and its rows on the campaign's own topics are dropped at upload and ignored when read,
so an external calibration never uses the campaign's sample.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Count, Exists, Max, OuterRef

from estimation.formats.judge_labels import JudgeLabelLine, iter_judge_labels
from estimation.formats.trec import InputFileError, iter_qrels
from estimation.judges.agreement import agreement
from estimation.judges.calibration import MISSING, grade_distributions, judge_classes
from infrastructure.db import brief_write
from infrastructure.pair_lookup import PairLookup
from infrastructure.undo_log import UndoLog
from labeling.import_reports import ImportFailed, ImportReport, UploadedFile, batches, uploads_check
from labeling.models import Campaign, Topic
from labeling.recompute import recompute_soon
from sampling.models import Judge, JudgeLabel
from sampling.pool_arrays import PoolArrays, pool_arrays_for
from uploads.formats import upload_lines

STORE_ROWS = 250
"""Labels stored per transaction: about 10 ms of the write lock on SQLite (more under load)."""


def judge_labels_import(*, judge: Judge, files: Sequence[UploadedFile]) -> ImportReport:
    """A judge's labels (TREC qrels, JSONL, BEIR): a pair labelled again replaces its label.

    Every file is read and checked whole with no transaction open (an error names file, line and
    reason; nothing is stored), then stored `STORE_ROWS` labels per short transaction, so the
    write lock is never held while a file is parsed and an assessor's request waits for one
    batch at most. If storing fails midway, what it stored is taken back (`_LabelWrites`'s undo
    log). Call it outside any transaction (inside one, the batches become savepoints of it).
    """
    y_max = judge.campaign.grade_count - 1

    def labels(name: str, stream: Any) -> Iterator[JudgeLabelLine]:
        return iter_judge_labels(upload_lines(name, stream), name, y_max=y_max)

    uploads_check(files, labels)
    report = ImportReport(files=len(files))
    with _LabelWrites(judge, calibration=False) as writes:
        for name, stream in files:
            for batch in batches(labels(name, stream), STORE_ROWS):
                replaced = writes.store(_label_rows(judge, batch, name, y_max))
                report.lines += len(batch)
                report.updated += replaced
                report.created += len(batch) - replaced
    _recompute_after_commit(judge.campaign)
    arrays = pool_arrays_for(judge.campaign)
    in_pool = judge_pool_coverage(judge, arrays, pool_judge_classes(judge, arrays))
    report.notes.append(
        f"{in_pool['labelled']} of the pool's {in_pool['pool']} items now carry a label of {judge.name}; "
        f"{in_pool['outside']} labels are for pairs outside the pool (kept for calibration)"
    )
    return report


def judge_calibration_import(
    *, judge: Judge, human_qrels: Sequence[UploadedFile], judge_labels: Sequence[UploadedFile]
) -> ImportReport:
    """A calibration set: human qrels and the same judge's labels on other topics. Only pairs in
    both are kept; pairs on this campaign's topics are dropped (they would let the campaign's
    own sample into an external calibration). Read and checked whole first, then stored in short
    transactions, as `judge_labels_import`."""
    top = judge.campaign.grade_count - 1
    if not human_qrels:
        raise ImportFailed([InputFileError("(no file)", None, "a calibration set needs the human qrels")])
    humans = _human_grades(human_qrels, top)

    def labels(name: str, stream: Any) -> Iterator[JudgeLabelLine]:
        return iter_judge_labels(upload_lines(name, stream), name, y_max=top)

    uploads_check(judge_labels, labels)
    own_topics = set(Topic.objects.filter(campaign=judge.campaign).values_list("qid", flat=True))
    report = ImportReport(files=len(judge_labels))
    dropped = 0
    with _LabelWrites(judge, calibration=True) as writes:
        for name, stream in judge_labels:
            for batch in batches(labels(name, stream), STORE_ROWS):
                kept = []
                for line in batch:
                    if _pair_key(line.qid, line.docno) not in humans:
                        report.unchanged += 1
                    elif line.qid in own_topics:
                        dropped += 1
                    else:
                        kept.append(line)
                rows = _label_rows(judge, kept, name, top)
                for row in rows:
                    row.human_grade = humans[_pair_key(row.qid, row.docno)]
                writes.store(rows)
                report.lines += len(batch)
                report.created += len(rows)
        if report.created == 0:
            # Refused before anything was stored: nothing to take back.
            raise ImportFailed(
                [InputFileError(judge_labels[0][0], None, "no pair has both a human grade and a judge label")]
            )
    _recompute_after_commit(judge.campaign)
    report.notes.append(calibration_set_words(judge))
    if report.unchanged:
        report.notes.append(f"{report.unchanged} judge label(s) had no human grade in the qrels: not kept")
    if dropped:
        report.notes.append(
            f"{dropped} pair(s) on this campaign's own topics were dropped: an external calibration "
            "never uses the campaign's sample"
        )
    return report


def calibration_set_words(judge: Judge) -> str:
    """What the judge's calibration set now holds, in words: the pairs with both a human grade and
    a judge label, and the judge's agreement with the humans on them (the upload's report says
    this, not only the lines read)."""
    pairs = np.array(
        list(
            JudgeLabel.objects.filter(judge=judge, human_grade__isnull=False, judge_class__gte=0).values_list(
                "human_grade", "judge_class"
            )
        ),
        dtype=np.int64,
    ).reshape(-1, 2)
    if not len(pairs):
        return "the calibration set holds no pair with both a human grade and a judge label"
    n_grades = judge.campaign.grade_count
    found = agreement(np.clip(pairs[:, 0], 0, n_grades - 1), pairs[:, 1], n_grades=n_grades)

    def number(value: float) -> str:
        return f"{value:.2f}" if np.isfinite(value) else "n/a"

    return (
        f"the calibration set now holds {len(pairs)} pairs with both a human grade and a judge label; "
        f"agreement on them: kappa {number(found.kappa)}, quadratic-weighted kappa "
        f"{number(found.weighted_kappa)}, leniency {found.leniency:+.2f} grades (judge minus humans)"
    )


def _pair_key(qid: str, docno: str) -> str:
    # One string per pair rather than a tuple of two: about half the memory for a big qrels file
    # (ids hold no whitespace in qrels, so the space cannot be ambiguous).
    return f"{qid} {docno}"


def _human_grades(files: Sequence[UploadedFile], top: int) -> dict[str, int]:
    """The human qrels as pair -> grade (negative grades count 0), checked whole; ImportFailed
    naming each bad file. Its size is bounded by the upload limits (LABELING_UPLOAD_MAX_LINES)."""
    humans: dict[str, int] = {}
    errors: list[InputFileError] = []
    for name, stream in files:
        try:
            for line in iter_qrels(upload_lines(name, stream), name):
                if line.grade > top:
                    raise InputFileError(
                        name, line.line, f"grade {line.grade} is above the campaign's top grade {top}"
                    )
                humans[_pair_key(line.qid, line.docno)] = max(line.grade, 0)
        except InputFileError as error:
            errors.append(error)
    if errors:
        raise ImportFailed(errors)
    return humans


class _LabelWrites:
    """Stores a judge's labels (or calibration rows) a batch per short transaction: each batch
    replaces the pairs it names, and the upload's undo log (`infrastructure.undo_log`) notes the
    rows it replaced and created, to take them back if the upload fails before its end (each
    step its own short transaction, as every batched upload does).

    Why not a hidden upload tagged visible at the end: that needs a column every reader of
    labels filters on, for a failure (a lost connection, a full disk) the checked-first file
    leaves rare. Readers may see the labels arrive during the upload; a recompute follows its
    end.
    """

    def __init__(self, judge: Judge, *, calibration: bool) -> None:
        self.judge = judge
        self.calibration = calibration
        # Rows above this id were written during this upload: never ones to put back.
        self.floor = JudgeLabel.objects.aggregate(top=Max("id"))["top"] or 0
        self.log = UndoLog()

    def __enter__(self) -> _LabelWrites:
        self.log.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        self.log.__exit__(kind, error, trace)

    def store(self, rows: list[JudgeLabel]) -> int:
        """Replace the rows' pairs with the rows in one transaction; how many were replaced."""
        with brief_write():
            earlier = self._earlier([(row.qid, row.docno) for row in rows])
            if earlier:
                JudgeLabel.objects.filter(pk__in=[values["id"] for values in earlier]).delete()
            created = JudgeLabel.objects.bulk_create(rows)
        judge_id = {"judge_id": self.judge.pk}
        self.log.deleted(
            JudgeLabel, [{**values, **judge_id} for values in earlier if values["id"] <= self.floor]
        )
        self.log.created(JudgeLabel, [row.pk for row in created])
        return len(earlier)

    def _earlier(self, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        """The stored rows of these pairs, in one statement that probes the unique index once
        per pair (`PairLookup`); a query per topic cost a second per batch when a batch
        spans hundreds of topics."""
        kind = "IS NOT NULL" if self.calibration else "IS NULL"
        rows = PairLookup(
            table=JudgeLabel._meta.db_table,
            columns=_COLUMNS,
            condition=f"judge_id = %s AND human_grade {kind}",
            parameters=[self.judge.pk],
            pair_columns=("qid", "docno"),
        ).rows(pairs)
        found = [dict(zip(_COLUMNS, row, strict=True)) for row in rows]
        for row in found:
            if isinstance(row["probs"], str):  # a JSON column read by hand comes back as text
                row["probs"] = json.loads(row["probs"])
        return found


_COLUMNS = (
    "id",
    "qid",
    "docno",
    "grade",
    "probs",
    "judge_class",
    "rationale",
    "seconds",
    "cost",
    "human_grade",
    "source_file",
    "version",
)


def _recompute_after_commit(campaign: Campaign) -> None:
    """A running campaign refits its label model and q with the new labels (the worker's job)."""
    if campaign.status == Campaign.Status.RUNNING:
        campaign_id = campaign.pk
        transaction.on_commit(lambda: recompute_soon(campaign_id))


def _label_rows(judge: Judge, lines: Sequence[JudgeLabelLine], name: str, y_max: int) -> list[JudgeLabel]:
    classes = judge_classes(
        [line.grade for line in lines], [line.probs for line in lines], n_grades=y_max + 1
    )
    return [
        JudgeLabel(
            judge=judge,
            qid=line.qid,
            docno=line.docno,
            grade=line.grade,
            probs=list(line.probs) if line.probs is not None else None,
            judge_class=int(label_class),
            rationale=line.rationale or "",
            seconds=line.seconds,
            cost=line.cost,
            source_file=name[:200],
            version=judge.version,
        )
        for line, label_class in zip(lines, classes.tolist(), strict=True)
    ]


def judge_for_sampling(campaign: Campaign) -> Judge | None:
    """The judge the judged strategy uses: the one chosen for it, else the first judge created,
    among the judges with labels."""
    # Exists, not a count: it stops at a judge's first label (the (judge, human_grade) index),
    # where a count read every label of every judge, a million outside the pool included.
    labelled = JudgeLabel.objects.filter(judge=OuterRef("pk"), human_grade__isnull=True)
    return (
        Judge.objects.filter(Exists(labelled), campaign=campaign)
        .order_by("-chosen_for_sampling", "created_at", "id")
        .first()
    )


@transaction.atomic
def judge_choose_for_sampling(judge: Judge) -> Judge:
    """Make this judge the one the judged strategy uses (from the next recompute on: later
    draws and their calibration follow it; earlier draws keep the calibration they were made
    with, so the estimate stays unbiased)."""
    Judge.objects.filter(campaign=judge.campaign).update(chosen_for_sampling=False)
    Judge.objects.filter(pk=judge.pk).update(chosen_for_sampling=True)
    judge.chosen_for_sampling = True
    _recompute_after_commit(judge.campaign)
    return judge


def judges_fingerprint(campaign: Campaign) -> str:
    """Changes when any judge label is added, replaced or removed (a judged state refits then)."""
    totals = JudgeLabel.objects.filter(judge__campaign=campaign).aggregate(n=Count("id"), top=Max("id"))
    return f"{totals['n']}:{totals['top']}"


def pool_judge_classes(judge: Judge | None, arrays: PoolArrays) -> np.ndarray:
    """The judge's class per pool slot, shape (m, n); MISSING where it gave no label."""
    classes = np.full(arrays.slot_used.shape, MISSING, dtype=np.int64)
    if judge is None:
        return classes
    position = {qid: index for index, qid in enumerate(arrays.topic_qids)}
    slot_of = [{docno: slot for slot, docno in enumerate(docnos)} for docnos in arrays.docnos]
    rows = JudgeLabel.objects.filter(judge=judge, human_grade__isnull=True, qid__in=list(position))
    for qid, docno, label_class in rows.values_list("qid", "docno", "judge_class").iterator(chunk_size=5000):
        topic = position[qid]
        slot = slot_of[topic].get(docno)
        if slot is not None:
            classes[topic, slot] = label_class
    return classes


def calibration_set_pairs(campaign: Campaign, judge: Judge) -> tuple[np.ndarray, np.ndarray]:
    """The judge's calibration set as (judge classes, human grades), never on the campaign's own
    topics (topics added after the upload are left out here too)."""
    own_topics = set(Topic.objects.filter(campaign=campaign).values_list("qid", flat=True))
    pairs = [
        (label_class, human)
        for qid, label_class, human in JudgeLabel.objects.filter(
            judge=judge, human_grade__isnull=False
        ).values_list("qid", "judge_class", "human_grade")
        if qid not in own_topics
    ]
    if not pairs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.array([c for c, _ in pairs], dtype=np.int64), np.array([h for _, h in pairs], dtype=np.int64)


def judge_pool_coverage(judge: Judge, arrays: PoolArrays, classes: np.ndarray) -> dict[str, int]:
    """Pool items the judge labelled (its `pool_judge_classes` on `arrays`), the pool's size and
    the labels outside the pool."""
    labelled = int(((classes >= 0) & arrays.slot_used).sum())
    total = JudgeLabel.objects.filter(judge=judge, human_grade__isnull=True).count()
    return {
        "labelled": labelled,
        "pool": int(arrays.slot_used.sum()),
        "outside": total - labelled,
        "labels": total,
    }


def judge_label_model_inputs(
    campaign: Campaign, arrays: PoolArrays
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The judge as information for the label model of every strategy: one-hot judge classes
    per slot, shape (m, n, G + 1), and, when the judge has a calibration set, P(y | f) per slot
    (m, n, G) as the prior; (None, None) without a judge with labels."""
    judge = judge_for_sampling(campaign)
    if judge is None:
        return None, None
    n_grades = campaign.grade_count
    classes = pool_judge_classes(judge, arrays)
    index = np.where(classes == MISSING, n_grades, classes)
    one_hot = np.eye(n_grades + 1)[index]
    label_classes, humans = calibration_set_pairs(campaign, judge)
    if not label_classes.size:
        return one_hot, None
    rows = grade_distributions(label_classes, humans, n_grades=n_grades)
    return one_hot, rows[index]
