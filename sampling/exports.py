"""The sampling engine's exports: the draws with their propensities, the estimate history (CSV and
JSON) and the current sampling distribution."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

from labeling.csv_cells import CsvWriter
from labeling.exports import CHUNK_ROWS, csv_text
from labeling.models import Campaign, Draw, PoolItem
from sampling.models import EstimateSnapshot, SamplingState
from sampling.pool_arrays import pool_arrays_for
from sampling.state import state_load
from sampling.strategies import level_named

DRAW_FIELDS = (
    "order",
    "kind",
    "topic",
    "docno",
    "propensity",
    "cost",
    "strategy",
    "sampling_version",
    "drawable_after",
    "created",
)


POOL_FIELDS = ("topic", "docno", "best_rank", "drawable_after")


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
            "pool_item__drawable_after",
            "created_at",
        )
    )
    for order, kind, qid, docno, propensity, cost, strategy, version, boundary, created in rows.iterator(
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
            # The drawn item's stratum: the last draw before it joined the pool (item draws).
            "drawable_after": "" if boundary is None else boundary,
            "created": created.isoformat(),
        }


def draws_csv(campaign: Campaign) -> Iterator[str]:
    """Every draw in order: kind (query or item), topic, document (item draws), the propensity in
    force when it was drawn, its predicted cost, the sampling state version it came from and the
    drawn item's stratum (`drawable_after` of its pool row: 0 for the first pool)."""
    return csv_text(DRAW_FIELDS, _draw_rows(campaign))


def pool_csv(campaign: Campaign) -> Iterator[str]:
    """Every pool item: its topic and document, the best position a pooled run gives it, and the
    order of the last draw made before it joined the pool (0: it was there for the first draw;
    only later draws could pick it, so its share of a metric is estimated from those)."""
    rows = (
        PoolItem.objects.filter(campaign=campaign)
        .order_by("topic__qid", "document__docno")
        .values_list("topic__qid", "document__docno", "best_rank", "drawable_after")
    )
    return csv_text(
        POOL_FIELDS,
        (dict(zip(POOL_FIELDS, row, strict=True)) for row in rows.iterator(chunk_size=CHUNK_ROWS)),
    )


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
    return csv_text(HISTORY_FIELDS, _history_rows(campaign))


def sampling_csv(campaign: Campaign) -> str:
    """The current sampling distribution: per topic (query level) or per pair (item level)."""
    record = SamplingState.objects.filter(campaign=campaign).first()
    buffer = io.StringIO()
    writer = CsvWriter(buffer, lineterminator="\n")
    if record is None:
        writer.writerow(["topic", "q", "cost", "expected"])
        return buffer.getvalue()
    state = state_load(record)
    arrays = pool_arrays_for(campaign)
    writer.writerows(level_named(state.level).sampling_rows(state, arrays))
    return buffer.getvalue()
