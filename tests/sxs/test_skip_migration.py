"""Migration sxs 0003: a legacy SxsSkip without its core Skip is copied into Skip (reason and note
read back from the stored "label: note"), one that has its Skip is not copied twice, and the
SxsSkip table goes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.migration_sandbox import migration_sandbox

# Also in the PostgreSQL part of `make test` (tests/test_database_specific.py): a data migration.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql]

BEFORE = [("sxs", "0002_fit_settings"), ("labeling", "0022_judge_calls_not_sent")]
AFTER = [("sxs", "0003_sxsskip_into_skip")]


@pytest.fixture
def at_sxs_0002(tmp_path: Path) -> Iterator[MigrationExecutor]:
    """A database of its own migrated forward to the state before sxs 0003 (cheaper than taking
    the test database back: tests/migration_sandbox.py)."""
    with migration_sandbox(tmp_path):
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        yield executor


def test_legacy_skips_move_into_the_core_skip_table_once_and_back(at_sxs_0002: MigrationExecutor) -> None:
    old = at_sxs_0002.loader.project_state(BEFORE).apps
    user = old.get_model("auth", "User").objects.create(username="alice")
    campaign = old.get_model("labeling", "Campaign").objects.create(name="sxs", judging_mode="sxs")
    topic = old.get_model("labeling", "Topic").objects.create(campaign=campaign, qid="1", title="t")
    system = old.get_model("labeling", "System").objects.create(campaign=campaign, name="a")
    task_model = old.get_model("sxs", "SxsTask")
    tasks = [
        task_model.objects.create(
            campaign=campaign,
            topic=topic,
            system_a=system,
            system_b=system,
            unit=unit,
            documents_a=[],
            documents_b=[],
            a_on_left=True,
        )
        for unit in range(3)
    ]
    legacy = old.get_model("sxs", "SxsSkip")
    legacy.objects.create(campaign=campaign, task=tasks[0], assessor=user, reason="Not sure: both equal")
    legacy.objects.create(campaign=campaign, task=tasks[1], assessor=user, reason="a reason of its own")
    legacy.objects.create(campaign=campaign, task=tasks[2], assessor=user, reason="Other")
    old.get_model("labeling", "Skip").objects.create(
        campaign=campaign, assessor=user, kind="sxs", unit=tasks[2].pk, topic=topic, reason="other"
    )

    at_sxs_0002.loader.build_graph()
    at_sxs_0002.migrate(AFTER)
    new = at_sxs_0002.loader.project_state(AFTER).apps
    skips = new.get_model("labeling", "Skip").objects.order_by("unit")
    assert [(s.unit, s.kind, s.reason, s.note, s.topic_id) for s in skips] == [
        (tasks[0].pk, "sxs", "not_sure", "both equal", topic.pk),
        (tasks[1].pk, "sxs", "other", "a reason of its own", topic.pk),
        (tasks[2].pk, "sxs", "other", "", topic.pk),
    ]
    assert "sxs_sxsskip" not in connection.introspection.table_names()

    # Backwards, the older code's table comes back with one row per side-by-side skip.
    at_sxs_0002.loader.build_graph()
    at_sxs_0002.migrate(BEFORE)
    back = at_sxs_0002.loader.project_state(BEFORE).apps
    restored = back.get_model("sxs", "SxsSkip").objects.order_by("task_id").values_list("task_id", "reason")
    assert list(restored) == [
        (tasks[0].pk, "Not sure: both equal"),
        (tasks[1].pk, "Other: a reason of its own"),
        (tasks[2].pk, "Other"),
    ]
