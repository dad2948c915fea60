"""Helpers the tests of tests/sxs/ share."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from graded.judging import task_answer
from labeling.models import Campaign
from sxs import services


def answer_grades_first(campaign: Campaign, user: AbstractBaseUser) -> services.Item | None:
    """Grade whatever is served until a comparison (or nothing) comes; grades by document number."""
    while True:
        item = services.sxs_next(campaign=campaign, assessor=user)
        if item is None or item.kind == "sxs":
            return item
        grade = int(item.grade.document.docno.rsplit("-", 1)[1]) % 3
        task_answer(task=item.grade, assessor=user, grade=grade, seconds=2.0)
