"""Reads for the coordinator's campaign page and dashboard that the API does not need."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from labeling.models import Campaign, CampaignMember
from labeling.permissions import is_admin
from labeling.selectors import campaign_list_for_user


def campaigns_to_judge(user: User | AnonymousUser) -> QuerySet[Campaign]:
    """Campaigns the user is an assessor of (their judging work list); not drafts, which the
    coordinator is still setting up (a clone keeps its source's assessors)."""
    if not user.is_authenticated:
        return Campaign.objects.none()
    return (
        Campaign.objects.filter(
            members__user_id=user.pk, members__role=CampaignMember.Role.ASSESSOR, archived_at__isnull=True
        )
        .exclude(status=Campaign.Status.DRAFT)
        .order_by("-created_at")
    )


def campaigns_to_manage(user: User | AnonymousUser) -> QuerySet[Campaign]:
    """Campaigns the user coordinates (all of them for admins)."""
    if is_admin(user):
        return campaign_list_for_user(user).order_by("-created_at")
    if not user.is_authenticated:
        return Campaign.objects.none()
    return Campaign.objects.filter(
        members__user_id=user.pk, members__role=CampaignMember.Role.COORDINATOR
    ).order_by("-created_at")


# The campaign list's status filter: the statuses, and "archived" for campaigns put away
# (which every other choice leaves out).
ARCHIVED = "archived"
LIST_FILTERS = (*Campaign.Status.values, ARCHIVED)


def campaigns_listed(user: User | AnonymousUser, search: str = "", status: str = "") -> QuerySet[Campaign]:
    """The coordinator's campaign list: name or metric containing `search`, one status (or the
    archived ones; archived campaigns show only there), newest first, with their progress."""
    campaigns = campaigns_to_manage(user).select_related("progress")
    if status == ARCHIVED:
        campaigns = campaigns.filter(archived_at__isnull=False)
    else:
        campaigns = campaigns.filter(archived_at__isnull=True)
        if status:
            campaigns = campaigns.filter(status=status)
    if search.strip():
        campaigns = campaigns.filter(Q(name__icontains=search.strip()) | Q(metric__icontains=search.strip()))
    return campaigns
