"""Helpers the browser tests share: the personas' password, logging in through the page, the
judge page's item and a grade key pressed on it."""

from __future__ import annotations

from typing import Any

from demo.loading import DEMO_PASSWORD

PASSWORD = "correct-horse-battery-42"


def log_in(page: Any, base_url: str, username: str, target: str) -> None:
    """Log in through the login form and land on `target`."""
    page.goto(f"{base_url}/accounts/login/?next={target}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def log_in_demo(page: Any, base: str, username: str) -> None:
    """Log in as one of the demo's users (the demo's password)."""
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", DEMO_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def shown_item(page: Any) -> str:
    """Which (topic, document) the page shows, e.g. 'Topic 301|WT-1'."""
    return page.evaluate(
        "document.getElementById('topic-id').textContent + '|' + "
        "document.getElementById('doc-docno').textContent"
    )


def judge_with_key(page: Any, key: str) -> str:
    """Press a grade key on the current item; return the item judged once the next is shown."""
    item = shown_item(page)
    page.keyboard.press(key)
    page.wait_for_function(
        "previous => document.getElementById('topic-id').textContent + '|' + "
        "document.getElementById('doc-docno').textContent !== previous"
        " || !document.getElementById('empty').hidden",
        arg=item,
    )
    return item
