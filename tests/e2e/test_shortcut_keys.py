"""An assessor's own keys on the judge page (WCAG 2.1.4), in chromium: a remapped grade key
answers and the old one does nothing; with single keys off no letter or digit acts, while Enter
on a focused grade button still answers."""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import AbstractBaseUser
from playwright.sync_api import expect

from labeling.models import Campaign, Judgment, Task
from labeling.services.preferences import shortcuts_update
from tests.e2e.conftest import TIMEOUT_MS
from tests.e2e.helpers import log_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# Long enough for a keypress's answer to reach the server had it been sent. A quiet window can
# only miss a stray answer under load, never fail a test that should pass.
QUIET_MS = 600


def _is_answer(request: Any) -> bool:
    return request.method == "POST" and urlsplit(request.url).path.endswith("/answer/")


def _answered(page: Any, key: str) -> None:
    """Press `key` and wait for the answer it sends to come back stored, then for the toast."""
    with page.expect_response(lambda response: _is_answer(response.request)) as response:
        page.keyboard.press(key)
    assert response.value.ok, (response.value.status, response.value.text())
    expect(page.locator("#toast")).to_have_text(re.compile("^Saved"))


def _ready(page: Any) -> None:
    page.wait_for_function(
        "!document.getElementById('item').hidden && !document.querySelector('#grades button').disabled"
    )


def _leave(page: Any, campaign: Campaign, alice: AbstractBaseUser) -> None:
    """Close the judge page and wait until its "left" beacon has given the shown item back. A
    reload straight away races that beacon: landing after the new page took the same item again,
    it released it, and the next answer got a 409 (the flaky failures under load)."""
    held = Task.objects.filter(campaign=campaign, assessor=alice, answered_at__isnull=True)
    assert held.exists()
    page.goto("about:blank")
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while held.exists():
        assert time.monotonic() < deadline, "the judge page's 'left' beacon never arrived"
        time.sleep(0.05)


def _grades(alice: AbstractBaseUser) -> list[int]:
    return list(Judgment.objects.filter(assessor=alice).order_by("pk").values_list("grade", flat=True))


def test_a_remapped_key_answers_and_switched_off_keys_do_nothing(
    browser_page: Any,
    live_server: Any,
    people: dict[str, AbstractBaseUser],
    running_campaign: Campaign,
) -> None:
    page, alice = browser_page, people["assessor"]
    shortcuts_update(user=alice, keys={"grade_1": "j"})
    path = f"/judge/{running_campaign.pk}/"
    log_in(page, live_server.url, "alice", path)
    _ready(page)
    assert page.locator('#grades button[data-grade="1"] kbd').inner_text() == "J"
    page.locator("#help-button").click()
    assert page.locator("#help tr", has_text="Grade “Relevant”").locator("kbd").inner_text() == "J"
    page.keyboard.press("Escape")

    page.keyboard.press("1")  # the old key
    page.wait_for_timeout(QUIET_MS)
    assert _grades(alice) == []
    _answered(page, "j")
    assert _grades(alice) == [1]

    shortcuts_update(user=alice, enabled=False)
    _leave(page, running_campaign, alice)
    page.goto(live_server.url + path)
    _ready(page)
    assert page.locator("#grades kbd").count() == 0, "key hints stay when shortcuts are off"
    assert page.locator("#pause-button").inner_text() == "Pause"
    answers_sent: list[Any] = []
    page.on("request", lambda request: answers_sent.append(request) if _is_answer(request) else None)
    for key in ("j", "0", "p", "s", "?"):
        page.keyboard.press(key)
    page.wait_for_timeout(QUIET_MS)
    assert _grades(alice) == [1] and answers_sent == []
    assert page.locator("#help").is_hidden() and page.locator("#skip-form").is_hidden()
    assert page.locator("#pause-button").get_attribute("aria-pressed") == "false"

    page.locator("#help-button").click()
    assert "Single-key shortcuts are off" in page.locator("#help").inner_text()
    assert page.locator("#help a[href='/account/keyboard/']").count() == 1
    page.keyboard.press("Escape")

    page.locator('#grades button[data-grade="0"]').focus()
    _answered(page, "Enter")
    # The keys pressed before it sent nothing: the Enter's is the only answer since.
    assert _grades(alice) == [1, 0] and len(answers_sent) == 1
