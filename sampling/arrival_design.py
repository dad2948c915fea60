"""The top-up design of a run that arrived (`sampling.arrivals`): while its top-up is not spent,
the item-level strategies draw from it instead of their own design. Below the strategies, which
ask it, and above the models and the numeric core only."""

from __future__ import annotations

import numpy as np

from estimation.metrics.spec import Metric
from estimation.sampling.arrivals import stratum_shares, topup_distribution
from estimation.sampling.items import system_weights
from estimation.sampling.pool import Pool
from estimation.sampling.results import SamplingDistribution
from labeling.models import Arrival, Campaign, Draw, Judge, JudgeRun, Judgment
from labeling.selectors import judgments_spent
from sampling.judge_labels import judge_for_sampling
from sampling.pool_arrays import PoolArrays


def topup_spent(arrival: Arrival) -> tuple[int, float]:
    """(assessor judgments, budget spent in the campaign's unit) of the arrival's top-up: of the
    tasks drawn while it was the open arrival, and of its documents on the topics drawn before
    (a query-level campaign's completion, `sampling.arrival_topics`)."""
    judgments = Judgment.objects.filter(
        campaign_id=arrival.campaign_id, source=Judgment.Source.ASSESSOR, task__arrival=arrival
    )
    return judgments_spent(arrival.campaign, judgments)


def arrival_open(campaign: Campaign) -> Arrival | None:
    """The newest arrival whose top-up is not spent yet and that has no verdict, if any."""
    arrivals = campaign.arrivals.filter(verdict="").select_related("campaign", "system", "reference")
    for arrival in arrivals.order_by("-id"):
        if topup_spent(arrival)[1] < arrival.topup_budget:
            return arrival
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
    "arrival_open",
    "TopupDesign",
    "arrival_topup_design",
    "topup_spent",
]
