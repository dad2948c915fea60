"""The block qrels reader gives `read_qrels`' dict (its order too) or raises its error."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimation.formats.qrels_fast import read_qrels_fast
from estimation.formats.trec import InputFileError, read_qrels

PROPERTY = settings(
    max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def qrels_file(draw: st.DrawFn) -> bytes:
    """Usually valid qrels; sometimes a comment, a blank, a short line, a bad grade, a repeat."""
    lines = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["good"] * 10 + ["comment", "blank", "short", "grade", "unicode"]))
        qid = draw(st.sampled_from(["1", "2", "10"]))
        docno = draw(st.sampled_from(["a", "b", "c", "d-1", "doc#2"]))
        grade = str(draw(st.integers(-2, 3)))
        if kind == "comment":
            lines.append(f"# {qid} 0 {docno} {grade}")
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "  ", "\t"])))
        elif kind == "short":
            lines.append(f"{qid} 0 {docno}")
        elif kind == "grade":
            lines.append(f"{qid} 0 {docno} {draw(st.sampled_from(['x', '1.5', '1_0', '+1']))}")
        elif kind == "unicode":
            lines.append(f"{qid} 0 é{docno} {grade}")
        else:
            lines.append(draw(st.sampled_from([" ", "\t"])).join([qid, "0", docno, grade]))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    text = ending.join(lines) + draw(st.sampled_from(["", ending]))
    return (draw(st.sampled_from(["", "\ufeff"])) + text).encode()


def outcome(read, path: Path):  # noqa: ANN001, ANN202
    try:
        qrels = read(path)
    except InputFileError as error:
        return ("error", str(error))
    return (qrels, [(qid, list(grades)) for qid, grades in qrels.items()])


@PROPERTY
@given(data=qrels_file())
def test_it_reads_what_read_qrels_reads_or_raises_its_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    path = tmp_path_factory.mktemp("qrels") / "qrels.txt"
    path.write_bytes(data)
    assert outcome(read_qrels_fast, path) == outcome(read_qrels, path)


def test_it_reads_gzip_and_the_robust03_qrels(tmp_path: Path, shared_data: Path) -> None:
    path = tmp_path / "qrels.gz"
    path.write_bytes(gzip.compress(b"1 0 a 2\n1 0 b -1\n2 0 a 1\n"))
    assert read_qrels_fast(path) == {"1": {"a": 2, "b": 0}, "2": {"a": 1}}
    robust = shared_data / "robust03" / "qrels.txt"
    assert outcome(read_qrels_fast, robust) == outcome(read_qrels, robust)
