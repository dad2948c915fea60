"""Judges the worker asks: an OpenAI-compatible chat-completions endpoint (an LLM) with a prompt
template, at the hosts the operator allowed, within the operator's ceilings and the judge's
cost cap. The API key is read from the worker's environment at each step and never stored,
logged or exported."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django.conf import settings
from django.db.models import F

from estimation.judges.endpoint import EndpointClient, EndpointSettings, FatalEndpointError, answer_cost
from estimation.judges.prompts import (
    DocumentText,
    PromptError,
    TopicText,
    check_template,
    default_prompt,
    render_prompt,
)
from labeling.models import Campaign, Document, Topic
from outbound import checked_transport, key_variable_problem, key_variables, outbound_url_problem
from sampling.judge_calls import (
    judge_pair_skip_store,
    judge_prices,
    judge_run_done,
    judge_run_finish,
    judge_run_lease_renew,
    judge_total_cost,
    pending_pairs,
)
from sampling.judge_kinds.base import JudgeKind, JudgeSetting
from sampling.models import Judge, JudgeRun, JudgeVersion

CANCEL_CHECK_SECONDS = 1.0


class EndpointKind(JudgeKind):
    name = "endpoint"
    label = "An OpenAI-compatible endpoint (LLM)"
    api_help = "an OpenAI-compatible chat-completions API the worker asks"
    settings: ClassVar[tuple[JudgeSetting, ...]] = (
        JudgeSetting(
            "base_url",
            "text",
            default="",
            label="Endpoint base URL",
            help="e.g. http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM), "
            "https://api.openai.com/v1; its host must be one the settings' OUTBOUND_ALLOWED_HOSTS allow "
            "(no '?', '#' or user name)",
            versioned=True,
            column=True,
        ),
        JudgeSetting(
            "api_key_variable",
            "text",
            default="",
            label="API key from",
            help="the worker's environment variable holding the key (one the settings' JUDGE_API_KEY_HOSTS "
            "binds to the base URL's host; none: e.g. a local server); the key itself is never sent to or "
            "stored by the app",
            max_length=100,
            choices=lambda: [("", "no key")] + [(name, name) for name in key_variables()],
            column=True,
        ),
        JudgeSetting(
            "with_probabilities",
            "boolean",
            default=False,
            label="Answer with probabilities",
            help="ask for log-probabilities (labels carry probs)",
            versioned=True,
            column=True,
        ),
        JudgeSetting(
            "max_tokens",
            "integer",
            default=64,
            help="the longest answer asked for, in tokens",
            versioned=True,
            minimum=1,
            maximum=8192,
            column=True,
        ),
        JudgeSetting(
            "concurrency", "integer", default=4, help="requests at once", minimum=1, maximum=64, column=True
        ),
        JudgeSetting(
            "requests_per_minute", "number", default=0.0, help="0: no limit", minimum=0, column=True
        ),
        JudgeSetting(
            "price_in_per_1k",
            "number",
            default=0.0,
            label="Price per 1,000 prompt tokens",
            minimum=0,
            column=True,
        ),
        JudgeSetting(
            "price_out_per_1k",
            "number",
            default=0.0,
            label="Price per 1,000 answer tokens",
            minimum=0,
            column=True,
        ),
        JudgeSetting(
            "cost_cap",
            "number",
            help="runs stop once the judge has cost this much (blank: no cap)",
            minimum=0,
            blank_is_none=True,
            column=True,
        ),
    )
    about_template = "graded/judges/endpoint_about.html"
    manage_template = "graded/judges/endpoint_manage.html"

    def creation_defaults(self, campaign: Campaign, *, model: str, prompt: str) -> tuple[str, str]:
        if not prompt.strip():
            prompt = default_prompt([grade["name"] for grade in campaign.grades])
        return model, prompt

    def settings_problems(self, fields: Mapping[str, Any]) -> list[str]:
        problems = []
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
        return problems

    def limit_problems(self, fields: Mapping[str, Any]) -> list[str]:
        if not str(fields.get("api_key_variable") or "").strip():
            return []
        # The operator's key pays: a run must stop at a cap, and the cap must measure something.
        problems = []
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

    def step(self, run: JudgeRun, pending: list[tuple[str, str]]) -> str:
        return _endpoint_step(run, pending)

    def summary_extras(self, judge: Judge) -> dict[str, Any]:
        variable = judge.api_key_variable
        # Whether the web server's environment holds the key (the value is never read out).
        return {"api_key_set": bool(os.environ.get(variable)) if variable else None}


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


@dataclass
class _StepBudget:
    """What may stop one step of a run, read while answers come in: a cancel request (read from
    the database at most every CANCEL_CHECK_SECONDS, the run's lease renewed then), the judge's
    cost cap, too many failed requests in a row, and the step's deadline (set when the client is
    ready: building it can take a while)."""

    run_pk: int
    cost_cap: float | None
    spent: float
    failing: int
    failures_allowed: int
    checked: float = field(default_factory=time.monotonic)
    deadline: float | None = None
    cancel: bool = False
    unreachable: str = ""

    @property
    def capped(self) -> bool:
        return self.cost_cap is not None and self.spent >= self.cost_cap

    def should_stop(self) -> bool:
        if time.monotonic() - self.checked >= CANCEL_CHECK_SECONDS:
            self.checked = time.monotonic()
            requested = JudgeRun.objects.filter(pk=self.run_pk).values_list("cancel_requested", flat=True)
            self.cancel = bool(requested.first())
            judge_run_lease_renew(self.run_pk)
        late = self.deadline is not None and time.monotonic() >= self.deadline
        return self.cancel or self.capped or bool(self.unreachable) or late

    def answered(self, cost: float, failed: bool, error: str) -> None:
        """Count one answer: its cost, and whether it failed (with `error`, the reason)."""
        self.spent += cost
        self.failing = self.failing + 1 if failed else 0
        if self.failing >= self.failures_allowed:
            self.unreachable = error or "a failed request"

    def ending(self, judge_cost_cap: float | None) -> tuple[str, str, str] | None:
        """(the step's result, the run's final status, its message) when the run ends here."""
        if self.cancel:
            return "cancelled", JudgeRun.Status.CANCELLED, ""
        if self.unreachable:
            return (
                "failed",
                JudgeRun.Status.FAILED,
                f"stopped after {self.failing} requests in a row failed (the settings' "
                f"JUDGE_FAILURES_IN_A_ROW: {self.failures_allowed}); the last: {self.unreachable}",
            )
        if self.capped:
            return "cost_cap", JudgeRun.Status.COST_CAP, f"stopped at the cost cap {judge_cost_cap:g}"
        return None


def _endpoint_settings(run: JudgeRun) -> tuple[EndpointSettings | None, str, int]:
    """The client's settings for the run's version (None and the reason when the outbound check
    refuses its URL now: the operator's settings may have changed since the judge was saved), and
    its prompt template and grade count."""
    judge = run.judge
    version = JudgeVersion.objects.filter(judge=judge, number=run.version).first()
    template = version.prompt if version is not None else judge.prompt
    asked = version.asked_with if version is not None else {}
    base_url = asked.get("base_url", judge.base_url)
    refused = outbound_url_problem(base_url, key_variable=judge.api_key_variable)
    if refused:
        return None, refused, 0
    n_grades = judge.campaign.grade_count
    endpoint = EndpointSettings(
        base_url=base_url,
        model=version.model if version is not None else judge.model,
        api_key=os.environ.get(judge.api_key_variable, "") if judge.api_key_variable else "",
        n_grades=n_grades,
        with_probabilities=bool(asked.get("with_probabilities", judge.with_probabilities)),
        concurrency=min(judge.concurrency, settings.JUDGE_MAX_CONCURRENCY),
        requests_per_minute=judge.requests_per_minute,
        timeout_seconds=settings.JUDGE_REQUEST_TIMEOUT_SECONDS,
        backoff_seconds=settings.JUDGE_RETRY_BACKOFF_SECONDS,
        max_tokens=min(int(asked.get("max_tokens", judge.max_tokens)), settings.JUDGE_MAX_TOKENS_CEILING),
        answer_max_bytes=settings.JUDGE_ANSWER_MAX_BYTES,
        transport=functools.partial(checked_transport, key_variable=judge.api_key_variable),
    )
    return endpoint, template, n_grades


def _prompts(
    run: JudgeRun, pending: list[tuple[str, str]], template: str, n_grades: int
) -> Iterator[tuple[tuple[str, str], str]]:
    """Each pending pair's prompt; a pair with nothing to judge in the data, or whose prompt is
    too long, is recorded as skipped and not sent (nor cached: fixing the data and running again
    asks it, where a refusal would be the model's answer, kept for ever)."""
    topics, documents = _texts(run.judge.campaign, pending)
    for qid, docno in pending:
        document = documents.get(docno)
        topic = topics.get(qid)
        if document is None or not document.body.strip() or topic is None or not topic.query:
            what = "the topic has no text" if topic is None or not topic.query else "the document has no text"
            judge_pair_skip_store(run, (qid, docno), what)
            continue
        prompt = render_prompt(template, topic, document, n_grades=n_grades)
        if len(prompt) > settings.JUDGE_PROMPT_MAX_CHARS:
            judge_pair_skip_store(run, (qid, docno), "the prompt is longer than JUDGE_PROMPT_MAX_CHARS")
            continue
        yield (qid, docno), prompt


def _endpoint_step(run: JudgeRun, pending: list[tuple[str, str]]) -> str:
    judge = run.judge
    endpoint, template_or_refusal, n_grades = _endpoint_settings(run)
    if endpoint is None:
        judge_run_finish(run.pk, JudgeRun.Status.FAILED, f"not run: {template_or_refusal}")
        return "failed"
    prices = judge_prices(judge)
    budget = _StepBudget(
        run_pk=run.pk,
        cost_cap=judge.cost_cap,
        spent=judge_total_cost(judge),
        failing=run.failures_in_a_row,
        failures_allowed=settings.JUDGE_FAILURES_IN_A_ROW,
    )
    try:
        with EndpointClient(endpoint) as client:
            started = time.monotonic()
            budget.deadline = started + settings.JUDGE_RUN_CHUNK_SECONDS
            answers = client.ask_many(
                _prompts(run, pending, template_or_refusal, n_grades),
                should_stop=budget.should_stop,
                should_cancel=lambda: budget.cancel,
                deadline=started + settings.JUDGE_STEP_MAX_SECONDS,
            )
            for answer in answers:
                if not answer.finished:
                    # Cut by the step's end or a stop: asked again by a later step.
                    JudgeRun.objects.filter(pk=run.pk).update(requests=F("requests") + answer.attempts)
                    continue
                cost = answer_cost(answer, per_1k_in=prices[0], per_1k_out=prices[1])
                EndpointKind.store(run, answer, cost)
                budget.answered(cost, answer.outcome == "error", answer.error)
    except FatalEndpointError as error:
        judge_run_finish(run.pk, JudgeRun.Status.FAILED, str(error))
        return "failed"
    ending = budget.ending(judge.cost_cap)
    if ending is not None:
        result, status, message = ending
        judge_run_finish(run.pk, status, message)
        return result
    return "more" if pending_pairs(run, limit=1) else judge_run_done(run.pk)
