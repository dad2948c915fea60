"""The TREC, labels and costs readers: formats, trec_eval's ordering, and every error."""

from __future__ import annotations

import gzip
import io
import itertools
import math
import pickle
from pathlib import Path

import pytest

from estimation.formats.trec import (
    InputFileError,
    iter_costs,
    iter_labels,
    iter_qrels,
    iter_run,
    read_costs,
    read_labels,
    read_qrels,
    read_run,
    text_lines,
)


def write(path: Path, text: str, *, compress: bool = False) -> Path:
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


# --------------------------------------------------------------------------------------------
# InputFileError


def test_it_formats_file_line_and_reason() -> None:
    error = InputFileError("runs/a.txt", 12, "expected 6 fields")
    assert isinstance(error, ValueError)
    assert str(error) == "runs/a.txt:12: expected 6 fields"
    assert (error.file, error.line, error.reason) == ("runs/a.txt", 12, "expected 6 fields")
    assert str(InputFileError("a.txt", None, "cannot read")) == "a.txt: cannot read"


def test_it_keeps_the_attributes_through_pickle() -> None:
    error = pickle.loads(pickle.dumps(InputFileError("f", 3, "bad")))
    assert (error.file, error.line, error.reason, str(error)) == ("f", 3, "bad", "f:3: bad")


# --------------------------------------------------------------------------------------------
# Runs


def test_it_orders_a_run_by_score_then_docno_descending_ignoring_the_rank_column(tmp_path: Path) -> None:
    # Ranks start at 0 and contradict the scores; d1/d3 and d2/d4 tie; tabs and spaces mixed.
    path = write(
        tmp_path / "run.txt",
        "q1\tQ0\td1\t0\t2.5\tmyrun\n"
        "q1 Q0 d2 1 1.0 myrun\n"
        "q1   Q0\td3  2   2.5 myrun\n"
        "q1 Q0 d4 3 1.0 myrun\n"
        "q1 Q0 d5 4 3.0 myrun\n"
        "q2 0 x 7 -1e-3 myrun\n",
    )
    run = read_run(path)
    assert run.tag == "myrun"
    assert run.tags == ("myrun",)
    assert run.rankings["q1"] == ("d5", "d3", "d1", "d4", "d2")
    assert run.scores["q1"] == (3.0, 2.5, 2.5, 1.0, 1.0)
    assert run.rankings["q2"] == ("x",)
    assert run.n_queries == 2


def test_it_names_a_multi_tag_run_after_its_first_tag(tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt", "1 Q0 a 1 2 first\n1 Q0 b 2 1 second\n2 Q0 a 1 1 first\n")
    run = read_run(path)
    assert run.tag == "first"
    assert run.tags == ("first", "second")


def test_it_skips_blank_and_comment_lines_but_keeps_hash_inside_docnos(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.txt",
        "# produced by a ranker\n\n   \n  # indented comment\n1 Q0 doc#4_17 1 0.5 r\n1 Q0 doc#2 2 0.4 r\n",
    )
    run = read_run(path)
    assert run.rankings == {"1": ("doc#4_17", "doc#2")}


def test_it_reads_gzip_whatever_the_file_name(tmp_path: Path) -> None:
    text = "1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0 r\n"
    plain = read_run(write(tmp_path / "run.txt", text))
    for name in ("run.gz", "run.txt"):
        folder = tmp_path / name.replace(".", "_")
        folder.mkdir()
        assert read_run(write(folder / name, text, compress=True)) == plain


def test_it_streams_lines_with_their_numbers() -> None:
    lines = iter(["# header\n", "1 Q0 a 1 2.0 r\n", b"1 Q0 b 2 1.0 r\n"])
    records = list(iter_run(lines, "stream"))
    assert [(r.qid, r.docno, r.rank, r.score, r.tag, r.line) for r in records] == [
        ("1", "a", 1, 2.0, "r", 2),
        ("1", "b", 2, 1.0, "r", 3),
    ]


RUN_ERRORS = [
    ("1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0\n", 2, "expected 6 fields (qid Q0 docno rank score tag), found 5"),
    ("1 Q0 a 1 2.0 r extra\n", 1, "expected 6 fields (qid Q0 docno rank score tag), found 7"),
    ("1 Q0 a first 2.0 r\n", 1, "rank 'first' is not an integer"),
    ("1 Q0 a 1 high r\n", 1, "score 'high' is not a number"),
    ("1 Q0 a 1 nan r\n", 1, "score 'nan' is not finite"),
    (
        "1 Q0 a 1 2 r\n2 Q0 a 1 2 r\n\n1 Q0 a 3 1 r\n",
        4,
        "document 'a' listed twice for query '1' (lines 1 and 4)",
    ),
]


@pytest.mark.parametrize(("text", "line", "reason"), RUN_ERRORS)
def test_it_rejects_a_malformed_run_naming_file_line_and_reason(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    path = write(tmp_path / "bad.run", text)
    with pytest.raises(InputFileError) as caught:
        read_run(path)
    assert (caught.value.file, caught.value.line, caught.value.reason) == (str(path), line, reason)
    assert str(caught.value) == f"{path}:{line}: {reason}"


def test_it_rejects_an_empty_run(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.run", "# nothing\n\n")
    with pytest.raises(InputFileError, match="holds no lines") as caught:
        read_run(path)
    assert caught.value.line is None


def test_it_reports_a_missing_file_without_a_line(tmp_path: Path) -> None:
    path = tmp_path / "absent.run"
    with pytest.raises(InputFileError) as caught:
        read_run(path)
    assert caught.value.file == str(path)
    assert caught.value.line is None
    assert "No such file" in caught.value.reason


def test_it_reports_invalid_utf8_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.run"
    path.write_bytes("1 Q0 a 1 2 r\n1 Q0 caf\u00e9 2 1 r\n".encode("latin-1"))
    with pytest.raises(InputFileError) as caught:
        read_run(path)
    assert (caught.value.line, caught.value.reason) == (2, "not valid UTF-8 text")


def test_it_reports_a_corrupt_gzip_stream(tmp_path: Path) -> None:
    path = tmp_path / "broken.gz"
    text = "".join(f"1 Q0 d{rank} {rank} {1 / rank} r\n" for rank in range(1, 2000))
    path.write_bytes(gzip.compress(text.encode())[:200])
    with pytest.raises(InputFileError, match="cannot read") as caught:
        read_run(path)
    assert caught.value.file == str(path)


# --------------------------------------------------------------------------------------------
# Qrels


def test_it_reads_qrels_and_counts_negative_grades_as_zero(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels", "# topic docs\n1 0 a 2\n1 0 b -1\n2\t0\tc\t0\n")
    assert read_qrels(path) == {"1": {"a": 2, "b": 0}, "2": {"c": 0}}
    # The streaming layer keeps the grade as written.
    assert [(q.qid, q.docno, q.grade, q.line) for q in iter_qrels(path.read_text().splitlines())] == [
        ("1", "a", 2, 2),
        ("1", "b", -1, 3),
        ("2", "c", 0, 4),
    ]


QRELS_ERRORS = [
    ("1 0 a\n", 1, "expected 4 fields (qid iter docno grade), found 3"),
    ("1 0 a 1 extra\n", 1, "expected 4 fields (qid iter docno grade), found 5"),
    ("1 0 a 1\n1 0 b 1.5\n", 2, "grade '1.5' is not an integer"),
    ("1 0 a 1\n1 0 a 0\n", 2, "document 'a' judged twice for query '1' (lines 1 and 2)"),
]


@pytest.mark.parametrize(("text", "line", "reason"), QRELS_ERRORS)
def test_it_rejects_malformed_qrels_naming_file_line_and_reason(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    path = write(tmp_path / "bad.qrels", text)
    with pytest.raises(InputFileError) as caught:
        read_qrels(path)
    assert (caught.value.file, caught.value.line, caught.value.reason) == (str(path), line, reason)


# --------------------------------------------------------------------------------------------
# Labels and costs


def test_it_reads_label_distributions(tmp_path: Path) -> None:
    path = write(tmp_path / "labels.tsv", "# qid docno p0 p1 p2\n\n1\ta\t0.2\t0.3\t0.5\n1 b 1 0 0\n")
    assert read_labels(path) == {("1", "a"): (0.2, 0.3, 0.5), ("1", "b"): (1.0, 0.0, 0.0)}


def test_it_accepts_label_rows_summing_to_one_within_tolerance() -> None:
    (row,) = iter_labels(["q d 0.3333333 0.3333333 0.3333334\n"])
    assert row.probabilities == (0.3333333, 0.3333333, 0.3333334)


LABEL_ERRORS = [
    (
        "1 a 0.2 0.3 0.4\n",
        1,
        "probabilities sum to 0.9, not 1 (rows may be off by at most 0.0001, e.g. from rounding "
        "to a few decimals; they are rescaled)",
    ),
    ("1 a 1.2 -0.2\n", 1, "probability -0.2 is negative"),
    ("1 a 0.5 nan\n", 1, "probability 'nan' is not finite"),
    ("1 a 0.5 half\n", 1, "probability 'half' is not a number"),
    ("1 a 1.0\n", 1, "expected qid, docno and at least two probabilities, found 3 fields"),
    ("1 a 0.5 0.5\n1 b 0.2 0.3 0.5\n", 2, "expected 2 probabilities (as on the first row), found 3"),
    ("1 a 0.5 0.5\n1 a 0.5 0.5\n", 2, "document 'a' given twice for query '1' (lines 1 and 2)"),
]


@pytest.mark.parametrize(("text", "line", "reason"), LABEL_ERRORS)
def test_it_rejects_malformed_labels_naming_file_line_and_reason(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    path = write(tmp_path / "labels.tsv", text)
    with pytest.raises(InputFileError) as caught:
        read_labels(path)
    assert (caught.value.file, caught.value.line, caught.value.reason) == (str(path), line, reason)


def test_it_reads_costs(tmp_path: Path) -> None:
    path = write(tmp_path / "costs.tsv", "# docno cost\nd1\t1.5\nd2 0\n")
    assert read_costs(path) == {"d1": 1.5, "d2": 0.0}
    assert [row.line for row in iter_costs(path.read_text().splitlines())] == [2, 3]


COST_ERRORS = [
    ("d1 -0.5\n", 1, "cost '-0.5' is negative"),
    ("d1 inf\n", 1, "cost 'inf' is not finite"),
    ("d1 cheap\n", 1, "cost 'cheap' is not a number"),
    ("d1 1 2\n", 1, "expected 2 fields (docno cost), found 3"),
    ("d1 1\nd1 2\n", 2, "document 'd1' given twice (lines 1 and 2)"),
]


@pytest.mark.parametrize(("text", "line", "reason"), COST_ERRORS)
def test_it_rejects_malformed_costs_naming_file_line_and_reason(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    path = write(tmp_path / "costs.tsv", text)
    with pytest.raises(InputFileError) as caught:
        read_costs(path)
    assert (caught.value.file, caught.value.line, caught.value.reason) == (str(path), line, reason)


@pytest.mark.parametrize("reader", [read_qrels, read_labels, read_costs])
def test_it_rejects_files_without_content(tmp_path: Path, reader) -> None:
    path = write(tmp_path / "empty", "# only a comment\n")
    with pytest.raises(InputFileError, match="hold no|holds no") as caught:
        reader(path)
    assert caught.value.line is None


# --------------------------------------------------------------------------------------------
# Real data quirks


def is_trec_eval_order(run_scores: tuple[float, ...], docnos: tuple[str, ...]) -> bool:
    keys = list(zip(run_scores, docnos, strict=True))
    return all(earlier > later for earlier, later in itertools.pairwise(keys))


def test_it_loads_runs_with_ranks_from_zero_and_ignores_the_rank_column(shared_data: Path) -> None:
    runs = shared_data / "robust03" / "runs"
    # pircRBa1 numbers ranks from 0; MU03rob01 breaks its many ties (in 71 topics' top 10)
    # differently in its rank column; both are tab-separated.
    for name in ("input.pircRBa1.gz", "input.MU03rob01.gz"):
        run = read_run(runs / name)
        assert run.tag == name.removeprefix("input.").removesuffix(".gz")
        assert run.n_queries == 100
        assert all(is_trec_eval_order(run.scores[q], run.rankings[q]) for q in run.rankings)
    mu = read_run(runs / "input.MU03rob01.gz")
    by_rank_column: dict[str, list[tuple[int, str]]] = {}
    with gzip.open(runs / "input.MU03rob01.gz", "rt") as lines:
        for line in lines:
            qid, _, docno, rank, _, _ = line.split()
            by_rank_column.setdefault(qid, []).append((int(rank), docno))
    differing = [
        qid
        for qid, entries in by_rank_column.items()
        if tuple(d for _, d in sorted(entries)) != mu.rankings[qid]
    ]
    assert len(differing) > 50
    assert all(sorted(mu.rankings[qid]) == sorted(d for _, d in by_rank_column[qid]) for qid in differing)


def test_it_loads_trec_eval_fixtures_with_hash_docnos_and_padded_scores(shared_data: Path) -> None:
    fixtures = shared_data / "trec_eval_testdata"
    rag = read_run(fixtures / "results.comment.test")
    assert rag.tag == "comment.test"
    assert sum(len(docnos) for docnos in rag.rankings.values()) == 30100
    assert any("#" in docno for docnos in rag.rankings.values() for docno in docnos)
    standard = read_run(fixtures / "results.test")
    assert standard.tag == "STANDARD"
    assert sorted(standard.rankings) == ["301", "302", "303"]
    graded = read_qrels(fixtures / "qrels.rel_level")
    assert min(grade for grades in graded.values() for grade in grades.values()) == 0


def test_it_rejects_trailing_fields_that_trec_eval_would_ignore(shared_data: Path) -> None:
    path = shared_data / "trec_eval_testdata" / "results.trunc"
    with pytest.raises(InputFileError) as caught:
        read_run(path)
    assert caught.value.line == 1
    assert caught.value.reason == "expected 6 fields (qid Q0 docno rank score tag), found 9"


@pytest.mark.slow
def test_it_loads_every_shared_run_and_qrels(shared_data: Path) -> None:
    run_files = sorted((shared_data / "robust03" / "runs").glob("input.*.gz"))
    run_files += sorted((shared_data / "mq2008").glob("*runs/*.run"))
    assert len(run_files) == 17 + 14
    for path in run_files:
        run = read_run(path)
        assert run.tags == (run.tag,)
        assert run.n_queries in (100, 470) or run.tag in ("NLPR03vb10", "humR03dc", "uic0301")
    for path in [shared_data / "robust03" / "qrels.txt", shared_data / "mq2008" / "qrels.txt"]:
        qrels = read_qrels(path)
        assert {grade for grades in qrels.values() for grade in grades.values()} == {0, 1, 2}
    for path in sorted((shared_data / "core17_18").glob("*.txt")):
        assert len(read_qrels(path)) == 50


def test_it_rescales_label_rows_written_with_six_decimals(tmp_path: Path) -> None:
    # Repro: rows rounded to 6 decimals sum to 0.999999, which a 1e-6 tolerance refused.
    path = write(tmp_path / "labels.tsv", "1 a 0.333333 0.333333 0.333333\n1 b 0.12345 0.5 0.37655\n")
    labels = read_labels(path)
    assert math.fsum(labels[("1", "a")]) == pytest.approx(1.0, abs=1e-15)
    assert labels[("1", "a")] == pytest.approx((1 / 3, 1 / 3, 1 / 3), abs=1e-15)
    assert labels[("1", "b")] == (0.12345, 0.5, 0.37655)  # sums to 1: kept as written


def test_it_refuses_a_label_row_beyond_the_tolerance_naming_file_line_and_reason(tmp_path: Path) -> None:
    path = write(tmp_path / "labels.tsv", "1 a 0.5 0.5 0\n1 b 0.333 0.333 0.333\n")
    with pytest.raises(InputFileError) as raised:
        read_labels(path)
    assert raised.value.line == 2 and str(path) in str(raised.value)
    assert "probabilities sum to 0.999, not 1" in raised.value.reason


# --------------------------------------------------------------------------------------------
# Rules every text file shares (text_lines): BOM, CRLF, NUL, limits, empty files


@pytest.mark.parametrize("compress", [False, True])
def test_it_drops_a_byte_order_mark_and_reads_crlf(tmp_path: Path, compress: bool) -> None:
    run = write(tmp_path / "bom.run", "\ufeff1 Q0 d1 1 2.0 t\r\n1 Q0 d2 2 1.0 t\r\n", compress=compress)
    assert read_run(run).rankings == {"1": ("d1", "d2")}
    qrels = write(tmp_path / "bom.qrels", "\ufeff1 0 d1 2\r\n", compress=compress)
    assert read_qrels(qrels) == {"1": {"d1": 2}}
    # Lines that do not come through text_lines (a list, an open text file) too.
    assert [line.qid for line in iter_qrels(["\ufeff7 0 d1 1\n"])] == ["7"]


def test_it_refuses_a_nul_character_naming_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "nul.run", "1 Q0 d1 1 2.0 t\n1 Q0 d\x002 2 1.0 t\n")
    with pytest.raises(InputFileError, match="NUL") as caught:
        read_run(path)
    assert caught.value.line == 2


def test_it_refuses_a_line_over_the_limit_reading_only_past_it() -> None:
    stream = io.BytesIO(b"short\n" + b"x" * 10_000 + b"\n")
    lines = text_lines(stream, "f", max_line_bytes=100)
    assert next(lines) == "short\n"
    with pytest.raises(InputFileError, match="longer than 100 bytes") as caught:
        next(lines)
    assert caught.value.line == 2
    assert stream.tell() < 300  # the long line was not read whole


def test_it_refuses_a_file_over_the_size_limit_after_decompression() -> None:
    data = gzip.compress(b"1 0 d1 1\n" * 1000)
    stream = gzip.GzipFile(fileobj=io.BytesIO(data))
    with pytest.raises(InputFileError, match="larger than 5000 bytes"):
        list(text_lines(stream, "q.gz", max_bytes=5000))


@pytest.mark.parametrize(
    ("reader", "message"),
    [(iter_qrels, "hold no judgments"), (iter_labels, "holds no rows"), (iter_costs, "holds no rows")],
)
def test_it_refuses_an_empty_file_in_every_format(reader: object, message: str) -> None:
    with pytest.raises(InputFileError, match=message):
        list(reader(["# a comment\n", "\n"], "f"))  # type: ignore[operator]
