"""Signing in at the organization's provider in the browser: the login page's button, the
provider's own login page (tests/identity_provider, a real OpenID Connect provider), back as the
coordinator its group makes; sign-out through the provider's end-session page; and, with the
group taken away at the provider, the next sign-in refused and the role gone; then another
account signed in at the provider (prompt=login: the refused one's session is still there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from labeling.permissions import user_role
from operations.models import AuditEvent
from tests.identity_provider import IdentityProvider


def test_a_coordinator_signs_in_at_the_provider_and_loses_the_role_with_the_group(
    browser_page: Any,
    live_server: Any,
    identity_provider: IdentityProvider,
    settings: Any,
    screenshot_dir: Path,
    transactional_db: None,
) -> None:
    from playwright.sync_api import expect

    base = live_server.url
    identity_provider.seed(
        clients=[
            {
                "name": "relevance-e2e",
                "client_id": "relevance-e2e",
                "secret": "e2e-secret",
                "redirect_uris": [f"{base}/accounts/provider/callback/"],
                "post_logout_redirect_uris": [f"{base}/accounts/login/"],
            }
        ],
        users=[
            {
                "username": "vera",
                "password": "vera-at-the-provider",
                "email": "vera@example.org",
                "groups": ["relevance-coordinators"],
            }
        ],
    )
    settings.OIDC_ISSUER = identity_provider.issuer
    settings.OIDC_CLIENT_ID = "relevance-e2e"
    settings.OIDC_CLIENT_SECRET = "e2e-secret"
    settings.OIDC_PROVIDER_NAME = "Example Org"
    # What config/settings.py adds for a configured provider: sign-out's form may lead there.
    policy = {**settings.CONTENT_SECURITY_POLICY}
    policy["DIRECTIVES"] = {
        **policy["DIRECTIVES"],
        "form-action": ["'self'", f"http://127.0.0.1:{identity_provider.port}"],
    }
    settings.CONTENT_SECURITY_POLICY = policy

    page = browser_page
    page.goto(f"{base}/campaigns/")
    page.screenshot(path=str(screenshot_dir / "sign-in-with-provider.png"))
    page.click("text=Sign in with Example Org")
    page.fill("#provider-username", "vera")
    page.fill("#provider-password", "vera-at-the-provider")
    page.click("#provider-submit")
    page.wait_for_url(f"{base}/campaigns/")
    expect(page.locator("header")).to_contain_text("vera")
    expect(page.locator("header")).to_contain_text("New campaign")
    page.screenshot(path=str(screenshot_dir / "signed-in-from-provider.png"))
    assert user_role(User.objects.get(username="vera")) == "coordinator"

    page.click("text=Log out")
    page.wait_for_url(f"{base}/accounts/login/")
    assert AuditEvent.objects.filter(kind="sign_out", username="vera").count() == 1

    # Out of the group at the provider: the next sign-in is refused and the role is gone.
    identity_provider.seed(users=[{"username": "vera", "password": "vera-at-the-provider", "groups": []}])
    page.click("text=Sign in with Example Org")
    # The provider's own session ended with the sign-out, so its login page asks again.
    page.fill("#provider-username", "vera")
    page.fill("#provider-password", "vera-at-the-provider")
    page.click("#provider-submit")
    page.wait_for_url(f"{base}/accounts/login/")
    expect(page.locator(".messages")).to_contain_text("in none of the groups that give access here")
    page.screenshot(path=str(screenshot_dir / "sign-in-refused-without-group.png"))
    assert user_role(User.objects.get(username="vera")) is None
    kinds = list(
        AuditEvent.objects.filter(kind__in=["sign_in", "sign_out", "sign_in_failed"])
        .order_by("pk")
        .values_list("kind", flat=True)
    )
    assert kinds == ["sign_in", "sign_out", "sign_in_failed"]

    # The provider still holds vera's session: the button now asks it for another account
    # (prompt=login) instead of coming straight back refused.
    identity_provider.seed(
        users=[{"username": "walt", "password": "walt-at-the-provider", "groups": ["relevance-coordinators"]}]
    )
    page.click("text=Sign in with Example Org as another user")
    expect(page.locator("#provider-username")).to_be_visible()
    page.fill("#provider-username", "walt")
    page.fill("#provider-password", "walt-at-the-provider")
    page.click("#provider-submit")
    page.wait_for_url(f"{base}/")  # no page was asked for this time: the home page
    expect(page.locator("header")).to_contain_text("walt")
    assert user_role(User.objects.get(username="walt")) == "coordinator"
