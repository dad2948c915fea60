"""Pair answers ask for the worker's recompute, which records the progress the campaign list shows
(it read 0 comparisons for a top-k campaign that had answers)."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser

from labeling import recompute as pipeline
from labeling.models import Campaign, CampaignProgress
from labeling.recompute import recompute
from pairwise import services
from tests.labeling.helpers import queued_recomputes


def test_answers_and_undo_ask_for_the_refresh_that_records_the_progress(
    topk_campaign: Campaign,
    assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
    api: Callable,
    django_capture_on_commit_callbacks: Callable,
) -> None:
    queued_recomputes()
    for outcome in ("left", "right", "tie"):
        task = services.pair_next(campaign=topk_campaign, assessor=assessor)
        with django_capture_on_commit_callbacks(execute=True):
            services.pair_answer(task=task, assessor=assessor, outcome=outcome, seconds=2.0)
    assert pipeline.recompute_soon_wait(timeout=10) is True
    assert queued_recomputes() == [[topk_campaign.pk]], "one coalesced recompute for the burst"

    recompute(topk_campaign.pk)  # what the worker runs
    assert CampaignProgress.objects.get(campaign=topk_campaign).judgments == 3
    listing = api(coordinator).get("/campaigns/").content.decode()
    row = listing.split(f'data-campaign="{topk_campaign.pk}"')[1].split("</tr>")[0]
    assert '<td class="num" data-label="Judged">3</td>' in row

    pipeline.recompute_started(topk_campaign.pk)
    with django_capture_on_commit_callbacks(execute=True):
        services.pair_undo(campaign=topk_campaign, assessor=assessor)
    assert pipeline.recompute_soon_wait(timeout=10) is True
    assert queued_recomputes() == [[topk_campaign.pk]], "an undo asks too"
    recompute(topk_campaign.pk)
    assert CampaignProgress.objects.get(campaign=topk_campaign).judgments == 2


def test_my_judgments_counts_the_comparisons_it_does_not_list(
    topk_campaign: Campaign, assessor: AbstractBaseUser, api: Callable
) -> None:
    for outcome in ("left", "tie"):
        task = services.pair_next(campaign=topk_campaign, assessor=assessor)
        services.pair_answer(task=task, assessor=assessor, outcome=outcome, seconds=2.0)
    page = api(assessor).get("/my-judgments/").content.decode()
    other = page.split('id="other-answers"')[1].split("</p>")[0]
    assert f"{topk_campaign.name}</a>: 2 comparisons" in other
    chosen = api(assessor).get(f"/my-judgments/?campaign={topk_campaign.pk}").content.decode()
    assert "2 comparisons" in chosen.split('id="other-answers"')[1]


def test_the_recorded_progress_counts_the_mode_s_own_open_units(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    # The core counted graded Task rows for every mode: 0 open for a top-k campaign with open heaps.
    from labeling.modes import campaign_progress

    task = services.pair_next(campaign=topk_campaign, assessor=assessor)
    services.pair_answer(task=task, assessor=assessor, outcome="left", seconds=2.0)
    recompute(topk_campaign.pk)
    record = CampaignProgress.objects.get(campaign=topk_campaign)
    open_units = campaign_progress(topk_campaign).open_tasks
    assert open_units > 0
    assert record.open_tasks == open_units
    assert Campaign.objects.get(pk=topk_campaign.pk).status == Campaign.Status.RUNNING
