"""``evaluate --judge`` and ``simulate --strategy judged``: the printed columns, the agreement
line, and bad combinations of options.

Toy files: qrels of two topics (0-2 scale), two runs; the judge labels every pooled pair one
grade higher than the humans (capped at 2), except (2, d), which it leaves out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from estimation.__main__ import main

QRELS = "1 0 a 2\n1 0 b 0\n2 0 c 1\n2 0 d 0\n"
JUDGE = "1 0 a 2\n1 0 b 1\n2 0 c 2\n"
RUN_A = "1 Q0 a 1 2.0 A\n1 Q0 b 2 1.0 A\n2 Q0 c 1 2.0 A\n2 Q0 d 2 1.0 A\n"
RUN_B = "1 Q0 b 1 2.0 B\n1 Q0 a 2 1.0 B\n2 Q0 d 1 2.0 B\n2 Q0 c 2 1.0 B\n"
CALIBRATION_HUMANS = "9 0 x 0\n9 0 y 1\n9 0 z 2\n"
CALIBRATION_JUDGE = (
    '{"qid": "9", "docid": "x", "grade": 1}\n'
    '{"qid": "9", "docid": "y", "grade": 2}\n'
    '{"qid": "9", "docid": "z", "probs": [0, 0, 1]}\n'
)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    contents = {
        "qrels": QRELS,
        "judge": JUDGE,
        "a": RUN_A,
        "b": RUN_B,
        "humans": CALIBRATION_HUMANS,
        "calibration": CALIBRATION_JUDGE,
    }
    paths = {}
    for name, text in contents.items():
        path = tmp_path / name
        path.write_text(text)
        paths[name] = str(path)
    return paths


def test_it_prints_the_judge_only_value_next_to_each_value(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["evaluate", files["qrels"], files["a"], files["b"], "-m", "DCG@2", "--judge", files["judge"]])
        == 0
    )
    out, err = capsys.readouterr()
    rows = {(row[0], row[2]): row for row in (line.split("\t") for line in out.splitlines())}
    # Run A, topic 1 ranks a (2), b (0): humans 3 + 0; judge 3 + 1/log2(3).
    assert float(rows[("A", "1")][3]) == pytest.approx(3.0)
    assert float(rows[("A", "1")][4]) == pytest.approx(3.0 + 1 / 1.5849625, abs=1e-5)
    # Topic 2: the judge left d out (counts 0), c has judge grade 2.
    assert float(rows[("A", "2")][4]) == pytest.approx(3.0)
    assert all(len(row) == 5 for row in rows.values())
    assert "judge agrees with the qrels on 3 pairs both label" in err
    assert "Kendall's tau" in err


def test_it_replays_the_judged_strategy_next_to_items(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "simulate", files["qrels"], files["a"], files["b"], "-m", "DCG@2", "--goal", "difference",
        "--strategy", "items", "--strategy", "judged", "--budget", "2", "--budget", "3",
        "--judge", files["judge"], "--repetitions", "50",
        "--judge-calibration", files["humans"], files["calibration"],
    ]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    rows = [line.split("\t") for line in out.splitlines()]
    assert [(row[0], row[1]) for row in rows[1:]] == [
        ("items", "2"),
        ("items", "3"),
        ("judged", "2"),
        ("judged", "3"),
    ]
    truth = {row[2] for row in rows[1:]}
    assert len(truth) == 1  # one estimand for every strategy
    assert "calibration external, 3 pairs" in err


def test_it_calibrates_internally_without_a_calibration_set(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", files["qrels"], files["a"], "-m", "DCG@2", "--goal", "one", "--budget", "3",
            "--judge", files["judge"], "--repetitions", "20"]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert any(line.startswith("judged\t3") for line in out.splitlines())  # judged joins the defaults
    assert "calibration internal two-stage" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--strategy", "judged"], "needs a model judge's labels"),
        (["--judge-calibration", "{humans}", "{calibration}"], "--judge-calibration needs --judge"),
        (["--judge", "{judge}", "--strategy", "judged", "-m", "ERR@2"], "linear in the labels"),
    ],
)
def test_it_refuses_a_judged_replay_it_cannot_make(
    files: dict[str, str], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    argv = ["simulate", files["qrels"], files["a"], "-m", "DCG@2", "--goal", "one", "--budget", "3"]
    argv += [part.format(**files) for part in extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_it_names_the_file_and_line_of_a_bad_judge_label(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "1", "docid": "a", "grade": 1}\n{"qid": "1", "docid": "b", "grade": 7}\n')
    assert main(["evaluate", files["qrels"], files["a"], "-m", "DCG@2", "--judge", str(bad)]) == 2
    assert f"{bad}:2:" in capsys.readouterr().err


def test_it_plans_the_judged_design_per_pair(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["plan", files["a"], files["b"], "-m", "DCG@2", "--goal", "difference", "--judge", files["judge"],
            "--judge-calibration", files["humans"], files["calibration"]]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    header, *rows = [line.split("\t") for line in out.splitlines()]
    assert header == ["qid", "docno", "q", "cost", "judge_class", "h", "sigma"]
    assert sorted((row[0], row[1]) for row in rows) == [("1", "a"), ("1", "b"), ("2", "c"), ("2", "d")]
    assert sum(float(row[2]) for row in rows) == pytest.approx(1.0)
    assert all(float(row[2]) > 0 for row in rows)  # both runs rank every pair: w > 0 everywhere
    assert {row[1]: row[4] for row in rows}["d"] == "none"  # the judge left (2, d) out
    assert "calibration external, 3 pairs" in err


def test_plan_without_labels_or_judge_is_refused(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", files["a"], "-m", "DCG@2", "--goal", "one"]) == 2
    assert "--labels" in capsys.readouterr().err
