"""Guidelines in Markdown and per-grade descriptions: stored, validated, shown safely to
assessors on every mode's judge page."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse

from graded.claims import task_next
from labeling.markdown import render_markdown
from labeling.models import Campaign
from labeling.services.campaigns import campaign_update
from tests.conftest import PASSWORD

HOSTILE = (
    "# Relevance\n<script>alert(1)</script>\n[click](javascript:alert(2)) and ![x](https://evil.test/p.png)\n"
)


def _client(user: AbstractBaseUser) -> Client:
    client = Client()
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def test_markdown_renders_structure_and_escapes_what_could_run() -> None:
    html = render_markdown(HOSTILE + "\n- **key** facts\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert "<h1>Relevance</h1>" in html and "<strong>key</strong>" in html and "<td>1</td>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript' not in html
    assert "<img" not in html


def test_grade_descriptions_change_while_judging_but_must_fit_the_scale(
    campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    changed = campaign_update(
        campaign=campaign,
        grade_descriptions=["off topic", "", "answers the question"],
        guidelines="Be quick.",
    )
    assert [grade.get("description") for grade in changed.grades] == [
        "off topic",
        None,
        "answers the question",
    ]
    assert [grade["name"] for grade in changed.grades] == ["Bad", "Fair", "Good"]
    assert changed.guidelines == "Be quick."
    with pytest.raises(ValueError, match="one text per grade"):
        campaign_update(campaign=changed, grade_descriptions=["only one"])
    with pytest.raises(ValueError, match="longer than 500"):
        campaign_update(campaign=changed, grade_descriptions=["x" * 501, "", ""])


def test_the_api_takes_guidelines_and_descriptions(
    api: Callable, coordinator: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    client = api(coordinator)
    url = f"/api/campaigns/{draft_campaign.pk}/"
    body = {
        "guidelines": "## Rules\nJudge the page, not the site.",
        "grade_descriptions": ["no", "partly", "fully"],
    }
    changed = client.patch(url, body, format="json").json()
    assert changed["guidelines"].startswith("## Rules")
    assert [grade["description"] for grade in changed["grade_scale"]] == ["no", "partly", "fully"]
    assert client.patch(url, {"grade_descriptions": ["a", "b"]}, format="json").status_code == 400
    assert client.patch(url, {"guidelines": "x" * 50_001}, format="json").status_code == 400
    made = client.post(
        "/api/campaigns/",
        {"name": "g", "budget": 5, "grades": [{"name": "No", "description": "nothing useful"}, "Yes"]},
        format="json",
    ).json()
    assert made["grade_scale"][0] == {"name": "No", "key": "0", "description": "nothing useful"}


def test_assessors_see_the_guidelines_escaped_beside_the_item_and_in_the_help(
    campaign: Campaign, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    response = _client(coordinator).post(
        reverse("labeling:campaign_guidelines", args=[campaign.pk]),
        {"guidelines": HOSTILE, "grade_0": "no use at all", "grade_1": "", "grade_2": "exactly right"},
    )
    assert response.status_code == 302
    page = _client(assessor).get(reverse("labeling:judge_campaign", args=[campaign.pk])).content.decode()
    assert 'id="guidelines-box"' in page
    assert page.count("<h1>Relevance</h1>") == 2  # beside the query and in the help overlay
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'title="exactly right"' in page and "no use at all" in page


def test_the_form_refuses_a_description_over_the_cap(
    campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    response = _client(coordinator).post(
        reverse("labeling:campaign_guidelines", args=[campaign.pk]),
        {"guidelines": "ok", "grade_0": "x" * 501},
    )
    assert response.status_code == 400
    campaign.refresh_from_db()
    assert campaign.guidelines == ""


def test_a_top_k_campaign_page_offers_guidelines_but_no_grade_descriptions(
    coordinator: AbstractBaseUser,
) -> None:
    from labeling.services.campaigns import campaign_create

    topk = campaign_create(creator=coordinator, name="top", budget=10, judging_mode="topk")
    page = _client(coordinator).get(reverse("labeling:campaign_detail", args=[topk.pk])).content.decode()
    assert 'name="guidelines"' in page and 'name="grade_0"' not in page
    response = _client(coordinator).post(
        reverse("labeling:campaign_guidelines", args=[topk.pk]), {"guidelines": "pick the best"}
    )
    assert response.status_code in (200, 302)
    topk.refresh_from_db()
    assert topk.guidelines == "pick the best"
