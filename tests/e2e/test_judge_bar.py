"""The judge page's bar under a long campaign name, on a laptop and a phone: the timer and the
Pause, Undo and "?" buttons stay on one line together ("?" wrapped onto a line of its own)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from tests.e2e.helpers import log_in
from uploads.run_imports import runs_import

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

LONG_NAME = "TREC Deep Learning 2019 passage ranking: certified DCG@10 of thirteen runs, second round"


@pytest.mark.parametrize("width", [1400, 390])
def test_the_buttons_stay_together_under_a_long_name(
    browser_page: Any, live_server: Any, people: dict[str, AbstractBaseUser], screenshot_dir: Path, width: int
) -> None:
    campaign = campaign_create(creator=people["coordinator"], name=LONG_NAME, metric="DCG@5", budget=10)
    run = "".join(f"1 Q0 d{d} {d} {9 - d} r\n" for d in range(1, 6))
    runs_import(campaign=campaign, files=[("r.run", io.BytesIO(run.encode()))])
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    campaign_start(campaign=campaign)
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server.url, "alice", f"/judge/{campaign.pk}/")
    page.locator("#item").wait_for(state="visible", timeout=30_000)
    boxes = {
        name: page.locator(f"#{name}").bounding_box() for name in ("timer", "pause-button", "help-button")
    }
    assert all(box is not None for box in boxes.values())
    middles = {name: box["y"] + box["height"] / 2 for name, box in boxes.items() if box}
    assert max(middles.values()) - min(middles.values()) < 8, middles
    page.screenshot(path=str(screenshot_dir / f"judge-bar-long-name-{width}.png"))
