"""The operations API's serializers: users."""

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
