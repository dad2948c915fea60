"""Sign-in at the organization's identity provider: OpenID Connect's authorization code flow with
PKCE, roles and campaign memberships from the ID token's groups at every sign-in.

Authlib does the protocol: discovery, the state and nonce kept in the session, the PKCE
verifier, the token exchange, and the ID token's checks (signature against the provider's keys,
issuer, audience, expiry, nonce). We chose it over mozilla-django-oidc, which checks neither the
audience nor the issuer of an ID token and reads no discovery document, and over django-allauth,
whose account and social-account tables and pages we would carry for one provider. What is ours:
which user a subject is, and what the groups make of them.

The provider is the authority for its users' roles: a sign-in sets the user's global role to the
highest one its groups map to (and takes away the others, the admin flags included), and the
campaign memberships its groups name to exactly those; memberships a coordinator gave in the app
stay. A user whose groups map to nothing loses what the provider gave and is refused."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.base_client import MismatchingStateError, OAuthError
from authlib.integrations.django_client import DjangoOAuth2App, OAuth
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import BaseBackend, ModelBackend
from django.contrib.auth.models import User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.utils import timezone
from joserfc.errors import JoseError

from labeling.models import Campaign, CampaignMember
from labeling.permissions import ROLE_ADMIN, ROLE_ASSESSOR, ROLE_COORDINATOR, ROLES, role_group
from operations.audit import Kind, audit_record, source_address
from operations.models import ExternalIdentity, ProvidedMembership

# The session keys of a provider's sign-in: where to go after it, and the ID token, which the
# provider's end-session page takes as the hint of whom to sign out.
SESSION_NEXT = "single_sign_on_next"
SESSION_ID_TOKEN = "single_sign_on_id_token"
IDENTITY_PROVIDER_BACKEND = "operations.single_sign_on.IdentityProviderBackend"


class SignInRefused(Exception):
    """A provider's sign-in that ends without a session; the text says why, for the user, and
    `username` names the account when the ID token was good enough to tell."""

    def __init__(self, reason: str, *, username: str = "", audited: bool = True) -> None:
        super().__init__(reason)
        self.username = username
        # A callback that answers no sign-in of this browser is anyone's request, not an attempt
        # to sign in: recording each would let anyone fill the audit log.
        self.audited = audited


UNKNOWN_STATE = "this sign-in was not started in this browser or was completed already; start it again"

# What the provider's error codes (OAuth 2.0, OpenID Connect) mean, in fixed words: the
# provider's free-text description is never shown, so no one can put a message on our page.
PROVIDER_ERRORS = {
    "access_denied": "the sign-in was cancelled or the provider denied it",
    "login_required": "the provider asks you to sign in again",
    "interaction_required": "the provider needs something from you first; start again",
    "consent_required": "the provider needs your consent for this server first",
    "temporarily_unavailable": "the provider is busy; try again in a minute",
    "server_error": "the provider failed; try again later",
}


def provider_enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


class PasswordBackend(ModelBackend):
    """Django's user-name-and-password sign-in, which PASSWORD_SIGN_IN=off turns off everywhere
    (the login page, the admin's, the API's token endpoint); permissions stay Django's."""

    def authenticate(
        self, request: Any, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        if not settings.PASSWORD_SIGN_IN:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id: Any) -> Any:
        # Turning passwords off ends the sessions they made too (API tokens are credentials of
        # their own: docs/operations.md says how to revoke them).
        if not settings.PASSWORD_SIGN_IN:
            return None
        return super().get_user(user_id)


class IdentityProviderBackend(BaseBackend):
    """The sessions of users who signed in at the provider. It checks no credentials: a user gets
    here only through `sign_in_complete`; an account deactivated since loses the session."""

    def get_user(self, user_id: Any) -> User | None:
        user = get_user_model().objects.filter(pk=user_id).first()
        return user if user is not None and user.is_active else None


_providers: dict[tuple[Any, ...], DjangoOAuth2App] = {}


def _provider() -> DjangoOAuth2App:
    """The provider's client, one per configuration (its discovery document and keys are read once
    and kept; the keys again when a token names one not seen)."""
    configuration = (
        settings.OIDC_ISSUER,
        settings.OIDC_CLIENT_ID,
        settings.OIDC_CLIENT_SECRET,
        settings.OIDC_SCOPES,
        settings.OIDC_TIMEOUT_SECONDS,
    )
    provider = _providers.get(configuration)
    if provider is None:
        provider = OAuth().register(
            name="provider",
            server_metadata_url=f"{settings.OIDC_ISSUER}/.well-known/openid-configuration",
            client_id=settings.OIDC_CLIENT_ID,
            client_secret=settings.OIDC_CLIENT_SECRET,
            client_kwargs={
                "scope": settings.OIDC_SCOPES,
                "code_challenge_method": "S256",
                "default_timeout": settings.OIDC_TIMEOUT_SECONDS,
            },
        )
        _providers[configuration] = provider
    return provider


def public_address(request: HttpRequest, path: str) -> str:
    """The absolute address of `path` as users reach it: PUBLIC_URL behind a reverse proxy that
    does not pass its host and scheme on, else the request's own."""
    if settings.PUBLIC_URL:
        return settings.PUBLIC_URL + path
    return request.build_absolute_uri(path)


def sign_in_start(
    request: HttpRequest, *, callback_path: str, next_url: str, another_user: bool = False
) -> str:
    """Where to send the browser to sign in at the provider (a new state, nonce and PKCE
    verifier are kept in the session). `another_user` asks the provider to sign in again
    (OpenID Connect's prompt=login) rather than reuse its own session: after a refusal, that
    session belongs to the account that was refused."""
    request.session[SESSION_NEXT] = next_url
    options = {"prompt": "login"} if another_user else {}
    try:
        redirect = _provider().authorize_redirect(request, public_address(request, callback_path), **options)
    except requests.RequestException as error:
        raise SignInRefused(
            f"{settings.OIDC_PROVIDER_NAME} did not answer ({type(error).__name__})"
        ) from None
    return str(redirect["Location"])


@dataclass(frozen=True)
class SignedIn:
    user: User
    next_url: str
    # Kept in the session for sign-out: the provider's end-session page takes it as the hint.
    id_token: str


def sign_in_complete(request: HttpRequest) -> SignedIn:
    """The provider's answer taken: the code exchanged, the ID token checked, the user found or
    made and given the roles its groups map to. SignInRefused when any of it fails."""
    provider = _provider()
    state = request.GET.get("state", "")
    if not state or provider.framework.get_state_data(request.session, state) is None:
        raise SignInRefused(UNKNOWN_STATE, audited=False)
    next_url = str(request.session.pop(SESSION_NEXT, "") or "")
    try:
        issuer = _checked_issuer(provider)
        # Authlib checks the audience only through `azp` unless told: a token for another client
        # that names us as its authorized party must not pass.
        token = provider.authorize_access_token(
            request,
            claims_options={
                "iss": {"essential": True, "values": [issuer]},
                "aud": {"essential": True, "values": [settings.OIDC_CLIENT_ID]},
            },
        )
    except MismatchingStateError:
        raise SignInRefused(UNKNOWN_STATE, audited=False) from None
    except OAuthError as error:
        code = str(error.error or "")
        known = PROVIDER_ERRORS.get(code)
        shown = re.sub(r"[^a-z_]", "", code)[:40] or "unknown"
        raise SignInRefused(known or f"{settings.OIDC_PROVIDER_NAME} refused the sign-in ({shown})") from None
    except (AuthlibBaseError, JoseError) as error:
        raise SignInRefused(_token_refusal(error)) from None
    except requests.RequestException as error:
        raise SignInRefused(
            f"{settings.OIDC_PROVIDER_NAME} did not answer ({type(error).__name__})"
        ) from None
    claims = token.get("userinfo")
    if not claims:
        raise SignInRefused(f"{settings.OIDC_PROVIDER_NAME} sent no ID token; ask for the openid scope")
    return SignedIn(user=user_from_claims(claims), next_url=next_url, id_token=str(token["id_token"]))


def _checked_issuer(provider: DjangoOAuth2App) -> str:
    """The issuer the discovery document names, which must be OIDC_ISSUER itself (OpenID Connect
    Discovery 4.3): a document that names another would let that one's tokens in."""
    issuer = str(provider.load_server_metadata().get("issuer", ""))
    if issuer.rstrip("/") != settings.OIDC_ISSUER:
        raise SignInRefused(f"the provider's discovery document names the issuer {issuer!r}, not OIDC_ISSUER")
    return issuer


def _token_refusal(error: Exception) -> str:
    """The reason an ID token was refused, in words (Authlib and joserfc name their errors alike)."""
    kind = type(error).__name__
    claim = getattr(error, "claim_name", None) or getattr(error, "claim", None)
    if kind == "ExpiredTokenError" or claim == "exp":
        return "the ID token has expired"
    if kind in ("BadSignatureError", "DecodeError"):
        return "the ID token's signature does not verify with the provider's keys"
    if claim in ("aud", "azp"):
        return "the ID token was issued to another application (its audience is not this server's client id)"
    if claim == "nonce":
        return "the ID token answers another sign-in (its nonce is not this one's)"
    if claim == "iss":
        return "the ID token comes from another issuer"
    if claim:
        return f"the ID token's {claim} claim is not valid"
    return f"the ID token is not valid ({kind})"


def _groups(claims: Mapping[str, Any]) -> list[str]:
    value = claims.get(settings.OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def role_from_groups(groups: list[str]) -> str | None:
    """The highest global role the groups map to (OIDC_ADMIN_GROUPS first), or None."""
    names = set(groups)
    for role, mapped in (
        (ROLE_ADMIN, settings.OIDC_ADMIN_GROUPS),
        (ROLE_COORDINATOR, settings.OIDC_COORDINATOR_GROUPS),
        (ROLE_ASSESSOR, settings.OIDC_ASSESSOR_GROUPS),
    ):
        if names & set(mapped):
            return role
    return None


def memberships_from_groups(groups: list[str]) -> dict[int, str]:
    """Campaign id to campaign role, from the groups OIDC_CAMPAIGN_GROUP_PATTERN matches (a
    campaign named twice takes the higher role)."""
    pattern = re.compile(settings.OIDC_CAMPAIGN_GROUP_PATTERN)
    granted: dict[int, str] = {}
    for group in groups:
        match = pattern.match(group)
        if match is None or match.group("role") not in CampaignMember.Role.values:
            continue
        text = match.group("campaign")
        if not (text.isascii() and text.isdigit() and 0 < int(text) < 2**63):
            continue  # no campaign has that id
        campaign_id, role = int(text), match.group("role")
        if granted.get(campaign_id) != CampaignMember.Role.COORDINATOR:
            granted[campaign_id] = role
    return granted


def user_from_claims(claims: Mapping[str, Any]) -> User:
    """The user of a checked ID token's claims, roles and memberships set from its groups.

    The changes are stored before a refusal for want of any role, so a user the provider took
    out of every group loses here what the provider had given; a subject never seen is refused
    before anything is stored, and a refused sign-in changes no profile field."""
    groups = _groups(claims)
    role = role_from_groups(groups)
    wanted = memberships_from_groups(groups)
    existing = set(Campaign.objects.filter(pk__in=list(wanted)).values_list("pk", flat=True))
    wanted = {
        campaign_id: member_role for campaign_id, member_role in wanted.items() if campaign_id in existing
    }
    with transaction.atomic():
        user = _user_of_subject(claims, may_create=role is not None or bool(wanted))
        _set_global_role(user, role)
        _set_memberships(user, wanted)
        allowed = role is not None or bool(wanted)
        if allowed:
            _profile_update(user, claims)
    if not allowed:
        raise _no_role(user.get_username())
    return user


def _no_role(username: str) -> SignInRefused:
    return SignInRefused(
        f"you signed in as {username!r}, but that account is in none of the groups that give access here; "
        "ask your administrator to add it to one",
        username=username,
    )


def _user_of_subject(claims: Mapping[str, Any], *, may_create: bool) -> User:
    issuer, subject = str(claims["iss"]), str(claims["sub"])
    now = timezone.now()
    identity = (
        ExternalIdentity.objects.select_for_update()
        .select_related("user")
        .filter(issuer=issuer, subject=subject)
        .first()
    )
    if identity is None:
        username = str(claims.get(settings.OIDC_USERNAME_CLAIM) or claims.get("email") or subject)[:150]
        if not may_create:
            raise _no_role(username)
        try:
            UnicodeUsernameValidator()(username)
        except ValidationError:
            raise SignInRefused(
                f"the name {username!r} from {settings.OIDC_PROVIDER_NAME} is not a user name this server "
                "takes (letters, digits and @.+-_ only); set OIDC_USERNAME_CLAIM to another claim",
                username=username[:150],
            ) from None
        user_model = get_user_model()
        # Case-blind: "BOSS" beside a local "boss" would read as the same person everywhere.
        if user_model.objects.filter(username__iexact=username).exists():
            raise SignInRefused(
                f"an account named {username!r} (or the same name in other letter case) already exists on "
                "this server and belongs to someone else; an administrator renames one of the two",
                username=username,
            )
        try:
            with transaction.atomic():  # a savepoint: a lost race leaves the outer transaction usable
                user = user_model(username=username)
                user.set_unusable_password()
                user.save()
                identity = ExternalIdentity.objects.create(
                    issuer=issuer, subject=subject, user=user, created_at=now, last_sign_in_at=now
                )
        except IntegrityError:
            # Two first sign-ins of one subject at once (two tabs): the other made the account.
            raise SignInRefused(
                "this account's first sign-in was completing in another window; sign in again",
                username=username,
            ) from None
    user = identity.user
    if not user.is_active:
        raise SignInRefused(
            "this account is deactivated on this server; ask an administrator", username=user.get_username()
        )
    return user


def _profile_update(user: User, claims: Mapping[str, Any]) -> None:
    """The name and address the provider holds now, and the time of this sign-in."""
    ExternalIdentity.objects.filter(user=user).update(last_sign_in_at=timezone.now())
    profile = {
        "email": str(claims.get("email") or "")[:254],
        "first_name": str(claims.get("given_name") or "")[:150],
        "last_name": str(claims.get("family_name") or "")[:150],
    }
    changed = [field for field, value in profile.items() if getattr(user, field) != value]
    if changed:
        for field in changed:
            setattr(user, field, profile[field])
        user.save(update_fields=changed)


def _set_global_role(user: User, role: str | None) -> None:
    """The user's role groups become exactly {role}; the admin flags follow the admin role, as
    for an account made with `manage.py accounts` (the audit log records each change)."""
    held = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    wanted = {role} if role else set()
    if held - wanted:
        user.groups.remove(*[role_group(name) for name in sorted(held - wanted)])
    if wanted - held:
        user.groups.add(*[role_group(name) for name in sorted(wanted - held)])
    is_admin = role == ROLE_ADMIN
    if user.is_staff != is_admin or user.is_superuser != is_admin:
        user.is_staff = user.is_superuser = is_admin
        user.save(update_fields=["is_staff", "is_superuser"])


def _set_memberships(user: User, wanted: dict[int, str]) -> None:
    """The memberships the provider gives become `wanted` (campaigns that exist). A membership the
    provider did not make, or one a coordinator has changed since, is the coordinator's: left as
    it is and no longer the provider's to change or take back."""
    given = {provided.campaign_id: provided for provided in ProvidedMembership.objects.filter(user=user)}
    members = {
        member.campaign_id: member
        for member in CampaignMember.objects.filter(user=user, campaign_id__in=set(given) | set(wanted))
    }
    for campaign_id, provided in given.items():
        member = members.get(campaign_id)
        if member is not None and member.role != provided.role:
            provided.delete()  # changed in the app since: the coordinator's now
            continue
        if campaign_id in wanted:
            continue
        provided.delete()
        if member is not None:
            member.delete()
            _membership_audit(user, campaign_id, {"removed": [f"campaign {provided.role}"]})
    given = {campaign_id: provided for campaign_id, provided in given.items() if provided.pk is not None}
    for campaign_id, member_role in wanted.items():
        member = members.get(campaign_id)
        if member is None:
            CampaignMember.objects.create(campaign_id=campaign_id, user=user, role=member_role)
            _membership_audit(user, campaign_id, {"added": [f"campaign {member_role}"]})
        elif campaign_id not in given:
            continue  # a coordinator's membership: not the provider's to change
        elif member.role != member_role:
            _membership_audit(
                user,
                campaign_id,
                {"removed": [f"campaign {member.role}"], "added": [f"campaign {member_role}"]},
            )
            member.role = member_role
            member.save(update_fields=["role"])
        ProvidedMembership.objects.update_or_create(
            user=user, campaign_id=campaign_id, defaults={"role": member_role}
        )


def _membership_audit(user: User, campaign_id: int, change: dict[str, list[str]]) -> None:
    audit_record(
        Kind.ROLE_CHANGED, user=user, campaign_id=campaign_id, detail={**change, "by": settings.OIDC_ISSUER}
    )


def sign_in_refused(request: HttpRequest, refusal: SignInRefused) -> None:
    """A failed sign-in at the provider, in the audit log."""
    audit_record(
        Kind.SIGN_IN_FAILED,
        username=refusal.username,
        source=source_address(request),
        detail={"path": request.path[:200], "reason": str(refusal)[:500], "provider": settings.OIDC_ISSUER},
    )


def end_session_address(request: HttpRequest, id_token: str, *, after_path: str) -> str | None:
    """The provider's end-session page for this ID token (RP-initiated logout), where it has one.
    Not Authlib's create_logout_url: it adds a state that nothing here checks, and the provider
    hands it back on our login page's address."""
    try:
        endpoint = _provider().load_server_metadata().get("end_session_endpoint")
    except requests.RequestException:
        return None
    if not endpoint:
        return None
    query = urlencode(
        {
            "id_token_hint": id_token,
            "client_id": settings.OIDC_CLIENT_ID,
            "post_logout_redirect_uri": public_address(request, after_path),
        }
    )
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"
