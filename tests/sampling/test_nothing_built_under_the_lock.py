"""Nothing slow happens under the campaign's row lock (on SQLite, the database's write lock that
every assessor's answer waits for): after a run is pooled, the pool arrays and the label model's
fit are made before a top-up locks the row, a look-ahead top-up leaves a stale state to the
worker, one thread builds a pool version while the others wait for it, and a pool rebuild whose
read went stale reads again instead of writing it."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign, PoolItem, Task
from labeling.services.pools import _pool_write, pool_rebuild
from sampling.draws import draws_top_up
from sampling.models import SamplingState
from sampling.pool_arrays import pool_arrays_for, pool_arrays_forget
from sampling.state import sampling_state_current, sampling_state_fresh
from tests.conftest import upload
from uploads.run_imports import runs_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = [pytest.mark.postgresql, pytest.mark.django_db]

RUN_C = "".join(
    f"{topic} Q0 c-{topic}-{rank} {rank} {10 - rank} c\n" for topic in (1, 2) for rank in range(1, 6)
)


def _state_version(campaign: Campaign) -> int:
    return SamplingState.objects.get(campaign=campaign).version


def test_a_look_ahead_top_up_leaves_a_stale_state_to_the_worker(campaign: Campaign) -> None:
    draws_top_up(campaign_id=campaign.pk)
    fitted = _state_version(campaign)
    runs_import(campaign=campaign, files=[upload("c.run", RUN_C)])  # a new pool version
    campaign.refresh_from_db()
    assert sampling_state_fresh(campaign) is None
    tasks_before = Task.objects.filter(campaign=campaign).count()

    assert draws_top_up(campaign_id=campaign.pk, at_least=1, refit=False) == 0
    assert _state_version(campaign) == fitted, "no refit in a request that has its task"
    assert Task.objects.filter(campaign=campaign).count() == tasks_before

    made = draws_top_up(campaign_id=campaign.pk, at_least=1)  # the queue ran dry: refit, then draw
    assert made > 0 and _state_version(campaign) == fitted + 1
    assert sampling_state_fresh(campaign) is not None


@pytest.mark.django_db(transaction=True)  # the threads read the pool through their own connections
def test_one_thread_builds_a_pool_version_and_the_others_wait_for_it(campaign: Campaign) -> None:
    pool_arrays_forget()
    results: list[object] = []
    start = threading.Barrier(4)

    def read() -> None:
        from django.db import connection

        start.wait()
        try:
            results.append(pool_arrays_for(campaign))
        finally:
            connection.close()

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    assert all(arrays is results[0] for arrays in results), "each thread built its own copy"


def test_a_rebuild_whose_read_went_stale_reads_again(
    campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    version = Campaign.objects.get(pk=campaign.pk).pool_version
    items_before = set(PoolItem.objects.filter(campaign=campaign).values_list("document_id", "best_rank"))
    # Another rebuild committed after this one read the pool: its write is refused, nothing stored.
    Campaign.objects.filter(pk=campaign.pk).update(pool_version=version + 1)
    topic_id, document_id = next(iter(items_before))
    assert not _pool_write(campaign, {(topic_id, document_id): 99}, version)
    assert (
        set(PoolItem.objects.filter(campaign=campaign).values_list("document_id", "best_rank"))
        == items_before
    )
    assert Campaign.objects.get(pk=campaign.pk).pool_version == version + 1

    runs_import(campaign=campaign, files=[upload("c.run", RUN_C)])
    size = pool_rebuild(campaign=campaign)  # reads the version it writes
    assert size == PoolItem.objects.filter(campaign=campaign).count() > len(items_before)
    assert sampling_state_current(Campaign.objects.get(pk=campaign.pk)) is not None
