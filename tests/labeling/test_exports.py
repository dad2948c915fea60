"""Exports: qrels round trip, judgments with draw order and propensity, configuration, bounded memory."""

from __future__ import annotations

import csv
import io
import json
import tracemalloc

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.utils import timezone

from estimation.formats.trec import iter_qrels
from graded import exports
from graded.claims import task_next
from labeling.exports import campaign_config_json
from labeling.models import Campaign, Draw, Judgment
from labeling.services.campaigns import campaign_create
from tests.conftest import RUN_A, RUN_B, upload
from tests.labeling.helpers import judge_everything
from uploads.imports import qrels_import
from uploads.run_imports import runs_import


def test_it_round_trips_qrels_into_a_new_campaign(
    campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    grades = judge_everything(campaign, assessor)
    assert len(grades) == 21
    text = "".join(exports.qrels_trec(campaign))
    assert {(line.qid, line.docno): line.grade for line in iter_qrels(text.splitlines(), "export")} == grades
    copy = campaign_create(
        creator=coordinator, name="copy", metric="DCG@5", grades=["Bad", "Fair", "Good"], budget=5
    )
    runs_import(campaign=copy, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    qrels_import(campaign=copy, files=[upload("export.qrels", text)])
    imported = dict(
        ((qid, docno), grade)
        for qid, docno, grade in Judgment.objects.filter(campaign=copy).values_list(
            "topic__qid", "document__docno", "grade"
        )
    )
    assert imported == grades
    assert "".join(exports.qrels_trec(copy)) == text


def test_it_exports_judgments_with_assessor_seconds_draw_order_and_propensity(
    campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    judge_everything(campaign, assessor)
    rows = list(csv.DictReader(io.StringIO("".join(exports.judgments_csv(campaign)))))
    records = [json.loads(line) for line in "".join(exports.judgments_jsonl(campaign)).splitlines()]
    assert len(rows) == len(records) == Judgment.objects.filter(campaign=campaign).count()
    draws = {draw.order: draw for draw in Draw.objects.filter(campaign=campaign)}
    for row, record in zip(rows, records, strict=True):
        assert row["assessor"] == record["assessor"] == "alice"
        assert float(row["seconds"]) == record["seconds"]
        draw = draws[record["draw_order"]]
        # Passive draws whole topics: the draw names the topic, the judgment one of its documents.
        assert (
            (draw.kind, draw.topic.qid) == (record["draw_kind"], record["topic"]) == ("query", row["topic"])
        )
        assert record["propensity"] == pytest.approx(draw.propensity)
        assert float(row["propensity"]) == pytest.approx(draw.propensity)
        assert record["grade_name"] == campaign.grades[record["grade"]]["name"]


def test_it_exports_the_campaign_configuration(campaign: Campaign) -> None:
    config = json.loads(campaign_config_json(campaign))
    assert (config["metric"], config["budget_unit"], config["strategy"]) == ("DCG@5", "judgments", "passive")
    assert config["systems"] == ["alpha", "beta"] and config["assessors"] == ["alice", "bob"]
    assert config["counts"]["pool_items"] == 21


@pytest.mark.slow
def test_it_streams_a_large_judgment_export_in_bounded_memory(
    campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    # 40,000 judgments written directly (the export, not judging, is under test): 1,250 through
    # the ORM, doubled five times by the database (40,000 model instances through bulk_create
    # took three quarters of the test's time).
    task = task_next(campaign=campaign, assessor=assessor)
    now = timezone.now()
    Judgment.objects.bulk_create(
        [
            Judgment(
                campaign=campaign,
                topic_id=task.topic_id,
                document_id=task.document_id,
                assessor=assessor,
                grade=index % 3,
                seconds=1.0,
                draw_id=task.draw_id,
                created_at=now,
            )
            for index in range(1250)
        ]
    )
    copied = [field.column for field in Judgment._meta.concrete_fields if not field.primary_key]
    columns = ", ".join(connection.ops.quote_name(column) for column in copied)
    table = connection.ops.quote_name(Judgment._meta.db_table)
    with connection.cursor() as cursor:
        for _ in range(5):
            cursor.execute(
                f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {table} WHERE campaign_id = %s",
                [campaign.pk],
            )
    assert Judgment.objects.filter(campaign=campaign).count() == 40_000
    tracemalloc.start()
    try:
        total = 0
        for chunk in exports.judgments_jsonl(campaign):
            total += len(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total > 40_000 * 100
    # A bounded stream holds a chunk of 2,000 rows at a time, a small part of the whole export.
    assert peak < total / 4, f"peak {peak / 1e6:.1f} MB for {total / 1e6:.1f} MB exported"
