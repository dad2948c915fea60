"""Only the operator decides where the server calls: an endpoint judge's base URL must be a host of
OUTBOUND_ALLOWED_HOSTS and its key variable bound to that host by JUDGE_API_KEY_HOSTS, at save
(API create and PATCH, the page's form) and again at each run step; redirects are not followed;
a run's error never repeats a remote page. Only loopback is contacted; other addresses are
either refused before any connection or documentation addresses (192.0.2.0/24) that none has.

Toy campaign (tests/conftest.py) with texts (`texts_import`): 21 pooled pairs.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client, override_settings
from rest_framework.test import APIClient

from labeling.models import Campaign
from sampling import judge_create, judge_run_start, judge_run_step
from sampling.models import Judge, JudgeCall, JudgeRun
from tests.chat_server import HTML_PAGE_MARKER, ChatServerState, chat_server
from tests.sampling.helpers import SECRET, TEMPLATE, texts_import

Api = Callable[[AbstractBaseUser | None], APIClient]
FAST = {"JUDGE_REQUEST_TIMEOUT_SECONDS": 5, "JUDGE_RETRY_BACKOFF_SECONDS": 0.01}
PRICED: dict[str, Any] = {"price_in_per_1k": 0.001, "price_out_per_1k": 0.002, "cost_cap": 5}


@pytest.fixture
def server() -> Iterator[tuple[str, ChatServerState]]:
    with chat_server(ChatServerState(n_grades=3)) as found:
        yield found


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def _run(judge: Judge) -> JudgeRun:
    run = judge_run_start(judge)
    for _ in range(20):
        if judge_run_step(run.pk) != "more":
            break
    run.refresh_from_db()
    return run


@pytest.mark.parametrize(
    ("base_url", "setting"),
    [
        ("http://192.0.2.1:8000/v1", "OUTBOUND_ALLOWED_HOSTS"),  # not loopback: refused unseen
        ("http://127.0.0.1:8000/v1", "JUDGE_API_KEY_HOSTS for OPENAI_API_KEY"),  # the key's host only
    ],
)
def test_a_coordinator_cannot_create_or_patch_a_judge_to_a_host_the_operator_did_not_allow(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign, base_url: str, setting: str
) -> None:
    client = api(coordinator)
    base = f"/api/campaigns/{campaign.pk}/judges/"
    body = {"kind": "endpoint", "name": "llm", "model": "m", "api_key_variable": "OPENAI_API_KEY", **PRICED}
    refused = client.post(base, {**body, "base_url": base_url}, format="json")
    assert refused.status_code == 400 and setting in refused.content.decode()
    assert not Judge.objects.filter(campaign=campaign).exists()
    made = client.post(
        base, {**body, "api_key_variable": "", "base_url": "http://127.0.0.1:9/v1"}, format="json"
    )
    assert made.status_code == 201, made.content
    judge_url = f"{base}{made.json()['id']}/"
    changes = {"base_url": base_url, "api_key_variable": "OPENAI_API_KEY"}
    patched = client.patch(judge_url, changes, format="json")
    assert patched.status_code == 400 and setting in patched.content.decode()
    judge = Judge.objects.get(pk=made.json()["id"])
    assert (judge.base_url, judge.api_key_variable, judge.version) == ("http://127.0.0.1:9/v1", "", 1)


@override_settings(
    OUTBOUND_ALLOWED_HOSTS=("127.0.0.1:9",), JUDGE_API_KEY_HOSTS={"JUDGE_API_KEY": ("127.0.0.1:9",)}
)
def test_the_operators_lists_decide_ports_and_keys(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    client = api(coordinator)
    base = f"/api/campaigns/{campaign.pk}/judges/"
    body = {"kind": "endpoint", "model": "m", "api_key_variable": "JUDGE_API_KEY", **PRICED}
    other_port = client.post(
        base, {**body, "name": "a", "base_url": "http://127.0.0.1:8000/v1"}, format="json"
    )
    assert other_port.status_code == 400 and "OUTBOUND_ALLOWED_HOSTS" in other_port.content.decode()
    unbound = client.post(
        base,
        {**body, "name": "b", "base_url": "http://127.0.0.1:9/v1", "api_key_variable": "OPENAI_API_KEY"},
        format="json",
    )
    assert unbound.status_code == 400 and "JUDGE_API_KEY_HOSTS" in unbound.content.decode()
    allowed = client.post(base, {**body, "name": "c", "base_url": "http://127.0.0.1:9/v1"}, format="json")
    assert allowed.status_code == 201, allowed.content


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:9/v1?api-version=1",
        "http://127.0.0.1:9/v1#",
        "https://[::1",
        "http://127.0.0.1:8799:80/v1",
        "http://127.0.0.1:99999/v1",
        "http://user:secret@127.0.0.1:9/v1",
    ],
)
def test_base_urls_with_a_query_a_fragment_or_a_bad_port_are_refused_at_save(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign, base_url: str
) -> None:
    refused = api(coordinator).post(
        f"/api/campaigns/{campaign.pk}/judges/",
        {"kind": "endpoint", "name": "llm", "model": "m", "base_url": base_url},
        format="json",
    )
    assert refused.status_code == 400 and "base URL" in refused.content.decode()
    assert not Judge.objects.exists()


def test_the_page_form_refuses_a_host_outside_the_list(
    coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    page = Client()
    page.force_login(coordinator)
    answer = page.post(
        f"/campaigns/{campaign.pk}/judges/",
        {
            "judge-kind": "endpoint",
            "judge-name": "llm",
            "judge-model": "m",
            "judge-base_url": "http://192.0.2.1:8000/v1",
            "judge-api_key_variable": "",
        },
        follow=True,
    )
    assert "OUTBOUND_ALLOWED_HOSTS" in answer.content.decode() and not Judge.objects.exists()


@override_settings(**FAST)
def test_a_name_that_resolves_elsewhere_at_run_time_is_refused_and_never_contacted(
    draft_campaign: Campaign, server: tuple[str, ChatServerState], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, state = server
    real = socket.getaddrinfo
    target = {"address": "127.0.0.1"}

    def resolver(host: str, port: object, *args: object, **kwargs: object) -> object:
        name = target["address"] if host == "judge.test" else host
        return real(name, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    texts_import(draft_campaign)
    judge = judge_create(
        campaign=draft_campaign,
        name="llm",
        kind="endpoint",
        model="m",
        base_url=f"http://judge.test:{_port(url)}/v1",
        prompt=TEMPLATE,
    )
    target["address"] = "192.0.2.1"  # the name now points at an address outside the list
    run = _run(judge)
    assert run.status == JudgeRun.Status.FAILED
    assert "192.0.2.1" in run.last_error and "OUTBOUND_ALLOWED_HOSTS" in run.last_error
    assert state.requests == []


@override_settings(**FAST)
def test_a_key_is_not_sent_once_the_operator_unbinds_its_host(
    draft_campaign: Campaign, server: tuple[str, ChatServerState], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, state = server
    monkeypatch.setenv("JUDGE_API_KEY", SECRET)
    texts_import(draft_campaign)
    judge = judge_create(
        campaign=draft_campaign,
        name="llm",
        kind="endpoint",
        model="m",
        base_url=url,
        prompt=TEMPLATE,
        api_key_variable="JUDGE_API_KEY",
        **PRICED,
    )
    with override_settings(JUDGE_API_KEY_HOSTS={"JUDGE_API_KEY": ("127.0.0.1:9",)}):
        run = _run(judge)
    assert run.status == JudgeRun.Status.FAILED and "JUDGE_API_KEY_HOSTS" in run.last_error
    assert state.requests == []


@override_settings(**FAST)
def test_a_redirect_to_a_host_outside_the_list_is_not_followed(
    draft_campaign: Campaign, server: tuple[str, ChatServerState]
) -> None:
    url, state = server
    with (
        chat_server() as (elsewhere, target),
        override_settings(OUTBOUND_ALLOWED_HOSTS=(f"127.0.0.1:{_port(url)}",)),
    ):
        state.scripts = {("1", "d1-1"): [f"redirect:{elsewhere}/chat/completions"]}
        texts_import(draft_campaign)
        judge = judge_create(
            campaign=draft_campaign, name="llm", kind="endpoint", model="m", base_url=url, prompt=TEMPLATE
        )
        run = _run(judge)
    assert run.status == JudgeRun.Status.FAILED and "HTTP 302" in run.last_error
    assert target.requests == []


@override_settings(**FAST)
def test_the_runs_error_never_repeats_a_remote_page(
    draft_campaign: Campaign, server: tuple[str, ChatServerState]
) -> None:
    url, state = server
    state.scripts = {("1", "d1-1"): ["403html"]}
    texts_import(draft_campaign)
    judge = judge_create(
        campaign=draft_campaign, name="llm", kind="endpoint", model="m", base_url=url, prompt=TEMPLATE
    )
    run = _run(judge)
    assert run.status == JudgeRun.Status.FAILED
    assert run.last_error == "the endpoint answered HTTP 403"
    shown = [run.last_error, *JudgeCall.objects.filter(judge=judge).values_list("text", flat=True)]
    assert not any(HTML_PAGE_MARKER in text or "password" in text for text in shown)
