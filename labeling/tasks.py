"""Celery tasks: thin wrappers that take ids and call a service; safe to run twice.

`campaign_refresh` is the recompute pipeline (`labeling.services.campaigns.campaign_refresh`):
refit the label model and costs, recompute the sampling distribution, top up the draws, store
an estimate snapshot. It is coalesced per campaign (see `labeling.services.refresh`),
acknowledged late (a worker killed mid-task leaves it to be redelivered) and retried on
transient database errors. When a worker starts, it queues a refresh of every running
campaign: whatever was judged while no worker ran (or whose refresh died with a killed
worker) is caught up.
"""

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import OperationalError

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def campaign_refresh(campaign_id: int) -> None:
    """Refit theta and costs, recompute q, top up the draws, snapshot the estimates."""
    from labeling.services import campaign_refresh as refresh

    refresh(campaign_id=campaign_id)


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def campaigns_catch_up() -> int:
    """Refresh every running or paused campaign (queued when a worker starts)."""
    from labeling.models import Campaign
    from labeling.services import campaign_refresh as refresh

    ids = list(
        Campaign.objects.filter(status__in=[Campaign.Status.RUNNING, Campaign.Status.PAUSED]).values_list(
            "pk", flat=True
        )
    )
    for campaign_id in ids:
        refresh(campaign_id=campaign_id)
    return len(ids)


@worker_ready.connect
def _catch_up_on_start(**_: object) -> None:
    try:
        campaigns_catch_up.delay()
    except Exception:  # a worker must start even if the broker hiccups; the next judgment catches up
        logger.exception("could not queue the catch-up refresh")
