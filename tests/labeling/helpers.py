"""Helpers the core's tests and other apps' share: the recomputes a test queued, judging a whole campaign."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from config.celery import app as celery_app
from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign


def judge_everything(campaign: Campaign, assessor: AbstractBaseUser) -> dict[tuple[str, str], int]:
    grades = {}
    step = 0
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        grade = step % campaign.grade_count
        task_answer(task=task, assessor=assessor, grade=grade, seconds=1.0 + step)
        grades[(task.topic.qid, task.document.docno)] = grade
        step += 1
    return grades


def judge_some(campaign: Campaign, assessor: AbstractBaseUser, count: int, grade: int = 1) -> None:
    """The assessor judges `count` items (the campaign must have them), each `grade` in 2 s."""
    for _ in range(count):
        task = task_next(campaign=campaign, assessor=assessor)
        assert task is not None
        task_answer(task=task, assessor=assessor, grade=grade, seconds=2.0)


def queued_messages() -> list[tuple[str, list[object]]]:
    """Every message on the in-memory broker, taken off it: (task name, arguments)."""
    found = []
    with celery_app.connection_for_write() as connection:
        queue = connection.SimpleQueue("celery")
        while queue.qsize():
            message = queue.get(timeout=1)
            found.append((str(message.headers["task"]), list(message.decode()[0])))
            message.ack()
    return found


def queued_recomputes() -> list[list[int]]:
    """The arguments of the campaign_refresh messages on the in-memory broker (every message is
    taken off it; other tasks an earlier test queued, e.g. a judge run's step, are dropped)."""
    return [args for task, args in queued_messages() if task == "labeling.tasks.campaign_refresh"]
