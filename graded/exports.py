"""The graded mode's exports: TREC qrels, the judgments as CSV and JSONL (with assessor,
seconds, draw order and propensity), and a zip to recompute every number of the dashboard
offline. Each function yields text chunks from a server-side iterator over the database, so a
campaign with a million judgments exports in bounded memory."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from itertools import groupby
from typing import Any

from labeling.exports import CHUNK_ROWS, campaign_config_json, csv_text, run_trec
from labeling.models import Campaign, Judgment
from sampling import (
    SamplingState,
    arrivals_json,
    draws_csv,
    estimates_history_csv,
    estimates_history_json,
    judge_labels_csv,
    judged_sample_csv,
    judges_json,
    pool_csv,
    pool_depth_of,
    sampling_csv,
)

JUDGMENT_FIELDS = (
    "topic",
    "docno",
    "grade",
    "grade_name",
    "assessor",
    "seconds",
    "cost",
    "source",
    "created",
    "draw_order",
    "draw_kind",
    "propensity",
    "strategy",
    "task",
    "slot",
    "note",
)


def _judgment_rows(campaign: Campaign) -> Iterator[dict[str, Any]]:
    names = [grade["name"] for grade in campaign.grades]
    rows = (
        Judgment.objects.filter(campaign=campaign)
        .order_by("created_at", "id")
        .values_list(
            "topic__qid",
            "document__docno",
            "grade",
            "assessor__username",
            "seconds",
            "cost",
            "source",
            "created_at",
            "draw__order",
            "draw__kind",
            "draw__propensity",
            "draw__strategy",
            "task_id",
            "task__slot",
            "note",
        )
    )
    for (
        qid,
        docno,
        grade,
        username,
        seconds,
        cost,
        source,
        created,
        order,
        kind,
        propensity,
        strategy,
        task,
        slot,
        note,
    ) in rows.iterator(chunk_size=CHUNK_ROWS):
        yield {
            "topic": qid,
            "docno": docno,
            "grade": grade,
            "grade_name": names[grade] if grade < len(names) else "",
            "assessor": username or "",
            "seconds": seconds,
            "cost": cost,
            "source": source,
            "created": created.isoformat(),
            "draw_order": order,
            "draw_kind": kind or "",
            "propensity": propensity,
            "strategy": strategy or "",
            "task": task,
            "slot": slot,
            "note": note,
        }


def judgments_jsonl(campaign: Campaign) -> Iterator[str]:
    """One JSON object per judgment, in the order they were made."""
    for row in _judgment_rows(campaign):
        yield json.dumps(row, ensure_ascii=False) + "\n"


def judgments_csv(campaign: Campaign) -> Iterator[str]:
    """A CSV header, then one row per judgment, in the order they were made."""
    return csv_text(JUDGMENT_FIELDS, _judgment_rows(campaign))


def qrels_trec(campaign: Campaign) -> Iterator[str]:
    """TREC qrels `qid 0 docno grade`, one line per judged (topic, document).

    An item judged several times (overlap > 1) gets the lower median of its grades, which is
    its single grade when judged once; imported qrels are exported like assessor judgments.
    """
    rows = (
        Judgment.objects.filter(campaign=campaign)
        .order_by("topic__qid", "document__docno", "grade")
        .values_list("topic__qid", "document__docno", "grade")
        .iterator(chunk_size=CHUNK_ROWS)
    )
    lines: list[str] = []
    for (qid, docno), group in groupby(rows, key=lambda row: (row[0], row[1])):
        grades = [row[2] for row in group]
        lines.append(f"{qid} 0 {docno} {grades[(len(grades) - 1) // 2]}\n")
        if len(lines) >= CHUNK_ROWS:
            yield "".join(lines)
            lines.clear()
    yield "".join(lines)


OFFLINE_README = """Everything the dashboard shows, recomputable with the `estimation` package:

config.json          campaign settings (metric, grades, strategy, goal, focus systems, mix, seed)
draws.csv            every draw: kind (query/item), topic, docno, propensity in force, cost,
                     and the drawn item's stratum (its pool row's drawable_after)
judgments.csv        every judgment (assessor and imported qrels) with seconds and draw order
qrels.txt            one grade per judged (topic, document): the lower median of its judgments
pool.csv             every pool item with the order of the last draw made before it joined the
                     pool (drawable_after; 0 for the first pool): a run pooled after draws were
                     made is estimated by strata of it (estimation.sampling.arrivals)
arrivals.json        every run that arrived with a top-up: its reference, top-up budget, the
                     order of the last draw before it (draws after it are its top-up's and
                     later), and its report (estimate, difference, status) when the ZIP was made
runs/<system>.run    each pooled system's ranking (pool depth, trec_eval order);
                     runs/eval-only/ holds runs uploaded for evaluation only
documents.tsv        docno and length (the cost model's input)
sampling.csv         the current sampling distribution (q per topic, or per topic and document)
label_model.json     label model (features, weights, thresholds, prior weight), cost model,
                     item-level weight bounds, sampling state version
estimates.json/.csv  every stored estimate snapshot

With model judges (judge-assisted campaigns):
judges.json          every judge (kind, model, coverage, agreement, each version's prompt) and
                     the calibration table each sampling version used
judge-labels.csv     every judge label: the pool's (set=pool) and the calibration set's
                     (set=calibration, with the human grade), grade, probabilities, class,
                     rationale, seconds, cost, version
judged-sample.csv    every item draw of the judged design: propensity, sampling version, the
                     judge's class and that version's h for it, the human grade; with
                     judges.json's calibrations it recomputes the certified estimate
"""


def offline_bundle(campaign: Campaign) -> bytes:
    """A zip of everything needed to recompute every number of the dashboard offline."""
    record = SamplingState.objects.filter(campaign=campaign).first()
    model = {
        "sampling_state_version": record.version if record else None,
        "level": record.level if record else None,
        "label_model": record.label_model if record else None,
        "cost_model": record.cost_model if record else None,
        "weight_bounds": record.weight_bounds if record else None,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("README.txt", OFFLINE_README)
        archive.writestr("config.json", campaign_config_json(campaign))
        archive.writestr("draws.csv", "".join(draws_csv(campaign)))
        archive.writestr("judgments.csv", "".join(judgments_csv(campaign)))
        archive.writestr("qrels.txt", "".join(qrels_trec(campaign)))
        archive.writestr("pool.csv", "".join(pool_csv(campaign)))
        archive.writestr("arrivals.json", arrivals_json(campaign))
        depth = pool_depth_of(campaign)
        for system in campaign.systems.order_by("id"):
            folder = "runs/eval-only" if system.evaluation_only else "runs"
            archive.writestr(f"{folder}/{system.name}.run", "".join(run_trec(system, depth)))
        lengths = "".join(
            f"{docno}\t{'' if length is None else length}\n"
            for docno, length in campaign.documents.order_by("docno").values_list("docno", "length")
        )
        archive.writestr("documents.tsv", "docno\tlength\n" + lengths)
        archive.writestr("sampling.csv", sampling_csv(campaign))
        archive.writestr("label_model.json", json.dumps(model, indent=1) + "\n")
        archive.writestr("estimates.json", estimates_history_json(campaign))
        archive.writestr("estimates.csv", "".join(estimates_history_csv(campaign)))
        if campaign.judges.exists():
            archive.writestr("judges.json", judges_json(campaign))
            archive.writestr("judge-labels.csv", "".join(judge_labels_csv(campaign)))
            archive.writestr("judged-sample.csv", judged_sample_csv(campaign))
    return buffer.getvalue()
