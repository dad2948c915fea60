"""Writes of training-data campaigns: uploads (feature pool, labels, test queries, scores), the
settings, and the rounds (fit, select, queue as graded tasks; the next round when one is judged).

The numbers come from `estimation` (the LETOR reader, the bootstrap ensemble, EL and the
selection rules); this module stores arrays, turns selections into the core's graded tasks and
reads the assessors' grades back as labels.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO

import numpy as np
from django.conf import settings as django_settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, Max, OuterRef
from django.utils import timezone

from estimation.formats.letor import LetorPool, LetorRow, apply_labels, iter_letor, letor_from_rows
from estimation.formats.trec import InputFileError
from estimation.training.ensembles import BootstrapLightGBM, fit_ranker, predict, read_scores
from estimation.training.selection import DRAWABLE_RULES, SELECTION_RULES, pool_mean_dcg, select_training
from labeling.fields import DOCNO_MAX_CHARS, QID_MAX_CHARS, checked_text
from labeling.import_reports import ImportFailed, ImportReport
from labeling.leases import unanswered_claimable
from labeling.models import Campaign, Document, Draw, Judgment, Skip, Task, Topic
from training.models import TrainingPool, TrainingRound, TrainingSelection, TrainingSettings
from uploads.formats import upload_lines

# The draw strategy of a training task: set apart from sampling draws (this mode never samples).
DRAW_STRATEGY = "training"
SETTING_NAMES = ("strategy", "docs_per_query", "cutoff", "ensemble", "round_size", "drawn")
TEST_CUTOFF = 10


# -- settings ------------------------------------------------------------------------------------
def training_configure(campaign: Campaign, settings: Mapping[str, Any]) -> TrainingSettings:
    """Create or change the campaign's training settings; ValueError naming a bad value."""
    record, _ = TrainingSettings.objects.get_or_create(campaign=campaign)
    for name, value in settings.items():
        setattr(record, name, value)
    if record.strategy not in SELECTION_RULES:
        raise ValueError(f"strategy must be one of {', '.join(SELECTION_RULES)}, got {record.strategy!r}")
    for name in ("docs_per_query", "cutoff", "ensemble", "round_size"):
        value = getattr(record, name)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100_000:
            raise ValueError(f"{name} must be an integer from 1 to 100000, got {value!r}")
    if not isinstance(record.drawn, bool):
        raise ValueError(f"drawn must be true or false, got {record.drawn!r}")
    if record.drawn and record.strategy not in DRAWABLE_RULES:
        raise ValueError(f"drawing applies to {', '.join(DRAWABLE_RULES)}, not {record.strategy}")
    if campaign.status != Campaign.Status.DRAFT and record.pk and _settings_changed(record):
        raise ValueError("training settings can only change before the campaign starts")
    record.save()
    return record


def _settings_changed(record: TrainingSettings) -> bool:
    stored = TrainingSettings.objects.filter(pk=record.pk).values(*SETTING_NAMES).first() or {}
    return any(stored.get(name) != getattr(record, name) for name in SETTING_NAMES)


def settings_of(campaign: Campaign) -> TrainingSettings:
    return TrainingSettings.objects.get_or_create(campaign=campaign)[0]


# -- arrays in the database -----------------------------------------------------------------------
def pool_to_bytes(pool: LetorPool) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        features=pool.features,
        grades=pool.grades,
        query_ids=np.array(pool.query_ids, dtype=object),
        query_offsets=pool.query_offsets,
        doc_ids=np.array(pool.doc_ids, dtype=object),
        doc_ids_from_position=np.array(pool.doc_ids_from_position),
    )
    return buffer.getvalue()


def pool_from_bytes(data: bytes | memoryview) -> LetorPool:
    with np.load(io.BytesIO(bytes(data)), allow_pickle=True) as arrays:
        return LetorPool(
            features=arrays["features"],
            grades=arrays["grades"].astype(np.int64),
            query_ids=tuple(str(q) for q in arrays["query_ids"]),
            query_offsets=arrays["query_offsets"].astype(np.int64),
            doc_ids=tuple(str(d) for d in arrays["doc_ids"]),
            doc_ids_from_position=bool(arrays["doc_ids_from_position"]),
        )


# -- uploads ------------------------------------------------------------------------------------
def _checked_rows(rows: Iterable[LetorRow], name: str, top_grade: int) -> Iterator[LetorRow]:
    """The parser's rows, refusing grades above the campaign's scale and ids that do not fit the
    core's topics and documents (the rule of every upload: `labeling.fields`), with the line."""
    for row in rows:
        if row.grade > top_grade:
            raise InputFileError(
                name, row.line, f"grade {row.grade} is above the campaign's top grade {top_grade}"
            )
        checked_text(row.qid, "qid", QID_MAX_CHARS, name, row.line)
        if row.docid is not None:
            checked_text(row.docid, "docid", DOCNO_MAX_CHARS, name, row.line)
        yield row


def _read_pool(campaign: Campaign, files: Sequence[tuple[str, BinaryIO]]) -> LetorPool:
    if not files:
        raise ImportFailed([InputFileError("(no file)", None, "no file was uploaded")])
    top = campaign.grade_count - 1
    largest = django_settings.TRAINING_MAX_FEATURE_INDEX
    try:
        pool = letor_from_rows(
            (
                (
                    name,
                    _checked_rows(
                        iter_letor(upload_lines(name, stream), name, max_feature_index=largest), name, top
                    ),
                )
                for name, stream in files
            ),
            max_matrix_bytes=django_settings.TRAINING_MAX_FEATURE_BYTES,
        )
    except InputFileError as error:
        raise ImportFailed([error]) from None
    except ValueError as error:  # e.g. a query id repeated across files
        raise ImportFailed([InputFileError(files[0][0], None, str(error))]) from None
    if pool.n_docs == 0:
        raise ImportFailed([InputFileError(files[0][0], None, "the file holds no LETOR row")])
    return pool


# Uploads read, check and pack a file with no transaction open, then write one row in a short
# transaction: on SQLite (IMMEDIATE transactions) an open transaction holds the write lock, and
# every assessor's answer would wait for the whole file to be parsed.


def _record(campaign: Campaign) -> TrainingPool | None:
    return TrainingPool.objects.select_for_update().filter(campaign=campaign).first()


def _refuse_once_started(campaign: Campaign, what: str) -> None:
    if TrainingRound.objects.filter(campaign=campaign).exists():
        raise ImportFailed(
            [InputFileError("(upload)", None, f"the {what} cannot change once rounds were selected")]
        )


def pool_upload(
    *, campaign: Campaign, files: Sequence[tuple[str, BinaryIO]], file_format: str | None = None
) -> ImportReport:
    """The feature pool: LETOR / SVMlight rows, grade -1 (or a missing grade) for unlabeled."""
    _refuse_once_started(campaign, "feature pool")
    pool = _read_pool(campaign, files)
    packed = pool_to_bytes(pool)
    with transaction.atomic():
        _refuse_once_started(campaign, "feature pool")
        record = _record(campaign) or TrainingPool(campaign=campaign)
        record.pool = packed
        record.pool_filename = ", ".join(name for name, _ in files)[:500]
        record.rows, record.queries = pool.n_docs, pool.n_queries
        record.base_labeled = int(pool.labeled.sum())
        record.scores, record.scores_filename = None, ""  # scores belong to the rows they scored
        record.save()
    report = ImportReport(files=len(files), lines=pool.n_docs, created=pool.n_docs)
    report.notes.append(
        f"{pool.n_queries} queries, {pool.n_docs} rows, {pool.features.shape[1]} features, "
        f"{record.base_labeled} labeled"
    )
    return report


def _stored_pool(campaign: Campaign) -> tuple[TrainingPool, LetorPool]:
    """The stored pool, read without a lock; `_save_if_unchanged` writes what was derived from it."""
    record = TrainingPool.objects.filter(campaign=campaign).first()
    if record is None:
        raise ImportFailed([InputFileError("(upload)", None, "upload the feature pool first")])
    return record, pool_from_bytes(record.pool)


def _save_if_unchanged(record: TrainingPool, fields: list[str]) -> None:
    """Save `fields` of `record` in one short transaction, unless the stored pool was replaced
    (or rounds selected) while the upload was read: then nothing is stored."""
    with transaction.atomic():
        current = _record(record.campaign)
        if current is None or current.updated_at != record.updated_at:
            reason = "the feature pool changed while this file was read; upload it again"
            raise ImportFailed([InputFileError("(upload)", None, reason)])
        record.save(update_fields=[*fields, "updated_at"])


def labels_upload(
    *, campaign: Campaign, files: Sequence[tuple[str, BinaryIO]], file_format: str | None = None
) -> ImportReport:
    """Existing labels for pool rows: TREC qrels or labeled LETOR rows."""
    _refuse_once_started(campaign, "labels")
    record, pool = _stored_pool(campaign)
    report = ImportReport()
    top = campaign.grade_count - 1
    try:
        for name, stream in files:
            applied = apply_labels(upload_lines(name, stream), name, pool, top_grade=top)
            pool = applied.pool
            report.files += 1
            report.updated += applied.applied
            if applied.unknown:
                report.notes.append(
                    f"{name}: {applied.unknown} label(s) for pairs the pool does not hold were ignored"
                )
    except InputFileError as error:
        raise ImportFailed([error]) from None
    if pool.grades.max(initial=-1) > top:
        raise ImportFailed(
            [InputFileError(files[0][0], None, f"a label is above the campaign's top grade {top}")]
        )
    record.pool = pool_to_bytes(pool)
    record.base_labeled = int(pool.labeled.sum())
    with transaction.atomic():
        _refuse_once_started(campaign, "labels")
        _save_if_unchanged(record, ["pool", "base_labeled"])
    report.lines = report.updated
    return report


def test_upload(
    *, campaign: Campaign, files: Sequence[tuple[str, BinaryIO]], file_format: str | None = None
) -> ImportReport:
    """Held-out test queries (labeled LETOR rows): the learning curve's yardstick."""
    record, pool = _stored_pool(campaign)
    test = _read_pool(campaign, files)
    if not test.labeled.all():
        raise ImportFailed([InputFileError(files[0][0], None, "every test row needs a grade (>= 0)")])
    if test.features.shape[1] != pool.features.shape[1]:
        reason = f"the test rows have {test.features.shape[1]} features, the pool {pool.features.shape[1]}"
        raise ImportFailed([InputFileError(files[0][0], None, reason)])
    shared = set(test.query_ids) & set(pool.query_ids)
    if shared:
        example = sorted(shared)[0]
        raise ImportFailed([InputFileError(files[0][0], None, f"test query {example!r} is also in the pool")])
    record.test, record.test_filename = pool_to_bytes(test), ", ".join(n for n, _ in files)[:500]
    _save_if_unchanged(record, ["test", "test_filename"])
    return ImportReport(files=len(files), lines=test.n_docs, created=test.n_docs)


def scores_upload(
    *, campaign: Campaign, files: Sequence[tuple[str, BinaryIO]], file_format: str | None = None
) -> ImportReport:
    """Scores of the team's own N models per pool row (`qid docid s_1 ... s_N`): no model is
    trained then, and the selection depends only on the formulas."""
    _refuse_once_started(campaign, "scores")
    record, pool = _stored_pool(campaign)
    name, stream = files[0]
    try:
        scores = read_scores(upload_lines(name, stream), name, pool).scores
    except InputFileError as error:
        raise ImportFailed([error]) from None
    buffer = io.BytesIO()
    np.save(buffer, scores)
    record.scores, record.scores_filename = buffer.getvalue(), name[:500]
    with transaction.atomic():
        _refuse_once_started(campaign, "scores")
        _save_if_unchanged(record, ["scores", "scores_filename"])
    return ImportReport(files=1, lines=scores.shape[0], created=scores.shape[0])


# -- labels so far --------------------------------------------------------------------------------
def judged_grades(campaign: Campaign, pool: LetorPool) -> np.ndarray:
    """The pool's grades with the assessors' judgments of this campaign merged in (the lower
    median when an item was judged more than once)."""
    grades = pool.grades.copy()
    row_of = pool.row_index()
    by_row: dict[int, list[int]] = {}
    judged = Judgment.objects.filter(campaign=campaign, source=Judgment.Source.ASSESSOR).values_list(
        "topic__qid", "document__docno", "grade"
    )
    for qid, docno, grade in judged.iterator(chunk_size=5000):
        row = row_of.get((qid, docno))
        if row is not None:
            by_row.setdefault(row, []).append(grade)
    for row, values in by_row.items():
        grades[row] = sorted(values)[(len(values) - 1) // 2]
    return grades


def labels_now(campaign: Campaign) -> LetorPool:
    record = TrainingPool.objects.get(campaign=campaign)
    pool = pool_from_bytes(record.pool)
    return pool.with_grades(judged_grades(campaign, pool))


# -- rounds ---------------------------------------------------------------------------------------
def _versions() -> dict[str, str]:
    import lightgbm  # imported when a round is fitted, not at every process start

    return {"numpy": np.__version__, "lightgbm": lightgbm.__version__}


def _scores(
    record: TrainingPool, pool: LetorPool, settings: TrainingSettings, seed: int
) -> tuple[np.ndarray | None, str]:
    """The ensemble's predicted grades of every row: the team's scores, else N bootstrap LightGBM
    members fitted on the labeled rows; None when nothing is labeled yet (a cold start)."""
    if record.scores is not None:
        return np.load(io.BytesIO(bytes(record.scores))), "uploaded scores"
    if not pool.labeled.any():
        return None, "none (no label yet)"
    ensemble = BootstrapLightGBM(n_members=settings.ensemble)
    return ensemble.fit(
        pool.features, pool.grades, pool.query_offsets, seed
    ), f"lightgbm x {settings.ensemble}"


def _test_dcg(record: TrainingPool, pool: LetorPool, seed: int) -> float | None:
    """Test DCG@10 of one model fitted on the labels so far (the learning curve's point)."""
    if record.test is None or not pool.labeled.any():
        return None
    test = pool_from_bytes(record.test)
    labeled = pool.labeled
    model = fit_ranker(pool.features[labeled], pool.grades[labeled], seed)
    return pool_mean_dcg(test, predict(model, test.features), TEST_CUTOFF)


def remaining_budget(campaign: Campaign) -> int:
    """Labels the budget still pays for beyond the ones already selected."""
    selected = TrainingSelection.objects.filter(round__campaign=campaign).count()
    return max(0, int(campaign.budget) - selected)


def round_select(*, campaign: Campaign) -> TrainingRound | None:
    """Fit, select and queue the next round (None when the budget is spent or nothing is left to
    label). Fitting runs outside any transaction; the round is stored in one short one, and the
    (campaign, number) constraint makes a concurrent second attempt store nothing."""
    settings = settings_of(campaign)
    record = TrainingPool.objects.get(campaign=campaign)
    number = (TrainingRound.objects.filter(campaign=campaign).aggregate(top=Max("number"))["top"] or 0) + 1
    budget = min(settings.round_size, remaining_budget(campaign))
    pool = labels_now(campaign)
    in_rounds = set(TrainingSelection.objects.filter(round__campaign=campaign).values_list("row", flat=True))
    if in_rounds:  # selected but not judged yet (a skipped or open item): not again
        grades = pool.grades.copy()
        rows = np.fromiter(in_rounds, dtype=np.int64)
        grades[rows] = np.where(grades[rows] < 0, 0, grades[rows])
        selectable = pool.with_grades(grades)
    else:
        selectable = pool
    seed = (campaign.seed + 7919 * number) % (2**31 - 1)
    if budget <= 0 or selectable.labeled.all():
        _final_point(campaign, record, pool, number, seed)
        return None
    started = time.perf_counter()
    scores, model = _scores(record, pool, settings, seed)
    fitted = time.perf_counter()
    strategy = settings.strategy if scores is not None else "random_qd"
    max_grade = float(campaign.grade_count - 1)
    selection = select_training(
        selectable,
        scores,
        strategy=strategy,
        budget=budget,
        max_grade=max_grade,
        docs_per_query=settings.docs_per_query,
        cutoff=settings.cutoff,
        seed=seed,
        draw=settings.drawn and scores is not None,
    )
    chosen = time.perf_counter()
    test_dcg = _test_dcg(record, pool, seed)
    try:
        with transaction.atomic():
            training_round = TrainingRound.objects.create(
                campaign=campaign,
                number=number,
                strategy=strategy + (" (drawn)" if selection.draw else ""),
                seed=seed,
                labels_before=int(pool.labeled.sum()),
                selected=len(selection),
                model=model,
                fit_seconds=fitted - started,
                select_seconds=chosen - fitted,
                test_dcg=test_dcg,
                versions=_versions(),
            )
            _queue(campaign, training_round, selection)
    except IntegrityError:
        return None  # another recompute stored this round first
    return training_round


FINAL_STRATEGY = "final"
"""The strategy of the last row: no selection, the test score of every label judged."""


def _final_point(campaign: Campaign, record: TrainingPool, pool: LetorPool, number: int, seed: int) -> None:
    """Once the last round is judged (budget spent, or nothing left to label): the test DCG of
    a model fitted on every label, as a row that selects nothing, so the learning curve ends
    where the campaign's labels end. Stored once; None without test queries."""
    rounds = TrainingRound.objects.filter(campaign=campaign)
    if record.test is None or not rounds.exists() or rounds.filter(strategy=FINAL_STRATEGY).exists():
        return
    started = time.perf_counter()
    test_dcg = _test_dcg(record, pool, seed)
    try:
        with transaction.atomic():
            TrainingRound.objects.create(
                campaign=campaign,
                number=number,
                strategy=FINAL_STRATEGY,
                seed=seed,
                labels_before=int(pool.labeled.sum()),
                selected=0,
                model="lightgbm (test only)",
                fit_seconds=time.perf_counter() - started,
                test_dcg=test_dcg,
                versions=_versions(),
            )
    except IntegrityError:
        pass  # another recompute stored it first


def _number(value: float) -> float | None:
    return None if not np.isfinite(value) else float(value)


def _queue(campaign: Campaign, training_round: TrainingRound, selection: Any) -> None:
    """The round's items as the core's graded tasks, one Draw each (strategy "training",
    propensity 1 unless drawn, else the item's inclusion probability in its round), in
    selection order; topics and documents by qid and docid."""
    qids = {qid for qid, _ in selection.items}
    docids = {docid for _, docid in selection.items}
    topics = dict(Topic.objects.filter(campaign=campaign, qid__in=qids).values_list("qid", "id"))
    Topic.objects.bulk_create(
        # A stub topic is titled by its id, as a run import names it (uploads.run_imports).
        [Topic(campaign=campaign, qid=qid, title=qid, is_stub=True) for qid in sorted(qids - set(topics))]
    )
    topics = dict(Topic.objects.filter(campaign=campaign, qid__in=qids).values_list("qid", "id"))
    documents = dict(Document.objects.filter(campaign=campaign, docno__in=docids).values_list("docno", "id"))
    Document.objects.bulk_create(
        [Document(campaign=campaign, docno=docid, is_stub=True) for docid in sorted(docids - set(documents))]
    )
    documents = dict(Document.objects.filter(campaign=campaign, docno__in=docids).values_list("docno", "id"))
    first = (Draw.objects.filter(campaign=campaign).aggregate(top=Max("order"))["top"] or 0) + 1
    inclusion = selection.inclusion_probability
    query_inclusion = selection.query_inclusion_probability
    document_inclusion = selection.document_inclusion_probability_given_query

    def stored(values: np.ndarray | None, index: int) -> float | None:
        return None if values is None else float(values[index])

    for index, (qid, docid) in enumerate(selection.items):
        draw = Draw.objects.create(
            campaign=campaign,
            kind=Draw.Kind.ITEM,
            topic_id=topics[qid],
            document_id=documents[docid],
            order=first + index,
            propensity=1.0 if inclusion is None else float(inclusion[index]),
            strategy=DRAW_STRATEGY,
        )
        task = Task.objects.create(
            campaign=campaign,
            draw=draw,
            order=draw.order,
            topic_id=draw.topic_id,
            document_id=draw.document_id,  # type: ignore[misc]  # item draws always name a document
        )
        TrainingSelection.objects.create(
            round=training_round,
            order=index + 1,
            qid=qid,
            docid=docid,
            row=int(selection.rows[index]),
            el_query=_number(selection.el_query[index]),
            el_doc=_number(selection.el_doc[index]),
            inclusion_probability=stored(inclusion, index),
            query_inclusion_probability=stored(query_inclusion, index),
            document_inclusion_probability_given_query=stored(document_inclusion, index),
            task=task,
        )


def round_waiting(campaign: Campaign) -> bool:
    """Whether the latest round still has a task an assessor can claim: unanswered, held by
    nobody (or by a lease that ran out) and skipped by nobody. A task someone holds does not hold
    the next round up: it is answered later, and a selection never picks an item already
    selected. Nor does a skipped one: it stays open for another assessor, but one assessor's skip
    must not stall the round for everyone (with a single assessor, for ever)."""
    latest = TrainingRound.objects.filter(campaign=campaign).order_by("-number").first()
    if latest is None:
        return False
    skipped = Skip.objects.filter(
        campaign_id=campaign.pk, topic_id=OuterRef("topic_id"), document_id=OuterRef("document_id")
    )
    return (
        Task.objects.filter(
            pk__in=TrainingSelection.objects.filter(round=latest).values("task_id"),
        )
        .filter(unanswered_claimable(timezone.now()))
        .exclude(Exists(skipped))
        .exists()
    )


def rounds_advance(*, campaign: Campaign) -> TrainingRound | None:
    """The recompute: once no item of the latest round is left to claim, select the next while
    budget remains."""
    campaign.refresh_from_db(fields=["status", "budget"])
    if campaign.status != Campaign.Status.RUNNING or round_waiting(campaign):
        return None
    if not TrainingPool.objects.filter(campaign=campaign).exists():
        return None
    return round_select(campaign=campaign)
