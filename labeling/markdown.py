"""Coordinators' Markdown (campaign guidelines) rendered for assessors, safely.

markdown-it-py with raw HTML off escapes every tag the author writes and refuses `javascript:`,
`vbscript:` and `file:` links by itself; images are off too (the Content-Security-Policy would
block images from other sites anyway, and a broken picture helps nobody). We chose it over
Python-Markdown plus a sanitiser because safe output is its default rather than a second pass.
"""

from __future__ import annotations

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]).disable("image")


def render_markdown(text: str) -> SafeString:
    """HTML for `text`; every tag the author typed comes out escaped."""
    return mark_safe(_RENDERER.render(text or ""))  # noqa: S308 - markdown-it escapes raw HTML
