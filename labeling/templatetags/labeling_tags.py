"""Template filters for role-dependent navigation."""

from __future__ import annotations

from django import template
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from labeling.permissions import is_coordinator as _is_coordinator

register = template.Library()


@register.filter
def is_coordinator(user: AbstractBaseUser | AnonymousUser) -> bool:
    """True for coordinators and admins (they create and manage campaigns)."""
    return _is_coordinator(user)
