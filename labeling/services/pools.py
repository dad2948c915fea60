"""A campaign's pool: the top documents of its pooled runs per topic, rebuilt after every run
upload, clone or arrival, and the items imported qrels already judge."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Exists, F, Max, OuterRef

from labeling.import_reports import BATCH_SIZE
from labeling.models import Campaign, Draw, Judgment, PoolItem, RankingEntry
from labeling.selectors import ranking_positions


def pool_mark_prejudged(*, campaign: Campaign) -> int:
    """Flag pool items that imported qrels already judge; returns how many were flagged."""
    judged = Judgment.objects.filter(
        campaign=campaign,
        source=Judgment.Source.QRELS,
        topic_id=OuterRef("topic_id"),
        document_id=OuterRef("document_id"),
    )
    return (
        PoolItem.objects.filter(campaign=campaign, prejudged=False)
        .filter(Exists(judged))
        .update(prejudged=True)
    )


def pool_rebuild(*, campaign: Campaign) -> int:
    """Pool the top-d documents of every run and topic (trec_eval order: score descending,
    docno descending); add new items and recompute best ranks. Returns the pool size.

    The positions are read first, outside any write (a reader blocks no one, on SQLite in WAL
    mode as on PostgreSQL: a 600,000-line run's positions take seconds to read, and an IMMEDIATE
    transaction around the read held every assessor's answer that long); the pool rows are then
    written in one short transaction (a savepoint inside a caller's). A rebuild that committed
    between the two (its pool version is newer than the one read) makes this one read again, so
    a stale read never overwrites a newer best rank.
    """
    depth = campaign.effective_pool_depth
    while True:
        version_read = Campaign.objects.values_list("pool_version", flat=True).get(pk=campaign.pk)
        positions = ranking_positions(
            RankingEntry.objects.filter(system__campaign=campaign, system__evaluation_only=False), depth
        ).values_list("topic_id", "document_id", "position")
        best: dict[tuple[int, int], int] = {}
        for topic_id, document_id, position in positions.iterator(chunk_size=BATCH_SIZE):
            key = (topic_id, document_id)
            if position < best.get(key, depth + 1):
                best[key] = position
        if _pool_write(campaign, best, version_read):
            break
    campaign.refresh_from_db(fields=["pool_version"])
    return PoolItem.objects.filter(campaign=campaign).count()


def _pool_write(campaign: Campaign, best: dict[tuple[int, int], int], version_read: int) -> bool:
    """Write the pool read at `version_read`; False (nothing written) when another rebuild
    committed since."""
    with transaction.atomic():
        # The cached pool arrays and the sampling state are keyed by this version. Bumped first:
        # the row lock it takes waits for a draw in progress (`tasks_top_up` locks the row), so
        # the last draw's order read next is the last one that could not pick a new item.
        bumped = Campaign.objects.filter(pk=campaign.pk, pool_version=version_read).update(
            pool_version=F("pool_version") + 1
        )
        if not bumped:
            return False
        last_draw = Draw.objects.filter(campaign=campaign).aggregate(last=Max("order"))["last"] or 0
        items = [
            PoolItem(
                campaign=campaign,
                topic_id=topic_id,
                document_id=document_id,
                best_rank=rank,
                drawable_after=last_draw,
            )
            for (topic_id, document_id), rank in best.items()
        ]
        PoolItem.objects.bulk_create(
            items,
            batch_size=BATCH_SIZE,
            update_conflicts=True,
            unique_fields=["campaign", "topic", "document"],
            update_fields=["best_rank"],
        )
        pool_mark_prejudged(campaign=campaign)
    return True
