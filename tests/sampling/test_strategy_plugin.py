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
from sampling import arrival_add, campaign_model_summary, register_strategy
from sampling.arrival_design import arrival_topup_design
from sampling.pool_arrays import pool_arrays_for, pool_from_arrays
from sampling.strategies import ITEM_LEVEL, PassiveStrategy, SamplingStrategy
from tests.conftest import RUN_A, RUN_B, upload
from tests.sampling.helpers import RUN_C
from uploads.run_imports import runs_import

Api = Callable[[AbstractBaseUser | None], APIClient]


class UniformItemsStrategy(SamplingStrategy):
    """A throwaway item-level strategy: every pooled document alike. It knows nothing of runs that
    arrive: the engine draws their top-ups from the top-up design for it."""

    name = "uniform-items"
    label = "Every document alike (a test strategy)"
    level = ITEM_LEVEL
    planned_as = None
    unplanned_reason = "a test strategy the planner has no replay of"

    def distribution(
        self, campaign: Campaign, pool: Pool, metric: Metric, focus: Sequence[int]
    ) -> SamplingDistribution:
        q = pool.slot_used / pool.slot_used.sum()
        return SamplingDistribution(q=q, optimal=q, mix=0.0, cost=pool.item_cost)


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


@pytest.fixture
def uniform_items() -> Iterator[None]:
    saved = dict(registry.STRATEGIES)
    register_strategy(UniformItemsStrategy())
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


def test_an_item_strategy_draws_a_top_up_from_the_top_up_design_without_asking_for_it(
    uniform_items: None, api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    created = api(coordinator).post(
        "/api/campaigns/",
        {"name": "plug-in", "metric": "DCG@5", "grades": ["0", "1", "2"], "strategy": "uniform-items",
         "budget": 8},
        format="json",
    )  # fmt: skip
    assert created.status_code == 201, created.content
    campaign = Campaign.objects.get(pk=created.json()["id"])
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=campaign)
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=1, seconds=3.0)
    recompute(campaign.pk)
    before = set(Draw.objects.filter(campaign=campaign).values_list("propensity", flat=True))
    assert len(before) == 1, "its own design: every document alike"
    arrival = arrival_add(campaign=campaign, files=[upload("c.run", RUN_C)], budget=6, reference="beta")
    campaign.refresh_from_db()
    arrays = pool_arrays_for(campaign)
    # The design its top-up is owed (before its tasks are queued, which fill its room).
    design = arrival_topup_design(campaign, arrays, pool_from_arrays(arrays), Metric.parse("DCG@5", y_max=2))
    assert design is not None
    recompute(campaign.pk)
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None and task.draw.order > arrival.drawable_after
    topic, slot = arrays.locate(np.array([task.topic_id]), np.array([task.document_id]))
    # The top-up's draw came from the top-up design, not from the strategy's uniform q.
    assert task.draw.propensity == pytest.approx(design.q[topic[0], slot[0]])
    assert task.draw.propensity not in before
