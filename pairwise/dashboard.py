"""What pair campaigns show coordinators: their own dashboard (progress, comparisons per topic
and assessor, top-k lists, kappa metrics, merged orders, agreement, throughput) and the pairwise
section of the graded dashboard."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from labeling.agreement import campaign_agreement
from labeling.models import Campaign
from pairwise.models import PairwiseSettings
from pairwise.selectors import (
    HeapResult,
    comparison_counts,
    comparison_throughput,
    is_topk,
    kappa_metrics,
    merged_orders,
    pair_progress,
    pairwise_settings_get,
    topk_results,
    topk_ruled_out,
)


def dashboard_section(campaign: Campaign) -> dict[str, Any] | None:
    """What the section shows, or None when there is nothing to show (a graded campaign
    without doubly judged items)."""
    pairwise = pairwise_settings_get(campaign)
    agreement = campaign_agreement(campaign)
    if pairwise is None:
        if agreement["inferred_from_grades"] is None:
            return None
        return {"pairwise": None, "agreement": agreement}
    heaps = [heap for heap in topk_results(campaign)]
    return {
        "pairwise": pairwise,
        "heaps": heaps,
        "heaps_done": sum(heap.done for heap in heaps),
        "judgments": sum(heap.judgments for heap in heaps),
        "kappa": kappa_metrics(campaign, pairwise.k),
        "agreement": agreement,
    }


@dataclass(frozen=True)
class UnitProgress:
    """Where a pair campaign stands: its units of work (top-k lists, or pre-drawn pairs) done,
    in progress and not started, comparisons made and the state assessors see."""

    unit: str  # "list" or "pair"
    total: int
    done: int
    in_progress: int
    not_started: int
    comparisons: int
    state: str
    budget: float | None  # in comparisons, when the budget is counted in judgments
    prepared: bool

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else 0.0

    @property
    def budget_percent(self) -> float:
        return min(100.0, 100.0 * self.comparisons / self.budget) if self.budget else 0.0


def unit_progress(campaign: Campaign, pairwise: PairwiseSettings) -> UnitProgress:
    """`pair_progress` in the words of a pair campaign."""
    progress = pair_progress(campaign)
    done = progress.pool_size - progress.open_tasks
    by_judgments = campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS
    return UnitProgress(
        unit="list" if is_topk(campaign) else "pair",
        total=progress.pool_size,
        done=done,
        in_progress=progress.drawn - done,
        not_started=progress.pool_size - progress.drawn,
        comparisons=progress.judgments,
        state=progress.state,
        budget=progress.budget if by_judgments else None,
        prepared=pairwise.prepared_at is not None,
    )


@dataclass(frozen=True)
class ListRow:
    """A top-k list on the dashboard: done (its order), in progress, or released and waiting."""

    heap: HeapResult
    status: str  # "done", "in progress" or "waiting"
    ruled_out: int | None  # in progress: documents known to be outside the top-k
    outside: int  # n - k: how many documents the list must rule out


def topk_lists(campaign: Campaign, k: int) -> dict[str, Any]:
    """The lists someone worked on (`rows`, by topic and slot) and, per topic, how many lists
    are done, in progress, released (waiting for the next assessor) and not started, in words
    (`topics`)."""
    ruled_out = topk_ruled_out(campaign)
    rows = []
    counts: dict[str, Counter[str]] = {}
    for heap in topk_results(campaign):
        status = "done" if heap.done else "in progress" if heap.assessor else "waiting"
        if status == "waiting" and not heap.judgments:
            status = "not started"
        counts.setdefault(heap.topic, Counter())[status] += 1
        if status != "not started":
            rows.append(ListRow(heap, status, ruled_out.get(heap.heap_id), max(0, heap.n_documents - k)))
    words = (
        ("done", "done"),
        ("in progress", "in progress"),
        ("waiting", "released"),
        ("not started", "to start"),
    )
    topics = {
        topic: ", ".join(f"{count[status]} {word}" for status, word in words if count[status])
        for topic, count in counts.items()
    }
    return {"rows": rows, "topics": topics}


def dashboard_data(campaign: Campaign, pairwise: PairwiseSettings) -> dict[str, Any]:
    """What a pair campaign's dashboard shows (pairwise.views.dashboard_page renders it)."""
    topk = is_topk(campaign)
    counts = comparison_counts(campaign)
    lists = topk_lists(campaign, pairwise.k) if topk else {"rows": [], "topics": {}}
    by_topic = {count.name: count for count in counts["topics"]}
    throughput = comparison_throughput(campaign)
    speed = {row.assessor: row for row in throughput["assessors"]}
    topics = [
        {"topic": qid, "count": by_topic.get(qid), "lists": lists["topics"].get(qid)}
        for qid in sorted(set(by_topic) | set(lists["topics"]))
    ]
    return {
        "topk": topk,
        "k": pairwise.k,
        "progress": unit_progress(campaign, pairwise),
        "topics": topics,
        "assessors": [{"count": count, "speed": speed.get(count.name)} for count in counts["assessors"]],
        "throughput": throughput["overall"],
        "lists": lists["rows"],
        "kappa": kappa_metrics(campaign, pairwise.k) if topk else [],
        "merged": merged_orders(campaign, pairwise.k),
        "agreement": campaign_agreement(campaign),
    }
