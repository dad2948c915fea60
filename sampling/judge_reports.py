"""What a team reads about its model judges: coverage, agreement with the assessors, warnings,
the judge-only values next to the certified estimates, both orders, and the exports that let
anyone recompute the estimate offline."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Count, OuterRef, Q, Subquery

from estimation.judges.agreement import agreement, kendall_tau
from estimation.judges.calibration import MISSING, Calibration
from labeling.csv_cells import CsvWriter, csv_stream
from labeling.metric import campaign_metric
from labeling.models import Campaign, Draw, PoolItem, System
from sampling.estimates import estimates_current
from sampling.focus import compared_systems
from sampling.judge_calls import judge_total_cost
from sampling.judge_kinds import judge_kind, judge_settings_all
from sampling.judge_labels import judge_for_sampling, pool_judge_classes
from sampling.judge_runs import judge_run_latest, judge_run_progress
from sampling.judged_estimates import judge_only_values
from sampling.label_model import judged_grades
from sampling.models import Judge, JudgeCalibration, JudgeCall, JudgeLabel, JudgeVersion
from sampling.pool_arrays import PoolArrays, pool_arrays_for
from sampling.strategies import strategy_for

LOW_AGREEMENT = 0.2
"""Quadratic-weighted kappa below this: the judge is unlikely to help (the design falls back
toward the no-model one by itself, since its sigma stays large everywhere)."""


def judge_agreement(
    judge: Judge,
    arrays: PoolArrays,
    classes: np.ndarray,
    *,
    per_topic: bool = False,
    grades: np.ndarray | None = None,
) -> dict[str, Any]:
    """Agreement of the judge (its `pool_judge_classes` on `arrays`) with the campaign's human
    grades (`judged_grades`, read here unless given) on the pool items both labelled."""
    campaign = judge.campaign
    if grades is None:
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


@dataclass(frozen=True)
class _CampaignLabels:
    """What every judge's summary needs from the campaign, read once for all its judges, so the
    label table is read a fixed number of times per request whatever the number of judges (a
    count over every label once per judge took minutes with a million labels outside the
    pool): one grouped count, one walk of the pool that looks each item's labels up by index,
    and the sampling judge (`judge_for_sampling`: an EXISTS per judge)."""

    arrays: PoolArrays
    grades: np.ndarray
    classes: dict[int, np.ndarray]  # judge id -> class per pool slot
    pool_labels: dict[int, int]  # judge id -> labels outside a calibration set
    calibration: dict[int, int]  # judge id -> calibration-set labels
    versions: dict[int, list[int]]  # judge id -> versions that made its labels on the pool
    system_names: frozenset[str]
    sampling_judge: Judge | None


def _campaign_labels(campaign: Campaign, judges: Sequence[Judge]) -> _CampaignLabels:
    arrays = pool_arrays_for(campaign)
    ids = [judge.pk for judge in judges]
    counts = list(
        JudgeLabel.objects.filter(judge_id__in=ids)
        .values("judge_id")
        .annotate(
            pool=Count("id", filter=Q(human_grade__isnull=True)),
            calibration=Count("id", filter=Q(human_grade__isnull=False)),
        )
    )
    pool_labels = {row["judge_id"]: row["pool"] for row in counts}
    calibration = {row["judge_id"]: row["calibration"] for row in counts}
    classes, versions = _pool_labels(campaign, ids, arrays, labelled=[i for i in ids if pool_labels.get(i)])
    return _CampaignLabels(
        arrays=arrays,
        grades=judged_grades(campaign, arrays),
        classes=classes,
        pool_labels=pool_labels,
        calibration=calibration,
        versions=versions,
        system_names=frozenset(System.objects.filter(campaign=campaign).values_list("name", flat=True)),
        sampling_judge=judge_for_sampling(campaign),
    )


def _pool_labels(
    campaign: Campaign, judge_ids: Sequence[int], arrays: PoolArrays, *, labelled: Sequence[int]
) -> tuple[dict[int, np.ndarray], dict[int, list[int]]]:
    """Each judge's class per pool slot (as `pool_judge_classes`) and the versions that made its
    labels on the pool, in one read driven by the pool: each pool item looks the labels of the
    `labelled` judges up in the (judge, qid, docno) index, so labels outside the pool, even on
    its topics, cost nothing."""
    classes = {judge_id: np.full(arrays.slot_used.shape, MISSING, dtype=np.int64) for judge_id in judge_ids}
    made_by: dict[int, set[int]] = {judge_id: set() for judge_id in judge_ids}
    asked = list(labelled)
    if not asked:
        return classes, {judge_id: [] for judge_id in made_by}
    position = {qid: index for index, qid in enumerate(arrays.topic_qids)}
    slot_of = [{docno: slot for slot, docno in enumerate(docnos)} for docnos in arrays.docnos]
    looked_up: dict[str, Subquery] = {}
    for judge_id in asked:
        label = JudgeLabel.objects.filter(
            judge_id=judge_id,
            human_grade__isnull=True,
            qid=OuterRef("topic__qid"),
            docno=OuterRef("document__docno"),
        )
        looked_up[f"class_{judge_id}"] = Subquery(label.values("judge_class")[:1])
        looked_up[f"version_{judge_id}"] = Subquery(label.values("version")[:1])
    rows = (
        PoolItem.objects.filter(campaign=campaign)
        .annotate(**looked_up)
        .values_list("topic__qid", "document__docno", *looked_up)
    )
    for qid, docno, *found in rows.iterator(chunk_size=5000):
        topic = position.get(qid)
        slot = None if topic is None else slot_of[topic].get(docno)
        for index, judge_id in enumerate(asked):
            label_class, version = found[2 * index], found[2 * index + 1]
            if label_class is None:
                continue
            if slot is not None:  # the cached arrays may predate a pool change
                classes[judge_id][topic, slot] = label_class
            if version is not None:
                made_by[judge_id].add(int(version))
    return classes, {judge_id: sorted(versions) for judge_id, versions in made_by.items()}


def judge_summary(judge: Judge, *, per_topic: bool = False) -> dict[str, Any]:
    """Coverage, agreement, calibration set size and warnings of one judge."""
    (summary,) = judges_summaries(judge.campaign, [judge], per_topic=per_topic)
    return summary


def judges_summaries(
    campaign: Campaign, judges: Sequence[Judge] | None = None, *, per_topic: bool = False
) -> list[dict[str, Any]]:
    """`judge_summary` of each of `judges` (default: every judge of the campaign), reading the
    campaign's labels once for all of them."""
    if judges is None:
        judges = list(Judge.objects.filter(campaign=campaign))
    if not judges:
        return []
    labels = _campaign_labels(campaign, judges)
    return [_summary(judge, labels, per_topic=per_topic) for judge in judges]


def _summary(judge: Judge, labels: _CampaignLabels, *, per_topic: bool) -> dict[str, Any]:
    arrays, classes = labels.arrays, labels.classes[judge.pk]
    labelled = int(((classes >= 0) & arrays.slot_used).sum())
    total = labels.pool_labels.get(judge.pk, 0)
    coverage = {
        "labelled": labelled,
        "pool": int(arrays.slot_used.sum()),
        "outside": total - labelled,
        "labels": total,
    }
    found = judge_agreement(judge, arrays, classes, per_topic=per_topic, grades=labels.grades)
    warnings = []
    shared = [name.strip() for name in judge.shares_model_with.split(",") if name.strip()]
    unknown = sorted(set(shared) - labels.system_names)
    if unknown:
        warnings.append(
            f"'shares model with' names no system of this campaign: {', '.join(unknown)} "
            "(system names are the runs' tags)"
        )
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
    kind = judge_kind(judge.kind)
    warnings += kind.warnings(judge)
    versions = labels.versions.get(judge.pk, [])
    if len(versions) > 1:
        warnings.append(
            f"the pool carries labels of {len(versions)} versions of {judge.name} "
            f"({', '.join(map(str, versions))}): run the current version to replace the older labels"
        )
    latest = judge_run_latest(judge)
    used = labels.sampling_judge
    return {
        "id": judge.pk,
        "name": judge.name,
        "kind": judge.kind,
        "model": judge.model,
        "prompt": judge.prompt,
        "notes": judge.notes,
        "shares_model_with": shared,
        "simulated": judge.simulated,
        "used_for_sampling": used is not None and used.pk == judge.pk,
        "coverage": coverage,
        "calibration_set": labels.calibration.get(judge.pk, 0),
        "agreement": found,
        "warnings": warnings,
        "version": judge.version,
        # Every kind's settings, so that the API's fields are the same whatever the kind (the
        # defaults for another kind's), then what the judge's own kind adds.
        **{name: setting.json_value(judge) for name, setting in judge_settings_all().items()},
        "api_key_set": None,
        **kind.summary_extras(judge),
        "total_cost": judge_total_cost(judge),
        "thresholds": judge.thresholds,
        "thresholds_shown": ", ".join(f"{float(cut):.2f}" for cut in judge.thresholds["cuts"])
        if judge.thresholds
        else "",
        "runnable": kind.runs,
        "run": judge_run_progress(latest),
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


def judge_calls_csv(campaign: Campaign) -> Any:
    """Every answer the campaign's endpoint and lexical judges were asked for, as cached: the
    label, the refusal with its reason and the model's answer, the error, or why a pair was not
    sent; with tokens, seconds and cost (what the judge panel counts, pair by pair)."""
    header = ["judge", "model", "version", "qid", "docno", "outcome", "grade", "text", "tokens_in",
              "tokens_out", "seconds", "cost", "asked_at"]  # fmt: skip
    calls = JudgeCall.objects.filter(judge__campaign=campaign).order_by("judge_id", "version", "qid", "docno")
    rows = (
        [
            call.judge.name,
            call.judge.model,
            call.version,
            call.qid,
            call.docno,
            call.get_outcome_display() if call.outcome == JudgeCall.Outcome.SKIPPED else call.outcome,
            "" if call.grade is None else call.grade,
            call.text,
            call.tokens_in,
            call.tokens_out,
            call.seconds,
            call.cost,
            call.created_at.isoformat(),
        ]
        for call in calls.select_related("judge").iterator(chunk_size=2000)
    )
    return csv_stream(header, rows)


def judges_dashboard(campaign: Campaign) -> dict[str, Any]:
    """The dashboard's judges panel: each judge's summary, per system the judge-only value next
    to the certified estimate, both leaderboards with Kendall's tau and the unsettled pairs."""
    every = list(Judge.objects.filter(campaign=campaign))
    if not every:
        return {"judges": [], "systems": [], "board": None, "uses_judge": False}
    labels = _campaign_labels(campaign, every)
    judges = [_summary(judge, labels, per_topic=True) for judge in every]
    result = estimates_current(campaign)
    metric = f"DCG@{campaign.metric_cutoff}"
    # The judge-only column is the sampling judge's as it stands now (a judge chosen or run
    # since the last refit shows at once); the certified rows are the latest refit's.
    sampling_judge = labels.sampling_judge
    live = (
        judge_only_values(labels.arrays, labels.classes[sampling_judge.pk], campaign_metric(campaign, metric))
        if sampling_judge is not None
        else {}
    )
    # Beside the certified rows: the judge whose labels they use (the one sampling uses).
    circular: dict[str, list[str]] = {}
    for judge in judges:
        for system in judge["shares_model_with"] if judge["used_for_sampling"] else []:
            circular.setdefault(system, []).append(judge["name"])
    aimed_at = compared_systems(campaign)
    rows = []
    for row in result.get("systems", []):
        if row.get("metric") != metric or "judge_only" not in row:
            continue
        judge_only = live.get(row["name"])
        rows.append(
            {
                **row,
                "judge_only": judge_only,
                "circular_judges": circular.get(row["name"], []),
                "aimed_at": row["name"] in aimed_at,
                "judge_only_vs_interval": _against_interval(judge_only, row.get("low"), row.get("high")),
            }
        )
    # The systems the design aims at first (their intervals are the narrow ones), then the rest.
    rows.sort(key=lambda row: not row["aimed_at"])
    unlabelled = (
        int(labels.arrays.slot_used.sum() - (labels.classes[sampling_judge.pk] >= 0).sum())
        if sampling_judge is not None
        else 0
    )
    return {
        "judges": judges,
        "systems": rows,
        "board": leaderboards(rows),
        "difference": _judged_difference(result.get("difference"), live),
        "unlabelled": unlabelled,
        "pool": int(labels.arrays.slot_used.sum()),
        "level": result.get("level"),
        "sampling_judge": sampling_judge.name if sampling_judge is not None else None,
        "estimated_at": str(result.get("computed_at") or "")[:16].replace("T", " "),
        # Whether the campaign's strategy samples with the judge marked for sampling.
        "uses_judge": strategy_for(campaign).uses_judge,
    }


def _against_interval(value: float | None, low: float | None, high: float | None) -> str | None:
    """Where the judge-only value lies against the certified 95 % interval: "inside", "above" or
    "below" (None without both). The certified point is no reference: the interval is."""
    if value is None or low is None or high is None:
        return None
    return "below" if value < low else "above" if value > high else "inside"


def _judged_difference(difference: dict[str, Any] | None, live: dict[str, float]) -> dict[str, Any] | None:
    """For the compared pair: the judge-only difference beside the certified one, and whether the
    judge alone orders the pair as the certified interval does ("right", "wrong"), or the
    certified interval still holds 0 ("unsettled": neither order is known yet)."""
    if not difference or difference.get("value") is None:
        return None
    first, second = difference["systems"]
    if first not in live or second not in live:
        return None
    judge_only = live[first] - live[second]
    low, high = difference.get("low"), difference.get("high")
    if low is None or high is None or low <= 0 <= high:
        verdict = "unsettled"
    else:
        verdict = "right" if (judge_only > 0) == (low > 0) else "wrong"
    return {
        "systems": [first, second],
        "judge_only": judge_only,
        "value": difference["value"],
        "low": low,
        "high": high,
        "judge_order": verdict,
    }


def judges_json(campaign: Campaign) -> str:
    """Every judge with its version, coverage, agreement, calibration set size and the
    calibration each sampling version used."""
    return json.dumps(
        {
            "judges": [
                {
                    **summary,
                    "versions": [
                        {
                            "number": number,
                            "model": model,
                            "prompt": prompt,
                            **asked_with,
                            "created_at": created.isoformat(),
                        }  # fmt: skip
                        for number, model, prompt, asked_with, created in JudgeVersion.objects.filter(
                            judge_id=summary["id"]
                        ).values_list("number", "model", "prompt", "asked_with", "created_at")
                    ],
                }
                for summary in judges_summaries(campaign)
            ],
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
    """Every judge label (pool or not; calibration-set rows with their human grade), streamed by
    `csv_stream` (700,000 labels: the first row within a second, all in about 20 s on SQLite;
    docs/benchmarks.md)."""

    header = ["judge", "model", "qid", "docno", "grade", "probs", "class", "human_grade", "set", "rationale",
              "seconds", "cost", "file", "version"]  # fmt: skip
    labels = JudgeLabel.objects.filter(judge__campaign=campaign).order_by(
        "judge_id", "human_grade", "qid", "docno"
    )
    rows = (
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
            "" if label.version is None else label.version,
        ]
        for label in labels.select_related("judge").iterator(chunk_size=2000)
    )
    return csv_stream(header, rows)


def judged_sample_csv(campaign: Campaign) -> Any:
    """The human sample of a judged campaign: per item draw, its propensity, sampling version,
    the judge's class and that version's h for it, and the human grade (median of assessors);
    with the calibrations export this recomputes the estimate offline."""

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
    writer = CsvWriter(buffer)
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
