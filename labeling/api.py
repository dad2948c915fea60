"""The REST API: one APIView per operation, each calling one selector or service."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import status
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling import exports, selectors, services, token_access
from labeling.models import Campaign, Task
from labeling.permissions import EXPORT, JUDGE, MANAGE, VIEW_RESULTS, is_coordinator, user_role
from labeling.serializers import (
    AnswerInputSerializer,
    CampaignInputSerializer,
    CampaignOutputSerializer,
    CampaignUpdateSerializer,
    ErrorsSerializer,
    EstimatesSerializer,
    ImportReportSerializer,
    JudgmentOutputSerializer,
    ProgressSerializer,
    RunEvaluationSerializer,
    SamplingTopicSerializer,
    SnapshotSerializer,
    TaskOutputSerializer,
    ThroughputSerializer,
    UploadSerializer,
    UserInputSerializer,
    UsernamesSerializer,
    UserOutputSerializer,
)


def campaign_for(request: Request, campaign_id: int, permission: str | None) -> Campaign:
    """The campaign if the user may see it (else 404) and holds `permission` on it (else 403)."""
    campaign = selectors.campaign_get_for_user(request.user, campaign_id)
    if campaign is None:
        raise NotFound("No such campaign.")
    if permission is not None and not request.user.has_perm(permission, campaign):
        raise PermissionDenied("Your role in this campaign does not allow this.")
    return campaign


def _bad_request(message: str) -> Response:
    return Response({"detail": message}, status=status.HTTP_400_BAD_REQUEST)


class UserCreateApi(APIView):
    """Create a user with a global role (coordinators and admins; only admins create admins)."""

    @extend_schema(request=UserInputSerializer, responses={201: UserOutputSerializer})
    def post(self, request: Request) -> Response:
        if not is_coordinator(request.user):
            raise PermissionDenied("Only coordinators and admins create users.")
        data = UserInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            user = services.user_create(creator=request.user, **data.validated_data)
        except PermissionError as error:
            raise PermissionDenied(str(error)) from None
        except ValueError as error:
            return _bad_request(str(error))
        output = {"id": user.pk, "username": user.get_username(), "role": user_role(user)}
        return Response(UserOutputSerializer(output).data, status=status.HTTP_201_CREATED)


class CampaignListCreateApi(APIView):
    """List the campaigns you can see; create one (coordinators and admins)."""

    @extend_schema(responses={200: CampaignOutputSerializer(many=True)})
    def get(self, request: Request) -> Response:
        campaigns = selectors.campaign_list_for_user(request.user)
        return Response(CampaignOutputSerializer(campaigns, many=True).data)

    @extend_schema(request=CampaignInputSerializer, responses={201: CampaignOutputSerializer})
    def post(self, request: Request) -> Response:
        if not is_coordinator(request.user):
            raise PermissionDenied("Only coordinators and admins create campaigns.")
        data = CampaignInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            campaign = services.campaign_create(creator=request.user, **data.validated_data)
        except ValueError as error:
            return _bad_request(str(error))
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
            campaign = services.campaign_update(campaign=campaign, **data.validated_data)
        except ValueError as error:
            return _bad_request(str(error))
        return Response(CampaignOutputSerializer(campaign).data)


class _ImportApi(APIView):
    """Multipart upload, field `file` (repeatable), optional `format`."""

    parser_classes = [MultiPartParser, FormParser]
    many_files = False

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        raise NotImplementedError

    @extend_schema(
        request={"multipart/form-data": UploadSerializer},
        responses={201: ImportReportSerializer, 400: OpenApiResponse(ErrorsSerializer)},
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        uploads = request.FILES.getlist("file")
        if not uploads:
            return Response(
                {"errors": [{"file": "", "line": None, "message": "upload a file in the field 'file'"}]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        if len(uploads) > 1 and not self.many_files:
            return Response(
                {"errors": [{"file": "", "line": None, "message": "upload one file at a time here"}]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        file_format = request.data.get("format") or None
        try:
            report = self.run_import(campaign, [(upload.name, upload) for upload in uploads], file_format)
        except services.ImportFailed as failure:
            errors = [
                {"file": error.file, "line": error.line, "message": error.reason} for error in failure.errors
            ]
            return Response({"errors": errors}, status=status.HTTP_400_BAD_REQUEST)
        return Response(ImportReportSerializer(report).data, status=status.HTTP_201_CREATED)


class TopicsImportApi(_ImportApi):
    """Import topics: TREC topic files or JSONL ({id, title, description, narrative})."""

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return services.topics_import(campaign=campaign, files=files, file_format=file_format)


class DocumentsImportApi(_ImportApi):
    """Import documents: JSONL ({docno, title, text, url, length})."""

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return services.documents_import(campaign=campaign, files=files, file_format=file_format)


class RunsImportApi(_ImportApi):
    """Import TREC runs (several files at once, plain or gzip); one system per file."""

    many_files = True

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return services.runs_import(campaign=campaign, files=files)


class QrelsImportApi(_ImportApi):
    """Import TREC qrels (`qid 0 docno grade`), counted as already judged."""

    many_files = True

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return services.qrels_import(campaign=campaign, files=files)


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
            services.campaign_assessors_assign(campaign=campaign, usernames=data.validated_data["usernames"])
        except ValueError as error:
            return _bad_request(str(error))
        usernames = [member.user.get_username() for member in selectors.campaign_assessors(campaign)]
        return Response({"usernames": usernames})


class CampaignStartApi(APIView):
    """Start or resume judging."""

    @extend_schema(request=None, responses={200: CampaignOutputSerializer})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        try:
            campaign = services.campaign_start(campaign=campaign)
        except ValueError as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        return Response(CampaignOutputSerializer(campaign).data)


class CampaignPauseApi(APIView):
    """Pause judging."""

    @extend_schema(request=None, responses={200: CampaignOutputSerializer})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        try:
            campaign = services.campaign_pause(campaign=campaign)
        except ValueError as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        return Response(CampaignOutputSerializer(campaign).data)


def _pair_campaign(campaign: Campaign) -> bool:
    return campaign.judging_mode != Campaign.JudgingMode.GRADED


def _next_item_schema() -> PolymorphicProxySerializer:
    from pairwise.serializers import PairOutputSerializer

    return PolymorphicProxySerializer(
        component_name="NextItem",
        serializers={"grade": TaskOutputSerializer, "pair": PairOutputSerializer},
        resource_type_field_name="kind",
    )


def _api_token(request: HttpRequest) -> str | None:
    """The key of an `Authorization: Token <key>` header, read as DRF's TokenAuthentication
    reads it; None without one, or when the request also carries a session cookie (DRF would
    then try the session first)."""
    if settings.SESSION_COOKIE_NAME in request.COOKIES:
        return None
    words = get_authorization_header(request).split()
    if len(words) != 2 or words[0].lower() != TokenAuthentication.keyword.lower().encode():
        return None
    try:
        return words[1].decode()
    except UnicodeError:
        return None


def _json_response(body: Any, status_code: int) -> HttpResponse:
    return HttpResponse(JSONRenderer().render(body), status=status_code, content_type="application/json")


def _next_response(task: Task | None) -> HttpResponse:
    if task is None:
        return HttpResponse(status=status.HTTP_204_NO_CONTENT)
    return _json_response(TaskOutputSerializer.of(task), status.HTTP_200_OK)


class NextTaskApi(APIView):
    """Lease your next item: 200 with the task (`kind` "grade", or "pair" with `left` and `right`
    in pairwise and top-k campaigns), 204 when nothing is left for you."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # The request every assessor makes for every item: a token holder who may judge a graded
        # campaign is served here, with one statement for token, role and campaign and none of
        # DRF's machinery; everything else (sessions, errors, pairs) goes the full way.
        token = _api_token(request) if request.method == "GET" else None
        judge = None if token is None else token_access.judge_by_token(token, kwargs["campaign_id"])
        if judge is None or _pair_campaign(judge.campaign):
            return super().dispatch(request, *args, **kwargs)
        return _next_response(services.task_next(campaign=judge.campaign, assessor=judge.user))

    @extend_schema(responses={200: _next_item_schema(), 204: None})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, JUDGE)
        if _pair_campaign(campaign):
            from pairwise.api import pair_next_response

            return pair_next_response(request, campaign)
        return _next_response(services.task_next(campaign=campaign, assessor=request.user))


def _answer_schema() -> PolymorphicProxySerializer:
    from pairwise.serializers import PairAnswerInputSerializer

    return PolymorphicProxySerializer(
        component_name="Answer",
        serializers=[AnswerInputSerializer, PairAnswerInputSerializer],
        resource_type_field_name=None,
    )


class AnswerApi(APIView):
    """Answer a leased task: 201 stored, 200 already stored (repeat), 409 lease expired or foreign.
    A pair task takes `{"outcome": "left" | "tie" | "right" | "left_bad" | "right_bad", "seconds"}`
    and answers 409 when the pair is not the pending one."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # As for NextTaskApi: a token holder's plain graded answer is served here; anything the
        # short way does not take (another body, a session, an error to word) goes the full way.
        served = self._token_answer(request, kwargs["task_id"]) if request.method == "POST" else None
        return served if served is not None else super().dispatch(request, *args, **kwargs)

    @staticmethod
    def _token_answer(request: HttpRequest, task_id: int) -> HttpResponse | None:
        token = _api_token(request)
        if token is None or request.content_type != "application/json":
            return None
        try:
            payload = json.loads(request.body)
        except ValueError:
            return None
        if not isinstance(payload, dict) or not payload.keys() <= {"grade", "seconds"}:
            return None
        grade, seconds = payload.get("grade"), payload.get("seconds")
        if type(grade) is not int or not (seconds is None or type(seconds) in (int, float)):
            return None
        found = token_access.task_by_token(token, task_id)
        if found is None:
            return None
        user, task = found
        try:
            body, status_code = _answer(task, user, grade, seconds, want_next=_wants_next(request.GET))
        except ValueError:
            return None  # out of range: the full way words the error as for every other client
        return _json_response(body, status_code)

    @extend_schema(
        request=_answer_schema(),
        responses={201: JudgmentOutputSerializer, 200: JudgmentOutputSerializer, 409: OpenApiResponse()},
    )
    def post(self, request: Request, task_id: int) -> Response:
        if "outcome" in request.data:
            from pairwise.api import pair_answer_response

            return pair_answer_response(request, task_id)
        task = selectors.task_get_for_assessor(task_id, request.user)
        if task is None or not selectors.campaign_visible(request.user, task.campaign):
            raise NotFound("No such task.")
        if not request.user.has_perm(JUDGE, task.campaign):
            raise PermissionDenied("You do not judge this campaign.")
        data = AnswerInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        grade, seconds = data.validated_data["grade"], data.validated_data.get("seconds")
        try:
            body, status_code = _answer(task, request.user, grade, seconds, _wants_next(request.query_params))
        except ValueError as error:
            return _bad_request(str(error))
        return Response(body, status=status_code)


def _wants_next(query: Any) -> bool:
    """`?next=1`: answer and lease the next item in one round trip."""
    return query.get("next") in ("1", "true")


def _answer(
    task: Task, user: Any, grade: int, seconds: float | None, want_next: bool
) -> tuple[dict[str, Any], int]:
    """Store the answer: (body, 201) stored, (body, 200) a repeat, ({"detail"}, 409) an expired or
    foreign lease; with want_next, `next` is the next task or null. ValueError on a bad grade or
    seconds."""
    try:
        judgment, created = services.task_answer(task=task, assessor=user, grade=grade, seconds=seconds)
    except services.LeaseConflict as conflict:
        return {"detail": str(conflict)}, status.HTTP_409_CONFLICT
    body = JudgmentOutputSerializer.of(judgment)
    if want_next:
        upcoming = services.task_next(campaign=task.campaign, assessor=user)
        body["next"] = None if upcoming is None else TaskOutputSerializer.of(upcoming)
    return body, status.HTTP_201_CREATED if created else status.HTTP_200_OK


class UndoApi(APIView):
    """Take back your last judgment within the undo window; returns its task, leased to you again."""

    @extend_schema(request=None, responses={200: _next_item_schema()})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, JUDGE)
        if _pair_campaign(campaign):
            from pairwise.api import pair_undo_response

            return pair_undo_response(request, campaign)
        try:
            task = services.judgment_undo(campaign=campaign, assessor=request.user)
        except services.UndoNotAllowed as refusal:
            return Response({"detail": str(refusal)}, status=status.HTTP_409_CONFLICT)
        return Response(TaskOutputSerializer.of(task))


class ProgressApi(APIView):
    """Judgments, budget, spent and remaining (budget units), and the state assessors see
    ("running", "paused", "done", "budget_spent") with a message."""

    @extend_schema(responses={200: ProgressSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, None)
        return Response(ProgressSerializer.of(selectors.campaign_progress(campaign)))


def _download(chunks: Any, content_type: str, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class ExportQrelsApi(APIView):
    """The campaign's judgments as TREC qrels (streamed)."""

    @extend_schema(responses={(200, "text/plain"): str})
    def get(self, request: Request, campaign_id: int) -> StreamingHttpResponse:
        campaign = campaign_for(request, campaign_id, EXPORT)
        return _download(
            exports.qrels_trec(campaign), "text/plain; charset=utf-8", f"campaign-{campaign.pk}.qrels"
        )


class ExportJudgmentsCsvApi(APIView):
    """Every judgment with assessor, seconds, draw order and propensity, as CSV (streamed)."""

    @extend_schema(responses={(200, "text/csv"): str})
    def get(self, request: Request, campaign_id: int) -> StreamingHttpResponse:
        campaign = campaign_for(request, campaign_id, EXPORT)
        return _download(
            exports.judgments_csv(campaign),
            "text/csv; charset=utf-8",
            f"campaign-{campaign.pk}-judgments.csv",
        )


class ExportJudgmentsJsonlApi(APIView):
    """Every judgment with assessor, seconds, draw order and propensity, as JSONL (streamed)."""

    @extend_schema(responses={(200, "application/jsonl"): str})
    def get(self, request: Request, campaign_id: int) -> StreamingHttpResponse:
        campaign = campaign_for(request, campaign_id, EXPORT)
        return _download(
            exports.judgments_jsonl(campaign),
            "application/jsonl; charset=utf-8",
            f"campaign-{campaign.pk}-judgments.jsonl",
        )


class ExportConfigApi(APIView):
    """The campaign's configuration as JSON."""

    @extend_schema(responses={(200, "application/json"): dict})
    def get(self, request: Request, campaign_id: int) -> HttpResponse:
        campaign = campaign_for(request, campaign_id, EXPORT)
        response = HttpResponse(exports.campaign_config_json(campaign), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}-config.json"'
        return response


class EstimatesApi(APIView):
    """The current estimate of every pooled system and metric, the goal's difference, spent and budget."""

    @extend_schema(responses={200: EstimatesSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        result = services.estimates_current(campaign)
        result.pop("fingerprint", None)
        return Response(result)


class EstimatesHistoryApi(APIView):
    """The stored estimate snapshots, oldest first (estimates against budget spent); with
    `?after=<id>` only the snapshots newer than that one, so a dashboard fetches what is new."""

    @extend_schema(
        parameters=[OpenApiParameter("after", int, description="only snapshots with a larger id")],
        responses={200: SnapshotSerializer(many=True)},
    )
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        after = request.query_params.get("after")
        if after is not None and not after.isdigit():
            return _bad_request(f"after must be a snapshot id (a whole number), got {after!r}")
        return Response(exports.estimates_history(campaign, after=None if after is None else int(after)))


class SamplingApi(APIView):
    """The current sampling distribution per topic: q, query cost (mean 1) and expected metric."""

    @extend_schema(responses={200: SamplingTopicSerializer(many=True)})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        return Response(selectors.sampling_per_topic(campaign))


class ThroughputApi(APIView):
    """Assessor throughput: judgments, median and mean seconds per judgment, judgments per hour."""

    @extend_schema(responses={200: ThroughputSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        return Response(selectors.campaign_throughput_summary(campaign))


class EvaluateRunApi(APIView):
    """Evaluate new runs on the stored draws (GET: every evaluation-only run; POST: upload one)."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(responses={200: RunEvaluationSerializer(many=True)})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        systems = campaign.systems.filter(evaluation_only=True).order_by("id")
        return Response([services.run_evaluate(campaign, system) for system in systems])

    @extend_schema(
        request={"multipart/form-data": UploadSerializer},
        responses={201: RunEvaluationSerializer(many=True), 400: OpenApiResponse(ErrorsSerializer)},
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        uploads = request.FILES.getlist("file")
        if not uploads:
            return Response(
                {"errors": [{"file": "", "line": None, "message": "upload a run in the field 'file'"}]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        try:
            systems = services.evaluation_runs_import(
                campaign=campaign, files=[(upload.name, upload) for upload in uploads]
            )
        except services.ImportFailed as failure:
            errors = [
                {"file": error.file, "line": error.line, "message": error.reason} for error in failure.errors
            ]
            return Response({"errors": errors}, status=status.HTTP_400_BAD_REQUEST)
        return Response(
            [services.run_evaluate(campaign, system) for system in systems], status=status.HTTP_201_CREATED
        )


class LabelsImportApi(_ImportApi):
    """Import prior grade probabilities (`qid docno p_0 .. p_ymax`) for the label model."""

    many_files = True

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return services.labels_import(campaign=campaign, files=files)


class ExportDrawsCsvApi(APIView):
    """Every draw with kind, topic, document, propensity in force and cost, as CSV (streamed)."""

    @extend_schema(responses={(200, "text/csv"): str})
    def get(self, request: Request, campaign_id: int) -> StreamingHttpResponse:
        campaign = campaign_for(request, campaign_id, EXPORT)
        return _download(
            exports.draws_csv(campaign), "text/csv; charset=utf-8", f"campaign-{campaign.pk}-draws.csv"
        )


class ExportEstimatesCsvApi(APIView):
    """The estimate history: one row per snapshot, system and metric, as CSV."""

    @extend_schema(responses={(200, "text/csv"): str})
    def get(self, request: Request, campaign_id: int) -> StreamingHttpResponse:
        campaign = campaign_for(request, campaign_id, EXPORT)
        return _download(
            exports.estimates_history_csv(campaign),
            "text/csv; charset=utf-8",
            f"campaign-{campaign.pk}-estimates.csv",
        )


class ExportEstimatesJsonApi(APIView):
    """The estimate history as JSON (a list of snapshots)."""

    @extend_schema(responses={(200, "application/json"): dict})
    def get(self, request: Request, campaign_id: int) -> HttpResponse:
        campaign = campaign_for(request, campaign_id, EXPORT)
        response = HttpResponse(exports.estimates_history_json(campaign), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}-estimates.json"'
        return response


class ExportOfflineApi(APIView):
    """A zip with everything needed to recompute every dashboard number offline."""

    @extend_schema(responses={(200, "application/zip"): bytes})
    def get(self, request: Request, campaign_id: int) -> HttpResponse:
        campaign = campaign_for(request, campaign_id, EXPORT)
        response = HttpResponse(exports.offline_bundle(campaign), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}-offline.zip"'
        return response
