"""The graded mode's judging endpoints: lease an item, grade it, undo; and the short way for API
tokens (one statement for token, role and campaign or task, no DRF machinery)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from graded import selectors as graded_selectors
from graded.claims import task_next
from graded.gold import GoldPaused, gold_answer
from graded.judging import judgment_undo, task_answer
from graded.serializers import AnswerInputSerializer, JudgmentOutputSerializer, TaskOutputSerializer
from labeling import selectors, token_access
from labeling.access import request_user
from labeling.api.common import bad_request, conflict, json_response
from labeling.leases import LeaseConflict, UndoNotAllowed
from labeling.models import Campaign, Task
from labeling.permissions import JUDGE


def wants_next(query: Any) -> bool:
    """`?next=1`: answer and lease the next item in one round trip."""
    return query.get("next") in ("1", "true")


def _next_response(task: Task | None) -> HttpResponse:
    if task is None:
        return HttpResponse(status=status.HTTP_204_NO_CONTENT)
    return json_response(TaskOutputSerializer.of(task), status.HTTP_200_OK)


def _answer(
    task: Task, user: Any, grade: int, seconds: float | None, want_next: bool, note: str = ""
) -> tuple[dict[str, Any], int]:
    """Store the answer: (body, 201) stored, (body, 200) a repeat, ({"detail"}, 409) an expired or
    foreign lease; with want_next, `next` is the next task or null. ValueError on a bad grade or
    seconds."""
    try:
        if task.kind == Task.Kind.GOLD:
            # Answered like any item; stored as a GoldAnswer, which no estimate reads.
            answer, created = gold_answer(
                task=task, assessor=user, grade=grade, seconds=seconds, now=timezone.now()
            )
            body: dict[str, Any] = {
                "id": answer.pk,
                "task": task.pk,
                "grade": answer.grade,
                "seconds": answer.seconds,
                "created_at": answer.created_at.isoformat().replace("+00:00", "Z"),
            }
        else:
            judgment, created = task_answer(task=task, assessor=user, grade=grade, seconds=seconds, note=note)
            body = JudgmentOutputSerializer.of(judgment)
    except LeaseConflict as lease_conflict:
        return {"detail": str(lease_conflict)}, status.HTTP_409_CONFLICT
    if want_next:
        try:
            upcoming = task_next(campaign=task.campaign, assessor=user)
        except GoldPaused:
            upcoming = None  # the page asks /next/ again and is told why
        body["next"] = None if upcoming is None else TaskOutputSerializer.of(upcoming)
    return body, status.HTTP_201_CREATED if created else status.HTTP_200_OK


def _paused(paused: GoldPaused) -> HttpResponse:
    return json_response({"detail": f"Paused: {paused}."}, status.HTTP_403_FORBIDDEN)


def next_response(request: Request, campaign: Campaign) -> HttpResponse:
    try:
        return _next_response(task_next(campaign=campaign, assessor=request_user(request)))
    except GoldPaused as paused:
        return _paused(paused)


def answer_response(request: Request, task_id: int) -> Response:
    task = graded_selectors.task_get_for_assessor(task_id, request_user(request))
    if task is None or not selectors.campaign_visible(request.user, task.campaign):
        raise NotFound("No such task.")
    if not request.user.has_perm(JUDGE, task.campaign):
        raise PermissionDenied("You do not judge this campaign.")
    data = AnswerInputSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    grade, seconds = data.validated_data["grade"], data.validated_data.get("seconds")
    note = data.validated_data.get("note", "")
    try:
        body, status_code = _answer(
            task, request.user, grade, seconds, wants_next(request.query_params), note
        )
    except ValueError as error:
        return bad_request(str(error))
    return Response(body, status=status_code)


def undo_response(request: Request, campaign: Campaign) -> Response:
    try:
        task = judgment_undo(campaign=campaign, assessor=request_user(request))
    except UndoNotAllowed as refusal:
        return conflict(str(refusal))
    return Response(TaskOutputSerializer.of(task))


def token_next(judge: token_access.TokenJudge) -> HttpResponse:
    """/next/ for a token holder already known to judge this campaign."""
    try:
        return _next_response(task_next(campaign=judge.campaign, assessor=judge.user))
    except GoldPaused as paused:
        return _paused(paused)


def token_answer(
    request: HttpRequest, token: str, task_id: int, payload: dict[str, Any]
) -> HttpResponse | None:
    """A plain `{"grade", "seconds"}` answer of a token holder; None for anything the short way does
    not take (another body, a task the token may not answer, an error to word)."""
    if not payload.keys() <= {"grade", "seconds"}:
        return None
    grade, seconds = payload.get("grade"), payload.get("seconds")
    if type(grade) is not int or not (seconds is None or type(seconds) in (int, float)):
        return None
    found = token_access.task_by_token(token, task_id)
    if found is None:
        return None
    user, task = found
    try:
        body, status_code = _answer(task, user, grade, seconds, want_next=wants_next(request.GET))
    except ValueError:
        return None  # out of range: the full way words the error as for every other client
    return json_response(body, status_code)
