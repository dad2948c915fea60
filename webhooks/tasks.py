"""The webhooks worker's tasks (thin): one delivery attempt, and the resumption of every due
delivery when a worker starts. They keep the names they had in the core app
(``labeling.tasks...``), so messages queued before webhooks had an app of their own still run;
`settings.CELERY_TASK_ROUTES` sends them to the ``webhooks`` queue."""

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import OperationalError

logger = logging.getLogger(__name__)


@shared_task(
    name="labeling.tasks.webhook_deliver",  # webhooks.deliveries.DELIVER_TASK: it queues by name
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def webhook_deliver(delivery_id: int) -> str:
    """One attempt of a webhook delivery (`webhooks.deliveries`); a failed one queues the next
    after its backoff, a deferred one (its receiver busy) after one attempt's deadline. Routed
    to the ``webhooks`` queue, which its own worker serves, so a slow or failing receiver never
    holds up the recomputes. No Celery time limit: the attempt's own deadline bounds it (the
    threads pool the webhooks worker runs could not enforce one)."""
    from webhooks.deliveries import deliveries_queue, delivery_attempt

    outcome, wait = delivery_attempt(delivery_id)
    if outcome in ("retry", "deferred"):
        deliveries_queue([delivery_id], countdown=wait)
    return outcome


@shared_task(name="labeling.tasks.webhook_deliveries_resume", acks_late=True)
def webhook_deliveries_resume() -> int:
    """Queue every pending delivery that is due (after a worker stopped with some queued)."""
    from webhooks.deliveries import deliveries_resume

    return deliveries_resume()


@worker_ready.connect
def _resume_on_start(**_: object) -> None:
    try:
        webhook_deliveries_resume.delay()
    except Exception as error:  # nothing is lost: pending deliveries wait for the next start
        logger.warning("could not queue the pending webhook deliveries (%s); the next start will", error)
