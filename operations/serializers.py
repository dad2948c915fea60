"""The operations API's serializers: users, scoped tokens, the audit log."""

from __future__ import annotations

from rest_framework import serializers

from labeling.permissions import ROLES
from labeling.strict_json import StrictSerializer


class UserInputSerializer(StrictSerializer):
    username = serializers.RegexField(r"^[\w.@+-]{1,150}$")
    password = serializers.CharField(write_only=True, style={"input_type": "password"})
    role = serializers.ChoiceField([(role, role) for role in ROLES])
    email = serializers.EmailField(required=False, default="")


class UserActiveSerializer(StrictSerializer):
    active = serializers.BooleanField(help_text="false: deactivate (no sign-in, no token); true: bring back")


class UserOutputSerializer(StrictSerializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    role = serializers.CharField()
    active = serializers.BooleanField()


class ScopedTokenInputSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100, help_text="what the token is for, e.g. the pipeline's name")
    scopes = serializers.ListField(
        child=serializers.CharField(max_length=20),
        max_length=10,
        help_text='"arrivals" (submit runs, read their reports) and/or "estimates" (read estimates)',
    )
    days = serializers.IntegerField(help_text="days until it expires (at most SCOPED_TOKEN_MAX_DAYS)")


class ScopedTokenOutputSerializer(StrictSerializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="the secret's first characters, to tell tokens apart")
    scopes = serializers.ListField(child=serializers.CharField())
    state = serializers.CharField(help_text='"live", "expired" or "revoked"')
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    revoked_at = serializers.DateTimeField(allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True)
    last_used_from = serializers.IPAddressField(allow_null=True)


class NewScopedTokenSerializer(ScopedTokenOutputSerializer):
    secret = serializers.CharField(help_text="shown this once: store it in the pipeline's secrets now")


class AuditEventSerializer(StrictSerializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    kind = serializers.CharField()
    username = serializers.CharField(allow_blank=True)
    user_id = serializers.IntegerField(allow_null=True)
    source_address = serializers.IPAddressField(allow_null=True)
    campaign_id = serializers.IntegerField(allow_null=True)
    detail = serializers.DictField()
