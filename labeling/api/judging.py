"""Judging endpoints every mode shares: next item, answer, undo and progress. Each asks the
campaign's judging mode (labeling.modes) to serve the request."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import NotFound, ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from config.token_lane import token_lane
from labeling import token_access
from labeling.access import campaign_for
from labeling.api.common import bad_request, conflict
from labeling.fields import NOTE_MAX_CHARS
from labeling.leases import LEASE_STATES, LeaseConflict
from labeling.models import Skip
from labeling.modes import (
    JudgingMode,
    all_modes,
    answer_kind,
    campaign_progress,
    item_mode,
    mode_of,
    modes_of_kind,
)
from labeling.parsers import JsonBodyError, parse_json_object
from labeling.permissions import JUDGE
from labeling.serializers import ProgressSerializer
from labeling.strict_json import StrictSerializer


def _api_token(request: HttpRequest) -> str | None:
    """The key of an `Authorization: Token <key>` header, read as DRF's TokenAuthentication
    reads it; None without one, or when the request also carries a session cookie (DRF would
    then try the session first)."""
    if settings.SESSION_COOKIE_NAME in request.COOKIES:
        return None
    words = get_authorization_header(request).split()  # type: ignore[arg-type]  # it reads request.META, as Django's has
    if len(words) != 2 or words[0].lower() != TokenAuthentication.keyword.lower().encode():
        return None
    try:
        return words[1].decode()
    except UnicodeError:
        return None


def _item_serializers() -> dict[str, Serializer | type[Serializer]]:
    return {mode.task_kind: mode.item_serializer() for mode in all_modes()}


# The schema lists every registered mode's shapes; passing callables defers that to when the
# schema is generated, since this module is imported while the modes are still registering.
def _next_item_schema() -> PolymorphicProxySerializer:
    return PolymorphicProxySerializer(
        component_name="NextItem",
        serializers=_item_serializers,
        resource_type_field_name="kind",
    )


def _answer_schema() -> PolymorphicProxySerializer:
    return PolymorphicProxySerializer(
        component_name="Answer",
        serializers=lambda: list(
            {mode.answer_field: mode.answer_serializer() for mode in all_modes()}.values()
        ),
        resource_type_field_name=None,
    )


@token_lane
class NextTaskApi(APIView):
    """Lease your next item: 200 with it (its `kind` says what the campaign's mode serves, a
    "grade" or a "pair" with `left` and `right`, say: the mode's page in docs/modes/), 204 when
    nothing is left for you."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        # The request every assessor makes for every item: a token holder who may judge is
        # served by the mode's short way (one statement for token, role and campaign, none of
        # DRF's machinery) where the mode has one; everything else goes the full way.
        token = _api_token(request) if request.method == "GET" else None
        judge = None if token is None else token_access.judge_by_token(token, kwargs["campaign_id"])
        served = None if judge is None else mode_of(judge.campaign).token_next(judge)
        return served if served is not None else super().dispatch(request, *args, **kwargs)

    @extend_schema(responses={200: _next_item_schema(), 204: None})
    def get(self, request: Request, campaign_id: int) -> HttpResponseBase:
        campaign = campaign_for(request, campaign_id, JUDGE)
        return mode_of(campaign).next_response(request, campaign)


@token_lane
class AnswerApi(APIView):
    """Answer a leased item. Graded: `{"grade", "seconds"}`; 201 stored, 200 already stored
    (repeat), 409 lease expired or foreign. A pair takes `{"outcome": "left" | "tie" | "right" |
    "left_bad" | "right_bad", "seconds"}` and answers 409 when the pair is not the pending one.
    The body's answer field names the kind of item the id is (its "kind" too, where two kinds
    share a field); the item's campaign decides which mode takes the answer."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        # As for NextTaskApi: a token holder's plain answer goes the mode's short way when it
        # has one; anything else (another body, a session, an error to word) goes the full way.
        served = self._token_answer(request, kwargs["task_id"]) if request.method == "POST" else None
        return served if served is not None else super().dispatch(request, *args, **kwargs)

    @staticmethod
    def _token_answer(request: HttpRequest, task_id: int) -> HttpResponse | None:
        token = _api_token(request)
        if token is None or request.content_type != "application/json":
            return None
        try:
            payload = parse_json_object(request.body)
        except JsonBodyError:
            return None  # the full way answers it, with the parser's 400
        kind = answer_kind(payload)
        serving = modes_of_kind(kind) if kind is not None else []
        return serving[0].token_answer(request, token, task_id, payload) if serving else None

    @extend_schema(
        request=_answer_schema(),
        responses={201: OpenApiResponse(), 200: OpenApiResponse(), 409: OpenApiResponse()},
    )
    def post(self, request: Request, task_id: int) -> HttpResponseBase:
        kind = answer_kind(request.data)
        if kind is None:
            kinds = {other.answer_field: other.task_kind for other in all_modes()}
            fields = " or ".join(f"{field} (to a {kind} item)" for field, kind in kinds.items())
            return bad_request(f"an answer carries exactly one of {fields}")
        found = item_mode(kind, task_id)
        if found is None:
            raise NotFound("No such task.")
        return found[0].answer_response(request, task_id)


class TaskSkipInputSerializer(StrictSerializer):
    reason = serializers.ChoiceField(Skip.Reason.choices)
    note = serializers.CharField(required=False, allow_blank=True, max_length=NOTE_MAX_CHARS, default="")
    kind = serializers.CharField(
        required=False,
        default="grade",
        max_length=16,
        help_text="the `kind` of the item as /next/ served it (grade, pair, sxs); default grade",
    )


class TaskSkipOutputSerializer(StrictSerializer):
    task = serializers.IntegerField()
    kind = serializers.CharField()
    reason = serializers.CharField()


def _held_unit_mode(request: Request, task_id: int, kind: str) -> JudgingMode:
    """The mode of a unit of `kind` the user may judge: 400 for a kind no mode serves, 404 for no
    such unit or one of a campaign the user cannot see (as an answer to it), 403 without the right."""
    if not modes_of_kind(kind):
        raise ParseError(f"no judging mode serves {kind!r} items")
    found = item_mode(kind, task_id)
    if found is None:
        raise NotFound("No such item.")
    mode, campaign_id = found
    campaign_for(request, campaign_id, JUDGE)
    return mode


class SkipApi(APIView):
    """Pass a leased item on with a reason and an optional note: it goes back for someone else and
    never comes back to you. 404 for an item of a campaign you cannot see (as an answer to it); 409
    when you do not hold it; 400 when its mode has no skip."""

    @extend_schema(
        request=TaskSkipInputSerializer,
        responses={200: TaskSkipOutputSerializer, 404: OpenApiResponse(), 409: OpenApiResponse()},
    )
    def post(self, request: Request, task_id: int) -> Response:
        data = TaskSkipInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        kind, reason, note = (data.validated_data[name] for name in ("kind", "reason", "note"))
        mode = _held_unit_mode(request, task_id, kind)
        try:
            skipped = mode.skip(task_id, request.user, reason, note)
        except LeaseConflict as refusal:
            return conflict(str(refusal))
        except ValueError as error:
            return bad_request(str(error))
        if not skipped:
            return bad_request(f"{kind} items cannot be skipped (answer them, or pause)")
        return Response({"task": task_id, "kind": kind, "reason": reason})


class LeaseInputSerializer(StrictSerializer):
    state = serializers.ChoiceField(
        [(state, state) for state in LEASE_STATES],
        help_text="active: the page shows the item again (a full lease); idle: its tab is hidden "
        "(the lease runs out after LABELING_IDLE_LEASE_SECONDS); left: the page was closed (the "
        "item goes back at once)",
    )
    kind = serializers.CharField(required=False, default="grade", max_length=16, help_text="as for skip")
    lease = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="the `lease` the item came with: the report applies only while the page still holds "
        "that lease (a reloaded page was served the item again, and the old page's late 'left' must not "
        "give it back); without it, the report applies to whatever lease the assessor holds",
    )


class LeaseOutputSerializer(StrictSerializer):
    task = serializers.IntegerField()
    state = serializers.CharField()
    held = serializers.BooleanField(help_text="false: the item is not yours (any more); fetch /next/")


class LeaseApi(APIView):
    """What the judging page says of the item you hold: in view again, hidden, or closed. A page
    left open in a hidden tab keeps its item briefly, a closed page gives it back, so nobody waits
    on an item no one looks at. Pages send "left" with navigator.sendBeacon (a form body with the
    CSRF token)."""

    @extend_schema(
        request=LeaseInputSerializer, responses={200: LeaseOutputSerializer, 404: OpenApiResponse()}
    )
    def post(self, request: Request, task_id: int) -> Response:
        data = LeaseInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        state, kind, stamp = (data.validated_data[name] for name in ("state", "kind", "lease"))
        held = _held_unit_mode(request, task_id, kind).lease_hold(task_id, request.user, state, stamp)
        return Response({"task": task_id, "state": state, "held": bool(held)})


class UndoApi(APIView):
    """Take back your last answer within the undo window; returns its item, leased to you again."""

    @extend_schema(request=None, responses={200: _next_item_schema(), 409: OpenApiResponse()})
    def post(self, request: Request, campaign_id: int) -> HttpResponseBase:
        campaign = campaign_for(request, campaign_id, JUDGE)
        return mode_of(campaign).undo_response(request, campaign)


class ProgressApi(APIView):
    """Judgments, budget, spent and remaining (budget units), and the state assessors see
    ("running", "paused", "done", "budget_spent") with a message."""

    @extend_schema(responses={200: ProgressSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, None)
        return Response(ProgressSerializer.of(campaign_progress(campaign)))
