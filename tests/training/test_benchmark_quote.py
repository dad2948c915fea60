"""The dashboard quotes the ELO-DCG benchmark whole: every budget, the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.benchmark import ELO_QD_DIFFERENCES, MEASURED_SE, benchmark_quote

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "elo_dcg.json"


def test_it_quotes_every_budget_of_the_benchmark_with_its_numbers() -> None:
    report = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert [data["dataset"] for data in report["datasets"]] == list(ELO_QD_DIFFERENCES)
    for data in report["datasets"]:
        quoted = ELO_QD_DIFFERENCES[data["dataset"]]
        assert quoted["budgets"] == data["budgets"], "no budget left out"
        measured = {
            "random_q": (data["strategies"]["elo_qd"], "diff_random_q"),
            "top_k": (data["strategies"]["elo_qd"], "diff_top_k"),
            "drawn": (data["strategies"]["elo_qd+draw"], "diff_deterministic"),
        }
        for name, (entry, key) in measured.items():
            pairs = zip(entry[key], entry[f"{key}_se"], strict=True)
            for (mean, se), (quoted_mean, quoted_se) in zip(pairs, quoted[name], strict=True):
                assert quoted_mean == pytest.approx(mean, abs=5e-4)
                assert quoted_se == pytest.approx(se, abs=5e-4)


def test_a_difference_within_two_standard_errors_is_called_unmeasurable() -> None:
    for table in benchmark_quote():
        for row in table["rows"]:
            for cell in row["cells"]:
                if abs(cell["mean"]) < MEASURED_SE * cell["se"]:
                    assert cell["verdict"] == "no measurable difference"
                else:
                    assert cell["verdict"] == ("better" if cell["mean"] > 0 else "worse")
