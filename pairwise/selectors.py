"""Reads: the documents and insertion order of each topic, heaps, preferences and results.

Results call the ORM-free `estimation` code (kappa metrics, agreement, Bradley-Terry) on plain
lists built here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet, Sum

from estimation.learned_dcg.preferences import Preference
from estimation.topk.bradley_terry import merge_preferences
from estimation.topk.kappa import position_labels, summarize_run_kappa
from estimation.topk.state import TopKState, fused_prior_order, result
from labeling.agreement import campaign_agreement
from labeling.models import Campaign, RankingEntry, System
from labeling.selectors import Progress, throughput_of, units_progress
from pairwise.models import Comparison, PairTask, PairwiseSettings, TopKHeap

# The preference an answer implies about the displayed pair: a side marked clearly
# irrelevant loses to the other side (the procedure puts it below every other document).
PREFERENCE_OF_OUTCOME: dict[str, str] = {
    "left": "left",
    "tie": "tie",
    "right": "right",
    "left_bad": "right",
    "right_bad": "left",
}


# The judging modes this app registers (pairwise.modes).
PAIR_MODES = ("pairwise", "topk")


def is_pair_campaign(campaign: Campaign) -> bool:
    """True when the campaign judges in pairs (free pairs or a HeapSort top-k)."""
    return campaign.judging_mode in PAIR_MODES


def pairwise_settings_get(campaign: Campaign) -> PairwiseSettings | None:
    """The pair campaign's settings; None for a campaign of another mode (even if settings of an
    earlier pair mode are stored)."""
    if not is_pair_campaign(campaign):
        return None
    return PairwiseSettings.objects.filter(campaign=campaign).first()


def pairwise_settings(campaign: Campaign) -> PairwiseSettings:
    """The pair campaign's settings (the defaults, unsaved, if none were stored)."""
    return pairwise_settings_get(campaign) or PairwiseSettings(campaign=campaign)


def is_topk(campaign: Campaign) -> bool:
    """True for the HeapSort top-k mode, False for free pairs."""
    return campaign.judging_mode == "topk"


def run_rankings(campaign: Campaign, *, pooled_only: bool = True) -> dict[str, dict[str, list[str]]]:
    """system name -> qid -> docnos in trec_eval order (score descending, docno descending)."""
    entries = RankingEntry.objects.filter(system__campaign=campaign)
    if pooled_only:
        entries = entries.filter(system__evaluation_only=False)
    rows = entries.order_by("system__name", "topic__qid", "-score", "-document__docno").values_list(
        "system__name", "topic__qid", "document__docno"
    )
    rankings: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for system, qid, docno in rows.iterator(chunk_size=2000):
        rankings[system][qid].append(docno)
    return {system: dict(by_topic) for system, by_topic in rankings.items()}


def topic_candidates(campaign: Campaign, n: int) -> dict[str, list[str]]:
    """qid -> the best n documents of the runs fused by reciprocal rank (best first)."""
    by_topic: dict[str, list[list[str]]] = defaultdict(list)
    for by_qid in run_rankings(campaign).values():
        for qid, ranking in by_qid.items():
            by_topic[qid].append(ranking)
    return {qid: fused_prior_order(rankings)[:n] for qid, rankings in sorted(by_topic.items())}


def heap_active_for_assessor(campaign: Campaign, assessor: User) -> TopKHeap | None:
    """The assessor's unfinished heap, oldest first."""
    return (
        TopKHeap.objects.filter(campaign=campaign, assessor_id=assessor.pk, done=False)
        .order_by("started_at", "id")
        .first()
    )


def pair_task_get(task_id: int) -> PairTask | None:
    """A pair task with what the page shows."""
    return (
        PairTask.objects.select_related("campaign", "topic", "left", "right", "heap")
        .filter(pk=task_id)
        .first()
    )


def comparisons_of(campaign: Campaign) -> Iterable[tuple[str, str, str, str, str, float | None, bool, str]]:
    """(qid, left docno, right docno, outcome, assessor, seconds, swapped, created ISO) rows."""
    rows = (
        Comparison.objects.filter(campaign=campaign)
        .order_by("created_at", "id")
        .values_list(
            "topic__qid",
            "left__docno",
            "right__docno",
            "outcome",
            "assessor__username",
            "seconds",
            "swapped",
            "created_at",
        )
    )
    for qid, left, right, outcome, assessor, seconds, swapped, created in rows.iterator(chunk_size=2000):
        yield qid, left, right, outcome, assessor or "", seconds, swapped, created.isoformat()


def campaign_preferences(campaign: Campaign) -> list[Preference]:
    """Every answer as a preference on the displayed pair (bad marks count as losing)."""
    return [
        Preference(qid, left, right, PREFERENCE_OF_OUTCOME[outcome], assessor)  # type: ignore[arg-type]  # stored outcomes are one of the literal preferences
        for qid, left, right, outcome, assessor, *_ in comparisons_of(campaign)
    ]


@dataclass(frozen=True)
class HeapResult:
    """One (topic, assessor) top-k: the order once done, counts and progress."""

    heap_id: int
    topic: str
    slot: int
    assessor: str | None
    order: list[str]
    judgments: int
    done: bool
    n_documents: int
    updated_at: datetime  # the last answer (or claim, or release)


def topk_results(campaign: Campaign) -> list[HeapResult]:
    """Every heap, claimed or not, by topic and slot."""
    rows = (
        TopKHeap.objects.filter(campaign=campaign)
        .order_by("topic__qid", "slot")
        .values_list(
            *("pk", "topic__qid", "slot", "assessor__username", "order", "judgments", "done", "state"),
            "updated_at",
        )
    )
    return [
        HeapResult(pk, qid, slot, assessor, list(order), judgments, done, len(state["documents"]), updated)
        for pk, qid, slot, assessor, order, judgments, done, state, updated in rows
    ]


def topk_ruled_out(campaign: Campaign) -> dict[int, int]:
    """heap id -> documents already known to be outside the top-k, for the unfinished heaps
    someone is working on (replays each one's log, so only those)."""
    states = TopKHeap.objects.filter(campaign=campaign, done=False, assessor__isnull=False).values_list(
        "pk", "state"
    )
    return {pk: len(result(TopKState.from_json(state)).rest) for pk, state in states}


def topk_orders(campaign: Campaign) -> dict[str, list[str]]:
    """qid -> the top-k ground truth: the finished heap of the lowest slot per topic."""
    orders: dict[str, list[str]] = {}
    for heap in topk_results(campaign):
        if heap.done and heap.topic not in orders:
            orders[heap.topic] = heap.order
    return orders


def topic_documents(campaign: Campaign) -> dict[str, list[str]]:
    """qid -> the documents its heaps compare (for the rest, labelled 0)."""
    documents: dict[str, list[str]] = {}
    for qid, state in TopKHeap.objects.filter(campaign=campaign, slot=0).values_list("topic__qid", "state"):
        documents[qid] = list(state["documents"])
    return documents


def kappa_metrics(campaign: Campaign, k: int) -> list[dict[str, Any]]:
    """kappa-NDCG@k and kappa-ERR of every imported run on the topics with a finished top-k."""
    orders = topk_orders(campaign)
    if not orders:
        return []
    all_rankings = run_rankings(campaign, pooled_only=False)
    rows = []
    for system in System.objects.filter(campaign=campaign).order_by("name").values_list("name", flat=True):
        rankings = all_rankings.get(system, {})
        ndcg = summarize_run_kappa(orders, rankings, k, f"kappa-NDCG@{k}")
        err = summarize_run_kappa(orders, rankings, k, "kappa-ERR")
        rows.append(
            {
                "system": system,
                "metric_ndcg": f"kappa-NDCG@{k}",
                "kappa_ndcg": ndcg.mean,
                "kappa_err": err.mean,
                "topics": ndcg.n_topics,
                "per_topic": {
                    qid: {"kappa_ndcg": ndcg.per_query[qid], "kappa_err": err.per_query[qid]}
                    for qid in ndcg.per_query
                },
            }
        )
    return rows


def merged_orders(campaign: Campaign, k: int) -> list[dict[str, Any]]:
    """Per topic: the Bradley-Terry order of all assessors' answers next to each one's top-k.

    Only compared documents are ranked: a never-compared one would get the prior's score 0 and
    stand above every document that lost more than it won, with no evidence at all; the row
    counts them instead (`not_compared`)."""
    by_topic: dict[str, list[Preference]] = defaultdict(list)
    for preference in campaign_preferences(campaign):
        by_topic[preference.topic].append(preference)
    documents = topic_documents(campaign)
    own: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for heap in topk_results(campaign):
        if heap.assessor is not None:
            own[heap.topic].append({"assessor": heap.assessor, "order": heap.order, "done": heap.done})
    merged = []
    for qid, preferences in sorted(by_topic.items()):
        fit = merge_preferences(preferences)
        merged.append(
            {
                "topic": qid,
                "order": list(fit.order[:k]),
                "scores": [round(score, 4) for score in fit.scores[:k]],
                "comparisons": fit.n_comparisons,
                "not_compared": max(0, len(documents.get(qid, ())) - len(fit.order)),
                "assessors": list(fit.assessors),
                "own": own.get(qid, []),
            }
        )
    return merged


def position_label_rows(campaign: Campaign, k: int) -> list[tuple[str, str, int]]:
    """(qid, docno, label) for every compared document: k + 1 - position, 0 for the rest."""
    documents = topic_documents(campaign)
    rows = []
    for qid, order in topk_orders(campaign).items():
        labels = position_labels(order, k)
        for docno in documents.get(qid, order):
            rows.append((qid, docno, labels.get(docno, 0)))
    return rows


def pairwise_results(campaign: Campaign, pairwise: PairwiseSettings) -> dict[str, Any]:
    """Everything the results page and the dashboard section show."""
    return {
        "mode": campaign.judging_mode,
        "k": pairwise.k,
        "topk": [asdict(heap) for heap in topk_results(campaign)],
        "kappa": kappa_metrics(campaign, pairwise.k),
        "merged": merged_orders(campaign, pairwise.k),
        "agreement": campaign_agreement(campaign),
    }


def pair_progress(campaign: Campaign) -> Progress:
    """`labeling.modes.campaign_progress` for a pair campaign: comparisons are the judgments
    (each costs one unit; hours count their seconds), the units of work are the top-k heaps (or
    the pre-drawn pairs in pairwise mode), and the campaign is done once all of them are."""
    answers = Comparison.objects.filter(campaign=campaign).aggregate(n=Count("id"), seconds=Sum("seconds"))
    judgments = answers["n"] or 0
    spent = float(judgments)
    if campaign.budget_unit == Campaign.BudgetUnit.HOURS:
        spent = float(answers["seconds"] or 0.0) / 3600.0
    pairwise = pairwise_settings_get(campaign)
    prepared = pairwise is not None and pairwise.prepared_at is not None
    units: QuerySet[Any]
    if is_topk(campaign):
        # A list released by the coordinator (no assessor, some answers) is started: the next
        # assessor continues it.
        units, started, open_ = (
            TopKHeap.objects.filter(campaign=campaign),
            Q(assessor__isnull=False) | Q(done=True) | Q(steps__gt=0),
            Q(done=False),
        )
    else:
        units, started, open_ = (
            PairTask.objects.filter(campaign=campaign, heap__isnull=True),
            Q(assessor__isnull=False) | Q(answered_at__isnull=False),
            Q(answered_at__isnull=True),
        )
    return units_progress(
        campaign,
        units,
        started=started,
        open_=open_,
        judgments=judgments,
        spent=spent,
        prepared=prepared,
        strategy=campaign.strategy,
    )


@dataclass(frozen=True)
class ComparisonCount:
    """Answers about one topic (or by one assessor): how many, ties, clearly-irrelevant marks,
    and how many assessors answered about the topic (or topics the assessor answered about)."""

    name: str
    comparisons: int
    ties: int
    bad_marks: int
    spread: int


def _counts(campaign: Campaign, by: str, other: str) -> list[ComparisonCount]:
    rows = (
        Comparison.objects.filter(campaign=campaign)
        .values(by)
        .annotate(
            n=Count("id"),
            ties=Count("id", filter=Q(outcome=Comparison.Outcome.TIE)),
            bad=Count(
                "id", filter=Q(outcome__in=[Comparison.Outcome.LEFT_BAD, Comparison.Outcome.RIGHT_BAD])
            ),
            spread=Count(other, distinct=True),
        )
        .order_by(by)
    )
    return [
        ComparisonCount(row[by] or "(deleted user)", row["n"], row["ties"], row["bad"], row["spread"])
        for row in rows
    ]


def comparison_counts(campaign: Campaign) -> dict[str, list[ComparisonCount]]:
    """Answers per topic (`topics`, by qid) and per assessor (`assessors`, by username)."""
    return {
        "topics": _counts(campaign, "topic__qid", "assessor"),
        "assessors": _counts(campaign, "assessor__username", "topic"),
    }


def comparison_throughput(campaign: Campaign) -> dict[str, Any]:
    """`overall` and per assessor (`assessors`, busiest first) pace of the comparisons, as the
    core measures every mode's (labeling.selectors.throughput_of)."""
    rows = (
        Comparison.objects.filter(campaign=campaign)
        .order_by("created_at", "id")
        .values_list("assessor__username", "seconds", "created_at")
        .iterator(chunk_size=5000)
    )
    overall, assessors = throughput_of(rows)
    return {"overall": overall, "assessors": assessors}
