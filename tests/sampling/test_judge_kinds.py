"""Judge kinds are a registry (sampling.judge_kinds): a kind added by one module and one
registration, with a setting of its own, is offered by the API and the add-judge form, checked at
creation, versioned at edit, run by the worker's step and shown on the judges panel, with no
change anywhere else (the recipe in docs/architecture.md, "A model-judge kind")."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from rest_framework.test import APIClient

import sampling.judge_kinds as registry
from estimation.judges.answers import JudgeAnswer
from graded.forms import JudgeForm
from labeling.models import Campaign
from sampling import (
    JudgeKind,
    JudgeSetting,
    judge_create,
    judge_kind,
    judge_kind_choices,
    judge_run_done,
    judge_run_start,
    judge_run_step,
    judge_summary,
    judge_update,
    judges_summaries,
    register_judge_kind,
)
from sampling.models import Judge, JudgeLabel, JudgeRun
from tests.conftest import PASSWORD

Api = Callable[[AbstractBaseUser | None], APIClient]


class TopGradeKind(JudgeKind):
    """A throwaway kind: grades every pending pair with one grade, its own setting `grade`
    (default: the campaign's top grade). It also shares the endpoint's requests-per-minute."""

    name = "top-grade"
    label = "Always one grade (a test kind)"
    api_help = "grades everything the same"
    settings: ClassVar[tuple[JudgeSetting, ...]] = (
        JudgeSetting(
            "grade",
            "integer",
            help="the grade of every pair (blank: the top grade)",
            minimum=0,
            maximum=9,
            versioned=True,
        ),
        judge_kind("endpoint").setting("requests_per_minute"),  # type: ignore[tuple-item]
    )
    following = "run it, then see every pair graded top"

    def settings_problems(self, fields: Mapping[str, Any]) -> list[str]:
        return [] if str(fields.get("model") or "").strip() else ["a top-grade judge needs a model name"]

    def step(self, run: JudgeRun, pending: list[tuple[str, str]]) -> str:
        grade = self.setting("grade").value(run.judge)  # type: ignore[union-attr]
        if grade is None:
            grade = run.judge.campaign.grade_count - 1
        for pair in pending:
            self.store(run, JudgeAnswer(pair, grade=grade, text="always the same", attempts=0), 0.0)
        return judge_run_done(run.pk)

    def warnings(self, judge: Judge) -> list[str]:
        return [f"{judge.name} grades everything the same"]


@pytest.fixture
def top_grade_kind(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeKind]:
    """The throwaway kind, registered for one test (the registry is put back after it)."""
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))
    yield register_judge_kind(TopGradeKind())


def test_the_built_in_kinds_are_registered_once_in_order() -> None:
    assert [name for name, _ in judge_kind_choices()] == ["upload", "endpoint", "lexical"]
    assert [judge_kind(name).runs for name, _ in judge_kind_choices()] == [False, True, True]
    with pytest.raises(ValueError, match="two judge kinds are called 'upload'"):
        register_judge_kind(type("Other", (JudgeKind,), {"name": "upload"})())
    with pytest.raises(
        ValueError, match="unknown judge kind 'nope'; choose one of upload, endpoint, lexical"
    ):
        judge_kind("nope")


def test_a_registered_kind_is_created_checked_run_and_summarised(
    top_grade_kind: JudgeKind, draft_campaign: Campaign
) -> None:
    with pytest.raises(ValueError, match="a top-grade judge needs a model name"):
        judge_create(campaign=draft_campaign, name="top", kind="top-grade")
    judge = judge_create(campaign=draft_campaign, name="top", kind="top-grade", model="constant")
    run = judge_run_start(judge)
    assert judge_run_step(run.pk) == "done"
    pool = draft_campaign.pool_items.count()
    assert JudgeLabel.objects.filter(judge=judge, grade=2, human_grade__isnull=True).count() == pool > 0
    (summary,) = judges_summaries(draft_campaign)
    assert summary["kind"] == "top-grade" and summary["runnable"]
    assert "top grades everything the same" in summary["warnings"]
    assert summary["coverage"]["labelled"] == pool


def test_the_api_and_the_form_offer_a_registered_kind(
    top_grade_kind: JudgeKind, api: Api, coordinator: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    created = api(coordinator).post(
        f"/api/campaigns/{draft_campaign.pk}/judges/",
        {"name": "top", "kind": "top-grade", "model": "constant"},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["kind"] == "top-grade"
    refused = api(coordinator).post(
        f"/api/campaigns/{draft_campaign.pk}/judges/", {"name": "x", "kind": "nope"}, format="json"
    )
    assert refused.status_code == 400 and "kind" in refused.json()
    form = JudgeForm(
        {
            "judge-kind": "top-grade",
            "judge-name": "again",
            "judge-model": "m",
            "judge-requests_per_minute": "5",
            "judge-base_url": "http://elsewhere/v1",
        },
        prefix="judge",
    )
    assert form.is_valid(), form.errors
    fields = form.judge_fields()
    # Its own field kept, another kind's own field dropped.
    assert fields["requests_per_minute"] == 5 and "base_url" not in fields


def test_the_panel_shows_a_registered_kind_and_its_message(
    top_grade_kind: JudgeKind, coordinator: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    client = Client()
    assert client.login(username=coordinator.get_username(), password=PASSWORD)
    added = client.post(
        f"/campaigns/{draft_campaign.pk}/judges/",
        {"judge-kind": "top-grade", "judge-name": "top", "judge-model": "constant"},
        follow=True,
    )
    page = added.content.decode()
    assert "Judge top added: run it, then see every pair graded top." in page
    assert "top grades everything the same" in page and "Run top" in page
    assert '"top-grade": ["grade", "requests_per_minute"]' in page  # the form's own-fields map
    assert 'name="judge-grade"' in page


def test_a_kinds_own_setting_is_kept_versioned_reported_and_refused_on_other_kinds(
    top_grade_kind: JudgeKind, api: Api, coordinator: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    url = f"/api/campaigns/{draft_campaign.pk}/judges/"
    created = api(coordinator).post(
        url, {"name": "one", "kind": "top-grade", "model": "m", "grade": 1}, format="json"
    )
    assert created.status_code == 201, created.content
    assert created.json()["grade"] == 1 and created.json()["version"] == 1
    judge = Judge.objects.get(pk=created.json()["id"])
    assert judge.kind_settings == {"grade": 1}  # no column: kept with the judge
    assert judge.versions.get(number=1).asked_with == {"grade": 1, "thresholds": None}
    run = judge_run_start(judge)
    assert judge_run_step(run.pk) == "done"
    assert set(JudgeLabel.objects.filter(judge=judge).values_list("grade", flat=True)) == {1}
    # Its labels make it the judge for sampling, but this campaign's strategy uses none: said so.
    client = Client()
    client.force_login(coordinator)
    page = client.get(f"/campaigns/{draft_campaign.pk}/").content.decode()
    assert '(the judge "Model labels + human sample" would use)' in page and "(used for sampling)" not in page
    # Out of its bounds: the API's field, built from the declaration, refuses it.
    refused = api(coordinator).patch(f"{url}{judge.pk}/", {"grade": 12}, format="json")
    assert refused.status_code == 400 and "grade" in refused.json()
    # Versioned: an edit makes a new version recording what it is asked; the shared setting does not.
    edited = api(coordinator).patch(f"{url}{judge.pk}/", {"grade": 2}, format="json")
    assert edited.status_code == 200, edited.content
    assert edited.json()["grade"] == 2 and edited.json()["version"] == 2
    assert judge_update(judge, requests_per_minute=30.0).version == 2
    judge.refresh_from_db()
    assert judge.requests_per_minute == 30.0 and judge.versions.get(number=2).asked_with["grade"] == 2
    # Another kind's judge takes no `grade`, by the API or by the service.
    lexical = api(coordinator).post(url, {"name": "bm25", "kind": "lexical", "grade": 1}, format="json")
    assert lexical.status_code == 400
    assert "a judge of kind 'lexical' takes no grade (only top-grade judges do)" in lexical.content.decode()
    uploaded = judge_create(campaign=draft_campaign, name="files", kind="upload")
    with pytest.raises(ValueError, match="a judge of kind .upload. cannot change grade"):
        judge_update(uploaded, grade=1)
    assert judge_summary(uploaded)["grade"] is None  # every judge reports every setting
    # The form takes it for its kind only.
    form = JudgeForm(
        {"judge-kind": "top-grade", "judge-name": "two", "judge-model": "m", "judge-grade": "0"},
        prefix="judge",
    )
    assert form.is_valid(), form.errors
    assert form.judge_fields()["grade"] == 0


def test_a_setting_name_means_one_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))
    clash = type(
        "Clash",
        (JudgeKind,),
        {"name": "clash", "settings": (JudgeSetting("max_tokens", "text"),)},
    )
    with pytest.raises(ValueError, match="judge kind 'clash' declares 'max_tokens' unlike another kind does"):
        register_judge_kind(clash())
    common = type("Common", (JudgeKind,), {"name": "common", "settings": (JudgeSetting("prompt", "text"),)})
    with pytest.raises(ValueError, match="every judge has prompt"):
        register_judge_kind(common())
