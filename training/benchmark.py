"""What `bench/bench_elo_dcg.py` measured, as the dashboard quotes it: every budget of the
default strategy's paired differences, the ones where it stops helping included (a test keeps
these numbers equal to `bench/results/elo_dcg.json`)."""

from __future__ import annotations

from typing import Any

# Differences of test DCG@10 (mean, standard error over 20 repetitions), per budget in labels:
# elo_qd minus random_q, elo_qd minus top_k, and the drawn elo_qd minus the deterministic one.
BENCHMARK_COMMAND = "python bench/bench_elo_dcg.py --repetitions 20"
ELO_QD_DIFFERENCES: dict[str, dict[str, Any]] = {
    "MSLR sample": {
        "note": "document level and two-stage; elo_qd and top_k spend at most 705 labels (47 pool "
        "queries x 15), so from 960 on they compare 705 labels with random_q's whole budget",
        "budgets": [60, 120, 240, 480, 960, 1920, 3840],
        "random_q": [
            (0.1602, 0.1680),
            (0.3899, 0.1760),
            (0.5445, 0.2154),
            (0.7133, 0.1794),
            (0.3187, 0.1300),
            (0.1276, 0.2105),
            (-0.2342, 0.1924),
        ],
        "top_k": [
            (-0.0191, 0.2125),
            (0.0347, 0.1425),
            (0.1828, 0.1649),
            (0.1050, 0.1823),
            (-0.0425, 0.1559),
            (-0.0425, 0.1559),
            (-0.0425, 0.1559),
        ],
        "drawn": [
            (-0.0879, 0.2116),
            (0.0188, 0.1792),
            (0.2379, 0.1392),
            (-0.1869, 0.1225),
            (-0.0763, 0.1617),
            (-0.0763, 0.1617),
            (-0.0763, 0.1617),
        ],
    },
    "MQ2008": {
        "note": "query level, grades 0-2, little room between the base and the whole-pool model; "
        "the drawn elo_qd spends 77-87 % of the budget below 3,200 (its queries must fit it)",
        "budgets": [50, 100, 200, 400, 800, 1600, 3200],
        "random_q": [
            (0.0156, 0.0100),
            (0.0279, 0.0119),
            (0.0323, 0.0139),
            (0.0241, 0.0134),
            (0.0052, 0.0116),
            (0.0064, 0.0137),
            (0.0195, 0.0092),
        ],
        "top_k": [
            (0.0177, 0.0151),
            (0.0247, 0.0103),
            (0.0281, 0.0100),
            (0.0055, 0.0137),
            (0.0087, 0.0095),
            (0.0175, 0.0109),
            (0.0053, 0.0096),
        ],
        "drawn": [
            (-0.0008, 0.0128),
            (-0.0242, 0.0118),
            (-0.0265, 0.0134),
            (-0.0164, 0.0119),
            (-0.0239, 0.0126),
            (-0.0017, 0.0107),
            (-0.0083, 0.0089),
        ],
    },
}

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
    for dataset, table in ELO_QD_DIFFERENCES.items():
        rows = []
        for index, budget in enumerate(table["budgets"]):
            cells = {}
            for name in ("random_q", "top_k", "drawn"):
                mean, standard_error = table[name][index]
                cells[name] = {"mean": mean, "se": standard_error, "verdict": _verdict(mean, standard_error)}
            rows.append({"budget": budget, "cells": [cells["random_q"], cells["top_k"], cells["drawn"]]})
        quote.append({"dataset": dataset, "note": table["note"], "rows": rows})
    return quote
