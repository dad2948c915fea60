"""A new coordinator chooses the pair compared in "Compare two systems" in the browser: the
campaign page says which runs would be taken and that nobody chose them, the pre-flight warns,
and the choice made with the form shows as chosen."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign
from labeling.services.campaigns import campaign_create
from tests.e2e.helpers import log_in
from uploads.run_imports import runs_import

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_a_coordinator_chooses_the_pair_in_the_browser(
    browser_page: Any, live_server: Any, people: dict[str, AbstractBaseUser], screenshot_dir: Path
) -> None:
    campaign = campaign_create(
        creator=people["coordinator"], name="Three runs", metric="DCG@5", goal="difference", budget=20
    )
    runs = [
        (
            f"{name}.run",
            io.BytesIO("".join(f"1 Q0 d{(d + i) % 6} {d + 1} {9 - d} {name}\n" for d in range(5)).encode()),
        )
        for i, name in enumerate(("bm25", "dense", "rerank"))
    ]
    runs_import(campaign=campaign, files=runs)
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/")
    panel = page.locator("#compared")
    panel.wait_for(state="visible", timeout=30_000)
    assert "bm25 minus dense" in " ".join(panel.inner_text().split())
    assert "not chosen yet" in panel.inner_text()
    assert page.locator('#preflight [data-kind="compared_not_chosen"]').count() == 1

    panel.locator("select[name=first]").select_option("rerank")
    panel.locator("select[name=second]").select_option("bm25")
    panel.locator("button[type=submit]").click()
    page.wait_for_url("**#compared", timeout=30_000)
    panel = page.locator("#compared")
    assert panel.locator("[data-compared]").get_attribute("data-compared") == "rerank|bm25"
    assert "as chosen" in panel.inner_text()
    assert page.locator('#preflight [data-kind="compared_not_chosen"]').count() == 0
    assert Campaign.objects.get(pk=campaign.pk).focus_systems == ["rerank", "bm25"]
    page.screenshot(path=str(screenshot_dir / "compared-pair.png"), full_page=True)
