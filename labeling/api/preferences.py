"""Your own keyboard shortcuts: read them, remap keys, switch single keys off."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling import selectors
from labeling.access import request_user
from labeling.modes import shortcut_actions
from labeling.services.preferences import shortcuts_update
from labeling.shortcuts import ShortcutsInvalid
from labeling.strict_json import StrictSerializer


class ShortcutActionSerializer(StrictSerializer):
    name = serializers.CharField()
    description = serializers.CharField(source="label")
    default = serializers.CharField(
        help_text="a grade's default is the campaign's key, this unless it sets one"
    )
    key = serializers.CharField(help_text="your key: your choice, else the default")
    pages = serializers.ListField(
        child=serializers.CharField(), help_text="the judge pages it acts on, as the modes name them"
    )


class ShortcutsSerializer(StrictSerializer):
    enabled = serializers.BooleanField(help_text="false: no single key acts on the judge pages")
    keys = serializers.DictField(child=serializers.CharField(), help_text="the keys you changed, by action")
    actions = ShortcutActionSerializer(many=True, read_only=True)


class ShortcutsInputSerializer(StrictSerializer):
    enabled = serializers.BooleanField(required=False)
    keys = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        required=False,
        help_text='action name -> key, e.g. {"grade_1": "j", "pause": "ArrowUp"}; "" is the default',
    )


def _body(request: Request) -> dict[str, object]:
    preferences = selectors.shortcut_preferences(request_user(request))
    listed = [
        {
            "name": action.name,
            "label": action.label,
            "default": action.default,
            "key": preferences.keys.get(action.name, action.default),
            "pages": sorted(action.pages),
        }
        for action in shortcut_actions()
    ]
    body = {"enabled": preferences.enabled, "keys": preferences.keys, "actions": listed}
    return ShortcutsSerializer(body).data


class ShortcutsApi(APIView):
    """Your keyboard shortcuts on the judge pages. PUT replaces the keys you changed (absent
    keys: defaults), PATCH changes only the actions it names; both may set `enabled`."""

    @extend_schema(responses={200: ShortcutsSerializer})
    def get(self, request: Request) -> Response:
        return Response(_body(request))

    @extend_schema(request=ShortcutsInputSerializer, responses={200: ShortcutsSerializer})
    def put(self, request: Request) -> Response:
        return self._update(request, replace=True)

    @extend_schema(request=ShortcutsInputSerializer, responses={200: ShortcutsSerializer})
    def patch(self, request: Request) -> Response:
        return self._update(request, replace=False)

    def _update(self, request: Request, *, replace: bool) -> Response:
        data = ShortcutsInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            shortcuts_update(
                user=request_user(request),
                keys=data.validated_data.get("keys", {}),
                enabled=data.validated_data.get("enabled"),
                replace=replace,
            )
        except ShortcutsInvalid as error:
            return Response({"keys": error.errors}, status=status.HTTP_400_BAD_REQUEST)
        return Response(_body(request))
