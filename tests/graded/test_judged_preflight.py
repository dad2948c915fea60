"""A "Model labels + human sample" campaign does not start without a word when it has no judge,
or a judge without labels: the pre-flight names what is missing and the next step."""

from __future__ import annotations

from labeling.models import Campaign
from labeling.modes import campaign_preflight
from labeling.services.campaigns import campaign_update
from sampling import judge_create, judge_labels_import
from sampling.models import JudgeRun
from tests.conftest import upload


def _problems(campaign: Campaign) -> dict[str, object]:
    return {problem.kind: problem for problem in campaign_preflight(Campaign.objects.get(pk=campaign.pk))}


def test_no_judge_is_named_with_the_next_step(draft_campaign: Campaign) -> None:
    campaign_update(campaign=draft_campaign, strategy="judged")
    problem = _problems(draft_campaign)["judge_missing"]
    assert "add one under Model judges" in problem.message and "clone does not copy judges" in problem.message
    # Other strategies need no judge.
    campaign_update(campaign=draft_campaign, strategy="items")
    assert "judge_missing" not in _problems(draft_campaign)


def test_a_judge_without_labels_is_named_until_its_labels_arrive(draft_campaign: Campaign) -> None:
    campaign_update(campaign=draft_campaign, strategy="judged")
    judge = judge_create(campaign=draft_campaign, name="later", model="m")
    problem = _problems(draft_campaign)["judge_without_labels"]
    assert problem.examples == ("later",) and "upload its labels" in problem.message
    JudgeRun.objects.create(judge=judge, version=judge.version, pairs_total=21)
    assert "its run is under way" in _problems(draft_campaign)["judge_without_labels"].message
    labels = "".join(f"{q} 0 d{q}-{d} 1\n" for q in (1, 2, 3) for d in range(1, 8))
    judge_labels_import(judge=judge, files=[upload("judge.txt", labels)])
    assert not {"judge_missing", "judge_without_labels"} & set(_problems(draft_campaign))
