"""Serializers that take JSON's types strictly: a number is a number, a string a string, a boolean
a boolean.

DRF's fields coerce what they are given: an IntegerField takes "2", a CharField takes 5 (as "5"),
a BooleanField takes "yes" or 1, a ChoiceField of numbers takes "2". A client that sends the wrong
type has a bug, and silently accepting it hides the bug until the coerced value surprises someone.
Every serializer of the API derives from `StrictSerializer` (or `StrictModelSerializer`), which
refuses a value of the wrong JSON type with a 400 naming the field, before the field's own
validation. Form-encoded bodies (a `QueryDict`, where every value is a string) are left to the
fields' usual parsing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from django.http import QueryDict
from rest_framework import serializers
from rest_framework.fields import empty

from labeling.budgets import plain_decimal


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return "null" if value is None else type(value).__name__


def _choice_types_match(field: serializers.ChoiceField, value: Any) -> bool:
    """A choice's JSON type is its key's: 2 for a numeric choice, "2" for a string one."""
    return any(_json_type(value) == _json_type(key) for key in field.choices)


def json_type_problem(field: serializers.Field, value: Any) -> str | None:
    """Why `value` (parsed JSON) has the wrong type for `field`, or None when it has the right one.
    Null is left to the field (`allow_null`); lists are checked item by item."""
    if value is None or value is empty:
        return None
    if isinstance(field, serializers.BooleanField):
        expected = "a boolean"
    elif isinstance(field, serializers.ChoiceField):
        if _choice_types_match(field, value):
            return None
        expected = " or ".join(sorted({_json_type(key) for key in field.choices}))
    elif isinstance(field, serializers.IntegerField | serializers.FloatField | serializers.DecimalField):
        expected = "a number"
    elif isinstance(field, serializers.CharField):
        expected = "a string"
    elif isinstance(field, serializers.ListField) and isinstance(value, list):
        for position, item in enumerate(value):
            problem = json_type_problem(field.child, item)
            if problem is not None:
                return f"item {position}: {problem}"
        return None
    else:
        return None
    if _json_type(value) == expected:
        return None
    return f"expected {expected}, not {_json_type(value)}"


class StrictJsonMixin:
    """Refuses JSON values of the wrong type for their field (see the module docstring)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping) and not isinstance(data, QueryDict):
            errors = {}
            for field in self._writable_fields:  # type: ignore[attr-defined]  # the mixin is only used with Serializer, which has it
                problem = json_type_problem(field, field.get_value(data))
                if problem is not None:
                    errors[field.field_name] = [problem]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)  # type: ignore[misc]  # the mixin is only used with Serializer, which has it


class StrictSerializer(StrictJsonMixin, serializers.Serializer):
    """The base of every serializer of the API."""


class StrictModelSerializer(StrictJsonMixin, serializers.ModelSerializer):
    """The base of every model serializer of the API."""


class PlainFloatField(serializers.FloatField):
    """A number: a finite JSON number, or in a form a plain ASCII decimal (``float`` alone would
    take ``"١٢"``, ``"1_000"`` or ``"nan"``)."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, str):
            try:
                data = plain_decimal(data.strip(" \t"))
            except ValueError as error:
                raise serializers.ValidationError(str(error)) from None
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            raise serializers.ValidationError(f"a finite number is expected, not {value!r}")
        return value
