"""Pre-flight: what assessors would miss is listed before Start, and Start asks to confirm."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse

from labeling.models import Campaign, PoolItem
from labeling.modes import campaign_preflight
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_update
from tests.conftest import PASSWORD, upload
from uploads.imports import qrels_import, topics_import
from uploads.run_imports import runs_import

TOPICS = ("601", "602", "603")


def _robust03_head(shared_data: Path, run: str, topics: tuple[str, ...]) -> str:
    """The lines of a Robust03 run for a few topics (the real file, read where it lives)."""
    with gzip.open(shared_data / "robust03" / "runs" / f"input.{run}.gz", "rt") as lines:
        return "".join(line for line in lines if line.split()[0] in topics)


@pytest.fixture
def robust03_campaign(coordinator: AbstractBaseUser, shared_data: Path) -> Campaign:
    """Two Robust03 runs (one with ties in every topic), without topics or documents."""
    campaign = campaign_create(
        creator=coordinator, name="robust", metric="nDCG@10", grades=["Not", "Relevant", "Highly"], budget=50
    )
    runs_import(
        campaign=campaign,
        files=[
            upload(name, _robust03_head(shared_data, name, TOPICS)) for name in ("rutcor03100", "InexpC2")
        ],
    )
    return campaign


def _kinds(campaign: Campaign) -> dict[str, object]:
    return {problem.kind: problem for problem in campaign_preflight(campaign)}


def test_it_lists_what_a_campaign_from_bare_robust03_runs_misses(
    robust03_campaign: Campaign, shared_data: Path
) -> None:
    problems = _kinds(robust03_campaign)
    assert set(problems) >= {"topics_missing", "documents_missing", "runs_with_ties", "no_assessors"}
    assert problems["topics_missing"].count == len(TOPICS)
    assert problems["topics_missing"].examples == TOPICS
    assert problems["documents_missing"].count == robust03_campaign.documents.count()
    # Runs rank deeper than the pool: the message says how many of them assessors will see.
    pooled = PoolItem.objects.filter(campaign=robust03_campaign).values("document_id").distinct().count()
    assert 0 < pooled < robust03_campaign.documents.count()
    assert f"({pooled} of them in the pool assessors judge" in problems["documents_missing"].message
    assert len(problems["documents_missing"].examples) == 5
    assert problems["runs_with_ties"].examples == _tied_groups(shared_data, depth=10)
    assert problems["runs_with_ties"].examples[0].startswith("rutcor03100 (")


def _tied_groups(shared_data: Path, depth: int) -> tuple[str, ...]:
    """Per run, the (topic, score) groups of more than one line ranked within `depth`, counted
    straight from the files."""
    shown = []
    for name in sorted(("rutcor03100", "InexpC2")):
        seen: dict[tuple[str, float], int] = {}
        for line in _robust03_head(shared_data, name, TOPICS).splitlines():
            qid, _, _, rank, score, _ = line.split()
            if int(rank) <= depth:
                seen[qid, float(score)] = seen.get((qid, float(score)), 0) + 1
        groups = sum(1 for count in seen.values() if count > 1)
        if groups:
            shown.append(f"{name} ({groups} tied score group(s))")
    return tuple(shown)


def test_uploading_topics_and_assessors_clears_their_problems(
    robust03_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    topics = "".join(f'{{"id": "{qid}", "title": "title of {qid}"}}\n' for qid in TOPICS[:2])
    topics_import(campaign=robust03_campaign, files=[upload("t.jsonl", topics)])
    campaign_assessors_assign(campaign=robust03_campaign, usernames=["alice"])
    problems = _kinds(robust03_campaign)
    assert "no_assessors" not in problems
    assert problems["topics_missing"].count == 1
    assert problems["topics_missing"].examples == (TOPICS[2],)


def test_it_warns_when_topics_come_without_text_and_topics_are_unranked(draft_campaign: Campaign) -> None:
    topics = '{"id": "1"}\n{"id": "2", "title": "second"}\n{"id": "9", "title": "never ranked"}\n'
    topics_import(campaign=draft_campaign, files=[upload("t.jsonl", topics)])
    problems = _kinds(draft_campaign)
    assert problems["topics_without_text"].examples == ("1",)
    assert problems["topics_unranked"].examples == ("9",)
    assert problems["topics_missing"].examples == ("3",)


def test_it_warns_when_qrels_never_use_the_top_grade_and_the_pool_is_shallow(
    draft_campaign: Campaign,
) -> None:
    assert "grade_scale" not in _kinds(draft_campaign)
    qrels_import(campaign=draft_campaign, files=[upload("q", "1 0 d1-1 1\n1 0 d1-2 0\n")])
    problem = _kinds(draft_campaign)["grade_scale"]
    assert problem.count == 2
    assert "never use grades above 1" in problem.message and "scale goes to 2" in problem.message
    shallow = campaign_update(campaign=draft_campaign, pool_depth=3)
    assert _kinds(shallow)["shallow_pool"].count == 2  # DCG@5 over a pool of depth 3


def test_the_api_lists_problems_for_coordinators_only(
    api: Callable, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    url = f"/api/campaigns/{draft_campaign.pk}/preflight/"
    body = api(coordinator).get(url).json()
    assert body["ready"] is False
    kinds = [problem["kind"] for problem in body["problems"]]
    assert "topics_missing" in kinds and "no_assessors" in kinds
    topics = next(problem for problem in body["problems"] if problem["kind"] == "topics_missing")
    assert topics["count"] == 3 and topics["examples"] == ["1", "2", "3"]
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    assert api(assessor).get(url).status_code == 403


def test_start_asks_for_confirmation_while_problems_are_listed(
    coordinator: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    client = Client()
    assert client.login(username=coordinator.get_username(), password=PASSWORD)
    detail = client.get(reverse("labeling:campaign_detail", args=[draft_campaign.pk]))
    assert b'id="preflight"' in detail.content and b"start-anyway" not in detail.content
    start = reverse("labeling:campaign_start", args=[draft_campaign.pk])
    asked = client.post(start)
    assert asked.status_code == 200 and b"start-anyway" in asked.content
    assert b'data-kind="topics_missing"' in asked.content
    draft_campaign.refresh_from_db()
    assert draft_campaign.status == Campaign.Status.DRAFT
    assert client.post(start, {"confirm": "1"}).status_code == 302
    draft_campaign.refresh_from_db()
    assert draft_campaign.status == Campaign.Status.RUNNING
    running = client.get(reverse("labeling:campaign_detail", args=[draft_campaign.pk]))
    assert b'id="preflight"' not in running.content


@pytest.mark.parametrize(
    ("mode", "refusal"),
    [
        ("graded", "import runs first"),
        ("pairwise", "import runs first"),
        ("sxs", "import two or more runs first"),
        ("training", "upload the feature pool first"),
    ],
)
def test_it_lists_why_start_would_refuse_an_empty_campaign_in_every_mode(
    api: Callable, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, mode: str, refusal: str
) -> None:
    empty = campaign_create(creator=coordinator, name="empty", budget=10, judging_mode=mode)
    campaign_assessors_assign(campaign=empty, usernames=["alice"])
    body = api(coordinator).get(f"/api/campaigns/{empty.pk}/preflight/").json()
    assert body["ready"] is False
    first = body["problems"][0]
    assert first["kind"] == "cannot_start" and first["blocking"] is True and refusal in first["message"]
    start = api(coordinator).post(f"/api/campaigns/{empty.pk}/start/")
    assert start.status_code == 409 and refusal in start.json()["detail"]


def test_the_page_does_not_offer_to_start_anyway_what_start_refuses(coordinator: AbstractBaseUser) -> None:
    empty = campaign_create(creator=coordinator, name="empty", budget=10)
    client = Client()
    client.force_login(coordinator)
    detail = client.get(reverse("labeling:campaign_detail", args=[empty.pk])).content.decode()
    assert 'data-kind="cannot_start"' in detail and "Start is refused until then" in detail
    answer = client.post(reverse("labeling:campaign_start", args=[empty.pk]), follow=True).content.decode()
    assert "start-anyway" not in answer and "import runs first" in answer
    empty.refresh_from_db()
    assert empty.status == Campaign.Status.DRAFT
