"""Runs of the judges that run inside the product (kinds with `runs`: an OpenAI-compatible
endpoint the worker asks, the built-in lexical judge): start, cancel and resume them, the
worker's leased step, which hands the pending pairs to the judge's kind, and a run's progress.

A run works through the campaign's pool in a fixed order (best rank any system gives, then qid
and docno: never the human grades), in steps of about JUDGE_RUN_CHUNK_SECONDS; each step holds a
lease on the run (two workers never work one run), stores every answer the moment it arrives
(a label, or a refusal: both are cached by (judge, version, qid, docno) and never asked again),
then queues the next step, so recomputes after judgments wait at most one step. A worker killed
mid-step loses only the requests in flight; the run is resumed when a worker starts (or when
its lease runs out) and skips every cached pair. The API key is read from the worker's
environment at each step and never stored, logged or exported.

Why the estimate stays unbiased while labels arrive: each draw's q is computed from the labels
present when its sampling version was made, and the estimator uses the labels as they stand,
both in ``sum a h(f)`` and in the draw's correction. Its expectation is the truth given the
labels, as long as the labels do not depend on which items the humans drew or what they
answered: the run's order is fixed by the runs, an endpoint never sees a human grade, and the
lexical judge's thresholds are fitted once, at the first run of its version, and kept.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections import Counter
from datetime import timedelta
from typing import Any

from celery import current_app
from django.contrib.auth.models import AbstractBaseUser
from django.db import OperationalError, transaction
from django.db.models import Count, F
from django.utils import timezone

from estimation.judges.prompts import PromptError
from infrastructure.unavailable import UNAVAILABLE
from labeling.models import Campaign, PoolItem
from labeling.recompute import recompute_soon
from sampling.judge_calls import judge_run_finish, judge_total_cost, lease_seconds, pending_pairs
from sampling.judge_editing import judge_setting_values, limit_problems
from sampling.judge_kinds import judge_kind
from sampling.models import Judge, JudgeCall, JudgeRun

logger = logging.getLogger(__name__)

STEP_TASK = "graded.tasks.judge_run_step"
LOST_STEPS = 3
"""Steps in a row whose worker died (killed, out of memory) before the run fails: the sweep
and every worker start would otherwise queue the same crash again, forever."""


def judge_run_active(judge: Judge) -> JudgeRun | None:
    return JudgeRun.objects.filter(judge=judge, status__in=JudgeRun.ACTIVE).first()


def judge_run_latest(judge: Judge) -> JudgeRun | None:
    return JudgeRun.objects.filter(judge=judge).order_by("-created_at", "-id").first()


@transaction.atomic
def judge_run_start(judge: Judge, *, user: AbstractBaseUser | None = None) -> JudgeRun:
    """Queue a run of the judge over the pool (the active one if it has one). Pairs the judge's
    current version already answered are not asked again; errors of earlier runs are."""
    if not judge_kind(judge.kind).runs:
        raise ValueError("an uploaded judge's labels come from files; there is nothing to run")
    Judge.objects.select_for_update().filter(pk=judge.pk).first()
    active = judge_run_active(judge)
    if active is not None:
        return active
    # A judge saved before the operator's ceilings (or under looser ones) runs only within them.
    limits = limit_problems(judge.kind, judge_setting_values(judge))
    if limits:
        raise ValueError(f"edit the judge first: {'; '.join(limits)}")
    if judge.cost_cap is not None and judge_total_cost(judge) >= judge.cost_cap:
        raise ValueError(f"the judge has reached its cost cap ({judge.cost_cap:g}); raise it to run again")
    answered = JudgeCall.objects.filter(
        judge=judge, version=judge.version, outcome__in=[JudgeCall.Outcome.LABEL, JudgeCall.Outcome.REFUSAL]
    )
    run = JudgeRun.objects.create(
        judge=judge,
        version=judge.version,
        pairs_total=PoolItem.objects.filter(campaign=judge.campaign).count(),
        cached=answered.count(),
        created_by=user if user is not None and user.is_authenticated else None,  # type: ignore[misc]
    )
    run_id = run.pk
    transaction.on_commit(lambda: step_queue(run_id))
    return run


def judge_run_cancel(judge: Judge) -> JudgeRun | None:
    """Ask the active run to stop: a queued one stops at once, a running one after the requests
    in flight (their answers are kept)."""
    run = judge_run_active(judge)
    if run is None:
        return None
    JudgeRun.objects.filter(pk=run.pk, status=JudgeRun.Status.QUEUED, lease_until__isnull=True).update(
        status=JudgeRun.Status.CANCELLED, cancel_requested=True, finished_at=timezone.now()
    )
    JudgeRun.objects.filter(pk=run.pk, status__in=JudgeRun.ACTIVE).update(cancel_requested=True)
    run.refresh_from_db()
    return run


def step_queue(run_id: int, countdown: float | None = None, waited_for: str | None = None) -> None:
    """Queue the run's next step in the worker; a broker that is down leaves the run queued for
    the next worker start (which resumes every active run)."""
    try:
        current_app.send_task(STEP_TASK, args=[run_id, waited_for], countdown=countdown)
    except UNAVAILABLE as error:
        logger.warning("could not queue judge run %s (%r); a worker start resumes it", run_id, error)
    except Exception:
        logger.exception("could not queue judge run %s; a worker start resumes it", run_id)


def judge_runs_resume() -> int:
    """Queue a step of every active run (a worker starts: runs of a killed worker go on)."""
    ids = list(JudgeRun.objects.filter(status__in=JudgeRun.ACTIVE).values_list("pk", flat=True))
    for run_id in ids:
        step_queue(run_id)
    return len(ids)


class StaleJudgeRunSweep:
    """A live worker's check (`labeling.sweeper`) for runs a dead worker held: an active run whose
    lease expired gets a step queued, at most once per lease period (a step that is merely
    waiting for a busy worker is not queued twice)."""

    def __init__(self) -> None:
        self._queued_at: dict[int, float] = {}

    def __call__(self) -> list[int]:
        now = time.monotonic()
        expired = list(
            JudgeRun.objects.filter(status__in=JudgeRun.ACTIVE, lease_until__lt=timezone.now()).values_list(
                "pk", flat=True
            )
        )
        self._queued_at = {run_id: at for run_id, at in self._queued_at.items() if run_id in expired}
        queued = []
        for run_id in expired:
            if now - self._queued_at.get(run_id, -math.inf) >= lease_seconds():
                logger.warning("judge run %s's lease expired (its worker died?); queueing a step", run_id)
                step_queue(run_id)
                self._queued_at[run_id] = now
                queued.append(run_id)
        return queued


def _claim(run_id: int) -> bool:
    """Lease the run for a step; a lease that ran out counts a step lost with its worker."""
    now = timezone.now()
    lease = now + timedelta(seconds=lease_seconds())
    active = JudgeRun.objects.filter(pk=run_id, status__in=JudgeRun.ACTIVE)
    if active.filter(lease_until__isnull=True).update(lease_until=lease, status=JudgeRun.Status.RUNNING):
        return True
    return bool(
        active.filter(lease_until__lt=now).update(
            lease_until=lease, status=JudgeRun.Status.RUNNING, lost_steps=F("lost_steps") + 1
        )
    )


def judge_run_step(run_id: int, waited_for: str | None = None) -> str:
    """The worker's job: one step of a run. Returns what happened (for logs and tests).

    A step that finds the run leased waits for the lease to end, once: if the lease is then the
    one it waited for, its holder died and this step takes over; if it was renewed or released
    since, the holder is alive and queues its own next step, so this one stops (duplicate steps,
    e.g. a worker start's resumption beside a queued step, never pile up).

    A step that raises fails its run with the reason on the page (a re-queued step would only
    crash again); only the database's own trouble is left to the task's retries."""
    if not _claim(run_id):
        run = JudgeRun.objects.filter(pk=run_id).first()
        if run is None or run.status not in JudgeRun.ACTIVE:
            return "finished"
        lease = run.lease_until.isoformat() if run.lease_until else ""
        if waited_for is not None and lease != waited_for:
            return "held by a live step"
        wait = (run.lease_until - timezone.now()).total_seconds() if run.lease_until else 1.0
        step_queue(run_id, countdown=max(1.0, wait + 0.5), waited_for=lease)
        return "held"
    try:
        return _step(run_id)
    except OperationalError:
        JudgeRun.objects.filter(pk=run_id).update(lease_until=None)
        raise
    except Exception as error:
        logger.exception("judge run %s: the step failed", run_id)
        judge_run_finish(run_id, JudgeRun.Status.FAILED, _step_failure(error))
        return "failed"


def _step_failure(error: Exception) -> str:
    """Why a step failed, for the coordinator: our own message for a template, else the kind
    of error only (a remote text is never shown; the worker's log has the traceback)."""
    if isinstance(error, PromptError):
        return f"the step failed: {error}"
    return f"the step failed ({type(error).__name__}); the worker's log has the details"


def _step(run_id: int) -> str:
    run = JudgeRun.objects.select_related("judge__campaign").get(pk=run_id)
    if run.lost_steps >= LOST_STEPS:
        judge_run_finish(
            run_id,
            JudgeRun.Status.FAILED,
            f"the worker stopped during {LOST_STEPS} steps in a row (killed, or out of memory?); "
            "see the worker's log, then start the run again",
        )
        return "failed"
    if run.started_at is None:
        JudgeRun.objects.filter(pk=run_id).update(started_at=timezone.now())
    if run.cancel_requested:
        judge_run_finish(run_id, JudgeRun.Status.CANCELLED)
        return "cancelled"
    judge = run.judge
    pending = pending_pairs(run)
    if not pending:
        judge_run_finish(run_id, JudgeRun.Status.DONE)
        return "done"
    outcome = judge_kind(judge.kind).step(run, pending)
    _recompute_if_running(judge.campaign)
    JudgeRun.objects.filter(pk=run_id).update(lost_steps=0)
    if outcome == "more":
        JudgeRun.objects.filter(pk=run_id).update(lease_until=None)
        step_queue(run_id)
    return outcome


def _recompute_if_running(campaign: Campaign) -> None:
    if Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.RUNNING).exists():
        recompute_soon(campaign.pk)


def judge_run_progress(run: JudgeRun | None) -> dict[str, Any] | None:
    """A run as the page and the API show it: done of total, labels per minute, tokens, cost,
    refusals, errors, the last error."""
    if run is None:
        return None
    answered = run.cached + run.labels + run.refusals + run.errors + run.skipped
    active = run.status in JudgeRun.ACTIVE
    totals = _version_totals(run)
    reasons = [] if active else _reasons(run)
    elapsed = (
        ((run.finished_at or timezone.now()) - run.started_at).total_seconds() if run.started_at else 0.0
    )
    made = run.labels + run.refusals
    return {
        "id": run.pk,
        "version": run.version,
        "status": run.status,
        "status_label": run.get_status_display(),
        "active": active,
        "pairs_total": run.pairs_total,
        "done": min(answered, run.pairs_total) if run.pairs_total else answered,
        "fraction": min(1.0, answered / run.pairs_total) if run.pairs_total else 1.0,
        "cached": run.cached,
        "labels": run.labels,
        "refusals": run.refusals,
        "errors": run.errors,
        "skipped": run.skipped,
        "version_totals": totals,
        "reasons": reasons,
        "warning": _run_warning(run, totals, reasons),
        "requests": run.requests,
        "per_minute": round(made / elapsed * 60, 1) if elapsed > 0 else None,
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "cost": round(run.cost, 6) if math.isfinite(run.cost) else sys.float_info.max,
        "last_error": run.last_error,
        "cancel_requested": run.cancel_requested,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


REASONS_SHOWN = 5


def _version_totals(run: JudgeRun) -> dict[str, int]:
    """Answers of the run's version over every run (a resumed or repeated run's own counters
    show only its part): labels, refusals, errors and pairs not sent."""
    counts = dict(
        JudgeCall.objects.filter(judge_id=run.judge_id, version=run.version)
        .values_list("outcome")
        .annotate(n=Count("id"))
        .values_list("outcome", "n")
    )
    return {
        "labels": counts.get(JudgeCall.Outcome.LABEL, 0),
        "refusals": counts.get(JudgeCall.Outcome.REFUSAL, 0),
        "errors": counts.get(JudgeCall.Outcome.ERROR, 0),
        "skipped": counts.get(JudgeCall.Outcome.SKIPPED, 0),
    }


def _reasons(run: JudgeRun) -> list[dict[str, Any]]:
    """The commonest reasons the run's version has for refusals and pairs not sent, with counts
    (a refusal's cache text is "<reason>; the answer: <the model's answer>")."""
    tally: Counter[tuple[str, str]] = Counter()
    calls = JudgeCall.objects.filter(
        judge_id=run.judge_id,
        version=run.version,
        outcome__in=[JudgeCall.Outcome.REFUSAL, JudgeCall.Outcome.SKIPPED],
    ).values_list("outcome", "text")
    for outcome, text in calls.iterator(chunk_size=5000):
        tally[(outcome, text.split("; the answer:", 1)[0].strip()[:200])] += 1
    return [
        {"outcome": outcome, "reason": reason, "count": count}
        for (outcome, reason), count in tally.most_common(REASONS_SHOWN)
    ]


def _run_warning(run: JudgeRun, totals: dict[str, int], reasons: list[dict[str, Any]]) -> str:
    """A finished run that labelled nothing, or left pairs unsent, says so with the next step."""
    if run.status in JudgeRun.ACTIVE:
        return ""
    not_sent = [reason for reason in reasons if reason["outcome"] == JudgeCall.Outcome.SKIPPED]
    if totals["skipped"]:
        why = "; ".join(f"{reason['reason']} ({reason['count']})" for reason in not_sent) or "no text"
        return (
            f"{totals['skipped']} pairs were not sent: {why}. Upload the topics' and documents' texts "
            "(or shorten the prompt), then Run again: only those pairs are asked."
        )
    if run.status == JudgeRun.Status.DONE and totals["labels"] == 0:
        why = (
            "; ".join(f"{reason['reason']} ({reason['count']})" for reason in reasons)
            or "no answer gave a grade"
        )
        return f"No label: {why}. Check the prompt and the model's answers (Export: judge calls)."
    return ""
