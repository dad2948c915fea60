"""Small pieces every API module uses: error bodies, JSON and download responses, uploads."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, ParseError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling.access import campaign_for
from labeling.import_reports import ImportFailed
from labeling.models import Campaign
from labeling.modes import mode_of
from labeling.permissions import MANAGE
from labeling.serializers import ErrorsSerializer, ImportReportSerializer, UploadSerializer


def bad_request(message: str) -> Response:
    return Response({"detail": message}, status=status.HTTP_400_BAD_REQUEST)


# Eighteen decimal digits stay below 2**63, the widest database key (see config.converters).
ID_MAX_DIGITS = 18


def query_number(request: Request, name: str) -> int | None:
    """A whole-number query parameter (an id, a page), None when absent; a 400 naming it when it
    is not decimal digits or too long for a database key."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > ID_MAX_DIGITS:
        raise ParseError(f"{name} must be a whole number of at most {ID_MAX_DIGITS} digits, got {raw[:30]!r}")
    return int(raw)


def conflict(message: str) -> Response:
    return Response({"detail": message}, status=status.HTTP_409_CONFLICT)


def json_response(body: Any, status_code: int) -> HttpResponse:
    """A JSON response without DRF's negotiation (the judging short way)."""
    return HttpResponse(JSONRenderer().render(body), status=status_code, content_type="application/json")


def download(body: Any, content_type: str, filename: str, stream: bool = True) -> HttpResponseBase:
    """An attachment: streamed chunks, or one body."""
    response: HttpResponseBase
    if stream:
        response = StreamingHttpResponse(body, content_type=content_type)
    else:
        response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def upload_errors(message: str) -> Response:
    return Response(
        {"errors": [{"file": "", "line": None, "message": message}]}, status=status.HTTP_400_BAD_REQUEST
    )


def import_failed(failure: ImportFailed) -> Response:
    errors = [{"file": error.file, "line": error.line, "message": error.reason} for error in failure.errors]
    return Response({"errors": errors}, status=status.HTTP_400_BAD_REQUEST)


class ImportApi(APIView):
    """Multipart upload, field `file` (repeatable), optional `format`."""

    parser_classes = [MultiPartParser, FormParser]
    many_files = False
    kind = ""  # the upload kind the campaign's mode must take (JudgingMode.uploads)

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        raise NotImplementedError

    @extend_schema(
        request={"multipart/form-data": UploadSerializer},
        responses={201: ImportReportSerializer, 400: OpenApiResponse(ErrorsSerializer)},
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        if self.kind not in mode_of(campaign).uploads:
            raise NotFound(f"A {campaign.judging_mode} campaign takes no {self.kind} upload.")
        uploads = request.FILES.getlist("file")
        if not uploads:
            return upload_errors("upload a file in the field 'file'")
        if len(uploads) > 1 and not self.many_files:
            return upload_errors("upload one file at a time here")
        file_format = request.POST.get("format") or None
        try:
            report = self.run_import(campaign, [(upload.name, upload) for upload in uploads], file_format)
        except ImportFailed as failure:
            return import_failed(failure)
        return Response(ImportReportSerializer(report).data, status=status.HTTP_201_CREATED)
