"""A pair campaign's dashboard: who sees it, what it counts, and the selectors behind it."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from labeling.models import Campaign
from pairwise import selectors, services
from pairwise.dashboard import dashboard_data
from pairwise.models import Comparison, TopKHeap
from tests.pairwise.helpers import answer_pending, finish_all, record

pytestmark = pytest.mark.django_db


def client_for(user: AbstractBaseUser) -> Client:
    client = Client()
    client.force_login(user)
    return client


def dashboard_html(campaign: Campaign, user: AbstractBaseUser, query: str = "") -> str:
    response = client_for(user).get(f"/campaigns/{campaign.pk}/dashboard/{query}")
    assert response.status_code == 200
    return response.content.decode()


def section(html: str, element_id: str) -> str:
    """The text of the <section> with this id, tags stripped and spaces collapsed."""
    match = re.search(rf'<section[^>]*id="{element_id}".*?</section>', html, re.S)
    assert match, f"no section #{element_id}"
    return " ".join(re.sub(r"<[^>]+>", " ", match.group(0)).split())


def test_it_shows_the_dashboard_to_those_who_may_view_results(
    topk_campaign: Campaign,
    coordinator: AbstractBaseUser,
    assessor: AbstractBaseUser,
    outsider: AbstractBaseUser,
) -> None:
    html = dashboard_html(topk_campaign, coordinator)
    assert 'id="progress"' in html and 'id="lists"' in html and 'id="kappa"' in html
    assert "export/preferences.csv" in html and "export/topk.qrels" in html
    assert 'id="pair-dashboard-config"' in html and "<script>" not in html, "config by json_script only"
    assert client_for(assessor).get(f"/campaigns/{topk_campaign.pk}/dashboard/").status_code == 403
    assert client_for(outsider).get(f"/campaigns/{topk_campaign.pk}/dashboard/").status_code == 404


def test_it_counts_lists_comparisons_and_kappa_of_a_top_k_campaign(
    make_campaign: Callable[..., Campaign],
    coordinator: AbstractBaseUser,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
) -> None:
    topk_campaign = make_campaign(overlap=2)  # two lists per topic: alice's and bob's
    for _ in range(3):
        answer_pending(topk_campaign, assessor)
    html = dashboard_html(topk_campaign, coordinator)
    progress = section(html, "progress")
    assert "3 comparisons" in progress and "0 lists done" in progress and "1 in progress" in progress
    assert "3 not started" in progress and "budget: 3 of 100 comparisons" in progress
    assert "No finished list yet." in section(html, "kappa")
    heap = TopKHeap.objects.get(assessor=assessor)
    assert f'data-heap="{heap.pk}" data-status="in progress"' in html
    assert "of 3 ruled out" in section(html, "lists"), "n = 6, k = 3: three documents to rule out"

    finish_all(topk_campaign, assessor)
    answer_pending(topk_campaign, second_assessor)
    html = dashboard_html(topk_campaign, coordinator)
    total = Comparison.objects.count()
    progress = section(html, "progress")
    assert f"{total} comparisons" in progress and "2 lists done" in progress
    lists = section(html, "lists")
    assert "D401-8 D401-7 D401-6" in lists and "D402-8 D402-7 D402-6" in lists
    assert section(html, "kappa").count("kappa-NDCG@3") == 2 and "good" in section(html, "kappa")
    per_assessor = section(html, "per-assessor")
    assert f"alice {total - 1} 2" in per_assessor and "bob 1 1" in per_assessor
    assert "Release" in lists, "bob's list is in progress: a coordinator may release it"


def test_a_released_list_counts_as_started_and_is_named_released_per_topic(
    make_campaign: Callable[..., Campaign], coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    from pairwise.services.judging import heap_release

    topk_campaign = make_campaign(overlap=1)
    for _ in range(2):
        answer_pending(topk_campaign, assessor)
    heap = TopKHeap.objects.get(assessor=assessor)
    heap_release(campaign=topk_campaign, heap_id=heap.pk)
    progress = section(dashboard_html(topk_campaign, coordinator), "progress")
    assert "1 in progress" in progress and "1 not started" in progress, progress
    topics = section(dashboard_html(topk_campaign, coordinator), "per-topic")
    assert f"{heap.topic.qid} 2 1 0 0 1 released " in topics, topics


def test_it_shows_progress_and_comparisons_of_a_pairwise_campaign(
    make_campaign: Callable[..., Campaign], coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(mode="pairwise", pairs_per_topic=3)
    for _ in range(4):
        answer_pending(campaign, assessor)
    html = dashboard_html(campaign, coordinator)
    progress = section(html, "progress")
    assert "4 comparisons" in progress and "4 of 6 pairs done" in progress
    assert 'id="lists"' not in html and 'id="kappa"' not in html
    topics = section(html, "per-topic")
    assert "401 3 1" in topics and "402 1 1" in topics
    assert "Merged order" in html


def test_it_answers_the_body_alone_for_the_page_to_recompute(
    topk_campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    fragment = dashboard_html(topk_campaign, coordinator, "?fragment=1")
    assert 'id="progress"' in fragment and "<html" not in fragment and "<body" not in fragment


def test_it_releases_a_list_from_the_dashboard_and_comes_back(
    topk_campaign: Campaign, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    answer_pending(topk_campaign, assessor)
    heap = TopKHeap.objects.get(assessor=assessor)
    here = f"/campaigns/{topk_campaign.pk}/dashboard/"
    url = f"/pairwise/{topk_campaign.pk}/heaps/{heap.pk}/release/"
    response = client_for(coordinator).post(url, {"next": here})
    assert response.status_code == 302 and response["Location"] == here
    heap.refresh_from_db()
    assert heap.assessor_id is None
    elsewhere = client_for(coordinator).post(url, {"next": "https://example.org/"})
    assert elsewhere["Location"] == f"/pairwise/{topk_campaign.pk}/results/", "never off-site"


def test_it_counts_comparisons_per_topic_and_assessor(
    topk_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    # alice: a preference and a tie on 401; bob: a clearly-irrelevant mark on 401, one on 402.
    record(topk_campaign, assessor, "401", "D401-1", "D401-2", "right")
    record(topk_campaign, assessor, "401", "D401-3", "D401-4", "tie")
    record(topk_campaign, second_assessor, "401", "D401-1", "D401-5", "left_bad")
    record(topk_campaign, second_assessor, "402", "D402-1", "D402-2", "left")
    counts = selectors.comparison_counts(topk_campaign)
    assert [(c.name, c.comparisons, c.ties, c.bad_marks, c.spread) for c in counts["topics"]] == [
        ("401", 3, 1, 1, 2),
        ("402", 1, 0, 0, 1),
    ]
    assert [(c.name, c.comparisons, c.ties, c.bad_marks, c.spread) for c in counts["assessors"]] == [
        ("alice", 2, 1, 0, 1),
        ("bob", 2, 0, 1, 2),
    ]


def test_it_measures_throughput_in_judging_time(
    topk_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    # alice: 2 s, 4 s and 9 s (median 4, 3 in 15 s = 720 an hour); bob: 6 s and no time.
    for seconds in (2.0, 4.0, 9.0):
        record(topk_campaign, assessor, "401", "D401-1", "D401-2", "left")
        Comparison.objects.filter(pk=Comparison.objects.latest("id").pk).update(seconds=seconds)
    record(topk_campaign, second_assessor, "401", "D401-1", "D401-2", "left")
    Comparison.objects.filter(pk=Comparison.objects.latest("id").pk).update(seconds=6.0)
    record(topk_campaign, second_assessor, "402", "D402-1", "D402-2", "left")
    Comparison.objects.filter(pk=Comparison.objects.latest("id").pk).update(seconds=None)
    throughput = selectors.comparison_throughput(topk_campaign)
    alice, bob = throughput["assessors"]
    assert (alice.assessor, alice.judgments, alice.median_seconds, alice.per_hour) == ("alice", 3, 4.0, 720.0)
    assert (bob.assessor, bob.judgments, bob.median_seconds, bob.per_hour) == ("bob", 2, 6.0, 600.0)
    overall = throughput["overall"]
    assert (overall.judgments, overall.median_seconds, overall.mean_seconds) == (5, 5.0, 5.25)
    assert overall.per_hour == pytest.approx(3600 * 4 / 21)
    assert overall.last == Comparison.objects.latest("created_at").created_at


def test_it_reads_the_mode_from_the_campaign(make_campaign: Callable[..., Campaign]) -> None:
    campaign = make_campaign(mode="pairwise")
    data = dashboard_data(campaign, services.pairwise_configure(campaign=campaign))
    assert not data["topk"] and data["progress"].unit == "pair" and data["lists"] == []
