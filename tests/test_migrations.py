"""The migrations describe the models: a model change without its migration would pass every
test (pytest-django builds the test database from the models) and break `make run`'s migrate."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps as global_apps
from django.contrib.contenttypes.management import create_contenttypes
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.migration_sandbox import migration_sandbox


def test_every_model_change_has_its_migration(db: None) -> None:
    written = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=written)
    except SystemExit as exit:
        raise AssertionError(f"models changed without a migration:\n{written.getvalue()}") from exit


def _moved_rows(apps: Any, judge_app: str, gold_app: str, staging_app: str) -> tuple:
    """The rows of the tables 0036-0037 moved out of the core, read through `apps`' models."""
    get = apps.get_model
    label = get(judge_app, "JudgeLabel").objects.get()
    state = get(judge_app, "SamplingState").objects.get()
    return (
        get(judge_app, "Judge").objects.get().name,
        (label.judge_id, label.docno, label.grade),
        (state.version, bytes(state.arrays)),
        get(gold_app, "GoldItem").objects.get().grade,
        get(staging_app, "StagedRunLine").objects.get().line,
    )


@pytest.mark.postgresql  # also on PostgreSQL, where the rule's column length is enforced
@pytest.mark.django_db(transaction=True)
def test_a_populated_database_migrates_forward_and_back_losing_nothing(tmp_path: Path) -> None:
    """One round trip from 0032 (each migration back and forth costs a schema walk):
    - 0033 moves each arrival's and each two-system campaign's verdict columns into `Verdict` rows
      with the plan they imply, and back: nothing decided is lost either way;
    - 0036-0037 and the first migrations of `sampling`, `graded` and `uploads` move the model
      judges', sampling, gold and run-staging tables out of the core without touching the
      database: rows stored before are read by the new apps' models, and again after migrating
      back, and their content types follow them."""
    before_state = [("labeling", "0032_campaign_verdict")]
    before = [*before_state, ("sampling", None), ("graded", None), ("uploads", None)]
    # Built forward from nothing on a database of its own (tests/migration_sandbox.py), with the
    # content types `migrate` would have made then.
    with migration_sandbox(tmp_path):
        executor = MigrationExecutor(connection)
        executor.migrate(before)
        old = executor.loader.project_state(before_state).apps
        for app in global_apps.get_app_configs():  # as `migrate` does, with the old state's models
            create_contenttypes(app, verbosity=0, apps=old)
        _round_trip(before_state, before, old)


def _round_trip(before_state: list[tuple[str, str]], before: list, old: Any) -> None:
    campaign = old.get_model("labeling", "Campaign").objects.create(
        name="pair",
        goal="difference",
        focus_systems=["a", "b"],
        verdict_rule="anytime",
        verdict="better",
        verdict_low=0.2,
        verdict_high=0.9,
        verdict_returned=3.0,
        budget=40,
    )
    system = old.get_model("labeling", "System")
    arrived = system.objects.create(campaign=campaign, name="c")
    reference = system.objects.create(campaign=campaign, name="a")
    old.get_model("labeling", "Arrival").objects.create(
        campaign=campaign,
        system=arrived,
        reference=reference,
        topup_budget=25,
        topup_draws=25,
        drawable_after=12,
        verdict="worse",
        rule="fixed",
        decided_low=-2.0,
        decided_high=-0.5,
    )
    topic = old.get_model("labeling", "Topic").objects.create(campaign=campaign, qid="1")
    document = old.get_model("labeling", "Document").objects.create(campaign=campaign, docno="d1")
    judge = old.get_model("labeling", "Judge").objects.create(campaign=campaign, name="bm25", kind="lexical")
    old.get_model("labeling", "JudgeLabel").objects.create(
        judge=judge, qid="1", docno="d1", grade=2, judge_class=2
    )
    old.get_model("labeling", "SamplingState").objects.create(campaign=campaign, version=3, arrays=b"npz")
    old.get_model("labeling", "GoldItem").objects.create(
        campaign=campaign, topic=topic, document=document, grade=1, source="qrels"
    )
    old.get_model("labeling", "StagedRunLine").objects.create(
        import_key="k", file_index=0, qid="1", docno="d1", rank=1, score=2.5, line=7
    )
    stored = _moved_rows(old, "labeling", "labeling", "labeling")
    assert stored == ("bm25", (judge.pk, "d1", 2), (3, b"npz"), 1, 7)

    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate(leaves)
    new = executor.loader.project_state(leaves).apps
    rows = {row.arrival_id is None: row for row in new.get_model("labeling", "Verdict").objects.all()}
    assert (rows[True].outcome, rows[True].rule, rows[True].low, rows[True].returned) == (
        "better",
        "anytime",
        0.2,
        3.0,
    )
    assert (rows[True].first, rows[True].second) == ("a", "b")
    assert (rows[False].outcome, rows[False].rule, rows[False].high, rows[False].first) == (
        "worse",
        "fixed",
        -0.5,
        "c",
    )
    assert _moved_rows(new, "sampling", "graded", "uploads") == stored
    content_types = new.get_model("contenttypes", "ContentType").objects
    moved = ["judge", "golditem", "stagedrunline"]
    assert set(content_types.filter(model__in=moved).values_list("app_label", flat=True)) == {
        "sampling",
        "graded",
        "uploads",
    }

    executor = MigrationExecutor(connection)
    executor.migrate(before)
    back = executor.loader.project_state(before_state).apps
    restored = back.get_model("labeling", "Campaign").objects.get(pk=campaign.pk)
    assert (restored.verdict, restored.verdict_low, restored.verdict_returned) == ("better", 0.2, 3.0)
    arrival = back.get_model("labeling", "Arrival").objects.get(system_id=arrived.pk)
    assert (arrival.verdict, arrival.rule, arrival.decided_high) == ("worse", "fixed", -0.5)
    assert _moved_rows(back, "labeling", "labeling", "labeling") == stored
    content_types = back.get_model("contenttypes", "ContentType").objects
    assert set(content_types.filter(model__in=moved).values_list("app_label", flat=True)) == {"labeling"}
