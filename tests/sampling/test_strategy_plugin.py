"""A sampling strategy is one class and one registration (docs/architecture.md, "A sampling
strategy"): a throwaway strategy registered here is offered by the New campaign form and the
API's schema, accepted at creation, draws a started campaign's tasks, and its estimates and
its name reach the dashboard, with no other change."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

import sampling.strategies as registry
from estimation import Metric, Pool, SamplingDistribution
from graded.claims import task_next
from graded.judging import task_answer
from labeling.forms import CampaignCreateForm
from labeling.models import Campaign, Draw
from labeling.recompute import recompute
from labeling.serializers import CampaignOutputSerializer
from labeling.services.campaigns import campaign_assessors_assign, campaign_start
from sampling import campaign_model_summary, register_strategy
from sampling.strategies import PassiveStrategy
from tests.conftest import RUN_A, RUN_B, upload
from uploads.run_imports import runs_import

Api = Callable[[AbstractBaseUser | None], APIClient]


class FirstTopicStrategy(PassiveStrategy):
    """A throwaway query strategy: nine times the first topic's share of the passive q."""

    name = "first-topic"
    label = "Mostly the first topic (a test strategy)"
    planned_as = None
    unplanned_reason = "a test strategy the planner has no replay of"

    def weight_bound(self, campaign: Campaign) -> float | None:
        return None

    def distribution(
        self, campaign: Campaign, pool: Pool, metric: Metric, focus: Sequence[int]
    ) -> SamplingDistribution:
        passive = super().distribution(campaign, pool, metric, focus)
        q = passive.q.copy()
        q[0] *= 9
        return SamplingDistribution(
            q=q / q.sum(), optimal=passive.optimal, mix=0.0, cost=passive.cost, expected=passive.expected
        )


@pytest.fixture
def first_topic() -> Iterator[None]:
    """The throwaway strategy, registered for one test (the registry is put back after it)."""
    saved = dict(registry.STRATEGIES)
    register_strategy(FirstTopicStrategy())
    yield
    registry.STRATEGIES.clear()
    registry.STRATEGIES.update(saved)


def test_a_registered_strategy_is_offered_created_drawn_and_estimated(
    first_topic: None, api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    assert ("first-topic", FirstTopicStrategy.label) in CampaignCreateForm().fields["strategy"].choices
    assert "first-topic" in CampaignOutputSerializer().fields["strategy"].choices
    created = api(coordinator).post(
        "/api/campaigns/",
        {"name": "plug-in", "metric": "DCG@5", "grades": ["0", "1", "2"], "strategy": "first-topic",
         "budget": 30},
        format="json",
    )  # fmt: skip
    assert created.status_code == 201, created.content
    campaign = Campaign.objects.get(pk=created.json()["id"])
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=campaign)
    for _ in range(30):
        task = task_next(campaign=campaign, assessor=assessor)
        if task is None:
            break
        task_answer(task=task, assessor=assessor, grade=1, seconds=3.0)
    recompute(campaign.pk)
    propensities = dict(Draw.objects.filter(campaign=campaign).values_list("topic__qid", "propensity"))
    # Its q, not passive's: the first topic drawn with nine times another's propensity.
    assert propensities["1"] == pytest.approx(9 * propensities["2"])
    summary = campaign_model_summary(campaign)
    assert summary["strategy_label"] == FirstTopicStrategy.label and summary["level"] == "query"
    estimates = api(coordinator).get(f"/api/campaigns/{campaign.pk}/estimates/").json()
    values = [row["value"] for row in estimates["systems"] if row["metric"] == "DCG@5"]
    assert len(values) == 2 and all(np.isfinite(value) for value in values)


def test_an_unregistered_strategy_is_refused_at_creation(api: Api, coordinator: AbstractBaseUser) -> None:
    refused = api(coordinator).post(
        "/api/campaigns/", {"name": "x", "strategy": "first-topic", "budget": 5}, format="json"
    )
    assert refused.status_code == 400 and "unknown strategy 'first-topic'" in refused.content.decode()
