"""The URL conf as a flat table, for the tests that try every route (fuzzing, scoped tokens)."""

from __future__ import annotations

from collections.abc import Iterator

from django.urls import URLPattern, URLResolver, get_resolver


def url_table() -> Iterator[tuple[str, URLPattern]]:
    """Every route of the URL conf as (its whole pattern, without a leading slash, converters and
    regex groups left in; the pattern), includes followed."""

    def walk(patterns: list, prefix: str) -> Iterator[tuple[str, URLPattern]]:  # noqa: ANN001
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                yield route, pattern

    yield from walk(get_resolver().url_patterns, "")
