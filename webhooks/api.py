"""A campaign's webhooks (`webhooks.services`): register, list with their deliveries and
attempts, remove. Coordinators only; the secret is write-only."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling.access import campaign_for
from labeling.api.common import bad_request
from labeling.permissions import MANAGE
from labeling.serializers import ErrorsSerializer, StrictSerializer
from webhooks.services import (
    SECRET_MAX_CHARS,
    SECRET_MIN_CHARS,
    webhook_add,
    webhook_remove,
    webhooks_summary,
)


class WebhookInputSerializer(StrictSerializer):
    url = serializers.CharField(
        max_length=2000, help_text="http(s) URL the server may reach (the operator's OUTBOUND_ALLOWED_HOSTS)"
    )
    secret = serializers.CharField(
        min_length=SECRET_MIN_CHARS,
        max_length=SECRET_MAX_CHARS,
        write_only=True,
        help_text="shared secret of the HMAC-SHA256 signature",
    )
    events = serializers.ListField(
        child=serializers.CharField(max_length=64),
        min_length=1,
        max_length=20,
        help_text="the events it receives: those the campaign can emit (the modules that emit them "
        "register them; a graded campaign: arrival.decided, arrival.topup_spent, campaign.budget_spent, "
        "campaign.decided, judge_run.finished, judge_run.failed); another answers 400 naming them",
    )


class WebhookAttemptSerializer(StrictSerializer):
    at = serializers.CharField()
    status_code = serializers.IntegerField(allow_null=True)
    seconds = serializers.FloatField()
    error = serializers.CharField(allow_blank=True)


class WebhookDeliverySerializer(StrictSerializer):
    id = serializers.IntegerField()
    event = serializers.CharField()
    status = serializers.ChoiceField(("pending", "delivered", "failed"))
    attempts = WebhookAttemptSerializer(many=True)
    next_attempt_at = serializers.CharField(allow_null=True)


class WebhookSerializer(StrictSerializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    active = serializers.BooleanField()
    created = serializers.CharField()
    deliveries = WebhookDeliverySerializer(many=True, help_text="the ten most recent, newest first")


class WebhooksApi(APIView):
    """GET the campaign's webhooks with their recent deliveries; POST one (JSON `url`, `secret`,
    `events`): 201, or 400 with the reason (a URL outside the operator's allowed hosts, a short
    secret, an unknown event) and nothing stored."""

    @extend_schema(responses={200: WebhookSerializer(many=True)})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        return Response(webhooks_summary(campaign))

    @extend_schema(
        request=WebhookInputSerializer,
        responses={201: WebhookSerializer, 400: OpenApiResponse(ErrorsSerializer)},
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        fields = WebhookInputSerializer(data=request.data)
        fields.is_valid(raise_exception=True)
        try:
            hook = webhook_add(campaign=campaign, user=request.user, **fields.validated_data)
        except ValueError as error:
            return bad_request(str(error))
        (row,) = [row for row in webhooks_summary(campaign) if row["id"] == hook.pk]
        return Response(row, status=status.HTTP_201_CREATED)


class WebhookApi(APIView):
    """DELETE one webhook (its deliveries go with it)."""

    @extend_schema(responses={204: None})
    def delete(self, request: Request, campaign_id: int, webhook_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        if not webhook_remove(campaign, webhook_id):
            raise NotFound("No such webhook in this campaign.")
        return Response(status=status.HTTP_204_NO_CONTENT)
