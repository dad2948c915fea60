"""A judging mode is one package and one registration (docs/architecture.md, "A judging mode"):
a throwaway mode registered here is offered by the New campaign form with its own setting
field, keeps its settings, brings its keyboard action to the settings (checked for clashes on
its page) and its download to the URL table, with nothing in `labeling/` changed."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from django import forms
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import clear_url_caches, reverse

import labeling.modes as registry
from labeling.forms import CampaignCreateForm
from labeling.models import Campaign
from labeling.modes import Export, JudgingMode, mode_of, register
from labeling.modes import shortcut_actions as actions
from labeling.shortcuts import EVERY, Action, ShortcutsInvalid, judge_shortcuts, keys_validate
from tests.conftest import PASSWORD

STARS_PAGE = "stars"
# What the browser still sends of the fields the page hides for this mode (their initial values).
_HIDDEN_FIELDS = {"metric": "nDCG@10", "goal": "one", "strategy": "passive", "grades": "0\n1"}
_SETTINGS: dict[int, dict[str, Any]] = {}  # the throwaway mode's own "table"


def _star_counts(campaign: Campaign) -> str:
    return f"campaign\tstars\n{campaign.pk}\t{_SETTINGS[campaign.pk]['stars']}\n"


class StarsMode(JudgingMode):
    """A throwaway mode: assessors give each topic up to `stars` stars."""

    name = "stars"
    label = "Stars per topic (a test mode)"
    task_kind = "star"
    answer_field = "stars"
    setting_names = ("stars",)
    form_fields = ("stars_count",)
    shortcut_pages = {STARS_PAGE: (EVERY,)}
    shortcut_actions = (Action("star_add", "One more star", "+", frozenset({STARS_PAGE}), "Stars"),)
    exports = (
        Export(
            "api-stars-export",
            "stars/export.tsv",
            "-stars.tsv",
            "Stars",
            "text/plain",
            _star_counts,
            stream=False,
        ),
    )

    def setting_form_fields(self) -> dict[str, tuple[str, forms.Field]]:
        return {"stars_count": ("stars", forms.IntegerField(min_value=1, max_value=10, required=False))}

    def configure(self, campaign: Campaign, settings: Mapping[str, Any]) -> None:
        super().configure(campaign, settings)
        _SETTINGS.setdefault(campaign.pk, {"stars": 5}).update(settings)

    def settings_of(self, campaign: Campaign) -> dict[str, Any]:
        return dict(_SETTINGS[campaign.pk])


def _reload_urls() -> None:
    """The URL table is built once from the export registry: rebuild it around the test."""
    importlib.reload(importlib.import_module("labeling.api_urls"))
    importlib.reload(importlib.import_module("config.urls"))
    clear_url_caches()


@pytest.fixture
def stars() -> Iterator[StarsMode]:
    """The throwaway mode, registered for one test (the registry and URLs are put back after it)."""
    saved = dict(registry._MODES)
    mode = register(StarsMode())
    _reload_urls()
    yield mode
    registry._MODES.clear()
    registry._MODES.update(saved)
    _reload_urls()


def test_a_registered_mode_is_offered_with_its_setting_and_keeps_it(
    stars: StarsMode, client: Client, coordinator: AbstractBaseUser
) -> None:
    form = CampaignCreateForm()
    assert ("stars", StarsMode.label) in form.fields["judging_mode"].choices
    assert dict((bound.name, modes) for bound, modes in form.mode_setting_fields())["stars_count"] == "stars"
    refused = CampaignCreateForm({"name": "x", "judging_mode": "graded", "stars_count": "3", "budget": 10,
                                  "budget_unit": "judgments", "overlap": 1})  # fmt: skip
    assert not refused.is_valid() and "take no stars" in refused.errors["stars_count"][0]

    client.login(username=coordinator.get_username(), password=PASSWORD)
    response = client.post(
        reverse("labeling:campaign_create"),
        {"name": "starry", "judging_mode": "stars", "stars_count": "3", "budget": "10",
         "budget_unit": "judgments", "overlap": "1", **_HIDDEN_FIELDS},
    )  # fmt: skip
    assert response.status_code == 302, response.context["form"].errors
    campaign = Campaign.objects.get(name="starry")
    assert mode_of(campaign) is stars and stars.settings_of(campaign) == {"stars": 3}

    download = client.get(f"/api/campaigns/{campaign.pk}/stars/export.tsv")
    assert download.status_code == 200 and download.content.decode() == f"campaign\tstars\n{campaign.pk}\t3\n"


def test_a_registered_modes_keyboard_action_joins_its_page(stars: StarsMode) -> None:
    by_name = {action.name: action for action in actions()}
    assert by_name["star_add"].pages == {STARS_PAGE}
    assert STARS_PAGE in by_name["pause"].pages and STARS_PAGE not in by_name["note"].pages
    page = judge_shortcuts({STARS_PAGE}, {}, True, every_action=actions())
    assert page.keys["star_add"] == "+" and page.keys["pause"] == "p" and "grade_0" not in page.keys
    with pytest.raises(ShortcutsInvalid) as refused:
        keys_validate({"star_add": "p"}, actions())  # pause's key on the same page
    assert "star_add" in refused.value.errors
    assert keys_validate({"star_add": "x"}, actions()) == {"star_add": "x"}


def test_without_the_mode_its_action_and_download_are_gone() -> None:
    assert "star_add" not in {action.name for action in actions()}
    with pytest.raises(Exception, match="api-stars-export"):
        reverse("api-stars-export", args=[1])
