"""Request checks that hold for every page and endpoint."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _holds_nul(request: HttpRequest) -> bool:
    params = [request.GET]
    if request.method == "POST" and request.content_type in FORM_CONTENT_TYPES:
        # The form's text fields; a multipart body is parsed here rather than in the view (the
        # CSRF check of a page would read it here too), its files are the readers' to check.
        params.append(request.POST)
    return any(
        "\x00" in key or any("\x00" in value for value in values) for p in params for key, values in p.lists()
    )


def refuse_nul_characters(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """A 400 for a NUL character in a URL's query or a form field, before any view reads it.

    No text column stores NUL (PostgreSQL refuses it in a query parameter too, as a 500), and no
    honest client sends one. JSON bodies are checked by `labeling.parsers`, uploaded files by the
    file readers.
    """

    def middleware(request: HttpRequest) -> HttpResponse:
        if _holds_nul(request):
            reason = "a query parameter or form field contains a NUL character"
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": reason}, status=400)
            return HttpResponseBadRequest(f"Bad request: {reason}.", content_type="text/plain")
        return get_response(request)

    return middleware
