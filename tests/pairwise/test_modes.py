"""The judging-mode seam as users meet it: each campaign's pages, lists, downloads and API
answers are its own mode's; the registry names every mode once."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign
from labeling.modes import all_modes, answer_kind, exports_of, item_mode, mode_named, mode_of, register
from labeling.services.campaigns import campaign_mode_set, campaign_update
from pairwise.models import PairwiseSettings
from tests.pairwise.helpers import client_for

pytestmark = pytest.mark.django_db


def test_it_registers_each_of_the_five_modes_once() -> None:
    assert [mode.name for mode in all_modes()] == ["graded", "pairwise", "topk", "sxs", "training"]
    # An app's ready() may run again: the same mode registers again as the one entry it has.
    for mode in all_modes():
        assert register(mode) is mode
    assert len(all_modes()) == 5
    impostor = type("OtherGraded", (type(mode_named("graded")),), {})()
    with pytest.raises(ValueError, match="two judging modes are called 'graded'"):
        register(impostor)
    assert type(mode_named("graded")) is not type(impostor)
    assert {mode.task_kind for mode in all_modes()} == {"grade", "pair", "sxs"}
    with pytest.raises(
        ValueError, match="unknown judging mode 'lists'; available: graded, pairwise, topk, sxs, training"
    ):
        mode_named("lists")
    assert answer_kind({"grade": 1}) == "grade"
    assert answer_kind({"outcome": "left"}) == "pair"
    assert answer_kind({"preference": -1, "comment": ""}) == "sxs"
    assert answer_kind({"seconds": 3}) is None and answer_kind([1]) is None
    assert answer_kind({"grade": 1, "outcome": "left"}) is None, "which item would it answer?"


def test_an_item_is_answered_by_its_campaign_s_mode_when_that_mode_serves_its_kind(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    from labeling.models import Draw, Task
    from labeling.services.campaigns import campaign_create

    def graded_task_in(mode: str) -> Task:
        campaign = campaign_create(creator=coordinator, name=mode, budget=5, judging_mode=mode)
        topic = campaign.topics.create(qid="1", title="t")
        document = campaign.documents.create(docno="d", title="d")
        draw = Draw.objects.create(
            campaign=campaign, kind=Draw.Kind.ITEM, topic=topic, document=document, order=1, propensity=1.0
        )
        return Task.objects.create(campaign=campaign, draw=draw, order=1, topic=topic, document=document)

    training, side_by_side = graded_task_in("training"), graded_task_in("sxs")
    assert item_mode("grade", training.pk) == (mode_named("training"), training.campaign_id)
    # The single documents of a side-by-side campaign are graded tasks: the graded flow takes them.
    assert item_mode("grade", side_by_side.pk) == (mode_named("graded"), side_by_side.campaign_id)
    assert item_mode("grade", 10**12) is None and item_mode("film", training.pk) is None


def test_it_shows_a_top_k_campaign_page_without_graded_parts(
    topk_campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    html = client_for(coordinator).get(f"/campaigns/{topk_campaign.pk}/").content.decode()
    summary = html.split('id="mode-summary">', 1)[1].split("</div>", 1)[0]
    assert "HeapSort top-k" in summary and "top 3 of the best 6 documents per topic" in summary
    assert "DCG@5" not in summary and "strategy" not in summary and "grades" not in summary
    assert 'data-upload="qrels"' not in html and 'data-upload="runs"' in html
    assert f'href="/pairwise/{topk_campaign.pk}/settings/"' in html
    assert "comparisons</span>" in html and "top-k lists</span>" in html
    assert f"/api/campaigns/{topk_campaign.pk}/pairwise/export/topk.qrels" in html
    assert f"/api/campaigns/{topk_campaign.pk}/export/judgments.csv" not in html


def test_it_keeps_the_graded_campaign_page_graded(campaign: Campaign, coordinator: AbstractBaseUser) -> None:
    html = client_for(coordinator).get(f"/campaigns/{campaign.pk}/").content.decode()
    summary = html.split('id="mode-summary">', 1)[1].split("</div>", 1)[0]
    assert "Graded judgments" in summary and campaign.metric in summary
    assert 'data-upload="qrels"' in html and "/pairwise/" not in html.split('id="exports"')[0]
    assert f"/api/campaigns/{campaign.pk}/export/judgments.csv" in html
    assert f"/api/campaigns/{campaign.pk}/pairwise/export/preferences.csv" not in html


def test_it_refuses_uploads_and_downloads_a_mode_does_not_have(
    topk_campaign: Campaign, campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    client = client_for(coordinator)
    qrels = io.BytesIO(b"401 0 D401-1 1\n")
    qrels.name = "q.txt"
    assert client.post(f"/campaigns/{topk_campaign.pk}/upload/qrels/", {"file": qrels}).status_code == 404
    assert client.get(f"/api/campaigns/{campaign.pk}/pairwise/export/topk.qrels").status_code == 404
    assert client.get(f"/api/campaigns/{topk_campaign.pk}/export/judgments.csv").status_code == 404
    download = client.get(f"/api/campaigns/{topk_campaign.pk}/pairwise/export/preferences.csv")
    assert download.status_code == 200
    assert (
        download["Content-Disposition"]
        == f'attachment; filename="campaign-{topk_campaign.pk}-preferences.csv"'
    )
    names = [export.name for export in exports_of(topk_campaign)]
    assert names[0] == "api-export-config"
    assert {"api-pairwise-export-agreement", "api-export-skips-csv"} <= set(names)


def test_it_describes_each_campaign_by_its_mode_in_the_assessors_list(
    topk_campaign: Campaign, campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    html = client_for(assessor).get("/").content.decode()
    assert "HeapSort top-k by pairwise preferences · top 3 of the best 6 documents per topic" in html
    assert f"Graded judgments · {campaign.metric}" in html


def test_it_stores_the_mode_once_and_k_with_the_mode(
    topk_campaign: Campaign, coordinator: AbstractBaseUser, api: object
) -> None:
    assert mode_of(topk_campaign).name == "topk"
    assert not hasattr(PairwiseSettings, "mode") and not hasattr(Campaign, "topk_k")
    shown = api(coordinator).get(f"/api/campaigns/{topk_campaign.pk}/").json()  # type: ignore[operator]
    assert (shown["mode"], shown["k"]) == ("topk", 3)
    campaign_update(campaign=topk_campaign, mode_settings={"k": 2})
    assert PairwiseSettings.objects.get(campaign=topk_campaign).k == 2


def test_it_refuses_a_mode_switch_once_the_campaign_started(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    from pairwise.services import pair_next

    pair_next(campaign=topk_campaign, assessor=assessor)  # the heaps are made and one is leased
    for other in ("graded", "pairwise"):
        with pytest.raises(ValueError, match="can only change before the campaign starts"):
            campaign_mode_set(campaign=topk_campaign, mode_name=other)
    topk_campaign.refresh_from_db()
    assert topk_campaign.judging_mode == "topk"


def test_it_serves_the_campaigns_own_judge_page_and_dashboard(
    topk_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    judge = client_for(assessor).get(f"/judge/{topk_campaign.pk}/")
    assert judge.status_code == 200 and 'id="left-doc"' in judge.content.decode()
    board = client_for(coordinator).get(f"/campaigns/{topk_campaign.pk}/dashboard/").content.decode()
    assert "Estimate" not in board and "Evaluate a new run" not in board and "kappa" in board.lower()


def test_it_answers_an_unknown_answer_body_with_a_400_naming_the_fields(
    topk_campaign: Campaign, assessor: AbstractBaseUser, api: object
) -> None:
    response = api(assessor).post("/api/tasks/1/answer/", {"seconds": 2}, format="json")  # type: ignore[operator]
    assert response.status_code == 400
    expected = (
        "an answer carries exactly one of grade (to a grade item) or outcome (to a pair item) "
        "or preference (to a sxs item)"
    )
    assert response.json()["detail"] == expected
    both = {"grade": 1, "outcome": "left"}
    assert api(assessor).post("/api/tasks/1/answer/", both, format="json").status_code == 400  # type: ignore[operator]


def test_it_documents_every_modes_items_and_answers_in_the_schema(
    coordinator: AbstractBaseUser, api: object
) -> None:
    response = api(coordinator).get("/api/schema/", HTTP_ACCEPT="application/json")  # type: ignore[operator]
    components = response.json()["components"]["schemas"]
    assert set(components["NextItem"]["discriminator"]["mapping"]) == {"grade", "pair", "sxs"}
    answers = {entry["$ref"].rsplit("/", 1)[1] for entry in components["AnswerRequest"]["oneOf"]}
    assert answers == {"AnswerInputRequest", "PairAnswerInputRequest", "SxsAnswerInputRequest"}


@pytest.mark.parametrize(
    "path", ["estimates/", "estimates/history/", "sampling/", "throughput/", "evaluate/"]
)
def test_it_has_no_estimates_for_a_mode_that_does_not_sample(
    topk_campaign: Campaign, campaign: Campaign, coordinator: AbstractBaseUser, api: object, path: str
) -> None:
    client = api(coordinator)  # type: ignore[operator]
    assert client.get(f"/api/campaigns/{topk_campaign.pk}/{path}").status_code == 404
    assert client.get(f"/api/campaigns/{campaign.pk}/{path}").status_code == 200


def test_it_refuses_a_qrels_upload_over_the_api_where_the_mode_takes_none(
    topk_campaign: Campaign, coordinator: AbstractBaseUser, api: object
) -> None:
    qrels = io.BytesIO(b"401 0 D401-1 1\n")
    qrels.name = "q.txt"
    url = f"/api/campaigns/{topk_campaign.pk}/qrels/"
    response = api(coordinator).post(url, {"file": qrels}, format="multipart")  # type: ignore[operator]
    assert response.status_code == 404 and "takes no qrels upload" in response.json()["detail"]


def test_it_never_turns_a_graded_campaign_into_a_pair_campaign_by_its_settings(
    campaign: Campaign, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, api: object
) -> None:
    from pairwise.services import pair_next

    url = f"/api/campaigns/{campaign.pk}/pairwise/settings/"
    assert api(coordinator).put(url, {"pairs_per_topic": 3}, format="json").status_code == 404  # type: ignore[operator]
    assert not PairwiseSettings.objects.filter(campaign=campaign).exists()
    assert api(assessor).get(f"/api/campaigns/{campaign.pk}/pairwise/next/").status_code == 404  # type: ignore[operator]
    with pytest.raises(ValueError, match="does not judge in pairs"):
        pair_next(campaign=campaign, assessor=assessor)
    assert client_for(coordinator).get(f"/pairwise/{campaign.pk}/settings/").status_code == 404


def test_it_has_no_sampling_model_for_a_pair_campaign(
    topk_campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    response = client_for(coordinator).get(f"/campaigns/{topk_campaign.pk}/dashboard/model.json")
    assert response.status_code == 404


def test_it_asks_for_k_only_in_modes_that_take_it(coordinator: AbstractBaseUser) -> None:
    form = {
        "name": "graded with k",
        "metric": "DCG@10",
        "goal": "one",
        "strategy": "passive",
        "grades": "Bad\nGood",
        "budget": "10",
        "budget_unit": "judgments",
        "overlap": "1",
        "judging_mode": "graded",
        "topk_k": "4",
    }
    response = client_for(coordinator).post("/campaigns/new/", form)
    assert response.status_code == 400
    assert "Graded judgments take no k; leave it empty." in response.content.decode()
    assert not Campaign.objects.filter(name="graded with k").exists()
