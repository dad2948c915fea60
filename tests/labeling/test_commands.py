"""The demo command, and the Django admin for every model."""

from __future__ import annotations

import io

import pytest
from django.apps import apps
from django.contrib import admin as django_admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management import call_command
from django.test import Client

from demo.loading import DEMO_PASSWORD, DEMO_USERS, RUN_NOISE, demo_collection, demo_load
from graded.demo import DEMO_CAMPAIGN, DEMO_HISTORY_JUDGMENTS, DEMO_JUDGED_CAMPAIGN
from labeling.models import Campaign, Judgment, System
from labeling.permissions import user_role
from pairwise.demo import DEMO_TOPK_CAMPAIGN
from sampling.models import EstimateSnapshot


@pytest.mark.django_db
def test_it_loads_the_demo_once_and_prints_working_logins() -> None:
    out = io.StringIO()
    call_command("demo", stdout=out)
    call_command("demo", stdout=out)
    campaign = Campaign.objects.get(name=DEMO_CAMPAIGN)
    assert Campaign.objects.filter(name=DEMO_CAMPAIGN).count() == 1
    assert campaign.status == Campaign.Status.RUNNING
    assert sorted(System.objects.filter(campaign=campaign).values_list("name", flat=True)) == sorted(
        RUN_NOISE
    )
    assert campaign.topics.exclude(description="").count() == campaign.topics.count() > 0
    assert not campaign.documents.filter(is_stub=True).exists()
    # The demo comes with a judging history with the hidden grades, and estimates to show.
    _, _, _, hidden = demo_collection()
    history = Judgment.objects.filter(campaign=campaign, assessor__username="demo-assessor2")
    assert history.count() >= DEMO_HISTORY_JUDGMENTS
    assert all(
        hidden[(j.topic.qid, j.document.docno)] == j.grade
        for j in history.select_related("topic", "document")
    )
    assert EstimateSnapshot.objects.filter(campaign=campaign).count() >= 2
    # The first dashboard shows real intervals: every system's estimate is reliable.
    latest = EstimateSnapshot.objects.filter(campaign=campaign).latest("created_at", "id")
    assert latest.data["systems"] and all(row["reliable"] for row in latest.data["systems"])
    # Beside it, a top-k campaign on the same collection, for trying pairwise judging.
    topk = Campaign.objects.get(name=DEMO_TOPK_CAMPAIGN)
    assert (topk.judging_mode, topk.status, topk.overlap) == ("topk", Campaign.Status.RUNNING, 2)
    assert topk.topics.count() == campaign.topics.count()
    assert Campaign.objects.filter(name=DEMO_TOPK_CAMPAIGN).count() == 1
    # Every demo campaign is printed with its mode, the training app's included.
    campaigns, created = demo_load()
    assert not created and campaigns[0] == campaign, "loaded once: a third load keeps them all"
    assert [demo.judging_mode for demo in campaigns] == ["graded", "graded", "topk", "sxs", "training"]
    # The judge-assisted demo: the built-in lexical judge labelled the pool (no network), named
    # as weak, and the assessors' history certifies its DCG.
    judged = campaigns[1]
    assert judged.name == DEMO_JUDGED_CAMPAIGN and judged.strategy == "judged"
    (judge,) = judged.judges.all()
    assert judge.kind == "lexical" and "weak" in judge.model and not judge.simulated
    assert judge.labels.count() == judged.pool_items.count()
    assert judge.runs.get().status == "done" and judge.thresholds["source"] == "default shares"
    latest_judged = EstimateSnapshot.objects.filter(campaign=judged).latest("created_at", "id")
    dcg = [row for row in latest_judged.data["systems"] if row["metric"] == "DCG@10"]
    assert dcg and all(row["value"] is not None and row["judge_only"] is not None for row in dcg)
    assert all(demo.name in out.getvalue() for demo in campaigns)
    for username, role in DEMO_USERS:
        assert f"{username} / {DEMO_PASSWORD}" in out.getvalue()
        client = Client()
        assert client.login(username=username, password=DEMO_PASSWORD)
        assert user_role(get_user_model().objects.get(username=username)) == role


def test_it_generates_runs_whose_quality_follows_their_noise() -> None:
    _, _, runs, grades = demo_collection()

    def precision_at_5(text: str) -> float:
        top: dict[str, list[str]] = {}
        for line in text.splitlines():
            qid, _, docno, rank, _, _ = line.split()
            if int(rank) <= 5:
                top.setdefault(qid, []).append(docno)
        hits = [grades[(qid, docno)] >= 2 for qid, docnos in top.items() for docno in docnos]
        return sum(hits) / len(hits)

    quality = [precision_at_5(runs[name]) for name in sorted(RUN_NOISE, key=RUN_NOISE.get)]
    assert quality[0] > quality[1] > quality[2]


@pytest.mark.django_db
def test_it_registers_every_model_in_the_admin_with_working_pages(
    admin: AbstractBaseUser, campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    from graded.claims import task_next
    from graded.judging import task_answer

    task = task_next(campaign=campaign, assessor=assessor)
    task_answer(task=task, assessor=assessor, grade=1, seconds=1.0)
    client = Client()
    client.force_login(admin)
    for model in apps.get_app_config("labeling").get_models():
        assert model in django_admin.site._registry, model
        url = f"/admin/labeling/{model._meta.model_name}/"
        assert client.get(url).status_code == 200, url
        assert client.get(url + "?q=1").status_code == 200, url
    assert Judgment.objects.count() == 1
