"""The one JSON parser of the API (REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]).

Python's json module takes bodies no endpoint should see and fails on them in the view, as a
500: nesting a few thousand levels deep (RecursionError), numbers that overflow a float
(`10**400`, `1e999`) or are not numbers (NaN, Infinity), a top-level `null` or `1` where
every endpoint reads fields of an object, NUL characters and lone surrogates no database
column stores. This parser refuses all of them with a 400 before any view runs, so no
endpoint has to check them itself.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from labeling.fields import has_lone_surrogate

INT64_MAX = 2**63 - 1
"""The widest integer column (BigIntegerField); a larger number is refused as overflowing."""


class JsonBodyError(ValueError):
    """A JSON body this API refuses; the message says why."""


def _bounded_int(text: str) -> int:
    # int() itself refuses more than 4300 digits (ValueError); the bound refuses far fewer.
    if len(text.lstrip("-")) > 19 or abs(value := int(text)) > INT64_MAX:
        raise JsonBodyError(f"number {text[:30]} overflows a 64-bit integer")
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonBodyError(f"number {text[:30]} overflows a double")
    return value


def _refuse_constant(name: str) -> float:
    raise JsonBodyError(f"{name} is not a JSON number")


def _check_strings_and_depth(value: Any, max_depth: int) -> None:
    """Walk the parsed value without recursion: depth, and every string and key."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise JsonBodyError("a string contains a NUL character")
            if has_lone_surrogate(item):
                raise JsonBodyError("a string contains a lone surrogate (not valid Unicode text)")
        elif isinstance(item, Mapping | list):
            if depth > max_depth:
                raise JsonBodyError(f"nested deeper than {max_depth} levels (the limit)")
            children = [*item.keys(), *item.values()] if isinstance(item, Mapping) else item
            pending.extend((child, depth + 1) for child in children)


def parse_json_object(raw: bytes, encoding: str = "utf-8") -> dict[str, Any]:
    """The JSON object in `raw`, or `JsonBodyError` saying why it is refused (size, depth,
    not an object, a number that overflows, NaN/Infinity, NUL or a lone surrogate)."""
    limit = settings.LABELING_JSON_MAX_BYTES
    if len(raw) > limit:
        raise JsonBodyError(f"body larger than {limit} bytes (the limit)")
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        raise JsonBodyError(f"body is not valid {encoding} text") from None
    try:
        value = json.loads(
            text, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_refuse_constant
        )
    except RecursionError:
        raise JsonBodyError(
            f"nested deeper than {settings.LABELING_JSON_MAX_DEPTH} levels (the limit)"
        ) from None
    except JsonBodyError:
        raise
    except ValueError as error:
        raise JsonBodyError(f"not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise JsonBodyError(
            f"expected a JSON object, not {type(value).__name__ if value is not None else 'null'}"
        )
    _check_strings_and_depth(value, settings.LABELING_JSON_MAX_DEPTH)
    return value


class SafeJSONParser(JSONParser):
    """DRF's JSON parser with the refusals of `parse_json_object`, each a 400 saying why."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping | None = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        # Read one byte past the limit, never the whole of an over-long body.
        raw = stream.read(settings.LABELING_JSON_MAX_BYTES + 1) if stream is not None else b""
        try:
            return parse_json_object(raw, encoding)
        except JsonBodyError as error:
            raise ParseError(f"JSON parse error - {error}") from None
