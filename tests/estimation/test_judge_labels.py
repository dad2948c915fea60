"""The model judge labels readers: the three formats, their detection, and every error."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from estimation.formats.judge_labels import (
    DOCNO_MAX_CHARS,
    JUDGE_LABEL_FORMATS,
    QID_MAX_CHARS,
    JudgeLabelLine,
    detect_judge_label_format,
    iter_judge_labels,
    read_judge_labels,
)
from estimation.formats.trec import InputFileError

HEADER = "query-id\tcorpus-id\tscore"
EXPECTED_HEADER = "(expected query-id<TAB>corpus-id<TAB>score, in any order)"
ONE_GRADE = 'give exactly one of "grade", "score" and "probs"'
FIRST_JSON = '{"qid": "q1", "docid": "d1", "grade": 1}\n'


def write(path: Path, text: str, *, compress: bool = False) -> Path:
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def as_file(fmt: str, rows: list[tuple[str, str, int]]) -> str:
    """The same (qid, docid, grade) rows written in format `fmt` (beir-tsv adds a header line)."""
    if fmt == "qrels":
        lines = [f"{qid} 0 {docid} {grade}" for qid, docid, grade in rows]
    elif fmt == "jsonl":
        lines = [json.dumps({"qid": qid, "docid": docid, "grade": grade}) for qid, docid, grade in rows]
    else:
        lines = [HEADER] + [f"{qid}\t{docid}\t{grade}" for qid, docid, grade in rows]
    return "\n".join(lines) + "\n"


def error_of(text: str, **options: object) -> InputFileError:
    with pytest.raises(InputFileError) as caught:
        list(iter_judge_labels(text.splitlines(keepends=True), "judge.txt", **options))  # type: ignore[arg-type]
    return caught.value


# The first data row's line number in `as_file`'s output.
FIRST_ROW = {"qrels": 1, "jsonl": 1, "beir-tsv": 2}


# --------------------------------------------------------------------------------------------
# Reading


@pytest.mark.parametrize("fmt", JUDGE_LABEL_FORMATS)
def test_it_reads_grades_in_every_format(fmt: str) -> None:
    text = as_file(fmt, [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d1", 3)])
    labels = list(iter_judge_labels(text.splitlines(keepends=True)))
    first = FIRST_ROW[fmt]
    assert [(x.qid, x.docno, x.grade, x.line) for x in labels] == [
        ("q1", "d1", 2, first),
        ("q1", "d2", 0, first + 1),
        ("q2", "d1", 3, first + 2),
    ]
    assert all(x.probs is None and x.rationale is None and x.seconds is None for x in labels)
    assert [x.expected_grade() for x in labels] == [2.0, 0.0, 3.0]


@pytest.mark.parametrize("fmt", JUDGE_LABEL_FORMATS)
def test_it_detects_every_format_from_its_first_content_line(fmt: str) -> None:
    first_line = as_file(fmt, [("q1", "d1", 1)]).splitlines()[0]
    assert detect_judge_label_format(first_line) == fmt


@pytest.mark.parametrize("fmt", JUDGE_LABEL_FORMATS)
def test_it_reads_a_gzip_file_into_a_dict_by_pair(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path / "judge.gz", as_file(fmt, [("q1", "d1", 1), ("q2", "d2", 2)]), compress=True)
    labels = read_judge_labels(path, y_max=3)
    assert sorted(labels) == [("q1", "d1"), ("q2", "d2")]
    assert labels["q2", "d2"].grade == 2


def test_it_skips_blank_lines_and_comments_and_reads_crlf_and_a_bom(tmp_path: Path) -> None:
    text = '\ufeff# judge: DeepSeek-V3\r\n\r\n{"qid": "q1", "docid": "d1", "grade": 1}\r\n  # done\r\n'
    labels = read_judge_labels(write(tmp_path / "judge.jsonl", text))
    assert labels["q1", "d1"].line == 3


def test_it_reads_a_qrels_file_separated_by_tabs() -> None:
    (label,) = iter_judge_labels(["q1\t0\td1\t2\n"])
    assert (label.qid, label.docno, label.grade) == ("q1", "d1", 2)


def test_it_reads_jsonl_probs_rescaled_to_sum_to_one() -> None:
    # Three grades rounded to 6 decimals sum to 0.999999.
    (label,) = iter_judge_labels(['{"qid": "q1", "docid": "d1", "probs": [0.333333, 0.333333, 0.333333]}\n'])
    assert label.grade is None
    assert label.probs is not None and math.fsum(label.probs) == pytest.approx(1.0, abs=1e-15)
    assert label.probs == pytest.approx((1 / 3, 1 / 3, 1 / 3), abs=1e-15)
    assert label.expected_grade() == pytest.approx(1.0)


def test_it_gives_the_mean_grade_of_a_distribution() -> None:
    # 0 * 0.1 + 1 * 0.2 + 2 * 0.3 + 3 * 0.4 = 2.0
    (label,) = iter_judge_labels(['{"qid": "q", "docid": "d", "probs": [0.1, 0.2, 0.3, 0.4]}'], y_max=3)
    assert label.expected_grade() == pytest.approx(2.0)


def test_it_keeps_the_optional_jsonl_fields_and_ignores_unknown_keys() -> None:
    record = {
        "qid": "q1",
        "docid": "d1",
        "grade": 3,
        "rationale": "answers the question",
        "seconds": 1.5,
        "cost": 0,
        "model": "DeepSeek-V3",
    }
    (label,) = iter_judge_labels([json.dumps(record)])
    assert label == JudgeLabelLine("q1", "d1", 3, None, "answers the question", 1.5, 0.0, 1)
    line = '{"qid": "q1", "docid": "d1", "grade": 3, "rationale": null, "cost": null}'
    (label,) = iter_judge_labels([line])
    assert (label.rationale, label.cost) == (None, None)


def test_it_reads_beir_key_names_and_integer_ids_in_jsonl() -> None:
    lines = [
        '{"query-id": 19335, "corpus-id": 1017759, "score": 1}',
        '{"qid": "q2", "docno": "d2", "grade": 0}',
    ]
    labels = list(iter_judge_labels(lines))
    assert [(x.qid, x.docno, x.grade) for x in labels] == [("19335", "1017759", 1), ("q2", "d2", 0)]


def test_it_reads_a_beir_tsv_with_its_columns_in_any_order_and_extra_columns() -> None:
    text = "score\tcorpus-id\tnote\tquery-id\n2\tdoc 1\tx\t1\n"
    (label,) = iter_judge_labels(text.splitlines(keepends=True))
    assert (label.qid, label.docno, label.grade, label.line) == ("1", "doc 1", 2, 2)


def test_it_reads_bytes_lines() -> None:
    (label,) = iter_judge_labels([b"q1 0 d1 1\n"])
    assert label.grade == 1


def test_it_accepts_ids_at_the_length_limits() -> None:
    (label,) = iter_judge_labels([f"{'q' * QID_MAX_CHARS} 0 {'d' * DOCNO_MAX_CHARS} 1"])
    assert (len(label.qid), len(label.docno)) == (QID_MAX_CHARS, DOCNO_MAX_CHARS)


def test_it_reads_the_real_umbrela_labels(shared_data: Path) -> None:
    path = shared_data / "llm_judges" / "dl19_mini" / "qrels" / "umbrela_bing_DSV3.txt"
    labels = read_judge_labels(path, y_max=3)
    assert len(labels) > 0
    assert {label.grade for label in labels.values()} <= {0, 1, 2, 3}


# --------------------------------------------------------------------------------------------
# Errors every format shares


@pytest.mark.parametrize("fmt", JUDGE_LABEL_FORMATS)
def test_it_refuses_a_pair_labelled_twice_naming_both_lines(fmt: str) -> None:
    error = error_of(as_file(fmt, [("q1", "d1", 1), ("q1", "d2", 1), ("q1", "d1", 2)]))
    first = FIRST_ROW[fmt]
    assert error.line == first + 2
    assert error.reason == f"document 'd1' labelled twice for query 'q1' (lines {first} and {first + 2})"
    assert str(error) == f"judge.txt:{first + 2}: {error.reason}"


@pytest.mark.parametrize("fmt", JUDGE_LABEL_FORMATS)
def test_it_refuses_a_negative_grade(fmt: str) -> None:
    error = error_of(as_file(fmt, [("q1", "d1", 1), ("q1", "d2", -1)]))
    assert (error.line, error.reason) == (FIRST_ROW[fmt] + 1, "grade -1 is negative")


@pytest.mark.parametrize("fmt", JUDGE_LABEL_FORMATS)
def test_it_refuses_a_grade_above_the_campaigns_top_grade(fmt: str) -> None:
    text = as_file(fmt, [("q1", "d1", 3), ("q1", "d2", 4)])
    error = error_of(text, y_max=3)
    assert (error.line, error.reason) == (FIRST_ROW[fmt] + 1, "grade 4 is above 3, the campaign's top grade")
    assert len(list(iter_judge_labels(text.splitlines()))) == 2  # without y_max, any grade >= 0


@pytest.mark.parametrize("fmt", JUDGE_LABEL_FORMATS)
@pytest.mark.parametrize(
    ("qid", "docid", "reason"),
    [
        ("q" * (QID_MAX_CHARS + 1), "d1", "qid longer than 64 characters (the limit)"),
        ("q1", "d" * (DOCNO_MAX_CHARS + 1), "docid longer than 200 characters (the limit)"),
    ],
)
def test_it_refuses_a_too_long_id(fmt: str, qid: str, docid: str, reason: str) -> None:
    error = error_of(as_file(fmt, [(qid, docid, 1)]))
    assert (error.line, error.reason) == (FIRST_ROW[fmt], reason)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", HEADER + "\n"])
def test_it_refuses_a_file_with_no_label(text: str) -> None:
    error = error_of(text)
    assert (error.line, error.reason) == (None, "the file holds no labels")
    assert str(error) == "judge.txt: the file holds no labels"


def test_it_refuses_an_empty_file_on_disk(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.txt", "")
    with pytest.raises(InputFileError, match="the file holds no labels"):
        read_judge_labels(path)


# --------------------------------------------------------------------------------------------
# Errors of one format


def test_it_refuses_a_qrels_line_of_the_wrong_field_count_or_grade() -> None:
    error = error_of("q1 0 d1 1\nq1 0 d2\n")
    assert (error.line, error.reason) == (2, "expected 4 fields (qid iter docno grade), found 3")
    error = error_of("q1 0 d1 1.5\n")
    assert (error.line, error.reason) == (1, "grade '1.5' is not an integer")


@pytest.mark.parametrize(
    ("probs", "reason"),
    [
        (
            "[0.5, 0.4]",
            "probabilities sum to 0.9, not 1 (rows may be off by at most 0.0001, e.g. from "
            "rounding to a few decimals; they are rescaled)",
        ),
        ("[1.0]", '"probs" holds 1 entries, fewer than two'),
        ("[1.2, -0.2]", "probability -0.2 is negative"),
        ("[0.5, 1e999]", "probability inf is not finite"),
        ('[0.5, "0.5"]', 'probability "0.5" is a string, not a number'),
        ("[0.5, true]", "probability true is a boolean, not a number"),
        ('"0.5 0.5"', '"probs" is a string, not an array of numbers'),
    ],
)
def test_it_refuses_a_bad_probs_row(probs: str, reason: str) -> None:
    error = error_of(FIRST_JSON + f'{{"qid": "q1", "docid": "d2", "probs": {probs}}}\n')
    assert (error.line, error.reason) == (2, reason)


def test_it_refuses_probs_rows_of_different_widths() -> None:
    text = (
        '{"qid": "q1", "docid": "d1", "probs": [0.5, 0.5]}\n'
        '{"qid": "q1", "docid": "d2", "grade": 2}\n'
        '{"qid": "q1", "docid": "d3", "probs": [0.2, 0.3, 0.5]}\n'
    )
    error = error_of(text)
    assert (error.line, error.reason) == (3, "expected 2 probabilities (as on line 1), found 3")


def test_it_refuses_probs_of_a_width_other_than_the_campaigns_grades() -> None:
    error = error_of('{"qid": "q1", "docid": "d1", "probs": [0.2, 0.3, 0.5]}\n', y_max=3)
    reason = "expected 4 probabilities (grades 0 to 3, the campaign's), found 3"
    assert (error.line, error.reason) == (1, reason)


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ('"grade": 1, "probs": [0.5, 0.5]', f"{ONE_GRADE} (found 'grade' and 'probs')"),
        ('"grade": 1, "score": 1', f"{ONE_GRADE} (found 'grade' and 'score')"),
        ('"rationale": "relevant"', ONE_GRADE),
        ('"grade": 2.0', '"grade" 2.0 is not an integer (write 2)'),
        ('"score": 1.5', '"score" 1.5 is not an integer'),
        ('"grade": true', '"grade" true is a boolean, not an integer'),
        ('"grade": "2"', '"grade" "2" is a string, not an integer'),
        ('"grade": 1, "seconds": -0.5', '"seconds" -0.5 is negative'),
        ('"grade": 1, "cost": -1', '"cost" -1 is negative'),
        ('"grade": 1, "seconds": 1e999', '"seconds" inf is not finite'),
        ('"grade": 1, "cost": "0.1"', '"cost" is a string, not a number'),
        ('"grade": 1, "rationale": 3', '"rationale" is a number, not a string'),
    ],
)
def test_it_refuses_a_bad_jsonl_label(record: str, reason: str) -> None:
    error = error_of(FIRST_JSON + f'{{"qid": "q1", "docid": "d2", {record}}}\n')
    assert (error.line, error.reason) == (2, reason)


@pytest.mark.parametrize(
    ("ids", "reason"),
    [
        ('"qid": 1.5, "docid": "d"', '"qid" is a number (1.5), not a string or an integer'),
        ('"qid": true, "docid": "d"', '"qid" is a boolean (true), not a string or an integer'),
        ('"qid": null, "docid": "d"', '"qid" is null (null), not a string or an integer'),
        ('"qid": "q", "docid": ["d"]', '"docid" is an array (["d"]), not a string or an integer'),
        ('"qid": "q", "corpus-id": {}', '"corpus-id" is an object ({}), not a string or an integer'),
        ('"docid": "d"', 'no qid: give one of "qid", "query-id"'),
        ('"qid": "q"', 'no docid: give one of "docid", "docno", "corpus-id"'),
        (
            '"qid": "q", "docid": "d", "docno": "d"',
            'give one of "docid", "docno", "corpus-id", not several (found docid, docno)',
        ),
        ('"qid": "", "docid": "d"', "qid is empty"),
        ('"qid": "q", "docid": "d\\u0000"', "docid contains a NUL character"),
        ('"qid": "q\\ud800", "docid": "d"', "qid contains a lone surrogate (not valid Unicode text)"),
    ],
)
def test_it_refuses_a_jsonl_id_of_the_wrong_json_type_or_missing(ids: str, reason: str) -> None:
    error = error_of(f'{{{ids}, "grade": 1}}\n')
    assert (error.line, error.reason) == (1, reason)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"qid": "q1", "docid": "d2", "grade": 1', "not a JSON object: Expecting ',' delimiter (column 40)"),
        ('{"qid": "q1", "docid": "d2", "grade": NaN}', "not a JSON object: NaN is not valid JSON"),
        (
            '{"qid": "q1", "docid": "d2", "probs": [-Infinity, 1]}',
            "not a JSON object: -Infinity is not valid JSON",
        ),
        ('["q1", "d2", 1]', "not a JSON object (found an array)"),
        ("[" * 100_000, "not a JSON object: nested too deeply"),
    ],
)
def test_it_refuses_a_line_that_is_not_a_json_object(line: str, reason: str) -> None:
    error = error_of(FIRST_JSON + line + "\n")
    assert (error.line, error.reason) == (2, reason)


def test_it_refuses_a_beir_tsv_without_its_header() -> None:
    error = error_of("q1\td1\t1\nq1\td2\t0\n")
    assert error.line == 1
    assert error.reason == (
        "three tab-separated fields but no header: a BEIR file starts with the header "
        "query-id<TAB>corpus-id<TAB>score"
    )
    error = error_of("q1\td1\t1\n", fmt="beir-tsv")
    assert (error.line, error.reason) == (
        1,
        f"the header lacks 'query-id' {EXPECTED_HEADER}",
    )


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("query-id\tcorpus-id\tgrade", f"the header lacks 'score' {EXPECTED_HEADER}"),
        ("query-id corpus-id score", f"the header is not tab-separated {EXPECTED_HEADER}"),
        ("query-id\tcorpus-id\tscore\tscore", "column 'score' twice in the header"),
    ],
)
def test_it_refuses_a_bad_beir_header(header: str, reason: str) -> None:
    error = error_of(header + "\nq1\td1\t1\n")
    assert (error.line, error.reason) == (1, reason)


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("q1\td2", "expected 3 tab-separated fields (as in the header), found 2"),
        ("q1\td2\t1\textra", "expected 3 tab-separated fields (as in the header), found 4"),
        ("q1\td2\t1.0", "score '1.0' is not an integer"),
        ("q1\t\t1", "docid is empty"),
    ],
)
def test_it_refuses_a_bad_beir_row(row: str, reason: str) -> None:
    error = error_of(f"{HEADER}\nq1\td1\t1\n{row}\n")
    assert (error.line, error.reason) == (3, reason)


def test_it_follows_the_given_format_over_detection() -> None:
    error = error_of('{"qid": "q1", "docid": "d1", "grade": 1}\n', fmt="qrels")
    assert (error.line, error.reason) == (1, "expected 4 fields (qid iter docno grade), found 6")


def test_it_refuses_an_unknown_format_or_a_top_grade_below_one() -> None:
    with pytest.raises(ValueError, match="unknown judge label format 'csv'"):
        list(iter_judge_labels([], fmt="csv"))
    with pytest.raises(ValueError, match="y_max must be at least 1, found 0"):
        list(iter_judge_labels([], y_max=0))


def test_it_streams_labels_before_reading_the_whole_file() -> None:
    def lines() -> object:
        yield "q1 0 d1 1\n"
        raise AssertionError("read past the first label")

    labels = iter_judge_labels(lines())  # type: ignore[arg-type]
    assert next(labels).docno == "d1"
