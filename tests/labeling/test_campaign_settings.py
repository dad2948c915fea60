"""One list of a campaign's settings (`Campaign.SETTINGS`): the clone copies it, the
configuration export and the campaign API show every one of them."""

from __future__ import annotations

import json

from django.contrib.auth.models import AbstractBaseUser

from labeling.exports import campaign_config_json
from labeling.models import Campaign
from labeling.serializers import CampaignInputSerializer, CampaignOutputSerializer
from labeling.services.campaign_copies import campaign_clone


def test_the_api_shows_every_setting() -> None:
    missing = set(Campaign.SETTINGS) - set(CampaignOutputSerializer.Meta.fields)
    assert not missing, missing


def test_every_setting_the_api_takes_is_listed_and_every_listed_one_is_taken() -> None:
    """Both directions: a setting the API takes at creation but `Campaign.SETTINGS` omits would be
    lost by a clone and missing from config.json; one listed but not taken cannot be set."""
    # Not settings: the name and the guidelines (text), `mode` (judging_mode's alias) and `k` (a
    # mode's own setting, stored by the mode).
    taken = set(CampaignInputSerializer().fields) - {"name", "guidelines", "mode", "k"}
    assert taken == set(Campaign.SETTINGS), taken ^ set(Campaign.SETTINGS)


def test_the_export_shows_and_the_clone_copies_every_setting(
    draft_campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    draft_campaign.custom_dcg = {"gains": [0.0, 1.0, 3.0], "discounts": [1.0, 0.5], "source": "test"}
    draft_campaign.goal_k = 2
    draft_campaign.prior_strength = 3.5
    # The release verdict's plan (not the defaults): fixed, not worse by 0.25.
    draft_campaign.verdict_rule = Campaign.VerdictRule.FIXED
    draft_campaign.verdict_question = Campaign.VerdictQuestion.NON_INFERIORITY
    draft_campaign.verdict_margin = 0.25
    draft_campaign.save()
    config = json.loads(campaign_config_json(draft_campaign))
    assert set(Campaign.SETTINGS) <= set(config)
    assert config["custom_dcg"]["source"] == "test" and config["prior_strength"] == 3.5
    assert (config["verdict_rule"], config["verdict_question"], config["verdict_margin"]) == (
        "fixed",
        "non_inferiority",
        0.25,
    )
    clone = campaign_clone(campaign=draft_campaign, creator=coordinator, name="toy again")
    for name in Campaign.SETTINGS:
        assert getattr(clone, name) == getattr(draft_campaign, name), name
