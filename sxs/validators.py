"""The text of a grid of costs (C, C_t) as a coordinator types it: comma-separated numbers."""

from __future__ import annotations

import math

from django.core.exceptions import ValidationError

MAX_GRID_VALUES = 12
"""Each value of a grid costs a fit per fold and bootstrap replicate."""


def grid_values(text: str) -> tuple[float, ...]:
    """The numbers of a grid text, sorted and without repeats; ValueError naming what is wrong."""
    if not isinstance(text, str):
        raise ValueError(f"a grid is a text of comma-separated numbers, got {text!r}")
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise ValueError("a grid needs at least one number, e.g. 0.1, 1, 10, 100")
    values = set()
    for part in parts:
        if not part:
            raise ValueError(f"an empty value in {text!r}: write numbers separated by commas")
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"{part!r} is not a number") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"every value must be a number above 0, got {part!r}")
        values.add(value)
    if len(values) > MAX_GRID_VALUES:
        raise ValueError(f"at most {MAX_GRID_VALUES} values, got {len(values)}")
    return tuple(sorted(values))


def grid_text(values: tuple[float, ...]) -> str:
    """The grid as stored: "0.1,1,10,100" (the shortest form of each number that reads back)."""
    return ",".join(f"{value:g}" if float(f"{value:g}") == value else repr(value) for value in values)


def validate_grid(text: str) -> None:
    """Form and serializer validation of a non-empty grid text."""
    try:
        grid_values(text)
    except ValueError as error:
        raise ValidationError(str(error)) from None


def validate_optional_grid(text: str) -> None:
    """As `validate_grid`, an empty text allowed."""
    if text.strip():
        validate_grid(text)
