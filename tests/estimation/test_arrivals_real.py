"""A run arriving in a campaign on real data (the shared data's Robust03 runs and the DL19 runs
with an LLM judge calibrated on DL23), through ``python -m estimation simulate --arrival``: the
stored draws alone miss the new documents' part, the top-up is unbiased with intervals that hold,
and it beats a fresh campaign of the same size."""

from __future__ import annotations

from pathlib import Path

import pytest

from estimation.__main__ import main
from tests.estimation.helpers import ARRIVAL_HEADER as COLUMNS


def _rows(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> dict[tuple[str, int, str], dict[str, float]]:
    assert main(["simulate", *argv]) == 0
    header, *body = (line.split("\t") for line in capsys.readouterr().out.splitlines())
    assert header == COLUMNS
    return {
        (row[0], int(row[2]), row[3]): {
            name: float(value) for name, value in zip(COLUMNS[4:], row[4:], strict=True)
        }
        for row in body
    }


def _check(
    rows: dict[tuple[str, int, str], dict[str, float]], strategy: str, topups: tuple[int, ...]
) -> None:
    for topup in topups:
        reuse, fresh, top = (rows[strategy, topup, kind] for kind in ("reuse", "fresh", "topup"))
        assert abs(top["mean"] - top["truth"]) < 4 * top["bias_se"], (topup, top)
        assert 0.91 <= top["coverage"] <= 0.985, (topup, top)
        assert top["rmse"] < fresh["rmse"], (topup, top, fresh)
        assert abs(reuse["mean"] - reuse["truth"]) > 4 * reuse["bias_se"], reuse  # what the top-up fixes


def test_robust03_a_newer_run_arrives_in_a_leaderboard(
    shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = sorted((shared_data / "robust03" / "runs").iterdir())
    pooled, arrival = runs[:4], runs[10]
    rows = _rows(
        [str(shared_data / "robust03" / "qrels.txt"), *map(str, pooled), "--metric", "DCG@10",
         "--goal", "leaderboard", "--strategy", "items", "--budget", "100", "--arrival", str(arrival),
         "--reference", str(pooled[0]), "--topup", "10", "--topup", "25",
         "--repetitions", "300", "--seed", "7"],
        capsys,
    )  # fmt: skip
    _check(rows, "items", (10, 25))


def test_dl19_with_a_calibrated_judge(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dl19, dl23 = shared_data / "llm_judges" / "dl19_mini", shared_data / "llm_judges" / "dl23_llmjudge"
    pooled = [
        dl19 / "runs" / name for name in ("bm25base_ax_p", "bm25base_rm3_p", "bm25tuned_p", "ICT-BERT2")
    ]
    calibration = [str(dl23 / "qrels" / "nist.txt"), str(dl23 / "qrels" / "farzi_zeroshot_bing_DSV3.txt")]
    judge = ["--judge", str(dl19 / "qrels" / "umbrela_bing_DSV3.txt"), "--judge-calibration", *calibration]
    rows = _rows(
        [str(dl19 / "qrels" / "nist.txt"), *map(str, pooled), "--metric", "DCG@10",
         "--goal", "leaderboard", "--strategy", "items", "--strategy", "judged", *judge, "--budget", "100",
         "--arrival", str(dl19 / "runs" / "p_exp_bert"), "--reference", "ICT-BERT2",
         "--topup", "10", "--repetitions", "300", "--seed", "11"],
        capsys,
    )  # fmt: skip
    _check(rows, "items", (10,))
    _check(rows, "judged", (10,))
