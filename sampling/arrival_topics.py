"""A run that arrives in a query-level campaign (topics drawn whole): its documents on the topics
already drawn are judged first, then the rest of the top-up is spent on new topic draws.

A drawn topic counts in the estimates once every pool document of it is judged
(`sampling.level_estimates.counted_query_draws`), so the estimator needs no change: the draws
keep their propensities (every topic stayed drawable), and the arrival's value on a drawn topic
is known exactly once its new documents are judged. The cost of that completion is known before
anything is stored, so an arrival whose top-up cannot pay it is refused with the amount needed.
While the completion is judged, the drawn topics it touches wait (they count again when it is
done); its tasks hang on the topic's first draw, so they are served before any new draw's.
"""

from __future__ import annotations

import numpy as np
from django.db.models import QuerySet

from labeling.models import Arrival, Campaign, Document, Draw, Judgment, PoolItem, Task
from sampling.draws import documents_cost
from sampling.state import stored_cost_model
from uploads.run_imports import StagedRuns


def completion_needed(campaign: Campaign, staged: StagedRuns) -> tuple[int, float]:
    """(documents, cost in the budget's unit) that completing the drawn topics would take once
    the staged run is pooled: its top documents there that are neither pooled nor judged by
    imported qrels, and pool documents of drawn topics no task covers yet."""
    drawn = dict(_drawn_topics(campaign).values_list("topic__qid", "topic_id").distinct())
    if not drawn:
        return 0, 0.0
    depth = campaign.effective_pool_depth
    known = set(
        PoolItem.objects.filter(campaign=campaign, topic_id__in=drawn.values()).values_list(
            "topic__qid", "document__docno"
        )
    ) | set(
        Judgment.objects.filter(
            campaign=campaign, source=Judgment.Source.QRELS, topic_id__in=drawn.values()
        ).values_list("topic__qid", "document__docno")
    )
    new = [
        (qid, docno)
        for file_index in range(staged.file_count)
        for qid, docnos in staged.top_documents(file_index, set(drawn), depth).items()
        for docno in docnos
        if (qid, docno) not in known
    ]
    lengths = dict(
        Document.objects.filter(campaign=campaign, docno__in={docno for _, docno in new}).values_list(
            "docno", "length"
        )
    )
    uncovered = list(_uncovered(campaign).values_list("document__length", flat=True))
    every = [lengths.get(docno) for _, docno in new] + uncovered
    known_lengths = np.array([np.nan if length is None else float(length) for length in every])
    return len(every), documents_cost(campaign, stored_cost_model(campaign), known_lengths)


def drawn_topics_complete(campaign: Campaign, arrival: Arrival) -> int:
    """Tasks of `arrival`'s top-up for every pool document of a drawn topic that no task covers
    (nor imported qrels), on the topic's first draw; returns the number of documents given tasks.
    Call it inside the transaction that records the arrival."""
    first_draw = {
        topic_id: (draw_id, order)
        for topic_id, draw_id, order in _drawn_topics(campaign)
        .order_by("-order")
        .values_list("topic_id", "id", "order")
    }
    items = list(_uncovered(campaign).values_list("id", "topic_id", "document_id"))
    Task.objects.bulk_create(
        [
            Task(
                campaign=campaign,
                arrival=arrival,
                draw_id=first_draw[topic_id][0],
                pool_item_id=item_id,
                slot=copy,
                order=first_draw[topic_id][1],
                topic_id=topic_id,
                document_id=document_id,
            )
            for item_id, topic_id, document_id in items
            for copy in range(campaign.overlap)
        ],
        batch_size=2000,
    )
    PoolItem.objects.filter(pk__in=[item_id for item_id, _, _ in items]).update(drawn=True)
    return len(items)


def _drawn_topics(campaign: Campaign) -> QuerySet[Draw]:
    return Draw.objects.filter(campaign=campaign, kind=Draw.Kind.QUERY)


def _uncovered(campaign: Campaign) -> QuerySet[PoolItem]:
    """Pool documents of drawn topics with no task and no imported judgment."""
    return PoolItem.objects.filter(
        campaign=campaign,
        drawn=False,
        prejudged=False,
        topic_id__in=_drawn_topics(campaign).values("topic_id"),
    )


__all__ = ["completion_needed", "drawn_topics_complete"]
