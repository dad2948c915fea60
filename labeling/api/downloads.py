"""One API view for every download in the export registry (labeling.modes.Export)."""

from __future__ import annotations

from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.views import APIView

from labeling.access import campaign_for
from labeling.api.common import download
from labeling.modes import Export, exports_of
from labeling.permissions import EXPORT


class ExportApi(APIView):
    """Download the campaign as one of the registered export formats (404 where its mode has none)."""

    export: Export | None = None  # set per route by as_view(export=...)

    @extend_schema(responses={200: OpenApiResponse(description="a file download")})
    def get(self, request: Request, campaign_id: int) -> HttpResponseBase:
        campaign = campaign_for(request, campaign_id, EXPORT)
        export = self.export
        if export is None or all(offered.name != export.name for offered in exports_of(campaign)):
            raise NotFound("This campaign's judging mode has no such export.")
        return download(
            export.produce(campaign), export.content_type, export.filename(campaign), stream=export.stream
        )
