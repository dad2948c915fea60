"""Exports: TREC qrels, judgments as CSV and JSONL, campaign configuration as JSON, draws,
the estimate history (CSV and JSON), and a zip to recompute every dashboard number offline.

Each function yields text chunks from a server-side iterator over the database, so a
campaign with a million judgments exports in bounded memory (wrap in StreamingHttpResponse).
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterator
from itertools import groupby
from typing import Any

from labeling.models import (
    Campaign,
    Draw,
    EstimateSnapshot,
    Judgment,
    RankingEntry,
    SamplingState,
    Skip,
    System,
)
from labeling.modes import mode_of
from labeling.selectors import campaign_assessors, campaign_counts

CHUNK_ROWS = 2000

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
    return _csv_text(JUDGMENT_FIELDS, _judgment_rows(campaign))


SKIP_FIELDS = ("created", "assessor", "kind", "task", "topic", "docno", "reason", "note")


def skips_csv(campaign: Campaign) -> Iterator[str]:
    """Every skip in order: who passed which item on, why, and their note."""
    rows = (
        Skip.objects.filter(campaign=campaign)
        .order_by("created_at", "id")
        .values_list(
            "created_at",
            "assessor__username",
            "kind",
            "unit",
            "topic__qid",
            "document__docno",
            "reason",
            "note",
        )
    )
    return _csv_text(
        SKIP_FIELDS,
        (
            dict(zip(SKIP_FIELDS, (created.isoformat(), assessor or "", *rest), strict=True))
            for created, assessor, *rest in rows.iterator(chunk_size=CHUNK_ROWS)
        ),
    )


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


def campaign_config(campaign: Campaign) -> dict[str, Any]:
    """The campaign's configuration, systems, assessors and counts, as a JSON-ready dict."""
    return {
        "id": campaign.pk,
        "name": campaign.name,
        "metric": campaign.metric,
        "grades": campaign.grades,
        "judging_mode": campaign.judging_mode,
        "mode_settings": mode_of(campaign).settings_of(campaign),
        "goal": campaign.goal,
        "goal_k": campaign.goal_k,
        "strategy": campaign.strategy,
        "budget": campaign.budget,
        "budget_unit": campaign.budget_unit,
        "overlap": campaign.overlap,
        "pool_depth": campaign.effective_pool_depth,
        "lease_seconds": campaign.lease_seconds,
        "status": campaign.status,
        "seed": campaign.seed,
        "mix": campaign.mix,
        "focus_systems": campaign.focus_systems,
        "prior_strength": campaign.prior_strength,
        "pool_version": campaign.pool_version,
        "created": campaign.created_at.isoformat(),
        "systems": list(
            campaign.systems.filter(evaluation_only=False).order_by("name").values_list("name", flat=True)
        ),
        "evaluation_only_systems": list(
            campaign.systems.filter(evaluation_only=True).order_by("name").values_list("name", flat=True)
        ),
        "assessors": [member.user.get_username() for member in campaign_assessors(campaign)],
        "counts": campaign_counts(campaign),
    }


def campaign_config_json(campaign: Campaign) -> str:
    """`campaign_config` as indented JSON text."""
    return json.dumps(campaign_config(campaign), indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# Estimates history, draws, sampling state, and the bundle to recompute every number offline

DRAW_FIELDS = (
    "order",
    "kind",
    "topic",
    "docno",
    "propensity",
    "cost",
    "strategy",
    "sampling_version",
    "created",
)
HISTORY_FIELDS = (
    "created",
    "spent",
    "budget",
    "judgments",
    "draws",
    "level",
    "system",
    "metric",
    "value",
    "se",
    "low",
    "high",
    "n",
)


def _csv_text(fields: tuple[str, ...], rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for number, row in enumerate(rows, start=1):
        writer.writerow({key: "" if row.get(key) is None else row.get(key) for key in fields})
        if number % 500 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _draw_rows(campaign: Campaign) -> Iterator[dict[str, Any]]:
    rows = (
        Draw.objects.filter(campaign=campaign)
        .order_by("order")
        .values_list(
            "order",
            "kind",
            "topic__qid",
            "document__docno",
            "propensity",
            "cost",
            "strategy",
            "sampling_version",
            "created_at",
        )
    )
    for order, kind, qid, docno, propensity, cost, strategy, version, created in rows.iterator(
        chunk_size=CHUNK_ROWS
    ):
        yield {
            "order": order,
            "kind": kind,
            "topic": qid,
            "docno": docno or "",
            "propensity": propensity,
            "cost": cost,
            "strategy": strategy,
            "sampling_version": version,
            "created": created.isoformat(),
        }


def draws_csv(campaign: Campaign) -> Iterator[str]:
    """Every draw in order: kind (query or item), topic, document (item draws), the propensity in
    force when it was drawn, its predicted cost and the sampling state version it came from."""
    return _csv_text(DRAW_FIELDS, _draw_rows(campaign))


def estimates_history(campaign: Campaign, after: int | None = None) -> list[dict[str, Any]]:
    """The stored snapshots, oldest first; only those newer than snapshot `after` if given.

    Each: {id, created, spent, budget, judgments, draws, level, systems, difference}.
    """
    snapshots = EstimateSnapshot.objects.filter(campaign=campaign)
    if after is not None:
        snapshots = snapshots.filter(id__gt=after)
    return [
        {
            "id": snapshot.pk,
            "created": snapshot.created_at.isoformat(),
            "spent": snapshot.spent,
            "budget": snapshot.budget,
            "judgments": snapshot.judgments,
            "draws": snapshot.draws,
            "level": snapshot.level,
            **snapshot.data,
        }
        for snapshot in snapshots.order_by("id")
    ]


def estimates_history_json(campaign: Campaign) -> str:
    """`estimates_history` as JSON text."""
    return json.dumps(estimates_history(campaign), indent=1, ensure_ascii=False) + "\n"


def _history_rows(campaign: Campaign) -> Iterator[dict[str, Any]]:
    for snapshot in estimates_history(campaign):
        common = {key: snapshot[key] for key in ("created", "spent", "budget", "judgments", "draws", "level")}
        for row in snapshot.get("systems", []):
            yield {
                **common,
                "system": row["name"],
                **{k: row.get(k) for k in ("metric", "value", "se", "low", "high", "n")},
            }
        difference = snapshot.get("difference")
        if difference:
            yield {
                **common,
                "system": " - ".join(difference["systems"]),
                **{k: difference.get(k) for k in ("metric", "value", "se", "low", "high", "n")},
            }


def estimates_history_csv(campaign: Campaign) -> Iterator[str]:
    """One row per snapshot, system and metric (and the difference, named 'a - b')."""
    return _csv_text(HISTORY_FIELDS, _history_rows(campaign))


def sampling_csv(campaign: Campaign) -> str:
    """The current sampling distribution: per topic (query level) or per pair (item level)."""
    from labeling.services.pool_arrays import pool_arrays_for
    from labeling.services.sampling_state import state_load
    from labeling.services.strategies import level_named

    record = SamplingState.objects.filter(campaign=campaign).first()
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if record is None:
        writer.writerow(["topic", "q", "cost", "expected"])
        return buffer.getvalue()
    state = state_load(record)
    arrays = pool_arrays_for(campaign)
    writer.writerows(level_named(state.level).sampling_rows(state, arrays))
    return buffer.getvalue()


def run_trec(system: System, depth: int | None = None) -> Iterator[str]:
    """A system's ranking as a TREC run file (trec_eval order), optionally cut at `depth`."""
    rows = (
        RankingEntry.objects.filter(system=system)
        .order_by("topic__qid", "-score", "-document__docno")
        .values_list("topic__qid", "document__docno", "score")
        .iterator(chunk_size=CHUNK_ROWS)
    )
    lines: list[str] = []
    for qid, group in groupby(rows, key=lambda row: row[0]):
        for rank, (_, docno, score) in enumerate(group, start=1):
            if depth is not None and rank > depth:
                break
            lines.append(f"{qid} Q0 {docno} {rank} {score!r} {system.name}\n")
        if len(lines) >= CHUNK_ROWS:
            yield "".join(lines)
            lines.clear()
    yield "".join(lines)


OFFLINE_README = """Everything the dashboard shows, recomputable with the `estimation` package:

config.json          campaign settings (metric, grades, strategy, goal, focus systems, mix, seed)
draws.csv            every draw: kind (query/item), topic, docno, propensity in force, cost
judgments.csv        every judgment (assessor and imported qrels) with seconds and draw order
qrels.txt            one grade per judged (topic, document): the lower median of its judgments
runs/<system>.run    each pooled system's ranking (pool depth, trec_eval order);
                     runs/eval-only/ holds runs uploaded for evaluation only
documents.tsv        docno and length (the cost model's input)
sampling.csv         the current sampling distribution (q per topic, or per topic and document)
label_model.json     label model (features, weights, thresholds, prior weight), cost model,
                     item-level weight bounds, sampling state version
estimates.json/.csv  every stored estimate snapshot
"""


def offline_bundle(campaign: Campaign) -> bytes:
    """A zip of everything needed to recompute every number of the dashboard offline."""
    from labeling.services.pool_arrays import pool_depth_of

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
    return buffer.getvalue()
