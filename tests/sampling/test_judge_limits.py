"""The operator bounds what a judge run spends: ceilings on a judge's settings (checked at save),
a step that ends by its deadline whatever the endpoint or the rate limiter do, a run that fails
after failures in a row across steps, a step that crashes failing its run visibly, finite
costs, the cost cap required with the operator's key, and a refused PATCH that changes nothing.

Toy campaign (tests/conftest.py) with texts (`texts_import`): 21 pooled pairs.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from labeling.models import Campaign
from sampling import (
    StaleJudgeRunSweep,
    judge_create,
    judge_run_start,
    judge_run_step,
    judge_summary,
    judge_update,
    judges_json,
)
from sampling.models import Judge, JudgeCall, JudgeRun, JudgeVersion
from tests.chat_server import ChatServerState, chat_server
from tests.sampling.helpers import TEMPLATE, texts_import

FAST = {"JUDGE_REQUEST_TIMEOUT_SECONDS": 5, "JUDGE_RETRY_BACKOFF_SECONDS": 0.01}


@pytest.fixture
def server() -> Iterator[tuple[str, ChatServerState]]:
    with chat_server(ChatServerState(n_grades=3)) as found:
        yield found


def endpoint_judge(campaign: Campaign, url: str, **settings: object) -> Judge:
    texts_import(campaign)
    return judge_create(
        campaign=campaign, name="llm", kind="endpoint", model="m", base_url=url, prompt=TEMPLATE, **settings
    )


@override_settings(
    JUDGE_MAX_CONCURRENCY=4,
    JUDGE_MAX_TOKENS_CEILING=256,
    JUDGE_PROMPT_MAX_CHARS=30_000,
    JUDGE_MIN_REQUESTS_PER_MINUTE=6,
    JUDGE_MAX_PRICE_PER_1K=100,
)
def test_it_refuses_settings_past_the_operators_ceilings(draft_campaign: Campaign) -> None:
    refused = {
        "concurrency": ({"concurrency": 5}, "JUDGE_MAX_CONCURRENCY"),
        "max_tokens": ({"max_tokens": 8192}, "JUDGE_MAX_TOKENS_CEILING"),
        "rpm 0.4": ({"requests_per_minute": 0.4}, "JUDGE_MIN_REQUESTS_PER_MINUTE"),
        "rpm 0.001": ({"requests_per_minute": 0.001}, "JUDGE_MIN_REQUESTS_PER_MINUTE"),
        "rpm 1e-300": ({"requests_per_minute": 1e-300}, "JUDGE_MIN_REQUESTS_PER_MINUTE"),
        "price": ({"price_in_per_1k": 1e308}, "JUDGE_MAX_PRICE_PER_1K"),
        "infinite cap": ({"cost_cap": math.inf}, "JUDGE_MAX_COST_CAP"),
        "wide field": ({"prompt": "{document:>200000000}"}, "format spec"),
        "nested field": ({"prompt": "{document:{query.__class__}}"}, "format spec"),
        "field in a field": ({"prompt": "{document:{document}}"}, "format spec"),
        "long prompt": ({"prompt": "{document}\n{document}"}, "JUDGE_PROMPT_MAX_CHARS"),
    }
    for case, (fields, reason) in refused.items():
        settings = {"model": "m", "base_url": "http://127.0.0.1:9/v1", **fields}
        with pytest.raises(ValueError, match=reason):
            judge_create(campaign=draft_campaign, name=case, kind="endpoint", **settings)  # type: ignore[arg-type]
    assert not Judge.objects.exists()
    judge = judge_create(
        campaign=draft_campaign,
        name="within",
        kind="endpoint",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        concurrency=4,
        max_tokens=256,
        requests_per_minute=6,
    )
    with pytest.raises(ValueError, match="JUDGE_MIN_REQUESTS_PER_MINUTE"):
        judge_update(judge, requests_per_minute=0.001)


def test_it_requires_a_cost_cap_with_the_operators_key(draft_campaign: Campaign) -> None:
    settings = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_variable": "JUDGE_API_KEY"}
    with pytest.raises(ValueError, match="needs a cost cap") as refused:
        judge_create(campaign=draft_campaign, name="paid", kind="endpoint", **settings)  # type: ignore[arg-type]
    assert "needs its prices" in str(refused.value)
    with pytest.raises(ValueError, match="needs its prices"):
        judge_create(campaign=draft_campaign, name="paid", kind="endpoint", cost_cap=5, **settings)  # type: ignore[arg-type]
    judge = judge_create(
        campaign=draft_campaign, name="paid", kind="endpoint", cost_cap=5, price_out_per_1k=0.01, **settings
    )  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a cost cap"):
        judge_update(judge, cost_cap=None)
    # A judge without the operator's key (an in-house server) needs neither.
    judge_create(
        campaign=draft_campaign, name="local", kind="endpoint", model="m", base_url="http://127.0.0.1:9/v1"
    )
    # One saved before the rule (or the ceilings) does not run until edited.
    Judge.objects.filter(pk=judge.pk).update(cost_cap=None, requests_per_minute=0.001)
    judge.refresh_from_db()
    with pytest.raises(ValueError, match="edit the judge first") as refused:
        judge_run_start(judge)
    assert "needs a cost cap" in str(refused.value) and "requests_per_minute" in str(refused.value)
    assert not JudgeRun.objects.exists()


@override_settings(
    JUDGE_RUN_CHUNK_SECONDS=0.3,
    JUDGE_REQUEST_TIMEOUT_SECONDS=0.7,
    JUDGE_STEP_MAX_SECONDS=1.0,  # the chunk and the timeout
    JUDGE_RETRY_BACKOFF_SECONDS=0.01,
)
def test_it_ends_a_step_by_its_deadline_however_slowly_the_endpoint_answers(
    draft_campaign: Campaign, server: tuple[str, ChatServerState]
) -> None:
    """Every answer trickles one byte every 0.2 s (each read is quick: a per-read timeout never
    fires): each request is cut at its 0.7 s, a retry (if one fits) at the step's end, and the
    step ends at its 1 s with both pairs in flight failed."""
    url, state = server
    state.trickle_seconds = 0.2
    state.scripts = {(str(q), f"d{q}-{d}"): ["trickle"] * 6 for q in (1, 2, 3) for d in range(1, 8)}
    judge = endpoint_judge(draft_campaign, url, concurrency=2)
    run = judge_run_start(judge)
    started = time.monotonic()
    assert judge_run_step(run.pk) == "more"
    assert time.monotonic() - started < 2.0
    run.refresh_from_db()
    assert run.status in JudgeRun.ACTIVE and run.errors == 2 and 2 <= run.requests <= 4
    assert "timed out" in run.last_error


@override_settings(**FAST, JUDGE_RUN_CHUNK_SECONDS=0.3, JUDGE_STEP_MAX_SECONDS=1.0)
def test_it_never_sleeps_in_the_rate_limiter_past_the_step(
    draft_campaign: Campaign, server: tuple[str, ChatServerState]
) -> None:
    """6 requests a minute, the floor: one request every 10 s, so a step of 1 s asks one pair
    and ends instead of sleeping 10 s for the next (nor does a limit stored before the floor
    existed, 1e-300 a minute, crash it)."""
    url, state = server
    judge = endpoint_judge(draft_campaign, url, concurrency=2, requests_per_minute=6)
    run = judge_run_start(judge)
    started = time.monotonic()
    assert judge_run_step(run.pk) == "more"
    assert time.monotonic() - started < 2.0 and len(state.requests) == 1
    Judge.objects.filter(pk=judge.pk).update(requests_per_minute=1e-300)
    started = time.monotonic()
    assert judge_run_step(run.pk) == "more"
    assert time.monotonic() - started < 2.0 and len(state.requests) == 2


@override_settings(**FAST, JUDGE_RUN_CHUNK_SECONDS=0.2, JUDGE_FAILURES_IN_A_ROW=4)
def test_it_fails_a_run_after_failures_in_a_row_across_steps(
    draft_campaign: Campaign, server: tuple[str, ChatServerState]
) -> None:
    """Concurrency 1 and an endpoint whose every attempt fails slowly: one failed pair per step.
    The count goes on from step to step, so the run stops after 4 (it ran forever when every
    step started the count again)."""
    url, state = server
    state.delay_seconds = 0.05  # 6 attempts of a pair outlast a step's 0.2 s
    state.scripts = {(str(q), f"d{q}-{d}"): ["500"] * 20 for q in (1, 2, 3) for d in range(1, 8)}
    judge = endpoint_judge(draft_campaign, url, concurrency=1)
    run = judge_run_start(judge)
    outcomes = []
    for _ in range(10):
        outcomes.append(judge_run_step(run.pk))
        if outcomes[-1] != "more":
            break
    run.refresh_from_db()
    assert outcomes[-1] == "failed" and run.status == JudgeRun.Status.FAILED
    assert run.errors == 4 and len(outcomes) == 4
    assert "4 requests in a row failed" in run.last_error and "HTTP 500" in run.last_error


@override_settings(**FAST)
def test_it_fails_a_run_whose_step_crashes_with_the_reason_on_the_page(
    draft_campaign: Campaign, server: tuple[str, ChatServerState]
) -> None:
    """A template saved before the save check (it fails to render), then a step that raises
    anywhere: the run fails with a reason, and no sweep queues it again."""
    url, _ = server
    judge = endpoint_judge(draft_campaign, url)
    for template in ("{document:{query.__class__}}", "{document:{document}}"):
        JudgeVersion.objects.filter(judge=judge).update(prompt=template)
        run = judge_run_start(judge)
        assert judge_run_step(run.pk) == "failed"
        run.refresh_from_db()
        assert run.status == JudgeRun.Status.FAILED and "template" in run.last_error
        assert judge_summary(judge)["run"]["last_error"] == run.last_error
    JudgeVersion.objects.filter(judge=judge).update(prompt=TEMPLATE)
    run = judge_run_start(judge)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sampling.judge_runs.pending_pairs", _raises)
        assert judge_run_step(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED and "ZeroDivisionError" in run.last_error
    JudgeRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert StaleJudgeRunSweep()() == []
    # Base URLs httpx refuses to parse, saved before the checks: failed with a reason, not raised.
    for base_url in ("https://[::1", "http://127.0.0.1:8799:80/v1"):
        run = judge_run_start(judge)
        JudgeVersion.objects.filter(judge=judge).update(asked_with={"base_url": base_url})
        assert judge_run_step(run.pk) == "failed"
        run.refresh_from_db()
        assert run.status == JudgeRun.Status.FAILED and run.last_error


def _raises(*_: object, **__: object) -> list[tuple[str, str]]:
    raise ZeroDivisionError("a bug")


def test_it_fails_a_run_whose_worker_keeps_dying(draft_campaign: Campaign) -> None:
    """A step that kills its worker (out of memory) leaves its lease to run out; the sweep or a
    worker start queues it again, but not forever: the step that takes over a run after 3 lost
    steps in a row fails it with the reason."""
    texts_import(draft_campaign)
    judge = judge_create(campaign=draft_campaign, name="bm25", kind="lexical")
    run = judge_run_start(judge)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sampling.judge_kinds.lexical._lexical_step", _killed)
        for _ in range(3):
            with pytest.raises(_WorkerKilled):
                judge_run_step(run.pk)
            JudgeRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
        assert judge_run_step(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED and "3 steps in a row" in run.last_error
    assert StaleJudgeRunSweep()() == []


class _WorkerKilled(BaseException):
    """What the step sees of a kill: nothing after it runs (an exception no handler takes)."""


def _killed(*_: object) -> str:
    raise _WorkerKilled


def _completion(content: str, usage: object, logprobs: object = None) -> str:
    choice: dict[str, object] = {"message": {"content": content}}
    if logprobs is not None:
        choice["logprobs"] = logprobs
    return "json:" + json.dumps({"choices": [choice], "usage": usage})


@override_settings(**FAST, JUDGE_MAX_PRICE_PER_1K=100)
def test_it_runs_through_a_hostile_endpoint_with_every_cost_finite(
    draft_campaign: Campaign, server: tuple[str, ChatServerState]
) -> None:
    url, state = server
    top = [{"token": "1", "logprob": -0.1}, {"token": "0", "logprob": -2.0}]
    state.scripts = {
        ("1", "d1-1"): [_completion("##final score: 1", {"prompt_tokens": 1e300, "completion_tokens": 5})],
        ("1", "d1-2"): [
            _completion("1", {}, {"content": [{"token": "1", "logprob": 1000, "top_logprobs": top}]})
        ],
        ("1", "d1-3"): [
            _completion("1", {}, {"content": [{"token": "1", "logprob": "x", "top_logprobs": top}]})
        ],
        ("1", "d1-4"): [
            _completion(
                "1",
                {},
                {
                    "content": [
                        {
                            "token": "1",
                            "logprob": -0.1,
                            "top_logprobs": [*top, {"token": "²", "logprob": -0.5}],
                        }
                    ]
                },
            )
        ],
    }
    judge = endpoint_judge(
        draft_campaign, url, with_probabilities=True, price_in_per_1k=100, price_out_per_1k=100
    )
    run = judge_run_start(judge)
    Judge.objects.filter(pk=judge.pk).update(price_in_per_1k=1e308)  # changed under the run
    for _ in range(20):
        if judge_run_step(run.pk) != "more":
            break
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE and (run.labels, run.refusals) == (20, 1)
    costs = list(JudgeCall.objects.filter(judge=judge).values_list("cost", flat=True))
    assert all(math.isfinite(cost) for cost in costs) and math.isfinite(run.cost)
    exported = judges_json(draft_campaign)
    assert "Infinity" not in exported and json.loads(exported)["judges"][0]["total_cost"] < 1e12


def test_a_refused_patch_changes_nothing(
    api: Callable[[AbstractBaseUser | None], APIClient], coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    base = f"/api/campaigns/{campaign.pk}/judges/"
    client = api(coordinator)
    endpoint = {"kind": "endpoint", "name": "llm", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    judge_id = client.post(base, endpoint, format="json").json()["id"]
    refused = client.patch(
        f"{base}{judge_id}/", {"use_for_sampling": True, "prompt": "{nope}"}, format="json"
    )
    assert refused.status_code == 400
    judge = Judge.objects.get(pk=judge_id)
    assert not judge.chosen_for_sampling and judge.version == 1
    chosen = client.patch(f"{base}{judge_id}/", {"use_for_sampling": True}, format="json")
    assert chosen.status_code == 200 and Judge.objects.get(pk=judge_id).chosen_for_sampling
    # Prices that would make the total cost infinite are a 400, and the list still answers.
    priced = client.post(
        base, {**endpoint, "name": "dear", "price_in_per_1k": 1e308, "price_out_per_1k": 1e308}, format="json"
    )
    assert priced.status_code == 400 and "JUDGE_MAX_PRICE_PER_1K" in priced.content.decode()
    assert client.get(base).status_code == 200
