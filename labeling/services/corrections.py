"""Corrections made by hand: discard a judgment so that its item is judged again."""

from __future__ import annotations

from django.db import transaction

from labeling.leases import lease_return
from labeling.models import Judgment, PoolItem, Task
from labeling.recompute import recompute_soon


@transaction.atomic
def judgment_discard(*, judgment: Judgment) -> None:
    """Delete a judgment (a bad or mistaken one) and put its item back to be judged.

    An assessor's judgment: its task opens again, without assessor or lease, in its place in
    the queue and under the same draw and propensity, so the estimators still see one draw and,
    soon, one judgment for it. Imported qrels: the pool item is no longer prejudged (unless
    other qrels judge it), so sampling may draw it. Deleting the row alone would leave the item
    marked drawn or prejudged, and nobody would ever judge it again.
    """
    judgment = Judgment.objects.select_for_update().get(pk=judgment.pk)
    campaign_id, topic_id, document_id = judgment.campaign_id, judgment.topic_id, judgment.document_id
    task_id, source = judgment.task_id, judgment.source
    judgment.delete()
    if task_id is not None:
        lease_return(Task, task_id, answered_at=None)
    elif source == Judgment.Source.QRELS:
        pair = {"campaign_id": campaign_id, "topic_id": topic_id, "document_id": document_id}
        if not Judgment.objects.filter(source=Judgment.Source.QRELS, **pair).exists():
            PoolItem.objects.filter(**pair).update(prejudged=False)
    transaction.on_commit(lambda: recompute_soon(campaign_id))
