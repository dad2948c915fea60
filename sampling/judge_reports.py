"""What a team reads about its model judges: coverage, agreement with the assessors, warnings,
the judge-only values next to the certified estimates, both orders, and the exports that let
anyone recompute the estimate offline."""

from __future__ import annotations

import io
import json
import os
from typing import Any

import numpy as np

from estimation.judges.agreement import agreement, kendall_tau
from estimation.judges.calibration import MISSING, Calibration
from labeling.csv_cells import CsvWriter
from labeling.metric import campaign_metric
from labeling.models import Campaign, Draw, Judge, JudgeCalibration, JudgeLabel, JudgeVersion, System
from sampling.estimates import estimates_current
from sampling.judge_labels import judge_for_sampling, judge_pool_coverage, pool_judge_classes
from sampling.judge_runs import judge_run_latest, judge_run_progress, judge_total_cost
from sampling.judged_estimates import judge_only_values
from sampling.label_model import judged_grades
from sampling.pool_arrays import PoolArrays, pool_arrays_for

LOW_AGREEMENT = 0.2
"""Quadratic-weighted kappa below this: the judge is unlikely to help (the design falls back
toward the no-model one by itself, since its sigma stays large everywhere)."""


def judge_agreement(
    judge: Judge, arrays: PoolArrays, classes: np.ndarray, *, per_topic: bool = False
) -> dict[str, Any]:
    """Agreement of the judge (its `pool_judge_classes` on `arrays`) with the campaign's human
    grades on the pool items both labelled."""
    campaign = judge.campaign
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
    arrays = pool_arrays_for(campaign)
    classes = pool_judge_classes(judge, arrays)
    coverage = judge_pool_coverage(judge, arrays, classes)
    found = judge_agreement(judge, arrays, classes, per_topic=per_topic)
    warnings = []
    shared = [name.strip() for name in judge.shares_model_with.split(",") if name.strip()]
    unknown = sorted(
        set(shared) - set(System.objects.filter(campaign=campaign).values_list("name", flat=True))
    )
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
    if judge.kind == Judge.Kind.LEXICAL:
        warnings.append(
            f"{judge.name} is the built-in lexical judge: BM25 word overlap, a weak judge; it saves human "
            "labels only where word overlap says something about relevance"
        )
    labelled_by = JudgeLabel.objects.filter(judge=judge, human_grade__isnull=True, version__isnull=False)
    versions = sorted({int(version or 0) for version in labelled_by.values_list("version", flat=True)})
    if len(versions) > 1:
        warnings.append(
            f"the pool carries labels of {len(versions)} versions of {judge.name} "
            f"({', '.join(map(str, versions))}): run the current version to replace the older labels"
        )
    latest = judge_run_latest(judge)
    key_variable = judge.api_key_variable
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
        "version": judge.version,
        "base_url": judge.base_url,
        "api_key_variable": key_variable,
        "api_key_set": bool(os.environ.get(key_variable)) if key_variable else None,
        "with_probabilities": judge.with_probabilities,
        "concurrency": judge.concurrency,
        "requests_per_minute": judge.requests_per_minute,
        "price_in_per_1k": judge.price_in_per_1k,
        "price_out_per_1k": judge.price_out_per_1k,
        "cost_cap": judge.cost_cap,
        "total_cost": judge_total_cost(judge),
        "thresholds": judge.thresholds,
        "thresholds_shown": ", ".join(f"{float(cut):.2f}" for cut in judge.thresholds["cuts"])
        if judge.thresholds
        else "",
        "runnable": judge.kind != Judge.Kind.UPLOAD,
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


def judges_dashboard(campaign: Campaign) -> dict[str, Any]:
    """The dashboard's judges panel: each judge's summary, per system the judge-only value next
    to the certified estimate, both leaderboards with Kendall's tau and the unsettled pairs."""
    judges = [judge_summary(judge, per_topic=True) for judge in Judge.objects.filter(campaign=campaign)]
    if not judges:
        return {"judges": [], "systems": [], "board": None}
    result = estimates_current(campaign)
    metric = f"DCG@{campaign.metric_cutoff}"
    # The judge-only column is the sampling judge's as it stands now (a judge chosen or run
    # since the last refit shows at once); the certified rows are the latest refit's.
    sampling_judge = judge_for_sampling(campaign)
    arrays = pool_arrays_for(campaign)
    live = (
        judge_only_values(
            arrays, pool_judge_classes(sampling_judge, arrays), campaign_metric(campaign, metric)
        )
        if sampling_judge is not None
        else {}
    )
    # Beside the certified rows: the judge whose labels they use (the one sampling uses).
    circular: dict[str, list[str]] = {}
    for judge in judges:
        for system in judge["shares_model_with"] if judge["used_for_sampling"] else []:
            circular.setdefault(system, []).append(judge["name"])
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
                "gap": judge_only - row["value"]
                if row.get("value") is not None and judge_only is not None
                else None,
            }
        )
    return {
        "judges": judges,
        "systems": rows,
        "board": leaderboards(rows),
        "level": result.get("level"),
        "sampling_judge": sampling_judge.name if sampling_judge is not None else None,
        "estimated_at": str(result.get("computed_at") or "")[:16].replace("T", " "),
    }


def judges_json(campaign: Campaign) -> str:
    """Every judge with its version, coverage, agreement, calibration set size and the
    calibration each sampling version used."""
    return json.dumps(
        {
            "judges": [
                {
                    **judge_summary(judge),
                    "versions": [
                        {
                            "number": number,
                            "model": model,
                            "prompt": prompt,
                            **asked_with,
                            "created_at": created.isoformat(),
                        }  # fmt: skip
                        for number, model, prompt, asked_with, created in JudgeVersion.objects.filter(
                            judge=judge
                        ).values_list("number", "model", "prompt", "asked_with", "created_at")
                    ],
                }
                for judge in Judge.objects.filter(campaign=campaign)
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
    """Every judge label (pool or not; calibration-set rows with their human grade)."""

    header = ["judge", "model", "qid", "docno", "grade", "probs", "class", "human_grade", "set", "rationale",
              "seconds", "cost", "file", "version"]  # fmt: skip
    buffer = io.StringIO()
    writer = CsvWriter(buffer)
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
                "" if label.version is None else label.version,
            ]
        )
        yield buffer.getvalue()


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
