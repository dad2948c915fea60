"""Celery tasks: thin wrappers that take ids and call a service; safe to run twice.

`campaign_recompute` runs the recompute pipeline (`labeling.recompute.recompute`): each mode's own
recompute after answers (the graded mode refits the label model and costs, recomputes the
sampling distribution, tops up the draws, stores an estimate snapshot), then the progress record.
It is coalesced per campaign (see `labeling.recompute`), acknowledged late (a worker killed
mid-task leaves it to be redelivered) and retried on transient database errors. Its message keeps
the name ``labeling.tasks.campaign_refresh`` of earlier versions. When a worker starts, it queues
a recompute of every running campaign: whatever was judged while no worker ran (or whose
recompute died with a killed worker) is caught up.
"""

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import OperationalError

logger = logging.getLogger(__name__)


@shared_task(
    name="labeling.tasks.campaign_refresh",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def campaign_recompute(campaign_id: int) -> None:
    """The campaign's recompute after answers (`labeling.recompute.recompute`)."""
    from labeling.recompute import recompute

    recompute(campaign_id)


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def campaigns_catch_up() -> int:
    """Recompute every running or paused campaign (queued when a worker starts)."""
    from labeling.models import Campaign
    from labeling.recompute import recompute

    ids = list(
        Campaign.objects.filter(status__in=[Campaign.Status.RUNNING, Campaign.Status.PAUSED]).values_list(
            "pk", flat=True
        )
    )
    for campaign_id in ids:
        recompute(campaign_id)
    return len(ids)


@worker_ready.connect
def _catch_up_on_start(**_: object) -> None:
    try:
        campaigns_catch_up.delay()
    except Exception:  # a worker must start even if the broker hiccups; the next judgment catches up
        logger.exception("could not queue the catch-up recompute")
