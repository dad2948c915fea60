"""``python -m estimation plan`` on hand-written files and on real MQ2008 runs.

Toy files: two queries, binary grades, DCG@2 with exponential gain (g(1) = 1) and discounts
(1, d2), d2 = 1/log2(3).

    run A   query 1: a, b     query 2: c, d
    run B   query 1: b, e     query 2: c, d
    labels  P(y = 1): a 0.5, b 0.8, c 1, d 0; e is not listed (uniform: 0.5)
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from estimation.__main__ import main
from estimation.formats.trec import read_run
from tests.conftest import REPO_ROOT

D2 = 1.0 / math.log2(3.0)
RUN_A = "1 Q0 a 1 3.0 A\n1 Q0 b 2 2.0 A\n2 Q0 c 1 5.0 A\n2 Q0 d 2 4.0 A\n"
RUN_B = "1 Q0 b 1 3.0 B\n1 Q0 e 2 2.0 B\n2 Q0 c 1 5.0 B\n2 Q0 d 2 4.0 B\n"
LABELS = "1\ta\t0.5\t0.5\n1\tb\t0.2\t0.8\n2\tc\t0.0\t1.0\n2\td\t1.0\t0.0\n"
COSTS = "a 1\nb 2\nc 3\nd 4\ne 5\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    contents = {"a": RUN_A, "b": RUN_B, "labels": LABELS, "costs": COSTS}
    names = {"a": "A.run", "b": "B.run", "labels": "labels.tsv", "costs": "costs.tsv"}
    paths = {}
    for key, text in contents.items():
        path = tmp_path / names[key]
        path.write_text(text)
        paths[key] = str(path)
    return paths


def _plan(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[list[str]], str]:
    status = main(["plan", *argv])
    captured = capsys.readouterr()
    rows = [line.split("\t") for line in captured.out.splitlines()]
    return status, rows, captured.err


def _columns(rows: list[list[str]]) -> dict[str, np.ndarray]:
    header, *body = rows
    assert header == ["qid", "q", "cost", "expected", "second_moment"]
    columns = {"qid": np.array([row[0] for row in body])}
    for index, name in enumerate(header[1:], start=1):
        columns[name] = np.array([float(row[index]) for row in body])
    return columns


def test_it_prints_the_plan_for_one_run(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = [files["a"], "--labels", files["labels"], "--metric", "DCG@2", "--goal", "one"]
    status, rows, err = _plan(argv, capsys)
    assert status == 0
    plan = _columns(rows)
    mean = np.array([0.5 + 0.8 * D2, 1.0])
    variance = np.array([0.25 + 0.16 * D2**2, 0.0])
    second_moment = variance + (mean - mean.mean()) ** 2
    optimal = np.sqrt(second_moment / 2.0)
    assert plan["qid"].tolist() == ["1", "2"]
    assert plan["cost"] == pytest.approx([2.0, 2.0])
    assert plan["expected"] == pytest.approx(mean, rel=1e-7)
    assert plan["second_moment"] == pytest.approx(second_moment, rel=1e-7)
    assert plan["q"] == pytest.approx(0.9 * optimal / optimal.sum() + 0.1 * 0.5, rel=1e-7)
    assert "2 queries" in err and "4 of 4" in err


def test_it_prints_the_plan_for_a_difference_with_costs(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [files["a"], files["b"], "--labels", files["labels"], "--metric", "DCG@2", "--goal", "difference"]
    status, rows, err = _plan([*argv, "--costs", files["costs"], "--mix", "0.25"], capsys)
    assert status == 0
    assert "4 of 5" in err  # e has no label row: uniform
    plan = _columns(rows)
    # Query 1: delta = g(a) + (d2 - 1) g(b) - d2 g(e); query 2 ranks identically: delta = 0.
    mean = np.array([0.5 + (D2 - 1.0) * 0.8 - D2 * 0.5, 0.0])
    variance = np.array([0.25 + (1.0 - D2) ** 2 * 0.16 + D2**2 * 0.25, 0.0])
    second_moment = variance + (mean - mean.mean()) ** 2
    cost = np.array([1.0 + 2.0 + 5.0, 3.0 + 4.0])  # a, b, e and c, d
    optimal = np.sqrt(second_moment / cost)
    assert plan["cost"] == pytest.approx(cost)
    assert plan["expected"] == pytest.approx(mean, rel=1e-7)
    assert plan["second_moment"] == pytest.approx(second_moment, rel=1e-7)
    assert plan["q"] == pytest.approx(0.75 * optimal / optimal.sum() + 0.25 * 0.5, rel=1e-7)


def test_it_sums_second_moments_over_a_leaderboard(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--labels", files["labels"], "--metric", "ERR@2"]
    _, board_rows, _ = _plan([files["a"], files["b"], *common, "--goal", "leaderboard"], capsys)
    _, a_rows, _ = _plan([files["a"], *common, "--goal", "one"], capsys)
    _, b_rows, _ = _plan([files["b"], *common, "--goal", "one"], capsys)
    board, run_a, run_b = _columns(board_rows), _columns(a_rows), _columns(b_rows)
    assert board["second_moment"] == pytest.approx(run_a["second_moment"] + run_b["second_moment"], rel=1e-6)
    assert board["expected"] == pytest.approx((run_a["expected"] + run_b["expected"]) / 2, rel=1e-6)
    assert board["cost"] == pytest.approx([3.0, 2.0])
    assert board["q"].sum() == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    ("runs", "goal", "extra", "message"),
    [
        ("ab", "one", [], "exactly 1 run"),
        ("a", "difference", [], "exactly 2 run"),
        ("aba", "difference", [], "exactly 2 run"),
        ("a", "leaderboard", [], "at least 2 run"),
        ("a", "one", ["--ymax", "3"], "--ymax is 3"),
        ("a", "one", ["--mix", "2"], r"\[0, 1\]"),
        ("a", "one", ["--metric", "nDCG@2"], "nDCG"),
        ("a", "one", ["--metric", "DCG10"], "cannot parse metric"),
    ],
)
def test_it_rejects_impossible_options(
    files: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    runs: str,
    goal: str,
    extra: list[str],
    message: str,
) -> None:
    argv = [files[key] for key in runs] + ["--labels", files["labels"], "--metric", "DCG@2", "--goal", goal]
    status, rows, err = _plan([*argv, *extra], capsys)
    assert status == 2
    assert rows == []
    assert err.count("\n") == 1
    assert re.search(message, err)


@pytest.mark.parametrize(
    ("key", "text", "line", "reason"),
    [
        ("labels", LABELS.replace("0.2\t0.8", "0.2\t0.7"), 2, "sum to"),
        ("costs", COSTS.replace("c 3", "c -3"), 3, "negative"),
        ("a", RUN_A.replace("2 Q0 c 1 5.0 A", "2 Q0 c 1 5.0"), 3, "expected 6 fields"),
    ],
)
def test_it_reports_malformed_files_with_file_and_line(
    files: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    key: str,
    text: str,
    line: int,
    reason: str,
) -> None:
    Path(files[key]).write_text(text)
    argv = [files["a"], files["b"], "--labels", files["labels"], "--metric", "DCG@2", "--goal", "difference"]
    status, rows, err = _plan([*argv, "--costs", files["costs"]], capsys)
    assert status == 2
    assert rows == []
    assert err.startswith(f"{files[key]}:{line}: ")
    assert reason in err


def test_it_reports_documents_missing_from_the_costs(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    Path(files["costs"]).write_text("a 1\nb 2\nc 3\nd 4\n")
    argv = [files["a"], files["b"], "--labels", files["labels"], "--metric", "DCG@2", "--goal", "difference"]
    status, _, err = _plan([*argv, "--costs", files["costs"]], capsys)
    assert status == 2
    assert files["costs"] in err and "'e'" in err


def test_it_runs_as_a_module_without_a_traceback(files: dict[str, str]) -> None:
    argv = [sys.executable, "-m", "estimation", "plan", files["a"], "--labels", files["labels"], "--metric"]
    good = subprocess.run([*argv, "DCG@2", "--goal", "one"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert good.returncode == 0
    assert good.stdout.splitlines()[0] == "qid\tq\tcost\texpected\tsecond_moment"
    Path(files["labels"]).write_text(LABELS + "2\te\t0.5\n")
    bad = subprocess.run([*argv, "DCG@2", "--goal", "one"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"{files['labels']}:5: ")
    assert "Traceback" not in bad.stderr


def _labels_from_qrels(qrels: Path, target: Path) -> None:
    """A soft label model: 0.8 on the judged grade, 0.1 on each other grade of 0..2."""
    rows = []
    for line in qrels.read_text().splitlines():
        qid, _, docno, grade = line.split()
        probabilities = [0.8 if int(grade) == value else 0.1 for value in range(3)]
        rows.append("\t".join([qid, docno, *map(str, probabilities)]))
    target.write_text("\n".join(rows) + "\n")


def test_it_plans_real_runs(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = tmp_path / "labels.tsv"
    _labels_from_qrels(shared_data / "mq2008" / "qrels.txt", labels)
    run_paths = sorted((shared_data / "mq2008" / "runs").glob("*.run"))
    runs = [read_run(path) for path in run_paths]
    for goal, chosen in (("difference", run_paths[:2]), ("leaderboard", run_paths)):
        argv = [*map(str, chosen), "--labels", str(labels), "--metric", "DCG@10", "--goal", goal]
        status, rows, _ = _plan(argv, capsys)
        assert status == 0
        plan = _columns(rows)
        planned = runs[: len(chosen)]
        query_ids = {qid for run in planned for qid in run.rankings}
        assert sorted(plan["qid"].tolist()) == sorted(query_ids)
        union = [len({doc for run in planned for doc in run.rankings.get(q, ())[:10]}) for q in plan["qid"]]
        assert plan["cost"] == pytest.approx(union)
        assert plan["q"].sum() == pytest.approx(1.0, abs=1e-5)
        assert np.all(plan["q"] >= 0.1 / len(query_ids) * (1 - 1e-6))
        assert np.all(plan["second_moment"] >= 0)


def test_it_refuses_a_query_that_costs_nothing(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    Path(files["costs"]).write_text("a 0\nb 0\nc 3\nd 4\ne 0\n")
    argv = [files["a"], files["b"], "--labels", files["labels"], "--metric", "DCG@2", "--goal", "difference"]
    status, rows, err = _plan([*argv, "--costs", files["costs"]], capsys)
    assert status == 2
    assert rows == []
    assert "query '1' costs 0" in err


def test_it_plans_with_label_rows_written_with_six_decimals(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Repro: rows rounded to 6 decimals (three grades of 1/3 sum to 0.999999) were refused.
    labels = tmp_path / "six.tsv"
    labels.write_text("1\ta\t0.333333\t0.333333\t0.333333\n1\tb\t0.2\t0.3\t0.5\n")
    argv = [files["a"], "--labels", str(labels), "--metric", "DCG@2", "--goal", "one"]
    status, rows, _ = _plan(argv, capsys)
    assert status == 0
    assert _columns(rows)["q"].sum() == pytest.approx(1.0)


def test_it_plans_over_the_qrels_topics_and_states_the_estimand(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Repro: the pool silently dropped topics no run ranks, while evaluate averages over all
    # qrels topics (a factor m_qrels / m_pooled between the two targets). With --qrels the
    # pool holds exactly the qrels topics: topic 3, which no run ranks, is known (0) and
    # free, and stderr states the rule and the counts.
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n2 0 c 0\n3 0 z 1\n")
    argv = [
        files["a"],
        "--labels",
        files["labels"],
        "--metric",
        "DCG@2",
        "--goal",
        "one",
        "--qrels",
        str(qrels),
    ]
    status, rows, err = _plan(argv, capsys)
    assert status == 0
    plan = _columns(rows)
    assert plan["qid"].tolist() == ["1", "2", "3"]
    assert plan["cost"].tolist() == [2.0, 2.0, 0.0]
    assert plan["expected"][2] == 0.0 and plan["q"][2] > 0
    assert "estimand over 3 topics (the qrels topics); 1 of them no run ranks" in err
    assert "a topic no run ranks counts 0" in err
    # Without qrels the estimand is over the runs' topics, and says so.
    status, rows, err = _plan(argv[:-2], capsys)
    assert _columns(rows)["qid"].tolist() == ["1", "2"]
    assert "estimand over 2 topics (the runs' topics); 0 of them" in err
