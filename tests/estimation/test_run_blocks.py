"""The block run reader agrees with the line reader: the same columns for what it accepts,
whatever the block size, and everything else left to the line reader (`NeedsLineReader`),
which names the file, line and reason."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimation.formats.run_blocks import ColumnLimits, NeedsLineReader, iter_run_blocks
from estimation.formats.trec import iter_run, text_lines
from tests.estimation.helpers import run_file

PROPERTY = settings(
    max_examples=250, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)

_space = st.sampled_from([" ", "  ", "\t", " \t ", "\x0b", "\x1c", "\u2003"])


@PROPERTY
@given(data=run_file(), block_bytes=st.integers(1, 300))
def test_it_yields_the_line_readers_columns_across_block_boundaries(data: bytes, block_bytes: int) -> None:
    try:
        blocks = list(iter_run_blocks(io.BytesIO(data), block_bytes=block_bytes))
    except NeedsLineReader:
        return
    expected = list(iter_run(text_lines(io.BytesIO(data), "run"), "run"))
    assert [line.qid for line in expected] == [q for block in blocks for q in block.qids]
    assert [line.docno for line in expected] == [d for block in blocks for d in block.docnos]
    assert [line.tag for line in expected] == [t for block in blocks for t in block.tags]
    assert [line.rank for line in expected] == np.concatenate([b.ranks for b in blocks]).tolist()
    assert [line.score for line in expected] == np.concatenate([b.scores for b in blocks]).tolist()
    assert [line.line for line in expected] == np.concatenate([b.lines for b in blocks]).tolist()


def test_it_finds_a_document_listed_twice_in_different_blocks() -> None:
    text = b"1 Q0 a 1 0.5 r\n2 Q0 b 1 0.5 r\n1 Q0 a 2 0.4 r\n"
    with pytest.raises(NeedsLineReader):
        list(iter_run_blocks(io.BytesIO(text), block_bytes=16))


@pytest.mark.parametrize(
    "line",
    ["q" * 5 + " Q0 d 1 1 r", "1 Q0 " + "d" * 9 + " 1 1 r", "1 Q0 d 1 1 " + "t" * 5, "1 Q0 d 100 1 r"],
)
def test_it_leaves_values_outside_the_columns_to_the_line_reader(line: str) -> None:
    limits = ColumnLimits(qid_chars=4, docno_chars=8, tag_chars=4, rank_min=-99, rank_max=99)
    with pytest.raises(NeedsLineReader):
        list(iter_run_blocks(io.BytesIO(line.encode()), limits=limits))


def test_it_refuses_a_line_over_the_limit_without_holding_it() -> None:
    with pytest.raises(NeedsLineReader):
        list(iter_run_blocks(io.BytesIO(b"1" * 10_000), block_bytes=100, max_line_bytes=500))
