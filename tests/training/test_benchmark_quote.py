"""The dashboard quotes the ELO-DCG benchmark whole: every budget, the numbers of its results file."""

from __future__ import annotations

import json

from training.benchmark import NOTES, RESULTS, benchmark_quote


def test_it_quotes_every_budget_of_the_benchmark_with_its_numbers() -> None:
    report = json.loads(RESULTS.read_text(encoding="utf-8"))
    quote = {table["dataset"]: table for table in benchmark_quote()}
    assert list(quote) == [data["dataset"] for data in report["datasets"]]
    for data in report["datasets"]:
        quoted = quote[data["dataset"]]
        assert quoted["note"] == NOTES[data["dataset"]], "every dataset has its words"
        assert [row["budget"] for row in quoted["rows"]] == data["budgets"], "no budget left out"
        elo_qd, drawn = data["strategies"]["elo_qd"], data["strategies"]["elo_qd+draw"]
        measured = zip(
            zip(elo_qd["diff_random_q"], elo_qd["diff_random_q_se"], strict=True),
            zip(elo_qd["diff_top_k"], elo_qd["diff_top_k_se"], strict=True),
            zip(drawn["diff_deterministic"], drawn["diff_deterministic_se"], strict=True),
            strict=True,
        )
        for row, cells in zip(quoted["rows"], measured, strict=True):
            assert [(cell["mean"], cell["se"]) for cell in row["cells"]] == list(cells)


# Every cell at least two standard errors from zero, worked by hand from the quoted (mean, se);
# each cell not listed is within two. The closest calls: MQ2008 at 3,200 against random_q is
# 0.0195 / 0.0092 = 2.12 SE (measured), the drawn one at 200 is -0.0265 / 0.0134 = 1.98 SE (not).
MEASURED = {
    ("MSLR sample", 120, "random_q"): "better",  # 0.3899 / 0.1760 = 2.22 SE
    ("MSLR sample", 240, "random_q"): "better",  # 0.5445 / 0.2154 = 2.53 SE
    ("MSLR sample", 480, "random_q"): "better",  # 0.7133 / 0.1794 = 3.98 SE
    ("MSLR sample", 960, "random_q"): "better",  # 0.3187 / 0.1300 = 2.45 SE
    ("MQ2008", 100, "random_q"): "better",  # 0.0279 / 0.0119 = 2.34 SE
    ("MQ2008", 200, "random_q"): "better",  # 0.0323 / 0.0139 = 2.32 SE
    ("MQ2008", 3200, "random_q"): "better",  # 0.0195 / 0.0092 = 2.12 SE
    ("MQ2008", 100, "top_k"): "better",  # 0.0247 / 0.0103 = 2.40 SE
    ("MQ2008", 200, "top_k"): "better",  # 0.0281 / 0.0100 = 2.81 SE
    ("MQ2008", 100, "drawn"): "worse",  # -0.0242 / 0.0118 = -2.05 SE
}


def test_a_difference_within_two_standard_errors_is_called_unmeasurable() -> None:
    verdicts = {
        (table["dataset"], row["budget"], name): cell["verdict"]
        for table in benchmark_quote()
        for row in table["rows"]
        for name, cell in zip(("random_q", "top_k", "drawn"), row["cells"], strict=True)
    }
    assert len(verdicts) == 42, "2 datasets x 7 budgets x 3 differences"
    unmeasured = {key: "no measurable difference" for key in verdicts if key not in MEASURED}
    assert verdicts == MEASURED | unmeasured
