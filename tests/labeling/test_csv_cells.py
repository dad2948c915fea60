"""CSV exports open safely in a spreadsheet: text cells starting with a formula character get
a leading single quote (OWASP's advice on CSV injection), numbers stay numbers, and every CSV
writer of the app goes through labeling.csv_cells."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling.csv_cells import CsvWriter, csv_cell
from labeling.models import Campaign

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1+2", "'+1+2"),
        ("-1+2", "'-1+2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("plain = text", "plain = text"),
        ("-0.25", "-0.25"),  # a float written with repr: still a number
        ("-1e-05", "-1e-05"),
        (-3, -3),
        (-0.5, -0.5),
        (None, None),
    ],
)
def test_it_quotes_formula_text_and_leaves_numbers(value: object, written: object) -> None:
    assert csv_cell(value) == written


def test_a_negative_number_stays_a_number_next_to_quoted_text() -> None:
    buffer = io.StringIO()
    CsvWriter(buffer, lineterminator="\n").writerow(["-cmd", -2, -0.125, repr(-0.75)])
    assert buffer.getvalue() == "'-cmd,-2,-0.125,-0.75\n"


def test_every_csv_writer_of_the_app_goes_through_the_helper() -> None:
    direct = re.compile(r"csv\.(writer|DictWriter)\(")
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("labeling", "sampling", "graded", "pairwise", "sxs", "training")
        for path in (ROOT / package).rglob("*.py")
        if direct.search(path.read_text()) and path != ROOT / "labeling" / "csv_cells.py"
    ]
    assert offenders == []


def test_judge_labels_csv_quotes_a_judge_name_model_and_rationale_starting_with_a_formula(
    api: Callable[[AbstractBaseUser | None], APIClient], coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    client = api(coordinator)
    base = f"/api/campaigns/{campaign.pk}/judges/"
    created = client.post(base, {"name": "=cmd|' /C calc'!A0", "model": "+gpt"}, format="json")
    assert created.status_code == 201, created.content
    record = {"qid": "1", "docid": "d1-1", "grade": 1, "rationale": "@SUM(1+1)", "seconds": 2.5}
    stream = io.BytesIO((json.dumps(record) + "\n").encode())
    stream.name = "-labels.jsonl"
    uploaded = client.post(f"{base}{created.json()['id']}/labels/", {"file": stream}, format="multipart")
    assert uploaded.status_code == 201, uploaded.content
    response = client.get(f"/api/campaigns/{campaign.pk}/export/judge-labels.csv")
    header, row = csv.reader(io.StringIO(b"".join(response.streaming_content).decode()))
    cells = dict(zip(header, row, strict=True))
    assert (cells["judge"], cells["model"], cells["rationale"], cells["file"]) == (
        "'=cmd|' /C calc'!A0",
        "'+gpt",
        "'@SUM(1+1)",
        "'-labels.jsonl",
    )
    assert (cells["grade"], cells["seconds"]) == ("1", "2.5")


def test_a_streamed_csv_starts_with_its_header_and_yields_bounded_chunks_of_the_same_text() -> None:
    from labeling.csv_cells import CSV_CHUNK_CHARS, csv_stream

    rows = [[n, "=cmd" if n % 7 == 0 else f"row {n}", "x" * 40] for n in range(5000)]
    chunks = list(csv_stream(["n", "text", "pad"], iter(rows)))
    whole = io.StringIO()
    writer = CsvWriter(whole)
    writer.writerow(["n", "text", "pad"])
    writer.writerows(rows)
    assert chunks[0] == "n,text,pad\r\n", "the header at once"
    assert "".join(chunks) == whole.getvalue() and "'=cmd" in whole.getvalue()
    assert len(chunks) > 3 and all(len(chunk) < CSV_CHUNK_CHARS + 200 for chunk in chunks)
