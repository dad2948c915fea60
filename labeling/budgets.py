"""What a budget may be: a plain decimal number (ASCII digits, a point, an exponent), finite, not
negative (a top-up: above 0), and no larger than the operator's ceiling `LABELING_MAX_BUDGET`
(in the campaign's budget unit; a campaign's total, its top-ups included). One rule for the
campaign form, the API's create and PATCH, and arrivals.

Python's ``float`` reads ``"١٢"`` (Arabic-Indic digits), ``"1_000"``, ``" 12 "`` and ``"nan"``; a
budget typed so is a typo or a probe, and a budget of 1e308 becomes an overflow when it is
turned into draws, so both are refused where they come in, with the reason."""

from __future__ import annotations

import math
import re

from django.conf import settings

PLAIN_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
NOT_PLAIN = "a plain decimal number is expected (digits 0-9, a point, an exponent), not {text!r}"


def plain_decimal(text: str) -> float:
    """The number `text` writes in plain ASCII decimal; ValueError otherwise."""
    if not PLAIN_DECIMAL.fullmatch(text):
        raise ValueError(NOT_PLAIN.format(text=text[:40]))
    return float(text)


def budget_ceiling() -> float:
    return float(settings.LABELING_MAX_BUDGET)


def budget_problem(value: float, *, what: str = "budget", positive: bool = False) -> str | None:
    """Why `value` cannot be a budget, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return f"the {what} must be a finite number, got {value!r}"
    if value < 0 or (positive and value == 0):
        return f"the {what} must be {'above' if positive else 'at least'} 0, got {value:g}"
    ceiling = budget_ceiling()
    if value > ceiling:
        return (
            f"the {what} may be at most {ceiling:.15g} (the operator's LABELING_MAX_BUDGET), got {value:.15g}"
        )
    return None
