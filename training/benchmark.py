"""What `bench/bench_elo_dcg.py` measured, as the dashboard quotes it: every budget of the
default strategy's paired differences, the ones where it stops helping included, read from the
benchmark's own results file (`bench/results/elo_dcg.json`), never copied by hand."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings

BENCHMARK_COMMAND = "python bench/bench_elo_dcg.py --repetitions 20"
RESULTS = Path(settings.BASE_DIR) / "bench" / "results" / "elo_dcg.json"
# What the numbers of each dataset mean, in words (the results file holds only numbers).
NOTES = {
    "MSLR sample": "document level and two-stage; elo_qd and top_k spend at most 705 labels (47 pool "
    "queries x 15), so from 960 on they compare 705 labels with random_q's whole budget",
    "MQ2008": "query level, grades 0-2, little room between the base and the whole-pool model; "
    "the drawn elo_qd spends 77-87 % of the budget below 3,200 (its queries must fit it)",
}
# Each quoted difference: (the strategy's entry in the results, the key of its means); the
# standard errors are under the key + "_se". elo_qd minus random_q, elo_qd minus top_k, and the
# drawn elo_qd minus the deterministic one.
DIFFERENCES = {
    "random_q": ("elo_qd", "diff_random_q"),
    "top_k": ("elo_qd", "diff_top_k"),
    "drawn": ("elo_qd+draw", "diff_deterministic"),
}


@cache
def elo_qd_differences() -> dict[str, dict[str, Any]]:
    """Per dataset: its note, the budgets, and per difference a (mean, standard error) per budget."""
    report = json.loads(RESULTS.read_text(encoding="utf-8"))
    tables = {}
    for data in report["datasets"]:
        table: dict[str, Any] = {"note": NOTES.get(data["dataset"], ""), "budgets": data["budgets"]}
        for name, (strategy, key) in DIFFERENCES.items():
            entry = data["strategies"][strategy]
            table[name] = list(zip(entry[key], entry[f"{key}_se"], strict=True))
        tables[data["dataset"]] = table
    return tables


# A difference counts as measured when it is at least this many standard errors from zero.
MEASURED_SE = 2.0


def _verdict(mean: float, standard_error: float) -> str:
    if abs(mean) < MEASURED_SE * standard_error:
        return "no measurable difference"
    return "better" if mean > 0 else "worse"


def benchmark_quote() -> list[dict[str, Any]]:
    """Per dataset, one row per budget: the three differences (against random_q, against top_k,
    drawn minus deterministic), each with its standard error and verdict."""
    quote = []
    for dataset, table in elo_qd_differences().items():
        rows = []
        for index, budget in enumerate(table["budgets"]):
            cells = {}
            for name in ("random_q", "top_k", "drawn"):
                mean, standard_error = table[name][index]
                cells[name] = {"mean": mean, "se": standard_error, "verdict": _verdict(mean, standard_error)}
            rows.append({"budget": budget, "cells": [cells["random_q"], cells["top_k"], cells["drawn"]]})
        quote.append({"dataset": dataset, "note": table["note"], "rows": rows})
    return quote
