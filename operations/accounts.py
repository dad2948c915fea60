"""User accounts: created with a global role, deactivated and brought back (the command
`manage.py accounts`, the API's /api/users/)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from labeling.permissions import (
    ROLE_ADMIN,
    ROLE_ASSESSOR,
    ROLES,
    is_admin,
    is_coordinator,
    role_group,
    user_role,
)


@transaction.atomic
def user_set_active(*, actor: User | None, username: str, active: bool) -> User:
    """Deactivate a user (no more sign-ins, sessions or tokens: Django's and DRF's authentication
    refuse an inactive user at every request) or bring one back; nothing they made is deleted.
    Coordinators may do it to assessors, admins to anyone but themselves (PermissionError)."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValueError(f"no user named {username!r}")
    if actor is not None:
        if not is_coordinator(actor):
            raise PermissionError("only coordinators and admins deactivate users")
        if not is_admin(actor) and user_role(user) != ROLE_ASSESSOR:
            raise PermissionError("coordinators deactivate assessors only; ask an admin")
        if actor.pk == user.pk and not active:
            raise PermissionError("you cannot deactivate yourself")
    if user.is_active != active:
        user.is_active = active
        user.save(update_fields=["is_active"])
    return user


@transaction.atomic
def user_create(*, creator: User | None, username: str, password: str, role: str, email: str = "") -> User:
    """Create a user with a global role; only admins may create admins (PermissionError)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    if creator is not None:
        if not is_coordinator(creator):
            raise PermissionError("only coordinators and admins create users")
        if role == ROLE_ADMIN and not is_admin(creator):
            raise PermissionError("only admins create admins")
    user_model = get_user_model()
    if user_model.objects.filter(username=username).exists():
        raise ValueError(f"a user named {username!r} already exists")
    user = user_model(username=username, email=email)
    try:
        validate_password(password, user)
    except ValidationError as error:
        raise ValueError(" ".join(error.messages)) from None
    user.set_password(password)
    if role == ROLE_ADMIN:
        user.is_staff = True
        user.is_superuser = True
    user.save()
    user.groups.add(role_group(role))
    return user
