"""HTML pages: who sees the pairwise judging page, the settings form and the results page."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign
from pairwise.models import PairwiseSettings
from tests.pairwise.helpers import client_for, finish_all

pytestmark = pytest.mark.django_db


def test_it_shows_the_judging_page_to_assessors_only(
    topk_campaign: Campaign, assessor: AbstractBaseUser, outsider: AbstractBaseUser
) -> None:
    page = client_for(assessor).get(f"/pairwise/{topk_campaign.pk}/judge/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="left-doc"' in html and 'id="right-doc"' in html
    assert 'data-outcome="left_bad"' in html, "the shortcut is on by default"
    assert client_for(outsider).get(f"/pairwise/{topk_campaign.pk}/judge/").status_code == 404
    assert client_for(assessor).get(f"/pairwise/{topk_campaign.pk}/results/").status_code == 403


def test_it_shows_the_top_k_and_kappa_on_the_results_page(
    topk_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    finish_all(topk_campaign, assessor)
    html = client_for(coordinator).get(f"/pairwise/{topk_campaign.pk}/results/").content.decode()
    assert html.count('class="topk-order"') >= 2
    assert "<li>D401-8</li><li>D401-7</li><li>D401-6</li>" in html
    assert "kappa-NDCG@3" in html and "<td>good</td>" in html
    assert "export/topk.qrels" in html


def test_it_saves_the_settings_form_for_coordinators(
    topk_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    form = {
        "mode": "topk",
        "k": "4",
        "documents_per_topic": "8",
        "pairs_per_topic": "20",
        "use_prior_order": "on",
        "reuse_answers": "on",
    }
    assert client_for(assessor).post(f"/pairwise/{topk_campaign.pk}/settings/", form).status_code == 403
    response = client_for(coordinator).post(f"/pairwise/{topk_campaign.pk}/settings/", form)
    assert response.status_code == 302
    saved = PairwiseSettings.objects.get(campaign=topk_campaign)
    assert (saved.k, saved.documents_per_topic, saved.use_transitivity, saved.allow_bad_shortcut) == (
        4,
        8,
        False,
        False,
    )


def test_it_labels_the_settings_form_in_plain_words(
    topk_campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    html = client_for(coordinator).get(f"/pairwise/{topk_campaign.pk}/settings/").content.decode()
    assert "Documents per topic (n)" in html and "Clearly-irrelevant shortcut" in html
    assert "`" not in html and "ALLOW" not in html and "_SHORTCUT" not in html
    assert 'name="mode"' not in html and 'name="k"' in html
    assert 'name="use_transitivity"' in html and 'name="pairs_per_topic"' not in html, "top-k's own"


def test_it_keeps_the_mode_chosen_at_creation(
    make_campaign: Callable[..., Campaign], campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    pairs = make_campaign(mode="pairwise")
    form = {"k": "5", "documents_per_topic": "6", "pairs_per_topic": "4", "mode": "topk"}
    response = client_for(coordinator).post(f"/pairwise/{pairs.pk}/settings/", form)
    assert response.status_code == 302 and response["Location"] == f"/campaigns/{pairs.pk}/"
    pairs.refresh_from_db()
    saved = PairwiseSettings.objects.get(campaign=pairs)
    assert pairs.judging_mode == "pairwise" and (saved.k, saved.pairs_per_topic) == (5, 4)
    assert saved.use_transitivity, "a top-k improvement the pairwise form does not show stays as it was"
    graded = client_for(coordinator).get(f"/pairwise/{campaign.pk}/settings/")
    assert graded.status_code == 404, "a graded campaign does not become a pair campaign here"


def test_it_gives_the_judging_page_the_progress_address(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    html = client_for(assessor).get(f"/pairwise/{topk_campaign.pk}/judge/").content.decode()
    assert f'"progress_url": "/api/campaigns/{topk_campaign.pk}/progress/"' in html
    assert 'id="progress-bar"' in html and 'id="campaign-progress-text"' in html


def test_the_top_k_judge_page_shows_the_campaign_guidelines(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    from labeling.services.campaigns import campaign_update

    campaign_update(campaign=topk_campaign, guidelines="Prefer **official** sources.")
    page = client_for(assessor).get(f"/judge/{topk_campaign.pk}/").content.decode()
    assert "Prefer <strong>official</strong> sources." in page
