"""``python -m estimation learn-dcg`` and ``evaluate --gains/--discounts``: report, lists, bad input."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from estimation.__main__ import main
from estimation.cli.learn_dcg import top_k_grades
from estimation.formats.trec import read_qrels, read_run

N_TOPICS, N_DOCS, K = 30, 8, 5
SYSTEMS = ("alpha", "beta", "gamma", "delta")


def write_fixture(tmp_path: Path, seed: int = 0) -> dict[str, str]:
    """Random grades (0-2, every third document unjudged), four runs, answers by exp-gain DCG@5.

    The answers follow 2^y - 1 gains with 1/log2(i+1) discounts, plus a little noise, so the
    learned gains must put grade 1 well below the middle of grades 0 and 2 (1/3 of the way).
    """
    rng = np.random.default_rng(seed)
    qrels, runs, prefs = [], {s: [] for s in SYSTEMS}, ["# qid system_a system_b preference"]
    discount = 1 / np.log2(np.arange(2, K + 2))
    for topic in range(N_TOPICS):
        grades = rng.choice(3, N_DOCS, p=[0.5, 0.3, 0.2])
        for doc in range(N_DOCS):
            if doc % 3 != 2:
                qrels.append(f"{topic} 0 d{doc} {grades[doc]}")
        judged = np.where(np.arange(N_DOCS) % 3 != 2, grades, 0)  # unjudged counts 0
        utility = {}
        for system in SYSTEMS:
            order = rng.permutation(N_DOCS)[:K]
            runs[system] += [f"{topic} Q0 d{doc} {i + 1} {10 - i} {system}" for i, doc in enumerate(order)]
            utility[system] = float((2.0 ** judged[order] - 1) @ discount)
        for _ in range(12):
            a, b = rng.choice(len(SYSTEMS), 2, replace=False)
            z = utility[SYSTEMS[a]] - utility[SYSTEMS[b]] + rng.normal(0, 0.2)
            preference = -2 if z > 2 else -1 if z > 0.25 else 2 if z < -2 else 1 if z < -0.25 else 0
            prefs.append(f"{topic}\t{SYSTEMS[a]}\t{SYSTEMS[b]}\t{preference}")
    paths = {"qrels": tmp_path / "qrels.txt", "prefs": tmp_path / "prefs.tsv"}
    paths["qrels"].write_text("\n".join(qrels) + "\n")
    paths["prefs"].write_text("\n".join(prefs) + "\n")
    for system in SYSTEMS:
        paths[system] = tmp_path / f"{system}.run"
        paths[system].write_text("\n".join(runs[system]) + "\n")
    return {key: str(path) for key, path in paths.items()}


def learn_args(files: dict[str, str], *extra: str) -> list[str]:
    runs = [files[s] for s in SYSTEMS]
    return [
        "learn-dcg",
        "--prefs",
        files["prefs"],
        "--qrels",
        files["qrels"],
        "--runs",
        *runs,
        "--cutoff",
        "5",
        *extra,
    ]


def value_of(report: str, label: str) -> float:
    match = re.search(rf"^\s*{re.escape(label)}\t([-0-9.]+)", report, flags=re.MULTILINE)
    assert match, f"{label!r} not in report:\n{report}"
    return float(match.group(1))


def test_it_learns_gains_that_follow_the_simulated_assessors(tmp_path: Path, capsys) -> None:
    files = write_fixture(tmp_path)
    assert main(learn_args(files, "--bootstrap", "20")) == 0
    report = capsys.readouterr().out
    topics = re.search(r"360 answers, (\d+) topics with an informative answer", report)
    assert topics and 20 <= int(topics.group(1)) <= N_TOPICS
    assert "unjudged documents count grade 0" in report
    assert value_of(report, "g0") == 0.0 and value_of(report, "g2") == 1.0
    assert value_of(report, "g1") < 0.5  # exp gains: 1/3; linear would be 1/2
    assert value_of(report, "c1") == 1.0
    learned, exp, linear = (value_of(report, name) for name in ("learned", "DCG, gain 2^y-1", "DCG, gain y"))
    assert exp > linear and learned > 0.8
    assert re.search(r"trec_eval: -M 5 -m ndcg\.0=0,1=[0-9.]+,2=1 ", report)
    assert re.search(r"ir_measures: nDCG\(gains=\{0: 0, 1: \d+, 2: 100\}\)@5", report)
    # The same seed gives the same report; the evaluate line it prints runs as printed.
    assert main(learn_args(files, "--bootstrap", "20")) == 0
    assert capsys.readouterr().out == report
    printed = re.search(r"evaluate QRELS RUN (.*)$", report, flags=re.MULTILINE)
    assert printed
    assert main(["evaluate", files["qrels"], files["alpha"], *printed.group(1).split()]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("alpha\tnDCG@5\tall\t")


def test_it_builds_lists_in_trec_eval_order_with_unjudged_as_zero(tmp_path: Path) -> None:
    qrels, run = tmp_path / "q", tmp_path / "r"
    qrels.write_text("1 0 a 2\n1 0 b 1\n1 0 c -1\n")
    # b and z tie on score: trec_eval puts the larger docno (z) first; the rank column is ignored.
    run.write_text("1 Q0 a 3 3.0 R\n1 Q0 b 1 2.0 R\n1 Q0 z 2 2.0 R\n1 Q0 c 4 1.0 R\n")
    lists = top_k_grades([read_run(run)], read_qrels(qrels), 5)
    # a = 2, z unjudged = 0, b = 1, c judged -1 counts 0, then the run ends (-1).
    np.testing.assert_array_equal(lists["R", "1"], [2, 0, 1, 0, -1])


def test_every_fitting_flag_reaches_the_fit(tmp_path: Path, capsys) -> None:
    files = write_fixture(tmp_path)
    flags = ["--method", "qp", "--c-grid", "1,10", "--c-ties", "same", "--folds", "3"]
    flags += ["--monotone-discounts", "--margin", "2", "--no-ties", "--bootstrap", "4"]
    assert main(learn_args(files, *flags)) == 0
    report = capsys.readouterr().out
    assert "fit: the paper's QP (DCGLearn" in report
    choices = re.search(r"^choices\t(.*)$", report, flags=re.MULTILINE)
    assert choices and choices.group(1) == (
        "method qp, 3 folds, 'about the same' answers left out, discounts non-increasing, C_t = C, "
        "'much better' margin 2"
    )
    c_line = re.search(
        r"^C\t(\S+)  \(chosen by cross-validation over topics from ([^)]*)\)", report, flags=re.M
    )
    assert c_line and c_line.group(2).startswith(("1, 10", "0.1, 1, 10")), (
        "the grid given (extended once at most)"
    )
    assert value_of(report, "C_t") == float(c_line.group(1)), "C_t = C"
    discounts = [value_of(report, f"c{k}") for k in range(1, K + 1)]
    assert discounts == sorted(discounts, reverse=True), "non-increasing discounts"
    assert "0 about the same" in report
    assert re.search(r"^DCG form test p-value\t", report, flags=re.MULTILINE)


def test_it_leaves_out_answers_with_unjudged_documents_when_asked(tmp_path: Path, capsys) -> None:
    files = write_fixture(tmp_path)
    # Judge the fixture's unjudged documents (every third) on the first 20 topics only: the
    # answers of the other 10 topics hold an unjudged document almost always.
    judged = "".join(f"{topic} 0 d{doc} 0\n" for topic in range(20) for doc in range(2, N_DOCS, 3))
    Path(files["qrels"]).write_text(Path(files["qrels"]).read_text() + judged)
    assert main(learn_args(files, "--unjudged", "skip", "--bootstrap", "0")) == 0
    report = capsys.readouterr().out
    left_out = re.search(r"(\d+) answers, .*; (\d+) left out \(a list holds an unjudged document\)", report)
    assert (
        left_out
        and 80 <= int(left_out.group(2)) <= 120
        and int(left_out.group(1)) == 360 - int(left_out.group(2))
    )
    assert "answers whose lists hold an unjudged document are left out" in report


def test_it_warns_when_c_sits_at_its_grids_edge(tmp_path: Path, capsys) -> None:
    files = write_fixture(tmp_path)
    # The fixture's answers are nearly noise-free: the QP wants a large C, beyond 0.001 and 0.01.
    assert (
        main(learn_args(files, "--method", "qp", "--c-grid", "0.001", "--c-ties", "same", "--bootstrap", "0"))
        == 0
    )
    report = capsys.readouterr().out
    warning = re.search(r"^warning: (.*)$", report, flags=re.MULTILINE)
    assert warning and "edge" in warning.group(1) and "0.01" in warning.group(1)


def test_it_refuses_bad_flag_values(tmp_path: Path, capsys) -> None:
    files = write_fixture(tmp_path)
    with pytest.raises(SystemExit):
        main(learn_args(files, "--c-grid", "1,ten"))
    assert "expected numbers separated by commas" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(learn_args(files, "--method", "svm"))
    capsys.readouterr()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("0 alpha beta 3", "preference 3 is outside -2..2"),
        ("0 alpha beta x", "preference 'x' is not an integer"),
        ("0 alpha omega 1", "unknown system 'omega'; the runs' tags are alpha, beta, delta, gamma"),
        ("0 alpha alpha 1", "system 'alpha' is compared with itself"),
        ("99 alpha beta 1", "run 'alpha' has no ranking for topic '99'"),
        ("0 alpha beta", "expected 4 fields (qid system_a system_b preference), found 3"),
    ],
)
def test_it_reports_bad_answers_by_file_and_line(tmp_path: Path, capsys, line: str, reason: str) -> None:
    files = write_fixture(tmp_path)
    Path(files["prefs"]).write_text(f"# header\n0 alpha beta -1\n{line}\n")
    assert main(learn_args(files)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"{files['prefs']}:3: {reason}\n"


def test_it_says_how_many_answers_it_needs(tmp_path: Path, capsys) -> None:
    files = write_fixture(tmp_path)
    Path(files["prefs"]).write_text("0 alpha beta -1\n1 alpha beta 1\n")
    assert main(learn_args(files)) == 2
    assert "needs at least 10 informative answers" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# evaluate --gains / --discounts

QRELS = "1 0 a 2\n1 0 b 1\n1 0 c 0\n"
RUN = "1 Q0 b 1 3.0 mine\n1 Q0 a 2 2.0 mine\n1 Q0 z 3 1.0 mine\n"


def test_it_evaluates_with_custom_gains_and_discounts(tmp_path: Path, capsys) -> None:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    args = ["evaluate", str(qrels), str(run), "-m", "DCG@2", "-m", "nDCG@2", "--gains", "0,0.5,1"]
    assert main([*args, "--discounts", "1,0.25"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # Ranking b (1), a (2): DCG@2 = g(1) c1 + g(2) c2 = 0.5 + 0.25; ideal a, b = 1 + 0.5 * 0.25.
    assert lines[0] == "mine\tDCG@2\t1\t0.750000"
    assert lines[2] == f"mine\tnDCG@2\t1\t{0.75 / 1.125:.6f}"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-m", "DCG@2", "--gains", "0,1"], "--gains needs 3 values (grades 0..2), got 2"),
        (["-m", "DCG@3", "--discounts", "1,0.5"], "--discounts needs at least 3 values"),
        (["-m", "ERR@2", "--gains", "0,1,2"], "apply to DCG and nDCG only, not ERR@2"),
        (["-m", "DCG@2", "--gains", "0,a,1"], "expected comma-separated numbers"),
    ],
)
def test_it_rejects_custom_vectors_that_do_not_fit(
    tmp_path: Path, capsys, extra: list[str], message: str
) -> None:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    assert main(["evaluate", str(qrels), str(run), *extra]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""
