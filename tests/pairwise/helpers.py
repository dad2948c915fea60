"""Helpers the tests of tests/pairwise/ share."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from labeling.models import Campaign, Document, Topic
from pairwise import services
from pairwise.models import Comparison, PairTask
from tests.pairwise.conftest import true_relevance


def client_for(user: AbstractBaseUser) -> Client:
    client = Client()
    client.force_login(user)
    return client


def oracle(left: str, right: str) -> str:
    difference = true_relevance(left) - true_relevance(right)
    return "left" if difference > 0 else "right" if difference < 0 else "tie"


def answer_pending(campaign: Campaign, user: AbstractBaseUser) -> PairTask | None:
    """Fetch the user's pending pair and answer it like the oracle; the task, or None."""
    task = services.pair_next(campaign=campaign, assessor=user)
    if task is not None:
        services.pair_answer(
            task=task, assessor=user, outcome=oracle(task.left.docno, task.right.docno), seconds=1.5
        )
    return task


def finish_all(campaign: Campaign, user: AbstractBaseUser) -> None:
    while answer_pending(campaign, user) is not None:
        pass


def record(campaign: Campaign, user: AbstractBaseUser, qid: str, left: str, right: str, outcome: str) -> None:
    """A stored answer without the judging flow (for hand-made agreement cases)."""
    document = {d.docno: d for d in Document.objects.filter(campaign=campaign)}
    Comparison.objects.create(
        campaign=campaign,
        topic=Topic.objects.get(campaign=campaign, qid=qid),
        assessor=user,
        left=document[left],
        right=document[right],
        outcome=outcome,
        seconds=1.0,
    )
