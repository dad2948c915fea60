"""A judge run's record and the answer cache: which pool pairs a run still has to ask, each
answer stored the moment it arrives (the cache row, the label replacing the pair's earlier one,
the run's counters), the run's lease and its end, and what the judge has cost. The run's
lifecycle (`sampling.judge_runs`) and every kind's step (`sampling.judge_kinds`) share these.
"""

from __future__ import annotations

import math
import sys
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, Sum
from django.utils import timezone

from estimation.judges.answers import JudgeAnswer
from estimation.judges.calibration import judge_classes
from labeling.models import PoolItem
from sampling.models import Judge, JudgeCall, JudgeLabel, JudgeRun
from sampling.served import engine_serves
from webhooks.events import event_emit, register_event

OUTCOME_COUNTERS = {"label": "labels", "refusal": "refusals", "error": "errors"}
register_event("judge_run.finished", "a model judge's run finished", emitted_for=engine_serves)
register_event("judge_run.failed", "a model judge's run failed", emitted_for=engine_serves)
"""The run's counter of each answer's outcome."""
BATCH_PAIRS = 2000
"""Pending pairs loaded per step (a step rarely gets through more)."""


def lease_seconds() -> float:
    """How long a step's lease on its run lasts: longer than any step (its chunk, its requests'
    timeouts, the step's own ceiling), so only a dead worker's lease runs out."""
    return max(
        3 * settings.JUDGE_RUN_CHUNK_SECONDS + 2 * settings.JUDGE_REQUEST_TIMEOUT_SECONDS,
        settings.JUDGE_STEP_MAX_SECONDS + settings.JUDGE_RUN_CHUNK_SECONDS,
    )


def judge_run_lease_renew(run_id: int) -> None:
    JudgeRun.objects.filter(pk=run_id).update(lease_until=timezone.now() + timedelta(seconds=lease_seconds()))


def judge_run_finish(run_id: int, status: str, error: str = "") -> None:
    changes: dict[str, Any] = {"status": status, "lease_until": None, "finished_at": timezone.now()}
    if error:
        changes["last_error"] = error[:2000]
    JudgeRun.objects.filter(pk=run_id).update(**changes)
    # Webhooks: a run that finished (done, or stopped at its cost cap) or failed.
    finished = (JudgeRun.Status.DONE, JudgeRun.Status.COST_CAP)
    name = "judge_run.finished" if status in finished else "judge_run.failed" if status == "failed" else ""
    run = JudgeRun.objects.select_related("judge__campaign").filter(pk=run_id).first()
    if name and run is not None:
        data = {
            "run": run.pk,
            "judge": run.judge.name,
            "status": status,
            "labels": run.labels,
            "error": error[:500],
        }
        event_emit(run.judge.campaign, name, f"{name}:{run.pk}", data)


def pending_pairs(run: JudgeRun, limit: int = BATCH_PAIRS) -> list[tuple[str, str]]:
    """(qid, docno) of pool pairs the run still has to ask, in the run's fixed order."""
    judge = run.judge
    answered = JudgeCall.objects.filter(judge=judge, version=run.version)
    finished = set(
        answered.filter(
            Q(outcome__in=[JudgeCall.Outcome.LABEL, JudgeCall.Outcome.REFUSAL]) | Q(run=run)
        ).values_list("qid", "docno")
    )
    pairs = []
    items = (
        PoolItem.objects.filter(campaign=judge.campaign)
        .order_by("best_rank", "topic__qid", "document__docno")
        .values_list("topic__qid", "document__docno")
    )
    for pair in items.iterator(chunk_size=5000):
        if pair not in finished:
            pairs.append(pair)
            if len(pairs) >= limit:
                break
    return pairs


def judge_prices(judge: Judge) -> tuple[float, float]:
    """The judge's prices within the operator's ceiling (a judge saved before it may hold more):
    every cost stored stays finite."""
    ceiling = settings.JUDGE_MAX_PRICE_PER_1K
    return tuple(  # type: ignore[return-value]
        min(price, ceiling) if math.isfinite(price) and price >= 0 else ceiling
        for price in (judge.price_in_per_1k, judge.price_out_per_1k)
    )


def judge_run_done(run_id: int) -> str:
    judge_run_finish(run_id, JudgeRun.Status.DONE)
    return "done"


def judge_answer_store(run: JudgeRun, answer: JudgeAnswer, cost: float) -> None:
    """One answer, at once: the cache row, the label (replacing the pair's earlier one) and the
    run's counters, in one transaction. A kind's step stores through `JudgeKind.store`, which
    checks the answer's type first."""
    judge = run.judge
    qid, docno = answer.key
    outcome = answer.outcome
    with transaction.atomic():
        JudgeCall.objects.update_or_create(
            judge=judge,
            version=run.version,
            qid=qid,
            docno=docno,
            defaults={
                "outcome": outcome,
                "grade": answer.grade,
                "probs": answer.probabilities,
                "text": _call_text(answer),
                "tokens_in": answer.tokens_in,
                "tokens_out": answer.tokens_out,
                "seconds": answer.seconds,
                "cost": cost,
                "run": run,
            },
        )
        if answer.grade is not None:
            _label_replace(
                judge,
                run.version,
                qid,
                docno,
                answer.grade,
                answer.probabilities,
                answer.text,
                answer.seconds,
                cost,
            )
        counters: dict[str, Any] = {
            "requests": F("requests") + answer.attempts,
            "tokens_in": F("tokens_in") + answer.tokens_in,
            "tokens_out": F("tokens_out") + answer.tokens_out,
            "cost": F("cost") + cost,
            OUTCOME_COUNTERS[outcome]: F(OUTCOME_COUNTERS[outcome]) + 1,
            # Across steps: a step that made one failed request must not start the count again.
            "failures_in_a_row": F("failures_in_a_row") + 1 if outcome == "error" else 0,
        }
        if answer.error:
            counters["last_error"] = answer.error[:2000]
        JudgeRun.objects.filter(pk=run.pk).update(**counters)


def judge_pair_skip_store(run: JudgeRun, pair: tuple[str, str], reason: str) -> None:
    """A pair not sent (`JudgeCall.Outcome.SKIPPED`): its reason in the cache row, which the next
    run asks again, and the run's counter."""
    qid, docno = pair
    with transaction.atomic():
        JudgeCall.objects.update_or_create(
            judge=run.judge,
            version=run.version,
            qid=qid,
            docno=docno,
            defaults={
                "outcome": JudgeCall.Outcome.SKIPPED,
                "grade": None,
                "probs": None,
                "text": reason,
                "tokens_in": 0,
                "tokens_out": 0,
                "seconds": 0.0,
                "cost": 0.0,
                "run": run,
            },
        )
        JudgeRun.objects.filter(pk=run.pk).update(skipped=F("skipped") + 1)


def _call_text(answer: JudgeAnswer) -> str:
    """What the cache shows of an answer: the answer, a refusal's reason with the answer, or the error."""
    if answer.outcome == "error":
        return answer.error
    if answer.outcome == "refusal":
        return f"{answer.refusal}; the answer: {answer.text}" if answer.text else answer.refusal
    return answer.text


def _label_replace(
    judge: Judge,
    version: int,
    qid: str,
    docno: str,
    grade: int,
    probs: list[float] | None,
    text: str,
    seconds: float,
    cost: float,
) -> None:
    (label_class,) = judge_classes([grade], [probs], n_grades=judge.campaign.grade_count)
    JudgeLabel.objects.filter(judge=judge, human_grade__isnull=True, qid=qid, docno=docno).delete()
    JudgeLabel.objects.create(
        judge=judge,
        qid=qid,
        docno=docno,
        grade=grade,
        probs=probs,
        judge_class=int(label_class),
        rationale=text,
        seconds=seconds,
        cost=cost,
        version=version,
        source_file=f"{judge.kind} run",
    )


def judge_total_cost(judge: Judge) -> float:
    """What the judge has cost so far (every run, every version); finite (a sum past the
    largest float, of costs stored before prices were bounded, counts as that float)."""
    total = float(JudgeCall.objects.filter(judge=judge).aggregate(total=Sum("cost"))["total"] or 0.0)
    return total if math.isfinite(total) else sys.float_info.max
