"""The dashboard's judges panel reads without a wrong conclusion: the judge-only value is placed
against the certified interval (not "judge minus certified"), the compared pair's difference is
shown under the judge alone and certified with whether the judge alone orders it right, the
systems the design does not aim at are marked, unlabelled pairs are said to count as grade 0,
and Kendall's tau is labelled as a comparison with the certified order, not the truth."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign
from labeling.recompute import recompute
from labeling.services.campaigns import campaign_assessors_assign, campaign_start, campaign_update
from sampling import judge_create, judge_labels_import, judges_dashboard
from sampling.judge_reports import _against_interval, _judged_difference
from tests.conftest import upload
from tests.sampling.helpers import human_grade, judge_grade


@pytest.mark.parametrize(
    ("value", "where"), [(0.5, "below"), (1.0, "inside"), (2.0, "inside"), (2.5, "above"), (None, None)]
)
def test_the_judge_only_value_is_placed_against_the_interval(value: float | None, where: str | None) -> None:
    assert _against_interval(value, 1.0, 2.0) == where


@pytest.mark.parametrize(
    ("judge_a", "judge_b", "low", "high", "order"),
    [
        (3.0, 1.0, 0.5, 2.5, "right"),
        (1.0, 3.0, 0.5, 2.5, "wrong"),  # the field report: DeepSeek-V3's difference had the wrong sign
        (1.0, 3.0, -2.5, -0.5, "right"),
        (3.0, 1.0, -0.5, 2.5, "unsettled"),
    ],
)
def test_the_difference_says_whether_the_judge_alone_orders_the_pair_right(
    judge_a: float, judge_b: float, low: float, high: float, order: str
) -> None:
    certified = {"systems": ["a", "b"], "value": (low + high) / 2, "low": low, "high": high}
    shown = _judged_difference(certified, {"a": judge_a, "b": judge_b})
    assert shown is not None
    assert shown["judge_only"] == judge_a - judge_b and shown["judge_order"] == order


def test_the_panel_marks_the_compared_systems_and_the_unlabelled_pairs(
    draft_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    campaign_update(campaign=draft_campaign, budget=10, strategy="judged", goal="difference")
    judge = judge_create(campaign=draft_campaign, name="lenient", model="m")
    # The judge leaves topic 3 out: 7 of the pool's 21 items unlabelled.
    labels = "".join(f"{q} 0 d{q}-{d} {judge_grade(f'd{q}-{d}')}\n" for q in (1, 2) for d in range(1, 8))
    judge_labels_import(judge=judge, files=[upload("judge.txt", labels)])
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=human_grade(task.document.docno), seconds=1.0)
        recompute(campaign.pk)
    panel = judges_dashboard(Campaign.objects.get(pk=campaign.pk))
    assert [row["aimed_at"] for row in panel["systems"]] == [True, True]
    assert all("gap" not in row for row in panel["systems"])
    assert (panel["unlabelled"], panel["pool"]) == (7, 21)
    difference = panel["difference"]
    assert difference is not None and difference["systems"] == ["alpha", "beta"]
    assert difference["judge_order"] in {"right", "wrong", "unsettled"}
    client = Client()
    client.force_login(coordinator)
    page = " ".join(client.get(f"/campaigns/{campaign.pk}/dashboard/").content.decode().split())
    assert "the 7 of the pool's 21 items it has not labelled count as grade 0" in page
    assert 'id="judge-difference"' in page and "The compared pair: alpha minus beta" in page
    assert "not with the truth" in page
    assert "Judge minus certified" not in page


def test_per_topic_kappas_on_few_items_are_not_shown(
    draft_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    campaign_update(campaign=draft_campaign, budget=8, strategy="judged")
    judge = judge_create(campaign=draft_campaign, name="lenient", model="m")
    labels = "".join(f"{q} 0 d{q}-{d} {judge_grade(f'd{q}-{d}')}\n" for q in (1, 2, 3) for d in range(1, 8))
    judge_labels_import(judge=judge, files=[upload("judge.txt", labels)])
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=human_grade(task.document.docno), seconds=1.0)
        recompute(campaign.pk)
    client = Client()
    client.force_login(coordinator)
    page = client.get(f"/campaigns/{campaign.pk}/dashboard/").content.decode()
    # At most 7 items per topic both labelled: no per-topic kappa is shown, each row says why.
    rows = page.split('<tr data-topic="')[1:]
    assert rows and all("too few items" in row.split("</tr>")[0] for row in rows)


def test_the_judge_exports_show_only_where_a_judge_is(
    draft_campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    client = Client()
    client.force_login(coordinator)
    url = f"/campaigns/{draft_campaign.pk}/dashboard/"
    without = client.get(url).content.decode()
    assert "export/judge-labels.csv" not in without and "export/judges.json" not in without
    # The download itself answers either way.
    assert client.get(f"/api/campaigns/{draft_campaign.pk}/export/judges.json").status_code == 200
    judge_create(campaign=draft_campaign, name="lenient", model="m")
    with_judge = client.get(url).content.decode()
    for name in ("judges.json", "judge-labels.csv", "judge-calls.csv", "judged-sample.csv"):
        assert f"export/{name}" in with_judge
