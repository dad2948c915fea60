"""Celery tasks of the graded mode's judges: one step of a judge run (`sampling.judge_runs`),
and on worker start the resumption of every active run (a killed worker's included)."""

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import OperationalError

from infrastructure.unavailable import UNAVAILABLE

logger = logging.getLogger(__name__)


@shared_task(
    name="graded.tasks.judge_run_step",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def judge_run_step(run_id: int, waited_for: str | None = None) -> str:
    """One step of a judge run; it queues the next one itself."""
    from sampling import judge_run_step as step

    return step(run_id, waited_for)


@shared_task(
    name="graded.tasks.judge_runs_resume",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def judge_runs_resume() -> int:
    """Queue a step of every active judge run."""
    from sampling import judge_runs_resume as resume

    return resume()


@worker_ready.connect
def _resume_on_start(**_: object) -> None:
    try:
        judge_runs_resume.delay()
    except UNAVAILABLE as error:  # a worker must start even if the broker hiccups
        logger.warning("could not queue the judge runs' resumption: %r", error)
    except Exception:
        logger.exception("could not queue the judge runs' resumption")
