"""HTML pages: who may open which page, and what the coordinator's forms store."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse

from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign, System
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
    campaign_update,
)
from tests.conftest import PASSWORD, RUN_A, upload
from tests.labeling.helpers import judge_some
from uploads.run_imports import runs_import


def client_for(user: AbstractBaseUser | None) -> Client:
    client = Client()
    if user is not None:
        assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def pages(campaign: Campaign) -> dict[str, str]:
    return {
        "home": reverse("labeling:home"),
        "judge_campaign": reverse("labeling:judge_campaign", args=[campaign.pk]),
        "campaign_create": reverse("labeling:campaign_create"),
        "campaign_detail": reverse("labeling:campaign_detail", args=[campaign.pk]),
    }


# Expected status per persona and page: assessors judge but never see the dashboard; an
# outsider does not even learn that the campaign exists (404).
EXPECTED = {
    "assessor": {"home": 200, "judge_campaign": 200, "campaign_create": 403, "campaign_detail": 403},
    "coordinator": {"home": 200, "judge_campaign": 200, "campaign_create": 200, "campaign_detail": 200},
    "admin": {"home": 200, "judge_campaign": 200, "campaign_create": 200, "campaign_detail": 200},
    "outsider": {"home": 200, "judge_campaign": 404, "campaign_create": 403, "campaign_detail": 404},
}


@pytest.mark.parametrize("persona", sorted(EXPECTED))
def test_it_gives_each_role_the_pages_it_may_see(
    persona: str, request: pytest.FixtureRequest, campaign: Campaign
) -> None:
    client = client_for(request.getfixturevalue(persona))
    statuses = {name: client.get(url).status_code for name, url in pages(campaign).items()}
    assert statuses == EXPECTED[persona]


def test_it_sends_anonymous_visitors_to_the_login_page(campaign: Campaign) -> None:
    for url in pages(campaign).values():
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_it_explains_a_refusal_on_the_403_page(assessor: AbstractBaseUser, campaign: Campaign) -> None:
    response = client_for(assessor).get(reverse("labeling:campaign_detail", args=[campaign.pk]))
    assert response.status_code == 403
    assert b"You do not have access to this page" in response.content


def test_it_hides_other_coordinators_campaigns(make_user, campaign: Campaign) -> None:  # type: ignore[no-untyped-def]
    stranger = make_user("cora", "coordinator")
    response = client_for(stranger).get(reverse("labeling:campaign_detail", args=[campaign.pk]))
    assert response.status_code == 404


def test_it_lists_the_campaigns_to_judge_on_the_home_page(
    assessor: AbstractBaseUser, outsider: AbstractBaseUser, campaign: Campaign
) -> None:
    assert campaign.name.encode() in client_for(assessor).get("/").content
    assert campaign.name.encode() not in client_for(outsider).get("/").content
    # A draft (a clone keeps its source's assessors) is the coordinator's, not yet theirs.
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.DRAFT)
    assert campaign.name.encode() not in client_for(assessor).get("/").content


def _list_item(html: str, name: str) -> str:
    start = html.index(f"<strong>{name}</strong>")
    return html[start : html.index("</li>", start)]


def test_a_running_campaign_whose_budget_is_spent_says_so_wherever_it_is_listed(
    assessor: AbstractBaseUser, coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    # A second running campaign with work left: the choose page lists both.
    other = campaign_create(
        creator=coordinator, name="still open", metric="DCG@5", grades=["0", "1"], budget=50
    )
    runs_import(campaign=other, files=[upload("a.run", RUN_A)])
    campaign_assessors_assign(campaign=other, usernames=[assessor.get_username()])
    campaign_start(campaign=other)
    campaign_update(campaign=campaign, budget=2)
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=1, seconds=2.0)
    campaign.refresh_from_db()
    assert (campaign.status, campaign.blocked) == (Campaign.Status.RUNNING, "budget")
    spent_badge = '<span class="badge budget_spent">Budget spent</span>'
    for page in ("/", reverse("labeling:judge")):
        html = client_for(assessor).get(page).content.decode()
        mine = _list_item(html, campaign.name)
        assert spent_badge in mine and "nothing left: the budget is spent" in mine, mine
        theirs = _list_item(html, other.name)
        assert '<span class="badge running">Running</span>' in theirs and "nothing left" not in theirs
    coordinating = client_for(coordinator)
    listed = coordinating.get(reverse("labeling:campaign_list")).content.decode()
    assert spent_badge in listed and '<span class="badge running">Running</span>' in listed
    detail = coordinating.get(reverse("labeling:campaign_detail", args=[campaign.pk])).content.decode()
    assert f"{campaign.name} {spent_badge}" in detail
    progress = coordinating.get(f"/api/campaigns/{campaign.pk}/progress/").json()
    assert (progress["state"], progress["state_label"]) == ("budget_spent", "Budget spent")


def test_it_sends_an_assessor_with_one_running_campaign_straight_to_it(
    assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    response = client_for(assessor).get(reverse("labeling:judge"))
    assert response.status_code == 302
    assert response["Location"] == reverse("labeling:judge_campaign", args=[campaign.pk])


def test_it_configures_the_judge_page_with_the_campaigns_grades_and_api(
    assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    response = client_for(assessor).get(reverse("labeling:judge_campaign", args=[campaign.pk]))
    match = re.search(rb'<script id="judge-config" type="application/json">(.*?)</script>', response.content)
    assert match is not None
    config = json.loads(match.group(1))
    assert [(grade["name"], grade["key"], grade["value"]) for grade in config["grades"]] == [
        (grade["name"], grade["key"], value) for value, grade in enumerate(campaign.grades)
    ]
    assert config["next_url"] == f"/api/campaigns/{campaign.pk}/next/"
    assert config["answer_url"] == "/api/tasks/{task}/answer/"
    assert config["undo_url"] == f"/api/campaigns/{campaign.pk}/undo/"


def test_it_creates_a_campaign_from_the_form(coordinator: AbstractBaseUser) -> None:
    response = client_for(coordinator).post(
        reverse("labeling:campaign_create"),
        {
            "name": "Form made",
            "metric": "ERR@20",
            "goal": "leaderboard",
            "goal_k": "3",
            "strategy": "passive",
            "grades": "n: Not relevant\ny: Relevant",
            "budget": "12",
            "budget_unit": "hours",
            "overlap": "2",
        },
    )
    campaign = Campaign.objects.get(name="Form made")
    assert response.status_code == 302
    assert response["Location"] == reverse("labeling:campaign_detail", args=[campaign.pk])
    assert campaign.grades == [{"name": "Not relevant", "key": "n"}, {"name": "Relevant", "key": "y"}]
    assert (campaign.metric, campaign.goal, campaign.goal_k) == ("ERR@20", "leaderboard", 3)
    assert (campaign.budget, campaign.budget_unit, campaign.overlap) == (12.0, "hours", 2)
    assert campaign.members.get(user=coordinator).role == "coordinator"


def test_it_shows_form_errors_and_stores_nothing(coordinator: AbstractBaseUser) -> None:
    response = client_for(coordinator).post(
        reverse("labeling:campaign_create"),
        {
            "name": "Broken",
            "metric": "MAP",
            "goal": "leaderboard",
            "strategy": "passive",
            "grades": "Only one",
            "budget": "-1",
            "budget_unit": "judgments",
            "overlap": "1",
        },
    )
    assert response.status_code == 400
    assert set(response.context["form"].errors) == {"metric", "grades", "budget", "goal_k"}
    assert not Campaign.objects.filter(name="Broken").exists()


def test_it_rejects_a_malformed_run_whole_and_names_file_and_line(
    coordinator: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    before = System.objects.filter(campaign=draft_campaign).count()
    bad = io.BytesIO(b"1 Q0 d1 1 3.0 gamma\n1 Q0 d2 x 2.0 gamma\n")
    bad.name = "gamma.run"
    response = client_for(coordinator).post(
        reverse("labeling:campaign_upload", args=[draft_campaign.pk, "runs"]), {"file": bad}
    )
    assert response.status_code == 400
    errors = response.context["import_errors"]
    assert [(error["file"], error["line"]) for error in errors] == [("gamma.run", 2)]
    assert b"gamma.run" in response.content
    assert System.objects.filter(campaign=draft_campaign).count() == before


def test_it_imports_several_runs_at_once(coordinator: AbstractBaseUser, draft_campaign: Campaign) -> None:
    files = []
    for tag in ("gamma", "delta"):
        upload = io.BytesIO(RUN_A.replace("alpha", tag).encode())
        upload.name = f"{tag}.run"
        files.append(upload)
    response = client_for(coordinator).post(
        reverse("labeling:campaign_upload", args=[draft_campaign.pk, "runs"]), {"file": files}
    )
    assert response.status_code == 302
    assert {"gamma", "delta"} <= set(
        System.objects.filter(campaign=draft_campaign).values_list("name", flat=True)
    )


def test_it_refuses_uploads_to_assessors(assessor: AbstractBaseUser, campaign: Campaign) -> None:
    upload = io.BytesIO(RUN_A.encode())
    upload.name = "sneaky.run"
    response = client_for(assessor).post(
        reverse("labeling:campaign_upload", args=[campaign.pk, "runs"]), {"file": upload}
    )
    assert response.status_code == 403
    assert not System.objects.filter(campaign=campaign, name="alpha", filename="sneaky.run").exists()


def test_it_assigns_assessors_and_reports_unknown_names(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    client = client_for(coordinator)
    url = reverse("labeling:campaign_assign", args=[draft_campaign.pk])
    response = client.post(url, {"usernames": "alice, nobody"})
    assert response.status_code == 400
    assert "nobody" in str(response.context["assign_form"].errors)
    assert not draft_campaign.members.filter(user=assessor).exists()
    response = client.post(url, {"usernames": "alice"})
    assert response.status_code == 302
    assert draft_campaign.members.get(user=assessor).role == "assessor"


def test_it_starts_and_pauses_a_campaign_by_post_only(
    coordinator: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    client = client_for(coordinator)
    start = reverse("labeling:campaign_start", args=[draft_campaign.pk])
    assert client.get(start).status_code == 405
    assert client.post(start, {"confirm": "1"}).status_code == 302
    draft_campaign.refresh_from_db()
    assert draft_campaign.status == Campaign.Status.RUNNING
    assert client.post(reverse("labeling:campaign_pause", args=[draft_campaign.pk])).status_code == 302
    draft_campaign.refresh_from_db()
    assert draft_campaign.status == Campaign.Status.PAUSED


def test_it_shows_throughput_per_assessor(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    for seconds in (4.0, 8.0):
        task = task_next(campaign=campaign, assessor=assessor)
        assert task is not None
        task_answer(task=task, assessor=assessor, grade=1, seconds=seconds)
    response = client_for(coordinator).get(reverse("labeling:campaign_detail", args=[campaign.pk]))
    rows = {row.assessor: row for row in response.context["throughput"]}
    assert rows["alice"].judgments == 2
    assert rows["alice"].mean_seconds == pytest.approx(6.0)
    assert rows["alice"].per_hour == pytest.approx(3600.0 * 2 / 12.0)


def test_it_changes_the_budget_and_rejects_a_negative_one(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    url = reverse("labeling:campaign_budget", args=[campaign.pk])
    assert client_for(assessor).post(url, {"budget": "500"}).status_code == 403
    client = client_for(coordinator)
    assert client.post(url, {"budget": "-3"}).status_code == 400
    assert client.post(url, {"budget": "500"}).status_code == 302
    campaign.refresh_from_db()
    assert campaign.budget == 500.0


def test_it_refuses_a_budget_below_what_is_spent_on_the_page_and_through_the_api(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    judge_some(campaign, assessor, 3)
    before = Campaign.objects.get(pk=campaign.pk).budget
    client = client_for(coordinator)
    url = reverse("labeling:campaign_budget", args=[campaign.pk])
    refused = client.post(url, {"budget": "2"})
    assert refused.status_code == 400
    assert "below what is already spent (3 judgments), got 2: give at least 3" in refused.content.decode()
    api = client.patch(f"/api/campaigns/{campaign.pk}/", {"budget": 2}, content_type="application/json")
    assert api.status_code == 400 and "give at least 3" in api.content.decode(), api.content
    assert Campaign.objects.get(pk=campaign.pk).budget == before
    # What is spent is a budget: it stops the draws.
    assert client.post(url, {"budget": "3"}).status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).budget == 3.0


def test_a_campaign_whose_pool_is_judged_before_its_budget_says_the_rest_is_not_needed(
    assessor: AbstractBaseUser, coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    judged = 0
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=1, seconds=2.0)
        judged += 1
    assert 0 < judged < campaign.budget
    html = (
        client_for(coordinator).get(reverse("labeling:campaign_detail", args=[campaign.pk])).content.decode()
    )
    left = f"{campaign.budget - judged:g}"
    assert "Every item of the pool is judged" in html
    assert f"<b>{left}</b><span>not needed (the pool is judged)</span>" in html
    assert f"The pool needed less than the budget: {left} of it" in html
