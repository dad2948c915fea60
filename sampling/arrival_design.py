"""The top-up design of a run that arrived (`sampling.arrivals`): while its top-up is not spent,
the item-level strategies draw from it instead of their own design. Below the strategies, which
ask it, and above the models and the numeric core only."""

from __future__ import annotations

import math

import numpy as np

from estimation.metrics.spec import Metric
from estimation.sampling.arrivals import stratum_shares, target_strata, topup_distribution
from estimation.sampling.items import system_weights
from estimation.sampling.pool import Pool
from estimation.sampling.results import SamplingDistribution
from labeling.models import Arrival, Campaign, Draw, Judgment, Task
from labeling.selectors import judgments_spent
from sampling.judge_labels import judge_for_sampling
from sampling.level_estimates import MIN_STRATUM_DRAWS, counted_item_draws
from sampling.models import Judge, JudgeRun
from sampling.pool_arrays import PoolArrays, pool_from_arrays


def topup_spent(arrival: Arrival) -> tuple[int, float]:
    """(assessor judgments, budget spent in the campaign's unit) of the arrival's top-up: of the
    tasks drawn while it was the open arrival, and of its documents on the topics drawn before
    (a query-level campaign's completion, `sampling.arrival_topics`)."""
    judgments = Judgment.objects.filter(
        campaign_id=arrival.campaign_id, source=Judgment.Source.ASSESSOR, task__arrival=arrival
    )
    return judgments_spent(arrival.campaign, judgments)


def arrival_open(campaign: Campaign) -> Arrival | None:
    """The newest arrival with no verdict whose top-up its spent and queued judgments do not
    cover yet, if any: the one the next draws are for (`arrival_open_room`)."""
    found = arrival_open_room(campaign)
    return None if found is None else found[0]


def arrival_open_room(campaign: Campaign) -> tuple[Arrival, int] | None:
    """`arrival_open` with the tasks its top-up still pays for beyond those judged and queued (a
    task costs what its judged ones cost on average: one judgment in that unit). Counting the
    queue keeps one arrival from drawing past its top-up while another waits (the queue runs
    ahead of the answers)."""
    arrivals = campaign.arrivals.filter(verdict_record__outcome="").select_related(
        "campaign", "system", "reference"
    )
    for arrival in arrivals.order_by("-id"):
        judged, spent = topup_spent(arrival)
        queued = Task.objects.filter(arrival=arrival, answered_at__isnull=True).count()
        judgments = arrival.campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS
        per_task = 1.0 if judgments or not judged else max(spent / judged, 1e-12)
        room = max(math.ceil((arrival.topup_budget - spent) / per_task - 1e-9) - queued, 0)
        if room > 0:
            return arrival, room
    return None


def arrival_labelling_judge(campaign: Campaign) -> Judge | None:
    """The sampling judge while it labels the documents of an open arrival (its run active): the
    top-up waits for its labels, so that it is designed with them."""
    if arrival_open(campaign) is None:
        return None
    judge = judge_for_sampling(campaign)
    if judge is None or not JudgeRun.objects.filter(judge=judge, status__in=JudgeRun.ACTIVE).exists():
        return None
    return judge


def arrival_topup_design(
    campaign: Campaign, arrays: PoolArrays, pool: Pool, metric: Metric, sigma: np.ndarray | None = None
) -> SamplingDistribution | None:
    """The top-up design of the open arrival (None when none is open), over the grown pool:
    importance |a_R - a_B|, `sigma` (the judge's calibration; 1 without a judge), each stratum
    scaled by the top-up's share of the draws that estimate it, floor over every pooled run."""
    arrival = arrival_open(campaign)
    if arrival is None or arrival.reference is None:
        return None
    names = list(arrays.system_names)
    if arrival.system.name not in names or arrival.reference.name not in names:
        return None
    pair = (names.index(arrival.system.name), names.index(arrival.reference.name))
    design = TopupDesign(campaign, arrays, pool, metric, pair, arrival.drawable_after)
    return design.q(arrival.topup_draws, sigma)


def arrival_waiting(
    campaign: Campaign,
    arrays: PoolArrays,
    grades: np.ndarray,
    arrival: Arrival,
    metric: Metric,
    whole_topics: bool,
) -> int:
    """How many documents the arrival's estimate and its difference with the reference depend on
    that cannot be estimated yet: at item level (`metric` its DCG), the documents of late strata
    no draw has picked one of since they joined (their estimate has no value until then,
    `CountedDraws.strata`); with topics drawn whole, its unjudged documents on the topics drawn
    before it arrived (those topics count once complete)."""
    names = list(arrays.system_names)
    if arrival.system.name not in names:
        return 0
    index = names.index(arrival.system.name)
    if whole_topics:
        drawn = topics_drawn_by(campaign, arrays, arrival.drawable_after)
        return int((ranked_slots(arrays, index) & (grades < 0) & drawn[:, None]).sum())
    pool = pool_from_arrays(arrays)
    weights = system_weights(pool, metric, index)
    targets = [weights]
    reference = arrival.reference.name if arrival.reference is not None else None
    if reference in names:
        targets.append(weights - system_weights(pool, metric, names.index(reference)))
    draws = counted_item_draws(campaign, arrays, grades)
    thin = np.zeros(arrays.slot_used.shape, dtype=bool)
    for target in targets:
        for boundary, mask in target_strata(arrays.drawable_after, target):
            if boundary > 0 and draws.stratum_draws(mask, draws.order > boundary) < MIN_STRATUM_DRAWS:
                thin |= mask
    return int(thin.sum())


def topics_drawn_by(campaign: Campaign, arrays: PoolArrays, order: int) -> np.ndarray:
    """Which pool topics a query draw up to draw `order` picked, shape (m,)."""
    drawn = np.zeros(arrays.n_topics, dtype=bool)
    topic_ids = Draw.objects.filter(campaign=campaign, kind=Draw.Kind.QUERY, order__lte=order).values_list(
        "topic_id", flat=True
    )
    located = {int(topic_id): position for position, topic_id in enumerate(arrays.topic_ids)}
    drawn[[located[int(topic_id)] for topic_id in set(topic_ids) if int(topic_id) in located]] = True
    return drawn


def ranked_slots(arrays: PoolArrays, index: int, depth: int | None = None) -> np.ndarray:
    """The pool slots system `index` ranks within `depth` (default: the pool depth)."""
    rankings = arrays.rankings[index][:, :depth]
    ranked = np.zeros(arrays.slot_used.shape, dtype=bool)
    topics = np.broadcast_to(np.arange(arrays.n_topics)[:, None], rankings.shape)
    slots = rankings >= 0
    ranked[topics[slots], rankings[slots]] = True
    return ranked


class TopupDesign:
    """The top-up design of one arrival for any number of top-up draws."""

    def __init__(
        self,
        campaign: Campaign,
        arrays: PoolArrays,
        pool: Pool,
        metric: Metric,
        pair: tuple[int, int],
        drawable_after: int,
    ) -> None:
        self.pool = pool
        self.weights = np.stack(
            [system_weights(pool, metric, index) for index in range(len(arrays.system_names))]
        )
        self.target = self.weights[pair[0]] - self.weights[pair[1]]
        boundaries = sorted(set(np.unique(arrays.drawable_after[arrays.slot_used]).tolist()))
        self.stratum = np.where(arrays.slot_used, np.searchsorted(boundaries, arrays.drawable_after), -1)
        # The draws each stratum had when the run arrived (not counting the top-up's own), so the
        # design stays one distribution over the whole top-up; the newest stratum is the top-up's.
        orders = np.asarray(
            Draw.objects.filter(campaign=campaign, order__lte=drawable_after).values_list("order", flat=True),
            dtype=np.int64,
        )
        self.draws_since = [int((orders > boundary).sum()) for boundary in boundaries]

    def q(self, topup_draws: int, sigma: np.ndarray | None = None) -> SamplingDistribution:
        shares = stratum_shares(self.stratum, self.draws_since[:-1], max(1, topup_draws))
        return topup_distribution(
            np.abs(self.target),
            np.ones(self.target.shape) if sigma is None else sigma,
            np.abs(self.weights).sum(axis=0),
            shares,
            cost=np.where(self.pool.slot_used, np.maximum(self.pool.item_cost, 1e-9), 1.0),
        )


__all__ = [
    "arrival_labelling_judge",
    "arrival_waiting",
    "ranked_slots",
    "arrival_open",
    "arrival_open_room",
    "topics_drawn_by",
    "TopupDesign",
    "arrival_topup_design",
    "topup_spent",
]
