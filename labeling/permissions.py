"""Roles and object permissions.

Global roles are Django groups ("assessor", "coordinator", "admin"; superusers count as
admins). Per-campaign rights come from `CampaignMember` rows through
`CampaignPermissionBackend`, so `user.has_perm("labeling.judge_campaign", campaign)` works
like any Django object permission. We use a membership table rather than django-guardian:
"who may judge campaign X" is then one indexed join on the hot judging path, rows cascade
with the campaign and the user, and the role of a member is a column, not a set of generic
(content type, object id as text) permission rows.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, Group, User

ROLE_ASSESSOR = "assessor"
ROLE_COORDINATOR = "coordinator"
ROLE_ADMIN = "admin"
ROLES = (ROLE_ASSESSOR, ROLE_COORDINATOR, ROLE_ADMIN)

JUDGE = "labeling.judge_campaign"
MANAGE = "labeling.manage_campaign"
VIEW_RESULTS = "labeling.view_campaign_results"
EXPORT = "labeling.export_campaign"

# What a campaign member of each role may do with that campaign; admins may do everything.
_MEMBER_PERMISSIONS: dict[str, frozenset[str]] = {
    ROLE_ASSESSOR: frozenset({JUDGE}),
    ROLE_COORDINATOR: frozenset({JUDGE, MANAGE, VIEW_RESULTS, EXPORT}),
}
_ALL_PERMISSIONS = frozenset({JUDGE, MANAGE, VIEW_RESULTS, EXPORT})


def member_roles_with(permission: str) -> tuple[str, ...]:
    """The campaign-member roles that hold `permission` (admins hold every permission anyway)."""
    return tuple(role for role, granted in _MEMBER_PERMISSIONS.items() if permission in granted)


def user_role(user: User | AnonymousUser) -> str | None:
    """The user's highest global role, or None (an outsider)."""
    if not user.is_authenticated:
        return None
    cached: str | None | bool = getattr(user, "_labeling_role", False)
    if cached is not False:
        return cached if isinstance(cached, str) else None
    if user.is_superuser:
        role: str | None = ROLE_ADMIN
    else:
        names = set(user.groups.values_list("name", flat=True))
        role = next((name for name in (ROLE_ADMIN, ROLE_COORDINATOR, ROLE_ASSESSOR) if name in names), None)
    # Remembered on the user object for the rest of the request (the request keeps one user).
    setattr(user, "_labeling_role", role)  # noqa: B010
    return role


def is_admin(user: User | AnonymousUser) -> bool:
    """True for superusers and members of the admin group."""
    return user_role(user) == ROLE_ADMIN


def is_coordinator(user: User | AnonymousUser) -> bool:
    """True for coordinators and admins: they may create campaigns and users."""
    return user_role(user) in (ROLE_COORDINATOR, ROLE_ADMIN)


def campaign_member_role(user: User | AnonymousUser, campaign_id: int) -> str | None:
    """The user's role in one campaign (cached on the user object for the request)."""
    if not user.is_authenticated:
        return None
    cache: dict[int, str | None] = user.__dict__.setdefault("_labeling_member_roles", {})
    if campaign_id not in cache:
        from labeling.models import CampaignMember

        cache[campaign_id] = (
            CampaignMember.objects.filter(campaign_id=campaign_id, user_id=user.pk)
            .values_list("role", flat=True)
            .first()
        )
    return cache[campaign_id]


def member_role_remember(user: User | AnonymousUser, campaign_id: int, role: str | None) -> None:
    """Remember the user's role in a campaign for the request (a selector read it already)."""
    if user.is_authenticated:
        user.__dict__.setdefault("_labeling_member_roles", {})[campaign_id] = role


def role_group(role: str) -> Group:
    """The Django group of a global role (created on demand)."""
    group, _ = Group.objects.get_or_create(name=role)
    return group


class CampaignPermissionBackend:
    """Object permissions on campaigns from membership; global permissions stay with ModelBackend."""

    def authenticate(self, request: Any, **credentials: Any) -> None:
        return None

    def has_perm(self, user_obj: Any, perm: str, obj: Any = None) -> bool:
        from labeling.models import Campaign

        if not isinstance(obj, Campaign) or not user_obj.is_active:
            return False
        if perm not in _ALL_PERMISSIONS:
            return False
        # Membership first: it is usually known already, while the global role costs a query.
        role = campaign_member_role(user_obj, obj.pk)
        if role is not None and perm in _MEMBER_PERMISSIONS[role]:
            return True
        return is_admin(user_obj)

    def get_all_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        from labeling.models import Campaign

        if not isinstance(obj, Campaign) or not user_obj.is_active:
            return set()
        if is_admin(user_obj):
            return set(_ALL_PERMISSIONS)
        role = campaign_member_role(user_obj, obj.pk)
        return set(_MEMBER_PERMISSIONS.get(role or "", frozenset()))
