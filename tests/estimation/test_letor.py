"""The LETOR / SVMlight pool reader: arrays, docids or positions, errors naming file and line."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from estimation.formats.letor import apply_labels, concat_pools, drop_last_query, read_letor
from estimation.formats.trec import InputFileError

POOL = """\
# a comment line
2 qid:7 1:0.5 3:1.25 # docid = A inc = 1 prob = 0.1
-1 qid:7 2:2 #docid = B
qid:7 1:1 3:1 # docid=C

0 qid:9 1:0 2:0 3:0 # docid = A
"""


def write(tmp_path: Path, text: str, name: str = "pool.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_it_reads_features_grades_docids_and_query_offsets(tmp_path: Path) -> None:
    pool = read_letor(write(tmp_path, POOL))
    assert pool.features.dtype == np.float32
    np.testing.assert_array_equal(pool.features, [[0.5, 0, 1.25], [0, 2, 0], [1, 0, 1], [0, 0, 0]])
    assert pool.grades.tolist() == [2, -1, -1, 0]
    assert pool.labeled.tolist() == [True, False, False, True]
    assert pool.query_ids == ("7", "9")
    assert pool.query_offsets.tolist() == [0, 3, 4]
    assert pool.doc_ids == ("A", "B", "C", "A")
    assert not pool.doc_ids_from_position
    assert pool.query_of_row().tolist() == [0, 0, 0, 1]


def test_it_names_documents_by_position_without_docids_and_reads_gzip(tmp_path: Path) -> None:
    path = tmp_path / "mslr.txt.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("1 qid:5 1:3 136:1\n0 qid:5 2:1\n4 qid:6 1:1\n")
    pool = read_letor(path)
    assert pool.doc_ids == ("1", "2", "1")
    assert pool.doc_ids_from_position
    assert pool.features.shape == (3, 136)


def test_it_fixes_the_width_when_told(tmp_path: Path) -> None:
    assert read_letor(write(tmp_path, "1 qid:1 2:1\n"), n_features=46).features.shape == (1, 46)
    with pytest.raises(InputFileError, match=r"pool.txt:1: feature index 47 is above 46"):
        read_letor(write(tmp_path, "1 qid:1 47:1\n"), n_features=46)


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("1 qid:1 1:1\nx qid:1 1:1\n", 2, "grade 'x' is not a number"),
        ("1.5 qid:1 1:1\n", 1, "is not an integer"),
        ("-2 qid:1 1:1\n", 1, "negative"),
        ("1 1:1 2:1\n", 1, "expected 'grade qid:Q"),
        ("1 qid: 1:1\n", 1, "empty query id"),
        ("1 qid:1 1:1 2\n", 1, "bad feature '2'"),
        ("1 qid:1 0:1\n", 1, "below 1"),
        ("1 qid:1 1:1 1:2\n", 1, "appears twice"),
        ("1 qid:1 1:nan\n", 1, "not finite"),
        ("1 qid:1 1000000000000:1\n", 1, "feature index 1000000000000 is above 10000"),
        ("1 qid:1 9223372036854775808:1\n", 1, "is above 10000"),
        ("1 qid:1 1:1e39\n", 1, "beyond float32's range"),
        ("1 qid:1 1:-1e39\n", 1, "beyond float32's range"),
        ("1 qid:1 1:1 # docid\n", 1, "'docid' without"),
        ("1 qid:1 1:1\n1 qid:2 1:1\n1 qid:1 1:1\n", 3, "query 1 appears in two separate blocks"),
        (
            "1 qid:1 1:1 # docid = a\n1 qid:1 1:1 # docid = a\n",
            2,
            "listed twice for query 1 (first on line 1)",
        ),
        ("1 qid:1 1:1 # docid = a\n1 qid:1 1:1\n", 2, "no docid here"),
    ],
)
def test_it_names_file_and_line_of_a_bad_row(tmp_path: Path, text: str, line: int, reason: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputFileError) as error:
        read_letor(path)
    assert error.value.line == line
    assert str(error.value).startswith(f"{path}:{line}: ")
    assert reason in error.value.reason


def test_it_rejects_an_empty_file_and_a_broken_gzip(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no query-document rows"):
        read_letor(write(tmp_path, "# nothing\n"))
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress(b"1 qid:1 1:1\n" * 100)[:30])
    with pytest.raises(InputFileError, match="cannot read"):
        read_letor(broken)


def test_it_checks_queries_across_files(tmp_path: Path) -> None:
    first, second = write(tmp_path, "1 qid:1 1:1\n", "a.txt"), write(tmp_path, "1 qid:1 1:1\n", "b.txt")
    with pytest.raises(
        InputFileError, match=r"b.txt:1: query 1 appears in two separate blocks \(first at .*a.txt:1\)"
    ):
        read_letor([first, second])


def test_it_subsets_concatenates_and_drops_the_cut_query(tmp_path: Path) -> None:
    pool = read_letor(write(tmp_path, POOL))
    assert drop_last_query(pool).query_ids == ("7",)
    flipped = pool.subset([1, 0])
    assert flipped.doc_ids == ("A", "A", "B", "C") and flipped.query_offsets.tolist() == [0, 1, 4]
    joined = concat_pools([pool.subset([0]), pool.subset([1])])
    np.testing.assert_array_equal(joined.features, pool.features)
    with pytest.raises(ValueError, match="more than one"):
        concat_pools([pool, pool])


def test_it_merges_labels_from_qrels_or_labeled_rows(tmp_path: Path) -> None:
    pool = read_letor(write(tmp_path, POOL))
    qrels = write(tmp_path, "7 0 B 1\n7 0 C -2\n8 0 Z 1\n", "qrels.txt")
    merged = apply_labels(qrels.read_text().splitlines(), str(qrels), pool)
    assert merged.pool.grades.tolist() == [2, 1, 0, 0]
    assert (merged.applied, merged.unknown) == (2, 1)
    rows = "3 qid:7 1:0 # docid = C\n-1 qid:7 # docid = B\n"
    merged = apply_labels(rows.splitlines(), "labels.txt", pool)
    assert merged.pool.grades.tolist() == [2, -1, 3, 0]
    with pytest.raises(InputFileError, match=r"qrels.txt:1: "):
        apply_labels(["7 0 B x"], "qrels.txt", pool)


def test_it_reads_the_real_mq2008_and_mslr_files(shared_data: Path) -> None:
    mq = read_letor(shared_data / "mq2008" / "S1.txt.gz", n_features=46)
    assert mq.features.shape == (mq.n_docs, 46) and mq.n_queries > 100
    assert mq.doc_ids[0].startswith("GX") and set(np.unique(mq.grades)) <= {0, 1, 2}
    mslr = drop_last_query(read_letor(shared_data / "mslr_sample" / "msn1.fold1.test.5k.txt.gz"))
    assert mslr.features.shape[1] == 136 and mslr.doc_ids_from_position
    assert set(np.unique(mslr.grades)) <= {0, 1, 2, 3, 4}
