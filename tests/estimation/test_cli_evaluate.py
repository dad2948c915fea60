"""``python -m estimation evaluate``: output lines, averaging, exit status and error messages."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval

from estimation import __main__ as cli
from estimation.formats.trec import read_qrels, read_run
from estimation.metrics.spec import Metric
from estimation.metrics.values import summarize_run

REPO_ROOT = Path(__file__).resolve().parents[2]

QRELS = "1 0 a 2\n1 0 b 1\n1 0 c 0\n2 0 d 1\n3 0 e 0\n"
# Topic 1 ranks b (1), a (2) and an unjudged z; topic 2 is missing; topic 3 ranks e (0).
RUN = "1 Q0 b 1 3.0 mine\n1 Q0 a 2 2.0 mine\n1 Q0 z 3 1.0 mine\n3 Q0 e 1 1.0 mine\n"


def python_m_estimation(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "estimation", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
    )


def toy_files(tmp_path: Path) -> tuple[Path, Path]:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "mine.run"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    return qrels, run


def test_it_prints_one_line_per_run_metric_and_topic_then_the_mean(tmp_path: Path) -> None:
    qrels, run = toy_files(tmp_path)
    result = python_m_estimation("evaluate", str(qrels), str(run), "--metric", "nDCG@2", "--metric", "ERR@3")
    assert result.returncode == 0, result.stderr
    # nDCG@2, exp gain: (1 + 3/log2(3)) / (3 + 1/log2(3)); ERR@3 with y_max 2 (the largest
    # grade): l = 1/4, 3/4, 0 -> 1/4 + (1/2)(3/4)(3/4)
    ndcg_1 = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    err_1 = 1 / 4 + 9 / 32
    assert result.stdout.splitlines() == [
        f"mine\tnDCG@2\t1\t{ndcg_1:.6f}",
        "mine\tnDCG@2\t2\t0.000000",
        "mine\tnDCG@2\t3\t0.000000",
        f"mine\tnDCG@2\tall\t{ndcg_1 / 3:.6f}",
        f"mine\tERR@3\t1\t{err_1:.6f}",
        "mine\tERR@3\t2\t0.000000",
        "mine\tERR@3\t3\t0.000000",
        f"mine\tERR@3\tall\t{err_1 / 3:.6f}",
    ]
    assert "1 have no relevant document" in result.stderr
    assert "1 are missing from the run" in result.stderr


def test_it_uses_the_given_gain_and_top_grade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = toy_files(tmp_path)
    assert (
        cli.main(
            [
                "evaluate",
                str(qrels),
                str(run),
                "-m",
                "DCG@2",
                "--gain",
                "linear",
                "-m",
                "ERR@1",
                "--ymax",
                "4",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    # DCG@2 linear: 1 + 2/log2(3); ERR@1 with y_max 4: l(1) = 1/16
    assert lines[0] == f"mine\tDCG@2\t1\t{1 + 2 / math.log2(3):.6f}"
    assert lines[4] == f"mine\tERR@1\t1\t{1 / 16:.6f}"


def test_it_evaluates_several_runs_in_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = toy_files(tmp_path)
    other = tmp_path / "other.run"
    other.write_text("1\tQ0\ta\t0\t5\ttheirs\n2\tQ0\td\t1\t5\ttheirs\n")
    assert cli.main(["evaluate", str(qrels), str(run), str(other), "-m", "nDCG@1"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [(row[0], row[2]) for row in rows] == [
        ("mine", "1"), ("mine", "2"), ("mine", "3"), ("mine", "all"),
        ("theirs", "1"), ("theirs", "2"), ("theirs", "3"), ("theirs", "all"),
    ]  # fmt: skip
    # theirs: topic 1 puts a (2) first -> 1; topic 2 puts d (1) first -> 1; topic 3 -> 0
    assert [float(row[3]) for row in rows[4:]] == pytest.approx([1.0, 1.0, 0.0, 2 / 3], abs=1e-6)


@pytest.mark.parametrize(
    ("run_text", "line", "reason"),
    [
        ("1 Q0 b 1 3.0 mine\n1 Q0 a 2\n", 2, "expected 6 fields (qid Q0 docno rank score tag), found 4"),
        (
            "1 Q0 b 1 3.0 mine\n\n1 Q0 b 2 1.0 mine\n",
            3,
            "document 'b' listed twice for query '1' (lines 1 and 3)",
        ),
        ("1 Q0 b one 3.0 mine\n", 1, "rank 'one' is not an integer"),
    ],
)
def test_it_exits_2_with_file_line_and_reason_on_a_malformed_run(
    tmp_path: Path, run_text: str, line: int, reason: str
) -> None:
    qrels, run = toy_files(tmp_path)
    run.write_text(run_text)
    result = python_m_estimation("evaluate", str(qrels), str(run), "--metric", "nDCG@10")
    assert result.returncode == 2
    assert result.stderr == f"{run}:{line}: {reason}\n"
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_it_exits_2_on_malformed_qrels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = toy_files(tmp_path)
    qrels.write_text("1 0 a 2\n1 0 b high\n")
    assert cli.main(["evaluate", str(qrels), str(run), "-m", "DCG@5"]) == 2
    assert capsys.readouterr().err == f"{qrels}:2: grade 'high' is not an integer\n"


def test_it_exits_2_on_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, _ = toy_files(tmp_path)
    missing = tmp_path / "absent.run"
    assert cli.main(["evaluate", str(qrels), str(missing), "-m", "DCG@5"]) == 2
    assert capsys.readouterr().err.startswith(f"{missing}: cannot read")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-m", "MAP@10"], "cannot parse metric 'MAP@10'"),
        (["-m", "ERR@5", "--ymax", "1"], "the qrels hold grade 2, above --ymax 1"),
    ],
)
def test_it_exits_2_on_impossible_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    qrels, run = toy_files(tmp_path)
    assert cli.main(["evaluate", str(qrels), str(run), *extra]) == 2
    assert message in capsys.readouterr().err


def test_it_exits_2_without_a_metric(tmp_path: Path) -> None:
    qrels, run = toy_files(tmp_path)
    result = python_m_estimation("evaluate", str(qrels), str(run))
    assert result.returncode == 2
    assert "--metric" in result.stderr


def test_it_documents_defaults_in_help() -> None:
    result = python_m_estimation("evaluate", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "the largest grade in the qrels" in text
    assert "score descending, then docno descending" in text
    assert "topics the run misses count 0" in text


def test_it_registers_an_optional_command_module_only_when_it_exists(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli, "_OPTIONAL_COMMAND_MODULES", ("estimation_cli_absent_for_test",))
    assert cli.build_parser().parse_args(["evaluate", "q", "r", "-m", "DCG@1"]).command == "evaluate"

    (tmp_path / "estimation_cli_extra_for_test.py").write_text(
        "def register(subparsers):\n    subparsers.add_parser('extra').set_defaults(handler=lambda args: 0)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "_OPTIONAL_COMMAND_MODULES", ("estimation_cli_extra_for_test",))
    assert cli.main(["extra"]) == 0


def test_it_matches_pytrec_eval_on_mq2008_through_the_command_line(shared_data: Path) -> None:
    qrels_path = shared_data / "mq2008" / "qrels.txt"
    run_path = shared_data / "mq2008" / "runs" / "RankBoost.run"
    result = python_m_estimation(
        "evaluate", str(qrels_path), str(run_path), "-m", "nDCG@10", "--gain", "linear"
    )
    assert result.returncode == 0, result.stderr
    values = {row[2]: float(row[3]) for row in (line.split("\t") for line in result.stdout.splitlines())}
    assert len(values) == 470 + 1
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    scores = {qid: dict(zip(run.rankings[qid], run.scores[qid], strict=True)) for qid in run.rankings}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(scores)
    for qid, measures in reference.items():
        assert values[qid] == pytest.approx(measures["ndcg_cut_10"], abs=5e-7)
    assert values["all"] == pytest.approx(sum(m["ndcg_cut_10"] for m in reference.values()) / 470, abs=5e-7)
    assert "140 have no relevant document" in result.stderr


def test_it_prints_what_the_whole_run_path_gives_on_robust03(
    shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Streaming each run (its first documents only, in blocks) changes no value: the lines are
    those of the line reader's whole runs evaluated against the qrels' dict. rutcor03100 ties
    scores in every topic and contradicts its rank column; pircRBa1 numbers ranks from 0."""
    qrels_path = shared_data / "robust03" / "qrels.txt"
    names = ["input.rutcor03100.gz", "input.pircRBa1.gz", "input.NLPR03vb10.gz", "input.InexpC2.gz"]
    runs = [shared_data / "robust03" / "runs" / name for name in names]
    texts = ["nDCG@10", "ERR@20", "DCG@5"]
    arguments = ["evaluate", str(qrels_path), *map(str, runs), *[f"-m{text}" for text in texts]]
    assert cli.main(arguments) == 0
    qrels = read_qrels(qrels_path)
    expected = []
    for path in runs:
        run = read_run(path)
        for metric in (Metric.parse(text, y_max=2) for text in texts):
            evaluation = summarize_run(qrels, run, metric)
            values = [*evaluation.per_query.items(), ("all", evaluation.mean)]
            expected += [f"{run.tag}\t{metric}\t{qid}\t{value:.6f}" for qid, value in values]
    assert capsys.readouterr().out.splitlines() == expected
