"""Judges the worker asks: an OpenAI-compatible chat-completions endpoint (an LLM) with a prompt
template, at the hosts the operator allowed, within the operator's ceilings and the judge's
cost cap. The API key is read from the worker's environment at each step and never stored,
logged or exported."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator, Mapping
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
from labeling.models import Campaign, Document, JudgeRun, JudgeVersion, Topic
from outbound import checked_transport, key_variable_problem, outbound_url_problem
from sampling.judge_calls import (
    judge_answer_store,
    judge_pair_skip_store,
    judge_prices,
    judge_run_done,
    judge_run_finish,
    judge_run_lease_renew,
    judge_total_cost,
    pending_pairs,
)
from sampling.judge_kinds.base import JudgeKind

CANCEL_CHECK_SECONDS = 1.0


class EndpointKind(JudgeKind):
    name = "endpoint"
    label = "An OpenAI-compatible endpoint (LLM)"
    api_help = "an OpenAI-compatible chat-completions API the worker asks"
    own_fields: ClassVar[tuple[str, ...]] = (
        "base_url",
        "api_key_variable",
        "with_probabilities",
        "concurrency",
        "requests_per_minute",
        "price_in_per_1k",
        "price_out_per_1k",
        "cost_cap",
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
        judge_run_finish(run.pk, JudgeRun.Status.FAILED, f"not run: {refused}")
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
        transport=functools.partial(checked_transport, key_variable=judge.api_key_variable),
    )
    topics, documents = _texts(campaign, pending)
    spent = judge_total_cost(judge)
    prices = judge_prices(judge)
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
            judge_run_lease_renew(run.pk)
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
                judge_pair_skip_store(run, (qid, docno), what)
                continue
            prompt = render_prompt(template, topic, document, n_grades=n_grades)
            if len(prompt) > settings.JUDGE_PROMPT_MAX_CHARS:
                judge_pair_skip_store(run, (qid, docno), "the prompt is longer than JUDGE_PROMPT_MAX_CHARS")
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
                judge_answer_store(run, answer, cost)
                state["failing"] = state["failing"] + 1 if answer.outcome == "error" else 0
                if state["failing"] >= failures_allowed:
                    state["unreachable"] = answer.error
    except FatalEndpointError as error:
        judge_run_finish(run.pk, JudgeRun.Status.FAILED, str(error))
        return "failed"
    if state["cancel"]:
        judge_run_finish(run.pk, JudgeRun.Status.CANCELLED)
        return "cancelled"
    if state["unreachable"]:
        message = (
            f"stopped after {state['failing']} requests in a row failed (the settings' "
            f"JUDGE_FAILURES_IN_A_ROW: {failures_allowed}); the last: {state['unreachable']}"
        )
        judge_run_finish(run.pk, JudgeRun.Status.FAILED, message)
        return "failed"
    if judge.cost_cap is not None and state["spent"] >= judge.cost_cap:
        judge_run_finish(run.pk, JudgeRun.Status.COST_CAP, f"stopped at the cost cap {judge.cost_cap:g}")
        return "cost_cap"
    return "more" if pending_pairs(run, limit=1) else judge_run_done(run.pk)
