"""Users and campaigns: create, read, change, assign assessors, start and pause."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling import selectors
from labeling.access import campaign_for, request_user
from labeling.api.common import bad_request, conflict
from labeling.dashboard import LIST_FILTERS, campaigns_listed
from labeling.modes import campaign_preflight
from labeling.permissions import MANAGE, is_admin, is_coordinator
from labeling.serializers import (
    CampaignArchiveSerializer,
    CampaignCloneSerializer,
    CampaignInputSerializer,
    CampaignOutputSerializer,
    CampaignUpdateSerializer,
    PreflightSerializer,
    UsernamesSerializer,
)
from labeling.services.campaign_copies import campaign_archive, campaign_clone, campaign_delete
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_pause,
    campaign_start,
    campaign_update,
)


class CampaignListCreateApi(APIView):
    """List the campaigns you can see; create one (coordinators and admins)."""

    @extend_schema(
        parameters=[
            OpenApiParameter("search", str, description="name or metric contains (case-insensitive)"),
            OpenApiParameter(
                "status",
                str,
                enum=list(LIST_FILTERS),
                description="one status, or archived (archived campaigns are listed only then)",
            ),
        ],
        responses={200: CampaignOutputSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        search, status_filter = request.query_params.get("search", ""), request.query_params.get("status")
        if status_filter is None and not search:
            campaigns = selectors.campaign_list_for_user(request.user)
        elif status_filter not in (None, *LIST_FILTERS):
            return bad_request(f"status must be one of {', '.join(LIST_FILTERS)}")
        else:
            campaigns = campaigns_listed(request.user, search, status_filter or "")
        return Response(CampaignOutputSerializer(campaigns, many=True).data)

    @extend_schema(request=CampaignInputSerializer, responses={201: CampaignOutputSerializer})
    def post(self, request: Request) -> Response:
        if not is_coordinator(request.user):
            raise PermissionDenied("Only coordinators and admins create campaigns.")
        data = CampaignInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            campaign = campaign_create(creator=request_user(request), **data.validated_data)
        except ValueError as error:
            return bad_request(str(error))
        return Response(CampaignOutputSerializer(campaign).data, status=status.HTTP_201_CREATED)


class CampaignDetailApi(APIView):
    """Read a campaign (members); change its settings (coordinators)."""

    @extend_schema(responses={200: CampaignOutputSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        return Response(CampaignOutputSerializer(campaign_for(request, campaign_id, None)).data)

    @extend_schema(request=CampaignUpdateSerializer, responses={200: CampaignOutputSerializer})
    def patch(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        data = CampaignUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            campaign = campaign_update(campaign=campaign, **data.validated_data)
        except ValueError as error:
            return bad_request(str(error))
        return Response(CampaignOutputSerializer(campaign).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, campaign_id: int) -> Response:
        """Delete the campaign and everything in it (admins only)."""
        campaign = campaign_for(request, campaign_id, MANAGE)
        if not is_admin(request.user):
            raise PermissionDenied("Only admins delete campaigns.")
        campaign_delete(campaign=campaign)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CampaignCloneApi(APIView):
    """A new draft with the campaign's settings, files and members, without judgments."""

    @extend_schema(request=CampaignCloneSerializer, responses={201: CampaignOutputSerializer})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        if not is_coordinator(request.user):
            raise PermissionDenied("Only coordinators and admins create campaigns.")
        data = CampaignCloneSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:  # the mode may refuse settings stored under an operator limit lowered since
            clone = campaign_clone(
                campaign=campaign,
                creator=request_user(request),
                name=data.validated_data.get("name"),
                with_arrivals=data.validated_data["with_arrivals"],
            )
        except ValueError as error:
            return bad_request(str(error))
        return Response(CampaignOutputSerializer(clone).data, status=status.HTTP_201_CREATED)


class CampaignArchiveApi(APIView):
    """Archive a campaign (a running one is paused) or bring it back: `{"archived": false}`."""

    @extend_schema(request=CampaignArchiveSerializer, responses={200: CampaignOutputSerializer})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        data = CampaignArchiveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        campaign = campaign_archive(campaign=campaign, archived=data.validated_data["archived"])
        return Response(CampaignOutputSerializer(campaign).data)


class AssessorsApi(APIView):
    """List the campaign's assessors, or assign existing users as assessors."""

    @extend_schema(responses={200: UsernamesSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        usernames = [member.user.get_username() for member in selectors.campaign_assessors(campaign)]
        return Response({"usernames": usernames})

    @extend_schema(request=UsernamesSerializer, responses={200: UsernamesSerializer})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        data = UsernamesSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            campaign_assessors_assign(campaign=campaign, usernames=data.validated_data["usernames"])
        except ValueError as error:
            return bad_request(str(error))
        usernames = [member.user.get_username() for member in selectors.campaign_assessors(campaign)]
        return Response({"usernames": usernames})


class CampaignPreflightApi(APIView):
    """What assessors would miss if the campaign started now (labeling.preflight)."""

    @extend_schema(responses={200: PreflightSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        problems = campaign_preflight(campaign)
        return Response({"problems": [problem.as_dict() for problem in problems], "ready": not problems})


class _StatusChangeApi(APIView):
    """POST: one service that changes the campaign's status; 409 when the status does not allow it."""

    change: staticmethod

    @extend_schema(request=None, responses={200: CampaignOutputSerializer})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        try:
            campaign = type(self).change(campaign=campaign)
        except ValueError as error:
            return conflict(str(error))
        return Response(CampaignOutputSerializer(campaign).data)


class CampaignStartApi(_StatusChangeApi):
    """Start or resume judging."""

    change = staticmethod(campaign_start)


class CampaignPauseApi(_StatusChangeApi):
    """Pause judging."""

    change = staticmethod(campaign_pause)
