"""The core's exports, offered whatever the mode: the campaign's configuration as JSON, the
skips, a system's run as a TREC file, and the CSV writer the modes' exports share (the graded
mode's are in `graded.exports`, the sampling engine's in `sampling.exports`).

Each function yields text chunks from a server-side iterator over the database, so a
campaign with a million judgments exports in bounded memory (wrap in StreamingHttpResponse).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import groupby
from typing import Any

from labeling.agreement import campaign_agreement
from labeling.csv_cells import csv_dict_stream
from labeling.models import (
    Campaign,
    RankingEntry,
    Skip,
    System,
)
from labeling.modes import mode_of
from labeling.selectors import campaign_assessors, campaign_counts
from labeling.serializers import AgreementSerializer

CHUNK_ROWS = 2000


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
    return csv_text(
        SKIP_FIELDS,
        (
            dict(zip(SKIP_FIELDS, (created.isoformat(), assessor or "", *rest), strict=True))
            for created, assessor, *rest in rows.iterator(chunk_size=CHUNK_ROWS)
        ),
    )


def campaign_config(campaign: Campaign) -> dict[str, Any]:
    """The campaign's configuration, systems, assessors and counts, as a JSON-ready dict."""
    settings = {name: getattr(campaign, name) for name in Campaign.SETTINGS}
    settings["pool_depth"] = campaign.effective_pool_depth
    return {
        "id": campaign.pk,
        "name": campaign.name,
        **settings,
        "mode_settings": mode_of(campaign).settings_of(campaign),
        "status": campaign.status,
        "seed": campaign.seed,
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


def csv_text(fields: tuple[str, ...], rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    """CSV text of `rows` (dicts) with a header of `fields`, streamed (`csv_dict_stream`)."""
    cells = ({key: "" if row.get(key) is None else row.get(key) for key in fields} for row in rows)
    return csv_dict_stream(fields, cells, lineterminator="\n", extrasaction="ignore")


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


def campaign_agreement_json(campaign: Campaign) -> bytes:
    """`labeling.agreement.campaign_agreement` as JSON, in the API's shape."""
    return json.dumps(AgreementSerializer(campaign_agreement(campaign)).data).encode()
