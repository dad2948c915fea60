"""``python -m estimation simulate``: the printed table, the truth against ``evaluate`` on real
data, and bad input.

Toy files (binary grades, DCG@2, every document costs 1): see tests/estimation/test_planner.py;
topic 1 costs 2 documents (a, b), topic 2 costs 2 (c, d); topic 3 is in the qrels only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from estimation.__main__ import main
from estimation.simulation.planner import PLANNED
from tests.estimation.helpers import ARRIVAL_HEADER

QRELS = "1 0 a 1\n1 0 b 0\n2 0 c 1\n2 0 d 1\n3 0 e 1\n"
RUN_A = "1 Q0 a 1 2.0 A\n1 Q0 b 2 1.0 A\n2 Q0 c 1 2.0 A\n2 Q0 d 2 1.0 A\n"
RUN_B = "1 Q0 b 1 2.0 B\n1 Q0 a 2 1.0 B\n2 Q0 d 1 2.0 B\n2 Q0 c 2 1.0 B\n"
HEADER = ["strategy", "budget", "truth", "mean", "bias_se", "rmse", "coverage", "mean_width", "topics_judged"]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    contents = {
        "qrels": QRELS,
        "a": RUN_A,
        "b": RUN_B,
        "labels": "1 a 0.5 0.5\n2 c 0.1 0.9\n",
        "labels3": "1 a 0.2 0.3 0.5\n",
        "costs": "a 1\nb 1\nc 1\n",
        "bad_qrels": "1 0 a 1\n1 0 b\n",
    }
    paths = {}
    for key, text in contents.items():
        path = tmp_path / f"{key}.txt"
        path.write_text(text)
        paths[key] = str(path)
    return paths


def _simulate(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[list[str]], str]:
    status = main(["simulate", *argv])
    captured = capsys.readouterr()
    return status, [line.split("\t") for line in captured.out.splitlines()], captured.err


def test_it_prints_a_header_and_a_line_per_strategy_and_budget(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [files["qrels"], files["a"], files["b"], "--metric", "DCG@2", "--goal", "difference"]
    status, rows, err = _simulate([*argv, "--budget", "2", "--budget", "4", "--repetitions", "50"], capsys)
    assert status == 0
    header, *body = rows
    assert header == HEADER
    no_model = [s for s in PLANNED if s != "judged"]  # judged needs --judge
    assert [(row[0], row[1]) for row in body] == [(s, b) for s in no_model for b in ("2", "4")]
    for row in body:
        assert len(row) == len(HEADER)
        float_fields = [float(field) for field in row[1:]]
        assert 0.0 <= float_fields[5] <= 1.0  # coverage
    assert float(body[0][2]) == pytest.approx(0.123023, abs=1e-6)  # (1 - 1/log2(3)) / 3
    assert "2 of 3 qrels topics ranked by some run" in err
    assert "uniform over the grades" in err


def test_it_defaults_to_ten_twenty_and_forty_topics_worth(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [files["qrels"], files["a"], "--metric", "ERR@2", "--goal", "one", "--repetitions", "3"]
    status, rows, _ = _simulate(argv, capsys)
    assert status == 0
    assert [(row[0], row[1]) for row in rows[1:]] == [
        (s, b) for s in ("passive", "active") for b in ("20", "40", "80")
    ]


def test_it_is_reproducible_and_reads_labels_and_costs(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        files["qrels"],
        files["a"],
        "-m",
        "DCG@2",
        "--goal",
        "one",
        "--budget",
        "3",
        "--repetitions",
        "30",
    ]
    extra = ["--labels", files["labels"], "--costs", files["costs"] + "x"]
    status, _, err = _simulate([*argv, *extra], capsys)
    assert status == 2 and "costs.txtx" in err  # missing file
    (Path(files["costs"])).write_text("a 1\nb 1\nc 1\nd 2\n")
    first = _simulate([*argv, "--labels", files["labels"], "--costs", files["costs"], "--seed", "4"], capsys)
    second = _simulate([*argv, "--labels", files["labels"], "--costs", files["costs"], "--seed", "4"], capsys)
    assert first[0] == 0 and first[1] == second[1]
    assert f"from {files['labels']}" in first[2]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--goal", "difference"], "needs at least 2 run(s)"),
        (["--goal", "one", "--strategy", "items", "-m", "ERR@2"], "items cannot estimate ERR@2"),
        (["--goal", "one", "--budget", "-1"], "--budget must be > 0"),
        (["--goal", "one", "--repetitions", "1"], "--repetitions must be >= 2"),
        (["--goal", "one", "--seed", "-3"], "--seed must be >= 0"),
        (["--goal", "one", "--labels", "LABELS3", "--ymax", "1"], "rows hold 3 probabilities"),
        (["--goal", "one", "--costs", "COSTS"], "no cost for document 'd'"),
    ],
)
def test_it_exits_2_with_a_reason_on_bad_input(
    files: dict[str, str], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    extra = [files["labels3"] if e == "LABELS3" else files["costs"] if e == "COSTS" else e for e in extra]
    metric = [] if "-m" in extra else ["-m", "DCG@2"]
    status, rows, err = _simulate([files["qrels"], files["a"], *metric, *extra], capsys)
    assert status == 2 and rows == []
    assert message in err
    assert "Traceback" not in err


def test_it_names_file_and_line_of_a_malformed_qrels(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = _simulate([files["bad_qrels"], files["a"], "-m", "DCG@2", "--goal", "one"], capsys)
    assert status == 2
    assert err.startswith(f"{files['bad_qrels']}:2:")


def test_it_refuses_an_unknown_strategy(files: dict[str, str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", files["qrels"], files["a"], "-m", "DCG@2", "--goal", "one", "--strategy", "greedy"])
    assert exit_info.value.code == 2


def _evaluate_means(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    assert main(["evaluate", *argv]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    return {tag: float(value) for tag, _, qid, value in lines if qid == "all"}


@pytest.mark.parametrize(
    ("qrels", "runs", "metric", "gain"),
    [
        ("robust03/qrels.txt", ["pircRBa1", "NLPR03vb10"], "nDCG@10", "linear"),
        pytest.param(
            "robust03/qrels.txt",
            ["NLPR03vb10", "uwmtCR0", "rutcor03100"],
            "ERR@20",
            "exp",
            marks=pytest.mark.slow,
        ),
        ("trec_eval_testdata/qrels.comment.test", ["results.comment.test"], "DCG@10", "exp"),
    ],
)
def test_it_gives_the_truth_evaluate_gives_for_each_run(
    shared_data: Path,
    capsys: pytest.CaptureFixture[str],
    qrels: str,
    runs: list[str],
    metric: str,
    gain: str,
) -> None:
    folder = shared_data / qrels.split("/")[0]
    paths = [
        str(folder / "runs" / f"input.{name}.gz") if "robust" in qrels else str(folder / name)
        for name in runs
    ]
    options = ["--metric", metric, "--gain", gain]
    expected = _evaluate_means([str(shared_data / qrels), *paths, *options], capsys)
    truths = []
    for index, path in enumerate(paths):
        argv = [str(shared_data / qrels), path, *paths[:index], *paths[index + 1 :], *options]
        status, rows, _ = _simulate(
            [*argv, "--goal", "one", "--strategy", "passive", "--repetitions", "2"], capsys
        )
        assert status == 0
        truths.append(float(rows[1][2]))
    assert truths == pytest.approx(list(expected.values()), rel=1e-7, abs=1e-6)
    if len(paths) >= 2:
        argv = [str(shared_data / qrels), *paths, *options, "--goal", "difference", "--strategy", "passive"]
        status, rows, _ = _simulate([*argv, "--repetitions", "2"], capsys)
        assert float(rows[1][2]) == pytest.approx(truths[0] - truths[1], abs=2e-6)


def test_an_arrival_prints_reuse_fresh_and_topup_per_topup(
    files: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    arrival = tmp_path / "c.txt"
    arrival.write_text("1 Q0 a 1 2.0 C\n1 Q0 e 2 1.0 C\n2 Q0 f 1 2.0 C\n2 Q0 c 2 1.0 C\n")  # e, f are new
    argv = [
        files["qrels"],
        files["a"],
        files["b"],
        "--metric",
        "DCG@2",
        "--goal",
        "leaderboard",
        "--budget",
        "3",
    ]
    status, rows, err = _simulate(
        [
            *argv,
            "--arrival",
            str(arrival),
            "--reference",
            "B",
            "--topup",
            "2",
            "--topup",
            "4",
            "--repetitions",
            "20",
        ],
        capsys,
    )
    assert status == 0
    header, *body = rows
    assert header == ARRIVAL_HEADER
    assert [(row[0], row[2], row[3]) for row in body] == [
        ("items", topup, kind) for topup in ("2", "4") for kind in ("reuse", "fresh", "topup")
    ]
    assert "C arrives with 2 new (topic, document) pairs" in err and "reference B" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--goal", "difference", "--topup", "5"], "give --arrival"),
        (["--goal", "leaderboard"], "only for an arrival"),
        (["--goal", "one", "--arrival", "A_RUN", "--reference", "Z"], "not one of the pooled runs"),
        (["--goal", "one", "--arrival", "A_RUN", "--topup", "1"], "whole numbers >= 2"),
        (
            ["--goal", "one", "--arrival", "A_RUN", "--strategy", "passive"],
            "replays the strategies items, judged",
        ),
    ],
)
def test_arrival_options_are_checked(
    files: dict[str, str], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    argv = [files["qrels"], files["a"], files["b"], "--metric", "DCG@2"]
    status = main(["simulate", *argv, *[files["a"] if part == "A_RUN" else part for part in extra]])
    assert status == 2
    assert message in capsys.readouterr().err
