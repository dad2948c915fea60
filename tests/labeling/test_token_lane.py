"""The token lane (config/token_lane.py): a token request without a cookie to the judging API's
hot endpoints skips the session-only middleware, and gets what the full chain gives it, for every
kind of caller: the same status, body and headers (but `Vary: Cookie`)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.db import close_old_connections
from rest_framework.authtoken.models import Token
from rest_framework.views import APIView

from config.token_lane import TokenLaneWSGIHandler, lane_request, session_free_middleware
from labeling.models import Campaign, Judgment
from tests.url_table import url_table

Reply = tuple[str, dict[str, str], bytes]


@contextmanager
def _keeping_the_test_transaction() -> Iterator[None]:
    # As Django's test client does: a handler called directly would close the connection that
    # holds the test's transaction at the start and end of every request.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def _environ(method: str, path: str, body: bytes = b"", **headers: str) -> dict[str, Any]:
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "testserver",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(),
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": "application/json" if body else "",
    }
    return environ | {f"HTTP_{name.upper()}": value for name, value in headers.items()}


def _call(application: WSGIHandler, environ: dict[str, Any]) -> Reply:
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        started.update(status=status, headers=dict(headers))

    with _keeping_the_test_transaction():
        response = application(environ, start_response)
        try:
            body = b"".join(response)
        finally:
            response.close()
    return started["status"], started["headers"], body


def _key(user: AbstractBaseUser) -> str:
    return Token.objects.get_or_create(user=user)[0].key


def _next(campaign: Campaign, key: str) -> dict[str, Any]:
    return _environ("GET", f"/api/campaigns/{campaign.pk}/next/", authorization=f"Token {key}")


def _answer(task: int, key: str, grade: Any = 1) -> dict[str, Any]:
    body = json.dumps({"grade": grade, "seconds": 2.5}).encode()
    return _environ("POST", f"/api/tasks/{task}/answer/", body, authorization=f"Token {key}")


def _without_vary(headers: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items() if name != "Vary"}


def _shape(value: Any) -> Any:
    """A JSON value's keys and value types, nested: what two leases of two items share."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    return type(value).__name__


def _same_reply(lane: Reply, full: Reply, *, same_item: bool = True) -> None:
    """Equal status, headers but Vary, and body (for replies about two different items, equal
    JSON shapes)."""
    assert lane[0] == full[0]
    assert _without_vary(lane[1]) == _without_vary(full[1])
    if same_item:
        assert lane[2] == full[2]
    else:
        assert _shape(json.loads(lane[2])) == _shape(json.loads(full[2]))


def test_a_judgment_through_the_lane_is_answered_and_stored_as_through_the_full_chain(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    lane, full = TokenLaneWSGIHandler(), WSGIHandler()
    lane_key, full_key = _key(assessor), _key(second_assessor)
    lane_next, full_next = _call(lane, _next(campaign, lane_key)), _call(full, _next(campaign, full_key))
    assert lane_next[0] == "200 OK"
    assert lane_next[1]["Content-Length"] == str(len(lane_next[2]))
    assert "Cookie" in full_next[1]["Vary"] and "Vary" not in lane_next[1]
    _same_reply(lane_next, full_next, same_item=False)
    lane_task, full_task = json.loads(lane_next[2])["task"], json.loads(full_next[2])["task"]
    assert lane_task != full_task
    lane_answer = _call(lane, _answer(lane_task, lane_key))
    full_answer = _call(full, _answer(full_task, full_key))
    assert lane_answer[0] == "201 Created"
    _same_reply(lane_answer, full_answer, same_item=False)
    stored = Judgment.objects.get(task_id=lane_task)
    assert (stored.assessor_id, stored.grade, stored.seconds) == (assessor.pk, 1, 2.5)
    # A double submit through the lane stores nothing more, as through the full chain.
    assert _call(lane, _answer(lane_task, lane_key))[0] == "200 OK"
    assert Judgment.objects.filter(task_id=lane_task).count() == 1
    # A token request to an endpoint off the lane takes the full chain, with the route the lane's
    # check resolved: the same reply as Django's own handler gives.
    progress = _environ("GET", f"/api/campaigns/{campaign.pk}/progress/", authorization=f"Token {lane_key}")
    lane_progress = _call(lane, progress | {"wsgi.input": io.BytesIO()})
    assert lane_progress[0] == "200 OK"
    assert lane_progress == _call(full, progress)


def test_refusals_through_the_lane_are_the_full_chain_s(
    campaign: Campaign, assessor: AbstractBaseUser, make_user: Callable[..., AbstractBaseUser]
) -> None:
    lane, full = TokenLaneWSGIHandler(), WSGIHandler()
    outsider_key = _key(make_user("oscar", None))
    task = json.loads(_call(full, _next(campaign, _key(assessor)))[2])["task"]
    refused = {
        "an unknown token": _next(campaign, "not-a-token"),
        "a user who does not judge here": _next(campaign, outsider_key),
        "an answer to someone else's task": _answer(task, outsider_key),
        "a grade out of range": _answer(task, _key(assessor), grade=9),
        "a body that is no JSON object": _environ(
            "POST", f"/api/tasks/{task}/answer/", b"[1]", authorization=f"Token {_key(assessor)}"
        ),
    }
    for name, environ in refused.items():
        # Each chain reads its own copy of the body.
        lane_reply = _call(lane, environ | {"wsgi.input": io.BytesIO(environ["wsgi.input"].getvalue())})
        full_reply = _call(full, environ)
        assert lane_reply[0].startswith("4"), name
        _same_reply(lane_reply, full_reply)
    assert not Judgment.objects.filter(task_id=task).exists()


def test_only_token_requests_without_a_cookie_to_marked_views_take_the_lane(campaign: Campaign) -> None:
    token = "Token abc"
    next_path = f"/api/campaigns/{campaign.pk}/next/"
    assert lane_request(WSGIRequest(_environ("GET", next_path, authorization=token)))
    assert lane_request(WSGIRequest(_environ("POST", "/api/tasks/1/answer/", authorization="token abc")))
    full_chain = {
        "a session cookie": _environ("GET", next_path, authorization=token, cookie="sessionid=x"),
        "any cookie": _environ("GET", next_path, authorization=token, cookie="theme=dark"),
        "no token": _environ("GET", next_path),
        "basic credentials": _environ("GET", next_path, authorization="Basic YTpi"),
        "an endpoint not marked": _environ(
            "GET", f"/api/campaigns/{campaign.pk}/progress/", authorization=token
        ),
        "a page": _environ("GET", f"/judge/{campaign.pk}/", authorization=token),
        "no such path": _environ("GET", "/api/nowhere/", authorization=token),
    }
    for name, environ in full_chain.items():
        assert not lane_request(WSGIRequest(environ)), name


def test_the_lane_s_views_are_drf_views_that_need_no_login_from_django() -> None:
    # Without Django's user, session and login middleware, only a view that authenticates by
    # itself and was never behind the login redirect behaves as on the full chain.
    marked = {
        route: pattern.callback
        for route, pattern in url_table()
        if getattr(getattr(pattern.callback, "view_class", None), "serves_the_token_lane", False)
    }
    assert len(marked) == 2, marked
    for route, view in marked.items():
        assert issubclass(view.view_class, APIView), route
        assert view.login_required is False, route


def test_the_lane_runs_every_middleware_but_the_session_only_ones() -> None:
    assert set(settings.SESSION_ONLY_MIDDLEWARE) <= set(settings.MIDDLEWARE)
    kept = session_free_middleware()
    assert set(settings.MIDDLEWARE) - set(kept) == set(settings.SESSION_ONLY_MIDDLEWARE)
    for shaping in (
        "django.middleware.security.SecurityMiddleware",
        "labeling.middleware.SettledContentSecurityPolicy",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
        "labeling.middleware.refuse_nul_characters",
        "operations.proxies.forwarded_headers_from_trusted_proxies",
    ):
        assert shaping in kept
