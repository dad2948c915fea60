"""``python -m estimation select-training``: output, scores without a model, bad input."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from estimation.__main__ import main

N_QUERIES, N_DOCS = 12, 10


def write_pool(tmp_path: Path, seed: int = 0) -> Path:
    """A tiny pool: 3 features, grades 0-2 driven by feature 1; every other query unlabeled."""
    rng = np.random.default_rng(seed)
    lines = ["# generated pool"]
    for q in range(N_QUERIES):
        for d in range(N_DOCS):
            x = rng.normal(size=3)
            grade = int(np.clip(np.round(x[0] + 1), 0, 2)) if q % 2 == 0 else -1
            features = " ".join(f"{i + 1}:{value:.4f}" for i, value in enumerate(x))
            lines.append(f"{grade} qid:{100 + q} {features} # docid = D{q}-{d}")
    path = tmp_path / "pool.svmlight"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_scores(tmp_path: Path, members: int = 3) -> Path:
    rng = np.random.default_rng(1)
    lines = [
        f"{100 + q} D{q}-{d} " + " ".join(f"{v:.3f}" for v in rng.uniform(0, 2, members))
        for q in range(N_QUERIES)
        for d in range(N_DOCS)
    ]
    path = tmp_path / "scores.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def items(output: str) -> list[list[str]]:
    return [line.split("\t") for line in output.splitlines() if line and not line.startswith("#")]


def test_it_prints_one_line_per_item_with_uploaded_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool, scores = write_pool(tmp_path), write_scores(tmp_path)
    argv = [
        "select-training",
        str(pool),
        "--scores",
        str(scores),
        "--strategy",
        "elo_qd",
        "--budget",
        "13",
        "--docs-per-query",
        "4",
        "--max-grade",
        "2",
    ]
    assert main(argv) == 0
    output = capsys.readouterr().out
    rows = items(output)
    assert len(rows) == 13
    assert "no model trained" in output and "# qid\tdocid\tel_query\tel_doc" in output
    queries = [row[0] for row in rows]
    assert max(queries.count(q) for q in set(queries)) <= 4
    assert all(int(q) % 2 == 1 for q in queries)  # only the unlabeled queries (odd ones)
    el_query = [float(row[2]) for row in rows]
    assert el_query == sorted(el_query, reverse=True) and all(v >= 0 for v in el_query)
    assert main(argv) == 0 and items(capsys.readouterr().out) == rows  # same seed, same selection


def test_it_trains_the_ensemble_and_draws_with_propensities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = write_pool(tmp_path)
    argv = ["select-training", str(pool), "--strategy", "elo_d", "--budget", "7", "--ensemble", "2", "--draw"]
    assert main(argv) == 0
    output = capsys.readouterr().out
    rows = items(output)
    assert len(rows) == 7 and all(len(row) == 5 for row in rows)
    assert all(0 < float(row[4]) <= 1 for row in rows)
    assert "bootstrap LightGBM ensemble, 2 members" in output


def test_it_takes_labels_from_a_qrels_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = write_pool(tmp_path)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"101 0 D1-{d} 1\n" for d in range(N_DOCS)) + "999 0 X 1\n", encoding="utf-8")
    argv = ["select-training", str(pool), "--labels", str(qrels), "--strategy", "random_q", "--budget", "100"]
    assert main(argv) == 0
    output = capsys.readouterr().out
    assert "labels: 10 applied, 1 for pairs not in the pool" in output
    rows = items(output)
    assert len(rows) == 50 and "101" not in {row[0] for row in rows}
    assert all(math.isnan(float(row[3])) for row in rows)  # no model for a random strategy


@pytest.mark.parametrize(
    ("extra", "pool_text", "message"),
    [
        ([], "1 qid:1 1:0.5 # docid = a\nx qid:1 1:1 # docid = b\n", "pool.svmlight:2: grade 'x'"),
        (["--budget", "-1"], None, "--budget must be >= 0"),
        (["--scores", "SCORES"], None, "scores.tsv:1: query 9 document nope is not in the pool"),
        (["--strategy", "random_d", "--draw"], None, "draw applies"),
        (["--strategy", "random_d"], "-1 qid:1 1:0.5 # docid = a\n", "give --max-grade"),
    ],
)
def test_it_exits_2_on_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], pool_text: str | None, message: str
) -> None:
    pool = write_pool(tmp_path)
    if pool_text is not None:
        pool.write_text(pool_text, encoding="utf-8")
    (tmp_path / "scores.tsv").write_text("9 nope 1 2\n", encoding="utf-8")
    extra = [str(tmp_path / "scores.tsv") if value == "SCORES" else value for value in extra]
    argv = ["select-training", str(pool), "--budget", "3", *extra]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error


def test_it_runs_as_a_module(tmp_path: Path) -> None:
    pool, scores = write_pool(tmp_path), write_scores(tmp_path, members=2)
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "estimation",
            "select-training",
            str(pool),
            "--scores",
            str(scores),
            "--budget",
            "2",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert len(items(completed.stdout)) == 2
    missing = subprocess.run(
        [sys.executable, "-m", "estimation", "select-training", str(tmp_path / "none.txt"), "--budget", "2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2 and "none.txt: cannot read" in missing.stderr


def test_it_exits_quietly_when_its_reader_stops_early(tmp_path: Path) -> None:
    # Far more output than a pipe buffers (64 KiB), so the writer meets the closed pipe.
    pool = tmp_path / "big.svmlight"
    pool.write_text(
        "".join(f"-1 qid:{q} 1:0.5 # docid = document-{q}-{d}\n" for q in range(4000) for d in range(10))
    )
    command = [sys.executable, "-m", "estimation", "select-training", str(pool), "--strategy", "random_d"]
    piped = subprocess.run(
        ["/bin/sh", "-c", " ".join(command) + " --budget 40000 --max-grade 2 | head -n 1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert piped.stdout.startswith("# select-training") and piped.stdout.count("\n") == 1
    assert "Traceback" not in piped.stderr and "BrokenPipeError" not in piped.stderr, piped.stderr
