"""Judges that run inside the product, through the services, with a real HTTP round trip to a
local chat-completions server (`tests.chat_server`): versions, the cache (a second run asks
nothing), refusals counted and never guessed, retries, the cost cap, cancel, a fatal answer,
the key never stored or exported, and the lexical judge. The steps run in this process here;
tests/sampling/test_judge_worker.py runs them in a real worker and kills it mid-run.

Toy campaign (tests/conftest.py): three topics, runs alpha and beta, grades 0-2, DCG@5,
21 pooled pairs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from django.test import override_settings

from labeling.models import Campaign, Document, Topic
from sampling import (
    judge_create,
    judge_labels_csv,
    judge_run_cancel,
    judge_run_start,
    judge_run_step,
    judge_summary,
    judge_update,
    judges_json,
)
from sampling.models import Judge, JudgeCall, JudgeLabel, JudgeRun, JudgeVersion
from tests.chat_server import ChatServerState, chat_server, grade_of
from tests.sampling.helpers import SECRET, TEMPLATE, run_to_end, texts_import
from webhooks.models import WebhookEvent

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


@pytest.fixture
def server() -> Iterator[tuple[str, ChatServerState]]:
    with chat_server(ChatServerState(n_grades=3)) as found:
        yield found


@pytest.fixture
def endpoint_judge(
    draft_campaign: Campaign, server: tuple[str, ChatServerState], monkeypatch: pytest.MonkeyPatch
) -> Judge:
    monkeypatch.setenv("JUDGE_API_KEY", SECRET)
    texts_import(draft_campaign)
    return judge_create(
        campaign=draft_campaign,
        name="llm",
        kind="endpoint",
        model="fake-judge",
        base_url=server[0],
        api_key_variable="JUDGE_API_KEY",
        prompt=TEMPLATE,
        price_in_per_1k=1.0,
        price_out_per_1k=2.0,
        cost_cap=1000.0,
        concurrency=3,
    )


@override_settings(JUDGE_REQUEST_TIMEOUT_SECONDS=2, JUDGE_RETRY_BACKOFF_SECONDS=0.01)
def test_a_run_labels_the_pool_and_a_second_run_asks_nothing(
    endpoint_judge: Judge, server: tuple[str, ChatServerState]
) -> None:
    _, state = server
    run = run_to_end(endpoint_judge)
    assert run.status == JudgeRun.Status.DONE
    assert (run.pairs_total, run.labels, run.refusals, run.errors) == (21, 21, 0, 0)
    # The webhook event of a finished run (recorded whether or not a webhook asked for it).
    finished = WebhookEvent.objects.get(campaign=endpoint_judge.campaign, name="judge_run.finished")
    assert (finished.data["run"], finished.data["labels"], finished.data["status"]) == (run.pk, 21, "done")
    assert len(state.requests) == 21 and max(state.asked().values()) == 1
    labels = {(label.qid, label.docno): label for label in JudgeLabel.objects.filter(judge=endpoint_judge)}
    assert {pair: label.grade for pair, label in labels.items()} == {
        pair: grade_of(*pair, 3) for pair in state.asked()
    }
    assert {label.version for label in labels.values()} == {1}
    # Cost from the reported tokens: 1.0 per 1,000 in, 2.0 per 1,000 out.
    calls = JudgeCall.objects.filter(judge=endpoint_judge)
    assert run.tokens_in == sum(c.tokens_in for c in calls) > 0 and run.tokens_out == 21 * 5
    assert run.cost == pytest.approx(run.tokens_in / 1000 + run.tokens_out / 1000 * 2)
    again = run_to_end(endpoint_judge)
    assert again.status == JudgeRun.Status.DONE and again.cached == 21 and again.requests == 0
    assert len(state.requests) == 21  # the cache: nothing asked twice


@override_settings(JUDGE_REQUEST_TIMEOUT_SECONDS=1, JUDGE_RETRY_BACKOFF_SECONDS=0.01)
def test_refusals_are_counted_errors_retried_and_nothing_guessed(
    endpoint_judge: Judge, server: tuple[str, ChatServerState]
) -> None:
    _, state = server
    state.hang_seconds = 1.5
    state.scripts = {
        ("1", "d1-1"): ["text:I would rather not say"],
        ("1", "d1-2"): ["text:##final score: 5"],
        ("1", "d1-3"): ["malformed"],
        ("2", "d2-1"): ["429", "500"],
        ("2", "d2-2"): ["timeout"],
        ("3", "d3-1"): ["500"] * 10,
    }
    run = run_to_end(endpoint_judge)
    assert (run.labels, run.refusals, run.errors) == (17, 3, 1)
    assert run.requests == len(state.requests)  # every attempt counted, retries included
    assert "HTTP 500" in run.last_error
    assert state.asked()["2", "d2-1"] == 3 and state.asked()["2", "d2-2"] == 2
    assert not JudgeLabel.objects.filter(
        judge=endpoint_judge, qid="1", docno__in=["d1-1", "d1-2", "d1-3"]
    ).exists()
    refusal = JudgeCall.objects.get(judge=endpoint_judge, qid="1", docno="d1-2")
    assert refusal.outcome == "refusal" and "outside the scale 0-2" in refusal.text
    # The next run retries the error, not the refusals (cached: the model would say the same).
    asked_before = state.asked()
    state.scripts = {}
    again = run_to_end(endpoint_judge)
    assert (again.labels, again.refusals, again.errors, again.cached) == (1, 0, 0, 20)
    assert state.asked() - asked_before == {("3", "d3-1"): 1}
    summary = judge_summary(endpoint_judge)
    assert summary["run"]["labels"] == 1 and summary["coverage"]["labelled"] == 18


@override_settings(JUDGE_REQUEST_TIMEOUT_SECONDS=2, JUDGE_RETRY_BACKOFF_SECONDS=0.01)
def test_the_cost_cap_stops_the_run(endpoint_judge: Judge, server: tuple[str, ChatServerState]) -> None:
    judge_update(endpoint_judge, cost_cap=0.2, concurrency=1)
    endpoint_judge.refresh_from_db()
    run = run_to_end(endpoint_judge)
    assert run.status == JudgeRun.Status.COST_CAP and "cost cap" in run.last_error
    # Stopped once the spend reached the cap: at most the one request in flight beyond it.
    per_request = run.cost / run.labels
    assert 0.2 <= run.cost < 0.2 + per_request + 1e-9 and run.labels < 21
    with pytest.raises(ValueError, match="cost cap"):
        judge_run_start(endpoint_judge)


@override_settings(JUDGE_REQUEST_TIMEOUT_SECONDS=2, JUDGE_RETRY_BACKOFF_SECONDS=0.01)
def test_cancel_stops_a_queued_run_at_once_and_a_running_one_at_the_next_check(endpoint_judge: Judge) -> None:
    run = judge_run_start(endpoint_judge)
    judge_run_cancel(endpoint_judge)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.CANCELLED and not JudgeCall.objects.exists()
    run = judge_run_start(endpoint_judge)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
    judge_run_cancel(endpoint_judge)
    assert judge_run_step(run.pk) == "cancelled"
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.CANCELLED and run.finished_at is not None


@override_settings(JUDGE_REQUEST_TIMEOUT_SECONDS=2, JUDGE_RETRY_BACKOFF_SECONDS=0.01)
def test_a_wrong_key_fails_the_run_with_the_answer(
    endpoint_judge: Judge, server: tuple[str, ChatServerState]
) -> None:
    _, state = server
    state.scripts = {("1", "d1-1"): ["401"], ("1", "d1-2"): ["401"], ("1", "d1-3"): ["401"]}
    run = run_to_end(endpoint_judge)
    assert run.status == JudgeRun.Status.FAILED and "HTTP 401" in run.last_error
    failed = WebhookEvent.objects.get(campaign=endpoint_judge.campaign, name="judge_run.failed")
    assert failed.data["run"] == run.pk and "HTTP 401" in failed.data["error"]


@override_settings(JUDGE_REQUEST_TIMEOUT_SECONDS=2, JUDGE_RETRY_BACKOFF_SECONDS=0.01)
def test_every_edit_of_the_prompt_is_a_new_version_and_labels_keep_theirs(
    endpoint_judge: Judge, server: tuple[str, ChatServerState]
) -> None:
    _, state = server
    run_to_end(endpoint_judge)
    judge_update(endpoint_judge, concurrency=2)  # not what the judge is asked: same version
    endpoint_judge.refresh_from_db()
    assert endpoint_judge.version == 1
    judge = judge_update(endpoint_judge, prompt=TEMPLATE + "\nBe strict.")
    assert judge.version == 2
    assert list(JudgeVersion.objects.filter(judge=judge).values_list("number", flat=True)) == [1, 2]
    assert JudgeVersion.objects.get(judge=judge, number=2).prompt.endswith("Be strict.")
    assert "2 versions" not in " ".join(judge_summary(judge)["warnings"])
    run = run_to_end(judge)
    assert run.version == 2 and run.labels == 21 and len(state.requests) == 42
    assert set(JudgeLabel.objects.filter(judge=judge).values_list("version", flat=True)) == {2}
    assert "Be strict." in state.requests[-1]["body"]["messages"][0]["content"]
    with pytest.raises(ValueError, match="unknown field"):
        judge_update(judge, prompt="{document} {passages}")


def test_bad_endpoint_settings_are_refused_by_name(draft_campaign: Campaign) -> None:
    with pytest.raises(ValueError) as refused:
        judge_create(
            campaign=draft_campaign,
            name="x",
            kind="endpoint",
            base_url="ftp://x",
            api_key_variable="SECRET_KEY",
        )
    message = str(refused.value)
    assert (
        "http:// or https://" in message and "model name" in message and "'SECRET_KEY' is not one" in message
    )
    assert not Judge.objects.exists()
    default = judge_create(
        campaign=draft_campaign, name="y", kind="endpoint", base_url="http://localhost:9/v1", model="m"
    )
    assert "{document}" in default.prompt and "0 = Bad" in default.prompt  # the campaign's grade names


@override_settings(JUDGE_REQUEST_TIMEOUT_SECONDS=2, JUDGE_RETRY_BACKOFF_SECONDS=0.01)
def test_the_key_is_never_stored_logged_or_exported(
    endpoint_judge: Judge, server: tuple[str, ChatServerState], caplog: pytest.LogCaptureFixture
) -> None:
    _, state = server
    caplog.set_level(logging.DEBUG)
    state.scripts = {("1", "d1-1"): ["500", "500", "500", "500", "500", "500"]}
    run_to_end(endpoint_judge)
    assert state.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
    stored = []
    for model in (Judge, JudgeVersion, JudgeRun, JudgeCall, JudgeLabel):
        stored += [json.dumps(row, default=str) for row in model.objects.values()]
    exported = judges_json(endpoint_judge.campaign) + "".join(judge_labels_csv(endpoint_judge.campaign))
    shown = json.dumps(judge_summary(endpoint_judge), default=str)
    for text in ["\n".join(stored), exported, shown, caplog.text]:
        assert SECRET not in text
    assert "JUDGE_API_KEY" in shown  # the variable's name is shown, never its value


def test_the_lexical_judge_grades_by_word_overlap_with_thresholds_kept(draft_campaign: Campaign) -> None:
    texts_import(draft_campaign)
    judge = judge_create(campaign=draft_campaign, name="bm25", kind="lexical")
    assert "weak" in judge.model
    run = run_to_end(judge)
    assert run.status == JudgeRun.Status.DONE and run.labels == 21 and run.requests == 0
    grades = dict(JudgeLabel.objects.filter(judge=judge, qid="1").values_list("docno", "grade"))
    # The more a document repeats its topic's words, the higher (never lower) its grade.
    ordered = [grades[f"d1-{d}"] for d in range(1, 8)]
    assert ordered == sorted(ordered, reverse=True) and ordered[0] == 2 and ordered[-1] == 0
    judge.refresh_from_db()
    assert judge.thresholds["source"] == "default shares"
    assert "BM25" in JudgeLabel.objects.filter(judge=judge).first().rationale
    assert any("weak judge" in warning for warning in judge_summary(judge)["warnings"])
    refit = judge_update(judge, refit=True)
    assert refit.version == 2 and refit.thresholds is None


def test_an_upload_judge_has_nothing_to_run(draft_campaign: Campaign) -> None:
    judge = judge_create(campaign=draft_campaign, name="files")
    with pytest.raises(ValueError, match="nothing to run"):
        judge_run_start(judge)


def test_stub_documents_are_not_sent_and_not_cached(
    draft_campaign: Campaign, server: tuple[str, ChatServerState]
) -> None:
    judge = judge_create(
        campaign=draft_campaign, name="llm", kind="endpoint", model="m", base_url=server[0], prompt=TEMPLATE
    )
    Topic.objects.filter(campaign=draft_campaign).update(title="some topic")
    assert not Document.objects.filter(campaign=draft_campaign).exclude(text="").exists()
    run = run_to_end(judge)
    assert run.skipped == 21 and run.refusals == 0 and run.requests == 0 and not server[1].requests
    call = JudgeCall.objects.filter(judge=judge).first()
    assert call is not None and (call.outcome, call.text) == ("skipped", "the document has no text")


def test_a_step_that_finds_the_run_leased_waits_once_and_gives_way_to_a_live_holder(
    draft_campaign: Campaign,
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    texts_import(draft_campaign)
    judge = judge_create(campaign=draft_campaign, name="bm25", kind="lexical")
    run = judge_run_start(judge)
    held_until = timezone.now() + timedelta(seconds=60)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING, lease_until=held_until)
    assert judge_run_step(run.pk) == "held"  # re-queued to look again when the lease ends
    # The holder renewed its lease meanwhile: alive, so the waiting step stops.
    assert judge_run_step(run.pk, waited_for=held_until.isoformat()) == "held"
    JudgeRun.objects.filter(pk=run.pk).update(lease_until=held_until + timedelta(seconds=30))
    assert judge_run_step(run.pk, waited_for=held_until.isoformat()) == "held by a live step"
    # The holder died: its lease ran out, and the waiting step takes the run over.
    JudgeRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert judge_run_step(run.pk, waited_for=held_until.isoformat()) == "done"
    assert JudgeLabel.objects.filter(judge=judge).count() == 21


def test_a_live_workers_sweep_resumes_a_run_whose_worker_died(draft_campaign: Campaign) -> None:
    """The sweep of every live worker (labeling.sweeper) queues a step of a run whose lease ran
    out, once per lease period, and leaves a run with a live lease alone."""
    from datetime import timedelta

    from django.utils import timezone

    from sampling import StaleJudgeRunSweep
    from tests.labeling.helpers import queued_messages

    texts_import(draft_campaign)
    judge = judge_create(campaign=draft_campaign, name="bm25", kind="lexical")
    run = judge_run_start(judge)
    queued_messages()
    sweep = StaleJudgeRunSweep()
    JudgeRun.objects.filter(pk=run.pk).update(
        status=JudgeRun.Status.RUNNING, lease_until=timezone.now() + timedelta(seconds=60)
    )
    assert sweep() == [] and queued_messages() == []  # a live holder
    JudgeRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert sweep() == [run.pk]
    assert queued_messages() == [("graded.tasks.judge_run_step", [run.pk, None])]
    assert sweep() == []  # the step it queued may merely wait for a busy worker
    assert judge_run_step(run.pk) == "done"
    assert sweep() == [] and JudgeLabel.objects.filter(judge=judge).count() == 21


def test_a_step_budget_ends_a_run_on_failures_in_a_row_the_cost_cap_or_a_cancel() -> None:
    """The endpoint step's stops, in their order: a cancel, failures in a row (even answers that
    failed without a reason text), the cost cap; a success resets the failures."""
    from sampling.judge_kinds.endpoint import _StepBudget

    budget = _StepBudget(run_pk=0, cost_cap=1.0, spent=0.0, failing=0, failures_allowed=2)
    budget.answered(0.25, True, "")
    budget.answered(0.25, False, "")
    budget.answered(0.0, True, "")
    assert budget.ending(1.0) is None and budget.failing == 1
    budget.answered(0.0, True, "")
    result, status, message = budget.ending(1.0) or ("", "", "")
    assert (result, status) == ("failed", JudgeRun.Status.FAILED) and "2 requests in a row" in message
    capped = _StepBudget(run_pk=0, cost_cap=1.0, spent=0.75, failing=0, failures_allowed=2)
    capped.answered(0.25, False, "")
    assert capped.capped and capped.ending(1.0) == (
        "cost_cap",
        JudgeRun.Status.COST_CAP,
        "stopped at the cost cap 1",
    )
    capped.cancel = True
    assert capped.ending(1.0) == ("cancelled", JudgeRun.Status.CANCELLED, "")
