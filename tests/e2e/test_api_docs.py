"""The API documentation page renders in headless Chromium from the project's own files: no
request leaves the server, no Content-Security-Policy violation (the fixture checks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from tests.e2e.helpers import log_in


def test_swagger_ui_renders_without_the_network(
    browser_page: Any, live_server: Any, people: dict[str, AbstractBaseUser], screenshot_dir: Path
) -> None:
    page = browser_page
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    log_in(page, live_server.url, "alice", "/")
    page.click("nav >> text=API")
    page.locator(".swagger-ui .opblock").first.wait_for(state="visible")
    assert page.url.endswith("/api/docs/")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/tasks/{task_id}/skip/" in [path.replace("\u200b", "") for path in paths]
    page.screenshot(path=str(screenshot_dir / "api-docs.png"))

    assert page.get_by_text("Relevance assessment API").first.is_visible()
    outside = [url for url in requested if not url.startswith((live_server.url, "data:", "blob:"))]
    assert outside == [], outside


def test_an_anonymous_visitor_is_sent_to_log_in(client: Any) -> None:
    response = client.get("/api/docs/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_site_has_a_favicon(client: Any) -> None:
    response = client.get("/favicon.ico", follow=True)
    assert response.status_code == 200
    assert (
        b"<svg" in b"".join(response.streaming_content) if response.streaming else b"<svg" in response.content
    )
