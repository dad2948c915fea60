"""Helpers the browser tests share: the personas' password, logging in through the page."""

from __future__ import annotations

from typing import Any

PASSWORD = "correct-horse-battery-42"


def log_in(page: Any, base_url: str, username: str, target: str) -> None:
    """Log in through the login form and land on `target`."""
    page.goto(f"{base_url}/accounts/login/?next={target}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()
