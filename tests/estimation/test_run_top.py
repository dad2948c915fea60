"""The streaming top-depth run reader agrees with the line reader: the same `Run` cut to the
depth (trec_eval's order: score descending, then docno descending), the same error for a bad
file, whatever the block size; and its numpy column conversions agree with float() and int()."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimation.formats.byte_columns import (
    check_integers,
    decimal_values,
    plain_fields,
    runs_of_equal,
    string_hashes,
)
from estimation.formats.run_top import read_run_top
from estimation.formats.trec import InputFileError, Run, read_run
from tests.estimation.helpers import run_file

PROPERTY = settings(
    max_examples=250, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def cut(run: Run, depth: int) -> Run:
    return Run(
        tag=run.tag,
        rankings={qid: docnos[:depth] for qid, docnos in run.rankings.items()},
        scores={qid: values[:depth] for qid, values in run.scores.items()},
        tags=run.tags,
    )


def outcome(read, path: Path):  # noqa: ANN001, ANN202
    try:
        run = read(path)
    except InputFileError as error:
        return ("error", str(error))
    return (run, list(run.rankings))  # the queries' order too


_score = st.sampled_from(
    ["0.5", "0.50", "1", "-1", "-0.0", "0", "+.5", "5.", "2.25", "1e-3", "1E2", "1_5", "20.979169090265216"]
)


@st.composite
def plain_run(draw: st.DrawFn) -> bytes:
    """A valid ASCII run: queries in stretches or interleaved, scores that tie often."""
    n_lines = draw(st.integers(1, 60))
    docnos = draw(st.lists(st.sampled_from([f"d{i}" for i in range(30)] + ["D-9", "x" * 12]), unique=True))
    lines, used = [], set()
    for index in range(n_lines):
        qid = draw(st.sampled_from(["1", "2", "10"]))
        docno = draw(st.sampled_from(docnos)) if docnos else f"doc{index}"
        if (qid, docno) in used:
            continue
        used.add((qid, docno))
        rank = draw(st.integers(0, 1000))
        separator = draw(st.sampled_from([" ", "\t", "  "]))
        tag = draw(st.sampled_from(["r", "r", "s"]))
        lines.append(separator.join([qid, "Q0", docno, str(rank), draw(_score), tag]))
    return ("\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))).encode()


@PROPERTY
@given(data=st.one_of(run_file(), plain_run()), depth=st.integers(1, 4), block_bytes=st.integers(1, 200))
def test_it_keeps_the_line_readers_first_documents_or_raises_its_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, depth: int, block_bytes: int
) -> None:
    path = tmp_path_factory.mktemp("runs") / "run.txt"
    path.write_bytes(data)
    expected = outcome(lambda p: cut(read_run(p), depth), path)
    assert outcome(lambda p: read_run_top(p, depth, block_bytes=block_bytes), path) == expected
    assert outcome(lambda p: read_run_top(p, depth), path) == expected  # one block


def test_it_orders_ties_by_docno_descending_and_cuts_after_the_tie_rule(tmp_path: Path) -> None:
    # Scores: d 0.9 first; b, c, a tie at 0.5 -> docno descending: c, b, a. The rank column
    # (here contradicting the scores) is ignored, as trec_eval ignores it.
    text = b"1 Q0 b 1 0.5 r\n1 Q0 c 2 0.5 r\n1 Q0 d 3 0.9 r\n1 Q0 a 4 0.5 r\n2 Q0 x 1 1 r\n"
    path = tmp_path / "run.txt"
    path.write_bytes(text)
    for block_bytes in (8, 1 << 20):
        run = read_run_top(path, 2, block_bytes=block_bytes)
        assert run.rankings == {"1": ("d", "c"), "2": ("x",)}
        assert run.scores == {"1": (0.9, 0.5), "2": (1.0,)}


def test_it_reads_interleaved_queries_across_blocks(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{q} Q0 d{i} {i} {i % 3}.5 r\n" for i in range(30) for q in ("b", "a")))
    for block_bytes in (16, 100, 1 << 20):
        run = read_run_top(path, 5, block_bytes=block_bytes)
        assert run == cut(read_run(path), 5)
        assert list(run.rankings) == ["b", "a"]


def test_it_reads_many_short_queries_and_docnos_longer_than_the_padding(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    long = "x" * 100
    path.write_text("".join(f"q{q} Q0 {long}{d} {d} {d % 2}.25 r\n" for q in range(300) for d in range(3)))
    for block_bytes in (500, 1 << 20):
        assert read_run_top(path, 10, block_bytes=block_bytes) == read_run(path)


def test_it_reports_a_document_listed_twice_in_different_blocks_as_the_line_reader(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("1 Q0 a 1 0.5 r\n2 Q0 b 1 0.5 r\n1 Q0 a 2 0.4 r\n")
    with pytest.raises(InputFileError) as raised:
        read_run_top(path, 10, block_bytes=16)
    assert str(raised.value) == f"{path}:3: document 'a' listed twice for query '1' (lines 1 and 3)"


def test_it_reads_gzip_and_the_robust03_runs_as_the_line_reader(tmp_path: Path, shared_data: Path) -> None:
    path = tmp_path / "run.gz"
    path.write_bytes(gzip.compress(b"\xef\xbb\xbf1 Q0 a 1 2 r\r\n1\tQ0\tb\t2\t3\tr\r\n"))
    assert read_run_top(path, 1) == cut(read_run(path), 1)
    runs = sorted((shared_data / "robust03" / "runs").glob("*.gz"))
    for path in runs[:4]:
        assert read_run_top(path, 20) == cut(read_run(path), 20)


def test_it_refuses_a_depth_below_one(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="depth must be >= 1"):
        read_run_top(tmp_path / "absent", 0)


# ---------------------------------------------------------------------------------------------
# Columns


def strings(*texts: str) -> np.ndarray:
    return np.array([text.encode() for text in texts], dtype=bytes)


_decimal_text = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda x: f"{x:.9f}"),
    st.from_regex(r"\A[+-]?[0-9]{0,20}(\.[0-9]{0,25})?\Z"),
    st.from_regex(r"\A[+-]?[0-9]{1,6}\.?[0-9]{0,6}([eE][+-]?[0-9]{1,3})?\Z"),
)


@PROPERTY
@given(texts=st.lists(_decimal_text, min_size=1, max_size=20))
def test_decimal_values_are_floats_of_the_texts_bit_for_bit(texts: list[str]) -> None:
    try:
        expected = [float(text) for text in texts]
    except ValueError:
        with pytest.raises(ValueError):
            decimal_values(strings(*texts))
        return
    found = decimal_values(strings(*texts)).tolist()
    assert [(math.copysign(1, x), x) for x in found] == [(math.copysign(1, x), x) for x in expected]


@pytest.mark.parametrize(
    "text",
    ["9007199254740992", "9007199254740993", "9007199254740995", "0.1", "-0", "+.5", "5.", "1_0", "1e5",
     "0.000000000000000000001", "123456789012345678", "1234567890123456789.5", "20.979169090265216"],
)  # fmt: skip
def test_decimal_values_agree_with_float_on_hard_cases(text: str) -> None:
    assert decimal_values(strings(text, "1")).tolist() == [float(text), 1.0]


@pytest.mark.parametrize("text", [".", "-", "1.2.3", "--1", "1-", "1e", "0x10", "inf-"])
def test_decimal_values_refuse_what_float_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        float(text)
    with pytest.raises(ValueError):
        decimal_values(strings("1", text))


def test_check_integers_accepts_what_int_accepts_only() -> None:
    check_integers(strings("12", "-3", "+4", "007", "1_0"))
    for bad in ("1.0", "x", "--1", "1e3", "+"):
        with pytest.raises(ValueError):
            check_integers(strings("1", bad))


def test_string_hashes_are_equal_for_equal_strings_and_exact_up_to_eight_bytes() -> None:
    words = strings("a", "b", "ab", "ba", "abcdefgh", "abcdefgg", "a", "abcdefghi", "abcdefghi")
    hashes = string_hashes(words.astype("S16")).tolist()
    assert hashes[0] == hashes[6] and hashes[7] == hashes[8]
    assert len(set(hashes[:6])) == 6
    with pytest.raises(ValueError, match="multiple of 8"):
        string_hashes(strings("abc"))


@pytest.mark.parametrize(
    ("block", "fields"),
    [
        (b"a b c\n\n  d e f \r\n", [[b"a", b"b", b"c"], [b"d", b"e", b"f"]]),
        (b"a b c", [[b"a", b"b", b"c"]]),
        (b"\n \n", []),
        (b"a b\n", None),  # a line of another width
        (b"a b c\n#x y z\n", None),  # a comment: the general path skips it
        (b"a b\xc2\xa0c\n", None),  # NBSP: str.split splits there, bytes.split does not
        (b"a b\x1cc\n", None),
        (b"a b\x00 c\n", None),
    ],
)
def test_plain_fields_finds_the_fields_or_leaves_the_block_to_the_general_path(
    block: bytes, fields: list[list[bytes]] | None
) -> None:
    table = plain_fields(block, 3)
    if fields is None:
        assert table is None
        return
    assert table is not None
    assert [[table.strings(j)[i] for j in range(3)] for i in range(len(table))] == fields


def test_runs_of_equal_gives_each_stretch_once() -> None:
    values, starts = runs_of_equal(strings("1", "1", "2", "1", "1"))
    assert values == [b"1", b"2", b"1"] and starts.tolist() == [0, 2, 3]
