"""Celery tasks: thin wrappers that take ids and call a service; safe to run twice.

`campaign_recompute` runs the recompute pipeline (`labeling.recompute.recompute`): each mode's own
recompute after answers (the graded mode refits the label model and costs, recomputes the
sampling distribution, tops up the draws, stores an estimate snapshot), then the progress record.
It is coalesced per campaign, runs one at a time per campaign across workers and is queued again
by a live worker's sweep when a dead worker took it down (see `labeling.recompute`); acknowledged
late and retried on transient database errors. Its message keeps the name
``labeling.tasks.campaign_refresh`` of earlier versions. When a worker starts, it queues a
(coalesced) recompute of every running campaign, so whatever was judged while no worker ran is
caught up, and starts its sweep thread (`labeling.sweeper`).
"""

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import OperationalError

from infrastructure.unavailable import UNAVAILABLE

logger = logging.getLogger(__name__)


@shared_task(
    name="labeling.tasks.campaign_refresh",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def campaign_recompute(campaign_id: int, only_if_owed: bool = False) -> str:
    """The campaign's recompute after answers (`labeling.recompute.recompute_if_free`); queued
    again after the spacing when another worker is recomputing the campaign."""
    from labeling.recompute import RecomputeResult, recompute_if_free, recompute_queue_later

    outcome = recompute_if_free(campaign_id, only_if_owed=only_if_owed)
    if outcome == RecomputeResult.BUSY and not only_if_owed:
        recompute_queue_later(campaign_id)
    return outcome


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def campaigns_catch_up() -> int:
    """Queue a recompute of every running or paused campaign (when a worker starts), coalesced with
    any recompute already queued: two workers starting together queue one per campaign, not two.
    Returns how many this call queued."""
    from labeling.models import Campaign
    from labeling.recompute import recompute_queue

    ids = list(
        Campaign.objects.filter(status__in=[Campaign.Status.RUNNING, Campaign.Status.PAUSED]).values_list(
            "pk", flat=True
        )
    )
    return sum(recompute_queue(campaign_id) for campaign_id in ids)


@worker_ready.connect
def _catch_up_on_start(**_: object) -> None:
    from labeling.sweeper import sweeper_start

    sweeper_start()
    try:
        campaigns_catch_up.delay()
    # A worker must start even if the broker hiccups; the next judgment catches up.
    except UNAVAILABLE as error:
        logger.warning("could not queue the catch-up recompute: %r", error)
    except Exception:
        logger.exception("could not queue the catch-up recompute")
