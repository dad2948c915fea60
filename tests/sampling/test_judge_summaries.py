"""The judges' summaries read the label table a fixed number of times per request, whatever the
number of judges: a count over every label once per judge took minutes with a million labels
outside the pool (the judges list, the campaign page and the dashboard)."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from labeling.models import Campaign
from sampling.models import Judge, JudgeLabel
from tests.conftest import PASSWORD


def judges_with_labels(campaign: Campaign, count: int) -> None:
    for number in range(len(campaign.judges.all()), count):
        judge = Judge.objects.create(campaign=campaign, name=f"judge {number}", model="m")
        JudgeLabel.objects.bulk_create(
            [
                JudgeLabel(judge=judge, qid="1", docno="d1-1", grade=1, judge_class=1, version=1),
                JudgeLabel(judge=judge, qid="1", docno="d1-2", grade=0, judge_class=0, version=2),
                JudgeLabel(judge=judge, qid="1", docno="outside", grade=0, judge_class=0, version=3),
                JudgeLabel(judge=judge, qid="x", docno="y", grade=2, judge_class=2, human_grade=2),
            ]
        )


def label_reads(get: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as queries:
        get()
    return sum("labeling_judgelabel" in query["sql"] for query in queries.captured_queries)


def test_the_judges_list_reads_the_labels_the_same_number_of_times_for_one_judge_or_five(
    api: Callable[[AbstractBaseUser | None], APIClient], coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    client = api(coordinator)
    url = f"/api/campaigns/{campaign.pk}/judges/"
    judges_with_labels(campaign, 1)
    one = label_reads(lambda: client.get(url))
    judges_with_labels(campaign, 5)
    listed = client.get(url).json()
    assert label_reads(lambda: client.get(url)) == one
    assert [judge["coverage"] for judge in listed] == [
        {"labelled": 2, "pool": 21, "outside": 1, "labels": 3}
    ] * 5
    assert [judge["calibration_set"] for judge in listed] == [1] * 5
    # The versions warning is about the pool: version 3 labelled only outside it.
    assert all(
        any("2 versions of" in warning and "(1, 2)" in warning for warning in judge["warnings"])
        for judge in listed
    )


def test_the_campaign_page_and_dashboard_read_the_labels_a_fixed_number_of_times(
    coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    browser = Client()
    assert browser.login(username=coordinator.get_username(), password=PASSWORD)
    pages = [
        reverse("labeling:campaign_detail", args=[campaign.pk]),
        reverse("labeling:campaign_dashboard", args=[campaign.pk]),
    ]
    judges_with_labels(campaign, 1)
    one = [label_reads(lambda page=page: browser.get(page)) for page in pages]
    judges_with_labels(campaign, 5)
    assert [label_reads(lambda page=page: browser.get(page)) for page in pages] == one
