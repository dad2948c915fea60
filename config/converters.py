"""The URL converter of every id in a path (`<id:campaign_id>`): decimal digits that fit a 64-bit
database key.

Django's `<int:...>` takes any number of digits; SQLite then refuses a 20-digit id while
converting it (OverflowError, a 500) where PostgreSQL simply finds no row. Eighteen digits are
below 2**63, so a longer id matches no route and is a 404 on every database.
"""

from __future__ import annotations


class IdConverter:
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)
