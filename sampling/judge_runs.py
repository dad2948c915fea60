"""Judges that run inside the product: an OpenAI-compatible endpoint the worker asks, and the
built-in lexical (BM25) judge. Create and edit them (every edit of what the judge is asked is a
new version), start, cancel and resume their runs, and the worker's step.

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
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

import numpy as np
from celery import current_app
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import OperationalError, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from estimation.judges.calibration import judge_classes
from estimation.judges.endpoint import (
    EndpointAnswer,
    EndpointClient,
    EndpointSettings,
    FatalEndpointError,
    answer_cost,
)
from estimation.judges.lexical import (
    Bm25Collection,
    Thresholds,
    fit_thresholds,
    lexical_query,
    pool_scores,
    rationale,
)
from estimation.judges.prompts import DocumentText, PromptError, TopicText, check_template, render_prompt
from labeling.models import (
    Campaign,
    Document,
    Judge,
    JudgeCall,
    JudgeLabel,
    JudgeRun,
    JudgeVersion,
    PoolItem,
    Topic,
)
from labeling.outbound import key_variable_problem, outbound_allowlists, outbound_url_problem
from labeling.recompute import recompute_soon
from sampling.label_model import judged_grades
from sampling.pool_arrays import PoolArrays, pool_arrays_for

logger = logging.getLogger(__name__)

STEP_TASK = "graded.tasks.judge_run_step"
VERSIONED = ("model", "prompt", "base_url", "with_probabilities", "max_tokens")
"""Fields that change what the judge answers: editing one makes a new version."""
UNVERSIONED = (
    "notes",
    "shares_model_with",
    "concurrency",
    "requests_per_minute",
    "price_in_per_1k",
    "price_out_per_1k",
    "cost_cap",
    "api_key_variable",
)
LIMITED = (
    "concurrency",
    "max_tokens",
    "requests_per_minute",
    "price_in_per_1k",
    "price_out_per_1k",
    "cost_cap",
)
"""Settings bounded by the operator's ceilings (`judge_settings_problems`)."""
MAX_REQUESTS_PER_MINUTE = 1_000_000.0
OUTCOME_COUNTERS = {"label": "labels", "refusal": "refusals", "error": "errors"}
"""The run's counter of each answer's outcome."""
CANCEL_CHECK_SECONDS = 1.0
LOST_STEPS = 3
"""Steps in a row whose worker died (killed, out of memory) before the run fails: the sweep
and every worker start would otherwise queue the same crash again, forever."""
BATCH_PAIRS = 2000
"""Pending pairs loaded per step (a step rarely gets through more)."""


def judge_settings_problems(kind: str, fields: dict[str, Any]) -> list[str]:
    """What is wrong with a judge's settings, in words (empty: fine)."""
    problems = []
    if kind == Judge.Kind.ENDPOINT:
        base_url = str(fields.get("base_url") or "").strip()
        variable = str(fields.get("api_key_variable") or "").strip()
        if not str(fields.get("model") or "").strip():
            problems.append("an endpoint judge needs the model name the endpoint serves")
        # The operator's outbound hosts, and the hosts the key variable is bound to.
        if key_problem := key_variable_problem(variable):
            problems.append(key_problem)
            variable = ""
        if not base_url:
            problems.append("an endpoint judge needs a base URL starting with http:// or https://")
        elif problem := outbound_url_problem(base_url, key_variable=variable):
            problems.append(problem)
        try:
            check_template(str(fields.get("prompt") or ""), max_chars=settings.JUDGE_PROMPT_MAX_CHARS)
        except PromptError as error:
            problems.append(str(error))
    return problems + _limit_problems(kind, fields)


def _limit_problems(kind: str, fields: dict[str, Any]) -> list[str]:
    """The operator's ceilings (settings JUDGE_*, docs/operations.md): what a judge may spend of
    the worker's time and memory and of the money behind its key."""
    problems = []
    ceilings = {
        "concurrency": ("JUDGE_MAX_CONCURRENCY", settings.JUDGE_MAX_CONCURRENCY),
        "max_tokens": ("JUDGE_MAX_TOKENS_CEILING", settings.JUDGE_MAX_TOKENS_CEILING),
    }
    for name, (setting, high) in ceilings.items():
        value = fields.get(name)
        if value is not None and not 1 <= int(value) <= high:
            problems.append(f"{name} must be between 1 and {high} (the settings' {setting})")
    bounded = {
        "price_in_per_1k": ("JUDGE_MAX_PRICE_PER_1K", settings.JUDGE_MAX_PRICE_PER_1K),
        "price_out_per_1k": ("JUDGE_MAX_PRICE_PER_1K", settings.JUDGE_MAX_PRICE_PER_1K),
        "cost_cap": ("JUDGE_MAX_COST_CAP", settings.JUDGE_MAX_COST_CAP),
    }
    for name, (setting, most) in bounded.items():
        value = fields.get(name)
        if value is not None and not (math.isfinite(float(value)) and 0 <= float(value) <= most):
            problems.append(f"{name} must be between 0 and {most:g} (the settings' {setting})")
    rate = fields.get("requests_per_minute")
    floor = settings.JUDGE_MIN_REQUESTS_PER_MINUTE
    if rate is not None and float(rate) != 0 and not (floor <= float(rate) <= MAX_REQUESTS_PER_MINUTE):
        problems.append(
            f"requests_per_minute must be 0 (no limit) or between {floor:g} and {MAX_REQUESTS_PER_MINUTE:g} "
            "(the settings' JUDGE_MIN_REQUESTS_PER_MINUTE: one request's wait must fit in a step)"
        )
    if kind == Judge.Kind.ENDPOINT and str(fields.get("api_key_variable") or "").strip():
        # The operator's key pays: a run must stop at a cap, and the cap must measure something.
        cap = fields.get("cost_cap")
        prices = [float(fields.get(name) or 0) for name in ("price_in_per_1k", "price_out_per_1k")]
        if cap is None or not float(cap) > 0:
            problems.append("a judge that uses an API key of the settings needs a cost cap above 0")
        if not any(price > 0 for price in prices):
            problems.append(
                "a judge that uses an API key of the settings needs its prices (price_in_per_1k, "
                "price_out_per_1k) for the cost cap to count"
            )
    return problems


def normalised_prompt(prompt: str) -> str:
    """A template as the model should read it: line ends of a browser's text box (CRLF) as LF."""
    return prompt.replace("\r\n", "\n").replace("\r", "\n")


def version_record(judge: Judge, user: AbstractBaseUser | None = None) -> JudgeVersion:
    """Record the judge's current version (what it is asked)."""
    return JudgeVersion.objects.create(
        judge=judge,
        number=judge.version,
        model=judge.model,
        prompt=judge.prompt,
        asked_with={
            "base_url": judge.base_url,
            "with_probabilities": judge.with_probabilities,
            "max_tokens": judge.max_tokens,
            "thresholds": judge.thresholds,
        },
        created_by=user if user is not None and user.is_authenticated else None,  # type: ignore[misc]
    )


@transaction.atomic
def judge_update(judge: Judge, *, user: AbstractBaseUser | None = None, **changes: Any) -> Judge:
    """Edit a judge; a change of what it is asked (`VERSIONED`, or refitting a lexical judge's
    thresholds with ``refit=True``) makes a new version, whose labels replace the old ones as
    its run reaches them. ValueError with the problems, or while a run is active."""
    judge = Judge.objects.select_for_update().get(pk=judge.pk)
    refit = bool(changes.pop("refit", False))
    if isinstance(changes.get("prompt"), str):
        changes["prompt"] = normalised_prompt(changes["prompt"])
    unknown = set(changes) - {*VERSIONED, *UNVERSIONED}
    if unknown:
        raise ValueError(f"cannot change {', '.join(sorted(unknown))}")
    merged = {name: getattr(judge, name) for name in (*VERSIONED, *LIMITED, "api_key_variable")} | changes
    problems = judge_settings_problems(judge.kind, merged)
    if problems:
        raise ValueError("; ".join(problems))
    new_version = refit or any(
        name in changes and changes[name] != getattr(judge, name) for name in VERSIONED
    )
    if new_version and JudgeRun.objects.filter(judge=judge, status__in=JudgeRun.ACTIVE).exists():
        raise ValueError("cancel the judge's run before changing what it is asked")
    for name, value in changes.items():
        setattr(judge, name, value.strip() if isinstance(value, str) and name != "prompt" else value)
    if new_version:
        judge.version += 1
        judge.thresholds = None
    judge.save()
    if new_version:
        version_record(judge, user)
    return judge


def judge_run_active(judge: Judge) -> JudgeRun | None:
    return JudgeRun.objects.filter(judge=judge, status__in=JudgeRun.ACTIVE).first()


def judge_run_latest(judge: Judge) -> JudgeRun | None:
    return JudgeRun.objects.filter(judge=judge).order_by("-created_at", "-id").first()


@transaction.atomic
def judge_run_start(judge: Judge, *, user: AbstractBaseUser | None = None) -> JudgeRun:
    """Queue a run of the judge over the pool (the active one if it has one). Pairs the judge's
    current version already answered are not asked again; errors of earlier runs are."""
    if judge.kind == Judge.Kind.UPLOAD:
        raise ValueError("an uploaded judge's labels come from files; there is nothing to run")
    Judge.objects.select_for_update().filter(pk=judge.pk).first()
    active = judge_run_active(judge)
    if active is not None:
        return active
    # A judge saved before the operator's ceilings (or under looser ones) runs only within them.
    limits = _limit_problems(
        judge.kind, {name: getattr(judge, name) for name in (*LIMITED, "api_key_variable")}
    )
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
            if now - self._queued_at.get(run_id, -math.inf) >= _lease_seconds():
                logger.warning("judge run %s's lease expired (its worker died?); queueing a step", run_id)
                step_queue(run_id)
                self._queued_at[run_id] = now
                queued.append(run_id)
        return queued


def _lease_seconds() -> float:
    return max(
        3 * settings.JUDGE_RUN_CHUNK_SECONDS + 2 * settings.JUDGE_REQUEST_TIMEOUT_SECONDS,
        settings.JUDGE_STEP_MAX_SECONDS + settings.JUDGE_RUN_CHUNK_SECONDS,
    )


def _claim(run_id: int) -> bool:
    """Lease the run for a step; a lease that ran out counts a step lost with its worker."""
    now = timezone.now()
    lease = now + timedelta(seconds=_lease_seconds())
    active = JudgeRun.objects.filter(pk=run_id, status__in=JudgeRun.ACTIVE)
    if active.filter(lease_until__isnull=True).update(lease_until=lease, status=JudgeRun.Status.RUNNING):
        return True
    return bool(
        active.filter(lease_until__lt=now).update(
            lease_until=lease, status=JudgeRun.Status.RUNNING, lost_steps=F("lost_steps") + 1
        )
    )


def _renew(run_id: int) -> None:
    JudgeRun.objects.filter(pk=run_id).update(
        lease_until=timezone.now() + timedelta(seconds=_lease_seconds())
    )


def _finish(run_id: int, status: str, error: str = "") -> None:
    changes: dict[str, Any] = {"status": status, "lease_until": None, "finished_at": timezone.now()}
    if error:
        changes["last_error"] = error[:2000]
    JudgeRun.objects.filter(pk=run_id).update(**changes)


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
        _finish(run_id, JudgeRun.Status.FAILED, _step_failure(error))
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
        _finish(
            run_id,
            JudgeRun.Status.FAILED,
            f"the worker stopped during {LOST_STEPS} steps in a row (killed, or out of memory?); "
            "see the worker's log, then start the run again",
        )
        return "failed"
    if run.started_at is None:
        JudgeRun.objects.filter(pk=run_id).update(started_at=timezone.now())
    if run.cancel_requested:
        _finish(run_id, JudgeRun.Status.CANCELLED)
        return "cancelled"
    judge = run.judge
    pending = pending_pairs(run)
    if not pending:
        _finish(run_id, JudgeRun.Status.DONE)
        return "done"
    if judge.kind == Judge.Kind.LEXICAL:
        outcome = _lexical_step(run, pending)
    else:
        outcome = _endpoint_step(run, pending)
    _recompute_if_running(judge.campaign)
    JudgeRun.objects.filter(pk=run_id).update(lost_steps=0)
    if outcome == "more":
        JudgeRun.objects.filter(pk=run_id).update(lease_until=None)
        step_queue(run_id)
    return outcome


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


def _texts(
    campaign: Campaign, pairs: list[tuple[str, str]]
) -> tuple[dict[str, TopicText], dict[str, DocumentText]]:
    qids = {qid for qid, _ in pairs}
    docnos = {docno for _, docno in pairs}
    topics = {
        qid: TopicText(qid, title, description, narrative)
        for qid, title, description, narrative in Topic.objects.filter(
            campaign=campaign, qid__in=qids
        ).values_list("qid", "title", "description", "narrative")
    }
    documents = {}
    for chunk in _chunks(sorted(docnos), 500):
        for docno, title, text in Document.objects.filter(campaign=campaign, docno__in=chunk).values_list(
            "docno", "title", "text"
        ):
            documents[docno] = DocumentText(docno, title, text)
    return topics, documents


def _chunks(values: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _endpoint_step(run: JudgeRun, pending: list[tuple[str, str]]) -> str:
    judge = run.judge
    campaign = judge.campaign
    n_grades = campaign.grade_count
    version = JudgeVersion.objects.filter(judge=judge, number=run.version).first()
    template = version.prompt if version is not None else judge.prompt
    model = version.model if version is not None else judge.model
    asked = version.asked_with if version is not None else {}
    base_url = asked.get("base_url", judge.base_url)
    # Checked again here: the operator's settings may have changed since the judge was saved.
    refused = outbound_url_problem(base_url, key_variable=judge.api_key_variable)
    if refused:
        _finish(run.pk, JudgeRun.Status.FAILED, f"not run: {refused}")
        return "failed"
    endpoint = EndpointSettings(
        base_url=base_url,
        model=model,
        api_key=os.environ.get(judge.api_key_variable, "") if judge.api_key_variable else "",
        n_grades=n_grades,
        with_probabilities=bool(asked.get("with_probabilities", judge.with_probabilities)),
        concurrency=min(judge.concurrency, settings.JUDGE_MAX_CONCURRENCY),
        requests_per_minute=judge.requests_per_minute,
        timeout_seconds=settings.JUDGE_REQUEST_TIMEOUT_SECONDS,
        backoff_seconds=settings.JUDGE_RETRY_BACKOFF_SECONDS,
        max_tokens=min(int(asked.get("max_tokens", judge.max_tokens)), settings.JUDGE_MAX_TOKENS_CEILING),
        answer_max_bytes=settings.JUDGE_ANSWER_MAX_BYTES,
        allowlists=outbound_allowlists(judge.api_key_variable),
    )
    topics, documents = _texts(campaign, pending)
    spent = judge_total_cost(judge)
    prices = _prices(judge)
    state: dict[str, Any] = {
        "checked": time.monotonic(),
        "cancel": False,
        "capped": False,
        "spent": spent,
        "failing": run.failures_in_a_row,
        "unreachable": "",
    }
    failures_allowed = settings.JUDGE_FAILURES_IN_A_ROW

    def should_stop() -> bool:
        if time.monotonic() - state["checked"] >= CANCEL_CHECK_SECONDS:
            state["checked"] = time.monotonic()
            state["cancel"] = bool(
                JudgeRun.objects.filter(pk=run.pk).values_list("cancel_requested", flat=True).first()
            )
            _renew(run.pk)
        state["capped"] = judge.cost_cap is not None and state["spent"] >= judge.cost_cap
        return bool(
            state["cancel"] or state["capped"] or state["unreachable"] or time.monotonic() >= deadline
        )

    def prompts() -> Iterator[tuple[tuple[str, str], str]]:
        for qid, docno in pending:
            document = documents.get(docno)
            topic = topics.get(qid)
            if document is None or not document.body.strip() or topic is None or not topic.query:
                # Nothing to judge in the data: not sent, and not cached (fixing the data and
                # running again asks it; a refusal would be the model's answer, kept for ever).
                what = (
                    "the topic has no text"
                    if topic is None or not topic.query
                    else "the document has no text"
                )
                _store_skipped(run, (qid, docno), what)
                continue
            prompt = render_prompt(template, topic, document, n_grades=n_grades)
            if len(prompt) > settings.JUDGE_PROMPT_MAX_CHARS:
                _store_skipped(run, (qid, docno), "the prompt is longer than JUDGE_PROMPT_MAX_CHARS")
                continue
            yield (qid, docno), prompt

    try:
        with EndpointClient(endpoint) as client:
            # The step's clock starts once the client is ready (building it can take a while).
            started = time.monotonic()
            deadline = started + settings.JUDGE_RUN_CHUNK_SECONDS
            answers = client.ask_many(
                prompts(),
                should_stop=should_stop,
                should_cancel=lambda: bool(state["cancel"]),
                deadline=started + settings.JUDGE_STEP_MAX_SECONDS,
            )
            for answer in answers:
                if not answer.finished:
                    # Cut by the step's end or a stop: asked again by a later step.
                    JudgeRun.objects.filter(pk=run.pk).update(requests=F("requests") + answer.attempts)
                    continue
                cost = answer_cost(answer, per_1k_in=prices[0], per_1k_out=prices[1])
                state["spent"] += cost
                _store(run, answer, cost)
                state["failing"] = state["failing"] + 1 if answer.outcome == "error" else 0
                if state["failing"] >= failures_allowed:
                    state["unreachable"] = answer.error
    except FatalEndpointError as error:
        _finish(run.pk, JudgeRun.Status.FAILED, str(error))
        return "failed"
    if state["cancel"]:
        _finish(run.pk, JudgeRun.Status.CANCELLED)
        return "cancelled"
    if state["unreachable"]:
        message = (
            f"stopped after {state['failing']} requests in a row failed (the settings' "
            f"JUDGE_FAILURES_IN_A_ROW: {failures_allowed}); the last: {state['unreachable']}"
        )
        _finish(run.pk, JudgeRun.Status.FAILED, message)
        return "failed"
    if judge.cost_cap is not None and state["spent"] >= judge.cost_cap:
        _finish(run.pk, JudgeRun.Status.COST_CAP, f"stopped at the cost cap {judge.cost_cap:g}")
        return "cost_cap"
    return "more" if pending_pairs(run, limit=1) else _done(run.pk)


def _prices(judge: Judge) -> tuple[float, float]:
    """The judge's prices within the operator's ceiling (a judge saved before it may hold more):
    every cost stored stays finite."""
    ceiling = settings.JUDGE_MAX_PRICE_PER_1K
    return tuple(  # type: ignore[return-value]
        min(price, ceiling) if math.isfinite(price) and price >= 0 else ceiling
        for price in (judge.price_in_per_1k, judge.price_out_per_1k)
    )


def _done(run_id: int) -> str:
    _finish(run_id, JudgeRun.Status.DONE)
    return "done"


def _store(run: JudgeRun, answer: EndpointAnswer, cost: float) -> None:
    """One answer, at once: the cache row, the label (replacing the pair's earlier one) and the
    run's counters, in one transaction."""
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


def _store_skipped(run: JudgeRun, pair: tuple[str, str], reason: str) -> None:
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


def _call_text(answer: EndpointAnswer) -> str:
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


def lexical_thresholds(judge: Judge, arrays: PoolArrays, scores: Mapping[str, np.ndarray]) -> Thresholds:
    """The lexical judge's thresholds for its version: fitted at its first run from the human
    labels present then (on the pool's normalised `scores`, per topic in slot order), and kept
    (module docstring)."""
    if judge.thresholds:
        return Thresholds(tuple(float(c) for c in judge.thresholds["cuts"]), str(judge.thresholds["source"]))
    campaign = judge.campaign
    grades = judged_grades(campaign, arrays)
    pool_values, labelled_values, labelled_grades = [], [], []
    for topic, qid in enumerate(arrays.topic_qids):
        # docnos[t] are the topic's used slots 0..len - 1, in slot order.
        topic_grades = grades[topic, : len(arrays.docnos[topic])]
        seen = topic_grades >= 0
        pool_values.append(scores[qid])
        labelled_values.append(scores[qid][seen])
        labelled_grades.append(topic_grades[seen])
    thresholds = fit_thresholds(
        np.concatenate(pool_values) if pool_values else np.zeros(0),
        np.concatenate(labelled_values) if labelled_values else np.zeros(0),
        np.concatenate(labelled_grades) if labelled_grades else np.zeros(0, dtype=np.int64),
        n_grades=campaign.grade_count,
    )
    Judge.objects.filter(pk=judge.pk).update(thresholds=thresholds.as_dict())
    JudgeVersion.objects.filter(judge=judge, number=judge.version).update(
        asked_with={"thresholds": thresholds.as_dict()}
    )
    judge.thresholds = thresholds.as_dict()
    return thresholds


def _lexical_scores(campaign: Campaign, pool: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """Normalised BM25 of each topic's title and description against its pooled documents, the
    campaign's documents as the collection."""
    texts = {
        docno: f"{title}\n{text}"
        for docno, title, text in Document.objects.filter(campaign=campaign).values_list(
            "docno", "title", "text"
        )
    }
    queries = {
        qid: lexical_query(title, description)
        for qid, title, description in Topic.objects.filter(campaign=campaign).values_list(
            "qid", "title", "description"
        )
    }
    return pool_scores(Bm25Collection.of(texts), queries, pool)


def _lexical_step(run: JudgeRun, pending: list[tuple[str, str]]) -> str:
    """Every pending pair at once (BM25 of a campaign takes seconds, not minutes)."""
    judge = run.judge
    # One BM25 pass over the pool serves the thresholds (first run) and the labels.
    arrays = pool_arrays_for(judge.campaign)
    pool = {qid: list(docnos) for qid, docnos in zip(arrays.topic_qids, arrays.docnos, strict=True)}
    scores = _lexical_scores(judge.campaign, pool)
    thresholds = lexical_thresholds(judge, arrays, scores)
    score_of = {
        (qid, docno): float(value)
        for qid, docnos in pool.items()
        for docno, value in zip(docnos, scores[qid], strict=True)
    }
    for qid, docno in pending:
        score = score_of.get((qid, docno), 0.0)
        grade = int(thresholds.classes(np.array([score]))[0])
        _store(
            run, EndpointAnswer((qid, docno), grade=grade, text=rationale(score, thresholds), attempts=0), 0.0
        )
        if JudgeRun.objects.filter(pk=run.pk, cancel_requested=True).exists():
            _finish(run.pk, JudgeRun.Status.CANCELLED)
            return "cancelled"
    return "more" if pending_pairs(run, limit=1) else _done(run.pk)


def _recompute_if_running(campaign: Campaign) -> None:
    if Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.RUNNING).exists():
        recompute_soon(campaign.pk)


def judge_total_cost(judge: Judge) -> float:
    """What the judge has cost so far (every run, every version); finite (a sum past the
    largest float, of costs stored before prices were bounded, counts as that float)."""
    total = float(JudgeCall.objects.filter(judge=judge).aggregate(total=Sum("cost"))["total"] or 0.0)
    return total if math.isfinite(total) else sys.float_info.max


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
