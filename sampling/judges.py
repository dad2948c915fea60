"""Model judges next to human assessors: judges and their labels, the calibration a judged
sampling state uses, the judged estimate rows, and what a team reads about a judge.

The numbers come from `estimation.judges`; this module maps the campaign's rows to its arrays.
A judge's labels are kept for every (qid, docno) uploaded, in the pool or not; a calibration
set (human grades + the same judge's labels on other topics) is kept beside them with its human
grade, and its rows on the campaign's own topics are dropped at upload and ignored at fitting,
so an external calibration never uses the campaign's sample.

Why the estimate stays unbiased while labels arrive: every draw stores its sampling version,
and each version stores the calibration h it was computed with (`JudgeCalibration`), fitted
only from human labels that existed before that version's draws. The term of draw k,
``sum_i a_i h_k(f_i) + a (G - h_k(f)) / q_k``, has expectation theta given everything before
it, whatever h_k is; the judge's classes f_i come from uploads, never from the draws' outcomes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Max, Q

from estimation.formats.judge_labels import iter_judge_labels
from estimation.formats.trec import InputFileError, iter_qrels
from estimation.judges.agreement import agreement, kendall_tau
from estimation.judges.calibration import MISSING, Calibration, fit_calibration, judge_classes, no_calibration
from estimation.judges.design import judged_distribution, judged_estimate, judged_terms
from estimation.metrics.spec import Metric
from estimation.sampling.items import system_weights
from estimation.sampling.pool import Pool
from estimation.sampling.results import SamplingDistribution
from labeling.formats import upload_lines
from labeling.metric import campaign_metric
from labeling.models import Campaign, Draw, Judge, JudgeCalibration, JudgeLabel, Topic
from labeling.services.imports import ImportFailed, ImportReport, UploadedFile, each_file
from sampling.pool_arrays import PoolArrays, pool_from_arrays

LOW_AGREEMENT = 0.2
"""Quadratic-weighted kappa below this: the judge is unlikely to help (the design falls back
toward the no-model one by itself, since its sigma stays large everywhere)."""
BATCH_SIZE = 2000


# ---------------------------------------------------------------------------------------------
# Judges and their labels


@transaction.atomic
def judge_create(
    *,
    campaign: Campaign,
    name: str,
    model: str = "",
    prompt: str = "",
    version_date: date | None = None,
    notes: str = "",
    shares_model_with: str = "",
    simulated: bool = False,
    user: AbstractBaseUser | None = None,
) -> Judge:
    """A new judge of the campaign; ValueError for an empty or taken name."""
    name = name.strip()
    if not name:
        raise ValueError("a judge needs a name")
    if Judge.objects.filter(campaign=campaign, name=name).exists():
        raise ValueError(f"the campaign already has a judge named {name!r}")
    return Judge.objects.create(
        campaign=campaign,
        name=name,
        model=model.strip(),
        prompt=prompt,
        version_date=version_date,
        notes=notes,
        shares_model_with=shares_model_with.strip(),
        simulated=simulated,
        created_by=user if user is not None and user.is_authenticated else None,  # type: ignore[misc]  # the project's user model
    )


@transaction.atomic
def judge_labels_import(*, judge: Judge, files: Sequence[UploadedFile]) -> ImportReport:
    """A judge's labels (TREC qrels, JSONL, BEIR): a pair labelled again replaces its label.
    Every file is checked whole before anything is stored; an error names file, line and reason."""
    y_max = judge.campaign.grade_count - 1

    def one(name: str, stream: Any, report: ImportReport) -> None:
        seen: set[tuple[str, str]] = set()
        for batch in _batches(iter_judge_labels(upload_lines(name, stream), name, y_max=y_max)):
            by_qid: dict[str, list[str]] = {}
            for line in batch:
                by_qid.setdefault(line.qid, []).append(line.docno)
            replaced = 0
            for qid, docnos in by_qid.items():
                replaced += JudgeLabel.objects.filter(
                    judge=judge, human_grade__isnull=True, qid=qid, docno__in=docnos
                ).delete()[0]
            JudgeLabel.objects.bulk_create([_label_row(judge, line, name, y_max) for line in batch])
            seen.update((line.qid, line.docno) for line in batch)
            report.lines += len(batch)
            report.updated += replaced
            report.created += len(batch) - replaced

    report = each_file(files, one)
    in_pool = judge_pool_coverage(judge)
    report.notes.append(
        f"{in_pool['labelled']} of the pool's {in_pool['pool']} items now carry a label of {judge.name}; "
        f"{in_pool['outside']} labels are for pairs outside the pool (kept for calibration)"
    )
    return report


@transaction.atomic
def judge_calibration_import(
    *, judge: Judge, human_qrels: Sequence[UploadedFile], judge_labels: Sequence[UploadedFile]
) -> ImportReport:
    """A calibration set: human qrels and the same judge's labels on other topics. Only pairs in
    both are kept; pairs on this campaign's topics are dropped (they would let the campaign's
    own sample into an external calibration)."""
    top = judge.campaign.grade_count - 1
    humans: dict[tuple[str, str], int] = {}
    errors: list[InputFileError] = []
    for name, stream in human_qrels:
        try:
            for line in iter_qrels(upload_lines(name, stream), name):
                if line.grade > top:
                    raise InputFileError(
                        name, line.line, f"grade {line.grade} is above the campaign's top grade {top}"
                    )
                humans[(line.qid, line.docno)] = max(line.grade, 0)
        except InputFileError as error:
            errors.append(error)
    if not human_qrels:
        errors.append(InputFileError("(no file)", None, "a calibration set needs the human qrels"))
    if errors:
        raise ImportFailed(errors)
    own_topics = set(Topic.objects.filter(campaign=judge.campaign).values_list("qid", flat=True))
    dropped = 0

    def one(name: str, stream: Any, report: ImportReport) -> None:
        nonlocal dropped
        for batch in _batches(iter_judge_labels(upload_lines(name, stream), name, y_max=top)):
            rows = []
            for line in batch:
                human = humans.get((line.qid, line.docno))
                if human is None:
                    report.unchanged += 1
                    continue
                if line.qid in own_topics:
                    dropped += 1
                    continue
                rows.append(_label_row(judge, line, name, top, human_grade=human))
            for row in rows:
                JudgeLabel.objects.filter(
                    judge=judge, human_grade__isnull=False, qid=row.qid, docno=row.docno
                ).delete()
            JudgeLabel.objects.bulk_create(rows)
            report.lines += len(batch)
            report.created += len(rows)

    report = each_file(judge_labels, one)
    if report.unchanged:
        report.notes.append(f"{report.unchanged} judge label(s) had no human grade in the qrels: not kept")
    if dropped:
        report.notes.append(
            f"{dropped} pair(s) on this campaign's own topics were dropped: an external calibration "
            "never uses the campaign's sample"
        )
    if report.created == 0:
        raise ImportFailed(
            [InputFileError(judge_labels[0][0], None, "no pair has both a human grade and a judge label")]
        )
    return report


def _label_row(judge: Judge, line: Any, name: str, y_max: int, human_grade: int | None = None) -> JudgeLabel:
    (label_class,) = judge_classes([line.grade], [line.probs], n_grades=y_max + 1)
    return JudgeLabel(
        judge=judge,
        qid=line.qid,
        docno=line.docno,
        grade=line.grade,
        probs=list(line.probs) if line.probs is not None else None,
        judge_class=int(label_class),
        rationale=line.rationale or "",
        seconds=line.seconds,
        cost=line.cost,
        human_grade=human_grade,
        source_file=name[:200],
    )


def _batches(records: Any, size: int = BATCH_SIZE) -> Any:
    batch: list = []
    for record in records:
        batch.append(record)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# ---------------------------------------------------------------------------------------------
# The pool's judge classes and calibrations


def judge_for_sampling(campaign: Campaign) -> Judge | None:
    """The judge the judged strategy uses: the first judge created that has labels."""
    return (
        Judge.objects.filter(campaign=campaign)
        .annotate(n=Count("labels", filter=Q(labels__human_grade__isnull=True)))
        .filter(n__gt=0)
        .order_by("created_at", "id")
        .first()
    )


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


def judge_calibration_fit(
    campaign: Campaign, judge: Judge | None, classes: np.ndarray, grades: np.ndarray, metric: Metric
) -> Calibration:
    """External when the judge has a calibration set (never on the campaign's topics), else
    internal from the human grades the pool holds now; none without either."""
    n_grades = campaign.grade_count
    gains = metric.gain_table()
    if judge is None:
        return no_calibration(n_grades)
    own_topics = set(Topic.objects.filter(campaign=campaign).values_list("qid", flat=True))
    external = [
        (label_class, human)
        for qid, label_class, human in JudgeLabel.objects.filter(
            judge=judge, human_grade__isnull=False
        ).values_list("qid", "judge_class", "human_grade")
        if qid not in own_topics
    ]
    if external:
        label_classes, humans = zip(*external, strict=True)
        return fit_calibration(
            np.array(label_classes), gains[np.array(humans)], n_grades=n_grades, source="external"
        )
    judged = grades >= 0
    if not judged.any():
        return no_calibration(n_grades)
    return fit_calibration(classes[judged], gains[grades[judged]], n_grades=n_grades, source="internal")


@dataclass(frozen=True, eq=False)
class JudgedDistribution(SamplingDistribution):
    """A judged q with the calibration and judge it was computed with (stored per version)."""

    calibration: Calibration | None = None
    judge: Judge | None = None


def judged_design(
    campaign: Campaign,
    arrays: PoolArrays,
    pool: Pool,
    metric: Metric,
    focus: Sequence[int],
    grades: np.ndarray,
) -> JudgedDistribution:
    """q of the judged strategy over (topic, slot): |a| of the goal's systems times sigma(f), mixed
    with eps = the campaign's mix (at least 0.2, the method's safety share) of w summed over every
    pooled system, so the draws stay unbiased for every system, not only the focus ones."""
    judge = judge_for_sampling(campaign)
    classes = pool_judge_classes(judge, arrays)
    calibration = judge_calibration_fit(campaign, judge, classes, grades, metric)
    weights = np.stack([system_weights(pool, metric, s) for s in range(pool.n_systems)])
    if campaign.goal == Campaign.Goal.DIFFERENCE and len(focus) == 2:
        importance = np.abs(weights[focus[0]] - weights[focus[1]])
    else:
        importance = np.abs(weights[list(focus)]).sum(axis=0)
    design = judged_distribution(
        importance,
        np.where(pool.slot_used, calibration.sigma(classes), 0.0),
        np.abs(weights).sum(axis=0),
        safety_share=max(campaign.mix, 0.2),
        cost=np.where(pool.slot_used, np.maximum(pool.item_cost, 1e-9), 1.0),
    )
    return JudgedDistribution(
        q=design.q,
        optimal=design.optimal,
        mix=design.mix,
        cost=pool.item_cost,
        calibration=calibration,
        judge=judge,
    )


def calibration_store(
    campaign: Campaign, version: int, calibration: Calibration, judge: Judge | None
) -> None:
    """Keep the calibration a sampling version was computed with (its draws' h)."""
    JudgeCalibration.objects.update_or_create(
        campaign=campaign,
        sampling_version=version,
        defaults={"table": calibration.as_dict(), "judge": judge},
    )


# ---------------------------------------------------------------------------------------------
# Estimates


def judged_level_rows(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, spent: float
) -> tuple[list[dict], dict | None, int]:
    """DCG rows from the certified estimator (every draw with the h of its sampling version),
    each with the judge-only value beside it; nDCG and ERR as null with a reason."""
    from sampling.estimates import NOT_LINEAR, _difference_row, _row, counted_item_draws

    metric = campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")
    topic, slot, propensities, versions = counted_item_draws(campaign, arrays, grades)
    gains = metric.gain_table()
    pool = pool_from_arrays(arrays)
    judge = judge_for_sampling(campaign)
    classes = pool_judge_classes(judge, arrays)
    tables = {
        version: Calibration.from_dict(table)
        for version, table in JudgeCalibration.objects.filter(campaign=campaign).values_list(
            "sampling_version", "table"
        )
    }
    none = no_calibration(campaign.grade_count)
    # h of each draw's item under its version's calibration; draws made by another strategy
    # (before a switch) carry h = 0: their terms are plain importance sampling, still unbiased.
    drawn_classes = classes[topic, slot]
    control = np.array(
        [tables.get(int(v), none).h(np.array([c]))[0] for v, c in zip(versions, drawn_classes, strict=True)]
    )
    human = gains[grades[topic, slot]] if topic.size else np.zeros(0)
    n_judged = int(np.unique(topic * arrays.n_slots + slot).size) if topic.size else 0
    judge_gain = np.where(classes >= 0, gains[np.clip(classes, 0, None)], 0.0)
    terms_of: dict[int, np.ndarray] = {}
    rows: list[dict] = []
    judge_values: dict[str, float] = {}
    bounds = metric.value_bounds()
    for index, name in enumerate(arrays.system_names):
        weights = system_weights(pool, metric, index)
        judge_values[name] = float((weights * judge_gain).sum())
        if not topic.size:
            row = _row(name, metric, None, intervals={})
        else:
            offsets = {
                v: float((weights * tables.get(v, none).h(classes)).sum()) for v in set(versions.tolist())
            }
            terms = judged_terms(
                np.array([offsets[int(v)] for v in versions]),
                weights[topic, slot],
                human,
                control,
                propensities,
            )
            terms_of[index] = terms
            estimate = judged_estimate(terms, n_judged=n_judged, budget_spent=spent)
            # What the judge was worth: the draws the same design would need without the judge's
            # control variate (h = 0) for this interval's width (an effective sample size).
            plain = weights[topic, slot] * human / propensities
            worth = (
                float(terms.size * plain.var(ddof=1) / terms.var(ddof=1))
                if terms.size > 1 and terms.var(ddof=1) > 0
                else None
            )
            row = _row(
                name,
                metric,
                estimate,
                intervals={"clt": [max(estimate.low, bounds[0]), min(estimate.high, bounds[1])]},
            )
        row["judge_only"] = judge_values[name] if judge is not None else None
        row["draws_without_judge"] = worth if topic.size else None
        rows.append(row)
    for name_of_metric in ("ERR", "nDCG"):
        other_metric = campaign_metric(campaign, f"{name_of_metric}@{campaign.metric_cutoff}")
        for name in arrays.system_names:
            rows.append(_row(name, other_metric, None, reason=NOT_LINEAR.format(metric=other_metric)))
    difference = None
    if campaign.goal == Campaign.Goal.DIFFERENCE:
        from sampling.state import focus_indices

        focus = focus_indices(campaign, arrays)
        if len(focus) == 2:
            a, b = focus
            gap = (
                judged_estimate(terms_of[a] - terms_of[b], n_judged=n_judged, budget_spent=spent)
                if topic.size
                else None
            )
            difference = _difference_row([arrays.system_names[a], arrays.system_names[b]], metric, gap)
    return rows, difference, int(topic.size)


# ---------------------------------------------------------------------------------------------
# What a team reads about a judge


def judge_pool_coverage(judge: Judge) -> dict[str, int]:
    """Pool items the judge labelled, the pool's size and the labels outside the pool."""
    from sampling.pool_arrays import pool_arrays_for

    arrays = pool_arrays_for(judge.campaign)
    classes = pool_judge_classes(judge, arrays)
    labelled = int(((classes >= 0) & arrays.slot_used).sum())
    total = JudgeLabel.objects.filter(judge=judge, human_grade__isnull=True).count()
    return {
        "labelled": labelled,
        "pool": int(arrays.slot_used.sum()),
        "outside": total - labelled,
        "labels": total,
    }


def judge_agreement(judge: Judge, *, per_topic: bool = False) -> dict[str, Any]:
    """Agreement of the judge with the campaign's human grades on the pool items both labelled."""
    from sampling.label_model import judged_grades
    from sampling.pool_arrays import pool_arrays_for

    campaign = judge.campaign
    arrays = pool_arrays_for(campaign)
    classes = pool_judge_classes(judge, arrays)
    grades = judged_grades(campaign, arrays)
    both = (classes >= 0) & (grades >= 0)
    found = agreement(grades[both], classes[both], n_grades=campaign.grade_count).as_dict()
    if per_topic:
        found["topics"] = [
            {
                "qid": qid,
                **agreement(grades[t][both[t]], classes[t][both[t]], n_grades=campaign.grade_count).as_dict(),
            }
            for t, qid in enumerate(arrays.topic_qids)
            if both[t].any()
        ]
    return found


def judge_summary(judge: Judge, *, per_topic: bool = False) -> dict[str, Any]:
    """Coverage, agreement, calibration set size and warnings of one judge."""
    campaign = judge.campaign
    coverage = judge_pool_coverage(judge)
    found = judge_agreement(judge, per_topic=per_topic)
    warnings = []
    shared = [name.strip() for name in judge.shares_model_with.split(",") if name.strip()]
    if shared:
        warnings.append(
            f"{judge.name} shares its model with {', '.join(shared)}: a judge favours systems of its "
            "own kind (circularity); read its judge-only values for those systems with care"
        )
    weighted = found.get("weighted_kappa")
    if found["n_items"] >= 20 and weighted is not None and weighted < LOW_AGREEMENT:
        warnings.append(
            f"agreement is low (quadratic-weighted kappa {weighted:.2f} on {found['n_items']} items): "
            "the judge will save few human labels; the design falls back toward sampling without "
            "the model by itself"
        )
    if judge.simulated:
        warnings.append(f"{judge.name}'s labels are simulated from human grades (a demonstration judge)")
    used = judge_for_sampling(campaign)
    return {
        "id": judge.pk,
        "name": judge.name,
        "kind": judge.kind,
        "model": judge.model,
        "prompt": judge.prompt,
        "version_date": judge.version_date.isoformat() if judge.version_date else None,
        "notes": judge.notes,
        "shares_model_with": shared,
        "simulated": judge.simulated,
        "used_for_sampling": used is not None and used.pk == judge.pk,
        "coverage": coverage,
        "calibration_set": JudgeLabel.objects.filter(judge=judge, human_grade__isnull=False).count(),
        "agreement": found,
        "warnings": warnings,
    }


def leaderboards(rows: list[dict]) -> dict[str, Any]:
    """The systems under the judge alone and under the certified estimates, Kendall's tau, and
    the adjacent pairs whose certified intervals still overlap (order not settled)."""
    dcg = [row for row in rows if row.get("judge_only") is not None and row.get("value") is not None]
    if len(dcg) < 2:
        return {"tau": None, "judge_order": [], "certified_order": [], "unsettled": []}
    certified = sorted(dcg, key=lambda row: -row["value"])
    unsettled = [
        [upper["name"], lower["name"]]
        for upper, lower in zip(certified, certified[1:], strict=False)
        if upper.get("low") is not None and lower.get("high") is not None and upper["low"] <= lower["high"]
    ]
    tau = kendall_tau([row["value"] for row in dcg], [row["judge_only"] for row in dcg])
    return {
        "tau": tau if np.isfinite(tau) else None,
        "judge_order": [row["name"] for row in sorted(dcg, key=lambda row: -row["judge_only"])],
        "certified_order": [row["name"] for row in certified],
        "unsettled": unsettled,
    }


# ---------------------------------------------------------------------------------------------
# Exports: enough to recompute the certified estimate offline


def judges_json(campaign: Campaign) -> str:
    """Every judge with its version, coverage, agreement, calibration set size and the
    calibration each sampling version used."""
    import json

    return json.dumps(
        {
            "judges": [judge_summary(judge) for judge in Judge.objects.filter(campaign=campaign)],
            "calibrations": [
                {"sampling_version": version, "judge": judge_name, **table}
                for version, judge_name, table in JudgeCalibration.objects.filter(campaign=campaign)
                .order_by("sampling_version")
                .values_list("sampling_version", "judge__name", "table")
            ],
        },
        indent=2,
    )


def judge_labels_csv(campaign: Campaign) -> Any:
    """Every judge label (pool or not; calibration-set rows with their human grade)."""
    import csv
    import io

    header = ["judge", "model", "qid", "docno", "grade", "probs", "class", "human_grade", "set", "rationale",
              "seconds", "cost", "file"]  # fmt: skip
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    yield buffer.getvalue()
    rows = JudgeLabel.objects.filter(judge__campaign=campaign).order_by(
        "judge_id", "human_grade", "qid", "docno"
    )
    for label in rows.select_related("judge").iterator(chunk_size=2000):
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(
            [
                label.judge.name,
                label.judge.model,
                label.qid,
                label.docno,
                "" if label.grade is None else label.grade,
                "" if label.probs is None else " ".join(repr(float(p)) for p in label.probs),
                label.judge_class,
                "" if label.human_grade is None else label.human_grade,
                "pool" if label.human_grade is None else "calibration",
                label.rationale,
                "" if label.seconds is None else label.seconds,
                "" if label.cost is None else label.cost,
                label.source_file,
            ]
        )
        yield buffer.getvalue()


def judged_sample_csv(campaign: Campaign) -> Any:
    """The human sample of a judged campaign: per item draw, its propensity, sampling version,
    the judge's class and that version's h for it, and the human grade (median of assessors);
    with the calibrations export this recomputes the estimate offline."""
    import csv
    import io

    from sampling.label_model import judged_grades
    from sampling.pool_arrays import pool_arrays_for

    arrays = pool_arrays_for(campaign)
    grades = judged_grades(campaign, arrays)
    classes = pool_judge_classes(judge_for_sampling(campaign), arrays)
    tables = {
        version: Calibration.from_dict(table)
        for version, table in JudgeCalibration.objects.filter(campaign=campaign).values_list(
            "sampling_version", "table"
        )
    }
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(
        ["order", "qid", "docno", "propensity", "sampling_version", "judge_class", "h", "human_grade"]
    )
    draws = Draw.objects.filter(campaign=campaign, kind=Draw.Kind.ITEM).order_by("order")
    for order, topic_id, document_id, qid, docno, propensity, version in draws.values_list(
        "order", "topic_id", "document_id", "topic__qid", "document__docno", "propensity", "sampling_version"
    ):
        topic, slot = arrays.locate(np.array([topic_id]), np.array([document_id]))
        inside = topic[0] >= 0
        label_class = int(classes[topic[0], slot[0]]) if inside else MISSING
        grade = int(grades[topic[0], slot[0]]) if inside else -1
        calibration = tables.get(version)
        control = "" if calibration is None else repr(float(calibration.h(np.array([label_class]))[0]))
        writer.writerow(
            [
                order,
                qid,
                docno,
                repr(float(propensity)),
                version,
                label_class,
                control,
                "" if grade < 0 else grade,
            ]
        )
    return buffer.getvalue()


def judges_dashboard(campaign: Campaign) -> dict[str, Any]:
    """The dashboard's judges panel: each judge's summary, per system the judge-only value next
    to the certified estimate, both leaderboards with Kendall's tau and the unsettled pairs."""
    from sampling.estimates import estimates_current

    judges = [judge_summary(judge) for judge in Judge.objects.filter(campaign=campaign)]
    if not judges:
        return {"judges": [], "systems": [], "board": None}
    result = estimates_current(campaign)
    metric = f"DCG@{campaign.metric_cutoff}"
    rows = [
        {
            **row,
            "gap": row["judge_only"] - row["value"]
            if row.get("value") is not None and row.get("judge_only") is not None
            else None,
        }
        for row in result.get("systems", [])
        if row.get("metric") == metric and "judge_only" in row
    ]
    return {"judges": judges, "systems": rows, "board": leaderboards(rows), "level": result.get("level")}
