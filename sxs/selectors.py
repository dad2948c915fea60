"""Reads: settings, the top-K lists of the runs, the grades the lists hold, progress, the answers
as rows, their distribution and side bias, agreement, and `preference_data`, the arrays the
learned-DCG core (`estimation.learned_dcg.fit.learn_dcg`) takes."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Count, Q, Sum

from estimation.learned_dcg.fit import MIN_STRICT_PAIRS, MIN_TOPICS, PreferenceData
from estimation.learned_dcg.preferences import Preference
from labeling.agreement import agreement_of
from labeling.dashboard import campaigns_to_manage
from labeling.models import Campaign, Document, Judgment, RankingEntry, Skip, System, Task
from labeling.selectors import Progress, Throughput, throughput_of, units_progress
from sxs.models import SxsAnswer, SxsFit, SxsSettings, SxsTask

MODE_NAME = "sxs"
ITEM_KIND = "sxs"
"""The `kind` of a comparison as /next/ serves it and as its skips are recorded."""
# The tasks' grade tasks (labeling's Task/Draw, mixed in before a topic's SxS tasks) carry this
# as their draw's strategy, which tells them apart from anything else in the campaign.
GRADE_DRAW_STRATEGY = "sxs-grade"
# The five answers, as displayed: the API's `preference` and the page's keys 1-5 in this order.
ANSWER_LABELS = {
    -2: "Left much better",
    -1: "Left better",
    0: "About the same",
    1: "Right better",
    2: "Right much better",
}
# Grade arrays mark positions a list does not fill (a run shorter than K) with this.
EMPTY = -1


def sxs_settings_get(campaign: Campaign) -> SxsSettings | None:
    """The SxS campaign's settings; None for a campaign of another mode."""
    if campaign.judging_mode != MODE_NAME:
        return None
    return SxsSettings.objects.filter(campaign=campaign).first()


def sxs_settings(campaign: Campaign) -> SxsSettings:
    """The settings, or the defaults (unsaved) when none were stored."""
    return sxs_settings_get(campaign) or SxsSettings(campaign=campaign)


def compared_systems(campaign: Campaign) -> list[System]:
    """The systems the campaign compares: its pooled runs, by name."""
    return list(System.objects.filter(campaign=campaign, evaluation_only=False).order_by("name"))


def top_k_lists(campaign: Campaign, k: int) -> dict[int, dict[int, list[int]]]:
    """system id -> topic id -> the document ids of its top k in trec_eval order (score
    descending, docno descending: what the metric scores)."""
    rows = (
        RankingEntry.objects.filter(system__campaign=campaign, system__evaluation_only=False)
        .order_by("system_id", "topic_id", "-score", "-document__docno")
        .values_list("system_id", "topic_id", "document_id")
    )
    lists: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for system_id, topic_id, document_id in rows.iterator(chunk_size=5000):
        ranked = lists[system_id][topic_id]
        if len(ranked) < k:
            ranked.append(document_id)
    return {system: dict(by_topic) for system, by_topic in lists.items()}


def known_grades(campaign: Campaign) -> dict[tuple[int, int], int]:
    """(topic id, document id) -> the grade the campaign holds: imported qrels first, else the
    lower median of the assessors' grades (one number per document, as the metric needs)."""
    qrels: dict[tuple[int, int], int] = {}
    judged: dict[tuple[int, int], list[int]] = defaultdict(list)
    rows = Judgment.objects.filter(campaign=campaign).values_list(
        "topic_id", "document_id", "grade", "source"
    )
    for topic_id, document_id, grade, source in rows.iterator(chunk_size=5000):
        if source == Judgment.Source.QRELS:
            qrels[(topic_id, document_id)] = grade
        else:
            judged[(topic_id, document_id)].append(grade)
    grades = {key: sorted(values)[(len(values) - 1) // 2] for key, values in judged.items()}
    grades.update(qrels)
    return grades


def list_grades(
    topic_id: int, documents: list[int], grades: dict[tuple[int, int], int], k: int, unjudged: int | None
) -> list[int] | None:
    """The grades of a list, padded to k with EMPTY; an unjudged document counts as `unjudged`,
    or makes the list unusable (None) when that is None."""
    row = []
    for document_id in documents[:k]:
        grade = grades.get((topic_id, document_id), unjudged)
        if grade is None:
            return None
        row.append(grade)
    return row + [EMPTY] * (k - len(row))


@dataclass(frozen=True)
class SxsAnswerArrays:
    """A campaign's side-by-side answers as arrays, one row per answer: what
    `estimation.learned_dcg.fit.learn_dcg` takes (`core()`), with the answers' ids.

    `left` and `right` (n, K) are the grades of system A's and system B's lists (the stored
    order of the pair, not the sides the assessor saw), EMPTY (-1) where a list is shorter than
    K. `preference` (n,) is -2..2 about the systems: negative = system A (`left`) better, 0 =
    about the same, positive = B better; the answer as displayed was turned round when B was
    shown on the left. `groups` (n,) are topic ids (cross-validation and bootstrap by topic).
    `answer_ids` (n,) name the SxsAnswer rows; `skipped` counts answers left out because a list
    still holds an ungraded document (only with the "judge" policy).
    """

    left: np.ndarray
    right: np.ndarray
    preference: np.ndarray
    groups: np.ndarray
    answer_ids: np.ndarray
    k: int
    grade_levels: int
    skipped: int

    def core(self) -> PreferenceData:
        """The numeric core's preference data (grades of both lists, preference, topic groups)."""
        return PreferenceData(self.left, self.right, self.preference, self.groups)


def preference_data(campaign: Campaign, grades: dict[tuple[int, int], int] | None = None) -> SxsAnswerArrays:
    """Every SxS answer of the campaign as arrays for the learned-DCG core (`grades`: the
    campaign's `known_grades`, when the caller has them already)."""
    settings = sxs_settings(campaign)
    k = settings.k
    grades = known_grades(campaign) if grades is None else grades
    unjudged = 0 if settings.unjudged == SxsSettings.Unjudged.ZERO else None
    rows = (
        SxsAnswer.objects.filter(campaign=campaign, task__isnull=False)
        .order_by("created_at", "id")
        .values_list("id", "topic_id", "preference", "task__documents_a", "task__documents_b")
    )
    left, right, preference, groups, ids = [], [], [], [], []
    skipped = 0
    for answer_id, topic_id, value, documents_a, documents_b in rows:
        grades_a = list_grades(topic_id, documents_a, grades, k, unjudged)
        grades_b = list_grades(topic_id, documents_b, grades, k, unjudged)
        if grades_a is None or grades_b is None:
            skipped += 1
            continue
        left.append(grades_a)
        right.append(grades_b)
        preference.append(value)
        groups.append(topic_id)
        ids.append(answer_id)
    return SxsAnswerArrays(
        left=np.asarray(left, dtype=np.int64).reshape(-1, k),
        right=np.asarray(right, dtype=np.int64).reshape(-1, k),
        preference=np.asarray(preference, dtype=np.int64),
        groups=np.asarray(groups, dtype=np.int64),
        answer_ids=np.asarray(ids, dtype=np.int64),
        k=k,
        grade_levels=campaign.grade_count,
        skipped=skipped,
    )


def system_lists(campaign: Campaign) -> dict[str, dict[int, list[int]]]:
    """system name -> topic id -> the top-K document ids its comparisons show (fixed when the
    tasks were made, so the leaderboard ranks what the assessors saw)."""
    rows = (
        SxsTask.objects.filter(campaign=campaign, slot=0)
        .order_by("unit")
        .values_list("topic_id", "system_a__name", "documents_a", "system_b__name", "documents_b")
    )
    lists: dict[str, dict[int, list[int]]] = defaultdict(dict)
    for topic_id, name_a, documents_a, name_b, documents_b in rows.iterator(chunk_size=2000):
        lists[name_a].setdefault(topic_id, documents_a)
        lists[name_b].setdefault(topic_id, documents_b)
    return dict(sorted(lists.items()))


@dataclass(frozen=True)
class LeaderboardLists:
    """Grades of each compared system's lists, (topics, K) per system, ungraded documents as 0
    (the leaderboard's rule whatever the policy), and how many listed documents are ungraded."""

    grades: dict[str, np.ndarray]
    ungraded: int


def leaderboard_lists(campaign: Campaign, grades: dict[tuple[int, int], int], k: int) -> LeaderboardLists:
    """The arrays `estimation.learned_dcg.leaderboard.compare_leaderboards` takes."""
    by_system = system_lists(campaign)
    missing = {
        (topic_id, document_id)
        for by_topic in by_system.values()
        for topic_id, documents in by_topic.items()
        for document_id in documents[:k]
        if (topic_id, document_id) not in grades
    }
    arrays = {
        name: np.array(
            [list_grades(topic_id, documents, grades, k, 0) for topic_id, documents in by_topic.items()],
            dtype=np.int64,
        ).reshape(-1, k)
        for name, by_topic in by_system.items()
    }
    return LeaderboardLists(arrays, len(missing))


def latest_fit(campaign: Campaign) -> SxsFit | None:
    """The campaign's most recent learned-DCG fit, if any."""
    return SxsFit.objects.filter(campaign=campaign).order_by("-created_at", "-id").first()


# The fields of a stored fit the learned-DCG endpoint and the dashboard show.
FIT_FIELDS = (
    "gains",
    "discounts",
    "gains_low",
    "gains_high",
    "discounts_low",
    "discounts_high",
    "sigma_ratio",
    "sigma_ratio_low",
    "sigma_ratio_high",
    "transformed",
    "weights",
    "c",
    "accuracy",
    "accuracy_curve",
    "pairs",
    "ties",
    "dropped_identical",
    "groups",
    "method",
    "c_tie",
    "c_grid",
    "c_tie_grid",
    "form_test",
    "interval_method",
    "bootstrap",
    "bootstrap_failed",
    "bootstrap_requested",
    "options",
    "coverage",
)
# Lists of a stored fit: empty, not null, for a fit stored before they existed.
FIT_LISTS = ("grid_warnings", "grid_notes", "widened")
# What the dashboard and the export call each fit method.
METHOD_WORDS = {
    "likelihood": "the likelihood of the five answers (ordered probit)",
    "qp": "the paper's QP (DCGLearn, Zhou et al. 2014)",
}


def learned_dcg_summary(campaign: Campaign) -> dict[str, Any]:
    """What `GET /api/campaigns/{id}/learned-dcg/` answers: the latest fit with its leaderboard,
    or its status and why there is no fit (with how many more answers are needed)."""
    settings = sxs_settings(campaign)
    fit = latest_fit(campaign)
    summary: dict[str, Any] = {name: None for name in FIT_FIELDS}
    summary.update({name: [] for name in FIT_LISTS})
    summary.update(
        method_words=None,
        k=settings.k,
        grade_names=[grade["name"] for grade in campaign.grades],
        unjudged=settings.unjudged,
        leaderboard=[],
        kendall_tau=None,
        kendall_tau_utility=None,
        disagreements=[],
        utility_disagreements=[],
        disagreeing_answers=None,
        ungraded=None,
        diagnostics=None,
        tie_curve=[],
        fitted_at=None,
        reason="",
        needed=None,
    )
    if fit is None:
        summary.update(
            status="waiting",
            answers=SxsAnswer.objects.filter(campaign=campaign).count(),
            reason=f"learning needs at least {MIN_STRICT_PAIRS} informative "
            f"answers (one list better, the lists' grades not identical) over at least {MIN_TOPICS} topics",
            needed=MIN_STRICT_PAIRS,
        )
        return summary
    result = fit.result
    summary.update(status=result.get("status", ""), answers=fit.answers, fitted_at=fit.created_at)
    if result.get("status") != "fitted":
        summary.update(reason=result.get("reason", ""), needed=result.get("needed"))
        return summary
    summary.update({name: result.get(name) for name in FIT_FIELDS})
    summary.update({name: result.get(name) or [] for name in FIT_LISTS})
    summary.update(method_words=METHOD_WORDS.get(result.get("method") or ""))
    board = stored_leaderboard(result.get("leaderboard") or {})
    summary.update(
        leaderboard=board.get("rows", []),
        kendall_tau=board.get("kendall_tau"),
        kendall_tau_utility=board.get("kendall_tau_utility"),
        disagreements=board.get("disagreements", []),
        utility_disagreements=board.get("utility_disagreements", []),
        disagreeing_answers=board.get("disagreeing_answers"),
        ungraded=board.get("ungraded"),
        diagnostics=result.get("diagnostics"),
        tie_curve=result.get("tie_curve") or [],
    )
    return summary


def stored_leaderboard(board: dict[str, Any]) -> dict[str, Any]:
    """A stored leaderboard in today's keys. Fits stored before learned DCG had its own column
    ranked by the full T(W) under the name "learned": that was the learned utility, so their
    numbers move there and the learned DCG stays empty until the next recompute stores it."""
    if not board or "kendall_tau_utility" in board:
        return board
    rows = [
        {
            "system": row["system"],
            "learned_dcg": None,
            "rank_learned_dcg": None,
            "standard": row.get("standard"),
            "rank_standard": row.get("rank_standard"),
            "utility": row.get("learned"),
            "rank_utility": row.get("rank_learned"),
        }
        for row in board.get("rows", [])
    ]
    flips = [
        {
            "first": flip["first"],
            "second": flip["second"],
            "utility_difference": flip.get("learned_difference"),
            "standard_difference": flip.get("standard_difference"),
        }
        for flip in board.get("disagreements", [])
    ]
    return {
        **board,
        "rows": rows,
        "kendall_tau": None,
        "kendall_tau_utility": board.get("kendall_tau"),
        "disagreements": [],
        "utility_disagreements": flips,
        "disagreeing_answers": None,  # counted under the utility, not the learned DCG
    }


def apply_targets(user: Any, campaign: Campaign) -> list[Campaign]:
    """Campaigns the user manages that can take this SxS campaign's learned gains and
    discounts: the same number of grades and a metric cutoff of at most K."""
    k = sxs_settings(campaign).k
    return [
        other
        for other in campaigns_to_manage(user).exclude(pk=campaign.pk)
        if other.grade_count == campaign.grade_count and other.metric_cutoff <= k
    ]


def sxs_task_get(task_id: int) -> SxsTask | None:
    """A task with what the page shows."""
    return SxsTask.objects.select_related("campaign", "topic").filter(pk=task_id).first()


def task_lists(task: SxsTask) -> tuple[list[Document], list[Document]]:
    """The (left, right) lists of documents as displayed."""
    ids = {*task.documents_a, *task.documents_b}
    documents = Document.objects.in_bulk(ids)
    list_a = [documents[pk] for pk in task.documents_a if pk in documents]
    list_b = [documents[pk] for pk in task.documents_b if pk in documents]
    return (list_a, list_b) if task.a_on_left else (list_b, list_a)


def sxs_progress(campaign: Campaign) -> Progress:
    """`labeling.modes.campaign_progress` for an SxS campaign: the judgments are SxS answers and
    the grades asked for the lists; the units are the SxS tasks (with their overlap slots)."""
    answers = SxsAnswer.objects.filter(campaign=campaign).aggregate(n=Count("id"), seconds=Sum("seconds"))
    grades = Judgment.objects.filter(campaign=campaign, source=Judgment.Source.ASSESSOR).aggregate(
        n=Count("id"), seconds=Sum("seconds")
    )
    judgments = (answers["n"] or 0) + (grades["n"] or 0)
    spent = float(judgments)
    if campaign.budget_unit == Campaign.BudgetUnit.HOURS:
        spent = float((answers["seconds"] or 0.0) + (grades["seconds"] or 0.0)) / 3600.0
    settings = sxs_settings_get(campaign)
    return units_progress(
        campaign,
        SxsTask.objects.filter(campaign=campaign),
        started=Q(assessor__isnull=False) | Q(answered_at__isnull=False),
        open_=Q(answered_at__isnull=True),
        judgments=judgments,
        spent=spent,
        prepared=settings is not None and settings.prepared_at is not None,
    )


def sxs_throughput(campaign: Campaign) -> list[Throughput]:
    """Each assessor's pace on SxS answers."""
    rows = (
        SxsAnswer.objects.filter(campaign=campaign)
        .order_by("created_at", "id")
        .values_list("assessor__username", "seconds", "created_at")
    )
    return throughput_of(rows)[1]


@dataclass(frozen=True)
class SideBias:
    """How often the left list won among answers that were not ties, with a two-sided binomial
    test of "either side equally often" (no p-value without such answers)."""

    left: int
    right: int
    share_left: float | None
    p_value: float | None


def side_bias(shown: Iterable[int]) -> SideBias:
    """Side bias of answers as displayed."""
    values = list(shown)
    left = sum(value < 0 for value in values)
    right = sum(value > 0 for value in values)
    if left + right == 0:
        return SideBias(0, 0, None, None)
    # Imported here, not at the top: scipy.stats costs every process that starts about a second
    # (estimation/distributions.py says why the rest of the code does without it).
    from scipy.stats import binomtest

    return SideBias(left, right, left / (left + right), float(binomtest(left, left + right, 0.5).pvalue))


def label_distribution(shown: Iterable[int]) -> list[dict[str, Any]]:
    """How often each of the five answers was given, as displayed (the paper's Table 1)."""
    counts = Counter(shown)
    total = sum(counts.values())
    return [
        {
            "value": value,
            "label": label,
            "count": counts[value],
            "share": counts[value] / total if total else None,
        }
        for value, label in ANSWER_LABELS.items()
    ]


def sxs_agreement(campaign: Campaign) -> dict[str, Any] | None:
    """Agreement on (topic, system pair) tasks answered by two or more assessors, on three levels
    (A better, about the same, B better); None when no task was answered twice."""
    rows = SxsAnswer.objects.filter(campaign=campaign, assessor__isnull=False).values_list(
        "topic__qid", "system_a__name", "system_b__name", "preference", "assessor__username"
    )
    preferences = [
        Preference(qid, first, second, "left" if value < 0 else "right" if value > 0 else "tie", assessor)
        for qid, first, second, value, assessor in rows
    ]
    return agreement_of(preferences) if preferences else None


def answer_rows(campaign: Campaign) -> Iterable[dict[str, Any]]:
    """Every SxS answer with its systems, sides, selection and assessor, oldest first."""
    rows = (
        SxsAnswer.objects.filter(campaign=campaign)
        .order_by("created_at", "id")
        .values_list(
            "topic__qid",
            "system_a__name",
            "system_b__name",
            "a_on_left",
            "shown",
            "preference",
            "assessor__username",
            "seconds",
            "comment",
            "selection_rule",
            "propensity",
            "margin",
            "created_at",
        )
    )
    for qid, system_a, system_b, a_on_left, shown, value, assessor, seconds, comment, rule, p, m, at in rows:
        yield {
            "topic": qid,
            "system_a": system_a,
            "system_b": system_b,
            "left_system": system_a if a_on_left else system_b,
            "answer": shown,
            "answer_label": ANSWER_LABELS[shown],
            "preference": value,
            "assessor": assessor or "",
            "seconds": seconds,
            "comment": comment,
            "selection": rule,
            "propensity": p,
            "margin": m,
            "created_at": at.isoformat(),
        }


def dashboard_data(campaign: Campaign) -> dict[str, Any]:
    """What the SxS dashboard and the campaign page's section show."""
    shown = list(SxsAnswer.objects.filter(campaign=campaign).values_list("shown", flat=True))
    grade_tasks = Task.objects.filter(campaign=campaign, draw__strategy=GRADE_DRAW_STRATEGY).aggregate(
        total=Count("id"), answered=Count("id", filter=Q(answered_at__isnull=False))
    )
    fit = latest_fit(campaign)
    progress = sxs_progress(campaign)
    done = progress.pool_size - progress.open_tasks
    return {
        "progress": progress,
        "percent_done": 100.0 * done / progress.pool_size if progress.pool_size else 0.0,
        "answers": len(shown),
        "distribution": label_distribution(shown),
        "side_bias": side_bias(shown),
        "agreement": sxs_agreement(campaign),
        "grade_tasks": grade_tasks,
        "skips": Skip.objects.filter(campaign=campaign, kind=ITEM_KIND).count(),
        "systems": [system.name for system in compared_systems(campaign)],
        "fit": fit,
    }
