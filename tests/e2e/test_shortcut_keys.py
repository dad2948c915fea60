"""An assessor's own keys on the judge page (WCAG 2.1.4), in chromium: a remapped grade key
answers and the old one does nothing; with single keys off no letter or digit acts, while Enter
on a focused grade button still answers."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign, Judgment
from labeling.services.preferences import shortcuts_update
from tests.e2e.helpers import log_in
from tests.e2e.test_judging import running_campaign  # noqa: F401  (fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# Long enough for a keypress's answer to reach the server had it been sent.
QUIET_MS = 600


def _ready(page: Any) -> None:
    page.wait_for_function(
        "!document.getElementById('item').hidden && !document.querySelector('#grades button').disabled"
    )


def _grades(alice: AbstractBaseUser) -> list[int]:
    return list(Judgment.objects.filter(assessor=alice).order_by("pk").values_list("grade", flat=True))


def test_a_remapped_key_answers_and_switched_off_keys_do_nothing(
    browser_page: Any,
    live_server: Any,
    people: dict[str, AbstractBaseUser],
    running_campaign: Campaign,  # noqa: F811
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
    page.keyboard.press("j")
    page.wait_for_function("document.getElementById('toast').textContent.startsWith('Saved')")
    assert _grades(alice) == [1]

    shortcuts_update(user=alice, enabled=False)
    page.goto(live_server.url + path)
    _ready(page)
    assert page.locator("#grades kbd").count() == 0, "key hints stay when shortcuts are off"
    assert page.locator("#pause-button").inner_text() == "Pause"
    for key in ("j", "0", "p", "s", "?"):
        page.keyboard.press(key)
    page.wait_for_timeout(QUIET_MS)
    assert _grades(alice) == [1]
    assert page.locator("#help").is_hidden() and page.locator("#skip-form").is_hidden()
    assert page.locator("#pause-button").get_attribute("aria-pressed") == "false"

    page.locator("#help-button").click()
    assert "Single-key shortcuts are off" in page.locator("#help").inner_text()
    assert page.locator("#help a[href='/account/keyboard/']").count() == 1
    page.keyboard.press("Escape")

    page.locator('#grades button[data-grade="0"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('toast').textContent.startsWith('Saved')")
    assert _grades(alice) == [1, 0]
