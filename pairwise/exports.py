"""Exports: preferences (CSV, JSONL), top-k orders (JSONL) and position-aware labels (TREC qrels).

Generators of text chunks, so the API can stream them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from labeling.csv_cells import csv_dict_stream
from labeling.models import Campaign
from pairwise.selectors import comparisons_of, position_label_rows, topk_results

PREFERENCE_COLUMNS = [
    "topic",
    "document_a",
    "document_b",
    "outcome",
    "assessor",
    "seconds",
    "side",
    "created_at",
]


def _preference_records(campaign: Campaign) -> Iterator[dict[str, object]]:
    # Document A is the one shown on the left, B on the right, and the outcome is relative to
    # them; `side` is where the procedure's first document of the pair was shown, so position
    # bias can be measured.
    for qid, left, right, outcome, assessor, seconds, swapped, created in comparisons_of(campaign):
        yield {
            "topic": qid,
            "document_a": left,
            "document_b": right,
            "outcome": outcome,
            "assessor": assessor,
            "seconds": seconds,
            "side": "right" if swapped else "left",
            "created_at": created,
        }


def preferences_csv(campaign: Campaign) -> Iterator[str]:
    """One row per answer, with a header."""
    rows = (
        {**record, "seconds": "" if record["seconds"] is None else record["seconds"]}
        for record in _preference_records(campaign)
    )
    return csv_dict_stream(PREFERENCE_COLUMNS, rows, lineterminator="\n")


def preferences_jsonl(campaign: Campaign) -> Iterator[str]:
    """One JSON object per answer."""
    for record in _preference_records(campaign):
        yield json.dumps(record) + "\n"


def topk_jsonl(campaign: Campaign) -> Iterator[str]:
    """One JSON object per (topic, assessor) heap: order, judgments, done."""
    for heap in topk_results(campaign):
        if heap.assessor is None:
            continue
        record = {
            "topic": heap.topic,
            "assessor": heap.assessor,
            "slot": heap.slot,
            "order": heap.order,
            "judgments": heap.judgments,
            "done": heap.done,
        }
        yield json.dumps(record) + "\n"


def topk_qrels(campaign: Campaign, k: int) -> Iterator[str]:
    """TREC qrels of position-aware labels: ``qid 0 docno label`` (k .. 1, 0 for the rest)."""
    for qid, docno, label in position_label_rows(campaign, k):
        yield f"{qid} 0 {docno} {label}\n"
