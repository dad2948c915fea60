"""While the judged strategy's first stage is drawn and its calibration not yet fitted, an
assessor with nothing to judge is told items are being prepared ("refitting"), not that
nothing is left; once the worker refits, items come again."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from graded.judging import task_answer
from labeling.models import Campaign
from labeling.recompute import recompute
from labeling.services.campaigns import campaign_assessors_assign, campaign_start, campaign_update
from sampling import judge_create, judge_labels_import
from tests.conftest import upload
from tests.sampling.helpers import human_grade, pool_labels


def test_an_assessor_waiting_for_the_calibration_is_told_so(
    draft_campaign: Campaign, assessor: AbstractBaseUser, api: Callable[[AbstractBaseUser], APIClient]
) -> None:
    campaign_update(campaign=draft_campaign, budget=18, strategy="judged")  # first stage: 10 labels
    judge = judge_create(campaign=draft_campaign, name="lenient")
    judge_labels_import(judge=judge, files=[upload("judge.txt", pool_labels())])
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    client = api(assessor)
    states = []
    for _ in range(40):
        response = client.get(f"/api/campaigns/{campaign.pk}/next/")
        if response.status_code == 204:
            progress = client.get(f"/api/campaigns/{campaign.pk}/progress/").json()
            states.append(progress["state"])
            if progress["state"] != "refitting":
                break
            assert "refitted" in progress["message"]
            recompute(campaign.pk)  # the worker's job: fits the calibration, draws again
            continue
        task = campaign.tasks.get(pk=response.json()["task"])
        task_answer(task=task, assessor=assessor, grade=human_grade(task.document.docno), seconds=1.0)
    # Answers without a recompute exhaust the first stage: the page says "refitting", and the
    # recompute brings items back until the budget is spent.
    assert states[0] == "refitting" and states[-1] == "budget_spent"
