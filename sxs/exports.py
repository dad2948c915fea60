"""Downloads of an SxS campaign: its answers as TSV and JSON Lines.

The TSV's first four columns are the core's PREFS.tsv (`qid system_a system_b preference`,
negative = system A better), so `grep -v '^#' answers.tsv | cut -f1-4` is a PREFS.tsv for
`python -m estimation learn-dcg`. The line starting with `#` names the columns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from labeling.models import Campaign
from sxs.selectors import answer_rows

TSV_COLUMNS = (
    "topic",
    "system_a",
    "system_b",
    "preference",  # about the systems: -2 A much better .. 2 B much better
    "left_system",  # which system was shown on the left
    "answer",  # as displayed: -2 left much better .. 2 right much better
    "assessor",
    "seconds",
    "comment",
    "selection",  # random or margin
    "propensity",  # random: 1 / open tasks when it was chosen
    "margin",  # margin: |w^T d| under the fit that chose it
    "created_at",
)


def _cell(value: object) -> str:
    if value is None:
        return ""
    # A tab or line break in a comment would split the row.
    return " ".join(str(value).split()) if isinstance(value, str) else str(value)


def answers_tsv(campaign: Campaign) -> Iterator[str]:
    """One line per answer; the first four columns read as PREFS.tsv."""
    yield "# " + "\t".join(TSV_COLUMNS) + "\n"
    for row in answer_rows(campaign):
        yield "\t".join(_cell(row[column]) for column in TSV_COLUMNS) + "\n"


def answers_jsonl(campaign: Campaign) -> Iterator[str]:
    """One JSON object per answer (the TSV's columns plus the answer's label)."""
    for row in answer_rows(campaign):
        yield json.dumps(row, ensure_ascii=False) + "\n"
